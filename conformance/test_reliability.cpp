// Reliability: no handle outlives an error path; the cache loses nothing and answers
// correctly under injected and real faults, a writer killed mid-entry, and many
// processes and threads at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "cujit/abi.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/diagnostics.hpp"
#include "cujit/graph.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "support/cache_helpers.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;

// ---- handles -------------------------------------------------------------------------

template <class Work>
void expect_no_leak(const char* what, Work work) {
  const LiveHandles before = live_handles();
  try {
    work();
    ADD_FAILURE() << what << " did not fail";
  } catch (const Error&) {
  }
  EXPECT_EQ(live_handles(), before) << what << " left a handle behind";
}

TEST(Handles, NoneOutlivesACompileOrLinkError) {
  expect_no_leak("NVRTC compile error", [] {
    CompileOptions options;
    (void)Program("extern \"C\" __global__ void k() { nope(); }", "bad.cu").compile(options);
  });
  expect_no_leak("unresolved extern", [] {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
    linker.add_file(test::fixture_path("mixed_kernel.ptx"));
    (void)linker.link();
  });
  expect_no_leak("PTX syntax error", [] {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
    linker.add_data(Format::ptx, ".version 9.0\n.target sm_90\n.visible .entry k() { bogus; }\n", "bad.ptx");
    (void)linker.link();
  });
  expect_no_leak("LTO link with an unresolved symbol", [] {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, true));
    linker.add_file(test::fixture_path("mixed_kernel.ltoir"));
    (void)linker.link();
  });
  expect_no_leak("C-ABI body error", [] {
    abi::DeviceFunction fn;
    fn.name = "f";
    fn.signature = Signature::parse("int32(int32)");
    fn.body = "return undefined_thing;";
    abi::CompileOptions options;
    options.abi = abi::Abi::c;
    (void)abi::compile(fn, options);
  });
  expect_no_leak("NRT error from the builder", [] {
    KernelBuilder builder("cudf_udf_kernel");
    builder.source(LinkableCode::from_path(test::scenario_path("fixtures/nrt/cudf_udf_kernel.cu")));
    builder.link(LinkableCode::from_path(test::fixture_path("cudf_udf_shim.ptx")));
    (void)builder.link_cubin();
  });
}

TEST(Handles, SuccessfulLinksReleaseTheirSessions) {
  const LiveHandles before = live_handles();
  {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
    linker.add_file(test::fixture_path("scale_kernel.ptx"));
    (void)linker.link();
  }
  EXPECT_EQ(live_handles(), before);
}

TEST(GpuHandles, NoneOutlivesALoadOrGraphError) {
  CUJIT_REQUIRE_DEVICE();
  const LiveHandles before = live_handles();
  expect_no_leak("loading a cubin for another GPU", [] {
    (void)Module::load(LinkableCode::from_path(test::fixture_path("scale_kernel_sm80.cubin")));
  });
  {
    Linker linker(test::link_options(LinkerBackend::driver, false));
    linker.add_file(test::fixture_path("scale_kernel.ptx"));
    auto module = Module::load(LinkableCode::cubin(linker.link().code.bytes(), "scale"));
    KernelNode wrong(module->kernel("scale_kernel"), {arg_value(1)});
    expect_no_leak("graph with bad arguments", [&] { (void)wrong.build(); });
    KernelNode right(module->kernel("scale_kernel"), {arg_value(DevicePtr{0}), arg_value(1)});
    Graph graph = right.build();
    GraphExec exec = graph.instantiate();
    EXPECT_EQ(live_handles().graph_execs, before.graph_execs + 1);
    exec.destroy();
    graph.destroy();
  }
  EXPECT_EQ(live_handles(), before);
}

// ---- cache faults ----------------------------------------------------------------------

using test::count_files;
using test::has_warning;

CacheConfig disk_at(const fs::path& dir) { return test::disk_cache_at(dir); }

CacheKey key_of(const std::string& name) { return CacheKey("reliability").add("name", name); }

struct Fault {
  const char* operation;
  int error;
};

void PrintTo(const Fault& fault, std::ostream* out) { *out << fault.operation << " errno " << fault.error; }

class InjectedFault : public ::testing::TestWithParam<Fault> {};

TEST_P(InjectedFault, TheBuildSucceedsAndNothingPartialIsLeft) {
  test::TempDir dir;
  CacheConfig config = disk_at(dir.path() / "cache");
  const Fault fault = GetParam();
  config.fault = [fault](std::string_view operation) { return operation == fault.operation ? fault.error : 0; };
  BuildCache cache(config);
  ASSERT_TRUE(cache.disk_usable());
  EXPECT_EQ(cache.get_or_build(key_of("a"), [] { return std::string(100000, 'p'); }), std::string(100000, 'p'));
  EXPECT_TRUE(has_warning(cache, std::strerror(fault.error))) << fault.operation;
  EXPECT_EQ(count_files(dir.path(), ".tmp"), 0u);
  // The answer still comes, from memory; the disk tier is consistent (nothing, or a valid
  // entry when only reading failed).
  CacheSource source{};
  EXPECT_EQ(cache.get_or_build(key_of("a"), [] { return std::string("never"); }, &source), std::string(100000, 'p'));
  EXPECT_EQ(source, CacheSource::memory);
  BuildCache fresh(disk_at(dir.path() / "cache"));
  EXPECT_EQ(fresh.get_or_build(key_of("a"), [] { return std::string(100000, 'p'); }), std::string(100000, 'p'));
}

INSTANTIATE_TEST_SUITE_P(Faults, InjectedFault,
                         ::testing::Values(Fault{"create", EACCES}, Fault{"create", EROFS},
                                           Fault{"write", ENOSPC}, Fault{"fsync", EIO},
                                           Fault{"rename", EROFS}, Fault{"read", EACCES}),
                         [](const auto& fault) {
                           return std::string(fault.param.operation) + "_" + std::to_string(fault.param.error);
                         });

TEST(CacheKill, AWriterKilledMidEntryLeavesNoVisibleEntry) {
  test::TempDir dir;
  const fs::path cache_dir = dir.path() / "cache";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CacheConfig config = disk_at(cache_dir);
    int writes = 0;
    config.fault = [&writes](std::string_view operation) {
      if (operation == "write" && ++writes == 2) ::kill(::getpid(), SIGKILL);  // half written
      return 0;
    };
    BuildCache cache(config);
    (void)cache.get_or_build(key_of("killed"), [] { return std::string(1 << 20, 'k'); });
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(count_files(cache_dir, ".entry"), 0u);  // never visible
  EXPECT_EQ(count_files(cache_dir, ".tmp"), 1u);    // the half-written temporary
  BuildCache next(disk_at(cache_dir));
  CacheSource source{};
  EXPECT_EQ(next.get_or_build(key_of("killed"), [] { return std::string(1 << 20, 'k'); }, &source),
            std::string(1 << 20, 'k'));
  EXPECT_EQ(source, CacheSource::built);  // rebuilt
  BuildCache after(disk_at(cache_dir));
  EXPECT_EQ(after.get_or_build(key_of("killed"), [] { return std::string("never"); }, &source),
            std::string(1 << 20, 'k'));
  EXPECT_EQ(source, CacheSource::disk);
}

TEST(CacheFullDisk, ARealFullFileSystem) {
  test::TempDir dir;
  const fs::path mount_point = dir.path() / "small";
  fs::create_directories(mount_point);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a 64 KiB tmpfs here (" << std::strerror(errno)
                 << "): the full-disk case runs through the injected ENOSPC instead";
  }
  {
    BuildCache cache(disk_at(mount_point / "cache"));
    ASSERT_TRUE(cache.disk_usable());
    EXPECT_EQ(cache.get_or_build(key_of("big"), [] { return std::string(1 << 20, 'b'); }), std::string(1 << 20, 'b'));
    EXPECT_EQ(cache.stats().disk_write_failures, 1u);
    EXPECT_EQ(count_files(mount_point, ".tmp"), 0u);
    EXPECT_EQ(cache.get_or_build(key_of("small"), [] { return std::string(100, 's'); }), std::string(100, 's'));
    EXPECT_EQ(count_files(mount_point, ".entry"), 1u);  // what fits is still cached
  }
  ::umount(mount_point.c_str());
}

// ---- many processes and threads ---------------------------------------------------------

std::string payload_for(int key) {
  // Deterministic, distinct and of different sizes per key.
  std::string out = "key-" + std::to_string(key) + ":";
  out.resize(1024 * (key + 1) + 7 * key, static_cast<char>('a' + key));
  return out;
}

TEST(CacheHammer, SixteenProcessesOfFourThreadsOnEightKeys) {
  test::TempDir dir;
  const fs::path cache_dir = dir.path() / "cache";
  constexpr int processes = 16, threads = 4, keys = 8;
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid != 0) {
      children.push_back(pid);
      continue;
    }
    CacheConfig config = disk_at(cache_dir);
    config.max_memory_bytes = 16 * 1024;  // small: some answers come from disk again
    BuildCache cache(config);
    std::atomic<int> wrong{0}, calls{0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        int k = (p * threads + t) % keys;
        while (std::chrono::steady_clock::now() < deadline) {
          k = (k + 3) % keys;
          const std::string got = cache.get_or_build(key_of(std::to_string(k)), [k] { return payload_for(k); });
          ++calls;
          if (got != payload_for(k)) ++wrong;
        }
      });
    }
    for (auto& w : workers) w.join();
    const CacheStats stats = cache.stats();
    if (FILE* out = std::fopen((dir.path() / ("calls." + std::to_string(p))).c_str(), "w")) {
      std::fprintf(out, "%d\n", calls.load());
      std::fclose(out);
    }
    const bool consistent = stats.memory_hits + stats.disk_hits + stats.builds + stats.waits ==
                            static_cast<std::uint64_t>(calls.load());
    ::_exit(wrong.load() == 0 && consistent && stats.corrupt_entries == 0 ? 0 : 1);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a process saw a wrong result or bad stats";
  }
  long total = 0;
  for (int p = 0; p < processes; ++p) {
    if (FILE* in = std::fopen((dir.path() / ("calls." + std::to_string(p))).c_str(), "r")) {
      long calls = 0;
      if (std::fscanf(in, "%ld", &calls) == 1) total += calls;
      std::fclose(in);
    }
  }
  RecordProperty("calls", std::to_string(total));
  std::cout << "cache hammer: " << total << " calls from " << processes << " processes x " << threads
            << " threads on " << keys << " keys in 3 s\n";
  EXPECT_GT(total, processes * threads);
  EXPECT_EQ(count_files(cache_dir, ".entry"), static_cast<std::size_t>(keys));
  EXPECT_EQ(count_files(cache_dir, ".tmp"), 0u);
  BuildCache reader(disk_at(cache_dir));
  for (int k = 0; k < keys; ++k) {
    CacheSource source{};
    EXPECT_EQ(reader.get_or_build(key_of(std::to_string(k)), [] { return std::string("never"); }, &source),
              payload_for(k));
    EXPECT_EQ(source, CacheSource::disk);
  }
  EXPECT_EQ(reader.stats().corrupt_entries, 0u);
}

}  // namespace
}  // namespace cujit
