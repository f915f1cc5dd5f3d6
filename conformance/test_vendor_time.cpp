// Where the time goes: each vendor library's calls and time count on the thread that makes
// them, only there, and only while cujit is inside the library. No timing thresholds: only
// orderings (vendor time within the wall time of a call, and most of it for a compile).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cujit/build_cache.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "cujit/vendor_time.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"
#include "support/vendor_call.hpp"  // core/src: the scope every table entry uses

namespace cujit {
namespace {

constexpr const char* kernel_source = R"(
extern "C" __global__ void add_one(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += 1;
}
)";

CompileOptions sm90_ptx() {
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.target = CompileTarget::ptx;
  return options;
}

Program add_one() { return Program(kernel_source, "vendor_time_add_one.cu"); }

BuildCache memory_cache() {
  CacheConfig config;
  config.mode = CacheMode::memory;
  return BuildCache(std::move(config));
}

std::uint64_t ns_since(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
}

TEST(VendorTime, ArithmeticIsFieldByField) {
  const VendorTime a{10, 20, 30, 1, 2, 3};
  const VendorTime b{1, 2, 3, 1, 1, 1};
  EXPECT_EQ(a - b, (VendorTime{9, 18, 27, 0, 1, 2}));
  EXPECT_EQ((a - b) + b, a);
  EXPECT_EQ(a.total_ns(), 60u);
  EXPECT_EQ(a.total_calls(), 6u);
  EXPECT_EQ(VendorTime{}.total_ns(), 0u);
}

TEST(VendorTime, ACompileIsNvrtcTimeOnly) {
  const Program program = add_one();
  const VendorTime before = vendor_time();
  (void)program.compile(sm90_ptx());
  const VendorTime spent = vendor_time() - before;
  // Create, compile, log size and log, output size and output, destroy at least.
  EXPECT_GE(spent.nvrtc_calls, 5u);
  EXPECT_GT(spent.nvrtc_ns, 0u);
  EXPECT_EQ(spent.nvjitlink_calls, 0u);
  EXPECT_EQ(spent.nvjitlink_ns, 0u);
  EXPECT_EQ(spent.driver_calls, 0u);
  EXPECT_EQ(spent.driver_ns, 0u);
}

TEST(VendorTime, AFailedCompileCountsToo) {
  const Program broken("__global__ void k() { undeclared(); }", "vendor_time_broken.cu");
  const VendorTime before = vendor_time();
  EXPECT_THROW((void)broken.compile(sm90_ptx()), Error);
  const VendorTime spent = vendor_time() - before;
  EXPECT_GE(spent.nvrtc_calls, 3u);  // create, compile, log (and destroy on the way out)
  EXPECT_GT(spent.nvrtc_ns, 0u);
}

TEST(VendorTime, ACompileIsMostlyNvrtcAndNeverMoreThanItsWallTime) {
  const Program program = add_one();
  const auto start = std::chrono::steady_clock::now();
  const VendorTime before = vendor_time();
  (void)program.compile(sm90_ptx());
  const VendorTime spent = vendor_time() - before;
  const std::uint64_t wall = ns_since(start);
  EXPECT_LT(spent.total_ns(), wall);
  // cujit's part of a compile (options, the log, copying the output) is small beside NVRTC.
  EXPECT_GT(2 * spent.nvrtc_ns, wall) << "nvrtc " << spent.nvrtc_ns << " ns of " << wall;
}

TEST(VendorTime, ALinkIsNvJitLinkTime) {
  const CompileResult compiled = add_one().compile(sm90_ptx());
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add(compiled.code);
  const VendorTime before = vendor_time();
  const auto start = std::chrono::steady_clock::now();
  const LinkResult linked = linker.link();
  const std::uint64_t wall = ns_since(start);
  const VendorTime spent = vendor_time() - before;
  EXPECT_EQ(linked.code.format(), Format::cubin);
  // Create, add, complete, two logs, cubin size and cubin, destroy at least.
  EXPECT_GE(spent.nvjitlink_calls, 6u);
  EXPECT_GT(spent.nvjitlink_ns, 0u);
  EXPECT_LT(spent.total_ns(), wall);
  EXPECT_EQ(spent.nvrtc_calls, 0u);  // a PTX input: nothing to compile
  EXPECT_EQ(spent.nvrtc_ns, 0u);
}

TEST(VendorTime, AMemoryCacheHitSpendsNothingInAVendor) {
  BuildCache cache = memory_cache();
  const Program program = add_one();
  const CachedCompile first = compile_cached(program, sm90_ptx(), cache);
  ASSERT_EQ(first.source, CacheSource::built);
  const VendorTime before = vendor_time();
  const CachedCompile again = compile_cached(program, sm90_ptx(), cache);
  const VendorTime spent = vendor_time() - before;
  ASSERT_EQ(again.source, CacheSource::memory);
  EXPECT_EQ(again.result.code.bytes(), first.result.code.bytes());
  EXPECT_EQ(spent, VendorTime{});
}

TEST(VendorTime, TotalsBelongToTheThreadThatMadeTheCalls) {
  const VendorTime before = vendor_time();
  VendorTime worker_start{1, 1, 1, 1, 1, 1};
  VendorTime worker_spent;
  std::thread worker([&] {
    worker_start = vendor_time();
    (void)add_one().compile(sm90_ptx());
    worker_spent = vendor_time() - worker_start;
  });
  worker.join();
  EXPECT_EQ(worker_start, VendorTime{});  // every thread starts at zero
  EXPECT_GT(worker_spent.nvrtc_calls, 0u);
  EXPECT_GT(worker_spent.nvrtc_ns, 0u);
  EXPECT_EQ(vendor_time() - before, VendorTime{});
}

// A vendor call made inside another on the same thread (a callback into cujit) counts as a
// call, but its time is already the outer call's: nothing counts twice.
TEST(VendorTime, ANestedCallAddsACallButNoTime) {
  const VendorTime before = vendor_time();
  {
    const detail::VendorCallScope outer(detail::VendorLibrary::driver);
    {
      const detail::VendorCallScope inner(detail::VendorLibrary::nvrtc);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const VendorTime spent = vendor_time() - before;
  EXPECT_EQ(spent.driver_calls, 1u);
  EXPECT_EQ(spent.nvrtc_calls, 1u);
  EXPECT_EQ(spent.nvrtc_ns, 0u);
  EXPECT_GT(spent.driver_ns, 0u);
  EXPECT_EQ(spent.nvjitlink_calls, 0u);
}

// A caller that shares another thread's build (or finds its result) spends its time
// waiting, which is cujit's time, not a vendor's: the compile counts on the building thread.
TEST(VendorTime, WaitingForAnotherThreadsBuildIsNotVendorTime) {
  BuildCache cache = memory_cache();
  const CacheKey key = CacheKey("vendor-time-test").add("case", "shared build");
  std::atomic<bool> building{false};
  std::atomic<bool> second_build_ran{false};
  VendorTime builder_spent;
  std::thread builder([&] {
    const VendorTime start = vendor_time();
    (void)cache.get_or_build(key, [&] {
      building = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the waiter arrive
      return add_one().compile(sm90_ptx()).code.bytes();
    });
    builder_spent = vendor_time() - start;
  });
  while (!building) std::this_thread::yield();
  const VendorTime before = vendor_time();
  CacheSource source = CacheSource::built;
  const std::string payload = cache.get_or_build(
      key,
      [&] {
        second_build_ran = true;
        return std::string();
      },
      &source);
  const VendorTime waiter_spent = vendor_time() - before;
  builder.join();
  EXPECT_FALSE(second_build_ran);
  EXPECT_TRUE(source == CacheSource::waited || source == CacheSource::memory) << to_string(source);
  EXPECT_FALSE(payload.empty());
  EXPECT_EQ(waiter_spent, VendorTime{});
  EXPECT_GT(builder_spent.nvrtc_calls, 0u);
  EXPECT_GT(builder_spent.nvrtc_ns, 0u);
}

// The driver table is timed like the other two; only a GPU machine can show it.
TEST(GpuVendorTime, LoadingAndLaunchingIsDriverTime) {
  CUJIT_REQUIRE_DEVICE();
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false, Arch::of_device(0).sm()));
  linker.add(add_one().compile(sm90_ptx()).code);
  const LinkableCode cubin = linker.link().code;
  const VendorTime before = vendor_time();
  auto module = Module::load(cubin);
  const VendorTime loaded = vendor_time() - before;
  EXPECT_GT(loaded.driver_calls, 0u);
  EXPECT_GT(loaded.driver_ns, 0u);
  EXPECT_EQ(loaded.nvrtc_calls, 0u);
  EXPECT_EQ(loaded.nvjitlink_calls, 0u);

  const Kernel kernel = module->kernel("add_one");
  DeviceBuffer out(32 * sizeof(int));
  out.fill_bytes(0);
  LaunchConfig config;
  config.block.x = 32;
  const VendorTime before_launch = vendor_time();
  kernel(config, out.ptr(), 32);
  const VendorTime launched = vendor_time() - before_launch;
  EXPECT_GE(launched.driver_calls, 1u);  // cuLaunchKernel
  EXPECT_GT(launched.driver_ns, 0u);
  EXPECT_EQ(out.to_vector<int>(32)[31], 1);
}

}  // namespace
}  // namespace cujit
