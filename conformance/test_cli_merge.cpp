// `cujit merge DIR...`: shards of a conformance run (each `cujit conformance --shard I/N`
// over a fake build tree) into one JUnit file and one verdict. Every way a shard can go
// missing or wrong fails the merge, naming it: a shard absent, given twice, of another N,
// unfinished, with a crashed executable, with a record its JUnit XML does not bear out,
// with other areas, or no readable record at all. Never a smaller pass.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"
#include "junit.hpp"

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

}  // namespace
}  // namespace cujit
