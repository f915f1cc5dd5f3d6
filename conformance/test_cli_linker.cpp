// `cujit repro` honours CUJIT_LINKER: the value forces the backend of every step, the
// scenario file's "backend" included (core's choose_backend reads the value; an unknown
// one is exit 2 naming it).
#include <gtest/gtest.h>

#include "cli_test_support.hpp"
#include "cujit/device.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::run_cujit;
using test::cli::Spec;

Spec repro(const fs::path& dir, const std::string& backend, const std::optional<std::string>& linker,
           bool in_process) {
  test::cli::write_file(dir / "s.json", test::cli::linking_scenario("linker", backend));
  Spec s;
  s.args = {"repro", "s.json"};
  if (in_process) s.args.insert(s.args.begin() + 1, "--in-process");
  s.cwd = dir;
  s.unset = {"CUJIT_LINKER", "CUJIT_TEST_REPRO_CRASH"};
  if (linker) s.env = {{"CUJIT_LINKER", *linker}};
  return s;
}

class CliReproLinker : public ::testing::TestWithParam<bool> {};  // in process or isolated

// "both" in the file, nvjitlink from the environment: one step, through nvJitLink, so it
// runs without a GPU.
TEST_P(CliReproLinker, NvjitlinkFromTheEnvironmentReplacesBoth) {
  TempDir dir;
  const auto run = run_cujit(repro(dir.path(), "both", "nvjitlink", GetParam()));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.out.find("step 1 [nvjitlink]"), std::string::npos) << run.all();
  EXPECT_EQ(run.out.find("[driver]"), std::string::npos) << run.all();
  EXPECT_NE(run.err.find("CUJIT_LINKER=nvjitlink: every step runs through nvjitlink (the file says both)"),
            std::string::npos)
      << run.all();
}

// "nvjitlink" in the file, driver from the environment: every step through the driver
// linker, which needs a device (exit 2 saying so without one).
TEST_P(CliReproLinker, DriverFromTheEnvironmentReplacesNvjitlink) {
  TempDir dir;
  const auto run = run_cujit(repro(dir.path(), "nvjitlink", "driver", GetParam()));
  if (has_device()) {
    EXPECT_EQ(run.exit_code, 0) << run.all();
    EXPECT_NE(run.out.find("step 1 [driver]"), std::string::npos) << run.all();
    EXPECT_EQ(run.out.find("[nvjitlink]"), std::string::npos) << run.all();
  } else {
    EXPECT_EQ(run.exit_code, 2) << run.all();
    EXPECT_NE(run.err.find("needs a CUDA device"), std::string::npos) << run.all();
  }
}

TEST_P(CliReproLinker, WithoutTheVariableTheFileDecides) {
  TempDir dir;
  const auto run = run_cujit(repro(dir.path(), "nvjitlink", std::nullopt, GetParam()));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.out.find("step 1 [nvjitlink]"), std::string::npos) << run.all();
  EXPECT_EQ(run.err.find("CUJIT_LINKER"), std::string::npos) << run.all();
}

INSTANTIATE_TEST_SUITE_P(Modes, CliReproLinker, ::testing::Bool(),
                         [](const auto& mode) { return mode.param ? "in_process" : "isolated"; });

TEST(HostileCliReproLinker, UnknownValueIsExit2NamingIt) {
  TempDir dir;
  for (const std::string value : {"gold", "$(touch PWNED)", "driver "}) {
    const auto run = run_cujit(repro(dir.path(), "nvjitlink", value, false));
    EXPECT_EQ(run.exit_code, 2) << run.all();
    EXPECT_NE(run.err.find("CUJIT_LINKER='" + value + "'"), std::string::npos) << run.all();
  }
  EXPECT_TRUE(test::cli::find_named(dir.path(), "PWNED").empty());
}

}  // namespace
}  // namespace cujit
