// The build cache: tiers, eviction, bad entries, unusable directories, concurrency.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "cujit/build_cache.hpp"
#include "support/cache_helpers.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;

CacheConfig disk_config(const fs::path& dir) { return test::disk_cache_at(dir); }

CacheKey key_of(const std::string& name) { return CacheKey("test").add("name", name); }

std::vector<fs::path> files_under(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == extension) out.push_back(it->path());
  }
  return out;
}

using test::has_warning;

class BuildCacheTest : public ::testing::Test {
 protected:
  // Private whatever the umask: a group-writable parent would keep the disk tier off.
  BuildCacheTest() { fs::permissions(temp.path(), fs::perms::owner_all, fs::perm_options::replace); }
  test::TempDir temp;
  fs::path dir() const { return temp.path() / "cache"; }
  int builds = 0;
  std::function<std::string()> builder(const std::string& payload) {
    return [this, payload] {
      ++builds;
      return payload;
    };
  }
};

TEST_F(BuildCacheTest, MemoryThenDiskInAFreshCacheObject) {
  {
    BuildCache cache(disk_config(dir()));
    ASSERT_TRUE(cache.disk_usable()) << (cache.warnings().empty() ? "" : cache.warnings()[0]);
    CacheSource source{};
    EXPECT_EQ(cache.get_or_build(key_of("a"), builder("payload-a"), &source), "payload-a");
    EXPECT_EQ(source, CacheSource::built);
    EXPECT_EQ(cache.get_or_build(key_of("a"), builder("other"), &source), "payload-a");
    EXPECT_EQ(source, CacheSource::memory);
    const CacheStats stats = cache.stats();
    EXPECT_EQ(stats.builds, 1u);
    EXPECT_EQ(stats.memory_hits, 1u);
    EXPECT_EQ(stats.misses, 1u);
  }
  BuildCache fresh(disk_config(dir()));
  CacheSource source{};
  EXPECT_EQ(fresh.get_or_build(key_of("a"), builder("other"), &source), "payload-a");
  EXPECT_EQ(source, CacheSource::disk);
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
  EXPECT_EQ(builds, 1);
}

TEST_F(BuildCacheTest, DirectoryIsCreatedPrivate) {
  BuildCache cache(disk_config(dir()));
  struct stat info {};
  ASSERT_EQ(::stat(dir().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  (void)cache.get_or_build(key_of("x"), builder("x"));
  const auto entries = files_under(dir(), ".entry");
  ASSERT_EQ(entries.size(), 1u);
  // Fan-out: <dir>/<first two hex digits>/<key>.entry
  EXPECT_EQ(entries[0].parent_path().filename().string(), key_of("x").digest().substr(0, 2));
}

TEST_F(BuildCacheTest, ModesOffAndMemory) {
  CacheConfig off = disk_config(dir());
  off.mode = CacheMode::off;
  BuildCache none(off);
  (void)none.get_or_build(key_of("a"), builder("a"));
  (void)none.get_or_build(key_of("a"), builder("a"));
  EXPECT_EQ(builds, 2);
  EXPECT_FALSE(fs::exists(dir()));
  CacheConfig memory = disk_config(dir());
  memory.mode = CacheMode::memory;
  BuildCache in_memory(memory);
  (void)in_memory.get_or_build(key_of("a"), builder("a"));
  (void)in_memory.get_or_build(key_of("a"), builder("a"));
  EXPECT_EQ(builds, 3);
  EXPECT_FALSE(fs::exists(dir()));
}

TEST_F(BuildCacheTest, MemoryTierEvictsLeastRecentlyUsedByBytes) {
  CacheConfig config = disk_config(dir());
  config.mode = CacheMode::memory;
  config.max_memory_bytes = 250;
  BuildCache cache(config);
  (void)cache.get_or_build(key_of("a"), builder(std::string(100, 'a')));
  (void)cache.get_or_build(key_of("b"), builder(std::string(100, 'b')));
  (void)cache.get_or_build(key_of("a"), builder("unused"));  // a is now most recent
  (void)cache.get_or_build(key_of("c"), builder(std::string(100, 'c')));  // evicts b
  EXPECT_EQ(cache.stats().memory_evictions, 1u);
  EXPECT_LE(cache.stats().memory_bytes, 250u);
  CacheSource source{};
  (void)cache.get_or_build(key_of("a"), builder("rebuilt"), &source);
  EXPECT_EQ(source, CacheSource::memory);
  (void)cache.get_or_build(key_of("b"), builder("rebuilt"), &source);
  EXPECT_EQ(source, CacheSource::built);
  // Larger than the whole tier: served, not kept.
  (void)cache.get_or_build(key_of("huge"), builder(std::string(1000, 'h')), &source);
  (void)cache.get_or_build(key_of("huge"), builder(std::string(1000, 'h')), &source);
  EXPECT_EQ(source, CacheSource::built);
}

TEST_F(BuildCacheTest, DiskTierEvictsOldestButSparesRecentEntries) {
  CacheConfig config = disk_config(dir());
  config.max_disk_bytes = 2500;
  config.protect_recent = std::chrono::seconds(0);
  {
    BuildCache cache(config);
    for (int i = 0; i < 4; ++i) {
      (void)cache.get_or_build(key_of("e" + std::to_string(i)), builder(std::string(1000, 'x')));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct LRU times
    }
    EXPECT_GE(cache.stats().disk_evictions, 2u);
    EXPECT_LE(cache.disk_bytes(), 2500u);
    EXPECT_TRUE(fs::exists(fs::path(dir()) / key_of("e3").digest().substr(0, 2) /
                           (key_of("e3").digest() + ".entry")));
  }
  config.protect_recent = std::chrono::seconds(3600);
  BuildCache protective(config);
  for (int i = 4; i < 8; ++i) {
    (void)protective.get_or_build(key_of("e" + std::to_string(i)), builder(std::string(1000, 'y')));
  }
  EXPECT_EQ(protective.stats().disk_evictions, 0u);  // everything was used within the hour
}

// ---- bad entries ---------------------------------------------------------------------

// What a read can prove about the file (docs/cache.md, "Reading"): only a damaged entry
// of cujit's is removed; a file without cujit's magic, or an entry of another format
// version, is a miss left in place (a build's write replaces it).
enum class Proof { damaged, not_cujits, other_version };

struct Corruption {
  const char* name;
  std::function<void(std::string&)> apply;
  Proof proof = Proof::damaged;
};

void PrintTo(const Corruption& corruption, std::ostream* out) { *out << corruption.name; }

class BadEntry : public BuildCacheTest, public ::testing::WithParamInterface<Corruption> {};

TEST_P(BadEntry, IsAMissCountedAndRebuiltRemovedOnlyWhenProvedDamaged) {
  const CacheKey key = key_of("victim");
  fs::path entry;
  {
    BuildCache cache(disk_config(dir()));
    (void)cache.get_or_build(key, builder("the payload"));
    entry = files_under(dir(), ".entry").at(0);
  }
  std::string bytes = test::read_bytes(entry);
  GetParam().apply(bytes);
  { std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes; }
  BuildCache cache(disk_config(dir()));
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key, builder("the payload"), &source), "the payload");
  EXPECT_EQ(source, CacheSource::built);
  switch (GetParam().proof) {
    case Proof::damaged:
      EXPECT_EQ(cache.stats().corrupt_entries, 1u);
      EXPECT_TRUE(has_warning(cache, "dropped")) << GetParam().name;
      break;
    case Proof::not_cujits:
      EXPECT_GE(cache.stats().corrupt_entries, 1u);  // each lookup that meets it
      EXPECT_TRUE(has_warning(cache, "not an entry cujit wrote: left alone")) << GetParam().name;
      break;
    case Proof::other_version:
      EXPECT_EQ(cache.stats().corrupt_entries, 0u);
      EXPECT_GE(cache.stats().disk_entries_skipped, 1u);
      EXPECT_TRUE(has_warning(cache, "another cujit's")) << GetParam().name;
      break;
  }
  // Rebuilt (the write replaced whatever stayed) and valid again.
  BuildCache again(disk_config(dir()));
  EXPECT_EQ(again.get_or_build(key, builder("never"), &source), "the payload");
  EXPECT_EQ(source, CacheSource::disk);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadEntry,
    ::testing::Values(
        Corruption{
            "truncated_payload", [](std::string& b) { b.resize(b.size() - 3); }},
        Corruption{
            "truncated_header", [](std::string& b) { b.resize(20); }},
        Corruption{
            "empty", [](std::string& b) { b.clear(); }, Proof::not_cujits},
        Corruption{
            "flipped_header_bit", [](std::string& b) { b[10] = static_cast<char>(b[10] ^ 0x04); },
            Proof::other_version},
        Corruption{
            "flipped_payload_bit", [](std::string& b) { b.back() = static_cast<char>(b.back() ^ 0x01); }},
        Corruption{
            "flipped_checksum", [](std::string& b) { b[b.size() - 20] ^= 0x01; }},
        Corruption{
            "foreign_file", [](std::string& b) { b = "#!/bin/sh\necho another program's file\n"; },
            Proof::not_cujits},
        Corruption{
            "older_schema", [](std::string& b) { b[8] = 0; }, Proof::other_version},
        Corruption{
            "another_keys_entry", [](std::string& b) { b[20] = b[20] == 'a' ? 'b' : 'a'; }}),
    [](const auto& entry_case) { return std::string(entry_case.param.name); });

// ---- unusable directories: the build always succeeds -----------------------------------

TEST_F(BuildCacheTest, GroupWritableDirectoryIsNotUsed) {
  fs::create_directories(dir());
  fs::permissions(dir(), fs::perms::all);
  BuildCache cache(disk_config(dir()));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "writable by group or others"));
  EXPECT_EQ(cache.get_or_build(key_of("a"), builder("built anyway")), "built anyway");
}

TEST_F(BuildCacheTest, DirectoryOfAnotherUserIsNotUsed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the directory to another user";
  fs::create_directories(dir());
  fs::permissions(dir(), fs::perms::owner_all, fs::perm_options::replace);
  ASSERT_EQ(::chown(dir().c_str(), 65534, 65534), 0);
  BuildCache cache(disk_config(dir()));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "owned by user 65534"));
  EXPECT_EQ(cache.get_or_build(key_of("a"), builder("built anyway")), "built anyway");
}

TEST_F(BuildCacheTest, ReadOnlyDirectoryIsNotUsed) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not restrict root";
  fs::create_directories(dir());
  fs::permissions(dir(), fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
  BuildCache cache(disk_config(dir()));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_EQ(cache.get_or_build(key_of("a"), builder("built anyway")), "built anyway");
  fs::permissions(dir(), fs::perms::owner_all, fs::perm_options::replace);
}

TEST_F(BuildCacheTest, PathThatIsAFileIsNotUsed) {
  temp.write("cache", "not a directory");
  BuildCache cache(disk_config(dir()));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "not a directory"));
  EXPECT_EQ(cache.get_or_build(key_of("a"), builder("built anyway")), "built anyway");
}

TEST_F(BuildCacheTest, DirectoryRemovedWhileInUse) {
  BuildCache cache(disk_config(dir()));
  ASSERT_TRUE(cache.disk_usable());
  fs::remove_all(dir());
  EXPECT_EQ(cache.get_or_build(key_of("a"), builder("built anyway")), "built anyway");
  EXPECT_EQ(cache.stats().disk_write_failures, 1u);
  EXPECT_TRUE(has_warning(cache, "not written"));
}

TEST_F(BuildCacheTest, UnwritableFanOutDirectory) {
  BuildCache cache(disk_config(dir()));
  // The fan-out directory for this key is a file: the write fails, the build does not.
  temp.write("cache/" + key_of("a").digest().substr(0, 2), "in the way");
  EXPECT_EQ(cache.get_or_build(key_of("a"), builder("built anyway")), "built anyway");
  EXPECT_EQ(cache.stats().disk_write_failures, 1u);
  // The memory tier still has it.
  CacheSource source{};
  (void)cache.get_or_build(key_of("a"), builder("never"), &source);
  EXPECT_EQ(source, CacheSource::memory);
}

TEST_F(BuildCacheTest, EnvironmentConfiguration) {
  ::setenv("CUJIT_CACHE", "memory", 1);
  ::setenv("CUJIT_CACHE_DIR", dir().c_str(), 1);
  ::setenv("CUJIT_CACHE_MAX_BYTES", "12345", 1);
  ::setenv("CUJIT_CACHE_MEMORY_BYTES", "678", 1);
  CacheConfig config = CacheConfig::from_environment();
  EXPECT_EQ(config.mode, CacheMode::memory);
  EXPECT_EQ(config.directory, dir());
  EXPECT_EQ(config.max_disk_bytes, 12345u);
  EXPECT_EQ(config.max_memory_bytes, 678u);
  EXPECT_TRUE(config.warnings.empty());
  // Values outside the documented sets are usage errors naming the variable, never a
  // silent default.
  ::setenv("CUJIT_CACHE_MEMORY_BYTES", "lots", 1);
  CUJIT_EXPECT_ERROR((void)CacheConfig::from_environment(), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("CUJIT_CACHE_MEMORY_BYTES='lots'"),
                               std::string::npos););
  ::setenv("CUJIT_CACHE_MEMORY_BYTES", "678", 1);
  ::setenv("CUJIT_CACHE", "sometimes", 1);
  CUJIT_EXPECT_ERROR((void)CacheConfig::from_environment(), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("CUJIT_CACHE='sometimes'"), std::string::npos););
  ::unsetenv("CUJIT_CACHE");
  ::unsetenv("CUJIT_CACHE_DIR");
  ::unsetenv("CUJIT_CACHE_MAX_BYTES");
  ::unsetenv("CUJIT_CACHE_MEMORY_BYTES");
  const std::string xdg = temp.path().string() + "/xdg";
  ::setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
  EXPECT_EQ(CacheConfig::from_environment().directory, fs::path(xdg) / "cujit");
  ::unsetenv("XDG_CACHE_HOME");
}

// ---- concurrency ---------------------------------------------------------------------

TEST_F(BuildCacheTest, ThreadsRacingOnOneKeyShareOneBuild) {
  BuildCache cache(disk_config(dir()));
  std::atomic<int> calls{0};
  auto slow = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return std::string("shared");
  };
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { results[static_cast<std::size_t>(i)] = cache.get_or_build(key_of("race"), slow); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const std::string& result : results) EXPECT_EQ(result, "shared");
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.builds, 1u);
  EXPECT_EQ(stats.waits + stats.memory_hits, 7u);
}

TEST_F(BuildCacheTest, AFailingBuildReachesEveryWaiterAndStoresNothing) {
  BuildCache cache(disk_config(dir()));
  auto failing = []() -> std::string {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    throw std::runtime_error("build failed");
  };
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      try {
        (void)cache.get_or_build(key_of("fails"), failing);
      } catch (const std::runtime_error&) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 4);
  EXPECT_TRUE(files_under(dir(), ".entry").empty());
  EXPECT_EQ(cache.get_or_build(key_of("fails"), builder("now it works")), "now it works");
}

TEST_F(BuildCacheTest, ProcessesBuildingOneKeyAtOnceLeaveOneValidEntry) {
  const CacheKey key = key_of("processes");
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      BuildCache cache(disk_config(dir()));
      const std::string payload = cache.get_or_build(key, [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return std::string(100000, 'p');
      });
      ::_exit(payload == std::string(100000, 'p') ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(files_under(dir(), ".entry").size(), 1u);
  EXPECT_TRUE(files_under(dir(), ".tmp").empty());
  BuildCache reader(disk_config(dir()));
  CacheSource source{};
  EXPECT_EQ(reader.get_or_build(key, builder("never"), &source), std::string(100000, 'p'));
  EXPECT_EQ(source, CacheSource::disk);
}

TEST_F(BuildCacheTest, ClearEmptiesBothTiers) {
  BuildCache cache(disk_config(dir()));
  (void)cache.get_or_build(key_of("a"), builder("a"));
  (void)cache.get_or_build(key_of("b"), builder("b"));
  EXPECT_EQ(cache.clear(), 2u);
  EXPECT_EQ(cache.stats().memory_entries, 0u);
  CacheSource source{};
  (void)cache.get_or_build(key_of("a"), builder("a"), &source);
  EXPECT_EQ(source, CacheSource::built);
}

}  // namespace
}  // namespace cujit
