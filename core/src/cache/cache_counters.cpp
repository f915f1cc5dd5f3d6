#include "cache/cache_counters.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "cache/blocked_signal.hpp"
#include "cache/disk_cache.hpp"
#include "cujit/error.hpp"
#include "support/file_io.hpp"
#include "support/unique_fd.hpp"

namespace cujit {
namespace detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view counters_header = "cujit-counters 1\n";
constexpr std::string_view zeroed_name = "zeroed";
constexpr std::size_t counter_count = 26;
constexpr std::array<std::string_view, counter_count> counter_names = {
    "memo.hits",   "memo.misses",   "memory.hits", "memory.misses", "disk.hits",        "disk.misses",
    "remote.hits", "remote.misses", "builds",      "stores",        "evictions",        "corrupt",
    "remote.unverified", "remote.waits", "remote.lock_timeouts", "remote.errors",
    "remote.wait_ms", "remote.skipped", "remote.corrupt", "remote.write_failures", "remote.forbidden",
    "remote.repairs", "remote.bytes_saved", "process.waits", "process.wait_ms", "process.lock_timeouts"};
// A holder writes one small file: a lock held longer belongs to a stopped process, and the
// counts wait for the next batch rather than delay an exit.
constexpr std::chrono::milliseconds shard_lock_wait{2000};

std::array<std::uint64_t*, counter_count> fields_of(CacheCounters& c) {
  return {&c.memo.hits,   &c.memo.misses,   &c.memory.hits, &c.memory.misses, &c.disk.hits, &c.disk.misses,
          &c.remote.hits, &c.remote.misses, &c.builds,      &c.stores,        &c.evictions, &c.corrupt_entries,
          &c.remote_unverified, &c.remote_waits, &c.remote_lock_timeouts, &c.remote_errors,
          &c.remote_wait_ms, &c.remote_skipped, &c.remote_corrupt, &c.remote_write_failures, &c.remote_forbidden,
          &c.remote_repairs, &c.remote_bytes_saved, &c.process_waits, &c.process_wait_ms, &c.lock_timeouts};
}

constexpr int open_directory = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// O_NONBLOCK: a FIFO never blocks the open; O_NOFOLLOW: a symbolic link is refused.
constexpr int open_file = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;

std::string errno_text(int error = errno) { return std::strerror(error); }
std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

using Fd = UniqueFd;

std::string shard_name(unsigned shard, std::string_view suffix) {
  static constexpr char digits[] = "0123456789abcdef";
  return std::string(1, digits[shard % counter_shards]) + std::string(suffix);
}

bool parse_decimal(std::string_view text, std::uint64_t& value) {
  if (text.empty() || text.size() > 20) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc{} && end == text.data() + text.size();
}

// The counters directory, opened (created 0700 when `create`). Refuses a symbolic link or
// anything but a directory there.
Fd open_counters_directory(const fs::path& cache_dir, bool create, std::string& problem) {
  const Fd root(::open(cache_dir.c_str(), open_directory));
  if (!root) {
    problem = "cannot open the cache directory " + quoted(cache_dir) + ": " + errno_text();
    return Fd();
  }
  if (create && ::mkdirat(root.get(), counters_directory_name, 0700) != 0 && errno != EEXIST) {
    problem = "cannot create " + quoted(cache_dir / counters_directory_name) + ": " + errno_text();
    return Fd();
  }
  Fd dir(::openat(root.get(), counters_directory_name, open_directory));
  if (!dir) {
    const int error = errno;
    problem = error == ENOENT ? std::string()
                              : "cannot open " + quoted(cache_dir / counters_directory_name) + ": " +
                                    (error == ELOOP || error == ENOTDIR ? "not a directory" : errno_text(error));
  }
  return dir;
}

// Reads the open shard whole; why not when it is not a regular file of at most
// counter_file_limit bytes.
std::optional<std::string> read_open_shard(int fd, std::string& problem) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    problem = errno_text();
    return std::nullopt;
  }
  if (!S_ISREG(info.st_mode)) {
    problem = kind_of_file(info.st_mode);
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(info.st_size) > counter_file_limit) {
    problem = std::to_string(info.st_size) + " bytes, more than a counters file holds";
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t got = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      problem = errno_text();
      return std::nullopt;
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  text.resize(done);
  return text;
}

// Takes flock(2) `operation` on `fd`, waiting at most shard_lock_wait; why not, or empty.
std::string lock_file(int fd, int operation, const fs::path& path) {
  const auto deadline = std::chrono::steady_clock::now() + shard_lock_wait;
  auto pause = std::chrono::microseconds(100);
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return "cannot lock " + quoted(path) + ": " + errno_text();
    if (std::chrono::steady_clock::now() >= deadline) {
      return quoted(path) + " was locked by another process for more than " +
             std::to_string(shard_lock_wait.count()) + " ms";
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20'000));
  }
  return {};
}

// The text of the shard file `name` in `dir` (read under a shared lock, so never half
// written), or why it is not a readable shard. `missing` is set when there is none.
std::optional<std::string> read_shard(int dir, const std::string& name, bool& missing, std::string& problem) {
  missing = false;
  const Fd fd(::openat(dir, name.c_str(), open_file));
  if (!fd) {
    const int error = errno;
    missing = error == ENOENT;
    problem = error == ELOOP ? "a symbolic link" : error == ENXIO ? "a socket or device" : errno_text(error);
    return std::nullopt;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) == 0 && S_ISREG(info.st_mode)) {
    // A holder that never lets go (a stopped process): read what is there.
    (void)lock_file(fd.get(), LOCK_SH, name);
  }
  return read_open_shard(fd.get(), problem);
}

// The shard `name` opened for update and locked (flock, released by the kernel when its
// holder dies). Something else in its place (a link, a FIFO, a socket) is removed and a
// regular file made instead; `replaced` says what was there.
Fd lock_shard(int dir, const fs::path& where, const std::string& name, std::string& replaced, std::string& problem) {
  constexpr int flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  Fd fd(::openat(dir, name.c_str(), flags, 0600));
  struct stat info {};
  const bool regular = fd && ::fstat(fd.get(), &info) == 0 && S_ISREG(info.st_mode);
  if (!regular) {
    const int error = errno;
    replaced = fd ? kind_of_file(info.st_mode) : error == ELOOP ? "a symbolic link" : errno_text(error);
    // The name, never what a link points to: unlinkat removes the link itself.
    if (::unlinkat(dir, name.c_str(), 0) != 0) {
      problem = "cannot use " + quoted(where / name) + " (" + replaced + "), nor remove it: " + errno_text();
      return Fd();
    }
    Fd made(::openat(dir, name.c_str(), flags | O_EXCL, 0600));
    if (!made) {
      problem = "cannot create " + quoted(where / name) + ": " + errno_text();
      return Fd();
    }
    fd = std::move(made);
  }
  if (std::string why = lock_file(fd.get(), LOCK_EX, where / name); !why.empty()) {
    // Without file locks (some network file systems) counts from processes flushing at once
    // could be lost: none are written.
    problem = std::move(why);
    return Fd();
  }
  return fd;
}

// Overwrites the locked shard with `text`: one write at offset 0 of a file that is always
// the same length (encode_counters pads every count), so no reader or later writer ever
// sees a mix, and a process killed around it leaves the old text or the new one. Longer
// old contents (a damaged file) are cut off after. No fsync: counters are not worth a disk
// flush per process; after a power loss a shard may read as damaged and start over.
std::string write_shard(int fd, const fs::path& path, const std::string& text) {
  // Past RLIMIT_FSIZE a write raises SIGXFSZ, which would end the process: EFBIG instead.
  const BlockedSignal file_size_limit(SIGXFSZ);
  const ssize_t written = ::pwrite(fd, text.data(), text.size(), 0);
  if (written != static_cast<ssize_t>(text.size())) {
    return "writing " + quoted(path) + " failed: " + (written < 0 ? errno_text() : std::string("short write"));
  }
  struct stat info {};
  if (::fstat(fd, &info) == 0 && static_cast<std::uint64_t>(info.st_size) > text.size() &&
      ::ftruncate(fd, static_cast<off_t>(text.size())) != 0) {
    return "truncating " + quoted(path) + " failed: " + errno_text();
  }
  return {};
}

}  // namespace

std::string encode_counters(const CacheCounters& counters) {
  CacheCounters copy = counters;
  const auto fields = fields_of(copy);
  std::string out(counters_header);
  // Every count padded to 20 digits (2^64 - 1 has 20): the file never changes length.
  const auto padded = [](std::uint64_t value) {
    std::string digits = std::to_string(value);
    return std::string(20 - digits.size(), '0') + digits;
  };
  for (std::size_t i = 0; i < counter_count; ++i) {
    out += std::string(counter_names[i]) + " " + padded(*fields[i]) + "\n";
  }
  out += std::string(zeroed_name) + " " + padded(static_cast<std::uint64_t>(std::max<std::int64_t>(counters.zeroed_at, 0))) + "\n";
  return out;
}

bool add_decoded_counters(std::string_view text, CacheCounters& sum, std::string& problem) {
  if (text.substr(0, counters_header.size()) != counters_header) {
    problem = text.empty() ? "empty" : "not a cujit counters file (bad first line)";
    return false;
  }
  CacheCounters read;
  const auto fields = fields_of(read);
  std::array<bool, counter_count + 1> seen{};
  std::string_view rest = text.substr(counters_header.size());
  for (std::size_t line_number = 2; !rest.empty(); ++line_number) {
    const std::size_t end = rest.find('\n');
    if (end == std::string_view::npos) {
      problem = "line " + std::to_string(line_number) + " is not terminated (truncated)";
      return false;
    }
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
    const std::size_t space = line.find(' ');
    std::uint64_t value = 0;
    if (space == std::string_view::npos || space == 0 || !parse_decimal(line.substr(space + 1), value)) {
      problem = "line " + std::to_string(line_number) + " is not '<name> <count>'";
      return false;
    }
    const std::string_view name = line.substr(0, space);
    std::size_t index = counter_count;  // zeroed
    if (name != zeroed_name) {
      index = 0;
      while (index < counter_count && counter_names[index] != name) ++index;
      if (index == counter_count) continue;  // a counter of a newer cujit
    }
    if (seen[index]) {
      problem = "'" + std::string(name) + "' appears twice";
      return false;
    }
    seen[index] = true;
    if (index == counter_count) {
      read.zeroed_at = static_cast<std::int64_t>(std::min<std::uint64_t>(value, INT64_MAX));
    } else {
      *fields[index] = value;
    }
  }
  const auto into = fields_of(sum);
  for (std::size_t i = 0; i < counter_count; ++i) {
    // Saturating: a sum past 2^64 - 1 (only a forged file gets there) stays there.
    *into[i] = *into[i] + *fields[i] < *into[i] ? UINT64_MAX : *into[i] + *fields[i];
  }
  sum.zeroed_at = std::max(sum.zeroed_at, read.zeroed_at);
  return true;
}

std::string add_counters(const fs::path& cache_dir, unsigned shard, const CacheCounters& delta, std::string& reset) {
  std::string problem;
  const Fd dir = open_counters_directory(cache_dir, true, problem);
  if (!dir) return problem;
  const fs::path where = cache_dir / counters_directory_name;
  const std::string name = shard_name(shard, ".counters");
  std::string replaced;
  const Fd fd = lock_shard(dir.get(), where, name, replaced, problem);
  if (!fd) return problem;
  CacheCounters sum;
  if (!replaced.empty()) {
    reset = quoted(where / name) + " was " + replaced + ": replaced, its counts start over";
  } else if (const std::optional<std::string> text = read_open_shard(fd.get(), problem); !text) {
    reset = quoted(where / name) + " was not readable (" + problem + "): its counts start over";
  } else if (!text->empty() && !add_decoded_counters(*text, sum, problem)) {
    reset = quoted(where / name) + " was damaged (" + problem + "): its counts start over";
    sum = CacheCounters{};
  }
  std::string ignored;
  add_decoded_counters(encode_counters(delta), sum, ignored);
  return write_shard(fd.get(), where / name, encode_counters(sum));
}

CacheCounters counters_since(const CacheCounters& now, const CacheCounters& before, bool& any) {
  CacheCounters delta, now_copy = now, before_copy = before;
  const auto out = fields_of(delta);
  const auto a = fields_of(now_copy);
  const auto b = fields_of(before_copy);
  any = false;
  for (std::size_t i = 0; i < counter_count; ++i) {
    *out[i] = *a[i] >= *b[i] ? *a[i] - *b[i] : 0;
    any = any || *out[i] != 0;
  }
  return delta;
}

CacheCounters counters_max(const CacheCounters& a, const CacheCounters& b) {
  CacheCounters larger = a, b_copy = b;
  const auto out = fields_of(larger);
  const auto other = fields_of(b_copy);
  for (std::size_t i = 0; i < counter_count; ++i) *out[i] = std::max(*out[i], *other[i]);
  return larger;
}

}  // namespace detail

double TierCounters::hit_rate() const noexcept {
  const double asked = static_cast<double>(hits) + static_cast<double>(misses);
  return asked > 0 ? static_cast<double>(hits) / asked : 0.0;
}

double CacheCounters::hit_rate() const noexcept {
  const double hits = static_cast<double>(memo.hits) + static_cast<double>(memory.hits) +
                      static_cast<double>(disk.hits) + static_cast<double>(remote.hits);
  const double answered = hits + static_cast<double>(builds);
  return answered > 0 ? hits / answered : 0.0;
}

CacheCounters read_cache_counters(const std::filesystem::path& cache_dir) {
  CacheCounters counters;
  std::error_code ec;
  const auto status = std::filesystem::status(cache_dir, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return counters;
  if (status.type() != std::filesystem::file_type::directory) {
    throw Error(ErrorKind::io, "cache", "the cache directory " + detail::quoted(cache_dir) + " is not a directory");
  }
  std::string problem;
  const detail::Fd dir = detail::open_counters_directory(cache_dir, false, problem);
  if (!problem.empty()) counters.warnings.push_back("counters not read: " + problem);
  const std::filesystem::path where = cache_dir / detail::counters_directory_name;
  for (unsigned shard = 0; dir && shard < detail::counter_shards; ++shard) {
    const std::string name = detail::shard_name(shard, ".counters");
    bool missing = false;
    const std::optional<std::string> text = detail::read_shard(dir.get(), name, missing, problem);
    if (!text) {
      if (!missing) counters.warnings.push_back(detail::quoted(where / name) + " not read (" + problem + "): counted as 0");
      continue;
    }
    // Empty: made by a process that was stopped before its first write.
    if (!text->empty() && !detail::add_decoded_counters(*text, counters, problem)) {
      counters.warnings.push_back(detail::quoted(where / name) + " is damaged (" + problem +
                                  "): counted as 0 until a process starts it over");
    }
  }
  // What is on disk now: a walk, as eviction makes (it also sweeps stale temporary files).
  const detail::DiskCache disk(cache_dir, UINT64_MAX, std::chrono::seconds(0));
  const detail::WalkReport walk = disk.survey();
  counters.entries = walk.entries;
  counters.bytes = walk.bytes;
  for (const std::string& walk_problem : walk.problems) counters.warnings.push_back(walk_problem);
  return counters;
}

void zero_cache_counters(const std::filesystem::path& cache_dir) {
  std::error_code ec;
  if (std::filesystem::status(cache_dir, ec).type() == std::filesystem::file_type::not_found) return;
  std::string problem;
  const detail::Fd dir = detail::open_counters_directory(cache_dir, true, problem);
  if (!dir) throw Error(ErrorKind::io, "cache", "counters not zeroed: " + problem);
  const std::filesystem::path where = cache_dir / detail::counters_directory_name;
  CacheCounters zero;
  zero.zeroed_at = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string text = detail::encode_counters(zero);
  for (unsigned shard = 0; shard < detail::counter_shards; ++shard) {
    const std::string name = detail::shard_name(shard, ".counters");
    std::string replaced;
    const detail::Fd fd = detail::lock_shard(dir.get(), where, name, replaced, problem);
    if (!fd) throw Error(ErrorKind::io, "cache", "counters not zeroed: " + problem);
    if (problem = detail::write_shard(fd.get(), where / name, text); !problem.empty()) {
      throw Error(ErrorKind::io, "cache", "counters not zeroed: " + problem);
    }
  }
}

}  // namespace cujit
