// NRT linking: the library, the policy applied by KernelBuilder, the documented error,
// and on a GPU every case users hit (cuDF shim, numba fixtures, contention).
#include <gtest/gtest.h>

#include "cujit/kernel_builder.hpp"
#include "cujit/nrt.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"
#include "support/nrt_switch.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::scenario_path;

LinkableCode nrt_fixture(const std::string& name) {
  return LinkableCode::from_path(scenario_path("fixtures/nrt/" + name));
}

using test::NrtSwitch;

enum class ShimForm { ptx, ltoir, cu };

std::string_view to_string(ShimForm form) {
  return form == ShimForm::ptx ? "ptx" : form == ShimForm::ltoir ? "ltoir" : "cu";
}

void PrintTo(ShimForm form, std::ostream* out) { *out << to_string(form); }

LinkableCode cudf_shim(ShimForm form) {
  switch (form) {
    case ShimForm::ptx: return LinkableCode::from_path(fixture_path("cudf_udf_shim.ptx"));
    case ShimForm::ltoir: return LinkableCode::from_path(fixture_path("cudf_udf_shim.ltoir"));
    case ShimForm::cu: return nrt_fixture("cudf_udf_shim.cu");
  }
  throw std::logic_error("unknown shim form");
}

KernelBuilder cudf_kernel(ShimForm form, bool flag, KernelOptions options = {}) {
  options.link.lto = options.link.lto || form == ShimForm::ltoir;
  KernelBuilder builder("cudf_udf_kernel", options);
  builder.source(nrt_fixture("cudf_udf_kernel.cu"));
  builder.link(cudf_shim(form).set_nrt(flag));
  return builder;
}

// The runtime's statistics global survives LTO, which inlines the NRT functions away.
bool has_nrt_code(const Bytes& cubin) {
  return cubin.find("cujit_nrt_stats") != std::string::npos;
}

// ---- CPU -----------------------------------------------------------------------------

TEST(NrtLibrary, CompiledOncePerArchAndTarget) {
  CacheConfig config;
  config.mode = CacheMode::memory;  // a fresh cache: nothing from earlier runs
  BuildCache cache(config);
  const auto before = nrt::library_compilations();
  const LinkableCode first = nrt::library(Arch(9, 0), CompileTarget::ptx, {}, cache);
  const auto after_first = nrt::library_compilations();
  const LinkableCode second = nrt::library(Arch(9, 0), CompileTarget::ptx, {}, cache);
  EXPECT_EQ(nrt::library_compilations(), after_first);
  EXPECT_EQ(after_first - before, 1u);
  EXPECT_EQ(first.bytes(), second.bytes());
  EXPECT_EQ(first.format(), Format::ptx);
  EXPECT_FALSE(first.nrt());
  // Every runtime function is defined (.visible), none merely declared.
  for (std::string_view name : nrt::function_names()) {
    EXPECT_NE(first.bytes().find(" " + std::string(name) + "("), std::string::npos) << name;
  }
  EXPECT_FALSE(nrt::references_nrt(first.bytes()));
  const LinkableCode lto = nrt::library(Arch(9, 0), CompileTarget::ltoir, {}, cache);
  EXPECT_EQ(lto.format(), Format::ltoir);
  const auto after_lto = nrt::library_compilations();
  EXPECT_EQ(after_lto, after_first + 1);
  (void)nrt::library(Arch(9, 0), CompileTarget::ltoir, {}, cache);
  (void)nrt::library(Arch(9, 0), CompileTarget::ptx, {}, cache);
  EXPECT_EQ(nrt::library_compilations(), after_lto);
  // Another architecture is another library.
  (void)nrt::library(Arch(8, 0), CompileTarget::ptx, {}, cache);
  EXPECT_EQ(nrt::library_compilations(), after_lto + 1);
}

class CudfShim : public ::testing::TestWithParam<ShimForm> {};

TEST_P(CudfShim, WithoutTheFlagTheErrorNamesSymbolInputAndFix) {
  NrtSwitch on(true);
  const KernelBuilder builder = cudf_kernel(GetParam(), /*flag=*/false);
  EXPECT_EQ(builder.nrt_decision().reason, nrt::Reason::not_used);
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::nrt, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("NRT_MemInfo_new_varsize"), std::string::npos) << what;
                     EXPECT_NE(what.find("cudf_udf_shim"), std::string::npos) << what;
                     EXPECT_NE(what.find("set_nrt(true)"), std::string::npos) << what;
                     EXPECT_FALSE(error.log().empty()););
}

TEST_P(CudfShim, WithTheFlagItLinks) {
  NrtSwitch on(true);
  const KernelBuilder builder = cudf_kernel(GetParam(), /*flag=*/true);
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_TRUE(linked.nrt.link);
  EXPECT_EQ(linked.nrt.reason, nrt::Reason::flagged_input);
  EXPECT_TRUE(has_nrt_code(linked.link.code.bytes()));
}

TEST_P(CudfShim, DisabledGloballyWithTheFlagSetSaysSo) {
  NrtSwitch off(false);
  const KernelBuilder builder = cudf_kernel(GetParam(), /*flag=*/true);
  EXPECT_EQ(builder.nrt_decision().reason, nrt::Reason::disabled);
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::nrt, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("NRT is disabled"), std::string::npos) << what;
                     EXPECT_NE(what.find("set_enabled(true)"), std::string::npos) << what;);
}

TEST_P(CudfShim, OverrideOnWinsOverGlobalOff) {
  NrtSwitch off(false);
  KernelOptions options;
  options.nrt = true;
  const LinkedKernel linked = cudf_kernel(GetParam(), true, options).link_cubin();
  EXPECT_TRUE(linked.nrt.link);
  EXPECT_TRUE(has_nrt_code(linked.link.code.bytes()));
}

TEST_P(CudfShim, OverrideOffWinsOverGlobalOn) {
  NrtSwitch on(true);
  KernelOptions options;
  options.nrt = false;
  CUJIT_EXPECT_ERROR((void)cudf_kernel(GetParam(), true, options).link_cubin(), ErrorKind::nrt,
                     error, EXPECT_NE(std::string(error.what()).find("NRT is disabled"),
                                      std::string::npos););
}

INSTANTIATE_TEST_SUITE_P(Forms, CudfShim,
                         ::testing::Values(ShimForm::ptx, ShimForm::ltoir, ShimForm::cu),
                         [](const auto& form) { return std::string(to_string(form.param)); });

TEST(CudfShimDriver, LtoIrIsUnsupported) {
  NrtSwitch on(true);
  KernelOptions options;
  options.link.backend = LinkerBackend::driver;
  CUJIT_EXPECT_ERROR((void)cudf_kernel(ShimForm::ltoir, true, options).link_cubin(),
                     ErrorKind::unsupported, error,
                     EXPECT_NE(std::string(error.what()).find("cudf_udf_shim.ltoir"),
                               std::string::npos););
}

TEST(NrtPolicyInBuilder, EnabledWithNothingUsingItLinksNoNrtCode) {
  NrtSwitch on(true);
  KernelBuilder builder("scale_kernel");
  builder.source(LinkableCode::from_path(scenario_path("fixtures/scale_kernel.cu")));
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_FALSE(linked.nrt.link);
  EXPECT_EQ(linked.nrt.reason, nrt::Reason::not_used);
  EXPECT_FALSE(has_nrt_code(linked.link.code.bytes()));
  EXPECT_EQ(linked.link.code.bytes().find("NRT_"), std::string::npos);
}

TEST(NrtPolicyInBuilder, OwnPtxIsDetected) {
  NrtSwitch on(true);
  KernelBuilder builder("nrt_direct_kernel");
  builder.source(nrt_fixture("nrt_direct_kernel.cu"));
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_EQ(linked.nrt.reason, nrt::Reason::own_ptx);
  EXPECT_TRUE(has_nrt_code(linked.link.code.bytes()));
}

TEST(NrtPolicyInBuilder, NumbaNrtUserIsOwnCodeAndDetected) {
  NrtSwitch on(true);
  KernelOptions options;
  options.link.arch = Arch::parse("sm_90a");
  KernelBuilder builder("call_nrt_user", options);
  builder.source(nrt_fixture("nrt_user_caller.cu"));
  builder.source(LinkableCode::from_path(scenario_path("fixtures/numba/nrt_user_c_abi.ptx")));
  EXPECT_EQ(builder.nrt_decision().reason, nrt::Reason::own_ptx);
  EXPECT_TRUE(has_nrt_code(builder.link_cubin().link.code.bytes()));
}

TEST(NrtPolicyInBuilder, OwnCodeMustBePtxOrSource) {
  KernelBuilder builder("scale_kernel");
  CUJIT_EXPECT_ERROR(builder.source(LinkableCode::from_path(fixture_path("scale_kernel.cubin"))),
                     ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("scale_kernel.cubin"),
                               std::string::npos););
}

// ---- GPU -----------------------------------------------------------------------------

std::vector<int> run(const BuiltKernel& built, unsigned threads, int n) {
  DeviceBuffer out(threads * sizeof(int));
  out.fill_bytes(0xEE);
  LaunchConfig config;
  config.block.x = threads;
  built.kernel(config, out.ptr(), n);
  return out.to_vector<int>(threads);
}

void expect_balanced(const Module& module) {
  const nrt::Stats stats = nrt::read_stats(module);
  EXPECT_GT(stats.alloc, 0u);
  EXPECT_GT(stats.mi_alloc, 0u);
  EXPECT_EQ(stats.alloc, stats.free) << "leaked raw allocations";
  EXPECT_EQ(stats.mi_alloc, stats.mi_free) << "leaked MemInfos";
}

class GpuNrt : public ::testing::TestWithParam<LinkerBackend> {
 protected:
  void SetUp() override { CUJIT_REQUIRE_DEVICE(); }
  KernelOptions options(const std::string& arch = "sm_90") const {
    KernelOptions o;
    o.link.arch = Arch::parse(arch);
    o.link.backend = GetParam();
    return o;
  }
  NrtSwitch on_{true};
};

TEST_P(GpuNrt, DirectAllocationRunsWithoutLeaks) {
  KernelBuilder builder("nrt_direct_kernel", options());
  builder.source(nrt_fixture("nrt_direct_kernel.cu"));
  const BuiltKernel built = builder.build();
  ASSERT_TRUE(built.nrt.link);
  nrt::set_stats_enabled(*built.module, true);
  constexpr unsigned threads = 64;
  const int n = 20;
  const auto out = run(built, threads, n);
  for (unsigned t = 0; t < threads; ++t) {
    EXPECT_EQ(out[t], n * (n - 1) / 2 + n * static_cast<int>(t) + n) << t;
  }
  const nrt::Stats stats = nrt::read_stats(*built.module);
  EXPECT_EQ(stats.alloc, 4u * threads);  // aligned block, varsize MemInfo + data, raw
  EXPECT_EQ(stats.mi_alloc, 2u * threads);
  expect_balanced(*built.module);
}

TEST_P(GpuNrt, CudfShimWithTheFlagRunsWithoutLeaks) {
  for (ShimForm form : {ShimForm::ptx, ShimForm::ltoir, ShimForm::cu}) {
    SCOPED_TRACE(to_string(form));
    // LTO-IR into the driver backend: refused (CudfShimDriver.LtoIrIsUnsupported).
    if (form == ShimForm::ltoir && GetParam() == LinkerBackend::driver) continue;
    const BuiltKernel built = cudf_kernel(form, true, options()).build();
    nrt::set_stats_enabled(*built.module, true);
    constexpr unsigned threads = 32;
    const auto out = run(built, threads, 10);
    for (unsigned t = 0; t < threads; ++t) {
      const int n = 10 + static_cast<int>(t);
      EXPECT_EQ(out[t], n * (n - 1)) << t;
    }
    expect_balanced(*built.module);
  }
}

TEST_P(GpuNrt, NumbaShimCallerWithExternalMakeAndSum) {
  KernelOptions o = options("sm_90a");
  const std::string kernel_name =
      "_ZN8__main__5kshimB3v19B92cw51cXTLSUwv1sDUaKthrqNgqqmjgOR3W3CwAkMXLaJtQYkOIgxJU0gCqOkEJoHk"
      "bttqdVhoqlspQGNFHSgJ5BnXagIAE5ArrayIiLi1E1A7mutable7alignedE";
  KernelBuilder builder(kernel_name, o);
  builder.source(LinkableCode::from_path(scenario_path("fixtures/numba/shim_caller_kernel.ptx")));
  builder.link(nrt_fixture("make_and_sum.cu").set_nrt(true));
  const BuiltKernel built = builder.build();
  EXPECT_EQ(built.nrt.reason, nrt::Reason::flagged_input);
  nrt::set_stats_enabled(*built.module, true);
  DeviceBuffer out(sizeof(int));
  out.fill_bytes(0xEE);
  // numba's 1-d int32 array: meminfo, parent, nitems, itemsize, data, shape[0], strides[0].
  const unsigned long long meminfo = 0, parent = 0, nitems = 1, itemsize = 4, shape = 1,
                           stride = 4;
  const unsigned long long data = out.ptr();
  built.kernel(LaunchConfig{}, meminfo, parent, nitems, itemsize, data, shape, stride);
  EXPECT_EQ(out.to_vector<int>(1)[0], 15);  // make_and_sum(5) = 1 + 2 + 3 + 4 + 5
  expect_balanced(*built.module);
}

TEST_P(GpuNrt, NumbaNrtUserFromACudaKernel) {
  KernelBuilder builder("call_nrt_user", options("sm_90a"));
  builder.source(nrt_fixture("nrt_user_caller.cu"));
  builder.source(LinkableCode::from_path(scenario_path("fixtures/numba/nrt_user_c_abi.ptx")));
  const BuiltKernel built = builder.build();
  EXPECT_EQ(built.nrt.reason, nrt::Reason::own_ptx);
  nrt::set_stats_enabled(*built.module, true);
  constexpr unsigned threads = 32;
  const auto out = run(built, threads, 7);
  for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(out[t], 7 + static_cast<int>(t)) << t;
  expect_balanced(*built.module);
}

TEST_P(GpuNrt, OverrideOnRunsWithGlobalOff) {
  NrtSwitch off(false);
  KernelOptions o = options();
  o.nrt = true;
  const BuiltKernel built = cudf_kernel(ShimForm::cu, true, o).build();
  nrt::set_stats_enabled(*built.module, true);
  EXPECT_EQ(run(built, 4, 3)[3], 6 * 5);
  expect_balanced(*built.module);
}

TEST_P(GpuNrt, StatsCanBeSwitchedOffAndReset) {
  KernelBuilder builder("nrt_direct_kernel", options());
  builder.source(nrt_fixture("nrt_direct_kernel.cu"));
  const BuiltKernel built = builder.build();
  nrt::reset_stats(*built.module);
  nrt::set_stats_enabled(*built.module, false);
  (void)run(built, 8, 4);
  EXPECT_EQ(nrt::read_stats(*built.module).alloc, 0u);
  nrt::set_stats_enabled(*built.module, true);
  (void)run(built, 8, 4);
  EXPECT_EQ(nrt::read_stats(*built.module).alloc, 32u);
  nrt::reset_stats(*built.module);
  EXPECT_EQ(nrt::read_stats(*built.module).alloc, 0u);
}

TEST_P(GpuNrt, StatsOfAModuleWithoutNrtAreAnNrtError) {
  auto module = Module::load(LinkableCode::cubin(
      [&] {
        Linker linker(test::link_options(GetParam(), false));
        linker.add_file(fixture_path("scale_kernel.ptx"));
        return linker.link().code.bytes();
      }(),
      "scale_kernel"));
  CUJIT_EXPECT_ERROR((void)nrt::read_stats(*module), ErrorKind::nrt, error,
                     EXPECT_NE(std::string(error.what()).find("NRT was not linked"),
                               std::string::npos););
}

TEST_P(GpuNrt, ContentionRunsTheDestructorExactlyOnce) {
  KernelBuilder builder("make_shared", options());
  builder.source(nrt_fixture("nrt_contention.cu"));
  const BuiltKernel built = builder.build();
  const Module& module = *built.module;
  nrt::set_stats_enabled(module, true);
  const Kernel take = module.kernel("take_references");
  const Kernel drop = module.kernel("drop_one");
  const Kernel churn = module.kernel("churn_and_release");
  DeviceBuffer slot(sizeof(void*));
  for (int trial = 0; trial < 5; ++trial) {
    LaunchConfig one;
    built.kernel(one, slot.ptr());
    LaunchConfig many;
    many.grid.x = 256;
    many.block.x = 256;
    take(many, slot.ptr());
    drop(one, slot.ptr());
    churn(many, slot.ptr(), 8);
  }
  const auto calls = module.global("nrt_contention_dtor_calls");
  ASSERT_TRUE(calls.has_value());
  unsigned long long dtor_calls = 0;
  copy_to_host(&dtor_calls, calls->ptr, sizeof dtor_calls);
  EXPECT_EQ(dtor_calls, 5u);  // once per trial, from 65536 concurrent holders
  const nrt::Stats stats = nrt::read_stats(module);
  EXPECT_EQ(stats.mi_alloc, 5u);
  expect_balanced(module);
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuNrt,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         [](const auto& backend) { return std::string(to_string(backend.param)); });

}  // namespace
}  // namespace cujit
