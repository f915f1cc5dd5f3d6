#include "output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <iostream>

#include "runner/printable_text.hpp"
#include "support/spawner.hpp"

namespace cujit::cli {

std::string printable(std::string_view text) { return scenarios::printable_text(text); }

std::string printable_stream(std::string_view chunk) {
  std::string out;
  out.reserve(chunk.size());
  for (const char c : chunk) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7F) {
      constexpr char digits[] = "0123456789abcdef";
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

std::string printable_lines(std::string_view text) {
  std::string out;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    if (start > 0) out += "\n  ";
    out += printable(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos || end + 1 == text.size()) break;
    start = end + 1;
  }
  return out;
}

std::string shown(const std::string& text) { return "'" + printable(text) + "'"; }

OutputFile::OutputFile(std::filesystem::path path) : path_(std::move(path)) {
  // The path as written: a link of another user's anywhere on the way (a directory they own
  // holding a link to one of ours) would send the file where they choose (red-team finding,
  // 2026-11-28). O_NOFOLLOW: a link planted at the file's name after that check is refused,
  // not followed to whatever it names.
  std::error_code ignored;
  if (const auto refused = detail::check_path_as_written(std::filesystem::absolute(path_, ignored).string())) {
    throw CliError("cannot create " + shown(path_.string()) + ": " + printable(refused->why) +
                   ": give a path only root or you can change");
  }
  // O_NONBLOCK: a FIFO at the name (anyone's, in /tmp) would block the open until someone
  // read it, and then be handed the output (red-team finding, 2026-11-28). Checked on the
  // descriptor: a regular file or a device (/dev/null, /dev/full), never a FIFO or socket.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0) throw CliError("cannot create " + shown(path_.string()) + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !(S_ISREG(info.st_mode) || S_ISCHR(info.st_mode))) {
    ::close(fd_);
    fd_ = -1;
    throw CliError("cannot create " + shown(path_.string()) + ": not a regular file or a device");
  }
  // Writes block as usual: a device may be slow, never a FIFO nobody reads.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(std::string_view bytes) noexcept {
  while (error_ == 0 && !bytes.empty()) {
    const ssize_t wrote = ::write(fd_, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      error_ = wrote < 0 ? errno : EIO;
      return;
    }
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
}

std::string OutputFile::error() const {
  return error_ == 0 ? std::string() : "cannot write " + shown(path_.string()) + ": " + std::strerror(error_);
}

void OutputFile::finish() {
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
  }
  if (error_ != 0) throw CliError(error());
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  OutputFile file(path);
  file.write(bytes);
  file.finish();
}

void make_output_dir(const std::filesystem::path& dir, const std::string& argument) {
  std::error_code error;
  // Files are written under the directory by name: a symbolic link planted there (by whoever
  // could write to it before) would send them elsewhere. A directory that holds one is refused.
  // The walk is bounded: an --out such as $HOME is refused rather than walked for minutes.
  constexpr std::size_t walk_limit = 100000;
  // An --out that is itself a link is never walked, and would send every file elsewhere.
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(dir, error))) {
    throw CliError(argument + " " + shown(dir.string()) + ": is a symbolic link: give the directory itself");
  }
  error.clear();
  if (std::filesystem::is_directory(std::filesystem::symlink_status(dir, error))) {
    std::size_t walked = 0;
    for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      if (++walked > walk_limit) {
        throw CliError(argument + " " + shown(dir.string()) + ": holds more than " + std::to_string(walk_limit) +
                       " files, too many to check for symbolic links: give a new or empty directory");
      }
      if (it->is_symlink(error)) {
        throw CliError(argument + " " + shown(dir.string()) + ": holds a symbolic link, " + shown(it->path().string()) +
                       ": give a new or empty directory");
      }
    }
    error.clear();
  }
  // Before anything is created: the path as written must not pass through a link or a
  // directory of another user's (the check below resolves links, and a directory created
  // first would be left behind under a refused path).
  if (const auto refused = detail::check_path_as_written(std::filesystem::absolute(dir, error).string())) {
    throw CliError(argument + " " + shown(dir.string()) + ": " + printable(refused->why) +
                   ": give a directory only root or you can write to");
  }
  make_directory(dir, argument);
  // The walk above holds only while no one else can add a link: the directory and those
  // above it must be owned by root or this user and writable by no one else (as for what
  // cujit runs), or another user could plant one while the run writes.
  if (const std::optional<detail::ExecutableRefusal> refused = detail::check_trusted_directory(dir.string())) {
    throw CliError(argument + " " + shown(dir.string()) + ": " + shown(refused->path) + " " + printable(refused->why) +
                   ": give a directory only root or you can write to");
  }
}

void make_directory(const std::filesystem::path& dir, const std::string& argument) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw CliError(argument + " " + shown(dir.string()) + ": cannot create the directory: " + error.message());
  if (!std::filesystem::is_directory(dir, error)) {
    throw CliError(argument + " " + shown(dir.string()) + ": is not a directory");
  }
}

void require_input_file(const std::string& path, const std::string& argument) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw CliError(argument + " " + shown(path) + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) throw CliError(argument + " " + shown(path) + ": is not a regular file");
  if (::access(path.c_str(), R_OK) != 0) throw CliError(argument + " " + shown(path) + ": " + std::strerror(errno));
}

namespace {
std::string stdout_target() {
  std::error_code error;
  const auto target = std::filesystem::read_symlink("/proc/self/fd/1", error);
  return error ? std::string("standard output") : "standard output (" + target.string() + ")";
}
}  // namespace

bool finish_stdout() {
  errno = 0;
  std::cout.flush();
  int reason = errno;
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (errno != 0) reason = errno;
  if (flushed && std::cout.good() && std::ferror(stdout) == 0) return true;
  std::cerr << "cujit: cannot write " << stdout_target() << ": "
            << (reason != 0 ? std::strerror(reason) : "write failed") << "\n";
  return false;
}

}  // namespace cujit::cli
