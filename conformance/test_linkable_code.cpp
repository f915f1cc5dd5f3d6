// LinkableCode factories and from_path: format by extension, checked against content.
#include <gtest/gtest.h>

#include "cujit/linkable_code.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

using test::fixture_path;
using test::read_bytes;

TEST(LinkableCode, FromPathPicksTheFormatByExtension) {
  const struct {
    const char* file;
    Format format;
  } cases[] = {{"scale_kernel.ptx", Format::ptx},     {"scale_kernel.ltoir", Format::ltoir},
               {"scale_kernel.cubin", Format::cubin}, {"scale_kernel_ptx.fatbin", Format::fatbin},
               {"scale_kernel.o", Format::object},    {"scale_kernel.a", Format::archive}};
  for (const auto& c : cases) {
    const LinkableCode code = LinkableCode::from_path(fixture_path(c.file));
    EXPECT_EQ(code.format(), c.format) << c.file;
    EXPECT_EQ(code.name(), fixture_path(c.file).string());
    EXPECT_EQ(code.bytes(), read_bytes(fixture_path(c.file)));
    EXPECT_FALSE(code.nrt());
  }
  const LinkableCode source =
      LinkableCode::from_path(test::scenario_path("fixtures/scale_kernel.cu"));
  EXPECT_EQ(source.format(), Format::cu);
}

TEST(LinkableCode, FactoriesCheckTheBytes) {
  const std::string ptx = read_bytes(fixture_path("scale_kernel.ptx"));
  EXPECT_EQ(LinkableCode::ptx(ptx, "k.ptx").format(), Format::ptx);
  CUJIT_EXPECT_ERROR(LinkableCode::cubin(ptx, "k.cubin"), ErrorKind::format, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("'k.cubin'"), std::string::npos) << what;
                     EXPECT_NE(what.find("given as cubin"), std::string::npos) << what;
                     EXPECT_NE(what.find("content is ptx"), std::string::npos) << what;);
  CUJIT_EXPECT_ERROR(LinkableCode::ltoir("", "empty.ltoir"), ErrorKind::format, error,
                     EXPECT_NE(std::string(error.what()).find("'empty.ltoir' is empty"),
                               std::string::npos););
}

TEST(HostileLinkableCode, ADamagedBinaryIsAFormatErrorNamingTheInputAndTheDamage) {
  std::string cubin = read_bytes(fixture_path("scale_kernel.cubin"));
  cubin[40] = '\x5f';  // e_shoff's low byte: nvJitLink 13.0 dies in nvJitLinkAddData on it
  CUJIT_EXPECT_ERROR(LinkableCode::cubin(cubin, "k.cubin"), ErrorKind::format, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("'k.cubin' is not a valid cubin"), std::string::npos) << what;
                     EXPECT_NE(what.find("section header table"), std::string::npos) << what;);
  std::string ltoir = read_bytes(fixture_path("scale_kernel.ltoir"));
  ltoir[18] = '\x5f';  // the option data offset, far past the end
  CUJIT_EXPECT_ERROR(LinkableCode::ltoir(ltoir, "k.ltoir"), ErrorKind::format, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("'k.ltoir' is not a valid ltoir"), std::string::npos) << what;
                     EXPECT_NE(what.find("option data"), std::string::npos) << what;);
}

TEST(LinkableCode, NrtFlagTravelsWithTheCode) {
  LinkableCode code =
      LinkableCode::ptx(read_bytes(fixture_path("scale_kernel.ptx")), "k.ptx").set_nrt(true);
  EXPECT_TRUE(code.nrt());
  code.set_nrt(false);
  EXPECT_FALSE(code.nrt());
}

}  // namespace
}  // namespace cujit
