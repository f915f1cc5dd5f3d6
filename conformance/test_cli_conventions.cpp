// The cujit command's conventions (docs/cli.md): --version, --json on every command that
// reports something (each document parses and has its documented fields), exit codes
// (0 ok, 1 failures found, 2 usage, a selection that matches nothing included), NO_COLOR,
// --quiet / --verbose, conformance's --filter and --require-gpu, and repro's --capture,
// --cache-dir and --no-cache reaching the child. The suites, benchmarks and Python are
// cli_fake_tool in a fake build tree (cli_test_support.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli_test_support.hpp"
#include "driver_release.hpp"
#include "gtest_json.hpp"
#include "output.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::received;
using test::cli::run_cujit;
using test::cli::Spec;

// Variables of the user's or the CI's that would change what the command does.
const std::vector<std::string> inherited = {"CUJIT_PYTHON", "CUJIT_BUILD_DIR", "CUJIT_LINKER", "CUJIT_FAKE_CRASH",
                                            "CUJIT_TEST_REPRO_CRASH", "GTEST_FILTER", "GTEST_TOTAL_SHARDS",
                                            "GTEST_SHARD_INDEX", "NO_COLOR", "CUJIT_REQUIRE_GPU",
                                            "CUJIT_CAPTURE_DIR"};

class CliConventions : public ::testing::Test {
 protected:
  // `cujit ARGS...` in the test's directory over a fake build tree of the area "format",
  // with the fake tool logging its arguments and CUJIT_PYTHON being the fake tool.
  Spec spec(std::vector<std::string> args) const {
    Spec s;
    s.args = std::move(args);
    s.cwd = dir_.path();
    s.unset = inherited;
    s.env = {{"CUJIT_FAKE_ARGV_LOG", log().string()},
             {"CUJIT_BUILD_DIR", build_.string()},
             {"CUJIT_PYTHON", CUJIT_CLI_FAKE_TOOL},
             {"CUJIT_CACHE_DIR", (dir_.path() / "cache").string()}};
    return s;
  }
  fs::path log() const { return dir_.path() / "argv.log"; }
  void SetUp() override { build_ = test::cli::make_fake_build(dir_.path(), {"format", "cli"}); }

  TempDir dir_;
  fs::path build_;
};

nlohmann::json parsed(const test::cli::Run& run) {
  nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << "standard output is not one JSON document:\n" << run.all();
  return document;
}

void expect_fields(const nlohmann::json& document, const std::vector<std::string>& fields) {
  for (const std::string& field : fields) EXPECT_TRUE(document.contains(field)) << "no field " << field << " in " << document.dump();
}

// ---- --version -------------------------------------------------------------------------

TEST_F(CliConventions, VersionNamesCujitNvrtcNvJitLinkAndTheDriverRelease) {
  const auto run = run_cujit(spec({"--version"}));
  ASSERT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"((^|\n)cujit \d+\.\d+\.\d+\n)"))) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"(\nNVRTC (\d+\.\d+|unavailable))"))) << run.out;
  EXPECT_TRUE(std::regex_search(run.out, std::regex(R"(\nnvJitLink (\d+\.\d+|unavailable))"))) << run.out;
  // The release as this test reads it from the kernel module, or "no driver".
  std::ifstream proc(cli::driver_version_file);
  const std::string text((std::istreambuf_iterator<char>(proc)), std::istreambuf_iterator<char>());
  const auto release = cli::parse_driver_release(text);
  if (release) {
    EXPECT_NE(run.out.find("\ndriver " + *release), std::string::npos) << run.out;
  } else {
    EXPECT_NE(run.out.find("\nno driver"), std::string::npos) << run.out;
  }
}

TEST_F(CliConventions, VersionAfterASubcommandIsTheSame) {
  const auto alone = run_cujit(spec({"--version"}));
  const auto after = run_cujit(spec({"info", "--version"}));
  EXPECT_EQ(after.exit_code, 0) << after.all();
  EXPECT_EQ(alone.out, after.out);
}

TEST(CliDriverRelease, ReadsTheReleaseFromTheKernelModuleLine) {
  EXPECT_EQ(cli::parse_driver_release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
                                      "Release Build  (dvs-builder@U22)  Thu Sep 4 2025\nGCC version:  gcc 12.3\n"),
            "580.159.04");
  EXPECT_EQ(cli::parse_driver_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun 6 2023\n"),
            "535.54.03");
  EXPECT_EQ(cli::parse_driver_release("GCC version: 12.3.0\n"), std::nullopt) << "not the NVRM line";
  EXPECT_EQ(cli::parse_driver_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"), std::nullopt);
  EXPECT_EQ(cli::parse_driver_release(""), std::nullopt);
}

// ---- --json ----------------------------------------------------------------------------

TEST_F(CliConventions, InfoJsonHasItsFields) {
  const auto run = run_cujit(spec({"info", "--json"}));
  ASSERT_EQ(run.exit_code, 0) << run.all();
  expect_fields(parsed(run), {"schema", "cujit", "nvrtc", "nvjitlink", "driver_release", "driver_cuda", "cccl",
                              "devices", "why_no_device", "cache", "nrt_enabled", "formats"});
}

TEST_F(CliConventions, CacheJsonHasItsFields) {
  const auto stats = run_cujit(spec({"cache", "stats", "--json"}));
  ASSERT_EQ(stats.exit_code, 0) << stats.all();
  const auto document = parsed(stats);
  expect_fields(document, {"schema", "mode", "directory", "entries", "bytes", "tiers", "hit_rate", "builds", "stores",
                           "evictions", "corrupt_entries", "zeroed_at", "zeroed", "max_disk_bytes", "remote", "warnings"});
  for (const char* tier : {"memo", "memory", "disk", "remote"}) {
    expect_fields(document["tiers"][tier], {"hits", "misses", "hit_rate"});
  }
  EXPECT_EQ(document["directory"], (dir_.path() / "cache").string());
  const auto path = run_cujit(spec({"cache", "path", "--json"}));
  EXPECT_EQ(parsed(path)["directory"], (dir_.path() / "cache").string()) << path.all();
  const auto clear = run_cujit(spec({"cache", "clear", "--json"}));
  ASSERT_EQ(clear.exit_code, 0) << clear.all();
  expect_fields(parsed(clear), {"directory", "removed"});
}

TEST_F(CliConventions, ConformanceJsonHasItsFieldsAndTheCounts) {
  const auto run = run_cujit(spec({"conformance", "--out", "out", "--area", "format", "--json"}));
  ASSERT_EQ(run.exit_code, 0) << run.all();
  const auto document = parsed(run);
  expect_fields(document, {"schema", "out", "junit_dir", "filter", "shard", "passed", "failed", "skipped",
                           "skip_reasons", "areas", "exit_code"});
  EXPECT_EQ(document["passed"], 2);
  EXPECT_EQ(document["skipped"], 1);
  EXPECT_EQ(document["skip_reasons"]["fake reason"], 1) << "the reason of the skip, from its log";
  ASSERT_EQ(document["areas"].size(), 1u);
  expect_fields(document["areas"][0], {"name", "passed", "failed", "skipped", "crashed", "failures", "skip_reasons",
                                       "junit", "log"});
}

TEST_F(CliConventions, BenchJsonHasItsFields) {
  const auto run = run_cujit(spec({"bench", "--quick", "--out", "out", "--json"}));
  ASSERT_EQ(run.exit_code, 0) << run.all();
  const auto document = parsed(run);
  expect_fields(document, {"schema", "out", "quick", "filter", "executables", "peers", "exit_code"});
  ASSERT_EQ(document["executables"].size(), 2u);
  for (const auto& executable : document["executables"]) {
    expect_fields(executable, {"name", "status", "benchmarks", "json", "log"});
    EXPECT_EQ(executable["status"], "ok");
  }
}

TEST_F(CliConventions, RunJsonHoldsEveryStep) {
  fs::create_directories(dir_.path() / "all");
  Spec s = spec({"run", "--quick", "--out", "out", "--json"});
  s.env[1].second = test::cli::make_fake_build(dir_.path() / "all", test::cli::every_area()).string();
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  const auto document = parsed(run);
  expect_fields(document, {"schema", "out", "conformance", "bench", "report", "exit_code"});
  EXPECT_EQ(document["exit_code"], 0);
  expect_fields(document["conformance"], {"dir", "exit_code", "summary"});
  EXPECT_EQ(document["conformance"]["summary"]["passed"], 2 * test::cli::every_area().size());
  expect_fields(document["bench"], {"dir", "exit_code", "summary"});
  EXPECT_EQ(document["bench"]["summary"]["executables"].size(), 2u);
  expect_fields(document["report"], {"html", "exit_code"});
}

TEST_F(CliConventions, MergeCompareReportAndCaptureJsonHaveTheirFields) {
  ASSERT_EQ(run_cujit(spec({"conformance", "--out", "shard0", "--area", "format", "--shard", "0/1", "--quiet"})).exit_code, 0);
  const auto merged = run_cujit(spec({"merge", "shard0", "--out", "merged", "--json"}));
  EXPECT_EQ(merged.exit_code, 0) << merged.all();
  expect_fields(parsed(merged), {"schema", "verdict", "shards", "passed", "failed", "skipped", "problems"});

  fs::copy_file(test::cli::source_path("reports/tests/golden/gate_base.json"), dir_.path() / "base.json");
  Spec compare = spec({"compare", "base.json", "base.json", "--json"});
  compare.unset.push_back("CUJIT_PYTHON");
  compare.env.erase(compare.env.begin() + 2);  // the real Python runs compare.py
  const auto compared = run_cujit(compare);
  EXPECT_EQ(compared.exit_code, 0) << compared.all();
  const auto verdict = parsed(compared);
  expect_fields(verdict, {"schema", "baseline", "current", "threshold", "verdict", "table", "exit_code"});
  EXPECT_EQ(verdict["verdict"], "pass");

  test::cli::write_file(dir_.path() / "in.json", "{}");
  const auto reported = run_cujit(spec({"report", "--out", "report", "--json", "in.json"}));
  EXPECT_EQ(reported.exit_code, 0) << reported.all();
  expect_fields(parsed(reported), {"schema", "html", "markdown", "inputs", "exit_code"});

  const auto captured = run_cujit(spec({"repro", "--json", "--capture", "captured", "--", CUJIT_CLI_FAKE_TOOL, "--fake-capture"}));
  EXPECT_EQ(captured.exit_code, 0) << captured.all();
  expect_fields(parsed(captured), {"schema", "capture_dir", "command", "exit_status", "signal", "scenarios"});
}

// ---- exit codes ------------------------------------------------------------------------

TEST_F(CliConventions, AFilterThatMatchesNoTestIsExit2NamingIt) {
  const auto run = run_cujit(spec({"conformance", "--out", "out", "--area", "format", "--filter", "NoSuch.*"}));
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("--filter 'NoSuch.*'"), std::string::npos) << run.all();
}

TEST_F(CliConventions, AFamilyThatMatchesNoBenchmarkIsExit2AndLeavesNoJson) {
  const auto run = run_cujit(spec({"bench", "--quick", "--out", "out", "--family", "nvrct"}));
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("--family 'nvrct'"), std::string::npos) << run.all();
  EXPECT_FALSE(fs::exists(dir_.path() / "out" / "bench_jit.json"));
  EXPECT_FALSE(fs::exists(dir_.path() / "out" / "bench_reduce.json"));
}

TEST_F(CliConventions, ExitCodesFollowTheConvention) {
  EXPECT_EQ(run_cujit(spec({"conformance", "--out", "ok", "--area", "format"})).exit_code, 0);
  Spec crash = spec({"conformance", "--out", "crash", "--area", "format"});
  crash.env.emplace_back("CUJIT_FAKE_CRASH", "1");
  EXPECT_EQ(run_cujit(crash).exit_code, 1) << "a test that crashed is a failure found";
  EXPECT_EQ(run_cujit(spec({"conformance", "--no-such-option"})).exit_code, 2);
  EXPECT_EQ(run_cujit(spec({})).exit_code, 2) << "no subcommand";
  EXPECT_EQ(run_cujit(spec({"info", "--quiet", "--verbose"})).exit_code, 2);
  EXPECT_EQ(run_cujit(spec({"cache", "path", "--zero"})).exit_code, 2);
  EXPECT_EQ(run_cujit(spec({"repro", "a.json", "b.json"})).exit_code, 2);
  EXPECT_EQ(run_cujit(spec({"repro", "--no-cache", "--cache-dir", "c", "x.json"})).exit_code, 2);
  EXPECT_EQ(run_cujit(spec({"--help"})).exit_code, 0);
}

// ---- what reaches the suites -----------------------------------------------------------

TEST_F(CliConventions, FilterAndRequireDeviceFlagsReachTheSuitesAndInheritedGtestVariablesDoNot) {
  Spec s = spec({"conformance", "--out", "out", "--area", "format", "--filter", "FakeSuite.Passes", "--require-gpu"});
  s.env.emplace_back("GTEST_FILTER", "Nothing.*");
  const auto run = run_cujit(s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.out.find("conformance: 1 passed, 0 failed, 0 skipped"), std::string::npos) << run.all();
  EXPECT_TRUE(received(log(), "--gtest_filter=FakeSuite.Passes"));
  EXPECT_TRUE(received(log(), "env:CUJIT_REQUIRE_GPU=1"));
  EXPECT_FALSE(received(log(), "env:GTEST_FILTER=Nothing.*"));
  // JUnit XML written from Google Test's JSON report.
  const std::string xml = test::cli::read_all(dir_.path() / "out" / "junit" / "format.xml");
  EXPECT_NE(xml.find("name=\"Passes\""), std::string::npos) << xml;
  EXPECT_TRUE(fs::is_regular_file(dir_.path() / "out" / "gtest" / "format.json"));
}

TEST_F(CliConventions, IsolatedRunsListAndFilterThroughGtestJson) {
  const auto run = run_cujit(spec({"conformance", "--out", "out", "--area", "format", "--isolate", "--filter", "*Skips"}));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.out.find("conformance: 0 passed, 0 failed, 1 skipped"), std::string::npos) << run.all();
  EXPECT_NE(run.out.find("skipped 1: fake reason"), std::string::npos) << run.all();
}

TEST_F(CliConventions, CaptureRunsTheCommandWithTheCaptureDirectoryAndListsWhatItLeft) {
  const auto run = run_cujit(spec({"repro", "--no-cache", "--capture", "captured", "--", CUJIT_CLI_FAKE_TOOL, "--fake-capture"}));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  const fs::path dir = fs::absolute(dir_.path() / "captured");
  EXPECT_TRUE(received(log(), "env:CUJIT_CAPTURE_DIR=" + dir.string()));
  EXPECT_TRUE(received(log(), "env:CUJIT_CACHE=off"));
  EXPECT_NE(run.out.find("command: exit status 1"), std::string::npos) << run.all();
  EXPECT_NE(run.out.find("captured 1 file in"), std::string::npos) << run.all();
  EXPECT_NE(run.out.find((dir / "fake-scenario.json").string()), std::string::npos) << run.all();
  // A file that was there before is not listed again.
  const auto again = run_cujit(spec({"repro", "--capture", "captured", "--", CUJIT_CLI_FAKE_TOOL}));
  EXPECT_NE(again.out.find("captured 0 files"), std::string::npos) << again.all();
}

TEST_F(CliConventions, CaptureOfACommandThatCannotStartIsExit2NamingIt) {
  const auto run = run_cujit(spec({"repro", "--capture", "captured", "--", "./no-such-program"}));
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("no-such-program"), std::string::npos) << run.all();
}

TEST_F(CliConventions, ReproCacheDirReachesTheProcessRunningTheScenario) {
  // The fake tool stands in for the isolated child here: --capture runs any command with
  // the same cache environment the scenario's child gets.
  const auto run = run_cujit(spec({"repro", "--cache-dir", "own-cache", "--capture", "c", "--", CUJIT_CLI_FAKE_TOOL}));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(received(log(), "env:CUJIT_CACHE_DIR=" + fs::absolute(dir_.path() / "own-cache").string()));
  EXPECT_TRUE(fs::is_directory(dir_.path() / "own-cache"));
}

// ---- --quiet, --verbose, NO_COLOR ------------------------------------------------------

TEST_F(CliConventions, QuietDropsProgressAndVerboseShowsTheChildren) {
  const auto normal = run_cujit(spec({"conformance", "--out", "a", "--area", "format"}));
  EXPECT_NE(normal.err.find("[1/1] conformance format"), std::string::npos) << normal.all();
  const auto quiet = run_cujit(spec({"conformance", "--out", "b", "--area", "format", "--quiet"}));
  EXPECT_EQ(quiet.exit_code, 0) << quiet.all();
  EXPECT_EQ(quiet.err.find("[1/1]"), std::string::npos) << quiet.all();
  EXPECT_NE(quiet.out.find("conformance: 2 passed"), std::string::npos) << "results stay";
  const auto loud = run_cujit(spec({"--verbose", "conformance", "--out", "c", "--area", "format"}));
  EXPECT_EQ(loud.exit_code, 0) << loud.all();
  EXPECT_NE(loud.err.find("cujit conformance: running"), std::string::npos) << loud.all();
  EXPECT_NE(loud.err.find("[  PASSED  ]"), std::string::npos) << "the suite's own output";
}

// Runs `spec` with standard output on a pseudo-terminal; returns what it printed there.
std::string on_a_terminal(Spec spec, int& exit_code) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return "no pty";
  spec.stdout_path = ::ptsname(master);
  const auto run = run_cujit(spec);
  exit_code = run.exit_code;
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  std::string out;
  char buffer[4096];
  for (ssize_t got; (got = ::read(master, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(got));
  ::close(master);
  return out;
}

TEST_F(CliConventions, ColourOnATerminalUnlessNoColorIsSet) {
  int code = -1;
  const std::string coloured = on_a_terminal(spec({"conformance", "--out", "a", "--area", "format"}), code);
  if (coloured == "no pty") GTEST_SKIP() << "no pseudo-terminal on this system";
  EXPECT_EQ(code, 0);
  EXPECT_NE(coloured.find("\x1b["), std::string::npos) << coloured;
  Spec plain = spec({"conformance", "--out", "b", "--area", "format"});
  plain.env.emplace_back("NO_COLOR", "1");
  const std::string uncoloured = on_a_terminal(plain, code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(uncoloured.find("conformance: 2 passed"), std::string::npos) << uncoloured;
  EXPECT_EQ(uncoloured.find("\x1b["), std::string::npos) << uncoloured;
  // --color=never without NO_COLOR; an empty NO_COLOR is unset.
  const std::string never = on_a_terminal(spec({"conformance", "--out", "c", "--area", "format", "--color=never"}), code);
  EXPECT_EQ(never.find("\x1b["), std::string::npos) << never;
  Spec empty = spec({"conformance", "--out", "d", "--area", "format"});
  empty.env.emplace_back("NO_COLOR", "");
  EXPECT_NE(on_a_terminal(empty, code).find("\x1b["), std::string::npos);
}

TEST_F(CliConventions, NoColourWhenStandardOutputIsNotATerminal) {
  const auto run = run_cujit(spec({"conformance", "--out", "a", "--area", "format"}));
  EXPECT_EQ(run.out.find("\x1b["), std::string::npos) << run.out;
  const auto forced = run_cujit(spec({"conformance", "--out", "b", "--area", "format", "--color=always"}));
  EXPECT_NE(forced.out.find("\x1b["), std::string::npos) << forced.out;
}

// ---- Google Test's JSON report ---------------------------------------------------------

constexpr const char* report_text = R"({"tests": 4, "testsuites": [{"name": "S", "testsuite": [
  {"name": "Passes", "status": "RUN", "result": "COMPLETED", "time": "0.25s", "classname": "S"},
  {"name": "Fails", "status": "RUN", "result": "COMPLETED", "time": "0s", "classname": "S",
   "failures": [{"failure": "a.cpp:3\nExpected: 1", "type": ""}, {"failure": "second", "type": ""}]},
  {"name": "Skips", "status": "RUN", "result": "SKIPPED", "time": "0s", "classname": "S"},
  {"name": "DISABLED_Off", "status": "NOTRUN", "result": "SUPPRESSED", "time": "0s", "classname": "S"}]}]})";

TEST(CliGtestJson, ReadsOutcomesFailureTextAndTimesAndLeavesOutTestsThatDidNotRun) {
  const auto cases = cli::parse_gtest_report(report_text, "r.json");
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].result, cli::Result::passed);
  EXPECT_EQ(cases[0].time, "0.25");
  EXPECT_EQ(cases[1].result, cli::Result::failed);
  EXPECT_EQ(cases[1].message, "a.cpp:3\nExpected: 1");
  EXPECT_EQ(cases[2].result, cli::Result::skipped);
  EXPECT_EQ(cases[2].suite, "S");
}

TEST(CliGtestJson, TextThatIsNotAReportIsAnErrorNamingTheFile) {
  for (const char* text : {"", "[]", "{\"tests\": 1}", "{\"testsuites\": [{\"name\": \"S\"}]}",
                           "{\"testsuites\": [{\"name\": \"S\", \"testsuite\": [{}]}]}", "{\"testsuites\": 3"}) {
    try {
      cli::parse_gtest_report(text, "bad.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const cli::CliError& error) {
      EXPECT_NE(std::string(error.what()).find("bad.json"), std::string::npos) << error.what();
    }
  }
}

TEST(CliGtestJson, ListingLeavesOutDisabledTests) {
  const auto names = cli::parse_gtest_listing(R"({"testsuites": [
    {"name": "S", "testsuite": [{"name": "A"}, {"name": "DISABLED_B"}]},
    {"name": "DISABLED_T", "testsuite": [{"name": "C"}]},
    {"name": "P/S", "testsuite": [{"name": "D/0"}]}]})", "l.json");
  EXPECT_EQ(names, (std::vector<std::string>{"S.A", "P/S.D/0"}));
}

TEST(CliGtestJson, SkipReasonIsWhatTheTestPrintedAfterItsSkippedLine) {
  const std::string log =
      "[ RUN      ] S.Other\n[       OK ] S.Other (0 ms)\n"
      "[ RUN      ] S.Skips\nsome output\n/src/t.cpp:12: Skipped\nno GPU:\n  none present\n\n"
      "[  SKIPPED ] S.Skips (0 ms)\n";
  EXPECT_EQ(cli::skip_reason_from_log(log, "S", "Skips"), "no GPU: none present");
  EXPECT_EQ(cli::skip_reason_from_log(log, "S", "Other"), "");
  EXPECT_EQ(cli::skip_reason_from_log("", "S", "Skips"), "");
}

}  // namespace
}  // namespace cujit
