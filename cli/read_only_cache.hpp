#pragma once
// The build cache as read-only commands (`cache stats`, `cache path`, `info`) open it: the
// process's cache, unless its disk tier's directory does not exist, where opening it would
// create the whole chain (a mistyped CUJIT_CACHE_DIR included); then a cache without the
// disk tier, and the caller says that nothing is cached there. A read-only command creates
// nothing.

#include <optional>

#include "cujit/build_cache.hpp"

namespace cujit::cli {

struct ReadOnlyCache {
  CacheConfig configured;               // what the environment asks for
  bool directory_missing = false;       // disk mode, and its directory does not exist
  std::optional<BuildCache> without_disk;  // the cache opened when directory_missing
  BuildCache& cache() { return without_disk ? *without_disk : BuildCache::global(); }
};

// Fills `opened` (a BuildCache cannot move: the caller holds it).
void open_read_only_cache(ReadOnlyCache& opened);

}  // namespace cujit::cli
