// `cujit cache explain` and the misses by field in `cujit cache stats`: processes run with
// CUJIT_CACHE_EXPLAIN=1 (cache_child compiles, each a new process on one cache directory)
// log their misses; the CLI, another process, shows each with the field that changed and
// counts them per build kind and field. --zero empties the log with the counters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::run_cujit;
using test::cli::Spec;

Spec on(const fs::path& cache, std::vector<std::string> args) {
  Spec s;
  s.args = std::move(args);
  s.env = {{"CUJIT_CACHE_DIR", cache.string()}, {"CUJIT_CACHE", "disk"}, {"CUJIT_CACHE_EXPLAIN", "1"}};
  s.unset = {"CUJIT_CACHE_REMOTE", "CUJIT_CACHE_MAX_BYTES", "NO_COLOR"};
  return s;
}

void compile_in_child(const fs::path& cache, const std::vector<std::string>& options) {
  std::vector<std::string> args{"compile", cache.string(), (cache.parent_path() / "out").string()};
  args.insert(args.end(), options.begin(), options.end());
  const test::cli::Run run = test::cli::run_program(CUJIT_CLI_CACHE_CHILD, on(cache, args));
  ASSERT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.err.find("cujit: cache miss: "), std::string::npos) << run.all();
}

nlohmann::json json_of(const fs::path& cache, std::vector<std::string> args) {
  const auto run = run_cujit(on(cache, std::move(args)));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << run.all();
  return document;
}

TEST(CliCacheExplain, ShowsAndCountsTheMissesOfOtherProcesses) {
  TempDir dir;
  const fs::path cache = dir.path() / "cache";
  compile_in_child(cache, {"-DV=1"});                   // nothing stored: no candidate
  compile_in_child(cache, {"-DV=2"});                   // option changed
  compile_in_child(cache, {"-DV=2", "-DW=1"});          // option added
  compile_in_child(cache, {"-DW=1", "-DV=2"});          // order

  const nlohmann::json all = json_of(cache, {"cache", "explain", "--json"});
  ASSERT_EQ(all["misses"].size(), 4u) << all.dump(2);
  EXPECT_TRUE(all["misses"][0]["nearest"].is_null());
  EXPECT_EQ(all["misses"][1]["differences"][0]["text"], "option 3: -DV=2 was -DV=1") << all.dump(2);
  EXPECT_EQ(all["misses"][2]["differences"][0]["category"], "options added") << all.dump(2);
  EXPECT_EQ(all["misses"][3]["differences"][0]["category"], "options order") << all.dump(2);

  // --last and a key's start select; the text says the same in one line each.
  const nlohmann::json last = json_of(cache, {"cache", "explain", "--json", "--last", "1"});
  ASSERT_EQ(last["misses"].size(), 1u);
  EXPECT_EQ(last["misses"][0]["key"], all["misses"][3]["key"]);
  const std::string key = all["misses"][1]["key"].get<std::string>().substr(0, 12);
  const nlohmann::json one = json_of(cache, {"cache", "explain", "--json", key});
  ASSERT_EQ(one["misses"].size(), 1u);
  EXPECT_EQ(one["misses"][0]["key"], all["misses"][1]["key"]);
  const auto text = run_cujit(on(cache, {"cache", "explain", key}));
  EXPECT_EQ(text.exit_code, 0) << text.all();
  EXPECT_NE(text.out.find("option 3: -DV=2 was -DV=1"), std::string::npos) << text.out;

  const nlohmann::json stats = json_of(cache, {"cache", "stats", "--json"});
  EXPECT_EQ(stats["explained_misses"], 4u);
  EXPECT_EQ(stats["misses_by_field"],
            nlohmann::json({{"nvrtc-compile",
                             {{"no candidate", 1}, {"options changed", 1}, {"options added", 1}, {"options order", 1}}}}))
      << stats.dump(2);

  const auto zero = run_cujit(on(cache, {"cache", "stats", "--zero"}));
  EXPECT_EQ(zero.exit_code, 0) << zero.all();
  EXPECT_EQ(json_of(cache, {"cache", "explain", "--json"})["misses"].size(), 0u);
  EXPECT_EQ(json_of(cache, {"cache", "stats", "--json"})["explained_misses"], 0u);
}

TEST(CliCacheExplain, AKeyGoesOnlyWithExplain) {
  TempDir dir;
  const auto run = run_cujit(on(dir.path() / "cache", {"cache", "stats", "abc"}));
  EXPECT_NE(run.exit_code, 0) << run.all();
  EXPECT_NE(run.err.find("a KEY goes with `cache explain`"), std::string::npos) << run.all();
}

}  // namespace
}  // namespace cujit
