#pragma once
// An owned POSIX file descriptor: closed when its owner goes, moved not copied. The disk
// tier, the persistent counters, failure capture and the compile worker's pipes all hold
// descriptors across early returns and throws.

#include <unistd.h>

#include <utility>

namespace cujit::detail {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Gives the descriptor up without closing it (to an owner that closes it, e.g. fdopendir).
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes what it holds (if anything) and holds `fd` instead.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace cujit::detail
