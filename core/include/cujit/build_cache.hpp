#pragma once
// BuildCache: the one cache for every build in cujit (NVRTC compiles and links, which the
// NRT library, ABI compilation, kernel builds and the reduce build all go through). It
// stores bytes under keys and knows nothing of compilers, linkers or drivers. A memory
// tier (LRU bounded in bytes, one build per key at a time) in front of a disk tier
// (fan-out directories, atomic entries with a checksum). A cache that cannot be used never
// fails a build: it records a warning, counts it, and builds.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "cujit/cache_key.hpp"

namespace cujit {

enum class CacheMode { off, memory, disk };
std::string_view to_string(CacheMode mode) noexcept;

struct CacheConfig {
  CacheMode mode = CacheMode::disk;
  std::filesystem::path directory;
  std::uint64_t max_disk_bytes = std::uint64_t{1} << 30;
  std::uint64_t max_memory_bytes = std::uint64_t{256} << 20;
  // Disk entries used this recently are never evicted (another process may be using them).
  // The cap still holds: when only such entries stand in the way, a new entry is not
  // written (stats().disk_cap_refusals) rather than the cap exceeded.
  std::chrono::seconds protect_recent{300};
  // Testing seam: called before each disk operation ("lock", "create", "write", "fsync",
  // "rename", "read", and "list:<fan-out directory>" as a walk opens one) with its name; a
  // non-zero result is an errno that makes that operation fail, as a full disk (ENOSPC), a
  // read-only file system (EROFS) or a permission (EACCES) would. Empty in normal use.
  std::function<int(std::string_view operation)> fault;

  // From CUJIT_CACHE (off|memory|disk), CUJIT_CACHE_DIR (default $XDG_CACHE_HOME/cujit,
  // else ~/.cache/cujit), CUJIT_CACHE_MAX_BYTES, CUJIT_CACHE_MEMORY_BYTES (decimal byte
  // counts). Any other value is Error(usage) naming the variable (cujit/environment.hpp).
  static CacheConfig from_environment();
  std::vector<std::string> warnings;
};

struct CacheStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t builds = 0;
  std::uint64_t waits = 0;  // callers that waited for another caller's build of the same key
  // Entries dropped: unsound on disk (removed), not a regular file there (left alone), or
  // a payload its caller could not decode (drop()).
  std::uint64_t corrupt_entries = 0;
  std::uint64_t memory_evictions = 0;
  std::uint64_t disk_evictions = 0;
  std::uint64_t disk_write_failures = 0;
  std::uint64_t disk_read_failures = 0;  // entries that could not be opened or read: misses
  // Entries not written to disk to keep the cap: larger than the cap, or the cap full of
  // entries used within protect_recent.
  std::uint64_t disk_cap_refusals = 0;
  std::uint64_t stale_temps_removed = 0;  // temporary files of dead writers swept
  std::uint64_t disk_walk_errors = 0;     // directories a walk could not read (it went on)
  std::uint64_t not_stored = 0;  // results built but not cacheable (see warnings())
  std::uint64_t memory_bytes = 0;
  std::uint64_t memory_entries = 0;
  // The memo of decoded results (BuildCache::recall), bounded by max_memory_bytes of its own.
  std::uint64_t memo_hits = 0;
  std::uint64_t memo_entries = 0;
  std::uint64_t memo_bytes = 0;
};

// Where an answer came from: memo is a decoded result recalled from the memo (recall()).
enum class CacheSource { memory, disk, built, waited, memo };
std::string_view to_string(CacheSource source) noexcept;

class BuildCache {
 public:
  explicit BuildCache(CacheConfig config);
  ~BuildCache();
  BuildCache(const BuildCache&) = delete;
  BuildCache& operator=(const BuildCache&) = delete;

  // The process-wide cache, configured from the environment on first use.
  static BuildCache& global();
  // A process-wide cache with mode off: everything passed it is built afresh.
  static BuildCache& disabled();

  // The payload for `key`: from memory, else disk, else build() (whose result is stored
  // in both tiers). Concurrent callers of one key share one build(); if it throws, they
  // all get its exception and nothing is stored.
  std::string get_or_build(const CacheKey& key, const std::function<std::string()>& build,
                           CacheSource* source = nullptr);

  // Whether a find() that answers counts as a hit in stats(): lookups of bookkeeping
  // entries (a compile's header manifest) do not.
  enum class Count { hit, nothing };
  // The payload stored under `key` (memory, else disk; a disk hit is kept in memory), or
  // nullopt. `source` says which tier answered.
  std::optional<std::string> find(const CacheKey& key, CacheSource* source = nullptr,
                                  Count count = Count::hit);
  // Stores `payload` under `key` in both tiers (a failed disk write is a warning).
  void put(const CacheKey& key, const std::string& payload);
  // Runs `work` for `flight` once at a time in this process: callers with the same flight
  // digest while it runs wait and share its result or exception (source `waited`). `work`
  // says where its payload came from: `built` counts a miss and a build. For builds whose
  // final key is known only after building (a compile's headers); get_or_build uses it too.
  using Work = std::function<std::string(CacheSource& source)>;
  std::string run_once(const std::string& flight, const Work& work, CacheSource* source = nullptr);

  // The memo: decoded results kept as shared objects under a pre-key, a string the caller
  // builds cheaply from what it already holds and that names every input of the result
  // (see KernelBuilder and reduce::build_reduce for the recipes). recall() answers with the
  // very object memorize() was given, never a copy, without hashing a key, touching a file
  // or decoding anything. A pre-key must not depend on a file that can change while the
  // process runs: callers whose inputs include files on disk do not memorize. Off in mode
  // off; emptied by clear(); bounded by max_memory_bytes, least recently used first.
  template <class T>
  std::shared_ptr<const T> recall(const std::string& pre_key) {
    return std::static_pointer_cast<const T>(recall_erased(pre_key, typeid(T)));
  }
  template <class T>
  void memorize(const std::string& pre_key, std::shared_ptr<const T> value, std::uint64_t bytes) {
    memorize_erased(pre_key, typeid(T), std::move(value), bytes);
  }

  CacheStats stats() const;
  // Warnings recorded so far (unusable directory, failed writes, corrupt entries...).
  std::vector<std::string> warnings() const;
  const CacheConfig& config() const noexcept { return config_; }
  // Whether the disk tier is in use (mode disk and the directory passed its checks).
  bool disk_usable() const noexcept;
  // Bytes of disk entries and temporary files (after sweeping stale temporary files).
  std::uint64_t disk_bytes() const;
  // Records that a result was built but could not be stored (a warning and a count).
  void note_not_stored(std::string why);
  // Removes `key` from both tiers, counts it in corrupt_entries and records a warning with
  // `why`: for a payload its caller found but cannot decode (a sound checksum over a record
  // it does not understand), so that the next lookup misses and rebuilds.
  void drop(const CacheKey& key, std::string why);
  // Empties both tiers (and sweeps stale temporary files); returns the number of disk
  // entries removed. Only files cujit wrote are removed; see warnings() for what a walk of
  // the directory could not read.
  std::size_t clear();

 private:
  struct State;
  void warn(std::string message) const;
  void remember(const std::string& digest, const std::string& payload);
  std::shared_ptr<const void> recall_erased(const std::string& pre_key, std::type_index type);
  void memorize_erased(const std::string& pre_key, std::type_index type, std::shared_ptr<const void> value,
                       std::uint64_t bytes);
  CacheConfig config_;
  std::unique_ptr<State> state_;
};

}  // namespace cujit
