#include "cache/stamp_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "cache/blocked_signal.hpp"
#include "support/unique_fd.hpp"

namespace cujit::detail {
namespace {

constexpr long long too_new_ns = 2'000'000'000LL;

long long ns(const timespec& t) { return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec; }

std::optional<std::string> store_directory(const StampStoreKind& kind) {
  const char* chosen = std::getenv(kind.environment);
  if (chosen != nullptr && *chosen != '\0' && std::string_view(chosen) != "on") {
    if (std::string_view(chosen) == "off") return std::nullopt;
    return std::string(chosen);
  }
  if (kind.opt_in && (chosen == nullptr || std::string_view(chosen) != "on")) return std::nullopt;
  // Beside the build cache named by the environment (tests give theirs), else where the
  // build cache's default is.
  const std::string sub = kind.subdirectory;
  if (const char* cache = std::getenv("CUJIT_CACHE_DIR"); cache != nullptr && *cache == '/') {
    return std::string(cache) + "/" + sub;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/cujit/" + sub;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache/cujit/" + sub;
  }
  return std::nullopt;
}

bool trusted(const struct stat& info) {
  return info.st_uid == ::geteuid() && (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// The directory when it is a real directory of this user's that no one else can write,
// created (with its parents, mode 0700) when missing.
bool checked(const std::string& directory) {
  if (directory.empty() || directory.front() != '/') return false;
  struct stat info {};
  if (::lstat(directory.c_str(), &info) != 0) {
    // mkdir -p, each level 0700: an existing parent is left as it is.
    for (std::size_t slash = directory.find('/', 1);; slash = directory.find('/', slash + 1)) {
      const std::string level = directory.substr(0, slash);
      if (::mkdir(level.c_str(), 0700) != 0 && errno != EEXIST) return false;
      if (slash == std::string::npos) break;
    }
    if (::lstat(directory.c_str(), &info) != 0) return false;
  }
  return S_ISDIR(info.st_mode) && trusted(info);
}

// An entry name is the caller's hex digest: nothing that could leave the directory.
bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 128 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

bool changed_too_recently(long long mtime_ns, long long ctime_ns) {
  timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  // Both times: a file written within the last 2 s could be written again within the
  // same tick of a coarse clock, keeping its stamp with other bytes.
  return ns(now) - std::max(mtime_ns, ctime_ns) < too_new_ns;
}

bool changed_too_recently(const struct stat& info) { return changed_too_recently(ns(info.st_mtim), ns(info.st_ctim)); }

std::optional<StampStore> StampStore::open(const StampStoreKind& kind) {
  static std::mutex mutex;
  static std::map<std::string, bool, std::less<>> verdicts;  // a new process checks each directory once
  const std::optional<std::string> directory = store_directory(kind);
  if (!directory) return std::nullopt;
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = verdicts.find(*directory);
  if (found == verdicts.end()) found = verdicts.emplace(*directory, checked(*directory)).first;
  if (!found->second) return std::nullopt;
  return StampStore(*directory, kind);
}

std::optional<std::string> StampStore::read(const std::string& name, std::string_view head) const {
  if (!valid_name(name)) return std::nullopt;
  const UniqueFd fd(::open((directory_ + "/" + name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || !trusted(info) ||
      static_cast<std::size_t>(info.st_size) > kind_->max_entry_bytes ||
      static_cast<std::size_t>(info.st_size) < head.size()) {
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;  // shorter than its size said: being replaced, or damaged
    got += static_cast<std::size_t>(n);
  }
  if (std::string_view(text).substr(0, head.size()) != head) return std::nullopt;
  text.erase(0, head.size());
  return text;
}

void StampStore::write(const std::string& name, std::string_view text) const {
  if (!valid_name(name) || text.size() > kind_->max_entry_bytes) return;
  std::string temporary = directory_ + "/.entry-XXXXXX";
  const UniqueFd fd(::mkstemp(temporary.data()));
  if (!fd) return;
  bool ok = ::fchmod(fd.get(), 0600) == 0;
  {
    // Past RLIMIT_FSIZE the write fails (EFBIG) instead of killing the process (SIGXFSZ).
    const BlockedSignal file_size_limit(SIGXFSZ);
    std::size_t written = 0;
    while (ok && written < text.size()) {
      const ssize_t put = ::write(fd.get(), text.data() + written, text.size() - written);
      if (put < 0 && errno == EINTR) continue;
      ok = put > 0;
      if (ok) written += static_cast<std::size_t>(put);
    }
  }
  if (!ok || ::rename(temporary.c_str(), (directory_ + "/" + name).c_str()) != 0) {
    ::unlink(temporary.c_str());
    return;
  }
  bound();
}

void StampStore::remove(const std::string& name) const {
  if (valid_name(name)) ::unlink((directory_ + "/" + name).c_str());
}

// Past max_entries, the oldest entries go until a quarter of the room is free again (so
// that the directory is not listed on every write near the bound).
void StampStore::bound() const {
  DIR* listing = ::opendir(directory_.c_str());
  if (listing == nullptr) return;
  std::vector<std::pair<long long, std::string>> entries;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (!valid_name(name)) continue;  // ".", "..", temporaries, anything not ours
    struct stat info {};
    if (::fstatat(::dirfd(listing), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(info.st_mode)) {
      entries.emplace_back(ns(info.st_mtim), name);
    }
  }
  ::closedir(listing);
  if (entries.size() <= kind_->max_entries) return;
  std::sort(entries.begin(), entries.end());
  const std::size_t keep = kind_->max_entries - kind_->max_entries / 4;
  for (std::size_t i = 0; i + keep < entries.size(); ++i) ::unlink((directory_ + "/" + entries[i].second).c_str());
}

}  // namespace cujit::detail
