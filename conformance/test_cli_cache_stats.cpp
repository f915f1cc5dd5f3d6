// `cujit cache stats`: the persistent counters of a cache directory (read_cache_counters),
// counted by other processes and shown by this one, as `ccache -s` does. Two processes
// (cache_child counters: lookups through the memo, the memory and the disk tier) count
// into one directory; `cujit cache stats --json` must show their sums, the entries on
// disk and each tier's hit rate; --zero sets the counters to 0 and keeps the entries.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "byte_units.hpp"
#include "cli_test_support.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::cli::run_cujit;
using test::cli::Spec;

// What one cache_child printed: memo hits, memo misses, memory hits, memory misses, disk
// hits, disk misses, builds, disk stores, waits.
struct ChildCounts {
  std::uint64_t values[9] = {};
};

ChildCounts run_counting_child(const fs::path& cache, int lookups) {
  Spec s;
  s.args = {"counters", cache.string(), "1", std::to_string(lookups)};
  // cache_child is not cujit: run it through run_cujit's machinery with its own binary.
  test::cli::Run run = test::cli::run_program(CUJIT_CLI_CACHE_CHILD, s);
  EXPECT_EQ(run.exit_code, 0) << run.all();
  ChildCounts counts;
  std::istringstream line(run.out);
  for (std::uint64_t& value : counts.values) line >> value;
  EXPECT_FALSE(line.fail()) << run.out;
  return counts;
}

Spec cujit_on(const fs::path& cache, std::vector<std::string> args) {
  Spec s;
  s.args = std::move(args);
  s.env = {{"CUJIT_CACHE_DIR", cache.string()}, {"CUJIT_CACHE", "disk"}};
  s.unset = {"CUJIT_CACHE_REMOTE", "CUJIT_CACHE_MAX_BYTES", "NO_COLOR"};
  return s;
}

nlohmann::json stats_of(const fs::path& cache) {
  const auto run = run_cujit(cujit_on(cache, {"cache", "stats", "--json"}));
  EXPECT_EQ(run.exit_code, 0) << run.all();
  nlohmann::json document = nlohmann::json::parse(run.out, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << run.all();
  return document;
}

TEST(CliCacheStats, CountsOfTwoProcessesAddUpAndZeroKeepsTheEntries) {
  TempDir dir;
  const fs::path cache = dir.path() / "cache";
  const ChildCounts first = run_counting_child(cache, 24);
  const ChildCounts second = run_counting_child(cache, 24);
  auto sum = [&](int index) { return first.values[index] + second.values[index]; };
  ASSERT_GT(first.values[6], 0u) << "the first process built";
  ASSERT_GT(second.values[4], 0u) << "the second found the first's entries on disk";

  const nlohmann::json stats = stats_of(cache);
  EXPECT_EQ(stats["tiers"]["memo"]["hits"], sum(0));
  EXPECT_EQ(stats["tiers"]["memo"]["misses"], sum(1));
  EXPECT_EQ(stats["tiers"]["memory"]["hits"], sum(2));
  EXPECT_EQ(stats["tiers"]["memory"]["misses"], sum(3));
  EXPECT_EQ(stats["tiers"]["disk"]["hits"], sum(4));
  EXPECT_EQ(stats["tiers"]["disk"]["misses"], sum(5));
  EXPECT_EQ(stats["builds"], sum(6));
  EXPECT_EQ(stats["stores"], sum(7));
  EXPECT_EQ(stats["entries"], 8u) << "eight keys";
  EXPECT_GT(stats["bytes"].get<std::uint64_t>(), 0u);
  const double disk_rate = static_cast<double>(sum(4)) / static_cast<double>(sum(4) + sum(5));
  EXPECT_DOUBLE_EQ(stats["tiers"]["disk"]["hit_rate"].get<double>(), disk_rate);
  EXPECT_TRUE(stats["zeroed_at"].is_null());

  // The text shows the same, with hit rates and sizes for people.
  const auto text = run_cujit(cujit_on(cache, {"cache", "stats"}));
  EXPECT_EQ(text.exit_code, 0) << text.all();
  EXPECT_NE(text.out.find("hit rate"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("entries:         8, " + cli::human_bytes(stats["bytes"].get<std::uint64_t>())),
            std::string::npos)
      << text.out;

  const auto zero = run_cujit(cujit_on(cache, {"cache", "stats", "--zero"}));
  EXPECT_EQ(zero.exit_code, 0) << zero.all();
  EXPECT_NE(zero.out.find("zeroed the counters"), std::string::npos) << zero.out;
  const nlohmann::json after = stats_of(cache);
  for (const char* tier : {"memo", "memory", "disk", "remote"}) {
    EXPECT_EQ(after["tiers"][tier]["hits"], 0u) << tier;
    EXPECT_EQ(after["tiers"][tier]["misses"], 0u) << tier;
  }
  EXPECT_EQ(after["builds"], 0u);
  EXPECT_EQ(after["stores"], 0u);
  EXPECT_EQ(after["entries"], 8u) << "zeroing keeps the entries";
  EXPECT_FALSE(after["zeroed_at"].is_null());
}

TEST(CliCacheStats, SizesTakeBinaryUnits) {
  TempDir dir;
  Spec s = cujit_on(dir.path() / "cache", {"cache", "stats", "--json"});
  s.env.emplace_back("CUJIT_CACHE_MAX_BYTES", "1G");
  const auto run = run_cujit(s);
  ASSERT_EQ(run.exit_code, 0) << run.all();
  EXPECT_EQ(nlohmann::json::parse(run.out)["max_disk_bytes"], std::uint64_t{1} << 30);
  Spec bad = cujit_on(dir.path() / "cache", {"cache", "stats"});
  bad.env.emplace_back("CUJIT_CACHE_MAX_BYTES", "1 gigabyte");
  const auto refused = run_cujit(bad);
  EXPECT_EQ(refused.exit_code, 2) << refused.all();
  EXPECT_NE(refused.err.find("CUJIT_CACHE_MAX_BYTES"), std::string::npos) << refused.all();
}

TEST(CliByteUnits, HumanSizes) {
  EXPECT_EQ(cli::human_bytes(0), "0 B");
  EXPECT_EQ(cli::human_bytes(1023), "1023 B");
  EXPECT_EQ(cli::human_bytes(1024), "1.0 KiB");
  EXPECT_EQ(cli::human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(cli::human_bytes(1048575), "1.0 MiB") << "never 1024.0 KiB";
  EXPECT_EQ(cli::human_bytes(std::uint64_t{512} << 20), "512.0 MiB");
  EXPECT_EQ(cli::human_bytes(std::uint64_t{1} << 30), "1.0 GiB");
  EXPECT_EQ(cli::human_bytes(~std::uint64_t{0}), "16.0 EiB");
}

}  // namespace
}  // namespace cujit
