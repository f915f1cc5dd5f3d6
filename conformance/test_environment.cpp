// cujit's environment variables: documented values are read as documented; anything else
// is a usage error naming the variable, never a silent default.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <utility>

#include "cujit/build_cache.hpp"
#include "cujit/environment.hpp"
#include "cujit/linker.hpp"
#include "cujit/nrt.hpp"
#include "support/fixtures.hpp"
#include "support/scoped_variable.hpp"

namespace cujit {
namespace {

// Sets a variable for one test and restores it.
using ::cujit::test::ScopedVariable;

constexpr const char* variable = "CUJIT_TEST_VARIABLE";

TEST(Environment, FlagsReadTheDocumentedSpellings) {
  for (const char* yes : {"1", "true", "on", "yes", "YES"}) {
    ScopedVariable set(variable, yes);
    EXPECT_TRUE(environment::flag(variable, false)) << yes;
  }
  for (const char* no : {"0", "false", "off", "no", "NO"}) {
    ScopedVariable set(variable, no);
    EXPECT_FALSE(environment::flag(variable, true)) << no;
  }
  {
    ScopedVariable set(variable, "");
    EXPECT_TRUE(environment::flag(variable, true)) << "empty means unset";
  }
  ::unsetenv(variable);
  EXPECT_TRUE(environment::flag(variable, true));
  EXPECT_FALSE(environment::flag(variable, false));
}

TEST(HostileEnvironment, AnythingElseIsAUsageErrorNamingTheVariable) {
  for (const char* bad : {"yes please", "2", "enable", " 1", "tru", "\n"}) {
    ScopedVariable set(variable, bad);
    CUJIT_EXPECT_ERROR((void)environment::flag(variable, false), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(variable), std::string::npos);
                       EXPECT_NE(std::string(error.what()).find(bad), std::string::npos););
  }
  {
    ScopedVariable set(variable, "sometimes");
    CUJIT_EXPECT_ERROR((void)environment::choice(variable, {"off", "disk"}, "disk"), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find("one of off, disk"), std::string::npos););
  }
  for (const char* bad : {"-1", "1e9", "12MB", "18446744073709551616", "0x10"}) {
    ScopedVariable set(variable, bad);
    CUJIT_EXPECT_ERROR((void)environment::count(variable, 7), ErrorKind::usage, error, (void)error;);
  }
}

TEST(Environment, ByteSizesTakeBinaryUnitsAndFractions) {
  const std::pair<const char*, std::uint64_t> sizes[] = {
      {"0", 0},
      {"1073741824", 1073741824},
      {"512M", 512ull << 20},
      {"512m", 512ull << 20},
      {"1G", 1ull << 30},
      {"1GiB", 1ull << 30},
      {"1GB", 1ull << 30},
      {"64KiB", 64ull << 10},
      {"2T", 2ull << 40},
      {"100B", 100},
      {"1.5G", 3ull << 29},
      {"0.5K", 512},
      {"1.0001K", 1024},  // rounded down to whole bytes
      {"18446744073709551615", 18446744073709551615ull},
      {"15.99999999999999999999999T", 17592186044415ull},  // digits past 19 dropped, never rounded up
  };
  for (const auto& [text, bytes] : sizes) EXPECT_EQ(environment::parse_byte_size(text), bytes) << text;
  ScopedVariable set(variable, "3G");
  EXPECT_EQ(environment::byte_size(variable, 7), 3ull << 30);
}

TEST(HostileEnvironment, AnythingButAByteSizeIsAUsageErrorNamingIt) {
  for (const char* bad : {"", "G", "-1", "+1G", "1 G", " 1G", "1G ", "1e9", "0x10", "1.G", ".5G", "1.5",
                          "1.5B", "1P", "1Gi", "1iB", "1GBB", "1KK", "16384P", "16777216T",
                          "18446744073709551616", "17179869184G", "1,5G", "1G\n", "ten"}) {
    CUJIT_EXPECT_ERROR((void)environment::parse_byte_size(bad), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(std::string("'") + bad + "'"), std::string::npos)
                           << error.what(););
  }
  ScopedVariable set(variable, "1.5");
  CUJIT_EXPECT_ERROR((void)environment::byte_size(variable, 7), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find(std::string(variable) + "='1.5'"), std::string::npos)
                         << error.what(););
  ScopedVariable unset(variable, "");
  EXPECT_EQ(environment::byte_size(variable, 7), 7u) << "empty means unset";
}

TEST(Environment, CacheSizesFromTheEnvironmentTakeUnits) {
  ScopedVariable max("CUJIT_CACHE_MAX_BYTES", "2G");
  ScopedVariable memory("CUJIT_CACHE_MEMORY_BYTES", "512M");
  const CacheConfig config = CacheConfig::from_environment();
  EXPECT_EQ(config.max_disk_bytes, 2ull << 30);
  EXPECT_EQ(config.max_memory_bytes, 512ull << 20);
}

TEST(Environment, AbsolutePathsAreReturnedAsGiven) {
  {
    ScopedVariable set(variable, "/opt/cuda-13.1/lib64/libnvrtc.so.13");
    EXPECT_EQ(environment::absolute_path(variable), "/opt/cuda-13.1/lib64/libnvrtc.so.13");
  }
  {
    ScopedVariable set(variable, "");
    EXPECT_EQ(environment::absolute_path(variable), std::nullopt) << "empty means unset";
  }
  ::unsetenv(variable);
  EXPECT_EQ(environment::absolute_path(variable), std::nullopt);
}

TEST(HostileEnvironment, ARelativePathIsAUsageErrorNamingTheVariable) {
  for (const char* bad : {"libnvrtc.so.13", "./libnvrtc.so", "~/lib/libnvrtc.so", " /lib/x.so"}) {
    ScopedVariable set(variable, bad);
    CUJIT_EXPECT_ERROR((void)environment::absolute_path(variable), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(variable), std::string::npos);
                       EXPECT_NE(std::string(error.what()).find("an absolute path"), std::string::npos););
  }
}

TEST(HostileEnvironment, ABadNrtSwitchIsAnErrorNotSilentlyOff) {
  ScopedVariable set("CUJIT_ENABLE_NRT", "yes please");
  // The process-wide switch may already have been decided by another test in this
  // process; the reading itself is what is checked.
  CUJIT_EXPECT_ERROR((void)environment::flag("CUJIT_ENABLE_NRT", false), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("CUJIT_ENABLE_NRT"), std::string::npos););
}

TEST(HostileEnvironment, ABadLinkerNameFailsOnlyLinksThatReadIt) {
  ScopedVariable set("CUJIT_LINKER", "nvjitlnk");
  LinkOptions options;
  options.arch = Arch::parse("sm_90");
  CUJIT_EXPECT_ERROR(Linker{options}, ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("CUJIT_LINKER"), std::string::npos););
  options.backend = LinkerBackend::nvjitlink;
  EXPECT_EQ(Linker(options).backend(), LinkerBackend::nvjitlink);
}

}  // namespace
}  // namespace cujit
