// `cujit conformance --shard I/N` over a fake build tree whose suites are cli_fake_tool
// (three tests each): each shard runs its share of every executable through Google Test's
// sharding, the shards together run every test exactly once, --isolate picks the same
// share, and each shard leaves a record (shard.json) that says what it ran, and how an
// executable died. The I/N parsing is tested in process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "cli_test_support.hpp"
#include "junit.hpp"
#include "output.hpp"
#include "shard_record.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::conformance_run;

// "area:Suite.Test" for every test case of every area's JUnit XML under `out`.
std::multiset<std::string> tests_run(const fs::path& out, const std::vector<std::string>& areas) {
  std::multiset<std::string> names;
  for (const std::string& area : areas) {
    for (const cli::TestCase& test : cli::read_junit(out / "junit" / (area + ".xml"))) {
      names.insert(area + ":" + test.suite + "." + test.name);
    }
  }
  return names;
}

cli::ShardRecord record_of(const fs::path& out) {
  return cli::parse_shard_record(test::cli::read_all(out / cli::shard_record_file), "shard.json");
}

class CliShard : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::vector<std::string> areas_{"format", "nrt"};
  const fs::path build_ = test::cli::make_fake_build(dir_.path(), areas_);
};

TEST_F(CliShard, ShardsTogetherRunEveryTestExactlyOnce) {
  const auto whole = conformance_run(build_, dir_.path() / "whole", "", areas_);
  ASSERT_EQ(whole.exit_code, 0) << whole.all();
  const std::multiset<std::string> every = tests_run(dir_.path() / "whole", areas_);
  ASSERT_EQ(every.size(), 6u);

  std::multiset<std::string> union_of_shards;
  for (int index = 0; index < 3; ++index) {
    const fs::path out = dir_.path() / ("shard" + std::to_string(index));
    const auto run = conformance_run(build_, out, std::to_string(index) + "/3", areas_);
    ASSERT_EQ(run.exit_code, 0) << run.all();
    const std::multiset<std::string> ran = tests_run(out, areas_);
    // Three tests per executable over three shards: one test of each executable per shard.
    EXPECT_EQ(ran.size(), 2u) << "shard " << index;
    union_of_shards.insert(ran.begin(), ran.end());
  }
  EXPECT_EQ(union_of_shards, every);
}

TEST_F(CliShard, RecordSaysWhichShardRanWhatAndThatItFinished) {
  const fs::path out = dir_.path() / "out";
  const auto run = conformance_run(build_, out, "1/2", areas_);
  ASSERT_EQ(run.exit_code, 0) << run.all();
  const cli::ShardRecord record = record_of(out);
  EXPECT_EQ(record.shard.index, 1);
  EXPECT_EQ(record.shard.total, 2);
  EXPECT_TRUE(record.finished);
  EXPECT_EQ(record.areas_requested, areas_);
  ASSERT_EQ(record.areas.size(), 2u);
  // Shard 1 of 2 gets the second of each executable's three tests: FakeSuite.Skips.
  EXPECT_EQ(record.areas[0].passed, 0);
  EXPECT_EQ(record.areas[0].skipped, 1);
  EXPECT_EQ(record.areas[0].crashed, "");
  EXPECT_NE(run.out.find("shard 1/2"), std::string::npos) << run.all();
}

TEST_F(CliShard, UnshardedRunIsShardZeroOfOne) {
  const fs::path out = dir_.path() / "out";
  ASSERT_EQ(conformance_run(build_, out, "", {"format"}).exit_code, 0);
  const cli::ShardRecord record = record_of(out);
  EXPECT_EQ(record.shard.str(), "0/1");
  EXPECT_TRUE(record.finished);
  EXPECT_EQ(record.passed(), 2);
  EXPECT_EQ(record.skipped(), 1);
}

TEST_F(CliShard, IsolatedShardRunsTheSameTestsAsGoogleTestSharding) {
  for (int index = 0; index < 2; ++index) {
    const std::string shard = std::to_string(index) + "/2";
    const fs::path sharded = dir_.path() / ("gtest" + std::to_string(index));
    const fs::path isolated = dir_.path() / ("isolated" + std::to_string(index));
    ASSERT_EQ(conformance_run(build_, sharded, shard, areas_).exit_code, 0);
    test::cli::Spec spec;
    spec.args = {"conformance", "--isolate", "--out", isolated.string(), "--shard", shard, "--area", "format",
                 "--area", "nrt"};
    spec.env = {{"CUJIT_BUILD_DIR", build_.string()}};
    spec.unset = {"CUJIT_FAKE_CRASH"};
    const auto run = test::cli::run_cujit(spec);
    ASSERT_EQ(run.exit_code, 0) << run.all();
    EXPECT_EQ(tests_run(isolated, areas_), tests_run(sharded, areas_)) << "shard " << shard;
  }
}

TEST_F(CliShard, CrashedExecutableIsNamedInTheRecord) {
  const fs::path out = dir_.path() / "out";
  // Shard 0 of 2 holds FakeSuite.Crashes (the third test).
  const auto run = conformance_run(build_, out, "0/2", {"format"}, {{"CUJIT_FAKE_CRASH", "1"}});
  EXPECT_EQ(run.exit_code, 1) << run.all();
  const cli::ShardRecord record = record_of(out);
  EXPECT_TRUE(record.finished);
  ASSERT_EQ(record.areas.size(), 1u);
  EXPECT_NE(record.areas[0].crashed.find("SIGSEGV"), std::string::npos) << record.areas[0].crashed;
  EXPECT_GE(record.failed(), 1);
}

// What `cujit merge` relies on, and its generated tests write as a shard's directory: the
// record names the run (filter, require-gpu, source digest from CUJIT_SOURCE_DIGEST, the
// suites' digest, the same in every shard of one build), each area's whole unsharded
// selection (what the unsharded run runs), the tests the shard ran (its JUnit XML's), and
// its verdict. Over 1 and 3 shards and filters selecting all, some and one test (each run
// costs half a second: the pairs are the class, more would only slow the CPU suite).
TEST_F(CliShard, RecordNamesTheRunTheWholeSelectionAndWhatTheShardRan) {
  for (const std::string filter : {"", "FakeSuite.*-FakeSuite.Skips", "*Crashes"}) {
    SCOPED_TRACE("filter '" + filter + "'");
    auto run_shard = [&](const fs::path& out, const std::string& shard, const std::string& digest) {
      test::cli::Spec spec;
      spec.args = {"conformance", "--out", out.string(), "--area", "format", "--area", "nrt"};
      if (!shard.empty()) spec.args.insert(spec.args.end(), {"--shard", shard});
      if (!filter.empty()) spec.args.insert(spec.args.end(), {"--filter", filter});
      spec.env = {{"CUJIT_BUILD_DIR", build_.string()}, {"CUJIT_SOURCE_DIGEST", digest}};
      spec.unset = {"CUJIT_FAKE_CRASH", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
      return test::cli::run_cujit(spec);
    };
    const fs::path whole = dir_.path() / ("whole" + std::to_string(filter.size()));
    ASSERT_EQ(run_shard(whole, "", "0123456789abcdef").exit_code, 0);
    const cli::ShardRecord unsharded = record_of(whole);
    const std::multiset<std::string> every = tests_run(whole, areas_);
    for (const int total : {1, 3}) {
      std::multiset<std::string> union_of_shards;
      std::set<std::string> digests;
      for (int index = 0; index < total; ++index) {
        const std::string shard = std::to_string(index) + "/" + std::to_string(total);
        SCOPED_TRACE("shard " + shard);
        const fs::path out = dir_.path() / ("f" + std::to_string(filter.size()) + "_" + std::to_string(index) + "of" +
                                            std::to_string(total));
        // An odd shard's digest is not one: recorded as unknown, as the reports do.
        const bool odd = index % 2 == 1;
        ASSERT_EQ(run_shard(out, shard, odd ? "not-a-digest" : "0123456789abcdef").exit_code, 0);
        const cli::ShardRecord record = record_of(out);
        EXPECT_EQ(record.verdict, "pass");
        EXPECT_EQ(record.run.filter, filter);
        EXPECT_FALSE(record.run.require_gpu);
        EXPECT_EQ(record.run.source_digest, odd ? "unknown" : "0123456789abcdef");
        ASSERT_EQ(record.run.suites.size(), 2u);
        for (const auto& [area, digest] : record.run.suites) {
          EXPECT_EQ(digest.size(), 16u);
          digests.insert(digest);
        }
        ASSERT_EQ(record.areas.size(), unsharded.areas.size());
        for (std::size_t a = 0; a < record.areas.size(); ++a) {
          EXPECT_EQ(record.areas[a].selected, unsharded.areas[a].selected) << record.areas[a].name;
          std::multiset<std::string> in_junit;
          for (const cli::TestCase& test : cli::read_junit(out / "junit" / (record.areas[a].name + ".xml"))) {
            in_junit.insert(test.suite + "." + test.name);
          }
          EXPECT_EQ(std::multiset<std::string>(record.areas[a].ran.begin(), record.areas[a].ran.end()), in_junit);
          for (const std::string& test : record.areas[a].ran) union_of_shards.insert(record.areas[a].name + ":" + test);
        }
      }
      // Both areas' suites are the one fake tool: one digest of one build.
      EXPECT_EQ(digests.size(), 1u) << "one build, one digest";
      std::multiset<std::string> selected;
      for (const cli::AreaRecord& area : unsharded.areas) {
        for (const std::string& test : area.selected) selected.insert(area.name + ":" + test);
      }
      EXPECT_EQ(union_of_shards, selected) << total << " shards";
      EXPECT_EQ(selected, every) << "the selection is what the unsharded run ran";
    }
  }
}

// A filter that selects nothing is a misspelt one in every shard, as in the unsharded run:
// exit 2, and a finished record whose verdict is fail with an empty selection.
TEST_F(CliShard, EmptySelectionIsExit2InEveryShard) {
  for (int total = 1; total <= 3; ++total) {
    for (int index = 0; index < total; ++index) {
      const std::string shard = std::to_string(index) + "/" + std::to_string(total);
      SCOPED_TRACE(shard);
      const fs::path out = dir_.path() / ("empty" + std::to_string(index) + "of" + std::to_string(total));
      test::cli::Spec spec;
      spec.args = {"conformance", "--out", out.string(), "--shard", shard, "--filter", "FakeSuite.Pases", "--area", "format"};
      spec.env = {{"CUJIT_BUILD_DIR", build_.string()}};
      spec.unset = {"CUJIT_FAKE_CRASH", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
      const auto run = test::cli::run_cujit(spec);
      EXPECT_EQ(run.exit_code, 2) << run.all();
      EXPECT_NE(run.err.find("no test matches --filter"), std::string::npos) << run.all();
      const cli::ShardRecord record = record_of(out);
      EXPECT_TRUE(record.finished);
      EXPECT_EQ(record.verdict, "fail");
      ASSERT_EQ(record.areas.size(), 1u);
      EXPECT_TRUE(record.areas[0].selected.empty());
    }
  }
}

TEST_F(CliShard, MalformedShardIsExit2NamingTheOption) {
  for (const std::string shard : {"2/2", "1", "x/2", "1/0", "0/10001", "1/2/3", "0x1/2"}) {
    SCOPED_TRACE(shard);
    const auto run = conformance_run(build_, dir_.path() / "out", shard, {"format"});
    EXPECT_EQ(run.exit_code, 2) << run.all();
    EXPECT_NE(run.err.find("--shard '" + shard + "'"), std::string::npos) << run.all();
  }
}

TEST(ShardArgument, ParsesIndexAndTotalCountingFromZero) {
  EXPECT_EQ(cli::parse_shard("0/1").str(), "0/1");
  const cli::Shard shard = cli::parse_shard("3/4");
  EXPECT_EQ(shard.index, 3);
  EXPECT_EQ(shard.total, 4);
  EXPECT_EQ(cli::parse_shard("9999/10000").total, 10000);
  EXPECT_THROW(cli::parse_shard("4/4"), cli::CliError);
  EXPECT_THROW(cli::parse_shard("/4"), cli::CliError);
  EXPECT_THROW(cli::parse_shard("0/"), cli::CliError);
  EXPECT_THROW(cli::parse_shard("-1/2"), cli::CliError);
  EXPECT_THROW(cli::parse_shard(" 0/1"), cli::CliError);
  EXPECT_THROW(cli::parse_shard("+0/1"), cli::CliError);
}

TEST(ShardRecord, ReadsBackWhatItWrote) {
  cli::ShardRecord record;
  record.shard = {2, 5};
  record.finished = true;
  record.verdict = cli::verdict_fail;
  record.run = {"A.*-A.B", true, "0123456789abcdef", {{"format", "fedcba9876543210"}, {"cli", "0000000000000001"}}};
  record.areas_requested = {"format", "cli"};
  record.devices = {"NVIDIA H100 (sm_90)"};
  record.areas = {{"format", 3, 1, 2, "", {"A.A", "A.B", "P/Q.R/0"}, {"A.B"}},
                  {"cli", 0, 1, 0, "crashed: SIGSEGV in A.B", {}, {}}};
  const cli::ShardRecord read = cli::parse_shard_record(cli::to_json(record), "here");
  EXPECT_EQ(read.shard.str(), "2/5");
  EXPECT_TRUE(read.finished);
  EXPECT_EQ(read.verdict, "fail");
  EXPECT_EQ(read.run.filter, "A.*-A.B");
  EXPECT_TRUE(read.run.require_gpu);
  EXPECT_EQ(read.run.source_digest, "0123456789abcdef");
  EXPECT_EQ(read.run.suites, record.run.suites);
  EXPECT_EQ(read.areas[0].selected, record.areas[0].selected);
  EXPECT_EQ(read.areas[0].ran, record.areas[0].ran);
  EXPECT_EQ(read.areas_requested, record.areas_requested);
  EXPECT_EQ(read.devices, record.devices);
  ASSERT_EQ(read.areas.size(), 2u);
  EXPECT_EQ(read.areas[1].crashed, "crashed: SIGSEGV in A.B");
  EXPECT_EQ(read.passed(), 3);
  EXPECT_EQ(read.failed(), 2);
  EXPECT_EQ(read.skipped(), 2);
}

TEST(ShardRecord, RejectsRecordsThatCouldMisleadTheMerge) {
  cli::ShardRecord good;
  good.finished = true;
  good.verdict = cli::verdict_pass;
  good.areas_requested = {"format"};
  good.areas = {{"format", 1, 0, 0, "", {"A.B"}, {"A.B"}}};
  const nlohmann::json valid = nlohmann::json::parse(cli::to_json(good));
  const std::vector<std::pair<std::string, nlohmann::json>> damaged{
      {"index beyond total", [&] { auto j = valid; j["shard"]["index"] = 1; return j; }()},
      {"no total", [&] { auto j = valid; j["shard"].erase("total"); return j; }()},
      {"schema 1 (no run, verdict or selection)", [&] { auto j = valid; j["schema"] = 1; return j; }()},
      {"other schema", [&] { auto j = valid; j["schema"] = 3; return j; }()},
      {"no verdict", [&] { auto j = valid; j.erase("verdict"); return j; }()},
      {"finished and unfinished", [&] { auto j = valid; j["verdict"] = "unfinished"; return j; }()},
      {"unfinished and passed", [&] { auto j = valid; j["finished"] = false; return j; }()},
      {"verdict of another word", [&] { auto j = valid; j["verdict"] = "ok"; return j; }()},
      {"no filter", [&] { auto j = valid; j["run"].erase("filter"); return j; }()},
      {"no suites", [&] { auto j = valid; j["run"].erase("suites"); return j; }()},
      {"no selection", [&] { auto j = valid; j["areas"][0].erase("selected"); return j; }()},
      {"no tests ran", [&] { auto j = valid; j["areas"][0].erase("ran"); return j; }()},
      {"area naming a path", [&] { auto j = valid; j["areas"][0]["name"] = "../etc"; return j; }()},
      {"negative count", [&] { auto j = valid; j["areas"][0]["failed"] = -1; return j; }()},
      {"finished as text", [&] { auto j = valid; j["finished"] = "yes"; return j; }()},
  };
  EXPECT_NO_THROW(cli::parse_shard_record(valid.dump(), "shard.json"));
  for (const auto& [what, json] : damaged) {
    SCOPED_TRACE(what);
    EXPECT_THROW(cli::parse_shard_record(json.dump(), "shard.json"), cli::CliError);
  }
  EXPECT_THROW(cli::parse_shard_record("{not json", "shard.json"), cli::CliError);
}

}  // namespace
}  // namespace cujit
