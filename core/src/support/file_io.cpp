#include "support/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>

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

FileRead read_regular_file(const std::filesystem::path& path, std::uint64_t limit) {
  FileRead result;
  const auto fail = [&](ReadProblem problem, int error) {
    result.problem = problem;
    result.error = error;
    return std::move(result);
  };
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever. Everything
  // after is asked of this descriptor, so a file swapped in after the open is not the one
  // read, and one swapped in before is seen for what it is.
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int error = errno;
    return fail(error == ENOENT || error == ENOTDIR ? ReadProblem::missing : ReadProblem::unreadable, error);
  }
  result.opened = true;
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return fail(ReadProblem::unreadable, errno);
  result.examined = true;
  result.mode = info.st_mode;
  if (!S_ISREG(info.st_mode)) return fail(ReadProblem::not_regular, 0);
  result.size = static_cast<std::uint64_t>(info.st_size);
  if (result.size > limit) return fail(ReadProblem::too_large, 0);
  // One byte more than its size: a file that grew after it was sized is caught, not cut.
  std::string& bytes = result.bytes;
  bytes.assign(static_cast<std::size_t>(result.size) + 1, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      bytes.clear();
      return fail(ReadProblem::unreadable, errno);
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(std::min<std::size_t>(done, static_cast<std::size_t>(result.size)));
  if (done != result.size) result.problem = ReadProblem::changed;
  return result;
}

std::string read_file(const std::filesystem::path& path, const std::string& component,
                      std::uint64_t limit) {
  const auto fail = [&](const std::string& why) {
    return Error(ErrorKind::io, component, "'" + path.string() + "'" + why);
  };
  FileRead read = read_regular_file(path, limit);
  const std::string error = read.error != 0 ? std::strerror(read.error) : "";
  switch (read.problem) {
    case ReadProblem::none:
    case ReadProblem::changed:  // grew or shrank while read: keep what is there
      return std::move(read.bytes);
    case ReadProblem::missing: throw fail(": no such file");
    case ReadProblem::not_regular: throw fail(" is " + kind_of_file(read.mode) + ", not a regular file");
    case ReadProblem::too_large:
      throw fail(" is " + std::to_string(read.size) + " bytes, more than the " + std::to_string(limit) +
                 "-byte limit for this input");
    case ReadProblem::unreadable:
      if (!read.opened) throw fail(" cannot be opened: " + error);
      if (!read.examined) throw fail(" cannot be examined: " + error);
      throw fail(": read failed: " + error);
  }
  throw fail(": cannot be read");
}

}  // namespace cujit::detail
