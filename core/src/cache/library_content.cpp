#include "cache/library_content.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// The low-level SHA-256, for the reason cache_key.cpp gives (no provider fetch).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "cache/blocked_signal.hpp"
#include "cache/lower_hex.hpp"
#include "cujit/cache_key.hpp"
#include "support/unique_fd.hpp"

namespace cujit::detail {
namespace {

std::atomic<std::size_t> files_hashed{0};
std::atomic<std::size_t> digests_from_store{0};

constexpr std::string_view store_magic = "cujit-library-digest 1";
// A file changed this recently is not remembered under its stamp.
constexpr long long too_new_ns = 2'000'000'000LL;

// One file as an identity describes it.
struct Stamp {
  std::string path;
  std::string size, mtime, ctime, device, inode;

  std::string text() const {
    return "size=" + size + ";mtime=" + mtime + ";ctime=" + ctime + ";device=" + device + ";inode=" + inode;
  }
};

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// Parses "path=P;size=S;mtime=M;ctime=C;device=D;inode=I" starting at `at` (where "path="
// is); sets `end` past the inode's digits. The path runs to ";size=" (a path holding that
// text is not parsed: the description stays as it was).
std::optional<Stamp> parse_stamp(std::string_view text, std::size_t at, std::size_t& end) {
  Stamp stamp;
  const std::size_t path_start = at + 5;
  const std::size_t size_at = text.find(";size=", path_start);
  if (size_at == std::string_view::npos) return std::nullopt;
  stamp.path = std::string(text.substr(path_start, size_at - path_start));
  if (stamp.path.empty() || stamp.path.front() != '/' || stamp.path.find(";size=") != std::string::npos) {
    return std::nullopt;
  }
  std::size_t cursor = size_at + 1;
  const auto field = [&](std::string_view name, std::string& out) {
    if (text.substr(cursor, name.size()) != name) return false;
    cursor += name.size();
    const std::size_t digits_end = text.find_first_not_of("0123456789", cursor);
    const std::size_t stop = digits_end == std::string_view::npos ? text.size() : digits_end;
    out = std::string(text.substr(cursor, stop - cursor));
    cursor = stop;
    return all_digits(out);
  };
  if (!field("size=", stamp.size) || !field(";mtime=", stamp.mtime) || !field(";ctime=", stamp.ctime) ||
      !field(";device=", stamp.device) || !field(";inode=", stamp.inode)) {
    return std::nullopt;
  }
  end = cursor;
  return stamp;
}

long long ns(const timespec& t) { return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec; }

bool matches(const Stamp& stamp, const struct stat& info) {
  return stamp.size == std::to_string(info.st_size) && stamp.mtime == std::to_string(ns(info.st_mtim)) &&
         stamp.ctime == std::to_string(ns(info.st_ctim)) && stamp.device == std::to_string(info.st_dev) &&
         stamp.inode == std::to_string(info.st_ino);
}

// The digest of the file the stamp describes, read through one descriptor whose status must
// match the stamp before and after the read; nullopt when it does not (the file changed).
std::optional<std::string> hash_file(const Stamp& stamp, struct stat& info) {
  const UniqueFd fd(::open(stamp.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || !matches(stamp, info)) return std::nullopt;
  files_hashed.fetch_add(1, std::memory_order_relaxed);
  SHA256_CTX context;
  SHA256_Init(&context);
  std::vector<char> buffer(std::size_t{1} << 20);
  while (true) {
    const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return std::nullopt;
    if (got == 0) break;
    SHA256_Update(&context, buffer.data(), static_cast<std::size_t>(got));
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Final(digest, &context);
  struct stat after {};
  if (::fstat(fd.get(), &after) != 0 || !matches(stamp, after)) return std::nullopt;
  return lower_hex(digest, sizeof digest);
}

// ---- the store ------------------------------------------------------------------------------

std::optional<std::string> store_directory() {
  if (const char* chosen = std::getenv("CUJIT_LIBRARY_DIGESTS"); chosen != nullptr && *chosen != '\0') {
    if (std::string_view(chosen) == "off") return std::nullopt;
    return std::string(chosen);
  }
  // Beside the build cache named by the environment (tests give theirs), else where the
  // build cache's default is.
  if (const char* cache = std::getenv("CUJIT_CACHE_DIR"); cache != nullptr && *cache == '/') {
    return std::string(cache) + "/library-digests";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/cujit/library-digests";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache/cujit/library-digests";
  }
  return std::nullopt;
}

bool trusted(const struct stat& info) {
  return info.st_uid == ::geteuid() && (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// The store directory when it is a real directory of this user's that no one else can
// write, created (with its parents, mode 0700) when missing; nullopt otherwise.
std::optional<std::string> checked_store(const std::optional<std::string>& directory);

// Checked once per directory and process (the caller holds content_digest's lock): the
// first key of a new process reads several library digests.
std::optional<std::string> trusted_store() {
  static std::map<std::string, bool, std::less<>> verdicts;
  const std::optional<std::string> directory = store_directory();
  if (!directory) return std::nullopt;
  if (const auto found = verdicts.find(*directory); found != verdicts.end()) {
    return found->second ? directory : std::nullopt;
  }
  const bool ok = checked_store(directory).has_value();
  verdicts.emplace(*directory, ok);
  return ok ? directory : std::nullopt;
}

std::optional<std::string> checked_store(const std::optional<std::string>& directory) {
  if (!directory || directory->front() != '/') return std::nullopt;
  struct stat info {};
  if (::lstat(directory->c_str(), &info) != 0) {
    // mkdir -p, each level 0700: an existing parent is left as it is.
    for (std::size_t slash = directory->find('/', 1);; slash = directory->find('/', slash + 1)) {
      const std::string level = directory->substr(0, slash);
      if (::mkdir(level.c_str(), 0700) != 0 && errno != EEXIST) return std::nullopt;
      if (slash == std::string::npos) break;
    }
    if (::lstat(directory->c_str(), &info) != 0) return std::nullopt;
  }
  if (!S_ISDIR(info.st_mode) || !trusted(info)) return std::nullopt;
  return directory;
}

std::string entry_name(const Stamp& stamp) { return sha256_hex(stamp.text()).substr(0, 32); }

std::optional<std::string> stored_digest(const std::string& directory, const Stamp& stamp) {
  const UniqueFd fd(::open((directory + "/" + entry_name(stamp)).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || !trusted(info) || info.st_size > 512) {
    return std::nullopt;
  }
  char buffer[513];
  const ssize_t got = ::read(fd.get(), buffer, sizeof buffer - 1);
  if (got <= 0) return std::nullopt;
  const std::string_view text(buffer, static_cast<std::size_t>(got));
  // "<magic>\n<stamp text>\n<64 hex>\n"
  const std::string expected_head = std::string(store_magic) + "\n" + stamp.text() + "\n";
  if (text.substr(0, expected_head.size()) != expected_head) return std::nullopt;
  const std::string_view digest = text.substr(expected_head.size());
  if (digest.size() != 65 || digest.back() != '\n' ||
      digest.substr(0, 64).find_first_not_of("0123456789abcdef") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(digest.substr(0, 64));
}

// Written whole to a private file then renamed into place: a reader sees an old entry, a
// new one, or none. A failure only costs the next process a hash.
void store_digest(const std::string& directory, const Stamp& stamp, const std::string& digest) {
  std::string temporary = directory + "/.entry-XXXXXX";
  const UniqueFd fd(::mkstemp(temporary.data()));
  if (!fd) return;
  const std::string text = std::string(store_magic) + "\n" + stamp.text() + "\n" + digest + "\n";
  bool ok = ::fchmod(fd.get(), 0600) == 0;
  // Past RLIMIT_FSIZE the write fails (EFBIG) instead of killing the process (SIGXFSZ).
  const BlockedSignal file_size_limit(SIGXFSZ);
  std::size_t written = 0;
  while (ok && written < text.size()) {
    const ssize_t put = ::write(fd.get(), text.data() + written, text.size() - written);
    if (put < 0 && errno == EINTR) continue;
    ok = put > 0;
    if (ok) written += static_cast<std::size_t>(put);
  }
  if (!ok || ::rename(temporary.c_str(), (directory + "/" + entry_name(stamp)).c_str()) != 0) {
    ::unlink(temporary.c_str());
  }
}

// A digest, and whether it may be remembered under its stamp (the file is not too new).
struct Digest {
  std::string hex;
  bool lasting = false;
};

std::optional<Digest> content_digest(const Stamp& stamp) {
  static std::mutex mutex;
  static std::map<std::string, std::string, std::less<>> known;  // stamp text -> digest (lasting ones)
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string key = stamp.text();
  if (const auto found = known.find(key); found != known.end()) return Digest{found->second, true};
  const std::optional<std::string> directory = trusted_store();
  if (directory) {
    if (std::optional<std::string> digest = stored_digest(*directory, stamp)) {
      digests_from_store.fetch_add(1, std::memory_order_relaxed);
      return Digest{known.emplace(key, std::move(*digest)).first->second, true};
    }
  }
  struct stat info {};
  std::optional<std::string> digest = hash_file(stamp, info);
  if (!digest) return std::nullopt;
  timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  // Both times: a file written within the last 2 s could be written again within the
  // same tick of a coarse clock, keeping its stamp with other bytes.
  const long long newest = std::max(ns(info.st_mtim), ns(info.st_ctim));
  if (ns(now) - newest < too_new_ns) return Digest{std::move(*digest), false};
  if (directory) store_digest(*directory, stamp, *digest);
  return Digest{known.emplace(key, std::move(*digest)).first->second, true};
}

std::string file_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The identity with each parsed description by content; `lasting` false when a digest
// must not be remembered (a file too new).
std::string rewrite(const std::string& identity, bool& lasting) {
  std::string out;
  std::size_t copied = 0;
  lasting = true;
  for (std::size_t at = identity.find("path="); at != std::string::npos; at = identity.find("path=", at + 1)) {
    if (at != 0 && identity[at - 1] != ' ' && identity[at - 1] != ';') continue;
    std::size_t end = 0;
    const std::optional<Stamp> stamp = parse_stamp(identity, at, end);
    if (!stamp) continue;
    const std::optional<Digest> digest = content_digest(*stamp);
    if (!digest) continue;
    lasting = lasting && digest->lasting;
    out += identity.substr(copied, at - copied);
    out += "sha256=" + digest->hex + ";size=" + stamp->size + ";name=" + file_name(stamp->path);
    copied = end;
    at = end - 1;
  }
  return out + identity.substr(copied);
}

}  // namespace

std::string content_identity(const std::string& identity) {
  static std::mutex mutex;
  static std::map<std::string, std::string, std::less<>> known;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto found = known.find(identity); found != known.end()) return found->second;
  }
  bool lasting = true;
  std::string rewritten = rewrite(identity, lasting);
  if (!lasting) return rewritten;
  const std::lock_guard<std::mutex> lock(mutex);
  return known.emplace(identity, std::move(rewritten)).first->second;
}

std::size_t library_files_hashed() noexcept { return files_hashed.load(std::memory_order_relaxed); }
std::size_t library_digests_from_store() noexcept { return digests_from_store.load(std::memory_order_relaxed); }

}  // namespace cujit::detail
