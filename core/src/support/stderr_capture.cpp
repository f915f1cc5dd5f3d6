#include "support/stderr_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {

// What every session tag starts with (unique_stderr_tag).
constexpr std::string_view tag_prefix = "#cujit-link-";
// Lines kept for captures that are still running; older ones are dropped.
constexpr std::size_t journal_capacity = 1 << 16;

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

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity&) const = default;
};

std::optional<FileIdentity> identity_of(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return std::nullopt;
  return FileIdentity{info.st_dev, info.st_ino};
}

// One installation of the tap: the pipe fd 2 pointed at, and the stderr its lines go to.
// Read until its last writer closes it (EOF), even after fd 2 stopped being it.
struct Pipe {
  int read = -1;     // non-blocking
  int forward = -1;  // the stderr fd 2 was when the tap was installed
  FileIdentity identity;  // of the pipe, to tell whether fd 2 is still it
  std::string pending;    // bytes after the last newline read
  bool eof = false;
  Pipe(int read_end, int saved, FileIdentity id) : read(read_end), forward(saved), identity(id) {}
  ~Pipe() {
    ::close(read);
    ::close(forward);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

}  // namespace

// The tap. Its pipes are read by whoever needs their lines first: the reader thread
// (started once per process, so every line is forwarded as soon as it is written), or a
// capture finishing, which drains what is in the pipe itself instead of waiting for the
// reader. Every read and every journal update happens under mutex_, so a drain that finds
// the pipe empty has seen every byte written before it began. Lock order: lifecycle_, then
// mutex_.
class StderrTap {
 public:
  static StderrTap& instance() {
    // Never destroyed: a capture may outlive static destruction. A forked child gets a
    // tap of its own (its parent's reader thread does not exist there).
    static std::mutex guard;
    static StderrTap* tap = nullptr;
    std::lock_guard<std::mutex> lock(guard);
    if (tap == nullptr || tap->pid_ != ::getpid()) tap = new StderrTap();
    return *tap;
  }

  // Joins the tap, installing it (again) where fd 2 is not its pipe; false when it cannot
  // be installed (then nothing is captured, and stderr is untouched).
  bool join(std::uint64_t& first_line) {
    std::lock_guard<std::mutex> life(lifecycle_);
    if (current_ != nullptr && identity_of(STDERR_FILENO) != current_->identity) retire_current();
    if (current_ == nullptr && !install()) return false;
    ++users_;
    std::lock_guard<std::mutex> lock(mutex_);
    first_line = dropped_ + journal_.size();
    return true;
  }

  // Lines from `first_line` up to everything written before this call; `first_line` moves
  // past them.
  std::deque<std::string> lines_since(std::uint64_t& first_line) {
    std::fflush(stderr);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::shared_ptr<Pipe>& pipe : pipes_) {
      if (!pipe->eof) drain(*pipe);
    }
    std::deque<std::string> out;
    for (std::uint64_t line = std::max(first_line, dropped_); line < dropped_ + journal_.size(); ++line) {
      out.push_back(journal_[line - dropped_]);
    }
    first_line = dropped_ + journal_.size();
    return out;
  }

  void leave() {
    std::lock_guard<std::mutex> life(lifecycle_);
    --users_;
    last_leave_ = std::chrono::steady_clock::now();
  }

  bool installed() {
    std::lock_guard<std::mutex> life(lifecycle_);
    return current_ != nullptr && identity_of(STDERR_FILENO) == current_->identity;
  }

  // Removes the tap when no capture is active and it has been idle for `idle` or longer.
  void remove_if_idle(std::chrono::steady_clock::duration idle) {
    std::lock_guard<std::mutex> life(lifecycle_);
    if (current_ == nullptr || users_ != 0) return;
    if (std::chrono::steady_clock::now() - last_leave_ < idle) return;
    uninstall();
  }

 private:
  StderrTap() {
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }

  // Called with lifecycle_ held.
  bool install() {
    if (wake_ < 0) return false;
    if (!reader_started_) {
      std::thread([this] { read_loop(); }).detach();
      reader_started_ = true;
      // Whatever is in the pipe at exit is forwarded, and fd 2 given back.
      static std::once_flag at_exit;
      std::call_once(at_exit, [] { std::atexit([] { StderrTap::instance().remove_if_idle({}); }); });
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    const std::optional<FileIdentity> identity = identity_of(fds[1]);
    if (!identity || ::fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
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
    current_ = std::make_shared<Pipe>(fds[0], saved, *identity);
    pipes_.push_back(current_);
    wake_reader();
    return true;
  }

  // fd 2 back to what it was, if it is still the tap's pipe (someone who moved it since
  // owns it now). What the pipe holds is forwarded now; writes still in flight, and a
  // writer that still holds the pipe, are forwarded by the reader until EOF.
  // Called with lifecycle_ held, and no capture active.
  void uninstall() {
    std::fflush(stderr);
    std::lock_guard<std::mutex> lock(mutex_);
    if (identity_of(STDERR_FILENO) == current_->identity) ::dup2(current_->forward, STDERR_FILENO);
    if (!current_->eof) drain(*current_);
    current_.reset();
    wake_reader();
  }

  // fd 2 was moved by someone else: the pipe is left to the reader (until EOF), and the
  // next join installs a new one in front of what fd 2 is now. Called with lifecycle_ held.
  void retire_current() {
    std::lock_guard<std::mutex> lock(mutex_);
    current_.reset();
    wake_reader();
  }

  void wake_reader() const {
    const std::uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  // Reads what `pipe` holds now: every complete line is handled; at EOF a last line
  // without its newline is forwarded. Called with mutex_ held.
  void drain(Pipe& pipe) {
    char buffer[4096];
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
      return;  // EAGAIN: nothing more now
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

  // Forwards each line as it is written, for every pipe not yet at EOF; removes the tap
  // once it has been idle for tap_linger.
  void read_loop() {
    std::vector<pollfd> waits;
    std::vector<std::shared_ptr<Pipe>> polled;  // keeps their descriptors open
    for (;;) {
      bool installed = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        pipes_.erase(std::remove_if(pipes_.begin(), pipes_.end(), [](const auto& p) { return p->eof; }),
                     pipes_.end());
        polled = pipes_;
        installed = current_ != nullptr;
      }
      waits.assign(1, pollfd{wake_, POLLIN, 0});
      for (const std::shared_ptr<Pipe>& pipe : polled) waits.push_back(pollfd{pipe->read, POLLIN, 0});
      const int timeout = installed ? static_cast<int>(tap_linger.count()) : -1;
      const int ready = ::poll(waits.data(), waits.size(), timeout);
      if (ready < 0 && errno != EINTR) continue;
      if (waits[0].revents != 0) {
        std::uint64_t count = 0;
        (void)!::read(wake_, &count, sizeof count);
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (std::size_t i = 0; i < polled.size(); ++i) {
          if (waits[i + 1].revents != 0 && !polled[i]->eof) drain(*polled[i]);
        }
      }
      polled.clear();
      if (installed) remove_if_idle(tap_linger);
    }
  }

  const pid_t pid_ = ::getpid();
  std::mutex lifecycle_;  // users_, installing and removing; never held while a link runs
  int users_ = 0;
  std::chrono::steady_clock::time_point last_leave_ = std::chrono::steady_clock::now();
  bool reader_started_ = false;
  int wake_ = -1;  // eventfd: the set of pipes changed

  std::mutex mutex_;  // reading the pipes, the journal, current_ and pipes_
  std::shared_ptr<Pipe> current_;             // the pipe fd 2 was pointed at, while installed
  std::vector<std::shared_ptr<Pipe>> pipes_;  // every pipe not yet at EOF (current_ too)
  std::deque<std::string> journal_;
  std::uint64_t dropped_ = 0;  // lines before journal_.front()
};

bool stderr_tap_installed() { return StderrTap::instance().installed(); }

void remove_idle_stderr_tap() { StderrTap::instance().remove_if_idle({}); }

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

StderrCapture::StderrCapture(std::string tag) : tag_(std::move(tag)), tap_(&StderrTap::instance()) {
  active_ = tap_->join(next_line_);
}

std::string StderrCapture::take() {
  if (finished_ || !active_) return {};
  std::string claimed;
  for (const std::string& line : tap_->lines_since(next_line_)) {
    if (line.find(tag_) == std::string::npos) continue;
    if (const auto message = linker_message(line)) claimed += without_tag(*message, tag_) + "\n";
  }
  claimed_ += claimed;
  return claimed;
}

std::string StderrCapture::finish() {
  if (finished_) return claimed_;
  (void)take();
  finished_ = true;
  if (active_) tap_->leave();
  return claimed_;
}

StderrCapture::~StderrCapture() {
  // Leaves without reading: what was not taken is no one's (a link takes after its calls).
  if (!finished_ && active_) tap_->leave();
}

}  // namespace cujit::detail
