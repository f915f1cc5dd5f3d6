// cujit cache: the global build cache's stats, path, or clear.
#include <iostream>
#include <string>

#include "commands.hpp"
#include "cujit/build_cache.hpp"

namespace cujit::cli {

int cache(const std::string& action) {
  BuildCache& cache = BuildCache::global();
  if (action == "path") {
    std::cout << cache.config().directory.string() << "\n";
    return exit_ok;
  }
  if (action == "clear") {
    std::cout << "removed " << cache.clear() << " entries from " << cache.config().directory.string() << "\n";
    return exit_ok;
  }
  const CacheStats stats = cache.stats();
  std::cout << "mode:        " << to_string(cache.config().mode) << "\n"
            << "directory:   " << cache.config().directory.string() << (cache.disk_usable() ? "" : " (not used)") << "\n"
            << "disk bytes:  " << cache.disk_bytes() << " of " << cache.config().max_disk_bytes << "\n"
            << "memory cap:  " << cache.config().max_memory_bytes << " bytes\n";
  std::cout << "remote:      ";
  if (!BuildCache::remote_built_in()) {
    std::cout << "not built in (this cujit was built without hiredis)\n";
  } else if (cache.remote_url().empty()) {
    std::cout << "none (CUJIT_CACHE_REMOTE=redis://[[user]:password@]host[:port][/db])\n";
  } else {
    std::string why;
    const bool reachable = cache.remote_reachable(&why);
    std::cout << cache.remote_url() << ", keys " << cache.remote_prefix() << "*, "
              << (reachable ? "reachable" : "not reachable: " + why) << "\n";
  }
  std::cout << "this process: " << stats.memory_hits << " memory hits, " << stats.disk_hits << " disk hits, "
            << stats.remote_hits << " remote hits, " << stats.builds << " builds, " << stats.process_waits
            << " waits for another process, " << stats.remote_waits << " for another machine\n";
  if (!cache.remote_url().empty()) {
    std::cout << "remote tier: " << stats.remote_misses << " misses, " << stats.remote_writes << " writes, "
              << stats.remote_corrupt << " unsound values, " << stats.remote_errors << " errors, "
              << stats.remote_skipped << " calls skipped in back-off, " << stats.remote_write_failures
              << " writes refused\n";
  }
  for (const std::string& warning : cache.warnings()) std::cout << "warning: " << warning << "\n";
  return exit_ok;
}

}  // namespace cujit::cli
