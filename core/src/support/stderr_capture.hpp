#pragma once
#include <mutex>
#include <string>

namespace cujit::detail {

// Redirects file descriptor 2 into a temporary file for its lifetime and hands back what
// was written. nvJitLink 13.0 reports some link errors (multiple definitions) only by
// printing "error   : ..." lines to stderr while returning NVJITLINK_SUCCESS; capturing them
// is the only way to turn them into errors. Captures are serialised process-wide; lines
// that are not nvJitLink's are written back to the real stderr on release.
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Stops capturing (idempotent) and returns the linker's diagnostic lines ("error   : ...",
  // "warning : ..."), any "@E@"-style prefix removed; other lines go back to stderr.
  std::string finish();

 private:
  std::unique_lock<std::mutex> lock_;
  int saved_fd_ = -1;
  int capture_fd_ = -1;
  std::string tagged_;
  bool finished_ = false;
};

}  // namespace cujit::detail
