#pragma once
// nvJitLink 13.0 reports some link errors (multiple definitions) only by printing
// "error   : ..." lines to stderr while returning NVJITLINK_SUCCESS: reading them is the
// only way to turn them into errors. StderrCapture reads them without taking stderr from
// anyone else:
// - one process-wide tap, installed while any capture (or StderrTapScope) is active,
//   points file descriptor 2 at a pipe whose reader thread forwards every line to the real
//   stderr at once (nothing written by other threads or libraries is lost or held back
//   longer than its line), except the tagged linker diagnostics, which their capture
//   reports instead; removing the tap forwards everything written into the pipe, writes
//   still in flight included, before fd 2 is back;
// - a capture claims only the linker diagnostics that carry its tag (a session-unique
//   string in the input names it gave nvJitLink), so another thread's "error : ..." line,
//   or another link's, never changes its result;
// - captures run concurrently; no lock is held across the linker's calls;
// - cheap: the reader thread lives for the process, a capture that finishes reads what is
//   left in the pipe itself (no hand-off to the reader, no waiting on it), and a link
//   holds one StderrTapScope so its calls share one installation (a few system calls).

#include <cstdint>
#include <string>

namespace cujit::detail {

class StderrCapture {
 public:
  // Starts (or joins) the tap. `tag` must be unique to the caller's link session.
  explicit StderrCapture(std::string tag);
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Waits until everything written to stderr before this call has passed the tap, then
  // returns the linker diagnostics ("error   : ...", "warning : ...", "info    : ...",
  // any "@E@"-style prefix removed) written since the capture started that contain the
  // tag, with the tag removed. Idempotent.
  std::string finish();

 private:
  std::string tag_;
  std::uint64_t first_line_ = 0;
  bool active_ = false;
  bool finished_ = false;
  std::string claimed_;
};

// Keeps the tap installed while it lives, so the captures made meanwhile (one link's calls)
// share one installation. Installing is still lazy and counted: the tap goes when the last
// scope or capture ends.
class StderrTapScope {
 public:
  StderrTapScope();
  ~StderrTapScope();
  StderrTapScope(const StderrTapScope&) = delete;
  StderrTapScope& operator=(const StderrTapScope&) = delete;

 private:
  bool active_ = false;
};

// A tag unique in this process ("#cujit-link-17#"); no tag is a prefix of another.
std::string unique_stderr_tag();

// `text` with every occurrence of `tag` removed.
std::string without_tag(std::string text, const std::string& tag);

}  // namespace cujit::detail
