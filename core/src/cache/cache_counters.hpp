#pragma once
// The persistent counters of a cache directory, as ccache keeps its statistics: small text
// files under <cache>/counters/, one per shard (a process writes the shard of its pid, so
// that many processes rarely queue on one lock). A process adds its counts in one batch:
// with the shard locked (flock(2), released by the kernel when its holder dies) it reads
// the shard, adds, and overwrites it in place with one write of a text that always has the
// same length (every count padded to 20 digits). Readers take a shared lock. So no
// increment is lost, nobody sees half a file, and a process killed at any point leaves the
// old text or the new one. No rename and no fsync: a flush costs a few system calls and no
// journal commit (replacing the file by rename cost 0.4-4.5 ms on ext4). A file damaged
// anyway (another program, a power loss) is counted as zero with a warning, and the next
// batch written to it starts it over; a link, FIFO or socket in its place is removed (never
// followed) and replaced.
//
// Shard file <cache>/counters/<hex digit>.counters: the line "cujit-counters 1", then
// "<name> <decimal>" lines (the names in cache_counters.cpp, and "zeroed <unix seconds>").
// Unknown names are skipped (a newer cujit may add some); anything else is damage. An
// empty file is one just created.

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
// The element-wise larger of every count of `a` and `b` (as counters_since, the counts only).
CacheCounters counters_max(const CacheCounters& a, const CacheCounters& b);

}  // namespace cujit::detail
