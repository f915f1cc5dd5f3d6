#pragma once
// The disk tier: one file per key under fan-out directories, header + payload, written to
// a temporary file in the same directory, fsynced and renamed, so no reader ever sees a
// partial entry. Every failure is reported as a value; nothing here throws.

#include <cstdint>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace cujit::detail {

// Entry layout: magic (8) | format version (u32) | key length (u32) | key | payload size
// (u64) | payload SHA-256 (64 hex) | payload.
inline constexpr char entry_magic[8] = {'C', 'U', 'J', 'I', 'T', 'C', '\r', '\n'};
inline constexpr std::uint32_t entry_format_version = 1;

std::string encode_entry(const std::string& key, const std::string& payload);
// The payload when `bytes` is a sound entry for `key`, else why not.
struct DecodedEntry {
  std::optional<std::string> payload;
  std::string problem;
};
DecodedEntry decode_entry(const std::string& key, const std::string& bytes);

enum class ReadOutcome { hit, missing, corrupt, unreadable };

struct DiskCacheResult {
  bool ok = true;
  std::string problem;  // why not ok, for the warning
};

class DiskCache {
 public:
  DiskCache(std::filesystem::path directory, std::uint64_t max_bytes,
            std::chrono::seconds protect_recent,
            std::function<int(std::string_view)> fault = {});

  // Creates the directory (0700) if needed and checks it is safe to use: owned by this
  // user and not writable by group or others. Empty when usable, else why not.
  std::string open();

  std::filesystem::path entry_path(const std::string& key) const;
  // A hit refreshes the entry's modification time (the LRU clock). A corrupt entry is
  // removed and reported as such.
  ReadOutcome read(const std::string& key, std::string& payload, std::string& problem) const;
  DiskCacheResult write(const std::string& key, const std::string& payload) const;
  // Removes least recently used entries until the total is under the cap, never those
  // used within protect_recent; returns how many were removed.
  std::size_t evict() const;
  std::uint64_t total_bytes() const;
  std::size_t clear() const;
  const std::filesystem::path& directory() const noexcept { return directory_; }

 private:
  // errno to inject for an operation, or 0 (see CacheConfig::fault).
  int injected(std::string_view operation) const { return fault_ ? fault_(operation) : 0; }

  std::filesystem::path directory_;
  std::uint64_t max_bytes_;
  std::chrono::seconds protect_recent_;
  std::function<int(std::string_view)> fault_;
};

}  // namespace cujit::detail
