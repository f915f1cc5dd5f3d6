#pragma once
// Helpers of the cache suites: a disk cache at a directory, counting files by extension,
// looking for a warning.

#include <filesystem>
#include <string>

#include "cujit/build_cache.hpp"

namespace cujit::test {

CacheConfig disk_cache_at(const std::filesystem::path& directory);
std::size_t count_files(const std::filesystem::path& directory, const std::string& extension);
bool has_warning(const BuildCache& cache, const std::string& fragment);

}  // namespace cujit::test
