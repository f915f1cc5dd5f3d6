#include "cache/disk_cache.hpp"
#include "support/file_io.hpp"
#include "support/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

#include "cache/blocked_signal.hpp"
#include "cache/key_lock.hpp"
#include "cujit/cache_key.hpp"

namespace cujit::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t checksum_size = 64;
constexpr std::size_t key_digits = 64;  // a SHA-256 digest in hex
constexpr std::string_view entry_suffix = ".entry";
constexpr std::string_view temp_suffix = ".tmp";
constexpr std::int64_t ns_per_s = 1'000'000'000;

template <class T>
void append_le(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

template <class T>
std::optional<T> read_le(std::string_view in, std::size_t& at) {
  if (at > in.size() || in.size() - at < sizeof(T)) return std::nullopt;
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  at += sizeof(T);
  return value;
}

std::string errno_text(int error) { return std::strerror(error); }
std::string errno_text() { return errno_text(errno); }
std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

using Fd = UniqueFd;

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};
using Dir = std::unique_ptr<DIR, DirCloser>;

constexpr int open_directory = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// O_NONBLOCK: a FIFO never blocks the open; O_NOFOLLOW: a symbolic link is refused.
constexpr int open_file = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;


bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_decimal(std::string_view text) {
  return !text.empty() && text.size() <= 20 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_fan_out_name(std::string_view name) { return name.size() == 2 && is_hex(name); }

std::int64_t ns_of(const timespec& time) { return std::int64_t{time.tv_sec} * ns_per_s + time.tv_nsec; }

std::int64_t now_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return ns_of(now);
}

// Reads up to `size` bytes at `offset`; how many it read (fewer at the end of the file), or
// nullopt with errno set.
std::optional<std::size_t> read_at(int fd, char* out, std::size_t size, off_t offset) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd, out + done, size - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::nullopt;
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

bool write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void fsync_directory(const fs::path& directory) {
  const Fd fd(::open(directory.c_str(), open_directory));
  if (fd) ::fsync(fd.get());
}

// What a file at an entry's name is, as far as its bytes prove it.
enum class EntryVerdict {
  sound,
  not_cujits,     // no entry magic: not a file cujit wrote, so never removed by it
  other_version,  // cujit's entry of another format version: sound for another cujit
  damaged,        // cujit's header of this format, inconsistent with the key or its bytes
};

struct HeaderCheck {
  std::string problem;  // empty when the header is sound for the key
  std::size_t size = 0;
  std::uint64_t payload_size = 0;
  EntryVerdict verdict = EntryVerdict::damaged;
};

// The header at the start of `bytes` (which may hold more), checked against `key`.
HeaderCheck check_header(const std::string& key, std::string_view bytes) {
  if (bytes.size() < sizeof entry_magic || std::memcmp(bytes.data(), entry_magic, sizeof entry_magic) != 0) {
    return {"not a cujit cache entry (bad magic)", 0, 0, EntryVerdict::not_cujits};
  }
  std::size_t at = sizeof entry_magic;
  const auto version = read_le<std::uint32_t>(bytes, at);
  if (!version) return {"truncated header"};
  if (*version != entry_format_version) {
    return {"entry format version " + std::to_string(*version) + ", expected " + std::to_string(entry_format_version), 0,
            0, EntryVerdict::other_version};
  }
  const auto key_size = read_le<std::uint32_t>(bytes, at);
  if (!key_size) return {"truncated header"};
  if (*key_size != key.size()) return {"entry of another key"};
  if (bytes.size() - at < *key_size) return {"truncated header"};
  if (bytes.compare(at, *key_size, key) != 0) return {"entry of another key"};
  at += *key_size;
  const auto payload_size = read_le<std::uint64_t>(bytes, at);
  if (!payload_size || bytes.size() - at < checksum_size) return {"truncated header"};
  return {{}, at + checksum_size, *payload_size, EntryVerdict::sound};
}

// Whether the open file starts as cujit writes an entry for `key`: the magic and, in this
// entry format, the key (an entry of another format version is cujit's too).
bool has_entry_header(int fd, const std::string& key) {
  std::string head(sizeof entry_magic + 2 * sizeof(std::uint32_t) + key.size(), '\0');
  const auto got = read_at(fd, head.data(), head.size(), 0);
  if (!got) return false;
  head.resize(*got);
  if (head.size() < sizeof entry_magic + sizeof(std::uint32_t) ||
      std::memcmp(head.data(), entry_magic, sizeof entry_magic) != 0) {
    return false;
  }
  std::size_t at = sizeof entry_magic;
  if (read_le<std::uint32_t>(head, at) != entry_format_version) return true;
  const auto key_size = read_le<std::uint32_t>(head, at);
  return key_size == key.size() && head.size() - at == key.size() && head.compare(at, key.size(), key) == 0;
}

// Why `bytes` is not a sound entry for `key` (the header, the length it gives and the
// payload's checksum), or empty with `payload_at` where its payload starts.
std::string entry_problem(const std::string& key, std::string_view bytes, std::size_t& payload_at,
                          EntryVerdict* verdict = nullptr) {
  const HeaderCheck header = check_header(key, bytes);
  if (verdict != nullptr) *verdict = header.verdict == EntryVerdict::sound ? EntryVerdict::damaged : header.verdict;
  if (!header.problem.empty()) return header.problem;
  if (bytes.size() - header.size != header.payload_size) {
    return "payload of " + std::to_string(bytes.size() - header.size) + " bytes, header says " +
           std::to_string(header.payload_size);
  }
  if (bytes.compare(header.size - checksum_size, checksum_size, sha256_hex(bytes.substr(header.size))) != 0) {
    return "payload checksum mismatch";
  }
  payload_at = header.size;
  if (verdict != nullptr) *verdict = EntryVerdict::sound;
  return {};
}

enum class Removal { removed, gone, not_ours, failed };

// Removes `name` in the directory `dir_fd` if it is a regular file (the one walked, when
// `walked` is given) and, for an entry (`key` not empty), starts with cujit's entry header.
Removal remove_at(int dir_fd, const std::string& name, const std::string& key, const struct stat* walked,
                  std::string& problem) {
  const Fd fd(::openat(dir_fd, name.c_str(), open_file));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT) return Removal::gone;
    if (error == ELOOP || error == ENXIO) return Removal::not_ours;
    problem = "cannot open '" + name + "': " + errno_text(error);
    return Removal::failed;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    problem = "cannot examine '" + name + "': " + errno_text();
    return Removal::failed;
  }
  if (!S_ISREG(info.st_mode)) return Removal::not_ours;
  // Replaced since the walk (a writer renamed a new entry over it): leave the new one.
  if (walked != nullptr && (info.st_dev != walked->st_dev || info.st_ino != walked->st_ino)) return Removal::gone;
  if (!key.empty() && !has_entry_header(fd.get(), key)) return Removal::not_ours;
  if (::unlinkat(dir_fd, name.c_str(), 0) != 0) {
    if (errno == ENOENT) return Removal::gone;
    problem = "cannot remove '" + name + "': " + errno_text();
    return Removal::failed;
  }
  return Removal::removed;
}

// One of cujit's files, as a walk found it.
struct WalkedFile {
  std::string fan_out;
  std::string name;
  std::string key;  // empty for a temporary file or a lock file
  struct stat info;
  bool lock = false;  // a key's lock file (key_lock.hpp), in the cache directory itself
  std::uint64_t size() const { return static_cast<std::uint64_t>(info.st_size); }
  std::int64_t used_ns() const { return ns_of(info.st_mtim); }
};

struct Listing {
  std::vector<WalkedFile> files;
  std::vector<std::string> problems;
};

// Every regular file in the fan-out directories under `root` whose name is one cujit gives
// (entries and temporary files). Nothing else is looked at; a directory that cannot be read
// is a problem, and the walk goes on.
Listing list_files(const fs::path& root, const std::function<int(std::string_view)>& fault) {
  Listing out;
  Fd root_fd(::open(root.c_str(), open_directory));
  Dir dir(root_fd ? ::fdopendir(root_fd.get()) : nullptr);
  if (!dir) {
    out.problems.push_back("cannot read the cache directory " + quoted(root) + ": " + errno_text());
    return out;
  }
  (void)root_fd.release();  // owned by `dir` now
  for (errno = 0; const dirent* fan_out = ::readdir(dir.get()); errno = 0) {
    const std::string fan_out_name = fan_out->d_name;
    if (is_lock_name(fan_out_name)) {  // a key's lock file, in the cache directory itself
      struct stat info {};
      if (::fstatat(::dirfd(dir.get()), fan_out_name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISREG(info.st_mode)) {
        out.files.push_back(WalkedFile{{}, fan_out_name, {}, info, true});
      }
      continue;
    }
    if (!is_fan_out_name(fan_out_name)) continue;
    const int injected = fault ? fault("list:" + fan_out_name) : 0;
    Fd sub_fd(injected ? -1 : ::openat(::dirfd(dir.get()), fan_out_name.c_str(), open_directory));
    Dir sub(sub_fd ? ::fdopendir(sub_fd.get()) : nullptr);
    if (!sub) {
      const int error = injected ? injected : errno;
      if (error == ENOENT) continue;  // removed since it was listed
      out.problems.push_back("cannot read " + quoted(root / fan_out_name) + ": " + errno_text(error) +
                             (injected ? " (injected)" : "") + "; the walk skipped it");
      continue;
    }
    (void)sub_fd.release();
    for (errno = 0; const dirent* file = ::readdir(sub.get()); errno = 0) {
      const std::string name = file->d_name;
      std::string key = key_of_entry_name(fan_out_name, name);
      if (key.empty() && !is_temp_name(fan_out_name, name)) continue;
      struct stat info {};
      if (::fstatat(::dirfd(sub.get()), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
      if (!S_ISREG(info.st_mode)) continue;  // cujit writes only regular files
      out.files.push_back(WalkedFile{fan_out_name, name, std::move(key), info});
    }
    if (errno != 0) out.problems.push_back("reading " + quoted(root / fan_out_name) + " failed: " + errno_text());
  }
  if (errno != 0) out.problems.push_back("reading the cache directory " + quoted(root) + " failed: " + errno_text());
  return out;
}

Removal remove_walked(const fs::path& root, const WalkedFile& file, std::string& problem) {
  const Fd root_fd(::open(root.c_str(), open_directory));
  const Fd dir_fd(root_fd ? ::openat(root_fd.get(), file.fan_out.c_str(), open_directory) : -1);
  if (!dir_fd) {
    if (errno == ENOENT) return Removal::gone;
    problem = "cannot open " + quoted(root / file.fan_out) + ": " + errno_text();
    return Removal::failed;
  }
  const Removal removal = remove_at(dir_fd.get(), file.name, file.key, &file.info, problem);
  if (removal == Removal::failed) problem = quoted(root / file.fan_out) + ": " + problem;
  return removal;
}

bool is_stale_temp(const WalkedFile& file, std::int64_t now) {
  return file.key.empty() && file.used_ns() < now - stale_temp_age.count() * ns_per_s;
}

// Sweeps a stale temporary file; whether it was one (and is gone).
bool swept(const fs::path& root, const WalkedFile& file, std::int64_t now, WalkReport& report) {
  if (!is_stale_temp(file, now)) return false;
  std::string problem;
  switch (remove_walked(root, file, problem)) {
    case Removal::removed: ++report.temps_removed; return true;
    case Removal::gone: return true;
    case Removal::not_ours: return false;
    case Removal::failed: report.problems.push_back(problem); return false;
  }
  return false;
}

// Removes a lock file that no process holds (its builder finished or died); whether it did.
// One that is held belongs to a build in flight and stays.
bool swept_lock(const fs::path& root, const WalkedFile& file) {
  const Fd root_fd(::open(root.c_str(), open_directory));
  return root_fd && remove_unheld_lock(root_fd.get(), file.name, file.info.st_dev, file.info.st_ino);
}

// The entries and temporary files of the cache directory that the sweep of stale
// temporary files and unheld lock files left; the listing's problems and the sweep's
// counts go into `report`.
std::vector<WalkedFile> kept_files(const fs::path& root, const std::function<int(std::string_view)>& fault,
                                   std::int64_t now, WalkReport& report) {
  Listing listing = list_files(root, fault);
  report.problems = std::move(listing.problems);
  std::vector<WalkedFile> kept;
  for (WalkedFile& file : listing.files) {
    if (file.lock) {
      if (swept_lock(root, file)) ++report.locks_removed;
      continue;
    }
    if (!swept(root, file, now, report)) kept.push_back(std::move(file));
  }
  return kept;
}

// Creates each missing directory of `directory` (absolute) with mode 0700.
std::string create_private(const fs::path& directory) {
  fs::path at;
  for (const fs::path& part : directory) {
    at /= part;
    struct stat info {};
    if (::lstat(at.c_str(), &info) == 0 || errno != ENOENT) continue;
    if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) return "cannot create " + quoted(at) + ": " + errno_text();
  }
  return {};
}

// The directory's write lock (flock(2) on its lock file), waited for at most
// write_lock_wait. Empty when held or when file locks are unsupported there
// (`unsupported`), else why not.
std::string take_write_lock(const fs::path& directory, Fd& held, bool& unsupported) {
  const fs::path path = directory / write_lock_name;
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600));
  if (!fd) return "cannot open the write lock " + quoted(path) + ": " + errno_text();
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return "cannot examine the write lock " + quoted(path) + ": " + errno_text();
  if (!S_ISREG(info.st_mode)) return "the write lock " + quoted(path) + " is " + kind_of_file(info.st_mode);
  const auto deadline = std::chrono::steady_clock::now() + write_lock_wait;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      held = std::move(fd);
      return {};
    }
    if (errno == EINTR) continue;
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS) {
      unsupported = true;
      return {};
    }
    if (errno != EWOULDBLOCK) return "cannot lock " + quoted(path) + ": " + errno_text();
    if (std::chrono::steady_clock::now() >= deadline) {
      return "the write lock " + quoted(path) + " was held by another process for more than " +
             std::to_string(write_lock_wait.count()) + " s";
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

std::string encode_entry(const std::string& key, const std::string& payload) {
  std::string out(entry_magic, sizeof entry_magic);
  append_le<std::uint32_t>(out, entry_format_version);
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(key.size()));
  out += key;
  append_le<std::uint64_t>(out, payload.size());
  out += sha256_hex(payload);
  out += payload;
  return out;
}

DecodedEntry decode_entry(const std::string& key, const std::string& bytes) {
  std::size_t payload_at = 0;
  if (std::string problem = entry_problem(key, bytes, payload_at); !problem.empty()) return {std::nullopt, problem};
  return {bytes.substr(payload_at), {}};
}

std::string key_of_entry_name(std::string_view fan_out, std::string_view name) {
  if (name.size() != key_digits + entry_suffix.size() || name.substr(key_digits) != entry_suffix) return {};
  const std::string_view key = name.substr(0, key_digits);
  if (!is_fan_out_name(fan_out) || !is_hex(key) || key.substr(0, 2) != fan_out) return {};
  return std::string(key);
}

bool is_temp_name(std::string_view fan_out, std::string_view name) {
  // .<key>.<pid>.<random>.tmp
  if (name.size() < 1 + key_digits + 1 + temp_suffix.size() || name[0] != '.' ||
      name.substr(name.size() - temp_suffix.size()) != temp_suffix) {
    return false;
  }
  const std::string_view key = name.substr(1, key_digits);
  if (!is_fan_out_name(fan_out) || !is_hex(key) || key.substr(0, 2) != fan_out || name[1 + key_digits] != '.') {
    return false;
  }
  const std::string_view numbers =
      name.substr(2 + key_digits, name.size() - 2 - key_digits - temp_suffix.size());
  const std::size_t dot = numbers.find('.');
  return dot != std::string_view::npos && is_decimal(numbers.substr(0, dot)) && is_decimal(numbers.substr(dot + 1));
}

std::string unsafe_parent(const fs::path& directory, uid_t uid) {
  for (fs::path at = directory.parent_path();; at = at.parent_path()) {
    struct stat info {};
    if (::lstat(at.c_str(), &info) != 0) return "cannot examine its parent " + quoted(at) + ": " + errno_text();
    if (!S_ISDIR(info.st_mode)) return "its parent " + quoted(at) + " is " + kind_of_file(info.st_mode);
    if (info.st_uid != 0 && info.st_uid != uid) {
      return "its parent " + quoted(at) + " is owned by user " + std::to_string(info.st_uid) +
             ", neither root nor this user (" + std::to_string(uid) + "), who could replace the cache directory";
    }
    if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0) {
      return "its parent " + quoted(at) + " is writable by " +
             ((info.st_mode & S_IWOTH) != 0 ? "others" : "its group") +
             " without the sticky bit, so another user could replace the cache directory";
    }
    if (at == at.parent_path()) return {};
  }
}

DiskCache::DiskCache(fs::path directory, std::uint64_t max_bytes, std::chrono::seconds protect_recent,
                     std::function<int(std::string_view)> fault)
    : directory_(std::move(directory)), max_bytes_(max_bytes), protect_recent_(protect_recent),
      fault_(std::move(fault)) {}

std::string DiskCache::open() {
  if (directory_.empty()) return "no cache directory was given";
  std::error_code ec;
  const fs::path wanted = fs::absolute(directory_, ec);
  if (ec) return "cannot resolve " + quoted(directory_) + ": " + ec.message();
  // A directory already there (every use but the first) needs no walk creating its parts.
  struct stat existing {};
  if (::lstat(wanted.c_str(), &existing) != 0 || !S_ISDIR(existing.st_mode)) {
    if (std::string problem = create_private(wanted); !problem.empty()) return problem;
  }
  const std::unique_ptr<char, decltype(&std::free)> real(::realpath(wanted.c_str(), nullptr), &std::free);
  if (!real) return "cannot resolve " + quoted(wanted) + ": " + errno_text();
  const fs::path resolved = real.get();
  struct stat info {};
  if (::lstat(resolved.c_str(), &info) != 0) return "cannot read " + quoted(resolved) + ": " + errno_text();
  if (!S_ISDIR(info.st_mode)) return quoted(wanted) + " is not a directory";
  if (info.st_uid != ::geteuid()) {
    return quoted(resolved) + " is owned by user " + std::to_string(info.st_uid) + ", not by this user (" +
           std::to_string(::geteuid()) + "): entries there could be forged";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return quoted(resolved) + " is writable by group or others: entries there could be forged";
  }
  if (::access(resolved.c_str(), R_OK | W_OK | X_OK) != 0) {
    return quoted(resolved) + " is not readable and writable: " + errno_text();
  }
  if (const std::string problem = unsafe_parent(resolved, ::geteuid()); !problem.empty()) {
    return quoted(resolved) + " could be swapped: " + problem;
  }
  directory_ = resolved;
  return {};
}

fs::path DiskCache::entry_path(const std::string& key) const {
  return directory_ / key.substr(0, 2) / (key + std::string(entry_suffix));
}

ReadOutcome DiskCache::read(const std::string& key, std::string& payload, std::string& problem) const {
  const fs::path path = entry_path(key);
  if (const int error = injected("read")) {
    problem = "cannot open " + quoted(path) + ": " + std::strerror(error) + " (injected)";
    return ReadOutcome::unreadable;
  }
  const Fd fd(::open(path.c_str(), open_file));
  if (!fd) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) return ReadOutcome::missing;
    if (error == ELOOP || error == ENXIO) {
      problem = quoted(path) + " is " + (error == ELOOP ? "a symbolic link" : "a socket or device") +
                ", not an entry cujit wrote: left alone";
      return ReadOutcome::foreign;
    }
    problem = "cannot open " + quoted(path) + ": " + errno_text(error);
    return ReadOutcome::unreadable;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    problem = "cannot examine " + quoted(path) + ": " + errno_text();
    return ReadOutcome::unreadable;
  }
  if (!S_ISREG(info.st_mode)) {
    problem = quoted(path) + " is " + kind_of_file(info.st_mode) + ", not an entry cujit wrote: left alone";
    return ReadOutcome::foreign;
  }
  const auto corrupt = [&](const std::string& why) {
    problem = quoted(path) + ": " + why;
    // Only the file just examined: a writer may have renamed a sound entry over it since.
    struct stat now {};
    if (::lstat(path.c_str(), &now) == 0 && now.st_dev == info.st_dev && now.st_ino == info.st_ino) {
      ::unlink(path.c_str());
    }
    return ReadOutcome::corrupt;
  };
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes_) {
    // Not read (this process reads no more than its cap), and not removed: another process
    // with a larger CUJIT_CACHE_MAX_BYTES wrote it and uses it; nothing shows it damaged.
    problem = quoted(path) + ": an entry of " + std::to_string(size) + " bytes, larger than this process's cap of " +
              std::to_string(max_bytes_) + " bytes (CUJIT_CACHE_MAX_BYTES): left alone, a miss";
    return ReadOutcome::skipped;
  }
  // The whole entry with one read into a string sized once (the size is bounded by the
  // cap above and must be what the header gives): a lookup is one open, one fstat, one
  // read, whatever the entry's size.
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (const int error = injected("pread")) {
    problem = "cannot read " + quoted(path) + ": " + std::strerror(error) + " (injected)";
    return ReadOutcome::unreadable;
  }
  const auto got = read_at(fd.get(), bytes.data(), bytes.size(), 0);
  if (!got) {
    problem = "cannot read " + quoted(path) + ": " + errno_text();
    return ReadOutcome::unreadable;
  }
  if (*got != bytes.size()) return corrupt("shorter than its size while read");
  std::size_t payload_at = 0;
  EntryVerdict verdict = EntryVerdict::sound;
  if (const std::string why = entry_problem(key, bytes, payload_at, &verdict); !why.empty()) {
    // Removed only when its own header proves it damaged: cujit's, of this format, and
    // inconsistent. A file without cujit's magic is not cujit's to remove; an entry of
    // another format version is another cujit's. Either is a miss, and a build's write
    // (a rename) replaces it.
    switch (verdict) {
      case EntryVerdict::not_cujits:
        problem = quoted(path) + ": " + why + ", not an entry cujit wrote: left alone";
        return ReadOutcome::foreign;
      case EntryVerdict::other_version:
        problem = quoted(path) + ": " + why + " (another cujit's): left alone, a miss";
        return ReadOutcome::skipped;
      case EntryVerdict::sound:
      case EntryVerdict::damaged: break;
    }
    return corrupt(why);
  }
  bytes.erase(0, payload_at);
  payload = std::move(bytes);
  // The LRU clock, moved only when it is a grain behind (or ahead, a clock set back): a hit
  // on an entry used moments ago writes nothing.
  const std::int64_t age = now_ns() - ns_of(info.st_mtim);
  if (age < 0 || age >= lru_grain().count() * ns_per_s) ::futimens(fd.get(), nullptr);
  return ReadOutcome::hit;
}

bool DiskCache::make_room(std::uint64_t incoming, WalkReport& report) const {
  const std::int64_t now = now_ns();
  const std::vector<WalkedFile> files = kept_files(directory_, fault_, now, report);
  std::uint64_t total = 0;
  std::vector<const WalkedFile*> entries;
  for (const WalkedFile& file : files) {
    total += file.size();
    if (!file.key.empty()) entries.push_back(&file);
  }
  if (total + incoming > max_bytes_) {
    std::sort(entries.begin(), entries.end(),
              [](const WalkedFile* a, const WalkedFile* b) { return a->used_ns() < b->used_ns(); });
    // A hit moves an entry's time only once per grain: one read within protect_recent may
    // show as up to a grain earlier, and is protected all the same.
    const std::int64_t recent = now - (protect_recent_ + lru_grain()).count() * ns_per_s;
    for (const WalkedFile* entry : entries) {
      if (total + incoming <= max_bytes_ || entry->used_ns() >= recent) break;  // sorted: the rest are recent
      std::string problem;
      switch (remove_walked(directory_, *entry, problem)) {
        case Removal::removed: ++report.entries_removed; [[fallthrough]];
        case Removal::gone:
        case Removal::not_ours: total -= entry->size(); break;
        case Removal::failed: report.problems.push_back(problem); break;
      }
    }
  }
  report.bytes = total;
  return total + incoming <= max_bytes_;
}

DiskCacheResult DiskCache::write(const std::string& key, const std::string& payload) const {
  const fs::path final_path = entry_path(key);
  const fs::path fan_out = final_path.parent_path();
  const std::string bytes = encode_entry(key, payload);
  DiskCacheResult result;
  const auto fail = [&](std::string why) {
    result.ok = false;
    result.problem = std::move(why);
    return result;
  };
  if (bytes.size() > max_bytes_) {
    result.refused = true;
    return fail("an entry of " + std::to_string(bytes.size()) + " bytes is larger than the cache's cap of " +
                std::to_string(max_bytes_) + " bytes");
  }
  if (::mkdir(fan_out.c_str(), 0700) != 0 && errno != EEXIST) {
    return fail("cannot create " + quoted(fan_out) + ": " + errno_text());
  }
  // One writer at a time per directory, across threads and processes: the room made for
  // this entry is still there when it lands, so the cap holds under any burst.
  // Threads of this process queue on a plain mutex: a holder always finishes its bounded
  // write. (A timed mutex's wait goes through pthread_mutex_clocklock, which
  // ThreadSanitizer cannot see, so the lane reported every unlock as foreign.)
  const std::lock_guard<std::mutex> turn(*writers_);
  Fd lock;
  bool unsupported = false;
  if (const int error = injected("lock")) return fail("cannot lock the cache directory: " + errno_text(error) + " (injected)");
  if (std::string problem = take_write_lock(directory_, lock, unsupported); !problem.empty()) return fail(problem);
  if (!make_room(bytes.size(), result.walk)) {
    result.refused = true;
    return fail("the cache holds " + std::to_string(result.walk.bytes) + " bytes (cap " + std::to_string(max_bytes_) +
                ") of entries used within the last " + std::to_string(protect_recent_.count()) +
                " s, which are not evicted: no room for this entry of " + std::to_string(bytes.size()) + " bytes");
  }
  if (unsupported) {
    result.walk.problems.push_back("file locks are not supported in " + quoted(directory_) +
                                   ": the size cap cannot hold against other processes writing at once");
  }
  std::random_device random;
  const fs::path temp = fan_out / ("." + key + "." + std::to_string(::getpid()) + "." +
                                   std::to_string(random()) + std::string(temp_suffix));
  if (const int error = injected("create")) {
    return fail("cannot create " + quoted(temp) + ": " + std::strerror(error) + " (injected)");
  }
  const Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("cannot create " + quoted(temp) + ": " + errno_text());
  std::string write_error;
  // An entry past RLIMIT_FSIZE is a failed write (EFBIG), never SIGXFSZ ending the process.
  const BlockedSignal file_size_limit(SIGXFSZ);
  // Half, then the rest: a writer that dies in between leaves only a temporary file.
  const std::string_view all(bytes);
  for (const std::string_view part : {all.substr(0, all.size() / 2), all.substr(all.size() / 2)}) {
    if (const int error = injected("write")) {
      write_error = std::string(std::strerror(error)) + " (injected)";
      break;
    }
    if (!write_all(fd.get(), part)) {
      write_error = errno_text();
      break;
    }
  }
  if (write_error.empty()) {
    if (const int error = injected("fsync")) {
      write_error = std::string(std::strerror(error)) + " (injected)";
    } else if (::fsync(fd.get()) != 0) {
      write_error = errno_text();
    }
  }
  if (!write_error.empty()) {
    ::unlink(temp.c_str());
    return fail("writing " + quoted(temp) + " failed: " + write_error);
  }
  const int rename_fault = injected("rename");
  if (rename_fault != 0 || ::rename(temp.c_str(), final_path.c_str()) != 0) {
    const std::string error = rename_fault ? std::string(std::strerror(rename_fault)) + " (injected)" : errno_text();
    ::unlink(temp.c_str());
    return fail("renaming into " + quoted(final_path) + " failed: " + error);
  }
  fsync_directory(fan_out);
  return result;
}

KeyLockResult DiskCache::lock(const std::string& key, std::chrono::milliseconds timeout) const {
  return lock_key(directory_, key, timeout, fault_);
}

bool DiskCache::remove(const std::string& key) const {
  const Fd root_fd(::open(directory_.c_str(), open_directory));
  const Fd dir_fd(root_fd ? ::openat(root_fd.get(), key.substr(0, 2).c_str(), open_directory) : -1);
  if (!dir_fd || key_of_entry_name(key.substr(0, 2), key + std::string(entry_suffix)).empty()) return false;
  std::string problem;
  return remove_at(dir_fd.get(), key + std::string(entry_suffix), key, nullptr, problem) == Removal::removed;
}

WalkReport DiskCache::survey() const {
  WalkReport report;
  for (const WalkedFile& file : kept_files(directory_, fault_, now_ns(), report)) {
    if (!file.key.empty()) {
      // Counted only when it is cujit's: a look at its header.
      const Fd root_fd(::open(directory_.c_str(), open_directory));
      const Fd dir_fd(root_fd ? ::openat(root_fd.get(), file.fan_out.c_str(), open_directory) : -1);
      const Fd fd(dir_fd ? ::openat(dir_fd.get(), file.name.c_str(), open_file) : -1);
      struct stat info {};
      if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || !has_entry_header(fd.get(), file.key)) {
        continue;
      }
      report.bytes += static_cast<std::uint64_t>(info.st_size);
      ++report.entries;
      continue;
    }
    report.bytes += file.size();
  }
  return report;
}

WalkReport DiskCache::clear() const {
  WalkReport report;
  for (const WalkedFile& file : kept_files(directory_, fault_, now_ns(), report)) {
    if (file.key.empty()) {
      report.bytes += file.size();  // a temporary file a live writer may still rename
      continue;
    }
    std::string problem;
    switch (remove_walked(directory_, file, problem)) {
      case Removal::removed: ++report.entries_removed; break;
      case Removal::gone:
      case Removal::not_ours: break;
      case Removal::failed: report.problems.push_back(problem); break;
    }
  }
  return report;
}

}  // namespace cujit::detail
