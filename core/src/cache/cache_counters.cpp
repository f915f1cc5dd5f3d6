#include "cache/cache_counters.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "cache/disk_cache.hpp"
#include "cujit/error.hpp"
#include "support/file_io.hpp"

namespace cujit {
namespace detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view counters_header = "cujit-counters 1\n";
constexpr std::string_view zeroed_name = "zeroed";
constexpr std::size_t counter_count = 12;
constexpr std::array<std::string_view, counter_count> counter_names = {
    "memo.hits",   "memo.misses",   "memory.hits", "memory.misses", "disk.hits", "disk.misses",
    "remote.hits", "remote.misses", "builds",      "stores",        "evictions", "corrupt"};
// A holder writes one small file: a lock held longer belongs to a stopped process, and the
// counts wait for the next batch rather than delay an exit.
constexpr std::chrono::milliseconds shard_lock_wait{2000};

std::array<std::uint64_t*, counter_count> fields_of(CacheCounters& c) {
  return {&c.memo.hits,   &c.memo.misses,   &c.memory.hits, &c.memory.misses, &c.disk.hits, &c.disk.misses,
          &c.remote.hits, &c.remote.misses, &c.builds,      &c.stores,        &c.evictions, &c.corrupt_entries};
}

constexpr int open_directory = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// O_NONBLOCK: a FIFO never blocks the open; O_NOFOLLOW: a symbolic link is refused.
constexpr int open_file = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;

std::string errno_text(int error = errno) { return std::strerror(error); }
std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_;
};

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

// The text of the shard file `name` in `dir`, or why it is not a readable shard. `missing`
// is set when there is none.
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
  if (::fstat(fd.get(), &info) != 0) {
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
    const ssize_t got = ::pread(fd.get(), text.data() + done, text.size() - done, static_cast<off_t>(done));
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

// The shard's lock, held until the result is destroyed; empty with why not in `problem`.
Fd lock_shard(int dir, const fs::path& where, unsigned shard, std::string& problem) {
  const std::string name = shard_name(shard, ".guard");
  Fd fd(::openat(dir, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600));
  if (!fd) {
    problem = "cannot open the lock " + quoted(where / name) + ": " + errno_text();
    return Fd();
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    problem = "the lock " + quoted(where / name) + " is not a regular file";
    return Fd();
  }
  const auto deadline = std::chrono::steady_clock::now() + shard_lock_wait;
  auto pause = std::chrono::microseconds(100);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      // No file locks here (some network file systems): counts from processes flushing at
      // the same moment could be lost, so none are written.
      problem = "cannot lock " + quoted(where / name) + ": " + errno_text();
      return Fd();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      problem = "the lock " + quoted(where / name) + " was held for more than " +
                std::to_string(shard_lock_wait.count()) + " ms";
      return Fd();
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20'000));
  }
  return fd;
}

// Replaces the shard with `text` (under its lock): a temporary file renamed over it.
std::string replace_shard(int dir, const fs::path& where, unsigned shard, const std::string& text) {
  const std::string temp = shard_name(shard, ".counters.new");  // only the guard's holder writes it
  const std::string final_name = shard_name(shard, ".counters");
  const Fd fd(::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                       0600));
  if (!fd) return "cannot create " + quoted(where / temp) + ": " + errno_text();
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return quoted(where / temp) + " is not a regular file";
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string error = errno_text();
      ::unlinkat(dir, temp.c_str(), 0);
      return "writing " + quoted(where / temp) + " failed: " + error;
    }
    done += static_cast<std::size_t>(n);
  }
  // No fsync: counters are not worth a disk flush per process. After a power loss a shard
  // may be empty, which reads as damaged: a warning, and it starts over.
  if (::renameat(dir, temp.c_str(), dir, final_name.c_str()) != 0) {
    const std::string error = errno_text();
    ::unlinkat(dir, temp.c_str(), 0);
    return "renaming into " + quoted(where / final_name) + " failed: " + error;
  }
  return {};
}

}  // namespace

std::string encode_counters(const CacheCounters& counters) {
  CacheCounters copy = counters;
  const auto fields = fields_of(copy);
  std::string out(counters_header);
  for (std::size_t i = 0; i < counter_count; ++i) {
    out += std::string(counter_names[i]) + " " + std::to_string(*fields[i]) + "\n";
  }
  if (counters.zeroed_at > 0) out += std::string(zeroed_name) + " " + std::to_string(counters.zeroed_at) + "\n";
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
  const Fd lock = lock_shard(dir.get(), where, shard, problem);
  if (!lock) return problem;
  const std::string name = shard_name(shard, ".counters");
  bool missing = false;
  CacheCounters sum = delta;
  sum.zeroed_at = 0;
  const std::optional<std::string> text = read_shard(dir.get(), name, missing, problem);
  if (text) {
    CacheCounters old;
    if (add_decoded_counters(*text, old, problem)) {
      add_decoded_counters(encode_counters(delta), old, problem);
      old.zeroed_at = std::max<std::int64_t>(old.zeroed_at, 0);
      sum = old;
    } else {
      reset = quoted(where / name) + " was damaged (" + problem + "): its counts start over";
    }
  } else if (!missing) {
    reset = quoted(where / name) + " was not readable (" + problem + "): its counts start over";
  }
  return replace_shard(dir.get(), where, shard, encode_counters(sum));
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
    if (!detail::add_decoded_counters(*text, counters, problem)) {
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
    const detail::Fd lock = detail::lock_shard(dir.get(), where, shard, problem);
    if (!lock) throw Error(ErrorKind::io, "cache", "counters not zeroed: " + problem);
    if (problem = detail::replace_shard(dir.get(), where, shard, text); !problem.empty()) {
      throw Error(ErrorKind::io, "cache", "counters not zeroed: " + problem);
    }
  }
}

}  // namespace cujit
