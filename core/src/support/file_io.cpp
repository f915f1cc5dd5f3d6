#include "support/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cujit/error.hpp"

namespace cujit::detail {
namespace {

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};


}  // namespace

std::string kind_of_file(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string read_file(const std::filesystem::path& path, const std::string& component,
                      std::uint64_t limit) {
  const auto fail = [&](const std::string& why) {
    return Error(ErrorKind::io, component, "'" + path.string() + "'" + why);
  };
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) throw fail(": no such file");
    throw fail(" cannot be opened: " + std::string(std::strerror(error)));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw fail(" cannot be examined: " + std::string(std::strerror(errno)));
  if (!S_ISREG(info.st_mode)) throw fail(" is " + kind_of_file(info.st_mode) + ", not a regular file");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > limit) {
    throw fail(" is " + std::to_string(size) + " bytes, more than the " + std::to_string(limit) +
               "-byte limit for this input");
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw fail(": read failed: " + std::string(std::strerror(errno)));
    if (got == 0) break;  // shrank while read: keep what is there
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace cujit::detail
