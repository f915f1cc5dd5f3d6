#pragma once
// The cache of a test's child process: the disk tier at `directory` ("off": no cache), and
// with CACHE_CHILD_REMOTE set (a redis:// URL of a test's own unauthenticated server) the
// Redis tier too. The miss-explanation tests run each child on a fresh directory then, so
// that only Redis can hold the recipe a miss is compared with.
#include <chrono>
#include <cstdlib>
#include <string>

#include "cujit/build_cache.hpp"

namespace cujit::test {

inline CacheConfig child_cache_config(const std::string& directory) {
  CacheConfig config;
  config.mode = directory == "off" ? CacheMode::off : CacheMode::disk;
  config.directory = directory;
  if (const char* remote = std::getenv("CACHE_CHILD_REMOTE"); remote != nullptr && *remote != '\0') {
    config.remote = remote;
    config.remote_unauthenticated = true;
    config.remote_timeout = std::chrono::milliseconds(2000);
  }
  return config;
}

}  // namespace cujit::test
