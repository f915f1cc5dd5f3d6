// cujit cache: the global build cache's stats, path, or clear.
#include <iostream>

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
  std::cout << "this process: " << stats.memory_hits << " memory hits, " << stats.disk_hits << " disk hits, "
            << stats.builds << " builds\n";
  for (const std::string& warning : cache.warnings()) std::cout << "warning: " << warning << "\n";
  return exit_ok;
}

}  // namespace cujit::cli
