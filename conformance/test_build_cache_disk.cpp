// The build cache's disk tier against what else can be in (or around) its directory: files
// it did not write, things that are not regular files, temporary files of dead writers,
// directories it cannot read, parents another user controls, bursts of writers, and
// payloads their callers cannot decode.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "cache/disk_cache.hpp"
#include "cujit/build_cache.hpp"
#include "support/cache_helpers.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;
using test::has_warning;

constexpr std::uint64_t entry_overhead = 152;  // the header of an entry with a 64-digit key

CacheKey key_of(const std::string& name) { return CacheKey("disk-test").add("name", name); }
std::string digest_of(const std::string& name) { return key_of(name).digest(); }

// A key of `name` family whose digest starts with a fan-out different from `other`'s.
std::string name_in_another_fan_out(const std::string& other) {
  for (int i = 0;; ++i) {
    const std::string name = "other-" + std::to_string(i);
    if (digest_of(name).substr(0, 2) != digest_of(other).substr(0, 2)) return name;
  }
}

void set_age(const fs::path& path, std::chrono::seconds age) {
  timespec times[2]{};
  ::clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= static_cast<time_t>(age.count());
  times[1] = times[0];
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// Every regular file's bytes under `dir`, entries, temporary files and anything else.
std::uint64_t bytes_on_disk(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (!it->is_regular_file(file_ec) || file_ec) continue;
    const auto size = it->file_size(file_ec);
    if (!file_ec) total += size;
  }
  return total;
}

class DiskCacheTest : public ::testing::Test {
 protected:
  DiskCacheTest() { fs::permissions(temp.path(), fs::perms::owner_all, fs::perm_options::replace); }
  test::TempDir temp;
  fs::path dir() const { return temp.path() / "cache"; }
  CacheConfig config() const { return test::disk_cache_at(dir()); }
  fs::path entry_of(const std::string& name) const {
    const std::string digest = digest_of(name);
    return dir() / digest.substr(0, 2) / (digest + ".entry");
  }
  fs::path fan_out_of(const std::string& name) const { return dir() / digest_of(name).substr(0, 2); }
  static std::function<std::string()> constant(std::string payload) {
    return [payload] { return payload; };
  }
};

// ---- names: only what cujit wrote -------------------------------------------------------

TEST(DiskCacheNames, EntryAndTemporaryFileNamesAreExact) {
  const std::string key = std::string(62, 'a') + "0f";
  const std::string fan_out = key.substr(0, 2);
  EXPECT_EQ(detail::key_of_entry_name(fan_out, key + ".entry"), key);
  EXPECT_EQ(detail::key_of_entry_name("ab", key + ".entry"), "");                        // wrong fan-out
  EXPECT_EQ(detail::key_of_entry_name(fan_out, key.substr(1) + ".entry"), "");          // 63 digits
  EXPECT_EQ(detail::key_of_entry_name(fan_out, "A" + key.substr(1) + ".entry"), "");    // upper case
  EXPECT_EQ(detail::key_of_entry_name(fan_out, key + ".entry~"), "");
  EXPECT_EQ(detail::key_of_entry_name(fan_out, "notes.entry"), "");
  EXPECT_EQ(detail::key_of_entry_name("aaa", key + ".entry"), "");
  EXPECT_TRUE(detail::is_temp_name(fan_out, "." + key + ".1234.987654321.tmp"));
  EXPECT_FALSE(detail::is_temp_name("ab", "." + key + ".1234.987654321.tmp"));
  EXPECT_FALSE(detail::is_temp_name(fan_out, "." + key + ".1234.tmp"));
  EXPECT_FALSE(detail::is_temp_name(fan_out, "." + key + ".12x4.5.tmp"));
  EXPECT_FALSE(detail::is_temp_name(fan_out, key + ".1234.5.tmp"));
  EXPECT_FALSE(detail::is_temp_name(fan_out, ".notes.tmp"));
  EXPECT_FALSE(detail::is_temp_name(fan_out, "." + key + ".1.2.tmp.bak"));
}

// ---- 1. clear and eviction touch only cujit's files ------------------------------------

class HostileDiskCache : public DiskCacheTest {
 protected:
  // Files cujit did not write, with names close to its own; returns them.
  std::vector<fs::path> plant_user_files() {
    const std::string digest = digest_of("user");
    const std::string fan_out = digest.substr(0, 2);
    const std::string wrong_fan_out = fan_out == "00" ? "01" : "00";
    fs::create_directories(dir() / fan_out / "nested");
    fs::create_directories(dir() / wrong_fan_out);
    fs::create_directories(dir() / "notes");
    const std::vector<std::pair<fs::path, std::string>> files = {
        {dir() / "results.entry", "a user's file"},
        {dir() / fan_out / "user.entry", "a user's file"},
        {dir() / wrong_fan_out / (digest + ".entry"), detail::encode_entry(digest, "in the wrong fan-out")},
        {dir() / fan_out / "nested" / (digest + ".entry"), detail::encode_entry(digest, "nested")},
        {dir() / fan_out / (digest + ".entry"), "#!/bin/sh\necho a user's file with an entry's name\n"},
        {dir() / "notes" / (digest + ".entry"), detail::encode_entry(digest, "not a fan-out")},
        {dir() / fan_out / ".notes.tmp", "a user's temporary file"},
    };
    std::vector<fs::path> out;
    for (const auto& [path, bytes] : files) {
      std::ofstream(path, std::ios::binary) << bytes;
      set_age(path, std::chrono::hours(24));
      out.push_back(path);
    }
    // Not regular files, with entry names: never opened for reading.
    const std::string other = digest_of("fifo");
    fs::create_directories(dir() / other.substr(0, 2));
    const fs::path fifo = dir() / other.substr(0, 2) / (other + ".entry");
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    out.push_back(fifo);
    const std::string third = digest_of("zero");
    fs::create_directories(dir() / third.substr(0, 2));
    const fs::path zero = dir() / third.substr(0, 2) / (third + ".entry");
    fs::create_symlink("/dev/zero", zero);
    out.push_back(zero);
    return out;
  }
};

TEST_F(HostileDiskCache, ClearRemovesOnlyEntriesCujitWrote) {
  BuildCache cache(config());
  ASSERT_TRUE(cache.disk_usable());
  for (const char* name : {"a", "b", "c"}) (void)cache.get_or_build(key_of(name), constant(name));
  const std::vector<fs::path> planted = plant_user_files();
  EXPECT_EQ(cache.clear(), 3u);
  for (const char* name : {"a", "b", "c"}) EXPECT_FALSE(fs::exists(entry_of(name))) << name;
  for (const fs::path& path : planted) EXPECT_TRUE(fs::exists(fs::symlink_status(path))) << path;
  EXPECT_EQ(cache.clear(), 0u);
}

TEST_F(HostileDiskCache, StatsCountOnlyEntriesCujitWrote) {
  BuildCache cache(config());
  (void)cache.get_or_build(key_of("a"), constant(std::string(1000, 'a')));
  (void)plant_user_files();
  EXPECT_EQ(cache.disk_bytes(), 1000 + entry_overhead);
}

TEST_F(HostileDiskCache, EvictionRemovesOnlyEntriesCujitWrote) {
  CacheConfig small = config();
  small.max_disk_bytes = 3 * (1000 + entry_overhead);
  small.protect_recent = std::chrono::seconds(60);
  BuildCache cache(small);
  const std::vector<fs::path> planted = plant_user_files();
  for (int i = 0; i < 12; ++i) {
    const std::string name = "e" + std::to_string(i);
    (void)cache.get_or_build(key_of(name), constant(std::string(1000, 'e')));
    set_age(entry_of(name), std::chrono::minutes(30 - i));  // older than protect_recent, in order
  }
  EXPECT_EQ(cache.stats().disk_evictions, 9u);
  EXPECT_EQ(cache.stats().disk_cap_refusals, 0u);
  for (int i = 9; i < 12; ++i) EXPECT_TRUE(fs::exists(entry_of("e" + std::to_string(i)))) << i;
  for (const fs::path& path : planted) EXPECT_TRUE(fs::exists(fs::symlink_status(path))) << path;
}

// ---- 2. never anything but a regular file, never past its header -----------------------

struct NotAFile {
  const char* name;
  const char* kind;  // in the warning
  std::function<bool(const fs::path&)> make;
};

void PrintTo(const NotAFile& thing, std::ostream* out) { *out << thing.name; }

class HostileEntryPath : public DiskCacheTest, public ::testing::WithParamInterface<NotAFile> {};

// In a child with an alarm, so that a reader that blocks (a FIFO) or reads forever
// (/dev/zero) fails the test instead of hanging the suite.
TEST_P(HostileEntryPath, IsAMissWithAWarningAndACountNeverAHangOrAThrow) {
  fs::create_directories(fan_out_of("victim"));
  if (!GetParam().make(entry_of("victim"))) GTEST_SKIP() << "cannot make " << GetParam().name << " here";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::alarm(20);
    int code = 0;
    try {
      BuildCache cache(config());
      CacheSource source{};
      if (cache.get_or_build(key_of("victim"), constant("built"), &source) != "built") code |= 1;
      if (source != CacheSource::built) code |= 2;
      if (cache.stats().corrupt_entries < 1) code |= 4;  // each lookup that meets it counts
      if (!has_warning(cache, GetParam().kind)) code |= 8;
      if (cache.disk_bytes() > 1000) code |= 16;
      (void)cache.clear();
    } catch (...) {
      code |= 32;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status) << " (14: the read hung)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bits: 1 wrong payload, 2 not built, 4 not counted, 8 no warning, "
                                       "16 counted in the bytes, 32 threw";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostileEntryPath,
    ::testing::Values(
        NotAFile{"fifo", "a FIFO", [](const fs::path& p) { return ::mkfifo(p.c_str(), 0600) == 0; }},
        NotAFile{"directory", "a directory", [](const fs::path& p) { return fs::create_directory(p); }},
        NotAFile{"symlink_to_dev_zero", "a symbolic link",
                 [](const fs::path& p) {
                   fs::create_symlink("/dev/zero", p);
                   return true;
                 }},
        NotAFile{"symlink_to_a_file", "a symbolic link",
                 [](const fs::path& p) {
                   std::ofstream(p.string() + ".target") << "bytes";
                   fs::create_symlink(p.string() + ".target", p);
                   return true;
                 }},
        NotAFile{"character_device", "a character device",
                 [](const fs::path& p) { return ::mknod(p.c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0; }}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

TEST_F(HostileDiskCache, AHeaderClaimingAHugePayloadIsNeverBelieved) {
  const std::string digest = digest_of("huge");
  std::string bytes = detail::encode_entry(digest, "small payload");
  // The payload size field (after magic, version, key length and key): 2^62 bytes.
  const std::size_t at = 8 + 4 + 4 + digest.size();
  for (std::size_t i = 0; i < 8; ++i) bytes[at + i] = i == 7 ? '\x40' : '\0';
  fs::create_directories(fan_out_of("huge"));
  std::ofstream(entry_of("huge"), std::ios::binary) << bytes;
  BuildCache cache(config());
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("huge"), constant("rebuilt"), &source), "rebuilt");
  EXPECT_EQ(source, CacheSource::built);
  EXPECT_EQ(cache.stats().corrupt_entries, 1u);
  EXPECT_TRUE(has_warning(cache, "header says 4611686018427387904"));
}

// Processes sharing a directory may set different caps (CUJIT_CACHE_MAX_BYTES): one with a
// smaller cap reads no entry above it, and neither removes it nor counts it corrupt; the
// process that wrote it still hits it. Entries of sizes around the small cap.
TEST_F(HostileDiskCache, AnEntryLargerThanThisProcessesCapIsLeftAloneNotCountedCorrupt) {
  constexpr std::uint64_t small_cap = 5000;
  const std::vector<std::size_t> sizes{100, 4000, small_cap - entry_overhead, small_cap - entry_overhead + 1, 6000,
                                       50000};
  const auto name_of = [](std::size_t size) { return "sized-" + std::to_string(size); };
  {
    BuildCache big(config());
    for (std::size_t size : sizes) (void)big.get_or_build(key_of(name_of(size)), constant(std::string(size, 'b')));
  }
  CacheConfig small = config();
  small.max_disk_bytes = small_cap;
  BuildCache cache(small);
  std::uint64_t above = 0;
  for (std::size_t size : sizes) {
    const bool fits = size + entry_overhead <= small_cap;
    above += !fits;
    CacheSource source{};
    const auto found = cache.find(key_of(name_of(size)), &source);
    EXPECT_EQ(found.has_value(), fits) << size;
    if (found) {
      EXPECT_EQ(*found, std::string(size, 'b')) << size;
    }
  }
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.corrupt_entries, 0u);
  EXPECT_EQ(stats.disk_entries_skipped, above);
  EXPECT_TRUE(has_warning(cache, "larger than this process's cap"));
  for (std::size_t size : sizes) EXPECT_TRUE(fs::exists(entry_of(name_of(size)))) << size;
  // A build in the small process of an entry above its cap is not written (refused) and
  // leaves the other's entry alone.
  EXPECT_EQ(cache.get_or_build(key_of(name_of(50000)), constant(std::string(50000, 'b'))), std::string(50000, 'b'));
  EXPECT_EQ(cache.stats().disk_cap_refusals, 1u);
  BuildCache big(config());
  for (std::size_t size : sizes) {
    CacheSource source{};
    EXPECT_EQ(big.find(key_of(name_of(size)), &source), std::string(size, 'b')) << size;
    EXPECT_EQ(source, CacheSource::disk) << size;
  }
  EXPECT_EQ(big.stats().corrupt_entries, 0u);
}

// What a read may remove: only a file whose own header proves it damaged (cujit's magic and
// format version, then a key, size or checksum that does not hold). Every other file at an
// entry's name is a miss and stays; a build's write then replaces it by rename.
TEST_F(HostileDiskCache, OnlyAnEntryProvedDamagedIsRemovedByARead) {
  struct Planted {
    std::string name;
    std::function<std::string(const std::string& digest)> bytes;
    bool damaged;
    const char* warning;
  };
  const auto with_version = [](const std::string& digest, std::uint32_t version) {
    std::string bytes = detail::encode_entry(digest, "payload of another format");
    for (std::size_t i = 0; i < 4; ++i) bytes[8 + i] = static_cast<char>((version >> (8 * i)) & 0xFF);
    return bytes;
  };
  std::vector<Planted> planted{
      {"no-magic", [](const std::string&) { return std::string("user data, not an entry"); }, false, "bad magic"},
      {"empty", [](const std::string&) { return std::string(); }, false, "bad magic"},
      {"version-0", [&](const std::string& d) { return with_version(d, 0); }, false, "entry format version 0"},
      {"version-2", [&](const std::string& d) { return with_version(d, 2); }, false, "entry format version 2"},
      {"version-max", [&](const std::string& d) { return with_version(d, 0xFFFFFFFFu); }, false, "entry format version"},
      {"checksum", [](const std::string& d) {
         std::string bytes = detail::encode_entry(d, "payload");
         bytes.back() ^= 1;
         return bytes;
       }, true, "checksum mismatch"},
      {"another-key", [](const std::string&) { return detail::encode_entry(std::string(64, 'e'), "x"); }, true,
       "entry of another key"},
      {"truncated", [](const std::string& d) {
         const std::string bytes = detail::encode_entry(d, "payload cut short");
         return bytes.substr(0, bytes.size() - 4);
       }, true, "header says"},
      {"header-cut", [](const std::string& d) { return detail::encode_entry(d, "p").substr(0, 20); }, true,
       "truncated header"},
  };
  for (const Planted& file : planted) {
    fs::create_directories(fan_out_of(file.name));
    std::ofstream(entry_of(file.name), std::ios::binary) << file.bytes(digest_of(file.name));
  }
  BuildCache cache(config());
  std::uint64_t damaged = 0, skipped = 0;
  for (const Planted& file : planted) {
    EXPECT_FALSE(cache.find(key_of(file.name))) << file.name;
    EXPECT_EQ(fs::exists(entry_of(file.name)), !file.damaged) << file.name;
    EXPECT_TRUE(has_warning(cache, file.warning)) << file.name;
    damaged += file.damaged;
    skipped += file.name.rfind("version", 0) == 0;
  }
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.corrupt_entries, damaged + 2);  // the two without magic: not used, counted, left
  EXPECT_EQ(stats.disk_entries_skipped, skipped);
  // A build replaces whatever stayed.
  for (const Planted& file : planted) {
    EXPECT_EQ(cache.get_or_build(key_of(file.name), constant("rebuilt " + file.name)), "rebuilt " + file.name);
  }
  BuildCache next(config());
  for (const Planted& file : planted) EXPECT_EQ(next.find(key_of(file.name)), "rebuilt " + file.name) << file.name;
}

// write(2) past RLIMIT_FSIZE raises SIGXFSZ, whose default action ends the process: the
// cache turns it into a failed write (EFBIG), for entries and for the counter files, at
// any limit and any entry size. Each case in a child process with its own limit.
TEST_F(DiskCacheTest, AWritePastTheFileSizeLimitIsAFailedWriteNeverADeadProcess) {
  for (const rlim_t limit : {rlim_t{0}, rlim_t{1}, rlim_t{100}, rlim_t{4096}, rlim_t{65536}}) {
    for (const std::size_t size : {std::size_t{10}, std::size_t{3000}, std::size_t{100000}}) {
      const fs::path directory = temp.path() / ("limit-" + std::to_string(limit) + "-" + std::to_string(size));
      const pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        ::alarm(30);
        const rlimit file_size{limit, limit};
        if (::setrlimit(RLIMIT_FSIZE, &file_size) != 0) ::_exit(100);
        int code = 0;
        try {
          const std::string payload(size, 'p');
          {
            BuildCache cache(test::disk_cache_at(directory));
            if (cache.get_or_build(key_of("limited"), constant(payload)) != payload) code |= 1;
            const bool fits = size + entry_overhead <= limit;
            const CacheStats stats = cache.stats();
            if (fits && stats.disk_stores != 1) code |= 2;
            if (!fits && (stats.disk_write_failures != 1 || !has_warning(cache, "File too large"))) code |= 4;
            cache.flush_counters();  // a shard of a few hundred bytes: past the smaller limits too
          }
          if (test::count_files(directory, ".tmp") != 0) code |= 8;
        } catch (...) {
          code |= 16;
        }
        ::_exit(code);
      }
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      ASSERT_FALSE(WIFSIGNALED(status)) << "limit " << limit << ", payload " << size << ": killed by signal "
                                        << WTERMSIG(status) << " (" << SIGXFSZ << ": SIGXFSZ)";
      EXPECT_EQ(WEXITSTATUS(status), 0) << "limit " << limit << ", payload " << size
                                        << ": bits 1 wrong payload, 2 not stored though it fits, 4 no failed write "
                                           "counted, 8 a temporary file left, 16 threw, 100 setrlimit failed";
    }
  }
}

TEST_F(HostileDiskCache, ALockFileThatIsNotARegularFileFailsTheWriteNotTheBuild) {
  fs::create_directories(dir());
  fs::permissions(dir(), fs::perms::owner_all, fs::perm_options::replace);
  ASSERT_EQ(::mkfifo((dir() / ".lock").c_str(), 0600), 0);
  BuildCache cache(config());
  ASSERT_TRUE(cache.disk_usable());
  EXPECT_EQ(cache.get_or_build(key_of("a"), constant("built")), "built");
  EXPECT_EQ(cache.stats().disk_write_failures, 1u);
  EXPECT_TRUE(has_warning(cache, "is a FIFO"));
  EXPECT_FALSE(fs::exists(entry_of("a")));
}

// ---- 3. temporary files of dead writers --------------------------------------------------

class HostileStaleTemps : public DiskCacheTest, public ::testing::WithParamInterface<const char*> {
 protected:
  // Runs the walk the parameter names.
  void walk(BuildCache& cache) {
    const std::string operation = GetParam();
    if (operation == "stats") (void)cache.disk_bytes();
    if (operation == "clear") (void)cache.clear();
    if (operation == "eviction") (void)cache.get_or_build(key_of("new"), constant("new"));
  }
};

TEST_P(HostileStaleTemps, AreSweptAfterTheGracePeriodAndOnlyThey) {
  BuildCache cache(config());
  ASSERT_TRUE(cache.disk_usable());
  std::vector<fs::path> stale, kept;
  for (int i = 0; i < 3; ++i) {
    const std::string digest = digest_of("dead" + std::to_string(i));
    fs::create_directories(dir() / digest.substr(0, 2));
    const fs::path path = dir() / digest.substr(0, 2) / ("." + digest + ".4242." + std::to_string(i) + ".tmp");
    std::ofstream(path, std::ios::binary) << std::string(100000, 't');
    set_age(path, detail::stale_temp_age + std::chrono::minutes(1));
    stale.push_back(path);
  }
  const std::string digest = digest_of("alive");
  const std::string fan_out = digest.substr(0, 2);
  const std::string wrong = fan_out == "00" ? "01" : "00";
  fs::create_directories(dir() / fan_out);
  fs::create_directories(dir() / wrong);
  const fs::path young = dir() / fan_out / ("." + digest + ".4242.7.tmp");
  std::ofstream(young, std::ios::binary) << std::string(5000, 'y');
  kept.push_back(young);
  for (const fs::path& path : {dir() / fan_out / ".notes.tmp", dir() / wrong / ("." + digest + ".4242.8.tmp"),
                               dir() / ("." + digest + ".4242.9.tmp")}) {
    std::ofstream(path, std::ios::binary) << "a user's file";
    set_age(path, std::chrono::hours(48));
    kept.push_back(path);
  }
  walk(cache);
  for (const fs::path& path : stale) EXPECT_FALSE(fs::exists(path)) << path;
  for (const fs::path& path : kept) EXPECT_TRUE(fs::exists(path)) << path;
  EXPECT_EQ(cache.stats().stale_temps_removed, 3u);
  // The young one (a writer may be at work) is counted in the bytes, not removed.
  EXPECT_GE(cache.disk_bytes(), 5000u);
}

INSTANTIATE_TEST_SUITE_P(Walks, HostileStaleTemps, ::testing::Values("stats", "clear", "eviction"));

TEST_F(HostileDiskCache, AKilledWritersTemporaryFileIsSweptOnceStale) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CacheConfig killed = config();
    int writes = 0;
    killed.fault = [&writes](std::string_view operation) {
      if (operation == "write" && ++writes == 2) ::kill(::getpid(), SIGKILL);  // half written
      return 0;
    };
    BuildCache cache(killed);
    (void)cache.get_or_build(key_of("killed"), constant(std::string(1 << 20, 'k')));
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::vector<fs::path> temps;
  for (const auto& file : fs::directory_iterator(fan_out_of("killed"))) temps.push_back(file.path());
  ASSERT_EQ(temps.size(), 1u);
  BuildCache cache(config());
  EXPECT_GE(cache.disk_bytes(), std::uint64_t{1} << 19);  // counted while it may be a live writer's
  EXPECT_TRUE(fs::exists(temps[0]));
  set_age(temps[0], detail::stale_temp_age + std::chrono::seconds(1));
  EXPECT_EQ(cache.disk_bytes(), 0u);
  EXPECT_FALSE(fs::exists(temps[0]));
  EXPECT_EQ(cache.stats().stale_temps_removed, 1u);
  // The killed writer held the write lock: the kernel released it, the next write goes on.
  EXPECT_EQ(cache.get_or_build(key_of("killed"), constant("after")), "after");
  EXPECT_TRUE(fs::exists(entry_of("killed")));
}

// ---- 4. a directory the walk cannot read ------------------------------------------------

TEST_F(HostileDiskCache, AnUnreadableFanOutDirectoryIsSkippedAndReported) {
  const std::string blocked = "blocked", open = name_in_another_fan_out("blocked");
  const std::string blocked_fan_out = digest_of(blocked).substr(0, 2);
  CacheConfig faulty = config();
  faulty.fault = [blocked_fan_out](std::string_view operation) {
    return operation == "list:" + blocked_fan_out ? EACCES : 0;
  };
  BuildCache cache(faulty);
  (void)cache.get_or_build(key_of(blocked), constant(std::string(1000, 'b')));
  (void)cache.get_or_build(key_of(open), constant(std::string(2000, 'o')));
  const std::uint64_t walk_errors = cache.stats().disk_walk_errors;  // the writes walked too
  EXPECT_GE(walk_errors, 1u);
  EXPECT_EQ(cache.disk_bytes(), 2000 + entry_overhead);
  EXPECT_EQ(cache.stats().disk_walk_errors, walk_errors + 1);
  EXPECT_TRUE(has_warning(cache, "cannot read '" + fan_out_of(blocked).string() + "'"));
  EXPECT_EQ(cache.clear(), 1u);  // the other one
  EXPECT_TRUE(fs::exists(entry_of(blocked)));
  EXPECT_FALSE(fs::exists(entry_of(open)));
}

TEST_F(HostileDiskCache, AFanOutDirectoryWithoutPermissionIsSkippedAndReported) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not restrict root";
  const std::string blocked = "blocked", open = name_in_another_fan_out("blocked");
  BuildCache cache(config());
  (void)cache.get_or_build(key_of(blocked), constant(std::string(1000, 'b')));
  (void)cache.get_or_build(key_of(open), constant(std::string(2000, 'o')));
  fs::permissions(fan_out_of(blocked), fs::perms::none, fs::perm_options::replace);
  EXPECT_EQ(cache.disk_bytes(), 2000 + entry_overhead);
  EXPECT_TRUE(has_warning(cache, fan_out_of(blocked).string()));
  EXPECT_EQ(cache.clear(), 1u);
  fs::permissions(fan_out_of(blocked), fs::perms::owner_all, fs::perm_options::replace);
  EXPECT_TRUE(fs::exists(entry_of(blocked)));
}

// ---- 5. a payload its caller cannot decode ----------------------------------------------

TEST_F(HostileDiskCache, AnUndecodableRecordIsDroppedFromBothTiersAndRebuilt) {
  // A sound entry (its checksum matches) whose record the caller does not understand.
  {
    BuildCache writer(config());
    (void)writer.get_or_build(key_of("record"), constant("not a record this version decodes"));
  }
  BuildCache cache(config());
  const auto decode = [](const std::string& payload) -> std::optional<std::string> {
    if (payload.rfind("record:", 0) != 0) return std::nullopt;
    return payload.substr(7);
  };
  const auto build = constant("record:fresh");
  CacheSource source{};
  std::string payload = cache.get_or_build(key_of("record"), build, &source);
  EXPECT_EQ(source, CacheSource::disk);
  ASSERT_FALSE(decode(payload));
  cache.drop(key_of("record"), "its record could not be decoded");
  EXPECT_FALSE(fs::exists(entry_of("record")));
  EXPECT_EQ(cache.stats().corrupt_entries, 1u);
  EXPECT_TRUE(has_warning(cache, "its record could not be decoded"));
  payload = cache.get_or_build(key_of("record"), build, &source);
  EXPECT_EQ(source, CacheSource::built);
  EXPECT_EQ(decode(payload), "fresh");
  BuildCache later(config());
  EXPECT_EQ(decode(later.get_or_build(key_of("record"), constant("never"), &source)), "fresh");
  EXPECT_EQ(source, CacheSource::disk);
}

TEST_F(DiskCacheTest, DropOfAMemoryEntryAndOfNothing) {
  CacheConfig memory = config();
  memory.mode = CacheMode::memory;
  BuildCache cache(memory);
  (void)cache.get_or_build(key_of("m"), constant("payload"));
  EXPECT_EQ(cache.stats().memory_entries, 1u);
  cache.drop(key_of("m"), "undecodable");
  EXPECT_EQ(cache.stats().memory_entries, 0u);
  EXPECT_EQ(cache.stats().memory_bytes, 0u);
  EXPECT_FALSE(cache.find(key_of("m")));
  cache.drop(key_of("never stored"), "undecodable");  // nothing to remove: still counted
  EXPECT_EQ(cache.stats().corrupt_entries, 2u);
}

// ---- 6. the cap under bursts ------------------------------------------------------------

TEST_F(DiskCacheTest, OnlyRecentEntriesInTheWayMeansTheNewOneIsNotWritten) {
  CacheConfig small = config();
  small.max_disk_bytes = 3 * (1000 + entry_overhead);
  small.protect_recent = std::chrono::seconds(3600);
  BuildCache cache(small);
  for (int i = 0; i < 5; ++i) (void)cache.get_or_build(key_of("r" + std::to_string(i)), constant(std::string(1000, 'r')));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fs::exists(entry_of("r" + std::to_string(i)))) << i;
  for (int i = 3; i < 5; ++i) EXPECT_FALSE(fs::exists(entry_of("r" + std::to_string(i)))) << i;
  EXPECT_EQ(cache.stats().disk_evictions, 0u);
  EXPECT_EQ(cache.stats().disk_cap_refusals, 2u);
  EXPECT_TRUE(has_warning(cache, "used within the last 3600 s"));
  // Once entries are no longer recent, they make room, least recently used first.
  set_age(entry_of("r1"), std::chrono::hours(3));
  set_age(entry_of("r0"), std::chrono::hours(2));
  BuildCache later(small);  // r3 is in the first cache's memory
  CacheSource source{};
  EXPECT_EQ(later.get_or_build(key_of("r3"), constant(std::string(1000, 'r')), &source), std::string(1000, 'r'));
  EXPECT_EQ(source, CacheSource::built);
  EXPECT_TRUE(fs::exists(entry_of("r3")));
  EXPECT_FALSE(fs::exists(entry_of("r1")));
  EXPECT_TRUE(fs::exists(entry_of("r0")));
  EXPECT_EQ(later.stats().disk_evictions, 1u);
  EXPECT_LE(later.disk_bytes(), small.max_disk_bytes);
}

TEST_F(DiskCacheTest, AnEntryLargerThanTheCapIsServedNotWritten) {
  CacheConfig small = config();
  small.max_disk_bytes = 1000;
  BuildCache cache(small);
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("big"), constant(std::string(5000, 'b')), &source), std::string(5000, 'b'));
  EXPECT_EQ(cache.stats().disk_cap_refusals, 1u);
  EXPECT_FALSE(fs::exists(entry_of("big")));
  (void)cache.get_or_build(key_of("big"), constant("never"), &source);
  EXPECT_EQ(source, CacheSource::memory);
}

struct Burst {
  const char* name;
  int processes;
  int threads;
  int keys_per_thread;
  std::chrono::seconds protect_recent;
};

void PrintTo(const Burst& burst, std::ostream* out) { *out << burst.name; }

class DiskCacheBurst : public DiskCacheTest, public ::testing::WithParamInterface<Burst> {};

// Many writers of distinct keys at once, across threads and processes, against a 1 MiB
// cap: the bytes on disk (entries, temporary files, anything) stay within it, sampled
// throughout and checked at the end; every answer is right. Each sample holds the
// directory's write lock while it walks, so it is a snapshot: without the lock a walk over
// the fan-out directories can count a file evicted behind it and files written ahead of
// it, and exceed the cap by any number of entries although the cap held at every instant.
TEST_P(DiskCacheBurst, TheCapHolds) {
  const Burst burst = GetParam();
  constexpr std::uint64_t cap = 1 << 20;
  constexpr std::size_t payload_size = 64 * 1024;
  CacheConfig capped = config();
  capped.max_disk_bytes = cap;
  capped.protect_recent = burst.protect_recent;
  { BuildCache make_directory(capped); }
  const auto run_writers = [&](int process) {
    BuildCache cache(capped);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < burst.threads; ++t) {
      threads.emplace_back([&, t] {
        for (int k = 0; k < burst.keys_per_thread; ++k) {
          const std::string name = std::to_string(process) + "." + std::to_string(t) + "." + std::to_string(k);
          const std::string payload(payload_size, static_cast<char>('a' + k % 26));
          if (cache.get_or_build(key_of(name), constant(payload)) != payload) ++wrong;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    const CacheStats stats = cache.stats();
    return wrong.load() == 0 && stats.disk_write_failures == 0 ? 0 : 1;
  };
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> peak{0};
  std::vector<pid_t> children;
  for (int p = 1; p < burst.processes; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(run_writers(p));
    children.push_back(pid);
  }
  std::thread sampler([&] {
    const fs::path lock_path = dir() / detail::write_lock_name;
    while (!done) {
      const int lock = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
      if (lock >= 0 && ::flock(lock, LOCK_EX) == 0) {
        peak = std::max(peak.load(), bytes_on_disk(dir()));
        ::flock(lock, LOCK_UN);
      }
      if (lock >= 0) ::close(lock);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const int own = run_writers(0);
  for (pid_t pid : children) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer got a wrong answer or a failed write";
  }
  done = true;
  sampler.join();
  EXPECT_EQ(own, 0);
  const std::uint64_t written = std::uint64_t{1} * burst.processes * burst.threads * burst.keys_per_thread *
                                (payload_size + entry_overhead);
  const std::uint64_t final_bytes = bytes_on_disk(dir());
  std::cout << "burst " << burst.name << ": " << burst.processes << " processes x " << burst.threads
            << " threads, " << written << " bytes offered, cap " << cap << ", peak sampled " << peak.load()
            << ", final " << final_bytes << "\n";
  RecordProperty("peak_bytes", std::to_string(peak.load()));
  EXPECT_GT(peak.load(), 0u);  // the sampler saw the directory
  EXPECT_LE(peak.load(), cap);
  EXPECT_LE(final_bytes, cap);
  EXPECT_GT(final_bytes, cap / 2);  // the cache was used, not just refused
}

INSTANTIATE_TEST_SUITE_P(
    Writers, DiskCacheBurst,
    ::testing::Values(Burst{"threads_protected", 1, 16, 8, std::chrono::seconds(300)},
                      Burst{"threads_evicting", 1, 16, 8, std::chrono::seconds(0)},
                      Burst{"processes_protected", 8, 4, 6, std::chrono::seconds(300)},
                      Burst{"processes_evicting", 8, 4, 6, std::chrono::seconds(0)}),
    [](const auto& test_case) { return std::string(test_case.param.name); });

// ---- 7. parents another user could use to swap the directory -----------------------------

class HostileCacheParents : public DiskCacheTest {};

TEST_F(HostileCacheParents, AWorldWritableParentWithoutTheStickyBitIsRefused) {
  const fs::path open = temp.path() / "open";
  fs::create_directories(open);
  fs::permissions(open, fs::perms::all, fs::perm_options::replace);
  BuildCache cache(test::disk_cache_at(open / "cache"));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "'" + open.string() + "' is writable by others without the sticky bit"));
  EXPECT_EQ(cache.get_or_build(key_of("a"), constant("built anyway")), "built anyway");
  // The same with the sticky bit (as /tmp): nobody else can rename the directory away.
  fs::permissions(open, fs::perms::all | fs::perms::sticky_bit, fs::perm_options::replace);
  BuildCache sticky(test::disk_cache_at(open / "cache"));
  EXPECT_TRUE(sticky.disk_usable()) << (sticky.warnings().empty() ? "" : sticky.warnings()[0]);
}

TEST_F(HostileCacheParents, AGroupWritableGrandparentIsRefused) {
  const fs::path shared = temp.path() / "shared";
  fs::create_directories(shared / "mine");
  fs::permissions(shared, fs::perms::owner_all | fs::perms::group_all, fs::perm_options::replace);
  BuildCache cache(test::disk_cache_at(shared / "mine" / "cache"));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "'" + shared.string() + "' is writable by its group without the sticky bit"));
  EXPECT_TRUE(has_warning(cache, (shared / "mine" / "cache").string()));  // names the directory
}

TEST_F(HostileCacheParents, AParentOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  const fs::path theirs = temp.path() / "theirs";
  fs::create_directories(theirs);
  fs::permissions(theirs, fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec,
                  fs::perm_options::replace);
  BuildCache make(test::disk_cache_at(theirs / "cache"));  // created while ours
  ASSERT_TRUE(make.disk_usable());
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  BuildCache cache(test::disk_cache_at(theirs / "cache"));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "'" + theirs.string() + "' is owned by user 65534"));
}

TEST_F(HostileCacheParents, ASymbolicLinkIsCheckedWhereItLeads) {
  const fs::path open = temp.path() / "open";
  fs::create_directories(open);
  fs::permissions(open, fs::perms::all, fs::perm_options::replace);
  fs::create_directory_symlink(open, temp.path() / "link");
  BuildCache cache(test::disk_cache_at(temp.path() / "link" / "cache"));
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "'" + open.string() + "' is writable by others"));
}

TEST_F(HostileCacheParents, NoDirectoryIsNotTheWorkingDirectory) {
  CacheConfig none = config();
  none.directory.clear();
  BuildCache cache(none);
  EXPECT_FALSE(cache.disk_usable());
  EXPECT_TRUE(has_warning(cache, "no cache directory"));
}

TEST_F(HostileCacheParents, MissingParentsAreCreatedPrivate) {
  BuildCache cache(test::disk_cache_at(temp.path() / "a" / "b" / "cache"));
  ASSERT_TRUE(cache.disk_usable()) << (cache.warnings().empty() ? "" : cache.warnings()[0]);
  for (const fs::path& made : {temp.path() / "a", temp.path() / "a" / "b", temp.path() / "a" / "b" / "cache"}) {
    struct stat info {};
    ASSERT_EQ(::stat(made.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u) << made;
  }
}

}  // namespace
}  // namespace cujit
