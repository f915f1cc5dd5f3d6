#include "cache/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "cujit/cache_key.hpp"

namespace cujit::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t checksum_size = 64;
constexpr const char* entry_suffix = ".entry";
constexpr const char* temp_suffix = ".tmp";

template <class T>
void append_le(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

template <class T>
std::optional<T> read_le(const std::string& in, std::size_t& at) {
  if (in.size() - at < sizeof(T) || at > in.size()) return std::nullopt;
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  at += sizeof(T);
  return value;
}

std::string errno_text() { return std::strerror(errno); }

bool write_all(int fd, const std::string& bytes) {
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
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

struct EntryFile {
  fs::path path;
  std::uint64_t size;
  fs::file_time_type used;
};

std::vector<EntryFile> list_entries(const fs::path& directory) {
  std::vector<EntryFile> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != entry_suffix) continue;
    const auto size = it->file_size(ec);
    const auto used = it->last_write_time(ec);
    if (!ec) out.push_back(EntryFile{it->path(), size, used});
  }
  return out;
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
  if (bytes.size() < sizeof entry_magic ||
      std::memcmp(bytes.data(), entry_magic, sizeof entry_magic) != 0) {
    return {std::nullopt, "not a cujit cache entry (bad magic)"};
  }
  std::size_t at = sizeof entry_magic;
  const auto version = read_le<std::uint32_t>(bytes, at);
  if (!version) return {std::nullopt, "truncated header"};
  if (*version != entry_format_version) {
    return {std::nullopt, "entry format version " + std::to_string(*version) + ", expected " +
                              std::to_string(entry_format_version)};
  }
  const auto key_size = read_le<std::uint32_t>(bytes, at);
  if (!key_size || *key_size > bytes.size() - at) return {std::nullopt, "truncated header"};
  if (bytes.compare(at, *key_size, key) != 0) return {std::nullopt, "entry of another key"};
  at += *key_size;
  const auto payload_size = read_le<std::uint64_t>(bytes, at);
  if (!payload_size || bytes.size() - at < checksum_size) return {std::nullopt, "truncated header"};
  const std::string checksum = bytes.substr(at, checksum_size);
  at += checksum_size;
  if (bytes.size() - at != *payload_size) {
    return {std::nullopt, "payload of " + std::to_string(bytes.size() - at) + " bytes, header says " +
                              std::to_string(*payload_size)};
  }
  std::string payload = bytes.substr(at);
  if (sha256_hex(payload) != checksum) return {std::nullopt, "payload checksum mismatch"};
  return {std::move(payload), {}};
}

DiskCache::DiskCache(fs::path directory, std::uint64_t max_bytes, std::chrono::seconds protect_recent,
                     std::function<int(std::string_view)> fault)
    : directory_(std::move(directory)), max_bytes_(max_bytes), protect_recent_(protect_recent),
      fault_(std::move(fault)) {}

std::string DiskCache::open() {
  std::error_code ec;
  if (!fs::exists(directory_, ec)) {
    fs::create_directories(directory_.parent_path(), ec);
    if (::mkdir(directory_.c_str(), 0700) != 0 && errno != EEXIST) {
      return "cannot create '" + directory_.string() + "': " + errno_text();
    }
  }
  struct stat info {};
  if (::stat(directory_.c_str(), &info) != 0) {
    return "cannot read '" + directory_.string() + "': " + errno_text();
  }
  if (!S_ISDIR(info.st_mode)) return "'" + directory_.string() + "' is not a directory";
  if (info.st_uid != ::geteuid()) {
    return "'" + directory_.string() + "' is owned by user " + std::to_string(info.st_uid) +
           ", not by this user (" + std::to_string(::geteuid()) + "): entries there could be forged";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return "'" + directory_.string() + "' is writable by group or others: entries there could be forged";
  }
  if (::access(directory_.c_str(), R_OK | W_OK | X_OK) != 0) {
    return "'" + directory_.string() + "' is not readable and writable: " + errno_text();
  }
  return {};
}

fs::path DiskCache::entry_path(const std::string& key) const {
  return directory_ / key.substr(0, 2) / (key + entry_suffix);
}

ReadOutcome DiskCache::read(const std::string& key, std::string& payload, std::string& problem) const {
  const fs::path path = entry_path(key);
  if (const int error = injected("read")) {
    problem = "cannot open '" + path.string() + "': " + std::strerror(error) + " (injected)";
    return ReadOutcome::unreadable;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return ReadOutcome::missing;
    problem = "cannot open '" + path.string() + "': " + errno_text();
    return ReadOutcome::unreadable;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DecodedEntry decoded = decode_entry(key, bytes);
  if (!decoded.payload) {
    problem = "'" + path.string() + "': " + decoded.problem;
    std::error_code ec;
    fs::remove(path, ec);
    return ReadOutcome::corrupt;
  }
  payload = std::move(*decoded.payload);
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // LRU clock
  return ReadOutcome::hit;
}

DiskCacheResult DiskCache::write(const std::string& key, const std::string& payload) const {
  const fs::path final_path = entry_path(key);
  const fs::path fan_out = final_path.parent_path();
  if (::mkdir(fan_out.c_str(), 0700) != 0 && errno != EEXIST) {
    return {false, "cannot create '" + fan_out.string() + "': " + errno_text()};
  }
  std::random_device random;
  const fs::path temp = fan_out / ("." + key + "." + std::to_string(::getpid()) + "." +
                                   std::to_string(random()) + temp_suffix);
  if (const int error = injected("create")) {
    return {false, "cannot create '" + temp.string() + "': " + std::strerror(error) + " (injected)"};
  }
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return {false, "cannot create '" + temp.string() + "': " + errno_text()};
  const std::string bytes = encode_entry(key, payload);
  std::string write_error;
  bool written = true;
  // Half, then the rest: a writer that dies in between leaves only a temporary file.
  const std::string_view first(bytes.data(), bytes.size() / 2), rest(bytes.data() + first.size(), bytes.size() - first.size());
  for (const std::string_view part : {first, rest}) {
    if (const int error = injected("write")) {
      written = false;
      write_error = std::string(std::strerror(error)) + " (injected)";
      break;
    }
    if (!write_all(fd, std::string(part))) {
      written = false;
      write_error = errno_text();
      break;
    }
  }
  if (written) {
    if (const int error = injected("fsync")) {
      written = false;
      write_error = std::string(std::strerror(error)) + " (injected)";
    } else if (::fsync(fd) != 0) {
      written = false;
      write_error = errno_text();
    }
  }
  ::close(fd);
  if (!written) {
    ::unlink(temp.c_str());
    return {false, "writing '" + temp.string() + "' failed: " + write_error};
  }
  const int rename_fault = injected("rename");
  if (rename_fault != 0 || ::rename(temp.c_str(), final_path.c_str()) != 0) {
    const std::string error = rename_fault ? std::string(std::strerror(rename_fault)) + " (injected)" : errno_text();
    ::unlink(temp.c_str());
    return {false, "renaming into '" + final_path.string() + "' failed: " + error};
  }
  fsync_directory(fan_out);
  return {};
}

std::uint64_t DiskCache::total_bytes() const {
  std::uint64_t total = 0;
  for (const EntryFile& entry : list_entries(directory_)) total += entry.size;
  return total;
}

std::size_t DiskCache::evict() const {
  std::vector<EntryFile> entries = list_entries(directory_);
  std::uint64_t total = 0;
  for (const EntryFile& entry : entries) total += entry.size;
  if (total <= max_bytes_) return 0;
  std::sort(entries.begin(), entries.end(),
            [](const EntryFile& a, const EntryFile& b) { return a.used < b.used; });
  const auto recent = fs::file_time_type::clock::now() - protect_recent_;
  std::size_t removed = 0;
  for (const EntryFile& entry : entries) {
    if (total <= max_bytes_) break;
    if (entry.used > recent) break;  // sorted: everything after is recent too
    std::error_code ec;
    if (fs::remove(entry.path, ec)) {
      total -= entry.size;
      ++removed;
    }
  }
  return removed;
}

std::size_t DiskCache::clear() const {
  std::size_t removed = 0;
  for (const EntryFile& entry : list_entries(directory_)) {
    std::error_code ec;
    if (fs::remove(entry.path, ec)) ++removed;
  }
  return removed;
}

}  // namespace cujit::detail
