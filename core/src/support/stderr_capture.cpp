#include "support/stderr_capture.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
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

// nvlink-style diagnostics: "error   : ...", "warning : ...", "info    : ...", with an
// "@E@" / "@W@" / "@I@" prefix on some installations and none on others.
std::optional<std::string> linker_message(const std::string& line) {
  std::string_view text = line;
  if (text.size() >= 3 && text[0] == '@' && text[2] == '@') text.remove_prefix(3);
  for (std::string_view severity : {"error", "warning", "info"}) {
    if (text.substr(0, severity.size()) != severity) continue;
    const std::size_t colon = text.find_first_not_of(' ', severity.size());
    if (colon != std::string_view::npos && text[colon] == ':') return std::string(text);
  }
  return std::nullopt;
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
      if (const auto message = linker_message(line)) {
        tagged_ += *message + "\n";
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
