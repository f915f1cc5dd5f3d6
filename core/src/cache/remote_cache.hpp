#pragma once
// The remote tier: entries in Redis, shared by every machine of a fleet. Behind memory and
// disk: a disk miss asks it, a hit fills the disk tier, a build writes through. It is not
// trusted with correctness: a value is an entry in the disk tier's encoding (its key and
// the payload's SHA-256 inside), signed by a trusted writer (remote_signature.hpp), and
// both are checked before the value is used or copied anywhere; anything else is a miss,
// counted. Nor is it trusted with who may write: a client without a signing key (or set
// read-only) never writes a value or a lock, and one that Redis refuses a write (NOPERM)
// stops writing and goes on reading.
// It is not trusted with availability either: every call is bounded by a timeout
// (connecting as a whole, then the command with its whole reply), and a Redis that is down, slow or refuses this client is
// left alone for a back-off period, so later lookups do not each pay the timeout (ended
// early once Redis answers the lock's own connection, which never waits it out). Nothing
// here throws, and a dropped connection never raises SIGPIPE in the process.
//
// Built only with hiredis (CUJIT_HAVE_HIREDIS); without it remote_built_in() is false and
// every call answers `unavailable` with that reason.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cache/remote_signature.hpp"
#include "cache/remote_url.hpp"

namespace cujit::detail {

bool remote_built_in() noexcept;

// "cujit:<entry format version>:<toolkit identity>:": every key of the remote tier starts
// so, the toolkit identity a short digest of the NVRTC library file this process would
// load (its resolved path, size and modification time, as in compile keys). Machines with
// another toolkit share a Redis without seeing each other's entries.
std::string remote_key_prefix();

// "cujit:<entry format version>:shared:": the recipe indexes ("recipes:<kind and name>")
// live here, shared by every toolkit, so that a miss after a toolkit upgrade is explained
// by the recipes the old toolkit stored (its NVRTC library named as the change). A recipe is
// field names, sizes and digests, never code, and is signed like every value.
std::string remote_shared_key_prefix();

// Whose values this client uses and whether it writes.
struct RemoteTrust {
  // Values are used only when one of these keys signed them. None: every sound entry is
  // used, whoever wrote it (an unauthenticated tier, which BuildCache allows only when
  // the configuration opts into it).
  std::optional<VerifyKeys> verifier;
  // Values this client writes are signed with it. None: with a verifier, nothing is
  // written (every reader would refuse an unsigned value); without one, values are
  // written unsigned.
  std::optional<SigningKey> signer;
  bool read_only = false;  // never SET, never take a lock (CUJIT_CACHE_REMOTE_READONLY)

  // Whether this client may write values and locks at all.
  bool writes() const noexcept { return !read_only && (signer.has_value() || !verifier.has_value()); }
};

struct RemoteSettings {
  RemoteUrl url;
  std::string prefix = remote_key_prefix();
  std::string shared_prefix = remote_shared_key_prefix();  // the recipe indexes'
  // Connecting as a whole, and each command with its whole reply, plus 1 us per byte moved.
  std::chrono::milliseconds timeout{500};
  std::chrono::milliseconds backoff{5000};  // left alone this long after a failure
  std::chrono::seconds ttl{0};              // per entry, 0: none (Redis' maxmemory policy evicts)
  std::shared_ptr<const RemoteTrust> trust = nullptr;  // null: unauthenticated, writes (the lock's own tests)
};

enum class RemoteOutcome {
  done,         // a hit (get), stored (put), taken (lock)
  missing,      // get: no value; lock: another holds it
  corrupt,      // get: a value (or reply) that is not a sound entry for the key
  unverified,   // get: a value no trusted writer signed for this key (forged, replayed, unsigned)
  refused,      // put: Redis answered with an error (full: OOM with noeviction, read-only...)
  forbidden,    // put, lock: Redis refused this client the write (NOPERM): writes are off from now on
  read_only,    // put, lock: not tried: this client does not write
  unavailable,  // the call failed now (connect, timeout, authentication, connection lost)
  skipped,      // not tried: within the back-off after a failure
  // A Redis Cluster node (INFO cluster: cluster_enabled:1 when connecting, or a MOVED / ASK /
  // CROSSSLOT / CLUSTERDOWN reply): not supported, the tier is off for this process from
  // then on, every call answering this without a round trip (unsupported_reason()).
  unsupported,
};

class RemoteCache {
 public:
  explicit RemoteCache(RemoteSettings settings);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  // One GET; a hit is a checked entry for `key` (a digest), its payload in `payload`: its
  // signature verified (when a verifier is configured), then inflated when compressed, then
  // its key and checksum. A value stored uncompressed (by a cujit before compression) is
  // read as it is.
  RemoteOutcome get(const std::string& key, std::string& payload, std::string& problem);
  // SET (with PX when a TTL is configured) of the encoded entry, compressed
  // (remote_compression.hpp) and then signed when a signer is configured; `read_only`
  // without trying when this client does not write. `saved`, when done: the bytes
  // compression kept out of Redis.
  RemoteOutcome put(const std::string& key, const std::string& payload, std::string& problem,
                    std::uint64_t* saved = nullptr);
  // DEL of the value of `key`, when this client writes: the repair of a value that
  // verified but that its caller cannot decode (BuildCache::drop). `read_only` otherwise.
  RemoteOutcome remove(const std::string& key, std::string& problem);
  // The fleet lock of `flight`: SET <prefix>lock:<flight> <token> NX PX <ttl>. `done` when
  // taken (token set), `missing` when another machine holds it, `read_only` (not tried)
  // when this client does not write: it may wait for others' locks, never take one.
  // `unavailable` when no answer came in time: the SET may still run once Redis goes on, so
  // it is released with its token like a held lock (unlock) until Redis answers.
  RemoteOutcome lock(const std::string& flight, std::chrono::milliseconds ttl, std::string& token,
                     std::string& problem);
  // Whether the lock of `flight` is still there (`done`) or gone (`missing`): a waiter's
  // poll. It never waits out the back-off, and a Redis that does not answer in time (paused,
  // slower than the timeout) is asked again every few milliseconds until it answers or
  // `patience` ends (the caller's bound: the lock's TTL after it was last seen, within
  // lock_timeout): a waiter that gave up on a lock it saw held, because Redis paused, would
  // build the key a second time (issue 32: 8 builds of one key on 8 machines with Redis
  // stopped 2 s). A server that refuses the connection (nothing listening: Redis killed)
  // holds no lock any more and is not asked again: `unavailable` at once, the waiter builds.
  RemoteOutcome locked(const std::string& flight, std::chrono::steady_clock::time_point patience,
                       std::string& problem);
  // Whether a value is stored under `key` (`done`) or not (`missing`), unchecked: a waiter
  // whose builder released the lock looks for the entry it wrote through before taking the
  // lock itself (BuildCache), so that the waiters do not pass the lock from one to the next.
  RemoteOutcome stored(const std::string& key, std::string& problem);
  // Deletes the lock only if it still holds `token` (a Lua compare-and-delete): a lock that
  // expired and was taken by another machine is left to it. Through the lock connection
  // (its own, like renew: never waiting out the value connection's back-off, so a timed
  // out write of the entry does not keep the lock). When Redis does not answer now
  // (`unavailable`: slow, paused, unreachable), a thread of this cache tries again every
  // few milliseconds until it is done or `expires` (when the lock's TTL ends it anyway),
  // so waiters are released as soon as Redis answers, not a TTL later.
  // `done`: deleted; `missing`: no longer ours.
  RemoteOutcome unlock(const std::string& flight, const std::string& token, std::chrono::steady_clock::time_point expires);
  // Sets the lock's TTL to `ttl` from now, only if it still holds `token` (a Lua
  // compare-and-PEXPIRE): `done` when extended, `missing` when it is gone or another's.
  // Through the lock connection, which never waits out a back-off: a renewal that times
  // out neither blocks the builder's calls nor switches the tier off for them, and the
  // next renewal tries again.
  RemoteOutcome renew(const std::string& flight, const std::string& token, std::chrono::milliseconds ttl,
                      std::string& problem);
  // PING, for `cujit cache stats`: reachable now (the back-off is not consulted).
  RemoteOutcome ping(std::string& problem);

  std::string value_key(const std::string& key) const {
    return (key.rfind("recipes:", 0) == 0 ? settings_.shared_prefix : settings_.prefix) + key;
  }
  std::string lock_key(const std::string& flight) const { return settings_.prefix + "lock:" + flight; }
  const RemoteSettings& settings() const noexcept { return settings_; }
  // Why EVAL was refused (an ACL without scripting, a server without scripts), empty while
  // it is not: the lock then falls back to GET and DEL / PEXPIRE, which is not atomic (see
  // compare_and) but never leaves waiters stalled for a TTL.
  std::string script_refusal() const;
  bool scripts_refused() const noexcept { return scripts_refused_.load(std::memory_order_relaxed); }
  // Whether this client writes values and locks now: as configured, until Redis refuses it
  // a write (NOPERM), which switches writes off for the rest of its life.
  bool writes() const noexcept { return writes_.load(std::memory_order_relaxed); }
  // Whether the server was found to be a Redis Cluster node, and why (empty while not).
  bool unsupported() const noexcept { return unsupported_.set.load(std::memory_order_relaxed); }
  std::string unsupported_reason() const {
    const std::lock_guard<std::mutex> lock(unsupported_.mutex);
    return unsupported_.why;
  }

 private:
  // Set once, by whichever connection meets the sign first; read by both.
  struct Unsupported {
    std::atomic<bool> set{false};
    mutable std::mutex mutex;
    std::string why;
  };
  Unsupported unsupported_;
  // The outcome of a write's error reply: a refusal of this client's permission switches
  // writes off (`forbidden`), anything else is `refused`. `what` names the command.
  RemoteOutcome write_refused(const std::string& what, const std::string& reply, std::string& problem);
  RemoteOutcome exists(const std::string& name, std::string& problem);  // callers hold mutex_

  std::atomic<bool> writes_{true};
  // When a connection last had a reply (steady_clock ticks): a back-off ends as soon as
  // Redis is seen answering again on either connection (Connection::command).
  std::atomic<std::chrono::steady_clock::rep> answered_{0};
  struct Connection;
  RemoteSettings settings_;
  std::mutex mutex_;  // one connection, one call at a time
  std::unique_ptr<Connection> connection_;
  std::mutex lock_mutex_;  // the fleet locks' renewals and releases (renew, unlock), likewise
  std::unique_ptr<Connection> lock_connection_;

  // Unlocks that could not be done when asked, tried again by `releaser_` until done or
  // expired, or Redis refuses connections (gone, and its locks with it); the destructor
  // waits for them up to the back-off.
  struct PendingUnlock {
    std::string flight, token;
    std::chrono::steady_clock::time_point expires;
  };
  void unlock_later(const std::string& flight, const std::string& token, std::chrono::steady_clock::time_point expires);
  void release_pending() noexcept;
  RemoteOutcome compare_and(std::string_view script, std::vector<std::string_view> act, const std::string& flight,
                            const std::string& token, std::string& problem);
  std::mutex release_mutex_;
  std::condition_variable release_wake_;
  std::vector<PendingUnlock> pending_;
  std::size_t releasing_ = 0;  // taken out of pending_ and being tried now (the destructor waits for both)
  bool stopping_ = false;
  std::thread releaser_;  // started with the first unlock that could not be done at once

  // Values whose SET got no answer in time (Redis paused or slower than the timeout): a
  // builder's release of its fleet lock writes them first, on the lock's connection, and is
  // itself put off while they cannot be written. Released before its value was stored, the
  // lock let a waiter find no entry and build the key again (issue 32: 64 processes, Redis
  // paused mid-build). Bounded: past unwritten_cap bytes a value is not kept.
  struct UnwrittenValue {
    std::string name, bytes;
    std::chrono::steady_clock::time_point kept;
  };
  static constexpr std::size_t unwritten_cap = std::size_t{64} << 20;
  // Older than a fleet lock's default TTL, a kept value is dropped: every lock it could
  // have held back has expired by then, and it must not hold back later ones for good.
  static constexpr std::chrono::seconds unwritten_age{30};
  // Keeps `bytes` for `name` in place of any older kept value of the name (callers hold
  // unwritten_mutex_); false past the cap.
  bool keep_unwritten(const std::string& name, std::string bytes, std::chrono::steady_clock::time_point kept);
  void forget_unwritten(const std::string& name);
  // Writes the unwritten values (callers hold lock_mutex_): done when none is left, else
  // the outcome of the SET that could not be done (unavailable: tried again later). With
  // `bounded` (a release's caller) it starts no further SET once unwritten_budget timeouts
  // have passed since its first, so that a Redis answering each SET just within the timeout
  // cannot hold the caller (and lock_mutex_) for one timeout per kept value; the releaser
  // thread, unbounded, writes the rest before it releases the lock, and a cache being
  // destroyed waits for that round as for any release under way.
  static constexpr int unwritten_budget = 2;
  RemoteOutcome write_unwritten(std::string& problem, bool bounded);
  // A value forgotten (removed as bad, or written anew) while a release has it taken out is
  // not sent and not kept again; only a SET already on its way when it is forgotten can
  // still land after the forgetting caller's own DEL or SET (one call's window; waiting
  // for it would hold that caller, and the cache's other calls, for the release's writes).
  bool unwritten_taken_out_ = false;         // under unwritten_mutex_
  std::vector<std::string> forgotten_taken_;  // under unwritten_mutex_: forgotten meanwhile
  std::mutex unwritten_mutex_;
  std::vector<UnwrittenValue> unwritten_;
  std::size_t unwritten_bytes_ = 0;

  std::atomic<bool> scripts_refused_{false};
  mutable std::mutex script_refusal_mutex_;
  std::string script_refusal_;
};

}  // namespace cujit::detail
