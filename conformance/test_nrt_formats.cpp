// NRT users in every binary format (cubin, fatbin, multi-architecture fatbin, host object,
// archive): detection without a GPU, the per-input flag off (the nrt error naming symbol,
// input and fix) and on (linked), on both backends; NRT with -G; the device heap
// exhausted; NRT code in captured and explicit graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cujit/graph.hpp"
#include "cujit/graph_node.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/nrt.hpp"
#include "code/device_references.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"
#include "support/nrt_switch.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::scenario_path;

using test::NrtSwitch;

// The NRT functions cudf_udf_shim.cu calls.
const std::vector<std::string> shim_functions = {"NRT_MemInfo_new_varsize", "NRT_MemInfo_data_fast",
                                                 "NRT_decref"};

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

// The NRT user of test_nrt_linking.cpp (cudf_udf_shim.cu) as each binary fixture.
struct ShimFile {
  std::string file;
  Format format;
  bool needs_lto = false;
};

const std::vector<ShimFile>& shim_files() {
  static const std::vector<ShimFile> files = {
      {"cudf_udf_shim.cubin", Format::cubin},
      {"cudf_udf_shim_sass.fatbin", Format::fatbin},
      {"cudf_udf_shim_ptx.fatbin", Format::fatbin},
      {"cudf_udf_shim_multi.fatbin", Format::fatbin},
      {"cudf_udf_shim.o", Format::object},
      {"cudf_udf_shim.a", Format::archive},
  };
  return files;
}

void PrintTo(const ShimFile& file, std::ostream* out) { *out << file.file; }

LinkableCode shim(const ShimFile& file) { return LinkableCode::from_path(fixture_path(file.file)); }

KernelBuilder cudf_kernel(LinkableCode external, KernelOptions options = {}) {
  KernelBuilder builder("cudf_udf_kernel", options);
  builder.source(LinkableCode::from_path(scenario_path("fixtures/nrt/cudf_udf_kernel.cu")));
  builder.link(std::move(external));
  return builder;
}

// The runtime's statistics global survives every link (LTO inlines the functions away).
bool has_nrt_code(const Bytes& cubin) { return cubin.find("cujit_nrt_stats") != std::string::npos; }

void expect_error_names(const Error& error, const std::string& input) {
  const std::string what = error.what();
  EXPECT_NE(what.find("NRT_decref"), std::string::npos) << what;
  EXPECT_NE(what.find("referenced by " + input), std::string::npos) << what;
  EXPECT_NE(what.find("set_nrt(true)"), std::string::npos) << what;
  EXPECT_FALSE(error.log().empty());
}

// ---- detection (CPU) -------------------------------------------------------------------

class NrtScanFormats : public ::testing::TestWithParam<ShimFile> {};

TEST_P(NrtScanFormats, FindsTheShimsNrtFunctions) {
  const LinkableCode code = shim(GetParam());
  ASSERT_EQ(code.format(), GetParam().format);
  const nrt::InputScan found = nrt::scan(code, Arch(9, 0));
  EXPECT_TRUE(found.uses_nrt());
  EXPECT_EQ(sorted(found.functions), sorted(shim_functions));
  EXPECT_TRUE(found.unread.empty());
}

TEST_P(NrtScanFormats, TheSameFormatWithoutNrtFindsNothing) {
  // scale_kernel in the same format: device code with no NRT in it.
  std::string file = GetParam().file;
  file.replace(0, std::string("cudf_udf_shim").size(), "scale_kernel");
  if (file == "scale_kernel_multi.fatbin") file = "scale_kernel_sass.fatbin";
  const nrt::InputScan found = nrt::scan(LinkableCode::from_path(fixture_path(file)), Arch(9, 0));
  EXPECT_FALSE(found.uses_nrt()) << found.functions.front();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NrtScanFormats, ::testing::ValuesIn(shim_files()),
                         [](const auto& file) { return test::identifier(file.param.file); });

TEST(NrtScan, PtxIsReadAndLtoIrIsNot) {
  const nrt::InputScan ptx = nrt::scan(LinkableCode::from_path(fixture_path("cudf_udf_shim.ptx")), Arch(9, 0));
  EXPECT_EQ(sorted(ptx.functions), sorted(shim_functions));
  const nrt::InputScan ltoir =
      nrt::scan(LinkableCode::from_path(fixture_path("cudf_udf_shim.ltoir")), Arch(9, 0));
  EXPECT_FALSE(ltoir.uses_nrt());
  EXPECT_EQ(ltoir.unread, std::vector<std::string>{"LTO-IR"});
  const nrt::InputScan fatbin =
      nrt::scan(LinkableCode::from_path(fixture_path("cudf_udf_shim_ltoir.fatbin")), Arch(9, 0));
  EXPECT_FALSE(fatbin.uses_nrt());
  EXPECT_EQ(fatbin.unread, std::vector<std::string>{"LTO-IR entry (sm_90)"});
}

TEST(NrtScan, MultiArchitectureFatbinReadsTheEntryTheLinkUses) {
  const LinkableCode split = LinkableCode::from_path(fixture_path("nrt_arch_split_shim.fatbin"));
  // Only the sm_80 entry uses NRT.
  EXPECT_FALSE(nrt::scan(split, Arch(9, 0)).uses_nrt());
  EXPECT_TRUE(nrt::scan(split, Arch(9, 0)).unread.empty());
  EXPECT_EQ(sorted(nrt::scan(split, Arch(8, 0)).functions), sorted(shim_functions));
  // sm_86 has no SASS of its own: the sm_80 SASS runs there.
  EXPECT_TRUE(nrt::scan(split, Arch(8, 6)).uses_nrt());
  // No entry a link for sm_75 could use.
  EXPECT_FALSE(nrt::scan(split, Arch(7, 5)).uses_nrt());
  const LinkableCode both = LinkableCode::from_path(fixture_path("cudf_udf_shim_multi.fatbin"));
  EXPECT_TRUE(nrt::scan(both, Arch(8, 0)).uses_nrt());
  EXPECT_TRUE(nrt::scan(both, Arch(9, 0)).uses_nrt());
}

TEST(NrtScan, SourceIsNotReadAndTheRuntimeIsNoUser) {
  const nrt::InputScan source =
      nrt::scan(LinkableCode::from_path(scenario_path("fixtures/nrt/cudf_udf_shim.cu")), Arch(9, 0));
  EXPECT_FALSE(source.uses_nrt());
  EXPECT_EQ(source.unread, std::vector<std::string>{"CUDA C++"});
  // The runtime defines every function: nothing undefined.
  EXPECT_FALSE(nrt::scan(nrt::library(Arch(9, 0), CompileTarget::ptx), Arch(9, 0)).uses_nrt());
}

// Damaged copies of every fixture (LinkableCode refuses them, so the byte-level scan behind
// nrt::scan is called): it reads what is sound and never reads past the bytes
// (AddressSanitizer in ci/reliability.sh) or throws.
TEST(NrtScanHostile, DamagedBinariesAreReadSafely) {
  std::mt19937 random(20261124);
  for (const ShimFile& file : shim_files()) {
    SCOPED_TRACE(file.file);
    const std::string bytes = test::read_bytes(fixture_path(file.file));
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{64},
                            bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
      const std::string truncated = bytes.substr(0, cut);
      EXPECT_NO_THROW((void)detail::device_references(file.format, truncated, Arch(9, 0)));
    }
    for (int trial = 0; trial < 200; ++trial) {
      std::string damaged = bytes;
      for (int k = 0; k < 4; ++k) {
        damaged[random() % damaged.size()] = static_cast<char>(random() & 0xFF);
      }
      EXPECT_NO_THROW((void)detail::device_references(file.format, damaged, Arch(9, 0)));
    }
  }
}

// ---- the flag, linking to a cubin with nvJitLink (CPU) -----------------------------------

class NrtFormatsFlag : public ::testing::TestWithParam<ShimFile> {
 protected:
  NrtSwitch on_{true};
};

TEST_P(NrtFormatsFlag, OffIsAnNrtErrorNamingSymbolInputAndFix) {
  const KernelBuilder builder = cudf_kernel(shim(GetParam()).set_nrt(false));
  EXPECT_EQ(builder.nrt_decision().reason, nrt::Reason::not_used);
  EXPECT_FALSE(builder.nrt_decision().link);
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::nrt, error,
                     expect_error_names(error, shim(GetParam()).name()););
}

TEST_P(NrtFormatsFlag, OnLinksTheRuntime) {
  const KernelBuilder builder = cudf_kernel(shim(GetParam()).set_nrt(true));
  EXPECT_EQ(builder.nrt_decision().reason, nrt::Reason::flagged_input);
  const LinkedKernel linked = builder.link_cubin();
  EXPECT_TRUE(linked.nrt.link);
  EXPECT_EQ(linked.nrt.reason, nrt::Reason::flagged_input);
  EXPECT_TRUE(has_nrt_code(linked.link.code.bytes()));
}

TEST_P(NrtFormatsFlag, OnButDisabledSaysSo) {
  NrtSwitch off(false);
  const KernelBuilder builder = cudf_kernel(shim(GetParam()).set_nrt(true));
  EXPECT_EQ(builder.nrt_decision().reason, nrt::Reason::disabled);
  CUJIT_EXPECT_ERROR((void)builder.link_cubin(), ErrorKind::nrt, error,
                     expect_error_names(error, shim(GetParam()).name());
                     EXPECT_NE(std::string(error.what()).find("NRT is disabled"), std::string::npos););
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NrtFormatsFlag, ::testing::ValuesIn(shim_files()),
                         [](const auto& file) { return test::identifier(file.param.file); });

TEST(NrtFormatsLtoIr, FatbinOfLtoIrFollowsTheFlag) {
  NrtSwitch on(true);
  KernelOptions options;
  options.link.lto = true;
  const LinkableCode fatbin = LinkableCode::from_path(fixture_path("cudf_udf_shim_ltoir.fatbin"));
  CUJIT_EXPECT_ERROR((void)cudf_kernel(fatbin, options).link_cubin(), ErrorKind::nrt, error,
                     expect_error_names(error, fatbin.name()););
  LinkableCode flagged = fatbin;
  EXPECT_TRUE(cudf_kernel(flagged.set_nrt(true), options).link_cubin().nrt.link);
}

TEST(NrtFormatsMultiArch, AnNrtUserOnlyInAnotherArchitecturesEntryDoesNotCount) {
  NrtSwitch on(true);
  const LinkableCode split = LinkableCode::from_path(fixture_path("nrt_arch_split_shim.fatbin"));
  // sm_90: the entry the link takes uses no NRT; nothing forces the runtime in.
  const LinkedKernel linked = cudf_kernel(split).link_cubin();
  EXPECT_FALSE(linked.nrt.link);
  EXPECT_EQ(linked.nrt.reason, nrt::Reason::not_used);
  EXPECT_FALSE(has_nrt_code(linked.link.code.bytes()));
  // sm_80: the entry the link takes is an NRT user.
  KernelOptions sm80;
  sm80.link.arch = Arch(8, 0);
  CUJIT_EXPECT_ERROR((void)cudf_kernel(split, sm80).link_cubin(), ErrorKind::nrt, error,
                     expect_error_names(error, split.name()););
  LinkableCode flagged = split;
  EXPECT_TRUE(has_nrt_code(cudf_kernel(flagged.set_nrt(true), sm80).link_cubin().link.code.bytes()));
}

TEST(NrtFormatsDebug, DashGLinksTheRuntimeCompiledForDebug) {
  NrtSwitch on(true);
  KernelOptions options;
  options.link.compile.options = {"-G"};
  KernelBuilder builder("nrt_direct_kernel", options);
  builder.source(LinkableCode::from_path(scenario_path("fixtures/nrt/nrt_direct_kernel.cu")));
  const LinkedKernel direct = builder.link_cubin();
  EXPECT_EQ(direct.nrt.reason, nrt::Reason::own_ptx);
  EXPECT_TRUE(has_nrt_code(direct.link.code.bytes()));
  const LinkedKernel shimmed = cudf_kernel(shim(shim_files()[0]).set_nrt(true), options).link_cubin();
  EXPECT_TRUE(shimmed.nrt.link);
  // The linker marks debug output with e_flags bit 28; the cubin check lets that through in
  // executable cubins only: a relocatable cubin with the bit is still refused.
  const Bytes& linked = direct.link.code.bytes();
  ASSERT_GT(linked.size(), 0x34u);
  EXPECT_NE(static_cast<unsigned char>(linked[0x33]) & 0x10u, 0u);
  Bytes relocatable = shim(shim_files()[0]).bytes();
  relocatable[0x33] = static_cast<char>(static_cast<unsigned char>(relocatable[0x33]) | 0x10u);
  CUJIT_EXPECT_ERROR((void)LinkableCode::cubin(relocatable, "relocatable.cubin"), ErrorKind::format, error,
                     EXPECT_NE(std::string(error.what()).find("bits 28..31"), std::string::npos););
}

// ---- GPU ---------------------------------------------------------------------------------

std::vector<int> run(const BuiltKernel& built, unsigned threads, int n) {
  DeviceBuffer out(threads * sizeof(int));
  out.fill_bytes(0xEE);
  LaunchConfig config;
  config.block.x = threads;
  built.kernel(config, out.ptr(), n);
  return out.to_vector<int>(threads);
}

// cudf_udf_kernel: thread t gets string_udf_shim(n + t) = (n + t)(n + t - 1).
void expect_shim_results(const std::vector<int>& out, int n) {
  for (std::size_t t = 0; t < out.size(); ++t) {
    const int m = n + static_cast<int>(t);
    EXPECT_EQ(out[t], m * (m - 1)) << t;
  }
}

void expect_balanced(const Module& module, std::uint64_t mi_alloc) {
  const nrt::Stats stats = nrt::read_stats(module);
  EXPECT_EQ(stats.mi_alloc, mi_alloc);
  EXPECT_TRUE(stats.balanced()) << stats.alloc << " " << stats.free << " " << stats.mi_alloc << " "
                                << stats.mi_free;
}

class GpuNrtFormats : public ::testing::TestWithParam<LinkerBackend> {
 protected:
  void SetUp() override { CUJIT_REQUIRE_DEVICE(); }
  KernelOptions options() const {
    KernelOptions o;
    o.link.arch = Arch(9, 0);
    o.link.backend = GetParam();
    return o;
  }
  NrtSwitch on_{true};
};

TEST_P(GpuNrtFormats, EveryFormatWithTheFlagRunsAndWithoutItIsAnNrtError) {
  for (const ShimFile& file : shim_files()) {
    SCOPED_TRACE(file.file);
    CUJIT_EXPECT_ERROR((void)cudf_kernel(shim(file), options()).build(), ErrorKind::nrt, error,
                       expect_error_names(error, shim(file).name()););
    const BuiltKernel built = cudf_kernel(shim(file).set_nrt(true), options()).build();
    EXPECT_EQ(built.nrt.reason, nrt::Reason::flagged_input);
    nrt::set_stats_enabled(*built.module, true);
    constexpr unsigned threads = 32;
    expect_shim_results(run(built, threads, 10), 10);
    expect_balanced(*built.module, threads);
  }
}

// nvJitLink only: the driver linker takes no LTO-IR (CudfShimDriver.LtoIrIsUnsupported).
TEST(GpuNrtFormatsLtoIr, FatbinWithTheFlagRunsThroughNvJitLink) {
  CUJIT_REQUIRE_DEVICE();
  NrtSwitch on(true);
  KernelOptions o;
  o.link.backend = LinkerBackend::nvjitlink;
  o.link.lto = true;
  LinkableCode fatbin = LinkableCode::from_path(fixture_path("cudf_udf_shim_ltoir.fatbin"));
  const BuiltKernel built = cudf_kernel(fatbin.set_nrt(true), o).build();
  nrt::set_stats_enabled(*built.module, true);
  expect_shim_results(run(built, 16, 4), 4);
  expect_balanced(*built.module, 16);
}

TEST_P(GpuNrtFormats, MultiArchitectureFatbinWithoutNrtInTheUsedEntryRunsWithoutIt) {
  const BuiltKernel built =
      cudf_kernel(LinkableCode::from_path(fixture_path("nrt_arch_split_shim.fatbin")), options()).build();
  EXPECT_FALSE(built.nrt.link);
  expect_shim_results(run(built, 32, 5), 5);
}

TEST_P(GpuNrtFormats, DebugCompiledNrtRuns) {
  KernelOptions o = options();
  o.link.compile.options = {"-G"};
  KernelBuilder builder("nrt_direct_kernel", o);
  builder.source(LinkableCode::from_path(scenario_path("fixtures/nrt/nrt_direct_kernel.cu")));
  const BuiltKernel direct = builder.build();
  nrt::set_stats_enabled(*direct.module, true);
  const auto out = run(direct, 16, 6);
  for (unsigned t = 0; t < 16; ++t) EXPECT_EQ(out[t], 6 * 5 / 2 + 6 * static_cast<int>(t) + 6) << t;
  expect_balanced(*direct.module, 2u * 16);
  const BuiltKernel shimmed = cudf_kernel(shim(shim_files()[0]).set_nrt(true), o).build();
  nrt::set_stats_enabled(*shimmed.module, true);
  expect_shim_results(run(shimmed, 16, 3), 3);
  expect_balanced(*shimmed.module, 16);
}

TEST_P(GpuNrtFormats, ExhaustedDeviceHeapGivesNullAndTheLaunchCompletes) {
  KernelBuilder builder("nrt_heap_exhaustion", options());
  builder.source(LinkableCode::from_path(scenario_path("fixtures/nrt/nrt_heap_exhaustion.cu")));
  const BuiltKernel built = builder.build();
  ASSERT_TRUE(built.nrt.link);
  nrt::set_stats_enabled(*built.module, true);
  const int limit = 1 << 16;  // 64 GiB of 1 MiB blocks: more than any device heap
  int first_count = -1;
  for (int launch = 0; launch < 2; ++launch) {
    SCOPED_TRACE(launch);
    DeviceBuffer out(3 * sizeof(int));
    out.fill_bytes(0xEE);
    built.kernel(LaunchConfig{}, out.ptr(), limit);
    const std::vector<int> result = out.to_vector<int>(3);
    EXPECT_EQ(result[1], -1) << "the heap never ran out";
    EXPECT_GE(result[0], 0);
    EXPECT_LT(result[0], limit);
    EXPECT_EQ(result[2], 1) << "an overflowing size was not refused";
    // Everything was released: the second launch gets as many blocks as the first.
    if (launch == 0) {
      first_count = result[0];
    } else {
      EXPECT_EQ(result[0], first_count);
    }
  }
  const nrt::Stats stats = nrt::read_stats(*built.module);
  EXPECT_EQ(stats.mi_alloc, 2u * static_cast<std::uint64_t>(first_count));
  EXPECT_TRUE(stats.balanced());
}

TEST_P(GpuNrtFormats, NrtCodeInACapturedGraph) {
  const BuiltKernel built = cudf_kernel(shim(shim_files()[4]).set_nrt(true), options()).build();
  nrt::set_stats_enabled(*built.module, true);
  constexpr unsigned threads = 32;
  Stream stream;
  DeviceBuffer out(threads * sizeof(int));
  std::vector<int> host(threads, 0);
  Graph graph = capture(stream.handle(), [&](StreamHandle s) {
    LaunchConfig config;
    config.block.x = threads;
    config.stream = s;
    built.kernel(config, out.ptr(), 9);
    copy_to_host_async(host.data(), out.ptr(), threads * sizeof(int), s);
  });
  graph.retain(built.module);
  EXPECT_EQ(nrt::read_stats(*built.module).mi_alloc, 0u);  // captured, not run
  for (int launch = 0; launch < 3; ++launch) {
    std::fill(host.begin(), host.end(), 0);
    graph.launch(stream.handle());
    graph.synchronize();
    expect_shim_results(host, 9);
  }
  expect_balanced(*built.module, 3u * threads);
}

TEST_P(GpuNrtFormats, NrtCodeInAnExplicitGraph) {
  const BuiltKernel built = cudf_kernel(shim(shim_files()[5]).set_nrt(true), options()).build();
  nrt::set_stats_enabled(*built.module, true);
  constexpr unsigned threads = 32;
  DeviceBuffer out(threads * sizeof(int));
  std::vector<int> host(threads, 0);
  KernelNode node(built.kernel, {arg_value(out.ptr()), arg_value(11)});
  node.launch(Dim3{1, 1, 1}, Dim3{threads, 1, 1});
  MemcpyDtoHNode copy(host.data(), out.ptr(), threads * sizeof(int), {node});
  Graph graph = copy.build();
  for (int launch = 0; launch < 3; ++launch) {
    std::fill(host.begin(), host.end(), 0);
    graph.launch();
    graph.synchronize();
    expect_shim_results(host, 11);
  }
  expect_balanced(*built.module, 3u * threads);
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuNrtFormats,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         [](const auto& backend) { return std::string(to_string(backend.param)); });

}  // namespace
}  // namespace cujit
