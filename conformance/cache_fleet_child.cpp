// Run by the cache's cross-process and fleet tests as one process of many: asks its cache
// for keys whose build sleeps (a stand-in for a compile, so the tests stay fast on CPU) and
// checks every payload. The cache comes from the environment (CUJIT_CACHE_DIR,
// CUJIT_CACHE_REMOTE, CUJIT_CACHE_LOCK_TIMEOUT, CUJIT_CACHE_REMOTE_LOCK_MS...).
//
//   cache_fleet_child FIRST COUNT BUILD_MS [MARK [hang | until=FILE]]
//
// Asks for keys FIRST..FIRST+COUNT-1. MARK: a file created when a build starts. hang: a
// build never ends (the test kills the process). until=FILE: a build ends once FILE exists
// (the fleet-under-load test ends the builds when its fault is on). Prints one line:
//   fleet builds=B memory_hits=.. disk_hits=D remote_hits=R process_waits=W remote_waits=X
//         lock_timeouts=T remote_lock_timeouts=U correct=C keys=K
// then, per key, when it was answered and how (the fleet-under-load test measures each
// waiter's lag after its key's builder from these; steady_clock is CLOCK_MONOTONIC, one
// clock for every process of the machine):
//   key index=I source=built|remote|disk|... done_ns=N
// and each warning of the cache on a line of its own.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "cujit/build_cache.hpp"
#include "cujit/error.hpp"

namespace {

cujit::CacheKey key_of(long index) { return cujit::CacheKey("fleet-test").add("name", "key-" + std::to_string(index)); }

// What a build of key `index` makes: big enough to be a real entry (about 64 KiB).
std::string payload_of(long index) {
  std::string out;
  const std::string line = "payload of key " + std::to_string(index) + "\n";
  while (out.size() < 65536) out += line;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s FIRST COUNT BUILD_MS [MARK [hang]]\n", argv[0]);
    return 2;
  }
  const long first = std::strtol(argv[1], nullptr, 10), count = std::strtol(argv[2], nullptr, 10);
  const long build_ms = std::strtol(argv[3], nullptr, 10);
  const std::string mark = argc > 4 ? argv[4] : "";
  const bool hang = argc > 5 && std::string(argv[5]) == "hang";
  const std::string until = argc > 5 && std::string(argv[5]).rfind("until=", 0) == 0 ? std::string(argv[5]).substr(6) : "";
  try {
    cujit::BuildCache cache(cujit::CacheConfig::from_environment());
    long correct = 0;
    std::string answered;
    for (long index = first; index < first + count; ++index) {
      cujit::CacheSource source{};
      const std::string payload = cache.get_or_build(key_of(index), [&] {
        if (!mark.empty()) std::ofstream(mark) << "building\n";
        do {
          std::this_thread::sleep_for(std::chrono::milliseconds(build_ms));
        } while (hang || (!until.empty() && !std::ifstream(until)));
        return payload_of(index);
      }, &source);
      const auto done = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch());
      answered += "key index=" + std::to_string(index) + " source=" + std::string(cujit::to_string(source)) +
                  " done_ns=" + std::to_string(done.count()) + "\n";
      if (payload == payload_of(index)) ++correct;
    }
    const cujit::CacheStats stats = cache.stats();
    std::printf(
        "fleet builds=%llu memory_hits=%llu disk_hits=%llu remote_hits=%llu process_waits=%llu remote_waits=%llu "
        "lock_timeouts=%llu remote_lock_timeouts=%llu correct=%ld keys=%ld\n",
        static_cast<unsigned long long>(stats.builds), static_cast<unsigned long long>(stats.memory_hits),
        static_cast<unsigned long long>(stats.disk_hits), static_cast<unsigned long long>(stats.remote_hits),
        static_cast<unsigned long long>(stats.process_waits), static_cast<unsigned long long>(stats.remote_waits),
        static_cast<unsigned long long>(stats.lock_timeouts),
        static_cast<unsigned long long>(stats.remote_lock_timeouts), correct, count);
    std::fputs(answered.c_str(), stdout);
    for (const std::string& warning : cache.warnings()) std::printf("warning: %s\n", warning.c_str());
    return 0;
  } catch (const cujit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
