// The fleet lock under load (issue 32): 16 processes on 8 machines (disk directories) share
// one real redis-server and ask for the same 3 keys at once (process i asks key i % 3, so
// that every key is in flight when the fault comes: a process that went on to a next key
// while Redis is still paused never saw that key's lock and builds it, by design, which is
// not what this test measures), while a CPU burner keeps every core busy, and Redis fails
// in one way per test while the builds run: paused (SIGSTOP, then SIGCONT), slow (DEBUG
// SLEEP pulses), without EVAL (rename-command), killed (SIGKILL). Asserted: every process
// gets its payload; one build per key where the fault leaves the lock decidable (paused,
// slow, EVAL-less), at least one and at most one per process asking when Redis is killed
// (its lock is gone with it); and no process is answered a key more than 2 s after that
// key's first build was answered, or after the fault was over when that is later (each
// child reports when it was answered, on CLOCK_MONOTONIC). The bound is on the lock's
// wake-up, not a speed: a waiter stuck until a TTL shows as ~30 s.
//
// One run per fault by default (CI: about 13 s in all); CUJIT_FLEET_LOAD_RUNS=N repeats
// each N times (the figures of docs/cache.md, run by hand), printing one line per run.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cujit/build_cache.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/redis_server.hpp"
#include "support/signing_keys.hpp"

namespace cujit {
namespace {
namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr long keys = 3;
// 16 processes on 8 machines; CUJIT_FLEET_LOAD_PROCESSES=N runs N on N / 2 (the 64 of
// issue 32, by hand).
int fleet_processes() {
  const char* text = std::getenv("CUJIT_FLEET_LOAD_PROCESSES");
  const int asked = text != nullptr ? std::atoi(text) : 16;
  return std::max(asked, 2);
}
// A build (a sleep standing in for a compile) lasts until the test's fault is on, looking
// this often.
constexpr long build_step_ms = 50;
// Redis calls are bounded by the default timeout (500 ms, each call as a whole): the old
// 50 ms default lost single flight at load 10+ (issue 32). The pause below is longer than
// it (calls time out), the slow pulses shorter (calls wait).
// The bound of the test: no process is answered a key later than this after the key's
// first build was answered (or the pause's end, when later).
constexpr milliseconds largest_lag{2000};

// Busy threads, twice the cores plus 2, from construction to destruction (always stopped,
// whatever the test asserted).
class CpuBurner {
 public:
  CpuBurner() {
    const unsigned count = 2 * std::max(1u, std::thread::hardware_concurrency()) + 2;
    for (unsigned i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        volatile unsigned long spin = 0;
        while (!stop_.load(std::memory_order_relaxed)) spin = spin + 1;
      });
    }
  }
  ~CpuBurner() {
    stop_ = true;
    for (std::thread& thread : threads_) thread.join();
  }
  CpuBurner(const CpuBurner&) = delete;
  CpuBurner& operator=(const CpuBurner&) = delete;
  std::size_t threads() const noexcept { return threads_.size(); }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

enum class Fault { paused, slow, no_eval, killed };

const char* name_of(Fault fault) {
  switch (fault) {
    case Fault::paused: return "paused";
    case Fault::slow: return "slow";
    case Fault::no_eval: return "no_eval";
    case Fault::killed: return "killed";
  }
  return "?";
}

std::vector<std::string> server_options(Fault fault) {
  if (fault == Fault::slow) return {"--enable-debug-command", "yes"};
  // No scripting at all: EVAL answers "unknown command", the lock falls back to GET + DEL.
  if (fault == Fault::no_eval) return {"--rename-command", "EVAL", "", "--rename-command", "EVALSHA", ""};
  return {};
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

struct Answer {
  std::string source;
  long long done_ns = 0;
};

struct LoadRun {
  std::map<long, int> builds;  // per key, over every process
  long correct = 0;
  // The latest answer of a key after its first build was answered, or after the fault was
  // over when that is later.
  long long largest_lag_ms = 0;
  std::string answers;           // per key, each process's answer (ms after the first build) and source
  std::string warnings;          // the cache's warnings, per process that built a key
  double load = 0;               // the one-minute load average at the end of the run
};

// One run: the fleet started under the burner, the fault applied once the first build
// runs, every child collected.
LoadRun run_under_load(const test::RedisServer& server, Fault fault, std::size_t& burner_threads) {
  const int processes = fleet_processes(), machines = processes / 2;
  test::TempDir temp;
  const fs::path mark = temp.path() / "building", go_file = temp.path() / "go";
  CpuBurner burner;
  burner_threads = burner.threads();
  std::vector<test::RunningChild> children;
  for (int i = 0; i < processes; ++i) {
    children.emplace_back(
        std::vector<std::string>{CUJIT_FLEET_CHILD, std::to_string(i % keys), "1", std::to_string(build_step_ms), mark.string(),
                                 "until=" + go_file.string()},
        std::vector<std::string>{"CUJIT_CACHE_DIR=" + (temp.path() / ("machine-" + std::to_string(i % machines))).string(),
                                 "CUJIT_CACHE_REMOTE=" + server.url(),
                                 "CUJIT_CACHE_REMOTE_SIGNING_KEY=" + test::fleet_signing_key().private_key.string()});
  }
  // The builds end once the fault is on (the go file): every process has asked for its
  // key's fleet lock by then, and the fault comes while the builders build and the others
  // wait, as measured in issue 32. A process whose very first call meets a paused Redis
  // never saw the lock, cannot know that a build runs elsewhere, and builds (the tier is
  // unavailable to it); that is not the lock's wake-up, which this test measures.
  const auto calls = [&](const std::string& command) {
    const std::string stats = server.command({"INFO", "commandstats"});
    const std::string field = "cmdstat_" + command + ":calls=";
    const std::size_t at = stats.find(field);
    return at == std::string::npos ? 0 : std::atoi(stats.c_str() + at + field.size());
  };
  // One SET NX per process (3 taken, the others refused); no value is SET before the go.
  int lock_requests = 0;
  for (int i = 0; i < 6000 && (lock_requests = calls("set")) < processes; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(lock_requests, processes) << "not every process asked for its key's lock within 30 s";
  const auto go = [&] { std::ofstream(go_file) << "go\n"; };
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  switch (fault) {
    case Fault::paused:
      // Longer than a timeout: the builders' writes and the waiters' polls time out.
      server.kill(SIGSTOP);
      go();
      std::this_thread::sleep_for(milliseconds(1500));
      server.kill(SIGCONT);
      break;
    case Fault::slow: {
      // Redis blocked 300 ms at a time for about 1.5 s: every call waits, none times out.
      go();
      const auto until = std::chrono::steady_clock::now() + milliseconds(1500);
      while (std::chrono::steady_clock::now() < until) {
        EXPECT_EQ(server.command({"DEBUG", "SLEEP", "0.3"}), "+OK");
        std::this_thread::sleep_for(milliseconds(20));
      }
      break;
    }
    case Fault::no_eval: go(); break;
    case Fault::killed:
      server.kill(SIGKILL);
      go();
      break;
  }
  // Paused: Redis answers again from here, and no waiter can have its entry before,
  // whatever the lock does (a builder whose write timed out is done before Redis holds its
  // entry). Killed: the waiters build from here. Slow and EVAL-less: Redis answers all
  // along, the lag counts from the first build.
  const long long fault_over_ns = fault == Fault::paused || fault == Fault::killed ? now_ns() : 0;
  LoadRun run;
  std::map<long, long long> first_built;  // per key: when its first build's process was answered
  std::vector<std::map<long, Answer>> answers;
  for (test::RunningChild& child : children) {
    const test::ChildResult result = child.finish();
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::map<long, Answer> mine;
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      long index = -1, correct = 0;
      char source[32] = {};
      long long done = 0;
      if (std::sscanf(line.c_str(), "key index=%ld source=%31s done_ns=%lld", &index, source, &done) == 3) {
        mine[index] = Answer{source, done};
        if (std::string(source) == "built") {
          ++run.builds[index];
          auto [at, fresh] = first_built.emplace(index, done);
          if (!fresh) at->second = std::min(at->second, done);
        }
      }
      const std::size_t at = line.find("correct=");
      if (line.rfind("fleet builds=", 0) == 0 && at != std::string::npos && std::sscanf(line.c_str() + at, "correct=%ld", &correct) == 1) {
        run.correct += correct;
      }
    }
    EXPECT_EQ(mine.size(), 1u) << result.output;
    bool built = false;
    for (const auto& [index, answer] : mine) built = built || answer.source == "built";
    if (built) {
      run.warnings += "process " + std::to_string(answers.size()) + ":\n";
      std::istringstream again(result.output);
      for (std::string line; std::getline(again, line);) {
        if (line.rfind("warning: ", 0) == 0) run.warnings += "  " + line + "\n";
      }
    }
    answers.push_back(std::move(mine));
  }
  run.load = load_average();
  for (long index = 0; index < keys; ++index) {
    const auto first = first_built.find(index);
    if (first == first_built.end()) continue;  // no build of it: reported by the caller
    // From the later of the key's first build answered and the fault over: a builder whose
    // write timed out in the pause is done before Redis holds its entry.
    const long long from = std::max(first->second, fault_over_ns);
    run.answers += "key " + std::to_string(index) + ":";
    for (const std::map<long, Answer>& mine : answers) {
      const auto answer = mine.find(index);
      if (answer == mine.end()) continue;
      const long long lag = (answer->second.done_ns - from) / 1'000'000;
      run.largest_lag_ms = std::max(run.largest_lag_ms, lag);
      run.answers += " " + std::to_string(lag) + "(" + answer->second.source + ")";
    }
    run.answers += "\n";
  }
  return run;
}

int runs_asked() {
  const char* text = std::getenv("CUJIT_FLEET_LOAD_RUNS");
  const int runs = text != nullptr ? std::atoi(text) : 1;
  return std::max(runs, 1);
}

void expect_under_load(Fault fault) {
  if (!BuildCache::remote_built_in()) GTEST_SKIP() << "this cujit was built without hiredis";
  if (test::redis_server_program().empty()) GTEST_SKIP() << "redis-server is not installed (ci/setup.sh)";
  const int runs = runs_asked(), processes = fleet_processes(), machines = processes / 2;
  int single_flight = 0;
  long long worst_lag = 0;
  for (int r = 0; r < runs; ++r) {
    SCOPED_TRACE("run " + std::to_string(r + 1) + " of " + std::to_string(runs));
    const test::RedisServer server(server_options(fault));
    ASSERT_EQ(server.problem(), "");
    std::size_t burner_threads = 0;
    const LoadRun run = run_under_load(server, fault, burner_threads);
    EXPECT_EQ(run.correct, processes);
    bool one_each = true;
    std::string builds;
    for (long index = 0; index < keys; ++index) {
      const int built = run.builds.count(index) != 0 ? run.builds.at(index) : 0;
      builds += (index == 0 ? "" : ",") + std::to_string(built);
      one_each = one_each && built == 1;
      if (fault == Fault::killed) {
        // Redis gone, and the lock with it: the waiters build, each once.
        const int asking = static_cast<int>((processes - 1 - index) / keys + 1);
        EXPECT_GE(built, 1) << "key " << index;
        EXPECT_LE(built, asking) << "key " << index;
      } else {
        EXPECT_EQ(built, 1) << "key " << index << "; the builders' warnings:\n" << run.warnings;
      }
    }
    EXPECT_LE(run.largest_lag_ms, largest_lag.count()) << "answers, ms after the key's first build or the fault's end:\n" << run.answers;
    single_flight += one_each;
    worst_lag = std::max(worst_lag, run.largest_lag_ms);
    std::printf("fleet under load: redis %s, run %d: %d processes on %d machines, %ld keys, builds per key %s, "
                "latest answer %lld ms after the key's first build (or the fault's end), burner %zu threads, load %.1f\n",
                name_of(fault), r + 1, processes, machines, keys, builds.c_str(), run.largest_lag_ms, burner_threads,
                run.load);
  }
  std::printf("fleet under load: redis %s: one build per key in %d of %d runs, largest lag %lld ms\n", name_of(fault),
              single_flight, runs, worst_lag);
}

TEST(RemoteCacheFleetUnderLoad, RedisPausedMidBuild) { expect_under_load(Fault::paused); }
TEST(RemoteCacheFleetUnderLoad, RedisSlowMidBuild) { expect_under_load(Fault::slow); }
TEST(RemoteCacheFleetUnderLoad, RedisWithoutEval) { expect_under_load(Fault::no_eval); }
TEST(RemoteCacheFleetUnderLoad, RedisKilledMidBuild) { expect_under_load(Fault::killed); }

}  // namespace
}  // namespace cujit
