#pragma once
// BuildCache: the one cache for every build in cujit (NVRTC compiles and links, which the
// NRT library, ABI compilation, kernel builds and the reduce build all go through). It
// stores bytes under keys and knows nothing of compilers, linkers or drivers. A memory
// tier (LRU bounded in bytes, one build per key at a time) in front of a disk tier
// (fan-out directories, atomic entries with a checksum; one build per key across the
// processes sharing it) and an optional remote tier (Redis, shared by a fleet, every value
// verified; one build per key across machines). A cache that cannot be used never fails a
// build: it records a warning, counts it, and builds.

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

/// Which tiers a BuildCache uses: none (everything is built afresh), memory, or memory and
/// disk (the remote tier, when configured, comes with memory or disk).
enum class CacheMode { off, memory, disk };
/// "off", "memory" or "disk".
std::string_view to_string(CacheMode mode) noexcept;

/// How a BuildCache is set up: its tiers, their bounds and the remote tier's settings.
struct CacheConfig {
  CacheMode mode = CacheMode::disk;  ///< the tiers in use
  std::filesystem::path directory;   ///< the disk tier's directory (created 0700 if needed)
  std::uint64_t max_disk_bytes = std::uint64_t{1} << 30;      ///< cap of the disk tier's files
  std::uint64_t max_memory_bytes = std::uint64_t{256} << 20;  ///< cap of the memory tier (and of the memo)
  /// Disk entries used this recently are never evicted (another process may be using them).
  /// The cap still holds: when only such entries stand in the way, a new entry is not
  /// written (stats().disk_cap_refusals) rather than the cap exceeded.
  std::chrono::seconds protect_recent{300};
  /// One build per key across processes: a process building a key holds the key's lock file
  /// in the disk tier; another process asking for the key waits for it, then reads the
  /// entry. A wait longer than this gives up and builds (a warning, stats().lock_timeouts),
  /// so a stuck builder delays others by at most this much (a dead one releases at once).
  /// The same bound holds for waiting on another machine's build (remote_lock_ttl).
  std::chrono::milliseconds lock_timeout{120'000};
  /// Testing seam: called before each disk operation ("lock", "create", "write", "fsync",
  /// "rename", "read" (the open of an entry), "pread" (each read system call on an entry
  /// file: one per lookup), "key-lock" (the open of a key's lock file), and
  /// "list:<fan-out directory>" as a walk opens one) with its name; a non-zero result is an
  /// errno that makes that operation fail, as a full disk (ENOSPC), a read-only file system
  /// (EROFS) or a permission (EACCES) would. Empty in normal use.
  std::function<int(std::string_view operation)> fault;

  /// The remote tier: redis://[[user]:password@]host[:port][/db], empty for none. Needs a
  /// cujit built with hiredis (remote_built_in()); without it, a warning and no remote tier.
  std::string remote;
  /// Each call to Redis as a whole (resolving, connecting, sending, the whole reply) takes at
  /// most this long; a Redis that fails (down, slow, refusing the password) is then left
  /// alone for remote_backoff. 500 ms: at 50 ms a loaded fleet lost single flight.
  std::chrono::milliseconds remote_timeout{500};
  std::chrono::milliseconds remote_backoff{5000};  ///< how long a failed Redis is left alone
  /// Entries expire after this long in Redis; 0: never (Redis' maxmemory policy evicts).
  std::chrono::seconds remote_ttl{0};
  /// A machine building a key holds a lock key in Redis with this TTL, extended every third
  /// of it while the build runs and deleted when the build is written through: another
  /// machine waits for it instead of building too, and takes over within one TTL when a
  /// builder that died lets it expire.
  std::chrono::milliseconds remote_lock_ttl{30'000};
  /// Who the remote tier trusts (docs/fleet.md, "Trust"). A PEM file of the Ed25519 public
  /// keys of the writers this cache trusts: a remote value is used (and copied to disk)
  /// only when one of them signed it for its key; anything else is a miss
  /// (stats().remote_unverified).
  std::filesystem::path remote_verify_key;
  /// The PEM Ed25519 private key this cache signs its remote writes with (a trusted
  /// writer); its public key verifies reads when remote_verify_key is empty. With a verify
  /// key and no signing key nothing is written to Redis (readers would refuse it).
  std::filesystem::path remote_signing_key;
  /// Without either key the remote tier is not used (a warning), unless this says to trust
  /// whoever can write to Redis: values then are checked for damage only.
  bool remote_unauthenticated = false;
  /// Never write to Redis: no value, no lock (an untrusted job reading a trusted fleet's
  /// entries). Redis refusing a write (NOPERM) switches writes off the same way.
  bool remote_read_only = false;
  /// Explain every miss (docs/cache.md, "Explaining misses"): the explanation is a warning,
  /// a line on stderr and a line of the cache directory's misses log. Also set by
  /// CUJIT_CACHE_EXPLAIN=1 when any BuildCache is made. Stores keep recipes either way.
  bool explain = false;

  /// From CUJIT_CACHE (off|memory|disk), CUJIT_CACHE_DIR (default $XDG_CACHE_HOME/cujit,
  /// else ~/.cache/cujit), CUJIT_CACHE_MAX_BYTES, CUJIT_CACHE_MEMORY_BYTES (byte sizes:
  /// 1073741824, 512M, 1G, 1.5G: environment::parse_byte_size), CUJIT_CACHE_LOCK_TIMEOUT (seconds), CUJIT_CACHE_REMOTE (the URL),
  /// CUJIT_CACHE_REMOTE_TIMEOUT_MS, CUJIT_CACHE_REMOTE_TTL (seconds),
  /// CUJIT_CACHE_REMOTE_LOCK_MS, CUJIT_CACHE_REMOTE_VERIFY_KEY and
  /// CUJIT_CACHE_REMOTE_SIGNING_KEY (absolute paths), CUJIT_CACHE_REMOTE_UNAUTHENTICATED and
  /// CUJIT_CACHE_REMOTE_READONLY and CUJIT_CACHE_EXPLAIN (flags). Any other value is Error(usage) naming the variable
  /// (cujit/environment.hpp; a URL is never echoed, it may hold a password).
  static CacheConfig from_environment();
  /// What from_environment() could not honour (no home directory: disk tier off), recorded
  /// as the cache's first warnings.
  std::vector<std::string> warnings;
};

/// What one BuildCache counted since it was made (BuildCache::stats()); CacheCounters adds
/// up what every process using a cache directory counted.
struct CacheStats {
  std::uint64_t memory_hits = 0;    ///< lookups the memory tier answered
  std::uint64_t disk_hits = 0;      ///< lookups the disk tier answered
  std::uint64_t memory_misses = 0;  ///< lookups that reached the tier and missed
  std::uint64_t disk_misses = 0;    ///< lookups that reached the disk tier and missed
  std::uint64_t disk_stores = 0;  ///< entries written to the disk tier
  std::uint64_t misses = 0;       ///< results no tier had (each then built)
  std::uint64_t builds = 0;       ///< builds run (NVRTC, nvJitLink, ...)
  std::uint64_t waits = 0;  ///< callers that waited for another caller's build of the same key
  /// Entries dropped: unsound on disk (removed), not a regular file there (left alone), or
  /// a payload its caller could not decode (drop()).
  std::uint64_t corrupt_entries = 0;
  std::uint64_t memory_evictions = 0;     ///< memory entries dropped to keep its cap
  std::uint64_t disk_evictions = 0;       ///< disk entries removed to keep its cap
  std::uint64_t disk_write_failures = 0;  ///< entries that could not be written (a warning each)
  std::uint64_t disk_read_failures = 0;  ///< entries that could not be opened or read: misses
  /// Entries not written to disk to keep the cap: larger than the cap, or the cap full of
  /// entries used within protect_recent.
  std::uint64_t disk_cap_refusals = 0;
  std::uint64_t stale_temps_removed = 0;  ///< temporary files of dead writers swept
  std::uint64_t disk_walk_errors = 0;     ///< directories a walk could not read (it went on)
  std::uint64_t not_stored = 0;  ///< results built but not cacheable (see warnings())
  std::uint64_t memory_bytes = 0;    ///< payload bytes in the memory tier now
  std::uint64_t memory_entries = 0;  ///< entries in the memory tier now
  /// The memo of decoded results (BuildCache::recall), bounded by max_memory_bytes of its own.
  std::uint64_t memo_hits = 0;
  std::uint64_t memo_misses = 0;   ///< recalls that found nothing
  std::uint64_t memo_entries = 0;  ///< results in the memo now
  std::uint64_t memo_bytes = 0;    ///< their sizes, as their callers gave them

  /// Across processes (the per-key lock in the disk tier).
  std::uint64_t process_waits = 0;        ///< builds that waited for another process's build of the key
  std::uint64_t process_wait_ms = 0;      ///< milliseconds those waits took, all together
  std::uint64_t lock_timeouts = 0;        ///< waits that gave up (lock_timeout) and built
  std::uint64_t lock_failures = 0;        ///< locks that could not be taken: built without
  std::uint64_t stale_locks_removed = 0;  ///< lock files no process held, swept by walks

  /// The remote tier. Hits and misses count as hits do (bookkeeping lookups not at all).
  std::uint64_t remote_hits = 0;
  std::uint64_t remote_misses = 0;  ///< lookups that reached Redis and missed
  std::uint64_t remote_writes = 0;  ///< entries written to Redis
  std::uint64_t remote_corrupt = 0;         ///< values or replies that were not a sound entry: misses
  std::uint64_t remote_errors = 0;          ///< calls that failed: down, timed out, refused the password
  std::uint64_t remote_skipped = 0;         ///< calls not tried: within the back-off after a failure
  std::uint64_t remote_write_failures = 0;  ///< writes Redis refused (full under noeviction, read-only)
  std::uint64_t remote_waits = 0;           ///< builds that waited for another machine's build
  std::uint64_t remote_wait_ms = 0;         ///< milliseconds those waits took, all together
  std::uint64_t remote_lock_timeouts = 0;   ///< such waits that gave up (lock_timeout) and built
  /// Values no trusted writer signed for their key (forged, replayed under another key,
  /// unsigned, signed by an untrusted key): misses, never used or copied to disk.
  std::uint64_t remote_unverified = 0;
  /// Writes Redis refused for want of permission (NOPERM): writes then stop, reads go on.
  std::uint64_t remote_forbidden = 0;
  /// Values found in Redis that were unsound, unverified or that their caller could not
  /// decode, deleted there (drop()) or overwritten by this process's build.
  std::uint64_t remote_repairs = 0;
  /// Bytes compression kept out of Redis: the entries written, uncompressed, less what was
  /// stored (docs/cache.md, "Compression").
  std::uint64_t remote_bytes_saved = 0;
  /// Disk entries left alone because this process cannot use them though nothing shows
  /// them damaged (larger than its max_disk_bytes, another entry format version): misses.
  std::uint64_t disk_entries_skipped = 0;
};

/// One tier's lookups, as counted across every process using a cache directory.
struct TierCounters {
  std::uint64_t hits = 0;  ///< lookups this tier answered
  /// Lookups that reached this tier and did not find the key there (they went on to the
  /// next tier or to a build). A second look within a build's flight counts only a hit.
  std::uint64_t misses = 0;
  /// hits / (hits + misses), 0 when the tier was never asked.
  double hit_rate() const noexcept;
};

/// The persistent counters of a cache directory: what every process that used its disk
/// tier counted (as `ccache -s` shows), since the directory was created or last zeroed
/// (zero_cache_counters). Processes add their counts in batches (BuildCache::flush_counters,
/// called at exit and on slow paths), so a process still running may not have added its
/// latest counts yet, and one killed by a signal loses its unflushed counts (never anyone
/// else's).
struct CacheCounters {
  TierCounters memo;    ///< decoded results recalled in the process (BuildCache::recall)
  TierCounters memory;  ///< the memory tier
  TierCounters disk;    ///< the disk tier
  TierCounters remote;  ///< the Redis tier
  std::uint64_t builds = 0;           ///< results built because no tier had them
  std::uint64_t stores = 0;           ///< entries written to the disk tier
  std::uint64_t evictions = 0;        ///< disk entries evicted to keep the size cap
  std::uint64_t corrupt_entries = 0;  ///< unsound entries dropped (then rebuilt)
  /// Remote values refused because no trusted writer signed them (CacheStats::remote_unverified).
  std::uint64_t remote_unverified = 0;
  std::uint64_t remote_waits = 0;          ///< builds that waited for another machine's (its fleet lock)
  std::uint64_t remote_lock_timeouts = 0;  ///< such waits that gave up (lock_timeout) and built
  std::uint64_t remote_errors = 0;         ///< Redis calls that failed (down, timed out, refused)
  std::uint64_t remote_wait_ms = 0;        ///< milliseconds spent in remote_waits, all together
  std::uint64_t remote_skipped = 0;        ///< Redis calls not tried (within the back-off after an error)
  std::uint64_t remote_corrupt = 0;        ///< Redis values or replies that were not a sound entry
  std::uint64_t remote_write_failures = 0; ///< writes Redis refused (full under noeviction, read-only replica)
  std::uint64_t remote_forbidden = 0;      ///< writes refused for want of permission (NOPERM)
  std::uint64_t remote_repairs = 0;        ///< unsound or undecodable Redis values deleted or overwritten
  std::uint64_t remote_bytes_saved = 0;    ///< bytes compression kept out of Redis
  std::uint64_t process_waits = 0;         ///< builds that waited for another process's (the disk lock)
  std::uint64_t process_wait_ms = 0;       ///< milliseconds spent in process_waits, all together
  std::uint64_t lock_timeouts = 0;         ///< such waits that gave up (lock_timeout) and built
  /// The disk tier now (a walk of the directory at read time, not a counter).
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;  ///< entries and temporary files on disk now
  /// When the counters were last zeroed (seconds since the Unix epoch), 0 if never.
  std::int64_t zeroed_at = 0;
  /// Counter files that were damaged (and counted as zero), directories that could not be
  /// read: the counts shown may be low.
  std::vector<std::string> warnings;

  /// Lookups answered by any tier over lookups answered plus builds; 0 with neither.
  double hit_rate() const noexcept;
};

/// The persistent counters of the cache directory `cache_dir` (CacheConfig::directory),
/// summed over its counter files, with its entries and bytes from a walk. A directory that
/// does not exist has all counters 0. A damaged or foreign counter file (truncated, not a
/// regular file, unknown format) counts as 0 with a warning in the result. Never throws for
/// what it finds on disk; throws Error(io) only when `cache_dir` exists and is not a
/// directory.
CacheCounters read_cache_counters(const std::filesystem::path& cache_dir);

/// Sets every persistent counter of `cache_dir` to 0 and records the time (zeroed_at).
/// Entries are left alone. Processes running now add only what they count from now on.
/// Throws Error(io) naming the file when a counter file cannot be rewritten.
void zero_cache_counters(const std::filesystem::path& cache_dir);

/// One field that differs between a missed key's recipe and the nearest stored one.
struct FieldDifference {
  /// The field as its recipe names it: "nvrtc", "options" (a list), "files:inc/val.h".
  std::string field;
  /// What happened to it: "changed", "content" (a file's), "includes" (a file's includes
  /// resolve to other files), "added", "removed", "order", "appeared", "gone".
  std::string change;
  std::string text;  ///< in words: "option 3: -DV=2 was -DV=1", "header inc/val.h: content changed"
  /// What a count of misses by field groups it under: the field's list or name ("options",
  /// "files", "nvrtc") and the change, as "files content".
  std::string category() const;
};

/// Why a key missed (BuildCache::explain): the nearest stored recipe of the same build kind
/// and name, and the fields that differ from it.
struct MissExplanation {
  std::string kind;    ///< the key's kind ("nvrtc-compile", "link", ...)
  std::string name;    ///< its name field (program, kernel, reduce spec), may be empty
  std::string digest;  ///< the missed key's digest
  /// The nearest stored recipe's digest; empty when no recipe of this kind and name is stored.
  std::string nearest;
  std::string nearest_tier;  ///< "disk" or "remote"
  std::vector<FieldDifference> differences;  ///< empty with a nearest: the same recipe, its entry gone
  std::int64_t time = 0;  ///< when it was explained (seconds since the Unix epoch)
  /// One line: "nvrtc-compile 'k.cu' missed: option 3: -DV=2 was -DV=1" or "... no stored
  /// recipe of this kind and name".
  std::string text() const;
};

/// The latest `last` miss explanations recorded in `cache_dir` (CUJIT_CACHE_EXPLAIN=1 or
/// CacheConfig::explain), oldest first. A damaged line is skipped; never throws for what it
/// finds on disk.
std::vector<MissExplanation> read_miss_log(const std::filesystem::path& cache_dir, std::size_t last);

/// Where an answer came from: memo is a decoded result recalled from the memo (recall()).
/// remote is an entry fetched from Redis (and written to the disk tier).
enum class CacheSource { memory, disk, built, waited, memo, remote };
/// "memory", "disk", "built", "waited", "memo" or "remote".
std::string_view to_string(CacheSource source) noexcept;

/// The cache of every build in cujit (see the top of this header); thread-safe.
class BuildCache {
 public:
  /// A cache as `config` says. Never throws for the directory or the remote tier: one that
  /// cannot be used is a warning (warnings()) and the tier is off.
  explicit BuildCache(CacheConfig config);
  ~BuildCache();
  BuildCache(const BuildCache&) = delete;
  BuildCache& operator=(const BuildCache&) = delete;

  /// The process-wide cache, configured from the environment on first use.
  static BuildCache& global();
  /// A process-wide cache with mode off: everything passed it is built afresh.
  static BuildCache& disabled();

  /// The payload for `key`: from memory, else disk, else remote, else build() (whose result
  /// is stored in every tier). Concurrent callers of one key share one build(); if it
  /// throws, they all get its exception and nothing is stored. Across processes on one
  /// disk tier, and across machines on one remote tier, one builds and the others wait
  /// (bounded by lock_timeout) and then find its entry.
  std::string get_or_build(const CacheKey& key, const std::function<std::string()>& build,
                           CacheSource* source = nullptr);

  /// Whether a find() that answers counts as a hit in stats(): lookups of bookkeeping
  /// entries do not.
  /// `retry`: a second look inside a build's flight, whose first look was counted: a hit
  /// counts, a miss does not.
  enum class Count { hit, nothing, retry };
  /// The payload stored under `key` (memory, else disk, else remote; a disk hit is kept in
  /// memory, a remote hit on disk and in memory), or nullopt. `source` says which tier
  /// answered.
  std::optional<std::string> find(const CacheKey& key, CacheSource* source = nullptr,
                                  Count count = Count::hit);
  /// Stores `payload` under `key` in every tier (a failed disk or remote write is a warning).
  void put(const CacheKey& key, const std::string& payload);
  /// Runs `work` for `flight` once at a time in this process: callers with the same flight
  /// digest while it runs wait and share its result or exception (source `waited`). `work`
  /// says where its payload came from: `built` counts a miss and a build. For builds whose
  /// final key is known only after building (a compile's headers); get_or_build uses it too.
  /// A flight that is a key digest is also run once across processes (the disk tier's lock
  /// of that digest) and machines (the remote tier's): `work` should look the key up again
  /// first, since another process may have built it while this one waited.
  using Work = std::function<std::string(CacheSource& source)>;
  /// Runs `work` once for `flight` (see Work); returns its payload, or rethrows what it
  /// threw to every caller that shared it.
  std::string run_once(const std::string& flight, const Work& work, CacheSource* source = nullptr);

  /// The memo: decoded results kept as shared objects under a pre-key, a string the caller
  /// builds cheaply from what it already holds and that names every input of the result
  /// (see KernelBuilder and reduce::build_reduce for the recipes). recall() answers with the
  /// very object memorize() was given, never a copy, without hashing a key, touching a file
  /// or decoding anything. A pre-key must not depend on a file that can change while the
  /// process runs: callers whose inputs include files on disk do not memorize. Off in mode
  /// off; emptied by clear(); bounded by max_memory_bytes, least recently used first.
  template <class T>
  std::shared_ptr<const T> recall(const std::string& pre_key) {
    return std::static_pointer_cast<const T>(recall_erased(pre_key, typeid(T)));
  }
  /// Keeps `value` under `pre_key` in the memo (see recall()), `bytes` being its size.
  template <class T>
  void memorize(const std::string& pre_key, std::shared_ptr<const T> value, std::uint64_t bytes) {
    memorize_erased(pre_key, typeid(T), std::move(value), bytes);
  }

  /// What this cache counted since it was made.
  CacheStats stats() const;
  /// Adds what this cache counted since its last flush to its directory's persistent
  /// counters (read_cache_counters). Called by the destructor and, at most every few
  /// seconds or every 64 counted events, on the slow paths (a disk lookup, a build), never
  /// on a memo or memory hit. Does nothing unless the disk tier is in use; a failure is a
  /// warning and the counts wait for the next flush. Never throws.
  void flush_counters() noexcept;
  /// Warnings recorded so far (unusable directory, failed writes, corrupt entries...).
  std::vector<std::string> warnings() const;
  /// The configuration it was made with.
  const CacheConfig& config() const noexcept { return config_; }
  /// Whether the disk tier is in use (mode disk and the directory passed its checks).
  bool disk_usable() const noexcept;
  /// Whether this cujit was built with hiredis, so that a remote tier can be configured.
  static bool remote_built_in() noexcept;
  /// The remote tier's URL with its password hidden, or empty when there is none in use.
  std::string remote_url() const;
  /// The prefix of every key this cache uses in Redis ("cujit:<format>:<toolkit>:").
  std::string remote_prefix() const;
  /// Whether Redis answers now (a PING, whatever the back-off); else why not in `why`.
  bool remote_reachable(std::string* why = nullptr) const;
  /// Bytes of disk entries and temporary files (after sweeping stale temporary files).
  std::uint64_t disk_bytes() const;
  /// Records that a result was built but could not be stored (a warning and a count).
  void note_not_stored(std::string why);
  /// Removes `key` from the memory and disk tiers and, when this cache writes to it, from
  /// Redis (stats().remote_repairs), counts it in corrupt_entries, and records
  /// a warning with `why`: for a payload its caller found but cannot decode (a sound
  /// checksum over a record it does not understand), so that the next lookup, on any
  /// machine, misses and rebuilds.
  void drop(const CacheKey& key, std::string why);
  /// drop() and then build() in `key`'s flight (one build per key, across processes and
  /// machines), stored in every tier over what was there: for a caller that found a
  /// payload it cannot decode and builds it again. Counted as a miss and a build, so a
  /// repair never shows as a hit with no build.
  std::string rebuild(const CacheKey& key, std::string why, const std::function<std::string()>& build,
                      CacheSource* source = nullptr);
  /// Why `key` is not stored: the nearest recipe of its kind and name stored in the disk or
  /// remote tier, and the fields that differ. A lookup of one index per tier, never a scan;
  /// never throws for what it finds (an unreadable index is no candidate).
  MissExplanation explain(const CacheKey& key);
  /// The explanation of the latest key that missed in this cache (computed now), or nullopt
  /// when none missed. Only the key is kept on a miss: this costs nothing until asked. A key
  /// stored since (built after the miss) does not count its own recipe as a candidate while
  /// its entry is there (explain() never does), so the answer is the one the miss had,
  /// unless other recipes of its name were stored in between.
  std::optional<MissExplanation> explain_last_miss();

  /// Empties the memory and disk tiers (and sweeps stale temporary files and unheld lock
  /// files); returns the number of disk entries removed. The remote tier, shared by a
  /// fleet, is left alone. Only files cujit wrote are removed; see warnings() for what a walk of
  /// the directory could not read.
  std::size_t clear();

 private:
  struct State;
  void warn(std::string message) const;
  std::optional<std::string> find_on_disk(const std::string& digest, CacheSource* source, Count count);
  std::optional<std::string> find_remote(const std::string& digest, CacheSource* source, Count count);
  void keep_recipe(const CacheKey& key, const std::string& digest);
  void note_miss(const CacheKey& key);
  std::shared_ptr<const void> recall_erased(const std::string& pre_key, std::type_index type);
  void memorize_erased(const std::string& pre_key, std::type_index type, std::shared_ptr<const void> value,
                       std::uint64_t bytes);
  CacheConfig config_;
  std::unique_ptr<State> state_;
};

}  // namespace cujit
