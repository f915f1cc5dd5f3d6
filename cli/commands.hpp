#pragma once
// The cujit subcommands. Exit codes: 0 ok, 1 failures found (tests failed, a scenario not
// as expected, a regression), 2 usage or environment error, 3 (repro) the process running
// the scenario crashed.

#include <CLI/CLI.hpp>

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "resource_spec.hpp"

namespace cujit::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failures = 1;
inline constexpr int exit_usage = 2;
inline constexpr int exit_crashed = 3;

struct ConformanceOptions {
  std::filesystem::path out;
  std::vector<std::string> areas;  // empty: every area CTest lists (areas.hpp)
  bool list = false;               // print the areas CTest lists instead of running them
  bool isolate = false;  // each test in its own process
  std::string shard{};   // "I/N": run the I-th of N shards (shard_record.hpp); empty: all
  std::string filter{};  // Google Test's --gtest_filter; empty: every test
  bool require_gpu = false;  // CUJIT_REQUIRE_GPU=1 for the suites: GPU tests fail instead of skipping
  bool json = false;         // the summary as JSON on standard output
};
// Runs the suites. With `summary`, the summary goes there (the --json document) and
// nothing is printed on standard output. A selection that runs no test is exit 2.
int conformance(const ConformanceOptions& options, nlohmann::json* summary = nullptr);

// Merges the results of `cujit conformance --shard` runs into one JUnit file and one
// verdict; exit 1 for a failed test, a shard missing, duplicated, unfinished, crashed or
// failed by its own verdict, or shards whose tests together are not the unsharded
// selection; exit 2 (ShardsOfDifferentRuns) for shards of different runs, and for an
// empty selection.
struct MergeOptions {
  std::vector<std::string> shard_dirs;
  std::filesystem::path out;
  bool json = false;  // print the verdict (verdict.json) instead of the text summary
};
int merge(const MergeOptions& options);

// Writes the CTest resource spec of this host's GPUs (resource_spec.hpp).
struct ResourceSpecOptions {
  std::filesystem::path out;  // empty: standard output
  int slots_per_gpu = default_slots_per_gpu;
};
int resource_spec(const ResourceSpecOptions& options);

struct BenchOptions {
  std::filesystem::path out;
  bool quick = false;
  bool full = false;
  std::vector<std::string> families;   // substrings of benchmark names
  std::vector<std::string> scenarios;
  bool json = false;
};
// Runs the benchmark executables whose listing the selection matches; a selection that
// matches no benchmark is exit 2. With `summary`, as conformance().
int bench(const BenchOptions& options, nlohmann::json* summary = nullptr);

int report(const std::vector<std::string>& json_files, const std::filesystem::path& out, bool json = false,
           nlohmann::json* summary = nullptr);

struct CompareOptions {
  std::string baseline, current, markdown;
  double threshold = 0.05;
  bool json = false;
};
int compare(const CompareOptions& options);

struct RunOptions {
  std::filesystem::path out;
  bool quick = false;
  bool full = false;
  bool json = false;
};
int run(const RunOptions& options);

struct ReproOptions {
  std::string scenario;
  bool json = false;
  // Run the scenario with a cache of its own here (CUJIT_CACHE_DIR), or with none
  // (CUJIT_CACHE=off), so that a repro neither reads nor writes the user's cache.
  std::string cache_dir;
  bool no_cache = false;
  // --capture DIR -- COMMAND...: run COMMAND with CUJIT_CAPTURE_DIR=DIR and list the
  // scenario files it left there (the scenario is then not used).
  std::string capture_dir;
  std::vector<std::string> command;
  // Run the scenario in this process rather than in an isolated child.
  bool in_process = false;
  // Limits of the isolated child (red-team finding F8: a 914-byte scenario ran forever):
  // killed after time_limit_s seconds of wall time, and RLIMIT_CPU of as many seconds; with
  // memory_limit_mib > 0, RLIMIT_AS of that many MiB. 0: no such limit. Off by default for
  // memory, since the CUDA driver reserves far more address space than it uses.
  unsigned time_limit_s = 600;
  std::uint64_t memory_limit_mib = 0;
  // Internal: the isolated child reports its progress on this descriptor (-1: none).
  int progress_fd = -1;
  // Run the scenario's replays through upstream stacks (--no-replays: cujit's verdict only).
  bool replays = true;
  // --all [DIR] --out OUT [--stacks]: every scenario of DIR (`scenario`; empty: the source
  // tree's scenarios/repro) as one verdict table in OUT, with the stacks' replays.
  bool all = false;
  bool stacks = false;
  std::string out_dir;
};
int repro(const ReproOptions& options);
int repro_table(const ReproOptions& options);

struct CacheOptions {
  std::string action = "stats";  // stats | clear | path | explain
  bool json = false;
  bool zero = false;  // stats: zero the persistent counters after printing them
  std::string key;        // explain: the misses of keys whose digest starts with this
  std::size_t last = 10;  // explain: the latest this many misses
};
int cache(const CacheOptions& options);

// Versions of cujit, NVRTC, nvJitLink and the driver (versions.hpp).
int version();
int info(bool json);

}  // namespace cujit::cli
