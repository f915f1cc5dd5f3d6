#include "cache/key_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace cujit::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view lock_suffix = ".lock";
constexpr std::size_t key_digits = 64;
// O_NONBLOCK: a FIFO planted at the path never blocks the open; O_NOFOLLOW: a symbolic
// link is refused.
constexpr int open_lock = O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
// A waiter polls (flock with LOCK_NB) rather than blocking, so that its wait is bounded.
constexpr std::chrono::milliseconds longest_poll{25};

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

// Whether `fd` is still the file that `path` names (not removed or replaced since opened).
bool still_named(int fd, const fs::path& path) {
  struct stat held {}, named {};
  return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
         held.st_ino == named.st_ino;
}

}  // namespace

std::string lock_name(const std::string& key) { return key + std::string(lock_suffix); }

bool is_lock_name(std::string_view name) {
  return name.size() == key_digits + lock_suffix.size() && name.substr(key_digits) == lock_suffix &&
         is_lower_hex(name.substr(0, key_digits));
}

KeyLock::~KeyLock() { release(); }

KeyLock::KeyLock(KeyLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

KeyLock& KeyLock::operator=(KeyLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void KeyLock::release() noexcept {
  if (fd_ < 0) return;
  // Removed while still held, so no other process can be granted this file and then find
  // it gone after we looked: a waiter on it sees it unnamed and opens the path again.
  if (still_named(fd_, path_)) ::unlink(path_.c_str());
  ::close(fd_);  // releases the flock
  fd_ = -1;
}

KeyLockResult lock_key(const fs::path& directory, const std::string& key, std::chrono::milliseconds timeout,
                       const std::function<int(std::string_view)>& fault) {
  KeyLockResult result;
  if (key.size() != key_digits || !is_lower_hex(key)) {
    result.problem = "'" + key + "' is not a key digest";
    return result;
  }
  const fs::path path = directory / lock_name(key);
  if (const int error = fault ? fault("key-lock") : 0) {
    result.problem = "cannot open the lock " + quoted(path) + ": " + std::strerror(error) + " (injected)";
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    // A plain descriptor until the lock is granted: only a holder may remove the file.
    const int fd = ::open(path.c_str(), open_lock, 0600);
    if (fd < 0) {
      result.problem = "cannot open the lock " + quoted(path) + ": " + std::strerror(errno);
      return result;
    }
    const auto give_up = [&](std::string problem) {
      ::close(fd);
      result.problem = std::move(problem);
      return std::move(result);
    };
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      return give_up("the lock " + quoted(path) + " is not a regular file");
    }
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) return give_up("cannot lock " + quoted(path) + ": " + std::strerror(errno));
      result.waited = true;
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timed_out = true;
        return give_up({});
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, longest_poll);
    }
    if (still_named(fd, path)) {
      result.lock = KeyLock(fd, path);
      return result;
    }
    ::close(fd);  // granted on a file its holder (or a sweep) has removed: the path again
  }
}

bool remove_unheld_lock(int dir_fd, const std::string& name, dev_t device, ino_t inode) {
  const int fd = ::openat(dir_fd, name.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat info {};
  bool removed = false;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_dev == device && info.st_ino == inode &&
      ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    // Held by us now: a process that opened it before this is told by still_named().
    removed = ::unlinkat(dir_fd, name.c_str(), 0) == 0;
  }
  ::close(fd);
  return removed;
}

}  // namespace cujit::detail
