#pragma once
// The disk tier: one file per key under fan-out directories, header + payload, written to
// a temporary file in the same directory, fsynced and renamed, so no reader ever sees a
// partial entry. Every failure is reported as a value; nothing here throws.
//
// Only what cujit wrote is read, counted or removed: entries named <64 lowercase hex
// digits>.entry in the fan-out directory named by their first two digits and starting with
// a cujit entry header, temporary files named .<key>.<pid>.<n>.tmp in that directory, and
// lock files named <key>.lock in the cache directory itself (removed only when no process
// holds them).
// Nothing but a regular file is ever opened there (no FIFO, device, directory or symbolic
// link), and nothing is read past the size its header gives.

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/key_lock.hpp"

namespace cujit::detail {

// Entry layout: magic (8) | format version (u32) | key length (u32) | key | payload size
// (u64) | payload SHA-256 (64 hex) | payload.
inline constexpr char entry_magic[8] = {'C', 'U', 'J', 'I', 'T', 'C', '\r', '\n'};
inline constexpr std::uint32_t entry_format_version = 1;
// A temporary file this old was left by a writer that died (a live writer renames its
// file within moments): walks (eviction, clear, stats) remove it.
inline constexpr std::chrono::seconds stale_temp_age{3600};
// How long a writer waits for the directory's write lock (held by another writer for the
// time of one entry's write) before giving up on storing its entry.
inline constexpr std::chrono::seconds write_lock_wait{10};
// The write lock: a regular file in the cache directory, locked with flock(2) so that the
// kernel releases it when its holder dies.
inline constexpr const char* write_lock_name = ".lock";

std::string encode_entry(const std::string& key, const std::string& payload);
// The payload when `bytes` is a sound entry for `key`, else why not.
struct DecodedEntry {
  std::optional<std::string> payload;
  std::string problem;
};
DecodedEntry decode_entry(const std::string& key, const std::string& bytes);

// The key an entry file name gives ("<key>.entry" in the fan-out directory of its first two
// digits), or empty when the name is not one cujit gives an entry there.
std::string key_of_entry_name(std::string_view fan_out, std::string_view name);
// Whether `name` is one cujit gives a temporary file in `fan_out`.
bool is_temp_name(std::string_view fan_out, std::string_view name);

// Why another user could swap `directory` (an absolute path without symbolic links), as
// OpenSSH's secure-path check: a parent not owned by root or `uid`, or writable by group
// or others without the sticky bit. Empty when every parent up to / is safe.
std::string unsafe_parent(const std::filesystem::path& directory, uid_t uid);

enum class ReadOutcome {
  hit,
  missing,
  corrupt,     // a file cujit wrote that is not a sound entry for the key: removed
  foreign,     // not a regular file (FIFO, directory, symbolic link...), or not cujit's: left alone
  unreadable,  // an error opening or reading it
  // cujit's, not damaged as far as its bytes show, but not for this process: larger than
  // its cap (not read), another entry format version. Left alone; a miss.
  skipped,
};

// What a walk of the cache directory did and met.
struct WalkReport {
  std::size_t entries_removed = 0;
  std::size_t temps_removed = 0;    // stale temporary files swept
  std::size_t locks_removed = 0;    // lock files no process held (key_lock.hpp)
  std::uint64_t bytes = 0;          // entries and temporary files left
  std::size_t entries = 0;          // entries left (counted by survey())
  std::vector<std::string> problems;  // directories it could not read, files it could not remove
};

struct DiskCacheResult {
  bool ok = true;
  bool refused = false;  // not written because of the size cap (not an error)
  std::string problem;   // why not ok or refused, for the warning
  WalkReport walk;       // the eviction that made room
};

class DiskCache {
 public:
  DiskCache(std::filesystem::path directory, std::uint64_t max_bytes,
            std::chrono::seconds protect_recent,
            std::function<int(std::string_view)> fault = {});

  // Creates the directory (0700, and any missing parent 0700) if needed and checks it is
  // safe to use: owned by this user, not writable by group or others, and no parent that
  // another user could use to swap it (unsafe_parent). Empty when usable, else why not.
  // From then on the directory is used by its resolved path.
  std::string open();

  std::filesystem::path entry_path(const std::string& key) const;
  // A hit refreshes the entry's modification time (the LRU clock) when it is lru_grain() or
  // more behind. An entry is removed only when its own header proves it damaged (cujit's
  // magic and format, and a key, size or checksum that does not hold): `corrupt`.
  ReadOutcome read(const std::string& key, std::string& payload, std::string& problem) const;
  // Writes the entry under the directory's write lock, after making room for it: the total
  // of entries and temporary files never exceeds the cap. Least recently used entries go
  // first, never one used within protect_recent; when only such entries stand in the way,
  // or the entry alone is larger than the cap, it is not written (`refused`).
  DiskCacheResult write(const std::string& key, const std::string& payload) const;
  // The cross-process lock of `key` (key_lock.hpp), waited for at most `timeout`.
  KeyLockResult lock(const std::string& key, std::chrono::milliseconds timeout) const;
  // Removes the entry for `key` if it is one cujit wrote; whether one was removed.
  bool remove(const std::string& key) const;
  // Entries, and bytes of entries and temporary files, after sweeping stale temporary files.
  WalkReport survey() const;
  // Removes every entry and stale temporary file.
  WalkReport clear() const;
  const std::filesystem::path& directory() const noexcept { return directory_; }
  // How far behind a hit lets an entry's time be before it moves it: a minute, or half of
  // protect_recent when that is shorter (eviction protects entries used within protect_recent
  // plus this grain, so no entry read within protect_recent is evicted).
  std::chrono::seconds lru_grain() const noexcept {
    return std::min<std::chrono::seconds>(std::chrono::seconds(60), protect_recent_ / 2);
  }

 private:
  // errno to inject for an operation, or 0 (see CacheConfig::fault).
  int injected(std::string_view operation) const { return fault_ ? fault_(operation) : 0; }
  // Under the write lock: removes stale temporary files, then least recently used entries
  // (never one used within protect_recent) until `incoming` more bytes fit under the cap;
  // whether they fit. An existing entry of the same key counts until it is replaced.
  bool make_room(std::uint64_t incoming, WalkReport& report) const;

  std::filesystem::path directory_;
  std::uint64_t max_bytes_;
  std::chrono::seconds protect_recent_;
  std::function<int(std::string_view)> fault_;
  // Threads of this process take turns before taking the directory's lock.
  std::unique_ptr<std::mutex> writers_ = std::make_unique<std::mutex>();
};

}  // namespace cujit::detail
