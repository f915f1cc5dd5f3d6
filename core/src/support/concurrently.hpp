#pragma once
// Independent pieces of work run side by side on threads (link/compile_sources.hpp uses it
// for the CUDA C++ inputs of one build).

#include <cstddef>
#include <functional>

namespace cujit::detail {

// How many threads run_concurrently(count, ...) uses: one per item, at most one per
// hardware thread, at least one (the calling thread). The number of hardware threads is
// read from the system once per process, and only when `count` is two or more.
std::size_t concurrency_for(std::size_t count) noexcept;

// Runs work(0) ... work(count - 1) on concurrency_for(count) threads (the calling thread is
// one of them), and returns when all have finished. If any threw, the exception of the
// lowest index is rethrown: the same error a sequential loop would have raised first.
void run_concurrently(std::size_t count, const std::function<void(std::size_t)>& work);

// How many threads run_concurrently has started in this process (the calling threads not
// counted): what the tests read to see that a path started none.
std::size_t threads_started() noexcept;

}  // namespace cujit::detail
