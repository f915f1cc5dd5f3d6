// The path of a build that the disk cache answers in a new process (issue 15): every CUDA
// C++ input is looked up before any thread or worker could start, so a warm build of a
// kernel with several sources and NRT starts neither, maps neither NVRTC nor nvJitLink,
// opens each entry it needs once and writes none. Misses still compile side by side.
// No timings here: bench_jit's kernel_link/<scenario>/disk_hit_new_process measures it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "compile/compile_batch.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/nrt.hpp"
#include "support/cache_helpers.hpp"
#include "support/concurrently.hpp"
#include "support/fixtures.hpp"
#include "support/unique_fd.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

// A kernel that allocates with NRT (so NRT is linked by detection) and calls device
// functions defined by two more CUDA C++ inputs. `tag` makes its keys this test's own.
std::vector<LinkableCode> sources(const std::string& tag) {
  const std::string own = "#include \"cujit/nrt.cuh\"\n"
                          "extern \"C\" __device__ int hit_add(int a, int b);\n"
                          "extern \"C\" __device__ int hit_mul(int a, int b);\n"
                          "extern \"C\" __global__ void hit_kernel(int* out) {  // " + tag + "\n"
                          "  int* raw = static_cast<int*>(NRT_Allocate(sizeof(int)));\n"
                          "  out[0] = hit_add(hit_mul(out[0], 2), raw == nullptr ? 0 : 1);\n"
                          "  NRT_Free(raw);\n"
                          "}\n";
  return {LinkableCode::from_bytes(Format::cu, own, "hit_kernel.cu"),
          LinkableCode::from_bytes(Format::cu, "extern \"C\" __device__ int hit_add(int a, int b) { return a + b; }  // " + tag + "\n", "hit_add.cu"),
          LinkableCode::from_bytes(Format::cu, "extern \"C\" __device__ int hit_mul(int a, int b) { return a * b; }  // " + tag + "\n", "hit_mul.cu")};
}

std::shared_ptr<const LinkedKernel> build(BuildCache& cache, const std::string& tag) {
  KernelOptions options;
  options.link.arch = Arch::parse("sm_90");
  options.link.backend = LinkerBackend::nvjitlink;
  options.nrt = true;
  KernelBuilder builder("hit_kernel", options, cache);
  const std::vector<LinkableCode> inputs = sources(tag);
  builder.source(inputs[0]);
  builder.link(inputs[1]);
  builder.link(inputs[2]);
  return builder.link_shared();
}

// Whether a file whose name starts with `prefix` is mapped into this process.
bool mapped(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    if (line.substr(line.rfind('/') + 1).rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Fills `directory` with the build in a forked child, so that this process loads neither
// NVRTC nor nvJitLink. The child compiles in-process (no compile worker to find).
::testing::AssertionResult fill_in_child(const fs::path& directory, const std::string& tag) {
  const pid_t child = ::fork();
  if (child < 0) return ::testing::AssertionFailure() << "fork failed";
  if (child == 0) {
    int code = 1;
    try {
      ::setenv("CUJIT_COMPILE_IN_PROCESS", "1", 1);
      BuildCache cache(test::disk_cache_at(directory));
      code = build(cache, tag)->source == CacheSource::built ? 0 : 2;
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return ::testing::AssertionFailure() << "waitpid failed";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return ::testing::AssertionFailure() << "the child that fills the cache failed (status " << status << ")";
  }
  return ::testing::AssertionSuccess();
}

// Entries of the disk tier, by file name, with their fan-out directory.
std::map<std::string, fs::path> entries(const fs::path& directory) {
  std::map<std::string, fs::path> found;
  for (const fs::directory_entry& item : fs::recursive_directory_iterator(directory)) {
    if (item.path().extension() == ".entry") found.emplace(item.path().filename().string(), item.path());
  }
  return found;
}

// Events by file name, then by kind (an inotify mask bit).
using Seen = std::map<std::string, std::map<std::uint32_t, int>>;

// What happened to the files of the watched directories, by name: inotify, so that nothing
// in libcujit has to count.
class FileEvents {
 public:
  explicit FileEvents(const std::map<std::string, fs::path>& files)
      : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    for (const auto& [name, path] : files) {
      if (fd_) ::inotify_add_watch(fd_.get(), path.parent_path().c_str(), IN_OPEN | IN_ATTRIB | IN_MODIFY | IN_CREATE);
    }
  }
  bool usable() const { return static_cast<bool>(fd_); }
  // Events so far: name -> mask bit -> count.
  Seen read() {
    alignas(inotify_event) char buffer[64 * (sizeof(inotify_event) + NAME_MAX + 1)];
    for (;;) {
      const ssize_t got = ::read(fd_.get(), buffer, sizeof buffer);
      if (got <= 0) break;
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if (event->len > 0) {
          for (std::uint32_t bit : {IN_OPEN, IN_ATTRIB, IN_MODIFY, IN_CREATE}) {
            if ((event->mask & bit) != 0) ++seen_[event->name][bit];
          }
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return seen_;
  }

 private:
  detail::UniqueFd fd_;
  Seen seen_;
};

// How many events of kind `bit` the file `name` had.
int times(const Seen& seen, const std::string& name, std::uint32_t bit) {
  const auto file = seen.find(name);
  if (file == seen.end()) return 0;
  const auto counted = file->second.find(bit);
  return counted == file->second.end() ? 0 : counted->second;
}

class DiskHitPath : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(mapped("libnvrtc.")) << "this test process loaded NVRTC before the test: nothing to learn";
    ASSERT_TRUE(fill_in_child(dir_.path() / "cache", tag_));
  }
  fs::path cache_dir() const { return dir_.path() / "cache"; }

  // Builds from the disk cache `processes` times, each with a cache of its own (as that many
  // processes would), and puts in `seen` what happened meanwhile to the `stored` entries.
  void watch_disk_hits(const std::map<std::string, fs::path>& stored, int processes, Seen& seen) {
    FileEvents events(stored);
    ASSERT_TRUE(events.usable()) << "inotify: " << std::strerror(errno);
    for (int process = 0; process < processes; ++process) {
      BuildCache cache(test::disk_cache_at(cache_dir()));
      EXPECT_EQ(build(cache, tag_)->source, CacheSource::disk) << "process " << process;
    }
    seen = events.read();
  }

  test::TempDir dir_;
  const std::string tag_ = std::to_string(::getpid());
};

TEST_F(DiskHitPath, AWarmBuildOfSeveralSourcesStartsNoThreadNoWorkerAndLoadsNoVendorLibrary) {
  const std::size_t threads = detail::threads_started();
  const std::size_t batches = detail::CompileBatch::formed();
  BuildCache cache(test::disk_cache_at(cache_dir()));
  const auto linked = build(cache, tag_);
  EXPECT_EQ(linked->source, CacheSource::disk);
  EXPECT_TRUE(linked->nrt.link) << "NRT was detected and linked";
  EXPECT_EQ(detail::threads_started(), threads) << "every input hit: no thread to start";
  EXPECT_EQ(detail::CompileBatch::formed(), batches) << "every input hit: no batch, so no worker";
  EXPECT_FALSE(mapped("libnvrtc.")) << "a warm-cache build never loads NVRTC (NRT library included)";
  EXPECT_FALSE(mapped("libnvJitLink.")) << "a warm-cache build never loads nvJitLink";
  EXPECT_EQ(cache.stats().builds, 0u);
}

TEST_F(DiskHitPath, AWarmBuildOpensEachEntryOnceAndWritesNone) {
  const std::map<std::string, fs::path> stored = entries(cache_dir());
  // The kernel's source, its two inputs and the NRT library (a result each), and the link.
  ASSERT_EQ(stored.size(), 5u);
  Seen seen;
  ASSERT_NO_FATAL_FAILURE(watch_disk_hits(stored, 1, seen));
  for (const auto& [name, path] : stored) {
    EXPECT_EQ(times(seen, name, IN_OPEN), 1) << name << ": opened once";
    // Written moments ago: within the LRU grain, a hit leaves its time alone.
    EXPECT_EQ(times(seen, name, IN_ATTRIB), 0) << name << " had its time moved";
    EXPECT_EQ(times(seen, name, IN_MODIFY), 0) << name << " was written";
  }
  for (const auto& file : seen) EXPECT_EQ(times(seen, file.first, IN_CREATE), 0) << file.first << " was created";
}

TEST_F(DiskHitPath, AnEntryUsedLongAgoHasItsTimeMovedByTheFirstHitOnly) {
  const std::map<std::string, fs::path> stored = entries(cache_dir());
  timespec old[2]{};
  ::clock_gettime(CLOCK_REALTIME, &old[0]);
  old[0].tv_sec -= 2 * 3600;
  old[1] = old[0];
  for (const auto& [name, path] : stored) ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), old, 0), 0) << path;
  Seen seen;
  ASSERT_NO_FATAL_FAILURE(watch_disk_hits(stored, 2, seen));
  for (const auto& [name, path] : stored) {
    EXPECT_EQ(times(seen, name, IN_OPEN), 2) << name << ": opened once by each cache";
    EXPECT_EQ(times(seen, name, IN_ATTRIB), 1) << name << ": its time moved by the first hit only";
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_GT(info.st_mtim.tv_sec, old[0].tv_sec + 3600) << name << ": the LRU clock did not move";
  }
}

// The lookup that runs before any thread: what compile_cached stored, found without
// compiling; a miss counts nothing (the compile that follows counts it).
TEST_F(DiskHitPath, TheLookupBeforeTheThreadsFindsWhatACompileStoredAndCountsNoMiss) {
  BuildCache cache(test::disk_cache_at(cache_dir()));
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  const Program absent("extern \"C\" __global__ void absent_" + tag_ + "() {}\n", "absent.cu");
  EXPECT_FALSE(detail::find_compiled(absent, options, cache));
  EXPECT_EQ(cache.stats().disk_misses, 0u);
  EXPECT_EQ(cache.stats().memory_misses, 0u);
  BuildCache off([] {
    CacheConfig config;
    config.mode = CacheMode::off;
    return config;
  }());
  EXPECT_FALSE(detail::find_compiled(absent, options, off));
}

// Without the fork: this one compiles here.
TEST(DiskHitPathMisses, OnlyTheMissesCompileAndTwoOfThemCompileSideBySide) {
  ::setenv("CUJIT_COMPILE_IN_PROCESS", "1", 1);
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread: nothing runs side by side";
  const test::TempDir dir;
  const std::string tag = std::to_string(::getpid());
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    EXPECT_EQ(build(cache, tag)->source, CacheSource::built);
  }
  // One external input changed: the only miss compiles on the calling thread.
  std::vector<LinkableCode> inputs = sources(tag);
  const auto changed = [&](const std::string& name, const std::string& body) {
    return LinkableCode::from_bytes(Format::cu, "extern \"C\" __device__ int " + name + "(int a, int b) { " + body +
                                                    " }  // " + tag + "\n", name + ".cu");
  };
  inputs[1] = changed("hit_add", "return a + b + 1;");
  const auto link_with = [&](BuildCache& cache, const std::vector<LinkableCode>& codes) {
    KernelOptions options;
    options.link.arch = Arch::parse("sm_90");
    options.link.backend = LinkerBackend::nvjitlink;
    options.nrt = true;
    KernelBuilder builder("hit_kernel", options, cache);
    builder.source(codes[0]);
    builder.link(codes[1]);
    builder.link(codes[2]);
    return builder.link_shared();
  };
  std::size_t threads = detail::threads_started();
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    EXPECT_EQ(link_with(cache, inputs)->source, CacheSource::built);
    EXPECT_EQ(cache.stats().builds, 2u) << "the changed input and the link";
  }
  EXPECT_EQ(detail::threads_started(), threads) << "one miss compiles where it is";
  // Both external inputs changed: two misses, side by side.
  inputs[1] = changed("hit_add", "return a + b + 2;");
  inputs[2] = changed("hit_mul", "return a * b + 2;");
  threads = detail::threads_started();
  const std::size_t batches = detail::CompileBatch::formed();
  {
    BuildCache cache(test::disk_cache_at(dir.path()));
    EXPECT_EQ(link_with(cache, inputs)->source, CacheSource::built);
  }
  EXPECT_GT(detail::threads_started(), threads);
  EXPECT_EQ(detail::CompileBatch::formed(), batches + 1);
}

}  // namespace
}  // namespace cujit
