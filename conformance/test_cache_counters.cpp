// The persistent counters of a cache directory (read_cache_counters, zero_cache_counters,
// BuildCache::flush_counters): counts of many processes and threads add up exactly, zero
// works, mode off and memory write nothing, and damaged or hostile counter files give a
// defined reset with a warning, never a crash or a followed link.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "cache/cache_counters.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/error.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;
using test::has_warning;

CacheKey key_of(const std::string& name) { return CacheKey("counters-test").add("name", name); }

std::function<std::string()> builder(const std::string& payload) {
  return [payload] { return payload; };
}

fs::path shard_path(const fs::path& cache, unsigned shard) {
  return cache / detail::counters_directory_name / (std::string(1, "0123456789abcdef"[shard]) + ".counters");
}

// One process's counts as cache_child prints them.
struct ChildCounts {
  std::uint64_t memo_hits = 0, memo_misses = 0, memory_hits = 0, memory_misses = 0, disk_hits = 0,
                disk_misses = 0, builds = 0, stores = 0, waits = 0;
  void add(const ChildCounts& o) {
    memo_hits += o.memo_hits, memo_misses += o.memo_misses, memory_hits += o.memory_hits;
    memory_misses += o.memory_misses, disk_hits += o.disk_hits, disk_misses += o.disk_misses;
    builds += o.builds, stores += o.stores, waits += o.waits;
  }
};

ChildCounts parse_child(const test::ChildResult& child) {
  // The last line is the child's answer (sanitizer lanes may print reports before it).
  std::string text = child.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::istringstream line(text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1));
  ChildCounts c;
  line >> c.memo_hits >> c.memo_misses >> c.memory_hits >> c.memory_misses >> c.disk_hits >> c.disk_misses >>
      c.builds >> c.stores >> c.waits;
  EXPECT_FALSE(line.fail()) << child.output;
  return c;
}

void expect_counters(const CacheCounters& counters, const ChildCounts& want) {
  EXPECT_EQ(counters.memo.hits, want.memo_hits);
  EXPECT_EQ(counters.memo.misses, want.memo_misses);
  EXPECT_EQ(counters.memory.hits, want.memory_hits);
  EXPECT_EQ(counters.memory.misses, want.memory_misses);
  EXPECT_EQ(counters.disk.hits, want.disk_hits);
  EXPECT_EQ(counters.disk.misses, want.disk_misses);
  EXPECT_EQ(counters.builds, want.builds);
  EXPECT_EQ(counters.stores, want.stores);
}

std::vector<std::string> child_args(const fs::path& cache, int threads, int lookups) {
  return {CUJIT_CACHE_CHILD, "counters", cache.string(), std::to_string(threads), std::to_string(lookups)};
}

TEST(CacheCounters, ADirectoryNeverUsedCountsZero) {
  test::TempDir dir;
  const CacheCounters counters = read_cache_counters(dir.path() / "absent");
  EXPECT_EQ(counters.builds, 0u);
  EXPECT_EQ(counters.entries, 0u);
  EXPECT_EQ(counters.hit_rate(), 0.0);
  EXPECT_TRUE(counters.warnings.empty());
}

TEST(CacheCounters, ACacheDirectoryThatIsAFileIsAnIoError) {
  test::TempDir dir;
  const fs::path file = dir.write("file", "x");
  try {
    (void)read_cache_counters(file);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::io);
    EXPECT_NE(std::string(error.what()).find(file.string()), std::string::npos) << error.what();
  }
}

TEST(CacheCounters, OneProcessCountsAreKeptAfterItEnds) {
  test::TempDir dir;
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    EXPECT_EQ(cache.get_or_build(key_of("a"), builder("A")), "A");  // memory, disk miss; build
    EXPECT_EQ(cache.get_or_build(key_of("a"), builder("never")), "A");  // memory hit
    EXPECT_EQ(cache.get_or_build(key_of("b"), builder("B")), "B");
  }
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    EXPECT_EQ(cache.get_or_build(key_of("a"), builder("never")), "A");  // memory miss, disk hit
  }
  const CacheCounters counters = read_cache_counters(dir.path());
  EXPECT_EQ(counters.builds, 2u);
  EXPECT_EQ(counters.stores, 2u);
  EXPECT_EQ(counters.memory.hits, 1u);
  EXPECT_EQ(counters.memory.misses, 3u);
  EXPECT_EQ(counters.disk.hits, 1u);
  EXPECT_EQ(counters.disk.misses, 2u);
  EXPECT_EQ(counters.entries, 2u);
  EXPECT_GT(counters.bytes, 0u);
  EXPECT_DOUBLE_EQ(counters.memory.hit_rate(), 0.25);
  EXPECT_DOUBLE_EQ(counters.hit_rate(), 0.5);  // 2 hits, 2 builds
  EXPECT_TRUE(counters.warnings.empty());
}

TEST(CacheCounters, TwoProcessesCountsAddUp) {
  test::TempDir dir;
  ChildCounts want;
  for (int run = 0; run < 2; ++run) {
    const test::ChildResult child = test::run_child(child_args(dir.path(), 1, 30));
    ASSERT_EQ(child.exit_code, 0) << child.output;
    want.add(parse_child(child));
  }
  EXPECT_EQ(want.builds, 8u);     // 8 keys, built once: the second process finds them on disk
  EXPECT_GE(want.disk_hits, 8u);  // the second process's first look of each key
  expect_counters(read_cache_counters(dir.path()), want);
}

// Processes and threads flushing at once (every 64 events, and at exit) lose nothing: the
// totals equal the sum of what every process counted.
TEST(CacheCounters, ConcurrentProcessesAndThreadsTotalsAreExact) {
  test::TempDir dir;
  constexpr int processes = 4, threads = 4, lookups = 150;
  std::vector<std::vector<std::string>> argvs(processes, child_args(dir.path(), threads, lookups));
  const std::vector<test::ChildResult> children =
      test::run_children(argvs, std::vector<std::vector<std::string>>(processes));
  ChildCounts want;
  for (const test::ChildResult& child : children) {
    ASSERT_EQ(child.exit_code, 0) << child.output;
    const ChildCounts counts = parse_child(child);
    // Every lookup is answered once: a memo hit, else a memory or disk hit, a build, or a
    // wait for another thread's build (a retry after another process's build counts a hit).
    EXPECT_EQ(counts.memo_hits + counts.memory_hits + counts.disk_hits + counts.builds + counts.waits,
              static_cast<std::uint64_t>(threads * lookups));
    want.add(counts);
  }
  expect_counters(read_cache_counters(dir.path()), want);
}

TEST(CacheCounters, ThreadsWithCachesOfTheirOwnOnOneDirectoryTotalsAreExact) {
  test::TempDir dir;
  constexpr int threads = 8, rounds = 200;
  std::vector<std::thread> workers;
  std::vector<CacheStats> stats(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      BuildCache cache(test::disk_cache_at(dir.path()));
      for (int i = 0; i < rounds; ++i) {
        (void)cache.get_or_build(key_of("k" + std::to_string(i % 5)), builder("v"));
        if (i % 10 == 0) cache.flush_counters();  // flushes racing with other caches'
      }
      stats[static_cast<std::size_t>(t)] = cache.stats();
    });
  }
  for (std::thread& worker : workers) worker.join();
  std::uint64_t hits = 0, builds = 0;
  for (const CacheStats& s : stats) hits += s.memory_hits + s.disk_hits, builds += s.builds;
  const CacheCounters counters = read_cache_counters(dir.path());
  EXPECT_EQ(counters.memory.hits + counters.disk.hits, hits);
  EXPECT_EQ(counters.builds, builds);
  EXPECT_TRUE(counters.warnings.empty()) << counters.warnings.front();
}

TEST(CacheCounters, ZeroSetsEveryCounterToZeroAndKeepsEntries) {
  test::TempDir dir;
  ASSERT_EQ(test::run_child(child_args(dir.path(), 2, 20)).exit_code, 0);
  ASSERT_GT(read_cache_counters(dir.path()).builds, 0u);
  const auto before = std::chrono::system_clock::now();
  zero_cache_counters(dir.path());
  CacheCounters counters = read_cache_counters(dir.path());
  expect_counters(counters, ChildCounts{});
  EXPECT_EQ(counters.entries, 8u);
  EXPECT_GE(counters.zeroed_at,
            std::chrono::duration_cast<std::chrono::seconds>(before.time_since_epoch()).count() - 1);
  // Counted after the zero: only the new process's counts.
  const test::ChildResult child = test::run_child(child_args(dir.path(), 1, 10));
  ASSERT_EQ(child.exit_code, 0) << child.output;
  counters = read_cache_counters(dir.path());
  expect_counters(counters, parse_child(child));
  EXPECT_EQ(counters.builds, 0u);
  EXPECT_GT(counters.zeroed_at, 0);
}

TEST(CacheCounters, ModeOffAndMemoryWriteNothing) {
  for (CacheMode mode : {CacheMode::off, CacheMode::memory}) {
    test::TempDir dir;
    CacheConfig config = test::disk_cache_at(dir.path() / "cache");
    config.mode = mode;
    {
      BuildCache cache(config);
      for (int i = 0; i < 100; ++i) (void)cache.get_or_build(key_of(std::to_string(i % 3)), builder("v"));
      cache.flush_counters();
    }
    EXPECT_FALSE(fs::exists(dir.path() / "cache")) << to_string(mode);
  }
}

// ---- damaged and hostile counter files ----------------------------------------------------

struct Damage {
  const char* name;
  std::function<void(const fs::path& shard)> apply;
};

void PrintTo(const Damage& damage, std::ostream* out) { *out << damage.name; }

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class DamagedShard : public ::testing::TestWithParam<Damage> {};

// A damaged shard reads as zero with a warning (the other shards still count), and a
// flush into it starts it over with only the new counts, with a warning.
TEST_P(DamagedShard, CountsAsZeroWithAWarningAndStartsOver) {
  test::TempDir dir;
  const fs::path cache = dir.path();
  CacheCounters five;
  five.builds = 5;
  std::string reset;
  ASSERT_EQ(detail::add_counters(cache, 1, five, reset), "");
  ASSERT_EQ(detail::add_counters(cache, 2, five, reset), "");
  const fs::path victim = shard_path(cache, 2);
  GetParam().apply(victim);
  CacheCounters counters = read_cache_counters(cache);
  EXPECT_EQ(counters.builds, 5u) << GetParam().name;
  ASSERT_EQ(counters.warnings.size(), 1u) << GetParam().name;
  EXPECT_NE(counters.warnings[0].find("2.counters"), std::string::npos) << counters.warnings[0];

  CacheCounters three;
  three.builds = 3;
  reset.clear();
  EXPECT_EQ(detail::add_counters(cache, 2, three, reset), "") << GetParam().name;
  EXPECT_NE(reset.find("start over"), std::string::npos) << GetParam().name << ": " << reset;
  counters = read_cache_counters(cache);
  EXPECT_EQ(counters.builds, 8u) << GetParam().name;
  EXPECT_TRUE(counters.warnings.empty()) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    Forms, DamagedShard,
    ::testing::Values(
        Damage{"Garbage", [](const fs::path& p) { write_text(p, "\x7f" "ELF garbage\n"); }},
        Damage{"Blank", [](const fs::path& p) { write_text(p, "\n"); }},
        Damage{"Truncated", [](const fs::path& p) { write_text(p, "cujit-counters 1\nbuilds 12"); }},
        Damage{"NotACount", [](const fs::path& p) { write_text(p, "cujit-counters 1\nbuilds -4\n"); }},
        Damage{"Overflow", [](const fs::path& p) { write_text(p, "cujit-counters 1\nbuilds 99999999999999999999999\n"); }},
        Damage{"Twice", [](const fs::path& p) { write_text(p, "cujit-counters 1\nbuilds 1\nbuilds 2\n"); }},
        Damage{"OtherVersion", [](const fs::path& p) { write_text(p, "cujit-counters 2\nbuilds 1\n"); }},
        Damage{"Huge", [](const fs::path& p) { write_text(p, "cujit-counters 1\n" + std::string(10000, '#')); }},
        Damage{"Fifo", [](const fs::path& p) { fs::remove(p); ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }},
        Damage{"SymbolicLink",
               [](const fs::path& p) {
                 // A sound-looking file elsewhere: never read through the link, never written.
                 const fs::path target = p.parent_path().parent_path() / "elsewhere";
                 write_text(target, "cujit-counters 1\nbuilds 1000\n");
                 fs::remove(p);
                 fs::create_symlink(target, p);
               }}),
    [](const ::testing::TestParamInfo<Damage>& param) { return std::string(param.param.name); });

TEST(CacheCounters, ALinkedShardsTargetIsNeverWritten) {
  test::TempDir dir;
  const fs::path target = dir.write("elsewhere", "precious\n");
  fs::create_directories(dir.path() / "cache" / detail::counters_directory_name);
  fs::create_symlink(target, shard_path(dir.path() / "cache", 4));
  CacheCounters one;
  one.builds = 1;
  std::string reset;
  EXPECT_EQ(detail::add_counters(dir.path() / "cache", 4, one, reset), "");
  EXPECT_EQ(test::read_bytes(target), "precious\n");
  EXPECT_EQ(read_cache_counters(dir.path() / "cache").builds, 1u);
}

TEST(CacheCounters, ACountersDirectoryThatIsALinkIsNotFollowed) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "cache");
  fs::create_directories(dir.path() / "outside");
  write_text(dir.path() / "outside" / "0.counters", "cujit-counters 1\nbuilds 1000\n");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "cache" / detail::counters_directory_name);
  const CacheCounters counters = read_cache_counters(dir.path() / "cache");
  EXPECT_EQ(counters.builds, 0u);
  EXPECT_FALSE(counters.warnings.empty());
  CacheCounters one;
  one.builds = 1;
  std::string reset;
  EXPECT_NE(detail::add_counters(dir.path() / "cache", 0, one, reset), "");
  EXPECT_EQ(test::read_bytes(dir.path() / "outside" / "0.counters"), "cujit-counters 1\nbuilds 1000\n");
}

// A shard another process keeps locked: the flush gives up after a bounded wait with a
// warning, keeps its counts, and adds them all once the lock is free.
TEST(CacheCounters, ALockedShardDelaysTheCountsWithoutLosingThem) {
  test::TempDir dir;
  const fs::path shard = shard_path(dir.path(), static_cast<unsigned>(::getpid()) % detail::counter_shards);
  fs::create_directories(shard.parent_path());
  BuildCache cache(test::disk_cache_at(dir.path()));
  (void)cache.get_or_build(key_of("a"), builder("A"));
  {
    const int holder = ::open(shard.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(holder, 0);
    ASSERT_EQ(::flock(holder, LOCK_EX), 0);
    cache.flush_counters();  // waits for the lock, then gives up
    ::close(holder);
  }
  EXPECT_TRUE(has_warning(cache, "locked by another process"));
  EXPECT_EQ(read_cache_counters(dir.path()).builds, 0u);
  (void)cache.get_or_build(key_of("b"), builder("B"));
  cache.flush_counters();
  EXPECT_EQ(read_cache_counters(dir.path()).builds, 2u);
}

TEST(CacheCounters, AnEmptyShardIsOneJustCreated) {
  test::TempDir dir;
  fs::create_directories(dir.path() / detail::counters_directory_name);
  write_text(shard_path(dir.path(), 9), "");
  const CacheCounters counters = read_cache_counters(dir.path());
  EXPECT_EQ(counters.builds, 0u);
  EXPECT_TRUE(counters.warnings.empty());
}

TEST(CacheCounters, EveryShardKeepsOneLength) {
  CacheCounters small, large;
  large.builds = UINT64_MAX;
  large.zeroed_at = 1700000000;
  EXPECT_EQ(detail::encode_counters(small).size(), detail::encode_counters(large).size());
}

TEST(CacheCounters, AFlushIntoADamagedShardWarnsInTheCache) {
  test::TempDir dir;
  const fs::path shard = shard_path(dir.path(), static_cast<unsigned>(::getpid()) % detail::counter_shards);
  fs::create_directories(shard.parent_path());
  write_text(shard, "not counters\n");
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    (void)cache.get_or_build(key_of("a"), builder("A"));
    cache.flush_counters();
    EXPECT_TRUE(has_warning(cache, "start over"));
  }
  const CacheCounters counters = read_cache_counters(dir.path());
  EXPECT_EQ(counters.builds, 1u);
  EXPECT_TRUE(counters.warnings.empty());
}

TEST(CacheCounters, CountersOfANewerCujitAreSkipped) {
  test::TempDir dir;
  fs::create_directories(dir.path() / detail::counters_directory_name);
  write_text(shard_path(dir.path(), 0), "cujit-counters 1\nbuilds 3\nquantum.hits 9\n");
  const CacheCounters counters = read_cache_counters(dir.path());
  EXPECT_EQ(counters.builds, 3u);
  EXPECT_TRUE(counters.warnings.empty());
}

TEST(CacheCounters, EncodedCountersDecodeToThemselves) {
  CacheCounters counters;
  counters.memo = {1, 2};
  counters.memory = {3, 4};
  counters.disk = {5, 6};
  counters.remote = {7, 8};
  counters.builds = 9;
  counters.stores = 10;
  counters.evictions = 11;
  counters.corrupt_entries = 12;
  counters.remote_unverified = 13;
  counters.remote_waits = 14;
  counters.remote_lock_timeouts = 15;
  counters.remote_errors = 16;
  // The fleet's counters, each its own value, so that no two share a name in the file.
  std::uint64_t value = 17;
  for (std::uint64_t* field : {&counters.remote_wait_ms, &counters.remote_skipped, &counters.remote_corrupt,
                               &counters.remote_write_failures, &counters.remote_forbidden, &counters.remote_repairs,
                               &counters.remote_bytes_saved, &counters.process_waits, &counters.process_wait_ms,
                               &counters.lock_timeouts}) {
    *field = value++;
  }
  counters.zeroed_at = 1700000000;
  CacheCounters decoded;
  std::string problem;
  ASSERT_TRUE(detail::add_decoded_counters(detail::encode_counters(counters), decoded, problem)) << problem;
  EXPECT_EQ(detail::encode_counters(decoded), detail::encode_counters(counters));
  EXPECT_EQ(decoded.remote_unverified, 13u);
  EXPECT_EQ(decoded.remote_waits, 14u);
  EXPECT_EQ(decoded.remote_lock_timeouts, 15u);
  EXPECT_EQ(decoded.remote_errors, 16u);
  value = 17;
  for (const std::uint64_t field : {decoded.remote_wait_ms, decoded.remote_skipped, decoded.remote_corrupt,
                                    decoded.remote_write_failures, decoded.remote_forbidden, decoded.remote_repairs,
                                    decoded.remote_bytes_saved, decoded.process_waits, decoded.process_wait_ms,
                                    decoded.lock_timeouts}) {
    EXPECT_EQ(field, value++);
  }
}

// A hit its caller could not decode is taken back by drop(); when it was flushed before the
// drop, the persistent count keeps it (it was added), but a later real hit is not added on
// top of it again: the count is one hit, not two.
TEST(CacheCounters, AHitTakenBackAfterAFlushIsNotCountedTwice) {
  test::TempDir dir;
  BuildCache(test::disk_cache_at(dir.path())).put(key_of("a"), "undecodable");
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    ASSERT_EQ(cache.find(key_of("a")), "undecodable");
    EXPECT_EQ(cache.stats().disk_hits, 1u);
    cache.flush_counters();
    cache.drop(key_of("a"), "its record does not decode");
    EXPECT_EQ(cache.stats().disk_hits, 0u) << "taken back";
    cache.flush_counters();
    BuildCache(test::disk_cache_at(dir.path())).put(key_of("a"), "sound");
    ASSERT_EQ(cache.find(key_of("a")), "sound");
    EXPECT_EQ(cache.stats().disk_hits, 1u);
  }
  EXPECT_EQ(read_cache_counters(dir.path()).disk.hits, 1u);
}

TEST(CacheCounters, AShardOfAnOlderCujitReadsItsNewerCountersAsZero) {
  // Written before the remote tier's trust and lock counters existed.
  test::TempDir dir;
  fs::create_directories(dir.path() / detail::counters_directory_name);
  write_text(shard_path(dir.path(), 0), "cujit-counters 1\nbuilds 3\ncorrupt 2\n");
  const CacheCounters counters = read_cache_counters(dir.path());
  EXPECT_EQ(counters.builds, 3u);
  EXPECT_EQ(counters.corrupt_entries, 2u);
  EXPECT_EQ(counters.remote_unverified, 0u);
  EXPECT_EQ(counters.remote_errors, 0u);
  EXPECT_TRUE(counters.warnings.empty());
}

}  // namespace
}  // namespace cujit
