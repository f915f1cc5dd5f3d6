#pragma once
// Every child process of the cujit command starts here, through libcujit's one spawner
// (core/src/support/spawner.hpp): from an argument vector, never through a shell, so
// no path, name or option a user gives is ever parsed as shell syntax, and only a program
// that passes its executable check (a regular file owned by root or this user, writable by
// no one else, in directories of the same kind; else ChildExit::start_error says why). What a child writes to a captured stream is handed to the caller
// as it arrives, so that the caller writes it (and checks the write) itself and keeps the
// last of it for the message when the child dies.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cujit::cli {

// Where a child's standard output or error goes.
enum class Sink {
  inherit,  // the cujit command's own
  null,     // /dev/null
  capture,  // a pipe read by run_child, handed to the OutputHandler
};

// The captured streams, as the OutputHandler is told; `tick` (no text) is the clock of
// ChildSpec::tick_ms, for callers that report progress while a child is silent.
enum class Stream { out, err, report, tick };

struct ChildSpec {
  // argv[0] is a path, or a name looked up on PATH (only when it has no '/').
  std::vector<std::string> argv;
  // Set in the child's environment, replacing an inherited value of the same name.
  std::vector<std::pair<std::string, std::string>> environment;
  // Removed from the child's environment (an inherited variable the command decides).
  std::vector<std::string> unset;
  Sink out = Sink::inherit;
  Sink err = Sink::inherit;
  // The child's stderr goes where its stdout goes (`err` is then ignored).
  bool err_to_out = false;
  // 3..9: the child also gets a captured pipe as this file descriptor (Stream::report), a
  // channel for progress that its stdout and stderr cannot mix into.
  int report_fd = -1;
  // > 0: the OutputHandler is also called with Stream::tick about every tick_ms
  // milliseconds while the child runs, whether or not it writes anything.
  int tick_ms = 0;
  // > 0: limits, enforced by the spawner: killed (SIGKILL) after timeout_ms milliseconds;
  // RLIMIT_AS (bytes) and RLIMIT_CPU (seconds) set in the child before it runs.
  int timeout_ms = 0;
  std::uint64_t memory_limit_bytes = 0;
  std::uint64_t cpu_limit_seconds = 0;
};

// A ChildSpec for `argv` with everything else as the defaults say.
inline ChildSpec child_spec(std::vector<std::string> argv) {
  ChildSpec spec;
  spec.argv = std::move(argv);
  return spec;
}

struct ChildExit {
  std::string start_error;  // non-empty: the child never ran, and why
  bool refused = false;     // it never ran because it failed the executable check
  bool timed_out = false;   // killed after ChildSpec::timeout_ms (signal is then SIGKILL)
  int exit_code = -1;       // set when it exited
  int signal = 0;           // set when a signal ended it
  bool started() const noexcept { return start_error.empty(); }
  bool exited() const noexcept { return started() && signal == 0; }
};

using OutputHandler = std::function<void(Stream, std::string_view)>;

// Runs the child to its end (and its captured streams to their end). Never throws for
// the child's sake: a child that cannot start is a ChildExit with start_error.
ChildExit run_child(const ChildSpec& spec, const OutputHandler& on_output = {});

// "SIGSEGV", "SIGABRT", ..., or "signal 42".
std::string signal_name(int signal);
// The number for a name such as "SIGSEGV" or "SEGV"; 0 when unknown.
int signal_number(std::string_view name);
// "exit status 3", "crashed: SIGSEGV", "could not start: <why>".
std::string describe(const ChildExit& exit);

// This program's own executable, for re-running itself as an isolated child.
std::string self_executable();

// The last `limit` bytes of a stream.
class Tail {
 public:
  explicit Tail(std::size_t limit = 8192) : limit_(limit) {}
  void append(std::string_view text);
  const std::string& text() const noexcept { return text_; }
  // The last complete or partial line that is not empty.
  std::string last_line() const;
  // The rest of the last line that starts with `prefix`, or "" when none does.
  std::string last_line_starting(std::string_view prefix) const;

 private:
  std::size_t limit_;
  std::string text_;
};

}  // namespace cujit::cli
