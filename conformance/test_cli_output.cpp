// Output that cannot be written: standard output on /dev/full, an --out that is a file or
// /dev/full, a --markdown on /dev/full. Every one is exit 2 (docs/cli.md: an environment
// error) with a message naming where, never exit 0 with the output lost.
#include <gtest/gtest.h>

#include "cli_test_support.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::run_cujit;
using test::cli::Spec;

bool dev_full_available() { return fs::exists("/dev/full"); }

Spec to_dev_full(std::vector<std::string> args, const fs::path& cwd) {
  Spec s;
  s.args = std::move(args);
  s.cwd = cwd;
  s.stdout_path = "/dev/full";
  s.unset = {"CUJIT_PYTHON", "CUJIT_BUILD_DIR", "CUJIT_LINKER", "CUJIT_FAKE_CRASH", "CUJIT_TEST_REPRO_CRASH"};
  return s;
}

void expect_named_write_failure(const test::cli::Run& run, const std::string& path) {
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("cannot write"), std::string::npos) << run.all();
  EXPECT_NE(run.err.find(path), std::string::npos) << run.all();
}

class HostileCliOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dev_full_available()) GTEST_SKIP() << "no /dev/full on this system";
  }
  TempDir dir_;
};

TEST_F(HostileCliOutput, StdoutOnDevFullIsExit2ForEverySubcommandThatPrints) {
  test::cli::write_file(dir_.path() / "s.json", test::cli::linking_scenario("full"));
  fs::copy_file(test::cli::source_path("reports/tests/golden/base.json"), dir_.path() / "base.json");
  const std::vector<std::vector<std::string>> commands{
      {"info"},
      {"cache", "path"},
      {"cache", "stats"},
      {"--help"},
      {"repro", "s.json"},
      {"repro", "--json", "s.json"},
      {"repro", "--in-process", "s.json"},
      {"repro", "--in-process", "--json", "s.json"},
      {"compare", "base.json", "base.json"},
  };
  for (const auto& args : commands) {
    SCOPED_TRACE(args.front() + (args.size() > 1 ? " " + args[1] : ""));
    expect_named_write_failure(run_cujit(to_dev_full(args, dir_.path())), "/dev/full");
  }
}

TEST_F(HostileCliOutput, ConformanceSummaryOnDevFullIsExit2) {
  Spec s = to_dev_full({"conformance", "--out=out", "--area", "format"}, dir_.path());
  s.env = {{"CUJIT_BUILD_DIR", test::cli::make_fake_build(dir_.path(), {"format"}).string()}};
  expect_named_write_failure(run_cujit(s), "/dev/full");
}

// `cujit compare base.json base.json --markdown <markdown>` in the test's directory.
test::cli::Run compare_writing_markdown_to(const fs::path& dir, const std::string& markdown) {
  fs::copy_file(test::cli::source_path("reports/tests/golden/base.json"), dir / "base.json");
  Spec s;
  s.args = {"compare", "base.json", "base.json", "--markdown", markdown};
  s.cwd = dir;
  s.unset = {"CUJIT_PYTHON"};
  return run_cujit(s);
}

TEST_F(HostileCliOutput, MarkdownOnDevFullIsExit2NamingIt) {
  const auto run = compare_writing_markdown_to(dir_.path(), "/dev/full");
  expect_named_write_failure(run, "'/dev/full'");
  EXPECT_NE(run.err.find("--markdown"), std::string::npos) << run.all();
}

TEST_F(HostileCliOutput, MarkdownInADirectoryThatDoesNotExistIsExit2NotARegression) {
  const auto run = compare_writing_markdown_to(dir_.path(), "no/such/dir/table.md");
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("no/such/dir/table.md"), std::string::npos) << run.all();
}

// --out naming something that cannot be a directory: /dev/full, or an existing file.
TEST_F(HostileCliOutput, OutThatCannotBeADirectoryIsExit2NamingIt) {
  test::cli::write_file(dir_.path() / "a_file", "x");
  test::cli::write_file(dir_.path() / "in.json", "{}");
  const fs::path fake = test::cli::make_fake_build(dir_.path(), test::cli::every_area());
  for (const std::string out : {"/dev/full", "a_file"}) {
    const std::vector<std::vector<std::string>> commands{
        {"conformance", "--out", out, "--area", "format"},
        {"bench", "--quick", "--out", out},
        {"report", "--out", out, "in.json"},
        {"run", "--quick", "--out", out},
    };
    for (const auto& args : commands) {
      SCOPED_TRACE(args.front() + " --out " + out);
      Spec s;
      s.args = args;
      s.cwd = dir_.path();
      s.env = {{"CUJIT_BUILD_DIR", fake.string()}, {"CUJIT_PYTHON", CUJIT_CLI_FAKE_TOOL}};
      const auto run = run_cujit(s);
      EXPECT_EQ(run.exit_code, 2) << run.all();
      EXPECT_NE(run.err.find("--out '" + out), std::string::npos) << run.all();
    }
  }
}

// A log the command writes itself (a suite's output) planted as a link to a full device:
// the run is refused naming the link (an --out holding symbolic links is refused, issue 31)
// before anything is written, instead of reporting results whose log went elsewhere.
TEST_F(HostileCliOutput, SuiteLogPlantedAsALinkIsExit2NamingIt) {
  const fs::path out = dir_.path() / "out";
  fs::create_directories(out / "junit");
  fs::create_symlink("/dev/full", out / "conformance_format.log");
  Spec s;
  s.args = {"conformance", "--out", out.string(), "--area", "format"};
  s.env = {{"CUJIT_BUILD_DIR", test::cli::make_fake_build(dir_.path(), {"format"}).string()}};
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("symbolic link"), std::string::npos) << run.all();
  EXPECT_NE(run.err.find("conformance_format.log"), std::string::npos) << run.all();
  EXPECT_FALSE(fs::exists(out / "junit" / "format.xml")) << "a run wrote under a refused --out";
}

}  // namespace
}  // namespace cujit
