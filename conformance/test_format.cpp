// Format table, detection by content, integrity checks and embedded code kinds.
#include <gtest/gtest.h>

#include "cujit/format.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::read_bytes;

TEST(FormatTable, EveryFormatHasANameAndCanonicalExtension) {
  for (Format format : all_formats) {
    EXPECT_EQ(parse_format(to_string(format)), format);
    ASSERT_FALSE(traits(format).extensions.empty()) << to_string(format);
    EXPECT_EQ(format_from_extension(traits(format).extensions.front()), format);
  }
}

TEST(FormatTable, ExtensionsMapToFormats) {
  EXPECT_EQ(format_from_extension(".ptx"), Format::ptx);
  EXPECT_EQ(format_from_extension(".cu"), Format::cu);
  EXPECT_EQ(format_from_extension(".ltoir"), Format::ltoir);
  EXPECT_EQ(format_from_extension(".cubin"), Format::cubin);
  EXPECT_EQ(format_from_extension(".fatbin"), Format::fatbin);
  EXPECT_EQ(format_from_extension(".o"), Format::object);
  EXPECT_EQ(format_from_extension(".a"), Format::archive);
  EXPECT_EQ(format_from_extension(".lib"), Format::archive);
  EXPECT_EQ(format_from_extension(".cuh"), std::nullopt);
  EXPECT_EQ(format_from_extension(""), std::nullopt);
}

TEST(FormatTable, LinkerInputTypesFollowTheApis) {
  // cu is compiled first; the driver linker takes no LTO-IR.
  EXPECT_LT(traits(Format::cu).nvjitlink_input, 0);
  EXPECT_LT(traits(Format::cu).driver_input, 0);
  EXPECT_LT(traits(Format::ltoir).driver_input, 0);
  for (Format format : {Format::ptx, Format::cubin, Format::fatbin, Format::object,
                        Format::archive}) {
    EXPECT_GE(traits(format).driver_input, 0) << to_string(format);
    EXPECT_GE(traits(format).nvjitlink_input, 0) << to_string(format);
  }
}

struct DetectCase {
  const char* fixture;
  Format format;
};

class FormatDetection : public ::testing::TestWithParam<DetectCase> {};

TEST_P(FormatDetection, RecognisesNvccOutput) {
  const std::string bytes = read_bytes(fixture_path(GetParam().fixture));
  EXPECT_EQ(detect_format(bytes), GetParam().format);
  EXPECT_EQ(integrity_problem(GetParam().format, bytes), "");
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, FormatDetection,
    ::testing::Values(DetectCase{"scale_kernel.ptx", Format::ptx},
                      DetectCase{"scale_kernel.ltoir", Format::ltoir},
                      DetectCase{"scale_kernel.cubin", Format::cubin},
                      DetectCase{"scale_kernel_sass.fatbin", Format::fatbin},
                      DetectCase{"scale_kernel_ptx.fatbin", Format::fatbin},
                      DetectCase{"scale_kernel_ltoir.fatbin", Format::fatbin},
                      DetectCase{"scale_kernel.o", Format::object},
                      DetectCase{"scale_kernel.a", Format::archive}),
    [](const auto& cell) {
      std::string name = cell.param.fixture;
      for (char& c : name) {
        if (c == '.') c = '_';
      }
      return name;
    });

TEST(FormatDetection, TextThatIsNotPtxIsCudaSource) {
  EXPECT_EQ(detect_format("__global__ void k() {}\n"), Format::cu);
  EXPECT_EQ(detect_format(".version 9.0\n.target sm_90\n"), Format::ptx);
  // Directives must be whole tokens.
  EXPECT_EQ(detect_format("// .versionX .targets\n"), Format::cu);
  EXPECT_EQ(detect_format(""), std::nullopt);
  EXPECT_EQ(detect_format(std::string("\x01\x02\x00\x03", 4)), std::nullopt);
}

TEST(FormatIntegrity, TruncationOfEachBinaryFormatIsFound) {
  for (const char* name : {"scale_kernel.cubin", "scale_kernel_sass.fatbin",
                           "scale_kernel.o", "scale_kernel.a"}) {
    const std::string bytes = read_bytes(fixture_path(name));
    const auto format = detect_format(bytes);
    ASSERT_TRUE(format.has_value()) << name;
    for (std::size_t keep : {bytes.size() / 2, bytes.size() - 1, std::size_t{12}}) {
      const std::string cut = bytes.substr(0, keep);
      const auto cut_format = detect_format(cut);
      const bool detected_same = cut_format == format;
      const std::string problem = detected_same ? integrity_problem(*format, cut) : "";
      EXPECT_TRUE(!detected_same || !problem.empty())
          << name << " cut to " << keep << " bytes passed as intact";
    }
  }
}

TEST(EmbeddedCode, FatbinEntryKindsAreRead) {
  const auto sass = embedded_code_kinds(read_bytes(fixture_path("scale_kernel_sass.fatbin")));
  EXPECT_TRUE(sass.sass);
  EXPECT_FALSE(sass.ptx);
  EXPECT_FALSE(sass.ltoir);
  const auto ptx = embedded_code_kinds(read_bytes(fixture_path("scale_kernel_ptx.fatbin")));
  EXPECT_TRUE(ptx.ptx);
  EXPECT_FALSE(ptx.sass);
  const auto lto = embedded_code_kinds(read_bytes(fixture_path("scale_kernel_ltoir.fatbin")));
  EXPECT_TRUE(lto.ltoir);
  EXPECT_FALSE(lto.sass);
  const auto object = embedded_code_kinds(read_bytes(fixture_path("scale_kernel.o")));
  EXPECT_TRUE(object.sass);
  EXPECT_TRUE(object.ptx);
  EXPECT_FALSE(object.ltoir);
}

TEST(CubinArch, ReadFromTheElfHeader) {
  EXPECT_EQ(cubin_sm_number(read_bytes(fixture_path("scale_kernel.cubin"))), 90);
  EXPECT_EQ(cubin_sm_number(read_bytes(fixture_path("scale_kernel_sm80.cubin"))), 80);
  EXPECT_EQ(cubin_sm_number(read_bytes(fixture_path("scale_kernel.ptx"))), std::nullopt);
}

TEST(PtxTarget, ReadsTheDirectiveOperand) {
  EXPECT_EQ(ptx_target(".version 9.0\n.target sm_90a\n"), "sm_90a");
  EXPECT_EQ(ptx_target(".version 9.0\n.target\tsm_80, debug\n"), "sm_80");
  EXPECT_EQ(ptx_target("// no target here\n"), std::nullopt);
  EXPECT_EQ(ptx_target(read_bytes(fixture_path("scale_kernel.ptx"))), "sm_90");
}

TEST(EmbeddedCode, NeedsLtoOnlyWhenLtoIrIsAllThereIs) {
  EXPECT_TRUE(needs_lto(Format::ltoir, read_bytes(fixture_path("scale_kernel.ltoir"))));
  EXPECT_TRUE(needs_lto(Format::fatbin, read_bytes(fixture_path("scale_kernel_ltoir.fatbin"))));
  EXPECT_FALSE(needs_lto(Format::fatbin, read_bytes(fixture_path("scale_kernel_sass.fatbin"))));
  EXPECT_FALSE(needs_lto(Format::object, read_bytes(fixture_path("scale_kernel.o"))));
  EXPECT_FALSE(needs_lto(Format::ptx, read_bytes(fixture_path("scale_kernel.ptx"))));
}

}  // namespace
}  // namespace cujit
