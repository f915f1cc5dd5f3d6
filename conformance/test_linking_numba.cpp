// numba-cuda's real C-ABI output (committed peer fixtures, sm_90a) linked into a CUDA C++
// kernel that calls it.
#include <gtest/gtest.h>

#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::scenario_path;

Linker numba_link(LinkerBackend backend, bool lto, const std::string& arch) {
  Linker linker(test::link_options(backend, lto, arch));
  linker.add_file(scenario_path("fixtures/numba_add_caller.cu"));
  linker.add_file(scenario_path("fixtures/numba/add_i32_c_abi.ptx"));
  linker.add_file(scenario_path("fixtures/numba/add_f32_c_abi_named.ptx"));
  return linker;
}

TEST(NumbaPeer, CAbiPtxLinksForSm90a) {
  for (bool lto : {false, true}) {
    const LinkResult result = numba_link(LinkerBackend::nvjitlink, lto, "sm_90a").link();
    EXPECT_EQ(detect_format(result.code.bytes()), Format::cubin) << "lto " << lto;
    EXPECT_NE(result.code.bytes().find("call_numba_add"), std::string::npos);
  }
}

TEST(NumbaPeer, Sm90aPtxRefusesPlainSm90) {
  CUJIT_EXPECT_ERROR(numba_link(LinkerBackend::nvjitlink, false, "sm_90").link(),
                     ErrorKind::link, error,
                     EXPECT_NE(std::string(error.what()).find(
                                   "cannot be compiled for architecture 'sm_90'"),
                               std::string::npos)
                         << error.what();
                     EXPECT_NE(std::string(error.what()).find("add_i32_c_abi.ptx"),
                               std::string::npos););
}

class GpuNumbaPeer : public ::testing::TestWithParam<LinkerBackend> {};

TEST_P(GpuNumbaPeer, ReturnsTheRightSums) {
  CUJIT_REQUIRE_DEVICE();
  if (Arch::of_device(0).number() != 90) {
    GTEST_SKIP() << "numba fixtures are sm_90a PTX; this device is " << Arch::of_device(0).sm();
  }
  const LinkResult result = numba_link(GetParam(), false, "sm_90a").link();
  auto module = Module::load(LinkableCode::cubin(result.code.bytes(), "numba_add_caller"));
  const Kernel kernel = module->kernel("call_numba_add");
  constexpr unsigned threads = 64;
  DeviceBuffer ints(threads * sizeof(int)), floats(threads * sizeof(float));
  ints.fill_bytes(0xCD);
  floats.fill_bytes(0xCD);
  const int a = -40, b = 3;
  const float x = 1.5f, y = 0.25f;
  LaunchConfig config;
  config.block.x = threads;
  kernel(config, ints.ptr(), floats.ptr(), a, b, x, y);
  const auto got_i = ints.to_vector<int>(threads);
  const auto got_f = floats.to_vector<float>(threads);
  for (unsigned i = 0; i < threads; ++i) {
    EXPECT_EQ(got_i[i], a + static_cast<int>(i) * b) << i;
    EXPECT_FLOAT_EQ(got_f[i], x + static_cast<float>(i) * y) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuNumbaPeer,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         [](const auto& cell) { return std::string(to_string(cell.param)); });

}  // namespace
}  // namespace cujit
