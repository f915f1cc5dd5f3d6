#include "compile/compile_batch.hpp"

#include <atomic>

namespace cujit::detail {
namespace {
thread_local CompileBatch* current_batch = nullptr;
std::atomic<std::size_t> batches{0};
}  // namespace

CompileBatch::CompileBatch(std::size_t items, std::chrono::milliseconds wait_limit,
                           std::chrono::milliseconds hedge)
    : items_(items), wait_limit_(wait_limit), hedge_(hedge) {
  ++batches;
}

std::size_t CompileBatch::formed() noexcept { return batches.load(); }

CompileBatch::Item::Item(CompileBatch& batch) : batch_(batch), previous_(current_batch) {
  current_batch = &batch;
}

CompileBatch::Item::~Item() {
  current_batch = previous_;
  batch_.finished();
}

CompileBatch* CompileBatch::current() noexcept { return current_batch; }

void CompileBatch::finished() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++finished_;
  }
  changed_.notify_all();
}

bool CompileBatch::claim_slot(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait) {
  if (!changed_.wait_for(lock, wait, [&] { return !slot_taken_; })) return false;
  slot_taken_ = true;
  return true;
}

void CompileBatch::finished_here() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    slot_taken_ = false;
  }
  changed_.notify_all();
}

bool CompileBatch::compile_beside_others() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++compiling_;
  if (compiling_ >= 2) {
    changed_.notify_all();  // the first compile learns it has company
    return !claim_slot(lock, hedge_);
  }
  // The first compile holds the slot while it waits: the others are still looking up the
  // cache, or done. Either way it runs here, unless nobody answers within the wait limit;
  // then it gives the slot back and takes a worker.
  slot_taken_ = true;
  if (changed_.wait_for(lock, wait_limit_, [&] { return compiling_ >= 2 || finished_ + 1 >= items_; })) {
    return false;
  }
  slot_taken_ = false;
  lock.unlock();
  changed_.notify_all();
  return true;
}

}  // namespace cujit::detail
