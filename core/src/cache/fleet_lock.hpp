// The remote tier's build lock of one flight, held while this machine builds it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cache/remote_cache.hpp"

namespace cujit::detail {

// Holds the fleet lock of a flight from the moment it was taken (RemoteCache::lock) until
// the build is written through, then deletes it if it is still ours. Meanwhile a thread
// extends its TTL every third of it: a build that outlasts the TTL (a large compile on a
// loaded CI machine) keeps the other machines waiting for its entry instead of building
// it too, while a holder that dies (its process killed, the thread with it) still blocks
// them for one TTL at most. A lock found gone or taken by another is left alone; a Redis
// that cannot be reached is asked again next period (RemoteCache::renew), the TTL bounding
// the lock meanwhile. The release goes through the lock's own connection whatever the
// entry's write did (a write that timed out puts the value connection in its back-off, not
// the release), and one Redis does not answer now is retried until the lock would have
// expired (RemoteCache::unlock): waiters go on as soon as Redis answers again.
class FleetLock {
 public:
  FleetLock();  // holds nothing
  // `ttl`: the lock's TTL, set again at each renewal; `renew_for`: how long renewals go on
  // at most (the waiters' own bound, lock_timeout).
  FleetLock(RemoteCache* remote, std::string flight, std::string token, std::chrono::milliseconds ttl,
            std::chrono::milliseconds renew_for);
  ~FleetLock();
  FleetLock(FleetLock&&) noexcept;
  FleetLock& operator=(FleetLock&&) = delete;
  FleetLock(const FleetLock&) = delete;
  FleetLock& operator=(const FleetLock&) = delete;

 private:
  struct Held;
  std::unique_ptr<Held> held_;
};

}  // namespace cujit::detail
