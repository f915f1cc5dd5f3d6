#pragma once
// The persistent counters of a cache directory, as ccache keeps its statistics: small text
// files under <cache>/counters/, one per shard (a process writes the shard of its pid, so
// that many processes rarely queue on one lock). A process adds its counts in one batch:
// under the shard's lock file (flock(2), released by the kernel when its holder dies) it
// reads the shard, adds, writes a temporary file and renames it over the shard. A reader
// needs no lock (a rename replaces a file whole), and a process killed at any point leaves
// either the old file or the new one, never a torn one. A file that is damaged anyway
// (another program, a power loss before the rename reached the disk) is counted as zero
// with a warning, and the next batch written to it starts it over.
//
// Files: <cache>/counters/<hex digit>.counters (the shard), .guard (its lock file) and
// .counters.new (the temporary file, written only by the guard's holder).
// Shard file: the line "cujit-counters 1", then "<name> <decimal>" lines (the names in
// cache_counters.cpp; "zeroed <unix seconds>" after zero_cache_counters). Unknown names are
// skipped (a newer cujit may add some); anything else is damage.

#include <cstdint>
#include <filesystem>
#include <string>

#include "cujit/build_cache.hpp"

namespace cujit::detail {

inline constexpr const char* counters_directory_name = "counters";
inline constexpr unsigned counter_shards = 16;
// A shard file larger than this is not one cujit wrote.
inline constexpr std::size_t counter_file_limit = 4096;

// The text of a shard holding `counters` (their counts and zeroed_at).
std::string encode_counters(const CacheCounters& counters);
// Adds the shard `text` to `sum`; false (and `sum` untouched) when it is not a sound shard,
// with why in `problem`.
bool add_decoded_counters(std::string_view text, CacheCounters& sum, std::string& problem);

// Adds `delta` to the shard `shard` of `cache_dir`. Empty when done; else why not (nothing
// was added). `reset` says why a damaged shard was started over (empty when it was sound).
std::string add_counters(const std::filesystem::path& cache_dir, unsigned shard, const CacheCounters& delta,
                         std::string& reset);

// The element-wise difference now - before of every count (builds, hits...; not entries,
// bytes or zeroed_at), and whether any is non-zero.
CacheCounters counters_since(const CacheCounters& now, const CacheCounters& before, bool& any);

}  // namespace cujit::detail
