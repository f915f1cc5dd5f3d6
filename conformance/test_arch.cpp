#include <gtest/gtest.h>

#include "cujit/arch.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

TEST(ArchParse, AcceptsEverySpelling) {
  EXPECT_EQ(Arch::parse("sm_90"), Arch(9, 0));
  EXPECT_EQ(Arch::parse("sm_90a"), Arch(9, 0, 'a'));
  EXPECT_EQ(Arch::parse("compute_80"), Arch(8, 0));
  EXPECT_EQ(Arch::parse("lto_90"), Arch(9, 0));
  EXPECT_EQ(Arch::parse("90"), Arch(9, 0));
  EXPECT_EQ(Arch::parse("8.6"), Arch(8, 6));
  EXPECT_EQ(Arch::parse("sm_100f"), Arch(10, 0, 'f'));
  EXPECT_EQ(Arch::parse("sm_120"), Arch(12, 0));
}

TEST(ArchParse, RendersBothSpellings) {
  EXPECT_EQ(Arch(9, 0, 'a').sm(), "sm_90a");
  EXPECT_EQ(Arch(9, 0, 'a').compute(), "compute_90a");
  EXPECT_EQ(Arch(10, 0).sm(), "sm_100");
  EXPECT_EQ(Arch().sm(), "sm_90");
  EXPECT_EQ(Arch(8, 6).number(), 86);
}

TEST(ArchParse, RejectsGarbageNamingIt) {
  for (const char* text : {"", "sm_", "sm_9", "sm_x0", "banana", "sm_90b", "9.", "sm_90 "}) {
    CUJIT_EXPECT_ERROR(Arch::parse(text), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(std::string("'") + text + "'"),
                                 std::string::npos)
                           << error.what(););
  }
}

TEST(ArchCompatibility, PtxRules) {
  const Arch sm80(8, 0), sm90(9, 0), sm90a(9, 0, 'a'), sm100(10, 0), sm100f(10, 0, 'f'),
      sm103(10, 3);
  EXPECT_TRUE(ptx_compiles_for(sm80, sm90));   // PTX JIT is forward compatible
  EXPECT_FALSE(ptx_compiles_for(sm90, sm80));  // but never backward
  EXPECT_TRUE(ptx_compiles_for(sm90a, sm90a));
  EXPECT_FALSE(ptx_compiles_for(sm90a, sm90));  // arch-specific: that arch only
  EXPECT_FALSE(ptx_compiles_for(sm90a, sm100));
  EXPECT_TRUE(ptx_compiles_for(sm90, sm90a));
  EXPECT_TRUE(ptx_compiles_for(sm100f, sm103));  // family: same major, newer minor
  EXPECT_FALSE(ptx_compiles_for(sm100f, Arch(12, 0)));
}

// A link for the device uses the device's arch-specific variant exactly when an input was
// built for it; over every compute capability and suffix mix.
TEST(ArchCompatibility, ALinkForTheDeviceUsesItsArchSpecificVariantOnlyWhenAnInputNeedsIt) {
  const std::vector<std::pair<int, int>> capabilities{{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}};
  for (const auto& [major, minor] : capabilities) {
    const Arch device(major, minor);
    const Arch specific(major, minor, 'a');
    EXPECT_EQ(link_arch_for_device(device, {}), device);
    for (const auto& [other_major, other_minor] : capabilities) {
      for (const char suffix : {'\0', 'a', 'f'}) {
        const Arch input(other_major, other_minor, suffix);
        const Arch expected = input == specific ? specific : device;
        EXPECT_EQ(link_arch_for_device(device, {input}), expected) << device.sm() << " with " << input.sm();
        // The order and company of inputs do not matter.
        EXPECT_EQ(link_arch_for_device(device, {Arch(8, 0), input, device}), expected);
      }
    }
    // A device given with a suffix is used as given.
    EXPECT_EQ(link_arch_for_device(specific, {Arch(major, minor, 'f')}), specific);
  }
}

TEST(ArchCompatibility, SassRules) {
  EXPECT_TRUE(sass_runs_on(Arch(8, 0), Arch(8, 6)));
  EXPECT_FALSE(sass_runs_on(Arch(8, 6), Arch(8, 0)));
  EXPECT_FALSE(sass_runs_on(Arch(8, 0), Arch(9, 0)));
  EXPECT_TRUE(sass_runs_on(Arch(9, 0), Arch(9, 0, 'a')));
}

TEST(GpuArch, ReadsTheDevice) {
  CUJIT_REQUIRE_DEVICE();
  const Arch arch = Arch::of_device(0);
  EXPECT_GE(arch.major(), 7);
  EXPECT_EQ(arch.suffix(), '\0');
}

}  // namespace
}  // namespace cujit
