// `cujit merge DIR...`: shards of a conformance run (each `cujit conformance --shard I/N`
// over a fake build tree) into one JUnit file and one verdict. Every way a shard can go
// missing or wrong fails the merge, naming it: a shard absent, given twice, of another N,
// unfinished, with a crashed executable, with a record its JUnit XML does not bear out,
// with other areas, or no readable record at all. Never a smaller pass.
//
// Then the class of runs that only the records' run identity and selections can tell
// apart, generated (seeded, the seed in each failure's trace) over shard directories
// written as `cujit conformance` writes them (test_cli_shard.cpp checks that it does):
// random selections split at random into random numbers of shards pass; random subsets
// dropped or doubled fail naming each area's count; random mutations of one shard's filter,
// build or selection are refused (exit 2) naming the shard files; random shards whose own
// verdict is fail under clean reports fail; an empty selection is exit 2 for any N. Real
// runs over the fake build check the same for a misspelt filter, another filter per shard
// and another build.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_test_support.hpp"
#include "junit.hpp"
#include "shard_record.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::conformance_run;
using test::cli::run_cujit;

class CliMerge : public ::testing::Test {
 protected:
  // Runs shard `shard` ("I/N") into DIR/<name> and returns that directory.
  fs::path shard(const std::string& name, const std::string& shard_spec,
                 std::vector<std::pair<std::string, std::string>> env = {},
                 const std::vector<std::string>& areas = {"format", "nrt"}) {
    const fs::path out = dir_.path() / name;
    const auto run = conformance_run(build_, out, shard_spec, areas, std::move(env));
    EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.all();
    return out;
  }

  test::cli::Run merge(const std::vector<fs::path>& dirs) {
    test::cli::Spec spec;
    spec.args = {"merge", "--out", (dir_.path() / "merged").string()};
    for (const fs::path& dir : dirs) spec.args.push_back(dir.string());
    return run_cujit(spec);
  }

  nlohmann::json verdict() const {
    return nlohmann::json::parse(test::cli::read_all(dir_.path() / "merged" / "verdict.json"), nullptr, false);
  }

  // The merge failed, said why (`problem`) and wrote a failing verdict.
  void expect_failed_merge(const test::cli::Run& run, const std::string& problem) {
    EXPECT_EQ(run.exit_code, 1) << run.all();
    EXPECT_NE(run.out.find(problem), std::string::npos) << run.all();
    EXPECT_NE(run.out.find("verdict FAIL"), std::string::npos) << run.all();
    const nlohmann::json json = verdict();
    ASSERT_TRUE(json.is_object());
    EXPECT_EQ(json.value("verdict", ""), "fail");
    EXPECT_FALSE(json.at("problems").empty());
  }

  TempDir dir_;
  const fs::path build_ = test::cli::make_fake_build(dir_.path(), {"format", "nrt"});
};

TEST_F(CliMerge, EveryShardOnceIsOnePassingJUnitWithEveryTest) {
  const auto run = merge({shard("s0", "0/2"), shard("s1", "1/2")});
  EXPECT_EQ(run.exit_code, 0) << run.all();
  const std::vector<cli::TestCase> cases = cli::read_junit(dir_.path() / "merged" / "junit.xml");
  EXPECT_EQ(cases.size(), 6u);
  const nlohmann::json json = verdict();
  ASSERT_TRUE(json.is_object());
  EXPECT_EQ(json.value("verdict", ""), "pass");
  EXPECT_EQ(json.value("passed", -1), 4);
  EXPECT_EQ(json.value("skipped", -1), 2);
  EXPECT_EQ(json.value("failed", -1), 0);
  EXPECT_EQ(json.at("shards").size(), 2u);
}

TEST_F(CliMerge, MissingShardFails) {
  expect_failed_merge(merge({shard("s0", "0/3"), shard("s2", "2/3")}), "shard 1/3 is missing");
}

TEST_F(CliMerge, DirectoryWithoutARecordFails) {
  const fs::path lost = dir_.path() / "never-collected";
  expect_failed_merge(merge({shard("s0", "0/2"), shard("s1", "1/2"), lost}), "no shard record");
}

TEST_F(CliMerge, ShardGivenTwiceFails) {
  const fs::path s0 = shard("s0", "0/2");
  const fs::path again = shard("s0-again", "0/2");
  expect_failed_merge(merge({s0, again, shard("s1", "1/2")}), "shard 0/2 is given more than once");
}

TEST_F(CliMerge, ShardsOfDifferentCountsFail) {
  expect_failed_merge(merge({shard("s0", "0/2"), shard("s1", "1/2"), shard("t2", "2/3")}),
                      "shards disagree on N");
}

TEST_F(CliMerge, ShardThatNeverFinishedFails) {
  const fs::path s1 = shard("s1", "1/2");
  // What a shard whose cujit conformance died leaves: the record it wrote at its start.
  auto record = nlohmann::json::parse(test::cli::read_all(s1 / "shard.json"));
  record["finished"] = false;
  record["verdict"] = "unfinished";
  record["areas"] = nlohmann::json::array();
  test::cli::write_file(s1 / "shard.json", record.dump());
  expect_failed_merge(merge({shard("s0", "0/2"), s1}), "started but never finished");
}

TEST_F(CliMerge, CrashedExecutableFailsTheMergeAsAFailedTest) {
  // Shard 0 of 2 holds FakeSuite.Crashes.
  const auto run = merge({shard("s0", "0/2", {{"CUJIT_FAKE_CRASH", "1"}}), shard("s1", "1/2")});
  expect_failed_merge(run, "SIGSEGV");
  bool reported = false;
  for (const cli::TestCase& test : cli::read_junit(dir_.path() / "merged" / "junit.xml")) {
    reported = reported || (test.result == cli::Result::failed && test.message.find("SIGSEGV") != std::string::npos);
  }
  EXPECT_TRUE(reported) << "the crash is a failed test case in the merged JUnit";
}

TEST_F(CliMerge, JUnitThatLostTestsOfTheRecordFails) {
  const fs::path s0 = shard("s0", "0/2");
  test::cli::write_file(s0 / "junit" / "nrt.xml", "<?xml version=\"1.0\"?>\n<testsuites tests=\"0\"></testsuites>\n");
  expect_failed_merge(merge({s0, shard("s1", "1/2")}), "holds 0 tests, its record counts 2");
}

TEST_F(CliMerge, JUnitMissingFails) {
  const fs::path s1 = shard("s1", "1/2");
  fs::remove(s1 / "junit" / "format.xml");
  expect_failed_merge(merge({shard("s0", "0/2"), s1}), "format.xml does not exist");
}

TEST_F(CliMerge, ShardsOfDifferentAreasFail) {
  expect_failed_merge(merge({shard("s0", "0/2"), shard("s1", "1/2", {}, {"format"})}), "shards ran different areas");
}

TEST_F(CliMerge, UnreadableRecordFailsNamingIt) {
  const fs::path s1 = shard("s1", "1/2");
  test::cli::write_file(s1 / "shard.json", "{\"schema\": 1");
  expect_failed_merge(merge({shard("s0", "0/2"), s1}), (s1 / "shard.json").string());
}

TEST_F(CliMerge, NoDirectoryIsAUsageError) {
  test::cli::Spec spec;
  spec.args = {"merge", "--out", (dir_.path() / "merged").string()};
  EXPECT_EQ(run_cujit(spec).exit_code, 2);
}

TEST_F(CliMerge, ShardWhoseOwnVerdictFailedFailsThoughItsReportIsClean) {
  const fs::path s1 = shard("s1", "1/2");
  auto record = nlohmann::json::parse(test::cli::read_all(s1 / "shard.json"));
  record["verdict"] = "fail";
  test::cli::write_file(s1 / "shard.json", record.dump());
  expect_failed_merge(merge({shard("s0", "0/2"), s1}), "its own verdict is fail");
}

// A misspelt filter, the same in every shard: each shard and the merge exit 2 as the
// unsharded run does, for any number of shards. The filters are generated misspellings of
// a test's name (a letter dropped, doubled or changed), none of which names a test.
TEST_F(CliMerge, EveryShardMisspeltIsExit2AsTheUnshardedRun) {
  std::mt19937 rng(20261127);
  const std::string name = "FakeSuite.Passes";
  for (int trial = 0; trial < 3; ++trial) {
    std::string misspelt = name;
    const std::size_t at = 10 + rng() % (name.size() - 10);  // inside "Passes": the suite stays a prefix
    switch (rng() % 3) {
      case 0: misspelt.erase(at, 1); break;
      case 1: misspelt.insert(at, 1, misspelt[at]); break;
      default: misspelt[at] = misspelt[at] == 'q' ? 'z' : 'q'; break;
    }
    const int total = 1 + static_cast<int>(rng() % 3);
    SCOPED_TRACE("filter " + misspelt + ", " + std::to_string(total) + " shards");
    std::vector<fs::path> dirs;
    for (int index = 0; index < total; ++index) {
      const fs::path out = dir_.path() / ("misspelt" + std::to_string(trial) + "_" + std::to_string(index));
      test::cli::Spec spec;
      spec.args = {"conformance", "--out", out.string(), "--shard", std::to_string(index) + "/" + std::to_string(total),
                   "--filter", misspelt, "--area", "format", "--area", "nrt"};
      spec.env = {{"CUJIT_BUILD_DIR", build_.string()}};
      spec.unset = {"CUJIT_FAKE_CRASH", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
      const auto run = run_cujit(spec);
      EXPECT_EQ(run.exit_code, 2) << run.all();
      dirs.push_back(out);
    }
    const auto run = merge(dirs);
    EXPECT_EQ(run.exit_code, 2) << run.all();
    EXPECT_NE(run.out.find("no test is selected"), std::string::npos) << run.all();
    EXPECT_EQ(run.out.find("verdict pass"), std::string::npos) << run.all();
    EXPECT_EQ(verdict().value("verdict", ""), "fail");
  }
}

// Shards run with different filters are not parts of one run, whichever ran which: the
// merge refuses them (exit 2) naming each shard's record, and leaves a failing verdict.
TEST_F(CliMerge, ShardsOfDifferentFiltersAreRefusedNamingTheirRecords) {
  auto filtered = [&](const std::string& name, const std::string& shard_spec, const std::string& filter) {
    const fs::path out = dir_.path() / name;
    test::cli::Spec spec;
    spec.args = {"conformance", "--out", out.string(), "--shard", shard_spec, "--area", "format", "--area", "nrt"};
    if (!filter.empty()) spec.args.insert(spec.args.end(), {"--filter", filter});
    spec.env = {{"CUJIT_BUILD_DIR", build_.string()}};
    spec.unset = {"CUJIT_FAKE_CRASH", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
    const auto run = run_cujit(spec);
    EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.all();
    return out;
  };
  // Earlier merges' verdicts in --out must not survive a refusal.
  ASSERT_EQ(merge({shard("s0", "0/2"), shard("s1", "1/2")}).exit_code, 0);
  const std::vector<std::pair<std::string, std::string>> pairs{
      {"FakeSuite.*", "FakeSuite.Pass*"}, {"", "FakeSuite.*"}, {"*-FakeSuite.Skips", "*-FakeSuite.Crashes"}};
  for (const auto& [first, second] : pairs) {
    SCOPED_TRACE(first + " / " + second);
    const fs::path a = filtered("a" + std::to_string(std::hash<std::string>{}(first)), "0/2", first);
    const fs::path b = filtered("b" + std::to_string(std::hash<std::string>{}(second)), "1/2", second);
    const auto run = merge({a, b});
    EXPECT_EQ(run.exit_code, 2) << run.all();
    EXPECT_NE(run.err.find("differ in --filter"), std::string::npos) << run.all();
    EXPECT_NE(run.err.find((a / "shard.json").string()), std::string::npos) << run.all();
    EXPECT_NE(run.err.find((b / "shard.json").string()), std::string::npos) << run.all();
    const nlohmann::json json = verdict();
    ASSERT_TRUE(json.is_object()) << "a refused merge leaves a failing verdict";
    EXPECT_EQ(json.value("verdict", ""), "fail");
    EXPECT_NE(json.value("refused", ""), "");
    EXPECT_FALSE(fs::exists(dir_.path() / "merged" / "junit.xml")) << "no JUnit of a merge that did not happen";
  }
}

// A shard run on another build (a suite whose bytes differ) is refused, naming it.
TEST_F(CliMerge, ShardOfAnotherBuildIsRefused) {
  const fs::path other_root = dir_.path() / "other";
  fs::create_directories(other_root);
  const fs::path other = test::cli::make_fake_build(other_root, {"format", "nrt"});
  // The same program with one byte more at its end: it runs the same, but is another build.
  const fs::path suite = other / "conformance" / "conformance_nrt";
  fs::remove(suite);
  fs::copy_file(CUJIT_CLI_FAKE_TOOL, suite);
  std::ofstream(suite, std::ios::binary | std::ios::app) << '\0';
  fs::permissions(suite, fs::perms::owner_all);
  const fs::path theirs = dir_.path() / "theirs";
  const auto ran = conformance_run(other, theirs, "1/2", {"format", "nrt"});
  ASSERT_TRUE(ran.exit_code == 0 || ran.exit_code == 1) << ran.all();
  const auto run = merge({shard("s0", "0/2"), theirs});
  EXPECT_EQ(run.exit_code, 2) << run.all();
  EXPECT_NE(run.err.find("differ in the suite of area nrt"), std::string::npos) << run.all();
  EXPECT_NE(run.err.find((theirs / "shard.json").string()), std::string::npos) << run.all();
}

// ---- Generated runs ------------------------------------------------------------------

// One generated conformance run: each area's selection, and per shard the tests it ran.
struct GeneratedRun {
  std::map<std::string, std::vector<std::string>> selection;  // area -> tests, in order
  int total = 1;
  // shard -> area -> tests it ran (and reports)
  std::vector<std::map<std::string, std::vector<std::string>>> ran;
  std::vector<cli::ShardRecord> records;  // what each shard's record says besides its tests
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& [area, tests] : selection) n += tests.size();
    return n;
  }
};

// A random selection (1 to 3 areas, 0 to `max_tests` tests each, named as Google Test
// names plain and parameterised tests) split at random into 1 to 8 shards.
GeneratedRun generate_run(std::mt19937& rng, std::size_t max_tests) {
  GeneratedRun run;
  const std::vector<std::string> areas{"format", "nrt", "cache"};
  const std::size_t area_count = 1 + rng() % areas.size();
  for (std::size_t a = 0; a < area_count; ++a) {
    std::vector<std::string>& tests = run.selection[areas[a]];
    const std::size_t n = rng() % (max_tests + 1);
    for (std::size_t t = 0; t < n; ++t) {
      tests.push_back(rng() % 4 == 0 ? "Inst" + std::to_string(t % 3) + "/Param" + std::to_string(t % 5) + ".Case/" +
                                           std::to_string(t)
                                     : "Suite" + std::to_string(t % 7) + ".Test" + std::to_string(t));
    }
  }
  run.total = 1 + static_cast<int>(rng() % 8);
  run.ran.resize(static_cast<std::size_t>(run.total));
  for (const auto& [area, tests] : run.selection) {
    for (auto& shard : run.ran) shard[area];  // every shard ran every area, maybe no test of it
    for (const std::string& test : tests) run.ran[rng() % run.ran.size()][area].push_back(test);
  }
  cli::RunIdentity identity;
  identity.filter = rng() % 2 == 0 ? "" : "Suite*:Inst*-Suite3.*";
  identity.source_digest = "0123456789abcdef";
  for (const auto& [area, tests] : run.selection) identity.suites[area] = "fedcba987654321" + std::to_string(area.size() % 10);
  for (int index = 0; index < run.total; ++index) {
    cli::ShardRecord record;
    record.shard = {index, run.total};
    record.finished = true;
    record.verdict = cli::verdict_pass;
    record.run = identity;
    for (const auto& [area, tests] : run.selection) record.areas_requested.push_back(area);
    run.records.push_back(record);
  }
  return run;
}

// Writes each shard's directory under `root` as `cujit conformance` leaves it: its JUnit
// XML per area (each test passing or skipping) and its record naming what it ran.
std::vector<fs::path> write_run(const GeneratedRun& run, const fs::path& root) {
  std::vector<fs::path> dirs;
  for (int index = 0; index < run.total; ++index) {
    const fs::path dir = root / ("shard" + std::to_string(index));
    fs::create_directories(dir / "junit");
    cli::ShardRecord record = run.records[static_cast<std::size_t>(index)];
    for (const auto& [area, tests] : run.ran[static_cast<std::size_t>(index)]) {
      cli::AreaRecord area_record;
      area_record.name = area;
      area_record.selected = run.selection.at(area);
      area_record.ran = tests;
      std::vector<cli::TestCase> cases;
      for (const std::string& test : tests) {
        cli::TestCase each;
        const std::size_t dot = test.find('.');
        each.suite = test.substr(0, dot);
        each.name = test.substr(dot + 1);
        each.result = test.size() % 5 == 0 ? cli::Result::skipped : cli::Result::passed;
        if (each.result == cli::Result::skipped) each.message = "generated skip";
        ++(each.result == cli::Result::skipped ? area_record.skipped : area_record.passed);
        cases.push_back(each);
      }
      cli::write_junit(dir / "junit" / (area + ".xml"), cases);
      record.areas.push_back(area_record);
    }
    test::cli::write_file(dir / "shard.json", cli::to_json(record));
    dirs.push_back(dir);
  }
  return dirs;
}

// A random nonempty subset of the run's (area, test) pairs, at most `most` of them.
std::vector<std::pair<std::string, std::string>> some_tests(const GeneratedRun& run, std::mt19937& rng,
                                                             std::size_t most) {
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& [area, tests] : run.selection) {
    for (const std::string& test : tests) all.emplace_back(area, test);
  }
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(std::min(all.size(), 1 + rng() % most));
  return all;
}

// "area -> how many" of a list of (area, test).
std::map<std::string, std::size_t> per_area(const std::vector<std::pair<std::string, std::string>>& tests) {
  std::map<std::string, std::size_t> counts;
  for (const auto& [area, test] : tests) ++counts[area];
  return counts;
}

class CliMergeGenerated : public ::testing::Test {
 protected:
  test::cli::Run merge(const std::vector<fs::path>& dirs, const fs::path& out) {
    test::cli::Spec spec;
    spec.args = {"merge", "--out", out.string()};
    for (const fs::path& dir : dirs) spec.args.push_back(dir.string());
    return run_cujit(spec);
  }
  // A fresh directory per trial.
  fs::path trial_dir(const std::string& kind, int trial) {
    const fs::path dir = dir_.path() / (kind + std::to_string(trial));
    fs::create_directories(dir);
    return dir;
  }
  static nlohmann::json verdict_in(const fs::path& out) {
    return nlohmann::json::parse(test::cli::read_all(out / "verdict.json"), nullptr, false);
  }
  TempDir dir_;
};

constexpr int trials = 12;
constexpr std::size_t max_tests = 120;

TEST_F(CliMergeGenerated, AnySplitOfANonEmptySelectionPassesWithEveryTestOnce) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < trials; ++trial) {
    GeneratedRun run = generate_run(rng, max_tests);
    if (run.size() == 0) run = generate_run(rng, max_tests);
    if (run.size() == 0) continue;  // twice empty: the empty selection has its own test
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(run.size()) + " tests in " +
                 std::to_string(run.total) + " shards");
    const fs::path root = trial_dir("pass", trial);
    const auto merged = merge(write_run(run, root), root / "merged");
    EXPECT_EQ(merged.exit_code, 0) << merged.all();
    EXPECT_EQ(cli::read_junit(root / "merged" / "junit.xml").size(), run.size());
    const nlohmann::json json = verdict_in(root / "merged");
    ASSERT_TRUE(json.is_object());
    EXPECT_EQ(json.value("verdict", ""), "pass");
    EXPECT_EQ(json.value("selected", std::size_t{0}), run.size());
  }
}

TEST_F(CliMergeGenerated, TestsThatNoShardRanFailNamingTheirCountPerArea) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < trials; ++trial) {
    GeneratedRun run = generate_run(rng, max_tests);
    if (run.size() == 0) continue;
    const auto dropped = some_tests(run, rng, 40);
    for (const auto& [area, test] : dropped) {
      for (auto& shard : run.ran) {
        auto& tests = shard[area];
        tests.erase(std::remove(tests.begin(), tests.end(), test), tests.end());
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(dropped.size()) + " of " +
                 std::to_string(run.size()) + " dropped");
    const fs::path root = trial_dir("dropped", trial);
    const auto merged = merge(write_run(run, root), root / "merged");
    EXPECT_EQ(merged.exit_code, 1) << merged.all();
    for (const auto& [area, n] : per_area(dropped)) {
      const std::string said = std::to_string(n) + " of the " + std::to_string(run.selection.at(area).size()) +
                               " tests area " + area + " selects never ran in any shard";
      EXPECT_NE(merged.out.find(said), std::string::npos) << said << "\n" << merged.all();
    }
    // The first ten of each area's tests that never ran are named, in selection order.
    for (const auto& [area, n] : per_area(dropped)) {
      const std::vector<std::string>& selected = run.selection.at(area);
      std::size_t first = selected.size();
      for (const auto& [dropped_area, test] : dropped) {
        if (dropped_area != area) continue;
        first = std::min(first, static_cast<std::size_t>(std::find(selected.begin(), selected.end(), test) - selected.begin()));
      }
      ASSERT_LT(first, selected.size());
      EXPECT_NE(merged.out.find(selected[first]), std::string::npos) << selected[first] << " is named";
    }
    EXPECT_EQ(verdict_in(root / "merged").value("verdict", ""), "fail");
  }
}

TEST_F(CliMergeGenerated, TestsThatShardsOverlapOnFailNamingTheirCountPerArea) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < trials; ++trial) {
    GeneratedRun run = generate_run(rng, max_tests);
    if (run.size() == 0) continue;
    if (run.total == 1) {  // a test run twice by one shard is an overlap too, but take two shards
      run.total = 2;
      run.ran.emplace_back();
      for (const auto& [area, tests] : run.selection) run.ran[1][area];
      cli::ShardRecord second = run.records[0];
      run.records[0].shard = {0, 2};
      second.shard = {1, 2};
      run.records.push_back(second);
    }
    const auto doubled = some_tests(run, rng, 40);
    for (const auto& [area, test] : doubled) {
      // Into a shard that did not run it already (the overlap of two shards' selections).
      std::vector<std::size_t> others;
      for (std::size_t s = 0; s < run.ran.size(); ++s) {
        const auto& tests = run.ran[s][area];
        if (std::find(tests.begin(), tests.end(), test) == tests.end()) others.push_back(s);
      }
      run.ran[others[rng() % others.size()]][area].push_back(test);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(doubled.size()) + " of " +
                 std::to_string(run.size()) + " doubled");
    const fs::path root = trial_dir("doubled", trial);
    const auto merged = merge(write_run(run, root), root / "merged");
    EXPECT_EQ(merged.exit_code, 1) << merged.all();
    for (const auto& [area, n] : per_area(doubled)) {
      const std::string said = std::to_string(n) + " of the " + std::to_string(run.selection.at(area).size()) +
                               " tests area " + area + " selects ran in more than one shard";
      EXPECT_NE(merged.out.find(said), std::string::npos) << said << "\n" << merged.all();
    }
    EXPECT_EQ(verdict_in(root / "merged").value("verdict", ""), "fail");
  }
}

// A random edit of a text: a character dropped, inserted or changed; never the same text.
std::string mutated(std::string text, std::mt19937& rng) {
  const std::string alphabet = "abcXYZ*.:-?09_/";
  const std::string before = text;
  do {
    text = before;
    const std::size_t at = text.empty() ? 0 : rng() % text.size();
    switch (text.empty() ? 1 : rng() % 3) {
      case 0: text.erase(at, 1); break;
      case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      default: text[at] = alphabet[rng() % alphabet.size()]; break;
    }
  } while (text == before);
  return text;
}

// One random shard of a passing run given another filter, require-gpu, source digest,
// suites digest or selection of an area: refused, exit 2, naming that shard's record and
// another's, and the verdict on disk is fail.
TEST_F(CliMergeGenerated, OneShardOfAnotherRunIsRefusedNamingTheRecords) {
  std::mt19937 rng(4);
  const std::vector<std::string> fields{"--filter", "--require-gpu", "source digest", "the suite of area", "selection"};
  for (int trial = 0; trial < 2 * trials; ++trial) {
    GeneratedRun run = generate_run(rng, max_tests);
    if (run.total == 1) continue;  // one shard is always one run
    const std::string field = fields[static_cast<std::size_t>(trial) % fields.size()];
    const std::size_t odd = rng() % run.records.size();
    cli::RunIdentity& identity = run.records[odd].run;
    std::vector<fs::path> dirs;
    const fs::path root = trial_dir("refused", trial);
    if (field == "--filter") identity.filter = mutated(identity.filter, rng);
    if (field == "--require-gpu") identity.require_gpu = !identity.require_gpu;
    if (field == "source digest") identity.source_digest = rng() % 2 == 0 ? "unknown" : mutated(identity.source_digest, rng);
    if (field == "the suite of area") {
      auto suite = identity.suites.begin();
      std::advance(suite, static_cast<long>(rng() % identity.suites.size()));
      suite->second = mutated(suite->second, rng);
    }
    if (field == "selection") {
      dirs = write_run(run, root);
      // The odd shard's record of one area holds another selection: a test more or fewer.
      auto record = nlohmann::json::parse(test::cli::read_all(dirs[odd] / "shard.json"));
      auto& area = record["areas"][rng() % record["areas"].size()];
      if (!area["selected"].empty() && rng() % 2 == 0) {
        area["selected"].erase(rng() % area["selected"].size());
      } else {
        area["selected"].push_back("Extra.Test");
      }
      test::cli::write_file(dirs[odd] / "shard.json", record.dump());
    } else {
      dirs = write_run(run, root);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ": shard " + std::to_string(odd) + " of " +
                 std::to_string(run.total) + " has another " + field);
    const auto merged = merge(dirs, root / "merged");
    EXPECT_EQ(merged.exit_code, 2) << merged.all();
    EXPECT_NE(merged.err.find("not parts of one run"), std::string::npos) << merged.all();
    EXPECT_NE(merged.err.find(field), std::string::npos) << merged.all();
    EXPECT_NE(merged.err.find((dirs[odd] / "shard.json").string()), std::string::npos) << merged.all();
    EXPECT_NE(merged.err.find((dirs[odd == 0 ? 1 : 0] / "shard.json").string()), std::string::npos) << merged.all();
    const nlohmann::json json = verdict_in(root / "merged");
    ASSERT_TRUE(json.is_object());
    EXPECT_EQ(json.value("verdict", ""), "fail");
  }
}

TEST_F(CliMergeGenerated, ShardsWhoseOwnVerdictFailedFailTheMergeThoughTheirReportsAreClean) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < trials; ++trial) {
    GeneratedRun run = generate_run(rng, max_tests);
    std::set<int> flipped;
    const std::size_t flips = 1 + rng() % run.records.size();
    for (std::size_t i = 0; i < flips; ++i) {
      const int index = static_cast<int>(rng() % run.records.size());
      flipped.insert(index);
      run.records[static_cast<std::size_t>(index)].verdict = cli::verdict_fail;
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(flipped.size()) + " of " +
                 std::to_string(run.total) + " shards say fail");
    const fs::path root = trial_dir("flipped", trial);
    const auto merged = merge(write_run(run, root), root / "merged");
    // An empty selection is exit 2 whatever the shards say; a nonempty one fails (1).
    EXPECT_EQ(merged.exit_code, run.size() == 0 ? 2 : 1) << merged.all();
    std::size_t said = 0;
    for (std::size_t at = merged.out.find("its own verdict is fail"); at != std::string::npos;
         at = merged.out.find("its own verdict is fail", at + 1)) {
      ++said;
    }
    EXPECT_EQ(said, flipped.size()) << merged.all();
    EXPECT_EQ(merged.out.find("; verdict pass"), std::string::npos) << merged.all();
    EXPECT_EQ(verdict_in(root / "merged").value("verdict", ""), "fail");
  }
}

TEST_F(CliMergeGenerated, AnEmptySelectionIsExit2ForAnyNumberOfShards) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < trials; ++trial) {
    GeneratedRun run = generate_run(rng, 0);
    ASSERT_EQ(run.size(), 0u);
    // As `cujit conformance` records it: each shard of an empty selection says fail.
    for (cli::ShardRecord& record : run.records) record.verdict = cli::verdict_fail;
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(run.total) + " shards");
    const fs::path root = trial_dir("empty", trial);
    const auto merged = merge(write_run(run, root), root / "merged");
    EXPECT_EQ(merged.exit_code, 2) << merged.all();
    EXPECT_NE(merged.out.find("no test is selected"), std::string::npos) << merged.all();
    EXPECT_EQ(verdict_in(root / "merged").value("verdict", ""), "fail");
  }
}

// Messages read back from JUnit XML: random text of every escaped character, written by
// write_junit and read by read_junit, comes back as it was (newlines as spaces), entities
// decoded once ("&amp;lt;" is "&lt;").
TEST(HostileJUnit, EscapedMessagesOfEveryCharacterComeBackOnce) {
  std::mt19937 random(31);
  TempDir dir;
  const std::string alphabet = "<>&\"'\n\rab;#x0A";
  for (int round = 0; round < 200; ++round) {
    std::string message(random() % 64, ' ');
    for (char& c : message) c = alphabet[random() % alphabet.size()];
    cli::TestCase failed;
    failed.suite = "S";
    failed.name = "t" + std::to_string(round);
    failed.result = cli::Result::failed;
    failed.message = message;
    cli::write_junit(dir.path() / "r.xml", {failed});
    const auto cases = cli::read_junit(dir.path() / "r.xml");
    ASSERT_EQ(cases.size(), 1u);
    std::string expected = message;
    std::replace(expected.begin(), expected.end(), '\n', ' ');
    std::replace(expected.begin(), expected.end(), '\r', ' ');
    EXPECT_EQ(cases.front().message, expected) << "round " << round;
  }
  const auto decoded = cli::parse_junit("<testcase name=\"a&amp;lt;b\" classname=\"&lt;&amp;&gt;\"/>");
  ASSERT_EQ(decoded.size(), 1u);
  EXPECT_EQ(decoded.front().name, "a&lt;b");
  EXPECT_EQ(decoded.front().suite, "<&>");
}

// A skip message of 6,000,000 entities (24 MB) is read in a child under a 60 s CPU limit
// (red-team finding F10: decoding entities in place was quadratic, 2.5 MB took 21 s, so
// this size took about half an hour; one pass takes well under a second). The CPU limit is
// a bound on the work, as a ctest TIMEOUT would be, not a timing assertion.
TEST(HostileJUnit, AMessageOfMillionsOfEntitiesIsReadInLinearWork) {
  constexpr std::size_t entities = 6'000'000;
  std::string xml = "<testsuites><testsuite><testcase name=\"t\" classname=\"s\" result=\"skipped\">"
                    "<skipped message=\"";
  xml.reserve(xml.size() + 4 * entities + 64);
  for (std::size_t i = 0; i < entities; ++i) xml += "&lt;";
  xml += "\"/></testcase></testsuite></testsuites>";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit cpu{60, 60};
    ::setrlimit(RLIMIT_CPU, &cpu);
    const auto cases = cli::parse_junit(xml);
    const bool right = cases.size() == 1 && cases.front().message == std::string(entities, '<');
    ::_exit(right ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status)
                                     << " (SIGXCPU: the decoding is not linear)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the message did not come back as 6,000,000 '<'";
}

}  // namespace
}  // namespace cujit
