#pragma once
// What every cujit benchmark executable shares: the JSON context block (the run record,
// support/run_record.hpp), quick mode, repetition counts, child processes for "first call
// in a new process" figures, and small timing helpers.

#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cujit/vendor_time.hpp"

namespace cujit::bench {

// The schema of cujit benchmark JSON (reports/ check it): Google Benchmark's JSON with
// context.cujit_schema, and counters named as in docs/benchmarks.md.
inline constexpr int schema_version = 1;

// True under --cujit-quick (or CUJIT_BENCH_QUICK=1): few repetitions, small sizes, CPU-only
// families; what CI runs.
bool quick();

// Repetitions for a family: `full` normally, 3 in quick mode; N for every family under
// --cujit-repetitions=N or CUJIT_BENCH_REPETITIONS=N (the regression gate needs at least
// 9 on both sides: docs/benchmarks.md).
int repetitions(int full);

// How capture_stdout starts a program.
struct SpawnHow {
  bool search_path = false;   // words[0] is a name looked up on PATH (posix_spawnp)
  bool quiet_stderr = false;  // the child's stderr goes to /dev/null
  std::string* spawn_error = nullptr;  // set when the program could not be started
  int* status = nullptr;               // the child's wait status when it ran
};

// Runs words[0] with the argument vector `words` (no shell) and returns everything it
// wrote to stdout when it exited with status 0; nullopt otherwise.
std::optional<std::string> capture_stdout(const std::vector<std::string>& words, SpawnHow how = {});

// Runs this executable again as `--cujit-child ARGUMENTS...` (spawned with an argument
// vector, no shell) and returns the first line the child printed, for measurements that
// need a fresh process. Throws std::runtime_error when the child cannot be started, exits
// non-zero or prints nothing.
std::string run_self(const std::vector<std::string>& arguments);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Where a cujit figure's time goes: wrap a benchmark's timed loop in one; finish() adds
// the per-iteration counters nvrtc_s, nvjitlink_s, driver_s (time inside each vendor
// library, cujit::vendor_time), vendor_s (their sum) and own_s (the wall time of the loop
// less vendor_s: cujit's own work, with lock waits and the loop's own cost), and two
// counters the regression gate checks before it judges a CPU-bound family on the benchmark
// thread's CPU time (reports/cujit_reports/ab_gate.py), which load from other processes
// barely moves but which misses work done elsewhere and time spent waiting:
//   off_thread_cpu_s  CPU time of the process's other threads and of the child processes it
//                     reaped during the loop (cujit's compile workers), per iteration
//   waits             the benchmark thread's voluntary context switches (it blocked: a
//                     sleep, a lock, I/O) per iteration
// Either is NaN when the system would not say.
class VendorShare {
 public:
  VendorShare();
  void finish(benchmark::State& state) const;

 private:
  VendorTime vendor_;
  double process_cpu_s_;
  double children_cpu_s_;
  double thread_cpu_s_;
  double thread_waits_;
  Clock::time_point start_;
};

// What a child is asked to do: the arguments after --cujit-child.
using ChildArguments = std::vector<std::string>;

// Parses cujit's own flags (--cujit-quick, --cujit-child ...), adds the context, runs the
// benchmarks. `child` handles --cujit-child ARGS when given: it prints one line and the
// process exits with its return value.
int run_main(int argc, char** argv, const std::function<void()>& register_benchmarks,
             const std::function<int(const ChildArguments&)>& child = {});

// Registers one benchmark that is skipped with the reason, for families that need a
// device on a machine without one; returns true when that happened.
bool skip_without_device(const char* family);

// Where the scenario sources and the built fixtures are.
std::string scenario_dir();
std::string fixture_dir();

}  // namespace cujit::bench
