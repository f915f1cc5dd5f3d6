// `cujit cache stats`: the persistent counters of a cache directory (read_cache_counters),
// counted by other processes and shown by this one, as `ccache -s` does. Two processes
// (cache_child counters: lookups through the memo, the memory and the disk tier) count
// into one directory; `cujit cache stats --json` must show their sums, the entries on
// disk and each tier's hit rate; --zero sets the counters to 0 and keeps the entries.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
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

// The fleet's counters (waits and their time, lock timeouts, Redis errors by kind, repairs,
// verification failures, bytes saved by compression) as another process wrote them into a
// counter shard: each shown by `cache stats --json` under its name and summed over shards,
// and named in the text. Random counts, so no field can pass by being another's or zero.
TEST(CliCacheStats, FleetCountersOfEveryShardAreShownUnderTheirNames) {
  TempDir dir;
  const fs::path cache = dir.path() / "cache";
  fs::create_directories(cache / "counters");
  // Shard name -> the JSON pointer it shows under.
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"remote.waits", "/remote_waits"},
      {"remote.wait_ms", "/remote_wait_ms"},
      {"remote.lock_timeouts", "/remote_lock_timeouts"},
      {"remote.errors", "/remote_errors_by_kind/unavailable"},
      {"remote.skipped", "/remote_errors_by_kind/skipped"},
      {"remote.corrupt", "/remote_errors_by_kind/corrupt"},
      {"remote.unverified", "/remote_errors_by_kind/unverified"},
      {"remote.write_failures", "/remote_errors_by_kind/write_refused"},
      {"remote.forbidden", "/remote_errors_by_kind/forbidden"},
      {"remote.repairs", "/remote_repairs"},
      {"remote.bytes_saved", "/remote_bytes_saved"},
      {"process.waits", "/process_waits"},
      {"process.wait_ms", "/process_wait_ms"},
      {"process.lock_timeouts", "/lock_timeouts"},
  };
  std::mt19937_64 random(std::random_device{}());
  std::map<std::string, std::uint64_t> expected;
  for (const char* shard : {"3.counters", "c.counters"}) {
    std::ofstream out(cache / "counters" / shard);
    out << "cujit-counters 1\n";
    for (const auto& [name, pointer] : fields) {
      const std::uint64_t value = random() % 1'000'000;
      expected[pointer] += value;
      out << name << " " << value << "\n";
    }
  }
  const nlohmann::json stats = stats_of(cache);
  for (const auto& [name, pointer] : fields) {
    EXPECT_EQ(stats.at(nlohmann::json::json_pointer(pointer)).get<std::uint64_t>(), expected[pointer]) << name;
  }
  EXPECT_EQ(stats["remote_errors"], expected["/remote_errors_by_kind/unavailable"]) << "the older name stays";
  EXPECT_EQ(stats["remote_unverified"], expected["/remote_errors_by_kind/unverified"]);
  const auto text = run_cujit(cujit_on(cache, {"cache", "stats"}));
  ASSERT_EQ(text.exit_code, 0) << text.all();
  for (const std::string& shown :
       {std::to_string(expected["/remote_waits"]) + " waits for another machine's build (" +
            std::to_string(expected["/remote_wait_ms"]) + " ms)",
        std::to_string(expected["/remote_repairs"]) + " bad values repaired",
        cli::human_bytes(expected["/remote_bytes_saved"]) + " saved by compression",
        std::to_string(expected["/remote_errors_by_kind/unverified"]) + " failed verification",
        std::to_string(expected["/process_waits"]) + " waits for another process's build (" +
            std::to_string(expected["/process_wait_ms"]) + " ms)"}) {
    EXPECT_NE(text.out.find(shown), std::string::npos) << shown << "\n" << text.out;
  }
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
