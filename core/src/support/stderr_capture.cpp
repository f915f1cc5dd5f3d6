#include "support/stderr_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

namespace cujit::detail {
namespace {

// What every session tag starts with (unique_stderr_tag).
constexpr std::string_view tag_prefix = "#cujit-link-";
// Lines kept for captures that are still running; older ones are dropped.
constexpr std::size_t journal_capacity = 1 << 16;
// How long removing the tap waits for writes still in flight into its pipe (a child process
// that inherited fd 2 can hold the pipe open for ever; the reader thread then finishes it).
constexpr std::chrono::seconds eof_timeout{5};

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// nvlink-style diagnostics: "error   : ...", "warning : ...", "info    : ...", with an
// "@E@" / "@W@" / "@I@" prefix on some installations and none on others.
std::optional<std::string> linker_message(std::string_view text) {
  if (text.size() >= 3 && text[0] == '@' && text[2] == '@') text.remove_prefix(3);
  for (std::string_view severity : {"error", "warning", "info"}) {
    if (text.substr(0, severity.size()) != severity) continue;
    const std::size_t colon = text.find_first_not_of(' ', severity.size());
    if (colon != std::string_view::npos && text[colon] == ':') return std::string(text);
  }
  return std::nullopt;
}

// One installation of the tap: the pipe fd 2 points at, and the real stderr lines go to.
// Shared by the tap and its reader thread; the last owner closes both descriptors, so the
// reader never polls a descriptor number that was closed and reused.
struct Pipe {
  int read = -1;     // non-blocking
  int forward = -1;  // the real stderr, saved when the tap was installed
  std::string pending;  // bytes after the last newline read
  bool eof = false;
  Pipe(int read_end, int saved) : read(read_end), forward(saved) {}
  ~Pipe() {
    ::close(read);
    ::close(forward);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

// The tap: fd 2 points at a pipe while any capture is active. The pipe is read by whoever
// needs its lines first: the reader thread (started once per process, so every line is
// forwarded as soon as it is written), or a capture finishing, which drains what is left in
// the pipe itself instead of waiting for the reader. Every read and every journal update
// happens under one mutex, so a drain that finds the pipe empty has seen every byte written
// before it began.
class Tap {
 public:
  static Tap& instance() {
    // Never destroyed: a capture may outlive static destruction. A forked child gets a
    // tap of its own (its parent's reader thread does not exist there).
    static std::mutex guard;
    static Tap* tap = nullptr;
    std::lock_guard<std::mutex> lock(guard);
    if (tap == nullptr || tap->pid_ != ::getpid()) tap = new Tap();
    return *tap;
  }

  // Joins the tap (installing it for the first user); false when it cannot be installed
  // (then nothing is captured, and stderr is untouched).
  bool join(std::uint64_t& first_line) {
    std::lock_guard<std::mutex> life(lifecycle_);
    if (users_ == 0 && !install()) return false;
    ++users_;
    std::lock_guard<std::mutex> lock(mutex_);
    first_line = dropped_ + journal_.size();
    return true;
  }

  // Lines from `first_line` up to everything written before this call.
  std::deque<std::string> lines_since(std::uint64_t first_line) {
    std::fflush(stderr);
    std::lock_guard<std::mutex> lock(mutex_);
    if (current_ != nullptr && !current_->eof) drain(*current_, false);
    std::deque<std::string> out;
    for (std::uint64_t line = std::max(first_line, dropped_); line < dropped_ + journal_.size(); ++line) {
      out.push_back(journal_[line - dropped_]);
    }
    return out;
  }

  void leave() {
    std::lock_guard<std::mutex> life(lifecycle_);
    if (--users_ == 0) uninstall();
  }

 private:
  Tap() = default;

  bool install() {
    if (!reader_started_) {
      std::thread([this] { read_loop(); }).detach();
      reader_started_ = true;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    if (::fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return false;
    }
    std::fflush(stderr);
    const int saved = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved < 0 || ::dup2(fds[1], STDERR_FILENO) < 0) {
      if (saved >= 0) ::close(saved);
      ::close(fds[0]);
      ::close(fds[1]);
      return false;
    }
    ::close(fds[1]);  // fd 2 is now the only write end: restoring it gives the reader EOF
    std::lock_guard<std::mutex> lock(mutex_);
    current_ = std::make_shared<Pipe>(fds[0], saved);
    installed_.notify_one();
    return true;
  }

  void uninstall() {
    std::fflush(stderr);
    std::lock_guard<std::mutex> lock(mutex_);
    ::dup2(current_->forward, STDERR_FILENO);  // closes the pipe's last write end
    // Everything written into the pipe, writes still in flight included (EOF comes after
    // them), is forwarded before the tap is gone.
    drain(*current_, true);
    current_.reset();
    dropped_ += journal_.size();
    journal_.clear();
  }

  // Reads what `pipe` holds (until EOF when `until_eof`, bounded by eof_timeout): every
  // complete line is handled; at EOF a last line without its newline is forwarded.
  // Called with mutex_ held.
  void drain(Pipe& pipe, bool until_eof) {
    char buffer[4096];
    const auto deadline = std::chrono::steady_clock::now() + eof_timeout;
    for (;;) {
      const ssize_t n = ::read(pipe.read, buffer, sizeof buffer);
      if (n > 0) {
        pipe.pending.append(buffer, static_cast<std::size_t>(n));
        handle_lines(pipe);
        continue;
      }
      if (n == 0) {
        if (!pipe.pending.empty()) write_all(pipe.forward, pipe.pending);
        pipe.pending.clear();
        pipe.eof = true;
        return;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return;
      if (!until_eof) return;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return;  // the reader thread finishes this pipe
      pollfd wait{pipe.read, POLLIN, 0};
      (void)::poll(&wait, 1, static_cast<int>(left.count()));
    }
  }

  void handle_lines(Pipe& pipe) {
    std::size_t start = 0;
    for (std::size_t end = pipe.pending.find('\n'); end != std::string::npos;
         end = pipe.pending.find('\n', start)) {
      handle_line(pipe, std::string_view(pipe.pending).substr(start, end - start));
      start = end + 1;
    }
    pipe.pending.erase(0, start);
  }

  void handle_line(Pipe& pipe, std::string_view line) {
    // Forwarded at once, unless it is a linker diagnostic about a capturing session's
    // inputs: that one is claimed by its capture and reported in the link's error.
    if (line.find(tag_prefix) == std::string_view::npos || !linker_message(line)) {
      std::string text(line);
      text += '\n';
      write_all(pipe.forward, text);
    }
    journal_.emplace_back(line);
    if (journal_.size() > journal_capacity) {
      journal_.pop_front();
      ++dropped_;
    }
  }

  // Forwards each line as it is written, for whichever pipe is installed.
  void read_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      installed_.wait(lock, [&] { return current_ != nullptr && !current_->eof; });
      const std::shared_ptr<Pipe> pipe = current_;  // keeps its descriptors open
      while (!pipe->eof) {
        lock.unlock();
        pollfd ready{pipe->read, POLLIN, 0};
        while (::poll(&ready, 1, -1) < 0 && errno == EINTR) {
        }
        lock.lock();
        if (!pipe->eof) drain(*pipe, false);
      }
    }
  }

  const pid_t pid_ = ::getpid();
  std::mutex lifecycle_;  // install / uninstall; never held while a link runs
  int users_ = 0;
  bool reader_started_ = false;

  std::mutex mutex_;  // reading the pipe, the journal, current_
  std::condition_variable installed_;
  std::shared_ptr<Pipe> current_;
  std::deque<std::string> journal_;
  std::uint64_t dropped_ = 0;  // lines before journal_.front()
};

}  // namespace

std::string unique_stderr_tag() {
  static std::atomic<std::uint64_t> next{0};
  // Closed by a second "#": "#cujit-link-1#" is no prefix of "#cujit-link-12#".
  return std::string(tag_prefix) + std::to_string(next.fetch_add(1)) + "#";
}

std::string without_tag(std::string text, const std::string& tag) {
  if (tag.empty()) return text;
  for (std::size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at)) {
    text.erase(at, tag.size());
  }
  return text;
}

StderrTapScope::StderrTapScope() {
  std::uint64_t unused = 0;
  active_ = Tap::instance().join(unused);
}

StderrTapScope::~StderrTapScope() {
  try {
    if (active_) Tap::instance().leave();
  } catch (...) {
    // Destructors never throw.
  }
}

StderrCapture::StderrCapture(std::string tag) : tag_(std::move(tag)) {
  active_ = Tap::instance().join(first_line_);
}

std::string StderrCapture::finish() {
  if (finished_) return claimed_;
  finished_ = true;
  if (!active_) return claimed_;
  for (const std::string& line : Tap::instance().lines_since(first_line_)) {
    if (line.find(tag_) == std::string::npos) continue;
    if (const auto message = linker_message(line)) claimed_ += without_tag(*message, tag_) + "\n";
  }
  Tap::instance().leave();
  return claimed_;
}

StderrCapture::~StderrCapture() {
  try {
    finish();
  } catch (...) {
    // Destructors never throw.
  }
}

}  // namespace cujit::detail
