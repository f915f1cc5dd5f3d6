// Mixed links: a kernel in one format calling device functions from two others. The same
// inputs through both backends must give the same result.
#include <gtest/gtest.h>

#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::Origin;

struct Mix {
  const char* kernel;
  const char* add;
  const char* mul;
};

void PrintTo(const Mix& mix, std::ostream* out) { *out << mix.kernel << " " << mix.add << " " << mix.mul; }

const Mix mixes[] = {
    {"mixed_kernel.ptx", "dev_add.ltoir", "dev_mul.o"},
    {"src:mixed_kernel.cu", "dev_add.a", "dev_mul_sass.fatbin"},
    {"mixed_kernel.ltoir", "dev_add.ptx", "dev_mul.cubin"},
    {"mixed_kernel.cubin", "dev_add.ptx", "dev_mul.a"},
    {"mixed_kernel.o", "dev_add.cubin", "dev_mul_ptx.fatbin"},
    {"mixed_kernel_ltoir.fatbin", "src:dev_add.cu", "dev_mul.ltoir"},
    {"mixed_kernel_sass.fatbin", "dev_add.o", "src:dev_mul.cu"},
    {"mixed_kernel.a", "dev_add_ptx.fatbin", "dev_mul.ptx"},
};

std::vector<test::FixtureInput> inputs_of(const Mix& mix) {
  return {test::fixture_input(mix.kernel), test::fixture_input(mix.add),
          test::fixture_input(mix.mul)};
}

bool needs_nvjitlink(const Mix& mix) {
  for (const auto& input : inputs_of(mix)) {
    if (input.format == Format::ltoir || input.file.find("ltoir.fatbin") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string mix_name(const ::testing::TestParamInfo<Mix>& info) {
  auto strip = [](std::string file) { return file.rfind("src:", 0) == 0 ? file.substr(4) : file; };
  return test::identifier(strip(info.param.kernel) + "__" + strip(info.param.add) + "__" +
                          strip(info.param.mul));
}

LinkResult link_mix(const Mix& mix, LinkerBackend backend) {
  Linker linker(test::link_options(backend, /*lto=*/true));
  Origin origin = Origin::path;
  for (const auto& input : inputs_of(mix)) {
    test::add_input(linker, input, origin);
    // Alternate the origin so every mix uses both add_file and add_data.
    origin = origin == Origin::path ? Origin::bytes : Origin::path;
  }
  return linker.link();
}

class MixedLink : public ::testing::TestWithParam<Mix> {};

TEST_P(MixedLink, NvJitLinkLinksAllThreeFormats) {
  const LinkResult result = link_mix(GetParam(), LinkerBackend::nvjitlink);
  EXPECT_EQ(detect_format(result.code.bytes()), Format::cubin);
  EXPECT_NE(result.code.bytes().find("mixed_kernel"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Mixes, MixedLink, ::testing::ValuesIn(mixes), mix_name);

class GpuMixedLink : public ::testing::TestWithParam<Mix> {};

TEST_P(GpuMixedLink, BothBackendsComputeTheSame) {
  CUJIT_REQUIRE_DEVICE();
  const int a = 6, b = 7;
  const std::vector<int> expected{a + b, a * b, a * b + a};
  const auto nvjitlink = test::run_int_kernel(
      link_mix(GetParam(), LinkerBackend::nvjitlink).code.bytes(), "mixed_kernel", 3, {a, b});
  EXPECT_EQ(nvjitlink, expected);
  if (needs_nvjitlink(GetParam())) {
    // LTO-IR inputs: the driver backend must refuse them as unsupported, naming one.
    CUJIT_EXPECT_ERROR(link_mix(GetParam(), LinkerBackend::driver), ErrorKind::unsupported,
                       error, EXPECT_NE(std::string(error.what()).find("ltoir"),
                                        std::string::npos););
    return;
  }
  const auto driver = test::run_int_kernel(link_mix(GetParam(), LinkerBackend::driver).code.bytes(),
                                           "mixed_kernel", 3, {a, b});
  EXPECT_EQ(driver, expected);
  EXPECT_EQ(driver, nvjitlink);
}

INSTANTIATE_TEST_SUITE_P(Mixes, GpuMixedLink, ::testing::ValuesIn(mixes), mix_name);

}  // namespace
}  // namespace cujit
