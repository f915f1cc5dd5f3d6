// cujit's environment variables: documented values are read as documented; anything else
// is a usage error naming the variable, never a silent default.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "cujit/environment.hpp"
#include "cujit/linker.hpp"
#include "cujit/nrt.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

// Sets a variable for one test and restores it.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

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
