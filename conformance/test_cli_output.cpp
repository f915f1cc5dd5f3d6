// Output that cannot be written: standard output on /dev/full, an --out that is a file or
// /dev/full, a --markdown on /dev/full. Every one is exit 2 (docs/cli.md: an environment
// error) with a message naming where, never exit 0 with the output lost.
#include <gtest/gtest.h>

#include "cli_test_support.hpp"
#include "support/child_process.hpp"

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

// Past RLIMIT_FSIZE (ulimit -f 0, set by a shell that then runs the command) a write fails
// instead of SIGXFSZ ending the process (red-team finding F11): the CLI's standard output
// and its --out files are exit 2 naming where, and a compile through libcujit, whose
// library-digest store and cache writes are refused, still succeeds.
TEST(HostileFileSizeLimit, WritesPastTheLimitFailAndNothingDiesOfSigxfsz) {
  TempDir dir;
  const auto limited = [&](const std::string& command, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/bin/sh", "-c", "ulimit -f 0; " + command, "sh"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_child(argv, {"CUJIT_CACHE_DIR=" + (dir.path() / "cache").string(),
                                  "CUJIT_LIBRARY_DIGESTS=" + (dir.path() / "digests").string()});
  };
  const auto info = limited("exec \"$1\" info > \"$2\"", {CUJIT_CLI_BINARY, (dir.path() / "info.txt").string()});
  EXPECT_EQ(info.exit_code, 2) << info.output;
  EXPECT_NE(info.output.find("cannot write standard output"), std::string::npos) << info.output;
  const auto spec = limited("exec \"$1\" resource-spec --out \"$2\"", {CUJIT_CLI_BINARY, (dir.path() / "spec.json").string()});
  EXPECT_EQ(spec.exit_code, 2) << spec.output;
  const auto compile = limited("exec \"$1\" compile \"$2\" /dev/null -DV=1",
                               {CUJIT_CLI_CACHE_CHILD, (dir.path() / "cache").string()});
  EXPECT_EQ(compile.exit_code, 0) << compile.output;
  EXPECT_NE(compile.output.find("built"), std::string::npos) << compile.output;
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
