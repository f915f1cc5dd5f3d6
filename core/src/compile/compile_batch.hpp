#pragma once
// The CUDA C++ inputs of one build that compile at the same time (link/compile_sources.hpp),
// and the one question they share: does this NVRTC compile run beside another? NVRTC runs
// one compile at a time per process, so two or more compiles of a batch each go to a worker
// process (compile/compile_worker.hpp); a compile that turns out to be the batch's only one
// (the other inputs were cache hits) stays in this process, saving a process start and
// NVRTC's load.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace cujit::detail {

class CompileBatch {
 public:
  // A batch of `items` inputs; `wait_limit` bounds how long a compile waits for the
  // others' cache lookups before it takes a worker anyway (a lookup waiting on a remote
  // tier, or on this very compile's single flight, must not hold it up).
  explicit CompileBatch(std::size_t items,
                        std::chrono::milliseconds wait_limit = std::chrono::milliseconds(250));
  CompileBatch(const CompileBatch&) = delete;
  CompileBatch& operator=(const CompileBatch&) = delete;

  // One input's compile on the calling thread: while it lives, compile_program() on this
  // thread asks the batch; when it goes, the input counts as finished.
  class Item {
   public:
    explicit Item(CompileBatch& batch);
    ~Item();
    Item(const Item&) = delete;
    Item& operator=(const Item&) = delete;

   private:
    CompileBatch& batch_;
    CompileBatch* previous_;
  };

  // The batch of the calling thread's current Item, or nullptr outside one.
  static CompileBatch* current() noexcept;

  // Called when an input is about to run NVRTC: true (use a worker) once another input of
  // the batch runs NVRTC too; false when every other input finished without one. Until
  // one of the two is known it waits, at most the wait limit, then answers true.
  bool compile_beside_others();

 private:
  void finished();

  std::mutex mutex_;
  std::condition_variable changed_;
  const std::size_t items_;
  const std::chrono::milliseconds wait_limit_;
  std::size_t compiling_ = 0;
  std::size_t finished_ = 0;
};

}  // namespace cujit::detail
