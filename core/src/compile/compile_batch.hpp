#pragma once
// The CUDA C++ inputs of one build that compile at the same time (link/compile_sources.hpp),
// and the one question they share: where does this NVRTC compile run? NVRTC runs one compile
// at a time per process, so a second compile beside a running one goes to a worker process
// (compile/compile_worker.hpp); but a worker costs a process start and NVRTC's load (25-45
// ms), more than a small compile, so the first compile of a batch always runs here and the
// next waits up to `hedge` for it to end before taking a worker. A compile that turns out to
// be the batch's only one (the others were cache hits) runs here too. Before any of that,
// each input's stored result is looked for (find_compiled): only the misses form a batch,
// so a build whose inputs all hit starts no thread and no worker.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>

#include "cujit/compile_cache.hpp"

namespace cujit::detail {

// What compile_cached(program, options, cache) would return from the cache, when the cache
// holds a result for the headers as they are now; nullopt otherwise (cache off, nothing
// stored, a header changed). Looks only: never compiles, never loads NVRTC, takes no lock;
// counts a hit and nothing else, so that the compile_cached() that follows a miss counts it
// as it always does.
std::optional<CachedCompile> find_compiled(const Program& program, const CompileOptions& options,
                                           BuildCache& cache);

class CompileBatch {
 public:
  // A batch of `items` inputs; `wait_limit` bounds how long a compile waits for the
  // others' cache lookups before it takes a worker anyway (a lookup waiting on a remote
  // tier, or on this very compile's single flight, must not hold it up); `hedge` how long a
  // compile waits for the one running here before it takes a worker (about a worker's start).
  explicit CompileBatch(std::size_t items,
                        std::chrono::milliseconds wait_limit = std::chrono::milliseconds(250),
                        std::chrono::milliseconds hedge = std::chrono::milliseconds(50));
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
  // How many batches this process has formed: a worker starts only inside one, so none
  // formed means no worker started (what the tests read).
  static std::size_t formed() noexcept;

  // Called when an input is about to run NVRTC. false: compile here (the caller then holds
  // the batch's in-process slot until it calls finished_here()). That is the answer for the
  // first compile once another input runs NVRTC too or every other input finished without
  // one (until one of the two is known it waits, at most the wait limit, then answers
  // true), and for a later compile whose wait for the slot ended within the hedge. true:
  // use a worker.
  bool compile_beside_others();
  // The compile that compile_beside_others() kept here has ended: the slot is free.
  void finished_here();

 private:
  void finished();
  bool claim_slot(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait);

  std::mutex mutex_;
  std::condition_variable changed_;
  const std::size_t items_;
  const std::chrono::milliseconds wait_limit_;
  const std::chrono::milliseconds hedge_;
  bool slot_taken_ = false;
  std::size_t compiling_ = 0;
  std::size_t finished_ = 0;
};

}  // namespace cujit::detail
