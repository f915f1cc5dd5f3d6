#pragma once
// The one way cujit starts a child process (the compile worker, the `cujit` command's
// suites, benchmarks, report scripts and isolated re-runs of itself).
//
// - What runs is checked first: the program (a name without '/' is looked up on PATH) is
//   resolved to its real path and opened; the open descriptor must be a regular, executable
//   file owned by root or by this process's user and writable by neither its group nor
//   others, and every directory above it must be owned the same way and not writable by
//   group or others (unless sticky, as /tmp is), so that nobody else can swap it between
//   the check and the run. The child executes that descriptor (execveat), not the name.
//   A file that fails is an ExecutableRefusal naming the path and why; it never runs.
//   A script (#!) is run by the kernel through its interpreter, so the interpreter named on
//   its #! line passes the same check (and its own, up to 4 levels, as the kernel allows);
//   for #!/usr/bin/env NAME, NAME is looked up on PATH as env will (only a PATH of absolute
//   entries: env would try the working directory for an empty one) and checked too
//   (red-team finding F16).
// - From an argument vector, never through a shell; every descriptor cujit opens for it is
//   close-on-exec, so nothing leaks into it or into children started at the same time.
// - Optional limits: a deadline after which it is killed (SIGKILL), a cap on its captured
//   stdout, RLIMIT_AS and RLIMIT_CPU set in the child before it runs.
// Failures are values: callers turn them into the typed error that names their input.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/unique_fd.hpp"

namespace cujit::detail {

// Why a program may not run.
enum class ExecutableProblem {
  missing,              // no such file (or not found on PATH)
  not_regular,          // a directory, FIFO, device, ...
  not_executable,       // no execute bit at all
  foreign_owner,        // owned by a user other than root and this process's user
  writable_by_others,   // group- or other-writable
  untrusted_directory,  // a directory above it is foreign-owned or writable by others
  unreadable,           // it or a directory above it cannot be examined
  untrusted_interpreter,  // a script whose #! interpreter fails the check or is looked up on PATH (env)
};
std::string_view to_string(ExecutableProblem problem) noexcept;

struct ExecutableRefusal {
  ExecutableProblem problem = ExecutableProblem::missing;
  std::string path;  // as given, or as found on PATH
  std::string why;   // "is writable by others (mode 0777)", ...
  // "refusing to run '<path>': <why>"
  std::string message() const;
};

// A program that passed the check: its real path and a descriptor (O_PATH) on the file
// that was checked.
struct TrustedExecutable {
  std::string path;
  UniqueFd fd;
};

// Resolves and checks `program` (a path, or a name looked up on PATH); never throws.
std::optional<ExecutableRefusal> open_trusted_executable(const std::string& program, TrustedExecutable& out);

// The same check for a file that is not executed but read by an interpreter cujit runs
// (a report script): a regular file (executable or not) with the same ownership rules, and
// the same for every directory above it. nullopt when it may be used.
std::optional<ExecutableRefusal> check_trusted_file(const std::string& path);

// The same check for a directory whose contents an interpreter reads (a script's own
// package directory): owned by root or the caller, not writable by group or others, and
// the same for every directory above it.
std::optional<ExecutableRefusal> check_trusted_directory(const std::string& path);

// check_trusted_directory for the directory and everything in it, at any depth (the
// directory of a script an interpreter runs: it imports modules beside it and loads their
// bytecode). The first entry refused is named.
std::optional<ExecutableRefusal> check_trusted_tree(const std::string& path);

// The owner and mode rules of check_trusted_file for a file already open (`fd`), which is
// what a caller then uses (a library loaded through /proc/self/fd): a regular file owned by
// root or this user, writable by neither its group nor others. `path` is for the message.
std::optional<ExecutableRefusal> check_trusted_descriptor(int fd, const std::string& path);

// check_trusted_directory for a directory named by a path fixed at build time (the build
// tree an installed program was built in): besides the directory it resolves to, every
// component of the path as written must be a directory of the same kind or a link owned by
// root or the caller, and the last one no link at all. A gone build-tree path that someone else recreated, or replaced by a
// link to any directory (red-team finding F4), is refused; nullopt when it may be trusted.
std::optional<ExecutableRefusal> check_trusted_directory_as_written(const std::string& path);

// For a path cujit is about to write or create (an --out, a key file it reads): every part
// of it as written above the last that exists already is a link owned by root or the
// caller, or a directory owned by root or the caller and writable by no one else (a sticky
// directory such as /tmp allowed), and the last, if there, no link of another user's: so
// that no other user can redirect it through a link or directory of theirs, before or while
// cujit uses it. The last part itself is the caller's to check (an O_NOFOLLOW open, the
// rules for a key file); parts not there yet are not examined. nullopt when it may be used;
// `path` must be absolute.
std::optional<ExecutableRefusal> check_path_as_written(const std::string& path);

// Where a child's standard output or error goes.
enum class ChildSink {
  inherit,  // this process's own
  null,     // /dev/null
  capture,  // a pipe read by run_child_process, handed to the ChildOutput handler
};

// The captured streams as the handler is told; `tick` (no text) is the clock of
// ChildOptions::tick_ms, for callers that report progress while a child is silent.
enum class ChildStream { out, err, report, tick };

struct ChildOptions {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up on PATH (no '/')
  // Set in the child's environment, replacing an inherited value of the same name.
  std::vector<std::pair<std::string, std::string>> environment;
  // Removed from the child's environment.
  std::vector<std::string> unset;
  // The child's stdin: these bytes (an in-memory file read at the child's own pace) or,
  // when not set, /dev/null.
  std::optional<std::string> input;
  ChildSink out = ChildSink::inherit;
  ChildSink err = ChildSink::inherit;
  bool err_to_out = false;  // stderr goes where stdout goes (`err` ignored)
  // 3..9: the child also gets a captured pipe at this descriptor (ChildStream::report).
  int report_fd = -1;
  // > 0: the handler is also called with ChildStream::tick about every tick_ms ms.
  int tick_ms = 0;
  // Killed (SIGKILL) when it has not ended by then.
  std::optional<std::chrono::milliseconds> timeout;
  // > 0: killed when its captured stdout grows past this many bytes.
  std::size_t max_output_bytes = 0;
  // > 0: RLIMIT_AS (bytes) and RLIMIT_CPU (seconds) in the child.
  std::uint64_t memory_limit_bytes = 0;
  std::uint64_t cpu_limit_seconds = 0;
};

struct ChildResult {
  std::optional<ExecutableRefusal> refused;  // set: the program failed the check, never ran
  std::string start_error;  // non-empty: it never ran, and why (the refusal's message too)
  int exit_code = -1;       // set when it exited
  int signal = 0;           // set when a signal ended it (SIGKILL after timeout or overrun)
  bool timed_out = false;
  bool output_too_long = false;
  bool started() const noexcept { return start_error.empty(); }
  bool exited() const noexcept { return started() && signal == 0 && !timed_out && !output_too_long; }
};

using ChildOutput = std::function<void(ChildStream, std::string_view)>;

// Runs the child to its end (and its captured streams to theirs). Never throws for the
// child's sake; the handler may throw, after which the child is killed and reaped.
ChildResult run_child_process(const ChildOptions& options, const ChildOutput& on_output = {});

}  // namespace cujit::detail
