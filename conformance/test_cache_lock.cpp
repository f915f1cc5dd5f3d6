// One build per key across processes: the disk tier's per-key lock (cache/key_lock.hpp).
// Processes asking one cold key build it once and the others read it; a killed builder's
// lock is released by the kernel; a wait is bounded; lock files are cujit's own files,
// removed when unheld and never mistaken for anything else. Also the disk read of an entry
// as one system call (issue 15), counted through the fault seam, not timed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cache/key_lock.hpp"
#include "cujit/build_cache.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;
using test::count_files;
using test::has_warning;

CacheKey key_of(const std::string& name) { return CacheKey("lock-test").add("name", name); }

// The counts one cache_fleet_child printed.
struct ChildCounts {
  unsigned long long builds = 0, memory_hits = 0, disk_hits = 0, remote_hits = 0, process_waits = 0,
                     remote_waits = 0, lock_timeouts = 0, remote_lock_timeouts = 0;
  long correct = -1, keys = -1;
};

ChildCounts counts_of(const test::ChildResult& result) {
  ChildCounts counts;
  const std::size_t at = result.output.find("fleet builds=");
  if (at == std::string::npos) return counts;
  std::sscanf(result.output.c_str() + at,
              "fleet builds=%llu memory_hits=%llu disk_hits=%llu remote_hits=%llu process_waits=%llu "
              "remote_waits=%llu lock_timeouts=%llu remote_lock_timeouts=%llu correct=%ld keys=%ld",
              &counts.builds, &counts.memory_hits, &counts.disk_hits, &counts.remote_hits, &counts.process_waits,
              &counts.remote_waits, &counts.lock_timeouts, &counts.remote_lock_timeouts, &counts.correct,
              &counts.keys);
  return counts;
}

std::vector<std::string> fleet_child(long first, long count, long build_ms, const std::string& mark = {},
                                     bool hang = false) {
  std::vector<std::string> argv{CUJIT_FLEET_CHILD, std::to_string(first), std::to_string(count),
                                std::to_string(build_ms)};
  if (!mark.empty()) argv.push_back(mark);
  if (hang) argv.push_back("hang");
  return argv;
}

class CacheAcrossProcesses : public ::testing::Test {
 protected:
  fs::path dir() const { return temp_.path() / "cache"; }
  std::vector<std::string> environment() const { return {"CUJIT_CACHE_DIR=" + dir().string(), "CUJIT_CACHE_REMOTE="}; }
  fs::path lock_of(const CacheKey& key) const { return dir() / detail::lock_name(key.digest()); }
  test::TempDir temp_;
};

TEST(CacheLockNames, LockFileNamesAreExact) {
  const std::string key(64, 'a');
  EXPECT_EQ(detail::lock_name(key), key + ".lock");
  EXPECT_TRUE(detail::is_lock_name(key + ".lock"));
  EXPECT_FALSE(detail::is_lock_name(key + ".lock.tmp"));
  EXPECT_FALSE(detail::is_lock_name("." + key + ".lock"));
  EXPECT_FALSE(detail::is_lock_name(std::string(63, 'a') + ".lock"));
  EXPECT_FALSE(detail::is_lock_name(std::string(64, 'A') + ".lock"));  // upper case
  EXPECT_FALSE(detail::is_lock_name(std::string(64, 'g') + ".lock"));  // not hex
  EXPECT_FALSE(detail::is_lock_name(".lock"));                          // the write lock
  EXPECT_FALSE(detail::is_lock_name(key + ".entry"));
}

TEST_F(CacheAcrossProcesses, EightProcessesOnOneColdKeyBuildItOnce) {
  std::vector<std::vector<std::string>> argvs(8, fleet_child(0, 1, 300));
  const std::vector<test::ChildResult> results = test::run_children(argvs, {8, environment()});
  unsigned long long builds = 0, disk_hits = 0, waits = 0;
  for (const test::ChildResult& result : results) {
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const ChildCounts counts = counts_of(result);
    EXPECT_EQ(counts.correct, 1) << result.output;
    EXPECT_EQ(counts.lock_timeouts, 0u) << result.output;
    builds += counts.builds;
    disk_hits += counts.disk_hits;
    waits += counts.process_waits;
  }
  EXPECT_EQ(builds, 1u);
  EXPECT_EQ(disk_hits, 7u);
  std::cout << "8 processes, 1 cold key: " << builds << " build, " << waits << " waited for it\n";
  EXPECT_EQ(count_files(dir(), ".entry"), 1u);
  EXPECT_EQ(count_files(dir(), ".lock"), 0u);  // each holder removed its lock file
}

TEST_F(CacheAcrossProcesses, ManyProcessesManyKeysBuildEachKeyOnce) {
  constexpr long processes = 4, keys = 6;
  std::vector<std::vector<std::string>> argvs(processes, fleet_child(0, keys, 40));
  const std::vector<test::ChildResult> results = test::run_children(argvs, {processes, environment()});
  unsigned long long builds = 0;
  for (const test::ChildResult& result : results) {
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const ChildCounts counts = counts_of(result);
    EXPECT_EQ(counts.correct, keys) << result.output;
    builds += counts.builds;
  }
  EXPECT_EQ(builds, static_cast<unsigned long long>(keys));
  EXPECT_EQ(count_files(dir(), ".entry"), static_cast<std::size_t>(keys));
}

TEST_F(CacheAcrossProcesses, ABuilderKilledMidBuildReleasesItsLockAndAnotherBuilds) {
  const fs::path mark = temp_.path() / "building";
  test::RunningChild builder(fleet_child(0, 1, 50, mark.string(), /*hang=*/true), environment());
  for (int i = 0; i < 2000 && !fs::exists(mark); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(mark)) << "the builder never started its build";
  {  // It holds the key's lock while it builds.
    const int fd = ::open(lock_of(CacheKey("fleet-test").add("name", "key-0")).c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
    builder.kill(SIGKILL);
    EXPECT_EQ(builder.finish().exit_code, -1);
    // The kernel released it with the process.
    EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    ::close(fd);
  }
  const test::ChildResult next = test::run_children({fleet_child(0, 1, 50)}, {environment()}).front();
  ASSERT_EQ(next.exit_code, 0) << next.output;
  const ChildCounts counts = counts_of(next);
  EXPECT_EQ(counts.builds, 1u) << next.output;
  EXPECT_EQ(counts.correct, 1) << next.output;
  EXPECT_EQ(counts.lock_timeouts, 0u) << next.output;
}

TEST_F(CacheAcrossProcesses, AWaitIsBoundedThenItBuildsWithAWarning) {
  CacheConfig config = test::disk_cache_at(dir());
  config.lock_timeout = std::chrono::milliseconds(100);
  BuildCache cache(config);
  ASSERT_TRUE(cache.disk_usable());
  // Another holder (here, this process through its own descriptor) never lets go.
  detail::KeyLockResult other = detail::lock_key(fs::canonical(dir()), key_of("stuck").digest(),
                                                 std::chrono::milliseconds(0), {});
  ASSERT_TRUE(other.lock.held()) << other.problem;
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("stuck"), [] { return std::string("built anyway"); }, &source), "built anyway");
  EXPECT_EQ(source, CacheSource::built);
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.lock_timeouts, 1u);
  EXPECT_EQ(stats.process_waits, 1u);
  EXPECT_TRUE(has_warning(cache, "held its lock for more than 100 ms"));
}

TEST_F(CacheAcrossProcesses, AWaiterFindsTheHoldersEntry) {
  CacheConfig config = test::disk_cache_at(dir());
  BuildCache writer(config), waiter(config);
  ASSERT_TRUE(writer.disk_usable());
  detail::KeyLockResult held = detail::lock_key(fs::canonical(dir()), key_of("shared").digest(),
                                                std::chrono::milliseconds(0), {});
  ASSERT_TRUE(held.lock.held()) << held.problem;
  std::string got;
  CacheSource source{};
  std::thread asking([&] { got = waiter.get_or_build(key_of("shared"), [] { return std::string("not this"); }, &source); });
  writer.put(key_of("shared"), "the holder's");
  held.lock = detail::KeyLock();  // releases (and removes) it
  asking.join();
  EXPECT_EQ(got, "the holder's");
  EXPECT_EQ(source, CacheSource::disk);
  EXPECT_EQ(waiter.stats().builds, 0u);
}

TEST_F(CacheAcrossProcesses, ABuildLeavesNoLockFileAndClearSweepsOnlyUnheldOnes) {
  BuildCache cache(test::disk_cache_at(dir()));
  ASSERT_TRUE(cache.disk_usable());
  (void)cache.get_or_build(key_of("a"), [] { return std::string("a"); });
  EXPECT_EQ(count_files(dir(), ".lock"), 0u);
  // A lock file left by a builder that died, and one held by a build in flight.
  const fs::path stale = lock_of(key_of("dead builder"));
  std::ofstream(stale).put('\0');
  detail::KeyLockResult held = detail::lock_key(fs::canonical(dir()), key_of("in flight").digest(),
                                                std::chrono::milliseconds(0), {});
  ASSERT_TRUE(held.lock.held()) << held.problem;
  EXPECT_EQ(cache.clear(), 1u);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(lock_of(key_of("in flight"))));
  EXPECT_EQ(cache.stats().stale_locks_removed, 1u);
}

TEST_F(CacheAcrossProcesses, HostileALockPathThatIsNotARegularFileBuildsWithoutTheLock) {
  BuildCache cache(test::disk_cache_at(dir()));
  ASSERT_TRUE(cache.disk_usable());
  const fs::path lock = lock_of(key_of("fifo"));
  ASSERT_EQ(::mkfifo(lock.c_str(), 0600), 0);
  EXPECT_EQ(cache.get_or_build(key_of("fifo"), [] { return std::string("built"); }), "built");
  EXPECT_EQ(cache.stats().lock_failures, 1u);
  EXPECT_TRUE(has_warning(cache, "not locked across processes"));
  struct stat info {};
  ASSERT_EQ(::lstat(lock.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));  // left alone, by builds and by walks
  (void)cache.clear();
  EXPECT_EQ(::lstat(lock.c_str(), &info), 0);
}

// ---- issue 15: an entry is read with one system call --------------------------------------

class DiskCacheRead : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DiskCacheRead, OneReadPerLookupWhateverTheSize) {
  test::TempDir temp;
  const std::string payload(GetParam(), 'r');
  BuildCache(test::disk_cache_at(temp.path())).put(key_of("entry"), payload);
  int reads = 0;
  CacheConfig counting = test::disk_cache_at(temp.path());
  counting.fault = [&reads](std::string_view operation) {
    if (operation == "pread") ++reads;
    return 0;
  };
  BuildCache fresh(counting);
  CacheSource source{};
  ASSERT_EQ(fresh.find(key_of("entry"), &source), payload);
  EXPECT_EQ(source, CacheSource::disk);
  EXPECT_EQ(reads, 1);
}

INSTANTIATE_TEST_SUITE_P(Sizes, DiskCacheRead, ::testing::Values(std::size_t{0}, std::size_t{136} << 10,
                                                                  std::size_t{4} << 20),
                         [](const auto& size) { return std::to_string(size.param) + "_bytes"; });

TEST(DiskCacheReadFault, AFailedReadIsAMissAndTheBuildGoesOn) {
  test::TempDir temp;
  BuildCache(test::disk_cache_at(temp.path())).put(key_of("entry"), "stored");
  CacheConfig failing = test::disk_cache_at(temp.path());
  failing.fault = [](std::string_view operation) { return operation == "pread" ? EIO : 0; };
  BuildCache cache(failing);
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("entry"), [] { return std::string("stored"); }, &source), "stored");
  EXPECT_EQ(source, CacheSource::built);
  EXPECT_EQ(cache.stats().disk_read_failures, 2u);  // the lookup, and the look again under the lock
  EXPECT_TRUE(has_warning(cache, std::strerror(EIO)));
}

// ---- on the GPU: the case measured on the H100 ------------------------------------------

TEST(CacheFleetGpu, EightProcessesOnOneColdInt64MaxReduceKeyGiveOneBuild) {
  CUJIT_REQUIRE_DEVICE();
  test::TempDir temp;
  const std::string cache_dir = (temp.path() / "cache").string();
  std::vector<std::vector<std::string>> argvs(8, {CUJIT_REDUCE_FLEET_CHILD, cache_dir, "device"});
  const auto started = std::chrono::steady_clock::now();
  const std::vector<test::ChildResult> results = test::run_children(argvs, {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int built = 0, building_processes = 0;
  unsigned long long builds = 0, waits = 0;
  for (const test::ChildResult& result : results) {
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("reduce source="), std::string::npos) << result.output;
    if (result.output.find("reduce source=built") != std::string::npos) ++built;
    unsigned long long b = 0, w = 0;
    const std::size_t at = result.output.find("builds=");
    if (at != std::string::npos) std::sscanf(result.output.c_str() + at, "builds=%llu process_waits=%llu", &b, &w);
    builds += b;
    waits += w;
    if (b > 0) ++building_processes;
  }
  std::cout << "processes=8 processes_that_built=" << built << " builds=" << builds << " waits=" << waits
            << " wall_s=" << seconds << "\n";
  EXPECT_EQ(built, 1);
  // The one process that built made the compile and the link; no other built anything.
  EXPECT_EQ(building_processes, 1);
}

}  // namespace
}  // namespace cujit
