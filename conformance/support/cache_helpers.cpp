#include "support/cache_helpers.hpp"

namespace cujit::test {

CacheConfig disk_cache_at(const std::filesystem::path& directory) {
  CacheConfig config;
  config.mode = CacheMode::disk;
  config.directory = directory;
  return config;
}

std::size_t count_files(const std::filesystem::path& directory, const std::string& extension) {
  std::size_t count = 0;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == extension) ++count;
  }
  return count;
}

bool has_warning(const BuildCache& cache, const std::string& fragment) {
  for (const std::string& warning : cache.warnings()) {
    if (warning.find(fragment) != std::string::npos) return true;
  }
  return false;
}

}  // namespace cujit::test
