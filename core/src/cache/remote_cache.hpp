#pragma once
// The remote tier: entries in Redis, shared by every machine of a fleet. Behind memory and
// disk: a disk miss asks it, a hit fills the disk tier, a build writes through. It is not
// trusted with correctness: a value is an entry in the disk tier's encoding (its key and
// the payload's SHA-256 inside), checked before use, and anything else is a miss, counted.
// It is not trusted with availability either: every call is bounded by a timeout (connect
// and each socket read or write), and a Redis that is down, slow or refuses this client is
// left alone for a back-off period, so later lookups do not each pay the timeout. Nothing
// here throws, and a dropped connection never raises SIGPIPE in the process.
//
// Built only with hiredis (CUJIT_HAVE_HIREDIS); without it remote_built_in() is false and
// every call answers `unavailable` with that reason.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cache/remote_url.hpp"

namespace cujit::detail {

bool remote_built_in() noexcept;

// "cujit:<entry format version>:<toolkit identity>:": every key of the remote tier starts
// so, the toolkit identity a short digest of the NVRTC library file this process would
// load (its resolved path, size and modification time, as in compile keys). Machines with
// another toolkit share a Redis without seeing each other's entries.
std::string remote_key_prefix();

struct RemoteSettings {
  RemoteUrl url;
  std::string prefix = remote_key_prefix();
  std::chrono::milliseconds timeout{50};    // connect, and each socket read or write
  std::chrono::milliseconds backoff{5000};  // left alone this long after a failure
  std::chrono::seconds ttl{0};              // per entry, 0: none (Redis' maxmemory policy evicts)
};

enum class RemoteOutcome {
  done,         // a hit (get), stored (put), taken (lock)
  missing,      // get: no value; lock: another holds it
  corrupt,      // get: a value (or reply) that is not a sound entry for the key
  refused,      // put: Redis answered with an error (full: OOM with noeviction, read-only...)
  unavailable,  // the call failed now (connect, timeout, authentication, connection lost)
  skipped,      // not tried: within the back-off after a failure
};

class RemoteCache {
 public:
  explicit RemoteCache(RemoteSettings settings);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  // One GET; a hit is a checked entry for `key` (a digest), its payload in `payload`.
  RemoteOutcome get(const std::string& key, std::string& payload, std::string& problem);
  // SET (with PX when a TTL is configured) of the encoded entry.
  RemoteOutcome put(const std::string& key, const std::string& payload, std::string& problem);
  // The fleet lock of `flight`: SET <prefix>lock:<flight> <token> NX PX <ttl>. `done` when
  // taken (token set), `missing` when another machine holds it.
  RemoteOutcome lock(const std::string& flight, std::chrono::milliseconds ttl, std::string& token,
                     std::string& problem);
  // Whether the lock of `flight` is still there (`done`) or gone (`missing`).
  RemoteOutcome locked(const std::string& flight, std::string& problem);
  // Deletes the lock only if it still holds `token` (a Lua compare-and-delete): a lock that
  // expired and was taken by another machine is left to it.
  void unlock(const std::string& flight, const std::string& token);
  // Sets the lock's TTL to `ttl` from now, only if it still holds `token` (a Lua
  // compare-and-PEXPIRE): `done` when extended, `missing` when it is gone or another's.
  // Through a connection of its own, which never waits out a back-off: a renewal that times
  // out neither blocks the builder's calls nor switches the tier off for them, and the
  // next renewal tries again.
  RemoteOutcome renew(const std::string& flight, const std::string& token, std::chrono::milliseconds ttl,
                      std::string& problem);
  // PING, for `cujit cache stats`: reachable now (the back-off is not consulted).
  RemoteOutcome ping(std::string& problem);

  std::string value_key(const std::string& key) const { return settings_.prefix + key; }
  std::string lock_key(const std::string& flight) const { return settings_.prefix + "lock:" + flight; }
  const RemoteSettings& settings() const noexcept { return settings_; }

 private:
  struct Connection;
  RemoteSettings settings_;
  std::mutex mutex_;  // one connection, one call at a time
  std::unique_ptr<Connection> connection_;
  std::mutex renewal_mutex_;  // the fleet locks' renewals (renew), likewise
  std::unique_ptr<Connection> renewal_connection_;
};

}  // namespace cujit::detail
