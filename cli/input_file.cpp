#include "input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cujit::cli {
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

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string read_input_file(const std::filesystem::path& path, std::size_t limit) {
  const auto fail = [&](InputProblem problem, const std::string& why) { return InputFileError(problem, path, why); };
  // O_NONBLOCK: opening a FIFO with no writer would wait forever; a regular file ignores it.
  // Everything after is asked of this descriptor, so a file swapped in after the open is
  // not the one read, and one swapped in before is seen for what it is.
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) throw fail(InputProblem::missing, "does not exist");
    if (error == ENXIO) throw fail(InputProblem::not_regular, "is a socket or device, not a regular file");
    throw fail(InputProblem::unreadable, std::string("cannot be opened: ") + std::strerror(error));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw fail(InputProblem::unreadable, std::string("cannot be examined: ") + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    const std::string kind = kind_of(info.st_mode);
    throw fail(InputProblem::not_regular, kind == "not a regular file" ? "is " + kind : "is " + kind + ", not a regular file");
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size > limit) {
    throw fail(InputProblem::too_large,
               "is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(limit));
  }
  // One byte more than its size: a file that grew after it was sized is caught, not cut.
  std::string bytes(size + 1, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw fail(InputProblem::unreadable, std::string("cannot be read: ") + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  if (done != size) throw fail(InputProblem::changed, "changed size while being read");
  bytes.resize(done);
  return bytes;
}

std::optional<std::string> read_input_file(const std::filesystem::path& path, std::string& why, std::size_t limit) {
  try {
    return read_input_file(path, limit);
  } catch (const InputFileError& error) {
    why = error.why();
    return std::nullopt;
  }
}

}  // namespace cujit::cli
