#include "cache/fleet_lock.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace cujit::detail {
namespace {

// Renewals of a lock whose TTL is a few milliseconds would hold the Redis connection
// nearly all the time: none closer together than this.
constexpr std::chrono::milliseconds shortest_renewal_period{10};

}  // namespace

struct FleetLock::Held {
  Held(RemoteCache* remote_cache, std::string flight_name, std::string holder, std::chrono::milliseconds lifetime,
       std::chrono::milliseconds renew_for)
      : remote(remote_cache),
        flight(std::move(flight_name)),
        token(std::move(holder)),
        ttl(lifetime),
        renew_until(std::chrono::steady_clock::now() + renew_for),
        expires(std::chrono::steady_clock::now() + lifetime) {
    try {
      renewer = std::thread([this] { renew_until_done(); });
    } catch (...) {
      // No thread to be had: the lock still holds for one TTL, as it did before renewal.
    }
  }

  ~Held() {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    wake.notify_one();
    if (renewer.joinable()) renewer.join();
    // Through the lock's own connection, whatever happened to the entry's write; retried
    // in the background until the lock would have expired when Redis does not answer now.
    try {
      (void)remote->unlock(flight, token, expires);
    } catch (...) {
      // Out of memory: the lock expires on its own (its TTL bounds it).
    }
  }

  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

  // Every third of the TTL until the build is done, the lock is found gone or another's, or
  // `renew_for` has passed: the others stop waiting then anyway (lock_timeout), so a build
  // hung in this process holds them one TTL past it, not for ever.
  void renew_until_done() noexcept {
    const auto period = std::max(ttl / 3, shortest_renewal_period);
    std::unique_lock<std::mutex> lock(mutex);
    while (!wake.wait_for(lock, period, [this] { return done; })) {
      if (std::chrono::steady_clock::now() >= renew_until) return;
      lock.unlock();
      RemoteOutcome outcome = RemoteOutcome::unavailable;
      const auto asked = std::chrono::steady_clock::now();
      try {
        std::string problem;
        outcome = remote->renew(flight, token, ttl, problem);
      } catch (...) {
        // Out of memory building the command: try again next period, as after a timeout.
      }
      lock.lock();
      if (outcome == RemoteOutcome::done) expires = asked + ttl;  // at least this long from now
      if (outcome == RemoteOutcome::missing) return;  // expired, maybe taken: not ours to extend
    }
  }

  RemoteCache* const remote;
  const std::string flight, token;
  const std::chrono::milliseconds ttl;
  const std::chrono::steady_clock::time_point renew_until;
  // When the lock expires at the latest, as its last renewal set it (under `mutex`).
  std::chrono::steady_clock::time_point expires;
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
  std::thread renewer;
};

FleetLock::FleetLock() = default;

FleetLock::FleetLock(RemoteCache* remote, std::string flight, std::string token, std::chrono::milliseconds ttl,
                     std::chrono::milliseconds renew_for)
    : held_(std::make_unique<Held>(remote, std::move(flight), std::move(token), ttl, renew_for)) {}

FleetLock::~FleetLock() = default;
FleetLock::FleetLock(FleetLock&&) noexcept = default;

}  // namespace cujit::detail
