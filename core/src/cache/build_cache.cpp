#include "cujit/build_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <future>
#include <list>
#include <map>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "cache/cache_counters.hpp"
#include "cache/disk_cache.hpp"
#include "cache/fleet_lock.hpp"
#include "cache/key_lock.hpp"
#include "cache/miss_explainer.hpp"
#include "cache/remote_cache.hpp"
#include "cache/remote_url.hpp"
#include "cache/result_memo.hpp"
#include "support/trace_range.hpp"

namespace cujit {
namespace {

constexpr std::size_t max_warnings = 64;

// The latest hit this thread counted (which cache, key and tier), so that drop() of the
// key right after, by a caller that cannot decode what the hit gave it, takes the hit back:
// a repair counts as the miss it is, never as a hit. Callers decode on the thread that
// looked the key up.
struct CountedHit {
  const void* cache = nullptr;
  std::string digest;
  CacheSource tier = CacheSource::built;
};
thread_local CountedHit last_counted_hit;

void note_counted_hit(const void* cache, const std::string& digest, CacheSource tier) {
  try {
    last_counted_hit = CountedHit{cache, digest, tier};
  } catch (...) {
    last_counted_hit.cache = nullptr;  // out of memory: no hit to take back
  }
}
// How often a build waiting for another machine's asks whether its lock is still there.
constexpr std::chrono::milliseconds first_remote_poll{5}, longest_remote_poll{50};
// Durations from the environment are clamped to a day: longer is a typo, and no overflow.
constexpr std::uint64_t longest_setting_ms = 24ull * 3600 * 1000;
// A cache adds its counts to the directory's persistent counters in batches: on a slow path
// (a disk lookup, a build) once this many events or this much time has passed, and at exit.
constexpr std::uint64_t flush_after_events = 64;
constexpr std::chrono::seconds flush_after_time{5};

std::uint64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count());
}

std::chrono::milliseconds milliseconds_from(const char* name, std::chrono::milliseconds fallback,
                                            std::uint64_t unit_ms) {
  const std::uint64_t value = environment::count(name, static_cast<std::uint64_t>(fallback.count()) / unit_ms);
  return std::chrono::milliseconds(std::min(value, longest_setting_ms / unit_ms) * unit_ms);
}

// Whom the remote tier trusts and whether this cache writes to it, from the configuration;
// null with why in `problem` when the tier must not be used (a key that cannot be loaded,
// or no key and no opt-in to an unauthenticated tier: fail closed). A usable trust may
// come with a note in `problem` (a signing key the verify keys do not hold).
std::shared_ptr<const detail::RemoteTrust> remote_trust(const CacheConfig& config, std::string& problem) {
  auto trust = std::make_shared<detail::RemoteTrust>();
  trust->read_only = config.remote_read_only;
  if (!config.remote_signing_key.empty()) {
    trust->signer = detail::SigningKey::load(config.remote_signing_key, problem);
    if (!trust->signer) return nullptr;
  }
  if (!config.remote_verify_key.empty()) {
    trust->verifier = detail::VerifyKeys::load(config.remote_verify_key, problem);
    if (!trust->verifier) return nullptr;
  } else if (trust->signer) {
    trust->verifier = trust->signer->public_key();  // a writer trusts what it signs
  } else if (!config.remote_unauthenticated) {
    problem = "no CUJIT_CACHE_REMOTE_VERIFY_KEY (the public keys of the trusted writers) nor "
              "CUJIT_CACHE_REMOTE_SIGNING_KEY: anyone who can write to Redis could choose the code this process "
              "runs. Configure the keys (docs/fleet.md), or set CUJIT_CACHE_REMOTE_UNAUTHENTICATED=1 to trust "
              "every writer";
    return nullptr;
  }
  problem.clear();
  if (trust->signer && !trust->signer->trusted_by(*trust->verifier)) {
    problem = "the signing key's public key is not among CUJIT_CACHE_REMOTE_VERIFY_KEY's: readers that trust "
              "those keys refuse what this process writes";
  }
  struct stat key_file {};
  if (trust->signer && ::stat(config.remote_signing_key.c_str(), &key_file) == 0 &&
      (key_file.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    // Used all the same (a CI secret written with the default umask), but said: whoever
    // reads it can write entries every machine trusts.
    problem += std::string(problem.empty() ? "" : "; ") + "the signing key '" + config.remote_signing_key.string() +
               "' is readable by group or others: whoever can read it is a trusted writer (chmod 600 it)";
  }
  return trust;
}

}  // namespace

std::string_view to_string(CacheMode mode) noexcept {
  switch (mode) {
    case CacheMode::off: return "off";
    case CacheMode::memory: return "memory";
    case CacheMode::disk: return "disk";
  }
  return "unknown";
}

std::string_view to_string(CacheSource source) noexcept {
  switch (source) {
    case CacheSource::memory: return "memory";
    case CacheSource::disk: return "disk";
    case CacheSource::built: return "built";
    case CacheSource::waited: return "waited";
    case CacheSource::memo: return "memo";
    case CacheSource::remote: return "remote";
  }
  return "unknown";
}

CacheConfig CacheConfig::from_environment() {
  CacheConfig config;
  const std::string mode = environment::choice("CUJIT_CACHE", {"off", "memory", "disk"}, "disk");
  config.mode = mode == "off" ? CacheMode::off : mode == "memory" ? CacheMode::memory : CacheMode::disk;
  if (const char* dir = std::getenv("CUJIT_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    config.directory = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    config.directory = std::filesystem::path(xdg) / "cujit";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    config.directory = std::filesystem::path(home) / ".cache" / "cujit";
  } else {
    config.mode = config.mode == CacheMode::disk ? CacheMode::memory : config.mode;
    config.warnings.push_back("no CUJIT_CACHE_DIR, XDG_CACHE_HOME or HOME: disk tier off");
  }
  config.max_disk_bytes = environment::byte_size("CUJIT_CACHE_MAX_BYTES", config.max_disk_bytes);
  config.max_memory_bytes = environment::byte_size("CUJIT_CACHE_MEMORY_BYTES", config.max_memory_bytes);
  config.lock_timeout = milliseconds_from("CUJIT_CACHE_LOCK_TIMEOUT", config.lock_timeout, 1000);
  if (const char* remote = std::getenv("CUJIT_CACHE_REMOTE"); remote != nullptr && *remote != '\0') {
    std::string problem;
    if (!detail::parse_remote_url(remote, problem)) {
      // Not echoed: the value may hold a password.
      throw Error(ErrorKind::usage, "environment", "CUJIT_CACHE_REMOTE is not a usable URL: " + problem);
    }
    config.remote = remote;
  }
  config.remote_timeout = milliseconds_from("CUJIT_CACHE_REMOTE_TIMEOUT_MS", config.remote_timeout, 1);
  config.remote_ttl = std::chrono::duration_cast<std::chrono::seconds>(
      milliseconds_from("CUJIT_CACHE_REMOTE_TTL", config.remote_ttl, 1000));
  config.remote_lock_ttl = milliseconds_from("CUJIT_CACHE_REMOTE_LOCK_MS", config.remote_lock_ttl, 1);
  if (auto path = environment::absolute_path("CUJIT_CACHE_REMOTE_VERIFY_KEY")) config.remote_verify_key = *path;
  if (auto path = environment::absolute_path("CUJIT_CACHE_REMOTE_SIGNING_KEY")) config.remote_signing_key = *path;
  config.remote_unauthenticated = environment::flag("CUJIT_CACHE_REMOTE_UNAUTHENTICATED", false);
  config.remote_read_only = environment::flag("CUJIT_CACHE_REMOTE_READONLY", false);
  config.explain = environment::flag("CUJIT_CACHE_EXPLAIN", false);
  return config;
}

struct BuildCache::State {
  struct MemoryEntry {
    std::string payload;
    std::list<std::string>::iterator lru;
  };
  mutable std::mutex mutex;
  std::unordered_map<std::string, MemoryEntry> memory;
  std::list<std::string> lru;  // most recently used first
  std::unordered_map<std::string, std::shared_future<std::string>> in_flight;
  std::optional<detail::DiskCache> disk;
  std::optional<detail::RemoteCache> remote;
  std::optional<detail::ResultMemo> memo;  // absent in mode off
  CacheStats stats;
  std::vector<std::string> warnings;
  bool explain = false;                // explain each miss as it happens (CacheConfig::explain)
  std::optional<CacheKey> last_miss;   // for explain_last_miss(), under `mutex`
  bool recipe_warned = false;          // one warning for recipes that could not be kept

  // The persistent counters (cache_counters.hpp). `flushed` is what this cache has added to
  // them so far; `flush_mutex` orders flushes (taken before `mutex`, never inside it).
  std::mutex flush_mutex;
  CacheCounters flushed;
  std::uint64_t unflushed_events = 0;  // slow-path events since the last flush, under `mutex`
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();  // under `mutex`
  bool flush_warned = false;  // one warning for failing flushes, not one per flush
  bool unverified_warned = false;  // one warning for remote values refused, then counts only
  bool scripts_warned = false;     // one warning when Redis refused EVAL (the fleet lock's fallback)
  bool cluster_warned = false;     // one warning when the server is a Redis Cluster node
  // Keys whose Redis value this process found unsound or unverified (under `mutex`): the
  // build's write over one of them is a repair (stats.remote_repairs). Every put() takes
  // its key out, so it holds at most the keys being built now.
  std::unordered_set<std::string> bad_remote;

  // Says once that Redis refused the fleet lock's scripts (RemoteCache::script_refusal).
  void note_scripts() {
    if (!remote || !remote->scripts_refused()) return;
    const std::string why = remote->script_refusal();
    std::lock_guard<std::mutex> lock(mutex);
    if (std::exchange(scripts_warned, true)) return;
    add_warning("remote tier: " + why + "; the fleet lock is released and extended with GET then DEL / PEXPIRE "
                "instead (not atomic: a lock that expires in between may be acted on, a duplicate build at worst)");
  }

  // Counts a slow-path event; whether it is time to flush the counters (flush_counters,
  // called without `mutex`). Callers hold `mutex`.
  bool note_event() {
    ++unflushed_events;
    if (unflushed_events < flush_after_events &&
        std::chrono::steady_clock::now() - last_flush < flush_after_time) {
      return false;
    }
    unflushed_events = 0;
    return true;
  }

  // Callers hold `mutex`.
  void add_warning(std::string message) {
    if (warnings.size() < max_warnings) warnings.push_back(std::move(message));
  }

  // What a walk of the disk tier did and met: counters and warnings. Callers hold `mutex`.
  void note_walk(const detail::WalkReport& walk) {
    stats.disk_evictions += walk.entries_removed;
    stats.stale_temps_removed += walk.temps_removed;
    stats.stale_locks_removed += walk.locks_removed;
    stats.disk_walk_errors += walk.problems.size();
    for (const std::string& problem : walk.problems) add_warning("disk cache: " + problem);
  }

  // What a disk write did: counters and warnings. Callers hold `mutex`.
  void note_disk_write(const std::string& digest, const detail::DiskCacheResult& written) {
    note_walk(written.walk);
    if (!written.ok) {
      ++(written.refused ? stats.disk_cap_refusals : stats.disk_write_failures);
      add_warning("disk entry " + digest + " not written: " + written.problem);
    }
  }

  // What a call to the remote tier met, other than success: counters and warnings. A call
  // skipped within the back-off is counted, not warned about again. Callers hold `mutex`.
  void note_remote(detail::RemoteOutcome outcome, const std::string& problem, BuildCache::Count count) {
    switch (outcome) {
      case detail::RemoteOutcome::done: break;
      case detail::RemoteOutcome::missing:
        if (count == BuildCache::Count::hit) ++stats.remote_misses;
        break;
      case detail::RemoteOutcome::corrupt:
        ++stats.remote_corrupt;
        add_warning("remote entry not used: " + problem);
        break;
      case detail::RemoteOutcome::unverified:
        // Warned once: a forger can fill Redis with values, and the warnings would crowd out
        // every other one. Each is counted.
        ++stats.remote_unverified;
        if (!std::exchange(unverified_warned, true)) {
          add_warning("remote entry not used: " + problem +
                      " (a miss; further values that fail verification are only counted: remote_unverified)");
        }
        break;
      case detail::RemoteOutcome::forbidden:
        ++stats.remote_forbidden;
        add_warning("remote tier: " + problem);
        break;
      case detail::RemoteOutcome::read_only: break;
      case detail::RemoteOutcome::refused:
        ++stats.remote_write_failures;
        add_warning("remote tier: " + problem);
        break;
      case detail::RemoteOutcome::unavailable:
        ++stats.remote_errors;
        add_warning("remote tier: " + problem);
        break;
      case detail::RemoteOutcome::skipped: ++stats.remote_skipped; break;
      case detail::RemoteOutcome::unsupported:
        // A Redis Cluster: said and counted once; every later call is answered without Redis.
        if (!std::exchange(cluster_warned, true)) {
          ++stats.remote_errors;
          add_warning("remote tier not used: " + problem);
        }
        break;
    }
  }

  // The disk tier's lock of `flight`, so that one process builds it while the others wait.
  // Not held (after a warning and a count) when it cannot be taken or the wait times out.
  detail::KeyLock lock_across_processes(const std::string& flight, std::chrono::milliseconds timeout) {
    if (!disk) return {};
    const auto asked = std::chrono::steady_clock::now();
    detail::KeyLockResult taken = disk->lock(flight, timeout);
    std::lock_guard<std::mutex> lock(mutex);
    if (taken.waited) {
      ++stats.process_waits;
      stats.process_wait_ms += elapsed_ms(asked);
    }
    if (taken.timed_out) {
      ++stats.lock_timeouts;
      add_warning("build " + flight + ": another process held its lock for more than " +
                  std::to_string(timeout.count()) + " ms; built here too");
    } else if (!taken.problem.empty()) {
      ++stats.lock_failures;
      add_warning("build " + flight + " not locked across processes: " + taken.problem);
    }
    return std::move(taken.lock);
  }

  // The remote tier's lock of `flight`, so that one machine builds it while the others
  // wait: a waiter polls the lock until its holder deletes it (written through) or it
  // expires (its holder died), then tries to take it itself. Not held when Redis cannot be
  // used or the wait times out; the build goes on either way.
  detail::FleetLock lock_across_machines(const std::string& flight, const CacheConfig& config) {
    if (!remote) return {};
    const auto deadline = std::chrono::steady_clock::now() + config.lock_timeout;
    auto pause = first_remote_poll;
    bool waited = false;
    std::chrono::steady_clock::time_point wait_began{};
    // Adds the time waited for another machine's lock so far to the counters, on each way out.
    struct WaitClock {
      State& state;
      const bool& waited;
      const std::chrono::steady_clock::time_point& began;
      ~WaitClock() {
        if (!waited) return;
        std::lock_guard<std::mutex> lock(state.mutex);
        state.stats.remote_wait_ms += elapsed_ms(began);
      }
    } wait_clock{*this, waited, wait_began};
    // How long a poll asks a Redis that does not answer: the lock it saw held lives one TTL
    // at most unless renewed, and the wait as a whole is bounded by lock_timeout.
    const auto patience = [&] { return std::min(deadline, std::chrono::steady_clock::now() + config.remote_lock_ttl); };
    while (true) {
      std::string token, problem;
      detail::RemoteOutcome outcome = remote->lock(flight, config.remote_lock_ttl, token, problem);
      if (outcome == detail::RemoteOutcome::done) {
        return detail::FleetLock(&*remote, flight, token, config.remote_lock_ttl, config.lock_timeout);
      }
      if (outcome == detail::RemoteOutcome::read_only || outcome == detail::RemoteOutcome::forbidden) {
        // A client that does not write waits for a writer's build of the key, if one is
        // running, and never takes the lock itself.
        if (outcome == detail::RemoteOutcome::forbidden) {
          std::lock_guard<std::mutex> lock(mutex);
          note_remote(outcome, problem, BuildCache::Count::nothing);
        }
        outcome = remote->locked(flight, patience(), problem);
        if (outcome == detail::RemoteOutcome::missing) return {};
        if (outcome == detail::RemoteOutcome::done) outcome = detail::RemoteOutcome::missing;
      }
      if (outcome == detail::RemoteOutcome::missing && !waited) {
        waited = true;
        wait_began = std::chrono::steady_clock::now();
        std::lock_guard<std::mutex> lock(mutex);
        ++stats.remote_waits;
      }
      while (outcome == detail::RemoteOutcome::missing) {  // another machine holds it
        if (std::chrono::steady_clock::now() >= deadline) {
          std::lock_guard<std::mutex> lock(mutex);
          ++stats.remote_lock_timeouts;
          add_warning("build " + flight + ": another machine held its lock for more than " +
                      std::to_string(config.lock_timeout.count()) + " ms; built here too");
          return {};
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, longest_remote_poll);
        outcome = remote->locked(flight, patience(), problem);
        if (outcome == detail::RemoteOutcome::missing && !remote->writes()) return {};  // its entry is in, or never comes
        // Released (its entry written through) or expired. The entry is looked up without
        // the lock when it is there: waiters that each took the lock in turn, to find it and
        // release it again, queued behind one another (issue 32: with Redis slow, the last
        // of 8 was answered 2.4 s after the build). Not there: the lock is taken, as before.
        if (outcome == detail::RemoteOutcome::missing) {
          if (remote->stored(flight, problem) == detail::RemoteOutcome::done) return {};
          break;
        }
        if (outcome == detail::RemoteOutcome::done) outcome = detail::RemoteOutcome::missing;
      }
      if (outcome != detail::RemoteOutcome::missing) {
        std::lock_guard<std::mutex> lock(mutex);
        note_remote(outcome, problem, BuildCache::Count::nothing);
        return {};
      }
    }
  }

  void forget(const std::string& key) {
    const auto found = memory.find(key);
    if (found == memory.end()) return;
    stats.memory_bytes -= found->second.payload.size();
    --stats.memory_entries;
    lru.erase(found->second.lru);
    memory.erase(found);
  }

  void touch(MemoryEntry& entry, const std::string& key) {
    lru.erase(entry.lru);
    lru.push_front(key);
    entry.lru = lru.begin();
  }

  void insert(const std::string& key, const std::string& payload, std::uint64_t cap) {
    if (payload.size() > cap) return;  // larger than the whole tier: not kept in memory
    if (auto found = memory.find(key); found != memory.end()) {
      touch(found->second, key);
      return;
    }
    lru.push_front(key);
    memory.emplace(key, MemoryEntry{payload, lru.begin()});
    stats.memory_bytes += payload.size();
    ++stats.memory_entries;
    while (stats.memory_bytes > cap && !lru.empty()) {
      const std::string victim = lru.back();
      lru.pop_back();
      const auto it = memory.find(victim);
      stats.memory_bytes -= it->second.payload.size();
      --stats.memory_entries;
      memory.erase(it);
      ++stats.memory_evictions;
    }
  }
};

BuildCache::BuildCache(CacheConfig config) : config_(std::move(config)), state_(std::make_unique<State>()) {
  // The variable works for caches configured in code too (a test's child, a tool's own).
  state_->explain = config_.explain || environment::flag("CUJIT_CACHE_EXPLAIN", false);
  for (const std::string& warning : config_.warnings) warn(warning);
  if (config_.mode != CacheMode::off) state_->memo.emplace(config_.max_memory_bytes);
  if (config_.mode == CacheMode::disk) {
    detail::DiskCache& disk =
        state_->disk.emplace(config_.directory, config_.max_disk_bytes, config_.protect_recent, config_.fault);
    if (const std::string problem = disk.open(); !problem.empty()) {
      state_->disk.reset();
      warn("disk cache not used: " + problem);
    }
  }
  if (config_.mode != CacheMode::off && !config_.remote.empty()) {
    std::string problem;
    const std::optional<detail::RemoteUrl> url = detail::parse_remote_url(config_.remote, problem);
    if (!detail::remote_built_in()) {
      warn("remote tier not used: CUJIT_CACHE_REMOTE is set, but this cujit was built without hiredis");
    } else if (config_.remote_timeout.count() < 1) {
      // Each call's deadline is this timeout: at 0 every call would end before its reply, so
      // every lookup would be a miss that still costs a connection.
      warn("remote tier not used: remote_timeout is " + std::to_string(config_.remote_timeout.count()) +
           " ms (CacheConfig::remote_timeout or CUJIT_CACHE_REMOTE_TIMEOUT_MS); a Redis call needs at least 1 ms");
    } else if (!url) {
      warn("remote tier not used: " + problem);
    } else if (auto trust = remote_trust(config_, problem)) {
      detail::RemoteSettings settings{*url};
      settings.timeout = config_.remote_timeout;
      settings.backoff = config_.remote_backoff;
      settings.ttl = config_.remote_ttl;
      settings.trust = std::move(trust);
      state_->remote.emplace(std::move(settings));
      if (!problem.empty()) warn("remote tier: " + problem);
    } else {
      warn("remote tier not used: " + problem);
    }
  }
}

BuildCache::~BuildCache() { flush_counters(); }

void BuildCache::flush_counters() noexcept {
  if (!state_->disk) return;  // counters live in the disk tier's directory
  try {
    std::lock_guard<std::mutex> turn(state_->flush_mutex);
    const CacheStats now = stats();
    CacheCounters counted;
    counted.memo = {now.memo_hits, now.memo_misses};
    counted.memory = {now.memory_hits, now.memory_misses};
    counted.disk = {now.disk_hits, now.disk_misses};
    counted.remote = {now.remote_hits, now.remote_misses};
    counted.builds = now.builds;
    counted.stores = now.disk_stores;
    counted.evictions = now.disk_evictions;
    counted.corrupt_entries = now.corrupt_entries;
    counted.remote_unverified = now.remote_unverified;
    counted.remote_waits = now.remote_waits;
    counted.remote_lock_timeouts = now.remote_lock_timeouts;
    counted.remote_errors = now.remote_errors;
    counted.remote_wait_ms = now.remote_wait_ms;
    counted.remote_skipped = now.remote_skipped;
    counted.remote_corrupt = now.remote_corrupt;
    counted.remote_write_failures = now.remote_write_failures;
    counted.remote_forbidden = now.remote_forbidden;
    counted.remote_repairs = now.remote_repairs;
    counted.remote_bytes_saved = now.remote_bytes_saved;
    counted.process_waits = now.process_waits;
    counted.process_wait_ms = now.process_wait_ms;
    counted.lock_timeouts = now.lock_timeouts;
    bool any = false;
    const CacheCounters delta = detail::counters_since(counted, state_->flushed, any);
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->last_flush = std::chrono::steady_clock::now();
    }
    if (!any) return;
    std::string reset;
    // The shard of this process: processes flushing at once rarely share a lock.
    const auto shard = static_cast<unsigned>(::getpid()) % detail::counter_shards;
    const std::string problem = detail::add_counters(state_->disk->directory(), shard, delta, reset);
    if (!reset.empty()) warn("cache counters: " + reset);
    if (!problem.empty()) {
      if (!std::exchange(state_->flush_warned, true)) {
        warn("cache counters not updated (kept for the next try): " + problem);
      }
      return;
    }
    // Never lowered: a hit taken back after it was flushed (drop()) leaves the count below
    // what was added, and the difference is not added again when the count catches up.
    state_->flushed = detail::counters_max(counted, state_->flushed);
  } catch (...) {
    // Out of memory while formatting: the counts wait for the next flush.
  }
}

BuildCache& BuildCache::global() {
  static BuildCache cache(CacheConfig::from_environment());
  return cache;
}

BuildCache& BuildCache::disabled() {
  static BuildCache cache([] {
    CacheConfig config;
    config.mode = CacheMode::off;
    return config;
  }());
  return cache;
}

void BuildCache::warn(std::string message) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->add_warning(std::move(message));
}

bool BuildCache::disk_usable() const noexcept { return state_->disk.has_value(); }

bool BuildCache::remote_built_in() noexcept { return detail::remote_built_in(); }

std::string BuildCache::remote_url() const {
  return state_->remote ? state_->remote->settings().url.redacted() : std::string();
}

std::string BuildCache::remote_prefix() const { return detail::remote_key_prefix(); }

bool BuildCache::remote_reachable(std::string* why) const {
  std::string problem = "no remote tier in use";
  const bool reachable = state_->remote && state_->remote->ping(problem) == detail::RemoteOutcome::done;
  if (why != nullptr) *why = reachable ? std::string() : problem;
  return reachable;
}

std::optional<std::string> BuildCache::find(const CacheKey& key, CacheSource* source, Count count) {
  if (config_.mode == CacheMode::off) return std::nullopt;
  const detail::TraceRange range("cujit cache lookup");
  const std::string digest = key.digest();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (auto found = state_->memory.find(digest); found != state_->memory.end()) {
      state_->touch(found->second, digest);
      if (count != Count::nothing) {
        ++state_->stats.memory_hits;
        note_counted_hit(state_.get(), digest, CacheSource::memory);
      }
      if (source != nullptr) *source = CacheSource::memory;
      detail::trace_mark("cache hit: memory");
      return found->second.payload;
    }
    if (count == Count::hit) ++state_->stats.memory_misses;
  }
  if (auto hit = find_on_disk(digest, source, count)) return hit;
  auto hit = find_remote(digest, source, count);
  if (!hit) {
    detail::trace_mark("cache miss");
    if (count == Count::hit) note_miss(key);
  }
  return hit;
}

std::optional<std::string> BuildCache::find_on_disk(const std::string& digest, CacheSource* source, Count count) {
  if (!state_->disk) return std::nullopt;
  std::string payload, problem;
  const detail::ReadOutcome outcome = state_->disk->read(digest, payload, problem);
  std::unique_lock<std::mutex> lock(state_->mutex);
  switch (outcome) {
    case detail::ReadOutcome::hit:
    case detail::ReadOutcome::missing: break;
    case detail::ReadOutcome::corrupt:
      ++state_->stats.corrupt_entries;
      state_->add_warning("disk entry " + digest + " dropped: " + problem);
      break;
    case detail::ReadOutcome::foreign:
      ++state_->stats.corrupt_entries;
      state_->add_warning("disk entry " + digest + " not used: " + problem);
      break;
    case detail::ReadOutcome::unreadable:
      ++state_->stats.disk_read_failures;
      state_->add_warning("disk entry " + digest + " not read: " + problem);
      break;
    case detail::ReadOutcome::skipped:
      ++state_->stats.disk_entries_skipped;
      state_->add_warning("disk entry " + digest + " not used: " + problem);
      break;
  }
  const bool flush = state_->note_event();
  if (outcome != detail::ReadOutcome::hit) {
    if (count == Count::hit) ++state_->stats.disk_misses;
    lock.unlock();
    if (flush) flush_counters();
    return std::nullopt;
  }
  if (count != Count::nothing) {
    ++state_->stats.disk_hits;
    note_counted_hit(state_.get(), digest, CacheSource::disk);
  }
  state_->insert(digest, payload, config_.max_memory_bytes);
  lock.unlock();
  if (source != nullptr) *source = CacheSource::disk;
  detail::trace_mark("cache hit: disk");
  if (flush) flush_counters();
  return payload;
}

std::optional<std::string> BuildCache::find_remote(const std::string& digest, CacheSource* source, Count count) {
  if (!state_->remote) return std::nullopt;
  std::string payload, problem;
  const detail::RemoteOutcome outcome = state_->remote->get(digest, payload, problem);
  if (outcome != detail::RemoteOutcome::done) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->note_remote(outcome, problem, count);
    if (outcome == detail::RemoteOutcome::corrupt || outcome == detail::RemoteOutcome::unverified) {
      state_->bad_remote.insert(digest);  // the build's write over it repairs it
    }
    return std::nullopt;
  }
  // The next process on this machine reads it from disk.
  detail::DiskCacheResult written;
  if (state_->disk) written = state_->disk->write(digest, payload);
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->note_disk_write(digest, written);
  if (state_->disk && written.ok) ++state_->stats.disk_stores;
  if (count != Count::nothing) {
    ++state_->stats.remote_hits;
    note_counted_hit(state_.get(), digest, CacheSource::remote);
  }
  state_->insert(digest, payload, config_.max_memory_bytes);
  if (source != nullptr) *source = CacheSource::remote;
  detail::trace_mark("cache hit: remote");
  return payload;
}

void BuildCache::put(const CacheKey& key, const std::string& payload) {
  if (config_.mode == CacheMode::off) return;
  const std::string digest = key.digest();
  detail::DiskCacheResult written;
  if (state_->disk) written = state_->disk->write(digest, payload);
  detail::RemoteOutcome sent = detail::RemoteOutcome::done;
  std::string problem;
  std::uint64_t saved = 0;
  if (state_->remote) sent = state_->remote->put(digest, payload, problem, &saved);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->note_disk_write(digest, written);
    if (state_->disk && written.ok) ++state_->stats.disk_stores;
    if (state_->remote && sent == detail::RemoteOutcome::done) {
      ++state_->stats.remote_writes;
      state_->stats.remote_bytes_saved += saved;
    }
    // A value found unsound or unverified is overwritten by this build: repaired for every
    // machine, by the first process that built it.
    if (state_->bad_remote.erase(digest) != 0 && sent == detail::RemoteOutcome::done) ++state_->stats.remote_repairs;
    state_->note_remote(sent, problem, Count::hit);
    state_->insert(digest, payload, config_.max_memory_bytes);
  }
  keep_recipe(key, digest);
}

// The recipe of a stored key, in the index of its kind and name on disk and in Redis, so
// that a later miss can be explained. Only on a store (after a build): never on a hit.
void BuildCache::keep_recipe(const CacheKey& key, const std::string& digest) {
  if (!state_->disk && !state_->remote) return;
  try {
    detail::StoredRecipe recipe{digest, key.recipe(), false};
    const std::string id = detail::index_id(key.kind(), detail::recipe_name(key));
    std::string problem;
    if (state_->disk) {
      const std::filesystem::path& dir = state_->disk->directory();
      problem = detail::write_disk_index(dir, id, detail::add_to_index(detail::read_disk_index(dir, id), recipe));
    }
    if (state_->remote && state_->remote->writes()) {
      // Signed like every value (the key names the index): a forged recipe is no candidate.
      std::string index, remote_problem;
      const detail::RemoteOutcome got = state_->remote->get("recipes:" + id, index, remote_problem);
      if (got == detail::RemoteOutcome::done || got == detail::RemoteOutcome::missing ||
          got == detail::RemoteOutcome::unverified || got == detail::RemoteOutcome::corrupt) {
        if (got != detail::RemoteOutcome::done) index.clear();
        state_->remote->put("recipes:" + id, detail::add_to_index(index, recipe), remote_problem);
      }
    }
    if (!problem.empty()) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (!std::exchange(state_->recipe_warned, true)) {
        state_->add_warning("recipe of " + digest + " not kept (its misses cannot be explained): " + problem);
      }
    }
  } catch (...) {
    // Out of memory or a file system error: the recipe is lost, never the build.
  }
}

void BuildCache::note_miss(const CacheKey& key) {
  bool explain = false;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->last_miss = key;
    explain = state_->explain;
  }
  if (!explain) return;
  try {
    const MissExplanation explained = this->explain(key);
    // Names in an explanation are the caller's (input and program names): control bytes are
    // written as escapes, so that none can start a line of its own on a terminal or in a log
    // that is read line by line (a name holding "\nverdict: as expected" once did).
    std::string line = "cache miss: ";
    for (const char c : explained.text()) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7f || c == '\\') {
        constexpr char digits[] = "0123456789abcdef";
        line += c == '\\' ? std::string("\\\\") : std::string("\\x") + digits[byte >> 4] + digits[byte & 0xf];
      } else {
        line += c;
      }
    }
    std::fprintf(stderr, "cujit: %s\n", line.c_str());
    warn(line);
    if (state_->disk) {
      if (const std::string problem = detail::append_miss_log(state_->disk->directory(), explained); !problem.empty()) {
        warn("miss explanation not logged: " + problem);
      }
    }
  } catch (...) {
    // An explanation that cannot be made is no reason to fail the build.
  }
}

MissExplanation BuildCache::explain(const CacheKey& key) {
  MissExplanation out;
  out.kind = key.kind();
  out.name = detail::recipe_name(key);
  out.digest = key.digest();
  out.time = static_cast<std::int64_t>(std::time(nullptr));
  const std::string id = detail::index_id(out.kind, out.name);
  const std::vector<RecipeField> now = key.recipe();
  bool found = false;
  // The key's own recipe says "stored, entry gone" only while its entry is gone: a key
  // built and stored since its miss (explain_last_miss after the build) is explained by
  // the other recipes, as it would have been at the miss.
  const auto stored_now = [&] {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (state_->memory.count(out.digest) != 0) return true;
    }
    std::string payload, problem;
    return state_->disk && state_->disk->read(out.digest, payload, problem) == detail::ReadOutcome::hit;
  };
  std::optional<bool> own_entry;
  const auto consider = [&](const std::string& index, const char* tier) {
    for (const detail::StoredRecipe& stored : detail::read_index(index)) {
      if (stored.digest == out.digest) {
        if (!own_entry) own_entry = stored_now();
        if (*own_entry) continue;
      }
      std::vector<FieldDifference> differences = detail::compare_recipes(now, stored);
      if (found && differences.size() >= out.differences.size()) continue;
      found = true;
      out.nearest = stored.digest;
      out.nearest_tier = tier;
      out.differences = std::move(differences);
    }
  };
  if (state_->disk) consider(detail::read_disk_index(state_->disk->directory(), id), "disk");
  if (state_->remote) {
    std::string index, problem;
    if (state_->remote->get("recipes:" + id, index, problem) == detail::RemoteOutcome::done) consider(index, "remote");
  }
  return out;
}

std::optional<MissExplanation> BuildCache::explain_last_miss() {
  std::optional<CacheKey> key;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    key = state_->last_miss;
  }
  if (!key) return std::nullopt;
  return explain(*key);
}

std::string BuildCache::run_once(const std::string& flight, const Work& work, CacheSource* source) {
  CacheSource from = CacheSource::built;
  const auto count_build = [&] {
    if (from != CacheSource::built) return;
    bool flush = false;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      ++state_->stats.misses;
      ++state_->stats.builds;
      flush = state_->note_event();
    }
    if (flush) flush_counters();
  };
  if (config_.mode == CacheMode::off) {
    std::string payload = work(from);
    count_build();
    if (source != nullptr) *source = from;
    return payload;
  }
  std::promise<std::string> promise;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (auto running = state_->in_flight.find(flight); running != state_->in_flight.end()) {
      std::shared_future<std::string> future = running->second;
      ++state_->stats.waits;
      lock.unlock();
      if (source != nullptr) *source = CacheSource::waited;
      return future.get();  // rethrows the builder's exception
    }
    state_->in_flight.emplace(flight, promise.get_future().share());
  }
  const auto land = [&] {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->in_flight.erase(flight);
  };
  try {
    std::string payload;
    {
      // Across processes, then across machines: the others wait and then find the entry
      // (work() looks again). Released after work() has stored it, machines first.
      const detail::KeyLock process_lock = state_->lock_across_processes(flight, config_.lock_timeout);
      const detail::FleetLock fleet_lock = state_->lock_across_machines(flight, config_);
      payload = work(from);
    }
    state_->note_scripts();
    count_build();
    land();
    promise.set_value(payload);
    if (source != nullptr) *source = from;
    return payload;
  } catch (...) {
    land();
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::string BuildCache::get_or_build(const CacheKey& key, const std::function<std::string()>& build,
                                     CacheSource* source) {
  if (auto hit = find(key, source)) return *hit;
  return run_once(key.digest(), [&](CacheSource& from) {
    // Another caller may have stored it between find() and this flight.
    if (auto hit = find(key, &from, Count::retry)) return *hit;
    from = CacheSource::built;
    std::string payload = build();
    put(key, payload);
    return payload;
  }, source);
}

void BuildCache::note_not_stored(std::string why) {
  warn(std::move(why));
  std::lock_guard<std::mutex> lock(state_->mutex);
  ++state_->stats.not_stored;
}

std::shared_ptr<const void> BuildCache::recall_erased(const std::string& pre_key, std::type_index type) {
  if (!state_->memo) return nullptr;
  const detail::TraceRange range("cujit cache recall");
  std::shared_ptr<const void> value = state_->memo->recall(pre_key, type);
  detail::trace_mark(value ? "cache hit: memo" : "cache miss: memo");
  return value;
}

void BuildCache::memorize_erased(const std::string& pre_key, std::type_index type, std::shared_ptr<const void> value,
                                 std::uint64_t bytes) {
  if (state_->memo) state_->memo->memorize(pre_key, type, std::move(value), bytes);
}

CacheStats BuildCache::stats() const {
  CacheStats stats;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    stats = state_->stats;
  }
  if (state_->memo) {
    const detail::ResultMemo::Counts memo = state_->memo->counts();
    stats.memo_hits = memo.hits;
    stats.memo_misses = memo.misses;
    stats.memo_entries = memo.entries;
    stats.memo_bytes = memo.bytes;
  }
  return stats;
}

std::vector<std::string> BuildCache::warnings() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->warnings;
}

void BuildCache::drop(const CacheKey& key, std::string why) {
  if (config_.mode == CacheMode::off) return;
  const std::string digest = key.digest();
  if (state_->disk) state_->disk->remove(digest);
  // The remote copy too, when this client writes: otherwise every process of every
  // machine would find it again and fail to decode it. A reader leaves it to a writer.
  std::string problem;
  const detail::RemoteOutcome removed =
      state_->remote ? state_->remote->remove(digest, problem) : detail::RemoteOutcome::missing;
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->forget(digest);
  ++state_->stats.corrupt_entries;
  // The lookup that gave this thread the payload counted a hit: taken back, the rebuild
  // counts the miss (rebuild(), or the caller's next get_or_build).
  if (last_counted_hit.cache == state_.get() && last_counted_hit.digest == digest) {
    last_counted_hit.cache = nullptr;
    std::uint64_t& hits = last_counted_hit.tier == CacheSource::memory ? state_->stats.memory_hits
                          : last_counted_hit.tier == CacheSource::disk ? state_->stats.disk_hits
                                                                       : state_->stats.remote_hits;
    if (hits > 0) --hits;
  }
  if (removed == detail::RemoteOutcome::done) ++state_->stats.remote_repairs;
  if (removed != detail::RemoteOutcome::done && removed != detail::RemoteOutcome::missing) {
    state_->note_remote(removed, problem, Count::nothing);
  }
  state_->add_warning("entry " + digest + " dropped: " + why);
}

std::string BuildCache::rebuild(const CacheKey& key, std::string why, const std::function<std::string()>& build,
                                CacheSource* source) {
  drop(key, std::move(why));
  // A writer's drop() deleted the value in Redis, so what a look in the flight finds there
  // (or on disk) is another process's rebuild, waited for: used. A reader's left the bad
  // value in Redis, which a look would find again: it builds.
  const bool look_again = !state_->remote || state_->remote->writes();
  return run_once(key.digest(), [&](CacheSource& from) {
    if (look_again) {
      if (auto hit = find(key, &from, Count::retry)) return *hit;
    }
    from = CacheSource::built;
    std::string payload = build();
    put(key, payload);
    return payload;
  }, source);
}

std::uint64_t BuildCache::disk_bytes() const {
  if (!state_->disk) return 0;
  const detail::WalkReport walk = state_->disk->survey();
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->note_walk(walk);
  return walk.bytes;
}

std::size_t BuildCache::clear() {
  if (state_->memo) state_->memo->clear();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->memory.clear();
    state_->lru.clear();
    state_->stats.memory_bytes = 0;
    state_->stats.memory_entries = 0;
  }
  if (!state_->disk) return 0;
  detail::WalkReport walk = state_->disk->clear();
  const std::size_t removed = walk.entries_removed;
  walk.entries_removed = 0;  // cleared, not evicted
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->note_walk(walk);
  return removed;
}

}  // namespace cujit
