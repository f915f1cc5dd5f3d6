#pragma once
// The cujit subcommands. Exit codes: 0 ok, 1 failures found (tests failed, a scenario not
// as expected, a regression), 2 usage or environment error, 3 (repro) the process running
// the scenario crashed.

#include <CLI/CLI.hpp>

#include <filesystem>
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
  std::vector<std::string> areas;  // empty: all
  bool quiet = false;
  bool isolate = false;  // each test in its own process
  std::string shard{};   // "I/N": run the I-th of N shards (shard_record.hpp); empty: all
};
int conformance(const ConformanceOptions& options);

// Merges the results of `cujit conformance --shard` runs into one JUnit file and one
// verdict; exit 1 for a failed test or a shard missing, duplicated, unfinished or crashed.
struct MergeOptions {
  std::vector<std::string> shard_dirs;
  std::filesystem::path out;
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
};
int bench(const BenchOptions& options);

int report(const std::vector<std::string>& json_files, const std::filesystem::path& out);
int compare(const std::string& baseline, const std::string& current, double threshold,
            const std::string& markdown);

struct RunOptions {
  std::filesystem::path out;
  bool quick = false;
  bool full = false;
};
int run(const RunOptions& options);

struct ReproOptions {
  std::string scenario;
  bool json = false;
  // Run the scenario in this process rather than in an isolated child.
  bool in_process = false;
  // Internal: the isolated child reports its progress on this descriptor (-1: none).
  int progress_fd = -1;
};
int repro(const ReproOptions& options);
int cache(const std::string& action);
int info();

}  // namespace cujit::cli
