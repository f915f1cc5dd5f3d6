// Every path (and name) argument of every cujit subcommand with shell syntax in it: quotes,
// $(), backticks, ';', '>', spaces, a newline, a leading dash. Nothing may run (no file named
// PWNED appears), a name that exists works, and one that does not is exit 2 with a message
// naming it. Children of cujit are cli_fake_tool here (a fake build tree, a fake Python),
// which logs the argument vector it received: each name must arrive as one whole argument.
#include <gtest/gtest.h>

#include "cli_test_support.hpp"
#include "output.hpp"
#include "runner/printable_text.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::received;
using test::cli::run_cujit;
using test::cli::Spec;

struct Hostile {
  const char* label;
  std::string text;
};

void PrintTo(const Hostile& hostile, std::ostream* out) { *out << hostile.label; }

std::vector<Hostile> hostile_names() {
  return {
      {"single_quotes_and_substitution", "x'$(touch PWNED)'"},
      {"substitution", "$(touch PWNED)"},
      {"backticks", "`touch PWNED`"},
      {"double_quotes", "q\"$(touch PWNED)\"q"},
      {"semicolons", "a;touch PWNED;b"},
      {"redirect", "r>PWNED"},
      {"spaces", "dir with space"},
      {"newline", "line\nbreak"},
      {"leading_dash", "-dash"},
  };
}

class HostileCliArguments : public ::testing::TestWithParam<Hostile> {
 protected:
  void TearDown() override {
    EXPECT_TRUE(test::cli::find_named(dir_.path(), "PWNED").empty()) << "a shell ran part of the name";
  }
  const std::string& name() const { return GetParam().text; }
  // The name as the command prints it: control characters escaped (a newline as \n).
  std::string printed_name() const { return scenarios::printable_text(name()); }
  fs::path at(const std::string& relative) const { return dir_.path() / relative; }
  // A spec running in the temporary directory, with the fake tool logging its arguments.
  Spec spec(std::vector<std::string> args) const {
    Spec s;
    s.args = std::move(args);
    s.cwd = dir_.path();
    s.env = {{"CUJIT_FAKE_ARGV_LOG", log().string()}};
    s.unset = {"CUJIT_PYTHON", "CUJIT_BUILD_DIR", "CUJIT_LINKER", "CUJIT_FAKE_CRASH"};
    return s;
  }
  fs::path log() const { return dir_.path() / "argv.log"; }
  fs::path fake_build(const std::vector<std::string>& areas) const { return test::cli::make_fake_build(dir_.path(), areas); }

  TempDir dir_;
};

TEST_P(HostileCliArguments, ReportInputThatDoesNotExistIsExit2NamingIt) {
  const auto run = run_cujit(spec({"report", "--out=report", "--", name() + ".json"}));
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find(printed_name() + ".json"), std::string::npos) << run.all();
}

TEST_P(HostileCliArguments, ReportArgumentsReachTheScriptWhole) {
  test::cli::write_file(at(name() + ".json"), "{}");
  Spec s = spec({"report", "--out=" + name(), "--", name() + ".json"});
  s.env.emplace_back("CUJIT_PYTHON", CUJIT_CLI_FAKE_TOOL);
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(received(log(), "--out=" + name()));
  EXPECT_TRUE(received(log(), name() + ".json"));
  EXPECT_TRUE(fs::is_directory(at(name())));
}

TEST_P(HostileCliArguments, CompareWorksWithTheseNamesAndWritesTheMarkdownThere) {
  // Runs the gate can judge (9 repetitions a side; the 5-repetition goldens are "not
  // enough data").
  fs::copy_file(test::cli::source_path("reports/tests/golden/gate_base.json"), at(name() + ".base.json"));
  fs::copy_file(test::cli::source_path("reports/tests/golden/gate_same.json"), at(name() + ".current.json"));
  const auto run = run_cujit(spec({"compare", "--markdown=" + name() + ".md", "--", name() + ".base.json",
                                   name() + ".current.json"}));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(test::cli::read_all(at(name() + ".md")).find("| "), std::string::npos) << run.all();
}

TEST_P(HostileCliArguments, CompareInputsThatDoNotExistAreExit2NamingThem) {
  fs::copy_file(test::cli::source_path("reports/tests/golden/base.json"), at("base.json"));
  const auto baseline = run_cujit(spec({"compare", "--", name() + ".json", "base.json"}));
  EXPECT_EQ(baseline.exit_code, 2) << baseline.all();
  EXPECT_NE(baseline.err.find("baseline '" + printed_name() + ".json'"), std::string::npos) << baseline.all();
  const auto current = run_cujit(spec({"compare", "--", "base.json", name() + ".json"}));
  EXPECT_EQ(current.exit_code, 2) << current.all();
  EXPECT_NE(current.err.find("current '" + printed_name() + ".json'"), std::string::npos) << current.all();
}

TEST_P(HostileCliArguments, BenchOutReachesTheExecutablesWhole) {
  Spec s = spec({"bench", "--quick", "--out=" + name(), "--family=fake"});
  s.env.emplace_back("CUJIT_BUILD_DIR", fake_build({}).string());
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(received(log(), "--benchmark_out=" + (fs::path(name()) / "bench_jit.json").string()));
  EXPECT_TRUE(fs::is_regular_file(at(name()) / "bench_jit.json"));
  EXPECT_TRUE(fs::is_regular_file(at(name()) / "bench_reduce.log"));
}

// The family and scenario reach the executables' listing whole, as one filter argument,
// and match as written: no benchmark is named like this, so the selection is exit 2
// naming them.
TEST_P(HostileCliArguments, BenchFamilyAndScenarioReachTheListingWholeAndMatchNothing) {
  Spec s = spec({"bench", "--quick", "--out=out", "--family=" + name(), "--scenario=" + name()});
  s.env.emplace_back("CUJIT_BUILD_DIR", fake_build({}).string());
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("--family '" + printed_name() + "'"), std::string::npos) << run.all();
  EXPECT_NE(run.err.find("matches no benchmark"), std::string::npos) << run.all();
  bool filtered = false;
  for (const auto& call : test::cli::logged_calls(log())) {
    for (const std::string& arg : call) filtered = filtered || arg.rfind("--benchmark_filter=", 0) == 0;
  }
  EXPECT_TRUE(filtered);
  EXPECT_FALSE(received(log(), "--benchmark_out=" + (fs::path("out") / "bench_jit.json").string()))
      << "nothing runs when nothing is selected";
}

TEST_P(HostileCliArguments, ConformanceOutDirectoryWorks) {
  Spec s = spec({"conformance", "--out=" + name(), "--area", "format"});
  s.env.emplace_back("CUJIT_BUILD_DIR", fake_build({"format"}).string());
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.out.find("conformance: 2 passed, 0 failed, 1 skipped"), std::string::npos) << run.all();
  EXPECT_TRUE(fs::is_regular_file(at(name()) / "junit" / "format.xml")) << run.all();
  EXPECT_TRUE(fs::is_regular_file(at(name()) / "conformance_format.log")) << run.all();
}

TEST_P(HostileCliArguments, ConformanceAreaIsExit2NamingIt) {
  Spec s = spec({"conformance", "--out=out", "--area=" + name()});
  s.env.emplace_back("CUJIT_BUILD_DIR", fake_build({"format"}).string());
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("--area '" + printed_name() + "'"), std::string::npos) << run.all();
}

TEST_P(HostileCliArguments, ReproScenarioThatDoesNotExistIsExit2NamingIt) {
  const auto run = run_cujit(spec({"repro", "--", name() + ".json"}));
  EXPECT_EQ(run.exit_code, 2) << run.all();
  // libcujit's error names the file; the command prints its lines escaped, each after the
  // first indented (cli::printable_lines), so none reads as a line of the command's own.
  EXPECT_NE(run.err.find(cli::printable_lines(name() + ".json")), std::string::npos) << run.all();
}

TEST_P(HostileCliArguments, ReproScenarioWithThisNameRuns) {
  test::cli::write_file(at(name() + ".json"), test::cli::linking_scenario("named"));
  const auto run = run_cujit(spec({"repro", "--", name() + ".json"}));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.out.find("verdict: as expected"), std::string::npos) << run.all();
}

TEST_P(HostileCliArguments, RunOutDirectoryWorks) {
  Spec s = spec({"run", "--quick", "--out=" + name()});
  s.env.emplace_back("CUJIT_BUILD_DIR", fake_build(test::cli::every_area()).string());
  s.env.emplace_back("CUJIT_PYTHON", CUJIT_CLI_FAKE_TOOL);
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  for (const std::string& area : test::cli::every_area()) {
    EXPECT_TRUE(fs::is_regular_file(at(name()) / "conformance" / "junit" / (area + ".xml"))) << area;
  }
  EXPECT_TRUE(fs::is_regular_file(at(name()) / "bench" / "bench_jit.json"));
  EXPECT_TRUE(received(log(), "--out=" + (fs::path(name()) / "report").string()));
}

INSTANTIATE_TEST_SUITE_P(Names, HostileCliArguments, ::testing::ValuesIn(hostile_names()),
                         [](const auto& named) { return std::string(named.param.label); });

// An option value that starts with a dash, given as the next argument ("--out -x"), is
// that option's value: the directory "-x", never another option.
TEST(HostileCliOptionValues, DashValueAfterTheOptionIsItsValue) {
  TempDir dir;
  Spec s;
  s.args = {"conformance", "--out", "-x", "--area", "format"};
  s.cwd = dir.path();
  s.env = {{"CUJIT_BUILD_DIR", test::cli::make_fake_build(dir.path(), {"format"}).string()}};
  s.unset = {"CUJIT_FAKE_CRASH"};
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "-x" / "junit" / "format.xml")) << run.all();
}

TEST(HostileCliOptionValues, NegativeOrNonFiniteThresholdIsExit2) {
  TempDir dir;
  fs::copy_file(test::cli::source_path("reports/tests/golden/base.json"), dir.path() / "base.json");
  for (const char* threshold : {"-0.5", "nan", "inf"}) {
    Spec s;
    s.args = {"compare", "base.json", "base.json", std::string("--threshold=") + threshold};
    s.cwd = dir.path();
    const auto run = run_cujit(s);
    EXPECT_EQ(run.exit_code, 2) << threshold << "\n" << run.all();
    EXPECT_NE(run.err.find("--threshold"), std::string::npos) << run.all();
  }
}

}  // namespace
}  // namespace cujit
