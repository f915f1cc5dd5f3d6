#include "read_only_cache.hpp"

#include <sys/stat.h>

#include <cerrno>

namespace cujit::cli {

void open_read_only_cache(ReadOnlyCache& opened) {
  opened.configured = CacheConfig::from_environment();
  struct stat info {};
  const auto& directory = opened.configured.directory;
  opened.directory_missing = opened.configured.mode == CacheMode::disk && !directory.empty() &&
                             ::lstat(directory.c_str(), &info) != 0 && (errno == ENOENT || errno == ENOTDIR);
  if (!opened.directory_missing) return;
  CacheConfig config = opened.configured;
  config.mode = CacheMode::memory;
  opened.without_disk.emplace(std::move(config));
}

}  // namespace cujit::cli
