#include "support/stderr_capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

namespace cujit::detail {
namespace {

// What every session tag starts with (unique_stderr_tag).
constexpr std::string_view tag_prefix = "#cujit-link-";
// A line the tap recognises as its own barrier: never forwarded.
constexpr std::string_view marker_prefix = "\x02" "cujit-stderr-marker ";
// Lines kept for captures that are still running; older ones are dropped.
constexpr std::size_t journal_capacity = 1 << 16;
constexpr std::chrono::seconds marker_timeout{5};

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

std::optional<std::uint64_t> marker_id(std::string_view line) {
  if (line.substr(0, marker_prefix.size()) != marker_prefix) return std::nullopt;
  const std::string_view digits = line.substr(marker_prefix.size());
  if (digits.empty() || digits.size() > 19) return std::nullopt;
  std::uint64_t id = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return id;
}

class Tap {
 public:
  static Tap& instance() {
    static Tap* tap = new Tap();  // never destroyed: a capture may outlive static destruction
    return *tap;
  }

  // Joins the tap (installing it for the first user); false when it cannot be installed
  // (then nothing is captured, and stderr is untouched).
  bool join(std::uint64_t& first_line) {
    std::lock_guard<std::mutex> life(lifecycle_);
    if (users_ == 0 && !install()) return false;
    ++users_;
    std::lock_guard<std::mutex> lock(journal_mutex_);
    first_line = dropped_ + journal_.size();
    return true;
  }

  // Lines from `first_line` up to everything written before this call.
  std::deque<std::string> lines_since(std::uint64_t first_line) {
    std::fflush(stderr);
    const std::uint64_t id = next_marker_.fetch_add(1);
    const std::string marker = std::string(marker_prefix) + std::to_string(id) + "\n";
    write_all(STDERR_FILENO, marker);
    std::unique_lock<std::mutex> lock(journal_mutex_);
    // Bounded: if someone else has pointed fd 2 elsewhere meanwhile, the marker never comes.
    seen_.wait_for(lock, marker_timeout, [&] { return markers_.count(id) != 0 || reader_done_; });
    markers_.erase(id);
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
  bool install() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    std::fflush(stderr);
    saved_ = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved_ < 0 || ::dup2(fds[1], STDERR_FILENO) < 0) {
      if (saved_ >= 0) ::close(saved_);
      ::close(fds[0]);
      ::close(fds[1]);
      return false;
    }
    ::close(fds[1]);  // fd 2 is now the only write end
    read_end_ = fds[0];
    reader_done_ = false;
    reader_ = std::thread([this] { read_loop(); });
    return true;
  }

  void uninstall() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);  // closes the pipe's last write end: the reader sees EOF
    reader_.join();
    ::close(read_end_);
    ::close(saved_);
    std::lock_guard<std::mutex> lock(journal_mutex_);
    dropped_ += journal_.size();
    journal_.clear();
  }

  void read_loop() {
    std::string pending;
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(read_end_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buffer, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (std::size_t end = pending.find('\n'); end != std::string::npos; end = pending.find('\n', start)) {
        handle_line(std::string_view(pending).substr(start, end - start));
        start = end + 1;
      }
      pending.erase(0, start);
    }
    if (!pending.empty()) write_all(saved_, pending);  // a last line without its newline
    std::lock_guard<std::mutex> lock(journal_mutex_);
    reader_done_ = true;
    seen_.notify_all();
  }

  void handle_line(std::string_view line) {
    if (const auto id = marker_id(line)) {
      std::lock_guard<std::mutex> lock(journal_mutex_);
      markers_.insert(*id);
      seen_.notify_all();
      return;
    }
    // Forwarded at once, unless it is a linker diagnostic about a capturing session's
    // inputs: that one is claimed by its capture and reported in the link's error.
    if (line.find(tag_prefix) == std::string_view::npos || !linker_message(line)) {
      write_all(saved_, std::string(line) + "\n");
    }
    std::lock_guard<std::mutex> lock(journal_mutex_);
    journal_.emplace_back(line);
    if (journal_.size() > journal_capacity) {
      journal_.pop_front();
      ++dropped_;
    }
  }

  std::mutex lifecycle_;  // install / uninstall; never held while a link runs
  int users_ = 0;
  int saved_ = -1;
  int read_end_ = -1;
  std::thread reader_;

  std::mutex journal_mutex_;
  std::condition_variable seen_;
  std::deque<std::string> journal_;
  std::uint64_t dropped_ = 0;  // lines before journal_.front()
  std::set<std::uint64_t> markers_;
  bool reader_done_ = false;
  std::atomic<std::uint64_t> next_marker_{0};
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
