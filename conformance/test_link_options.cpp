// The typed link options (link_options.hpp): their exact nvJitLink and NVRTC spellings, the
// refusals per backend, value checks, and their place in the link and memo keys.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "cujit/link_options.hpp"
#include "cujit/linker.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

LinkOptions sm90() {
  LinkOptions options;
  options.arch = Arch::parse("sm_90");
  return options;
}

LinkOptions every_flag() {
  LinkOptions options = sm90();
  LinkFlags& f = options.flags;
  f.debug = true;
  f.line_info = true;
  f.max_registers = 32;
  f.optimization_level = 0;
  f.ftz = true;
  f.prec_div = false;
  f.prec_sqrt = false;
  f.fma = false;
  f.kernels_used = {"kern"};
  f.variables_used = {"var"};
  f.split_compile = 2;
  f.verbose = true;
  f.ptxas_options = {"--warn-on-spills"};
  options.nvjitlink_options = {"-time"};
  return options;
}

TEST(LinkOptionStrings, EachFlagHasItsNvJitLinkSpellingInCanonicalOrder) {
  const std::vector<std::string> expected{
      "-g", "-lineinfo", "-maxrregcount=32", "-O0", "-ftz=1", "-prec-div=0", "-prec-sqrt=0", "-fma=0",
      "-kernels-used=kern", "-variables-used=var", "-split-compile=2", "-verbose",
      "-Xptxas=--warn-on-spills", "-time"};
  EXPECT_EQ(nvjitlink_option_strings(every_flag(), /*lto=*/true), expected);
}

TEST(LinkOptionStrings, OptionsActingOnlyOnLtoIrAreLeftOutWithoutLto) {
  const std::vector<std::string> expected{
      "-g", "-lineinfo", "-maxrregcount=32", "-O0", "-kernels-used=kern", "-split-compile=2",
      "-verbose", "-Xptxas=--warn-on-spills", "-time"};
  EXPECT_EQ(nvjitlink_option_strings(every_flag(), /*lto=*/false), expected);
}

TEST(LinkOptionStrings, NoFlagsNoStrings) {
  EXPECT_TRUE(nvjitlink_option_strings(sm90(), true).empty());
  EXPECT_TRUE(link_nvrtc_options(LinkFlags{}).empty());
}

TEST(LinkOptionStrings, CompileAffectingFlagsReachNvrtcForCuInputs) {
  const std::vector<std::string> expected{"-G", "-lineinfo", "--ftz=true", "--prec-div=false",
                                          "--prec-sqrt=false", "--fmad=false"};
  EXPECT_EQ(link_nvrtc_options(every_flag().flags), expected);
  LinkOptions options = every_flag();
  const CompileOptions compile = cu_compile_options(options, CompileTarget::ltoir);
  EXPECT_EQ(compile.options, expected);
  EXPECT_EQ(compile.target, CompileTarget::ltoir);
  EXPECT_EQ(compile.arch.sm(), "sm_90");
}

TEST(LinkOptionNames, EveryOptionSetIsListedByItsFieldName) {
  std::vector<std::string> names;
  for (LinkOption option : options_set(every_flag())) names.emplace_back(to_string(option));
  const std::vector<std::string> expected{"debug", "line_info", "max_registers", "optimization_level", "ftz",
                                          "prec_div", "prec_sqrt", "fma", "kernels_used", "variables_used",
                                          "split_compile", "verbose", "ptxas_options", "nvjitlink_options"};
  EXPECT_EQ(names, expected);
  EXPECT_TRUE(options_set(sm90()).empty());
}

// One option set alone, for the refusal tables.
struct OneOption {
  const char* name;
  std::function<void(LinkOptions&)> set;
};

void PrintTo(const OneOption& option, std::ostream* out) { *out << option.name; }

const std::vector<OneOption>& driver_refused() {
  static const std::vector<OneOption> options{
      {"ftz", [](LinkOptions& o) { o.flags.ftz = true; }},
      {"prec_div", [](LinkOptions& o) { o.flags.prec_div = false; }},
      {"fma", [](LinkOptions& o) { o.flags.fma = false; }},
      {"kernels_used", [](LinkOptions& o) { o.flags.kernels_used = {"k"}; }},
      {"variables_used", [](LinkOptions& o) { o.flags.variables_used = {"v"}; }},
      {"ptxas_options", [](LinkOptions& o) { o.flags.ptxas_options = {"-v"}; }},
      {"nvjitlink_options", [](LinkOptions& o) { o.nvjitlink_options = {"-g"}; }},
  };
  return options;
}

class DriverRefuses : public ::testing::TestWithParam<OneOption> {};

TEST_P(DriverRefuses, NamingTheOptionAndTheBackend) {
  LinkOptions options = sm90();
  GetParam().set(options);
  CUJIT_EXPECT_ERROR(check_link_options(options, LinkerBackend::driver), ErrorKind::unsupported, error, {
    EXPECT_TRUE(contains(error.message(), "'" + std::string(GetParam().name) + "'")) << error.what();
    EXPECT_TRUE(contains(error.message(), "driver backend")) << error.what();
    EXPECT_TRUE(contains(error.component(), "driver")) << error.component();
  });
  // The same option with LTO is what nvJitLink takes.
  options.lto = true;
  EXPECT_NO_THROW(check_link_options(options, LinkerBackend::nvjitlink));
  // And a Linker never gets built with it: no driver call is made (no GPU here).
  options.lto = false;
  options.backend = LinkerBackend::driver;
  CUJIT_EXPECT_ERROR(const Linker linker(options), ErrorKind::unsupported, error, {});
}

INSTANTIATE_TEST_SUITE_P(Options, DriverRefuses, ::testing::ValuesIn(driver_refused()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

const std::vector<OneOption>& nvjitlink_refused_without_lto() {
  static const std::vector<OneOption> options{
      {"ftz", [](LinkOptions& o) { o.flags.ftz = false; }},
      {"prec_div", [](LinkOptions& o) { o.flags.prec_div = true; }},
      {"fma", [](LinkOptions& o) { o.flags.fma = true; }},
      {"variables_used", [](LinkOptions& o) { o.flags.variables_used = {"v"}; }},
  };
  return options;
}

class NvJitLinkWithoutLtoRefuses : public ::testing::TestWithParam<OneOption> {};

TEST_P(NvJitLinkWithoutLtoRefuses, NamingTheOptionTheBackendAndTheFix) {
  LinkOptions options = sm90();
  GetParam().set(options);
  CUJIT_EXPECT_ERROR(check_link_options(options, LinkerBackend::nvjitlink), ErrorKind::unsupported, error, {
    EXPECT_TRUE(contains(error.message(), "'" + std::string(GetParam().name) + "'")) << error.what();
    EXPECT_TRUE(contains(error.message(), "nvjitlink backend")) << error.what();
    EXPECT_TRUE(contains(error.message(), "lto = true")) << error.what();
  });
  options.lto = true;
  EXPECT_NO_THROW(check_link_options(options, LinkerBackend::nvjitlink));
}

INSTANTIATE_TEST_SUITE_P(Options, NvJitLinkWithoutLtoRefuses, ::testing::ValuesIn(nvjitlink_refused_without_lto()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(LinkOptionChecks, PrecSqrtIsRefusedByBothBackendsPointingToNvrtc) {
  for (LinkerBackend backend : {LinkerBackend::nvjitlink, LinkerBackend::driver}) {
    LinkOptions options = sm90();
    options.lto = true;
    options.flags.prec_sqrt = false;
    CUJIT_EXPECT_ERROR(check_link_options(options, backend), ErrorKind::unsupported, error, {
      EXPECT_TRUE(contains(error.message(), "'prec_sqrt'")) << error.what();
      EXPECT_TRUE(contains(error.message(), std::string(to_string(backend)) + " backend")) << error.what();
      EXPECT_TRUE(contains(error.message(), "--prec-sqrt")) << error.what();
    });
  }
}

TEST(LinkOptionChecks, NvJitLinkTakesOnlyOptimisationLevelsZeroAndThree) {
  for (unsigned level : {0u, 3u}) {
    LinkOptions options = sm90();
    options.flags.optimization_level = level;
    EXPECT_NO_THROW(check_link_options(options, LinkerBackend::nvjitlink)) << level;
    EXPECT_NO_THROW(check_link_options(options, LinkerBackend::driver)) << level;
  }
  for (unsigned level : {1u, 2u}) {
    LinkOptions options = sm90();
    options.flags.optimization_level = level;
    CUJIT_EXPECT_ERROR(check_link_options(options, LinkerBackend::nvjitlink), ErrorKind::unsupported, error, {
      EXPECT_TRUE(contains(error.message(), "'optimization_level'")) << error.what();
      EXPECT_TRUE(contains(error.message(), "-O0 and -O3")) << error.what();
    });
    EXPECT_NO_THROW(check_link_options(options, LinkerBackend::driver)) << level;
  }
}

TEST(LinkOptionChecks, BothBackendsTakeTheSharedFlags) {
  LinkOptions options = sm90();
  options.flags.debug = true;
  options.flags.line_info = true;
  options.flags.max_registers = 64;
  options.flags.optimization_level = 3;
  options.flags.split_compile = 0;
  options.flags.verbose = true;
  EXPECT_NO_THROW(check_link_options(options, LinkerBackend::nvjitlink));
  EXPECT_NO_THROW(check_link_options(options, LinkerBackend::driver));
}

TEST(LinkOptionChecks, ValuesOutOfRangeAreUsageErrorsNamingTheOption) {
  const std::vector<OneOption> bad{
      {"max_registers", [](LinkOptions& o) { o.flags.max_registers = 0; }},
      {"max_registers", [](LinkOptions& o) { o.flags.max_registers = 256; }},
      {"optimization_level", [](LinkOptions& o) { o.flags.optimization_level = 4; }},
      {"kernels_used", [](LinkOptions& o) { o.flags.kernels_used = {""}; }},
      {"kernels_used", [](LinkOptions& o) { o.flags.kernels_used = {"a -g"}; }},
      {"variables_used", [](LinkOptions& o) { o.flags.variables_used = {"v\n-lto"}; }},
      {"ptxas_options", [](LinkOptions& o) { o.flags.ptxas_options = {"-v -O0"}; }},
      {"nvjitlink_options", [](LinkOptions& o) { o.nvjitlink_options = {"-g\t-O0"}; }},
  };
  for (const OneOption& option : bad) {
    for (LinkerBackend backend : {LinkerBackend::nvjitlink, LinkerBackend::driver}) {
      LinkOptions options = sm90();
      options.lto = true;
      option.set(options);
      CUJIT_EXPECT_ERROR(check_link_options(options, backend), ErrorKind::usage, error, {
        EXPECT_TRUE(contains(error.message(), option.name)) << error.what();
      });
    }
  }
}

// Every flag, changed alone, changes the link key; equal flags give equal keys.
const std::vector<OneOption>& each_flag_change() {
  static const std::vector<OneOption> options{
      {"debug", [](LinkOptions& o) { o.flags.debug = true; }},
      {"line_info", [](LinkOptions& o) { o.flags.line_info = true; }},
      {"max_registers", [](LinkOptions& o) { o.flags.max_registers = 32; }},
      {"max_registers_other_value", [](LinkOptions& o) { o.flags.max_registers = 64; }},
      {"optimization_level", [](LinkOptions& o) { o.flags.optimization_level = 0; }},
      {"ftz_on", [](LinkOptions& o) { o.flags.ftz = true; }},
      {"ftz_off", [](LinkOptions& o) { o.flags.ftz = false; }},
      {"prec_div", [](LinkOptions& o) { o.flags.prec_div = false; }},
      {"prec_sqrt", [](LinkOptions& o) { o.flags.prec_sqrt = false; }},
      {"fma", [](LinkOptions& o) { o.flags.fma = false; }},
      {"kernels_used", [](LinkOptions& o) { o.flags.kernels_used = {"k"}; }},
      {"variables_used", [](LinkOptions& o) { o.flags.variables_used = {"v"}; }},
      {"split_compile", [](LinkOptions& o) { o.flags.split_compile = 4; }},
      {"verbose", [](LinkOptions& o) { o.flags.verbose = true; }},
      {"ptxas_options", [](LinkOptions& o) { o.flags.ptxas_options = {"-v"}; }},
      {"nvjitlink_options", [](LinkOptions& o) { o.nvjitlink_options = {"-time"}; }},
  };
  return options;
}

class LinkKeyFlag : public ::testing::TestWithParam<OneOption> {};

TEST_P(LinkKeyFlag, ChangesTheKey) {
  const std::vector<LinkableCode> inputs{LinkableCode::ptx(".version 8.0\n.target sm_90\n.address_size 64\n", "a.ptx")};
  LinkOptions options = sm90();
  options.lto = true;
  const std::string base = link_key(inputs, options, LinkerBackend::nvjitlink).digest();
  EXPECT_EQ(link_key(inputs, options, LinkerBackend::nvjitlink).digest(), base);
  GetParam().set(options);
  EXPECT_NE(link_key(inputs, options, LinkerBackend::nvjitlink).digest(), base);
}

INSTANTIATE_TEST_SUITE_P(Flags, LinkKeyFlag, ::testing::ValuesIn(each_flag_change()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(LinkKeyFlags, KernelAndVariableListsAreKeyedAsSetsPtxasOptionsInOrder) {
  const auto digest = [](const LinkFlags& flags) {
    CacheKey key("t");
    add_link_flags(key, flags);
    return key.digest();
  };
  LinkFlags a, b;
  a.kernels_used = {"x", "y"};
  b.kernels_used = {"y", "x", "x"};
  a.variables_used = {"p", "q"};
  b.variables_used = {"q", "p"};
  EXPECT_EQ(digest(a), digest(b));
  a.ptxas_options = {"-v", "--warn-on-spills"};
  b.ptxas_options = {"--warn-on-spills", "-v"};
  EXPECT_NE(digest(a), digest(b));
}

}  // namespace
}  // namespace cujit
