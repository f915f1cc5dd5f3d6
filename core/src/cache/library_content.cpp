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

#include "cache/lower_hex.hpp"
#include "cache/stamp_store.hpp"
#include "cujit/cache_key.hpp"
#include "support/unique_fd.hpp"

namespace cujit::detail {
namespace {

std::atomic<std::size_t> files_hashed{0};
std::atomic<std::size_t> digests_from_store{0};

constexpr std::string_view store_magic = "cujit-library-digest 1";

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

// ---- the store (stamp_store.hpp) -------------------------------------------------------------

constexpr StampStoreKind digest_store{"CUJIT_LIBRARY_DIGESTS", "library-digests", 4096, 512};

std::string entry_name(const Stamp& stamp) { return sha256_hex(stamp.text()).substr(0, 32); }

// "<magic>\n<stamp text>\n<64 hex>\n": the entry must name the stamp it is for.
std::string entry_head(const Stamp& stamp) { return std::string(store_magic) + "\n" + stamp.text() + "\n"; }

std::optional<std::string> stored_digest(const StampStore& store, const Stamp& stamp) {
  const std::optional<std::string> digest = store.read(entry_name(stamp), entry_head(stamp));
  if (!digest || digest->size() != 65 || digest->back() != '\n' ||
      digest->find_first_not_of("0123456789abcdef") != 64) {
    return std::nullopt;
  }
  return digest->substr(0, 64);
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
  const std::optional<StampStore> store = StampStore::open(digest_store);
  if (store) {
    if (std::optional<std::string> digest = stored_digest(*store, stamp)) {
      digests_from_store.fetch_add(1, std::memory_order_relaxed);
      return Digest{known.emplace(key, std::move(*digest)).first->second, true};
    }
  }
  struct stat info {};
  std::optional<std::string> digest = hash_file(stamp, info);
  if (!digest) return std::nullopt;
  if (changed_too_recently(info)) return Digest{std::move(*digest), false};
  if (store) store->write(entry_name(stamp), entry_head(stamp) + *digest + "\n");
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
