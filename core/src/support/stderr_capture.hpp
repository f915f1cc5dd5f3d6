#pragma once
// nvJitLink 13.0 reports some link errors (multiple definitions, prototypes that do not
// match) only by printing "error   : ..." lines to stderr while returning NVJITLINK_SUCCESS,
// for every input mix (PTX only included): reading them is the only way to turn them into
// errors, so every nvJitLink link listens. StderrCapture reads them without taking stderr
// from anyone else:
// - one process-wide tap points file descriptor 2 at a pipe whose reader thread forwards
//   every line to the real stderr at once (nothing written by other threads or libraries
//   is lost or held back longer than its line), except the tagged linker diagnostics,
//   which their capture reports instead;
// - cheap: the tap is installed by the first capture and stays while captures keep coming
//   (removed by the reader thread after `tap_linger` without one, and at exit), so a warm
//   link pays a lock, an fstat of fd 2 and one non-blocking read per step, not the pipe set-up
//   and tear-down (20-70 us, a fifth of a link the vendor's cache answers);
// - it yields to whoever else moves fd 2 (a test capturing stderr, a logging library): a
//   capture that finds fd 2 no longer its pipe installs a new one in front of what fd 2 is
//   now, and removing the tap restores fd 2 only while it is still the tap's pipe; a pipe
//   that is no longer fd 2 is read and forwarded until its last writer closes it, so a
//   writer that still holds it (a child process, a saved descriptor) never writes into a
//   closed pipe;
// - a capture claims only the linker diagnostics that carry its tag (a session-unique
//   string in the input names it gave nvJitLink), so another thread's "error : ..." line,
//   or another link's, never changes its result;
// - captures run concurrently; no lock is held across the linker's calls.
// What the tap costs in exposure: a line written to stderr in the instant before the
// process is killed (an abort message) while the tap is installed can be lost with the
// process, as with any piped stderr.

#include <chrono>
#include <cstdint>
#include <string>

namespace cujit::detail {

// How long the tap stays installed after the last capture ended.
inline constexpr std::chrono::milliseconds tap_linger{1000};

class StderrTap;

class StderrCapture {
 public:
  // Starts (or joins) the tap. `tag` must be unique to the caller's link session.
  explicit StderrCapture(std::string tag);
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Waits until everything written to stderr before this call has passed the tap, then
  // returns the linker diagnostics ("error   : ...", "warning : ...", "info    : ...",
  // any "@E@"-style prefix removed) written since the last take() (or the start) that
  // contain the tag, with the tag removed. A link takes after each call that can print,
  // sharing one capture (one join of the tap) over its calls.
  std::string take();

  // take(), then leaves the tap; returns everything claimed since the start. Idempotent.
  // Destroying a capture leaves the tap without reading.
  std::string finish();

 private:
  std::string tag_;
  StderrTap* tap_ = nullptr;  // this process's tap, looked up once per capture
  std::uint64_t next_line_ = 0;
  bool active_ = false;
  bool finished_ = false;
  std::string claimed_;
};

// Whether fd 2 is the tap's pipe now (tests: every link is heard; the tap leaves).
bool stderr_tap_installed();

// Removes the tap now if no capture is active (tests: the state after the linger).
void remove_idle_stderr_tap();

// A tag unique in this process ("#cujit-link-17#"); no tag is a prefix of another.
std::string unique_stderr_tag();

// `text` with every occurrence of `tag` removed.
std::string without_tag(std::string text, const std::string& tag);

}  // namespace cujit::detail
