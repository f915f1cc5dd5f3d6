#include "detail/stderr_capture.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace cujit::detail {
namespace {

std::mutex& capture_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::string read_all(int fd) {
  std::string out;
  if (lseek(fd, 0, SEEK_SET) < 0) return out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

StderrCapture::StderrCapture() : lock_(capture_mutex()) {
  std::fflush(stderr);
  char path[] = "/tmp/cujit-stderr-XXXXXX";
  capture_fd_ = mkstemp(path);
  if (capture_fd_ < 0) return;  // capture is best effort; linking still works
  unlink(path);
  saved_fd_ = dup(STDERR_FILENO);
  if (saved_fd_ < 0 || dup2(capture_fd_, STDERR_FILENO) < 0) {
    if (saved_fd_ >= 0) close(saved_fd_);
    close(capture_fd_);
    saved_fd_ = capture_fd_ = -1;
  }
}

std::string StderrCapture::finish() {
  if (finished_) return tagged_;
  finished_ = true;
  if (capture_fd_ >= 0) {
    std::fflush(stderr);
    dup2(saved_fd_, STDERR_FILENO);
    close(saved_fd_);
    const std::string captured = read_all(capture_fd_);
    close(capture_fd_);
    std::istringstream lines(captured);
    std::string line, passthrough;
    while (std::getline(lines, line)) {
      if (line.rfind("@E@", 0) == 0 || line.rfind("@W@", 0) == 0) {
        tagged_ += line.substr(3) + "\n";
      } else {
        passthrough += line + "\n";
      }
    }
    write_all(STDERR_FILENO, passthrough);
  }
  lock_.unlock();
  return tagged_;
}

StderrCapture::~StderrCapture() {
  try {
    finish();
  } catch (...) {
    // Destructors never throw; the capture is already released by finish().
  }
}

}  // namespace cujit::detail
