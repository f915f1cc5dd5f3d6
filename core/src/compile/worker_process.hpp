#pragma once
// One run of a helper process that reads a request on its stdin and writes a reply on its
// stdout (compile/compile_worker.hpp), through the one spawner (support/spawner.hpp):
// from an argument vector, never through a shell, only when the executable passes its
// ownership check; its output is read up to a limit and its run up to a deadline, after
// which it is killed. Failures are values: the caller turns them into the typed error that
// names its input.

#include <chrono>
#include <optional>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/spawner.hpp"

namespace cujit::detail {

struct WorkerLimits {
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::size_t max_reply_bytes = std::size_t{1} << 30;
  std::size_t stderr_tail_bytes = 8192;
  std::uint64_t memory_limit_bytes = 0;  // > 0: RLIMIT_AS of the worker
};

struct WorkerRun {
  std::string start_error;  // non-empty: the process never ran, and why
  std::optional<ExecutableRefusal> refused;  // set: the worker failed the executable check
  int exit_code = -1;       // set when it exited
  int signal = 0;           // set when a signal ended it (SIGKILL after a timeout or overrun)
  bool timed_out = false;
  bool reply_too_long = false;
  std::string reply;        // its stdout (complete only when it exited by itself)
  std::string stderr_tail;  // the last WorkerLimits::stderr_tail_bytes of its stderr

  // Exited with status 0 by itself, with its reply complete.
  bool succeeded() const noexcept {
    return start_error.empty() && !timed_out && !reply_too_long && signal == 0 && exit_code == 0;
  }
  // "exit status 3", "crashed: signal 11 (Segmentation fault)", "timed out after 5 s", ...
  std::string describe(const WorkerLimits& limits) const;
};

// Runs argv (argv[0] an absolute path) with `request` as its stdin and the environment of
// this process. Never throws for the process's sake.
WorkerRun run_worker(const std::vector<std::string>& argv, std::string_view request,
                     const WorkerLimits& limits);

}  // namespace cujit::detail
