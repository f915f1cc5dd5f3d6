// Backend choice and per-backend capabilities: pure functions, no GPU.
#include <gtest/gtest.h>

#include "cujit/linker.hpp"
#include "support/cache_helpers.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

TEST(BackendChoice, ExplicitRequestWins) {
  EXPECT_EQ(choose_backend(LinkerBackend::driver, "nvjitlink"), LinkerBackend::driver);
  EXPECT_EQ(choose_backend(LinkerBackend::nvjitlink, "driver"), LinkerBackend::nvjitlink);
}

TEST(BackendChoice, EnvironmentThenDefault) {
  EXPECT_EQ(choose_backend(std::nullopt, "driver"), LinkerBackend::driver);
  EXPECT_EQ(choose_backend(std::nullopt, "nvjitlink"), LinkerBackend::nvjitlink);
  EXPECT_EQ(choose_backend(std::nullopt, ""), LinkerBackend::nvjitlink);
}

TEST(BackendChoice, UnknownEnvironmentValueIsAUsageError) {
  CUJIT_EXPECT_ERROR(choose_backend(std::nullopt, "gold"), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("CUJIT_LINKER='gold'"),
                               std::string::npos););
}

TEST(BackendCapabilities, DriverTakesEverythingButLtoIr) {
  for (Format format : all_formats) {
    EXPECT_TRUE(backend_accepts(LinkerBackend::nvjitlink, format)) << to_string(format);
    EXPECT_EQ(backend_accepts(LinkerBackend::driver, format), format != Format::ltoir)
        << to_string(format);
  }
}

TEST(BackendCapabilities, CudaSourceCompilesToLtoIrOnlyWhereItCanBeLinked) {
  EXPECT_EQ(cu_compile_target(LinkerBackend::nvjitlink, true), CompileTarget::ltoir);
  EXPECT_EQ(cu_compile_target(LinkerBackend::nvjitlink, false), CompileTarget::ptx);
  EXPECT_EQ(cu_compile_target(LinkerBackend::driver, true), CompileTarget::ptx);
  EXPECT_EQ(cu_compile_target(LinkerBackend::driver, false), CompileTarget::ptx);
}

TEST(LinkerInputs, CudaSourceIsCompiledWhenAddedAndKeepsItsNrtFlag) {
  Linker linker(test::link_options(LinkerBackend::nvjitlink, true));
  linker.add(LinkableCode::from_path(test::scenario_path("fixtures/scale_kernel.cu")).set_nrt(true));
  ASSERT_EQ(linker.inputs().size(), 1u);
  EXPECT_EQ(linker.inputs()[0].format(), Format::ltoir);
  EXPECT_TRUE(linker.inputs()[0].nrt());
}

TEST(LinkerInputs, LtoWithoutLtoIrStillLinks) {
  // nvJitLink alone fails such a link with NVVM_ERROR_NO_MODULE_IN_PROGRAM.
  Linker linker(test::link_options(LinkerBackend::nvjitlink, true));
  linker.add_file(test::fixture_path("scale_kernel.ptx"));
  EXPECT_EQ(detect_format(linker.link().code.bytes()), Format::cubin);
}

TEST(LinkerInputs, IdenticalInputsAreLinkedOnce) {
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add_file(test::fixture_path("scale_kernel.ptx"));
  linker.add_file(test::fixture_path("scale_kernel.ptx"));
  const LinkResult result = linker.link();
  ASSERT_EQ(result.dropped_duplicates.size(), 1u);
  EXPECT_NE(result.dropped_duplicates[0].find("scale_kernel.ptx"), std::string::npos);
}

TEST(LinkedCode, IsACubinCarryingTheLoweredNamesOfItsCompiles) {
  CompileOptions compile;
  compile.arch = Arch::parse("sm_90");
  compile.name_expressions = {"fill<int>"};
  const CompileResult compiled =
      Program("template <class T> __global__ void fill(T* p) { *p = T(1); }\n", "fill.cu").compile(compile);
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add(compiled.code);
  const LinkResult result = linker.link();
  EXPECT_EQ(result.code.format(), Format::cubin);
  EXPECT_EQ(result.code.lowered_names().at("fill<int>"), "_Z4fillIiEvPT_");
}

TEST(LinkedCode, WhatALinkReportsSurvivesTheDiskTier) {
  test::TempDir dir;
  const auto link = [&](BuildCache& cache) {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, false), cache);
    linker.add_file(test::fixture_path("scale_kernel.ptx"));
    linker.add_file(test::fixture_path("scale_kernel.ptx"));
    return linker.link_cached();
  };
  CachedLink built = [&] {
    BuildCache cache(test::disk_cache_at(dir.path()));
    return link(cache);
  }();
  BuildCache cache(test::disk_cache_at(dir.path()));
  const CachedLink hit = link(cache);
  EXPECT_EQ(built.source, CacheSource::built);
  EXPECT_EQ(hit.source, CacheSource::disk);
  EXPECT_EQ(hit.key, built.key);
  EXPECT_EQ(hit.result.code.bytes(), built.result.code.bytes());
  EXPECT_EQ(hit.result.code.name(), built.result.code.name());
  EXPECT_EQ(hit.result.info_log, built.result.info_log);
  ASSERT_EQ(hit.result.dropped_duplicates.size(), 1u);
  EXPECT_EQ(hit.result.dropped_duplicates, built.result.dropped_duplicates);
  EXPECT_EQ(hit.result.arch, built.result.arch);
}

// numba-cuda writes `.target sm_90a` PTX on an H100 (sm_90). A link for the device links it
// for sm_90a and says so; the same link for an sm_90 asked for explicitly refuses it, naming
// the file. (LinkOptions as link_options_for_device makes them, without a GPU.)
TEST(LinkForTheDevice, TakesTheArchSpecificVariantTheDeviceRunsAndSaysSo) {
  const auto options = [](bool for_device) {
    LinkOptions o = test::link_options(LinkerBackend::nvjitlink, false, "sm_90");
    o.arch_is_device = for_device;
    return o;
  };
  const std::filesystem::path numba_ptx = test::scenario_path("fixtures/numba/add_i32_c_abi.ptx");
  CacheConfig off;
  off.mode = CacheMode::off;
  BuildCache cache(off);
  {
    Linker linker(options(true), cache);
    linker.add_file(numba_ptx);
    linker.add_file(test::fixture_path("scale_kernel.ptx"));  // plain sm_90 PTX links too
    const LinkResult result = linker.link();
    EXPECT_EQ(result.arch, Arch(9, 0, 'a'));
  }
  {
    Linker linker(options(true), cache);
    linker.add_file(test::fixture_path("scale_kernel.ptx"));
    EXPECT_EQ(linker.link().arch, Arch(9, 0)) << "no input needs sm_90a: the device's arch";
  }
  try {
    Linker linker(options(false), cache);
    linker.add_file(numba_ptx);
    ADD_FAILURE() << "sm_90a PTX taken for an explicit sm_90 link";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::link) << error.what();
    EXPECT_NE(std::string(error.what()).find("add_i32_c_abi.ptx"), std::string::npos) << error.what();
  }
  // The arch is part of the key: a link for the device is not another link's entry.
  std::vector<LinkableCode> inputs{LinkableCode::from_path(numba_ptx)};
  EXPECT_NE(link_key(inputs, options(true), LinkerBackend::nvjitlink).digest(),
            link_key(inputs, options(false), LinkerBackend::nvjitlink).digest());
}

// The definitions check remembers inputs it has read by their exact bytes: an input of the
// same size as one read before, defining another name, is read afresh.
TEST(LinkerInputs, DefinitionsOfARememberedInputAreNeverTakenForAnothers) {
  const std::string dev_mul = test::read_bytes(test::fixture_path("dev_mul.ptx"));
  const std::string dev_add = test::read_bytes(test::fixture_path("dev_add.ptx"));
  auto link = [](const std::string& first, const std::string& second) {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
    linker.add_data(Format::ptx, first, "first.ptx").add_data(Format::ptx, second, "second.ptx");
    return linker.link();
  };
  for (int round = 0; round < 2; ++round) {  // the second round reads remembered inputs
    EXPECT_NO_THROW((void)link(dev_add, dev_mul)) << round;
    CUJIT_EXPECT_ERROR((void)link(dev_add, dev_add + "\n"), ErrorKind::link, error,
                       EXPECT_NE(std::string(error.what()).find("'dev_add' in"), std::string::npos)
                           << error.what(););
  }
  // dev_mul's bytes with the name changed to one of the same length: dev_add again.
  std::string renamed = dev_mul;
  for (std::size_t at = renamed.find("dev_mul"); at != std::string::npos; at = renamed.find("dev_mul", at)) {
    renamed.replace(at, 7, "dev_add");
  }
  ASSERT_EQ(renamed.size(), dev_mul.size());
  CUJIT_EXPECT_ERROR((void)link(dev_add, renamed), ErrorKind::link, error,
                     EXPECT_NE(std::string(error.what()).find("defined more than once"), std::string::npos)
                         << error.what(););
}

TEST(LinkerInputs, NothingToLinkIsAUsageError) {
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  CUJIT_EXPECT_ERROR(linker.link(), ErrorKind::usage, error, (void)error;);
}

TEST(LinkerInputs, ReportsTheNvJitLinkVersion) {
  EXPECT_NE(nvjitlink_version(), "unknown");
}

}  // namespace
}  // namespace cujit
