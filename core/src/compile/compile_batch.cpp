#include "compile/compile_batch.hpp"

namespace cujit::detail {
namespace {
thread_local CompileBatch* current_batch = nullptr;
}  // namespace

CompileBatch::CompileBatch(std::size_t items, std::chrono::milliseconds wait_limit)
    : items_(items), wait_limit_(wait_limit) {}

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

bool CompileBatch::compile_beside_others() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++compiling_;
  if (compiling_ >= 2) {
    lock.unlock();
    changed_.notify_all();
    return true;
  }
  // The only compile so far: the others are still looking up the cache, or done.
  const bool alone = changed_.wait_for(lock, wait_limit_, [&] {
    return compiling_ >= 2 || finished_ + 1 >= items_;
  });
  return !alone || compiling_ >= 2;
}

}  // namespace cujit::detail
