#include "support/bench_main.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <vector>

#include "cujit/device.hpp"
#include "support/run_record.hpp"

extern char** environ;  // the child gets this process's environment

namespace cujit::bench {
namespace {

bool quick_flag = false;
int repetitions_override = 0;  // --cujit-repetitions / CUJIT_BENCH_REPETITIONS; 0: none
std::string self_path;

}  // namespace

bool quick() { return quick_flag; }

int repetitions(int full) {
  if (repetitions_override > 0) return repetitions_override;
  return quick_flag ? 3 : full;
}

namespace {

// A pipe's two ends, closed when they go out of scope.
class Pipe {
 public:
  Pipe() {
    if (::pipe(fds_) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_read() { close_end(0); }
  void close_write() { close_end(1); }

 private:
  void close_end(int end) {
    if (fds_[end] >= 0) ::close(fds_[end]);
    fds_[end] = -1;
  }
  int fds_[2] = {-1, -1};
};

// Everything the child writes to stdout.
std::string read_all(int fd) {
  std::string out;
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) out.append(buffer.data(), static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  return out;
}

// A repetition count from the command line or the environment: a whole number in
// [1, 1000]; anything else is reported and refused (exit 2), never read as "default".
bool parse_repetitions(const std::string& text, const char* what) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > 1000) {
    std::fprintf(stderr, "%s=%s: must be a whole number from 1 to 1000\n", what, text.c_str());
    return false;
  }
  repetitions_override = value;
  return true;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

}  // namespace

std::optional<std::string> capture_stdout(const std::vector<std::string>& words, SpawnHow how) {
  if (words.empty()) return std::nullopt;
  std::vector<std::string> copy = words;
  std::vector<char*> argv;
  for (std::string& word : copy) argv.push_back(word.data());
  argv.push_back(nullptr);

  Pipe pipe;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe.read_end());
  posix_spawn_file_actions_addclose(&actions, pipe.write_end());
  if (how.quiet_stderr) posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = how.search_path
                          ? ::posix_spawnp(&pid, copy[0].c_str(), &actions, nullptr, argv.data(), environ)
                          : ::posix_spawn(&pid, copy[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    if (how.spawn_error != nullptr) *how.spawn_error = std::strerror(spawned);
    return std::nullopt;
  }
  pipe.close_write();  // so that reading ends when the child exits
  std::string output = read_all(pipe.read_end());
  const int status = wait_for(pid);
  if (how.status != nullptr) *how.status = status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return output;
}

std::string run_self(const std::vector<std::string>& arguments) {
  std::vector<std::string> words{self_path, "--cujit-child"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::string described;
  for (const std::string& word : words) described += (described.empty() ? "" : " ") + word;
  std::string spawn_error;
  int status = 0;
  const auto output = capture_stdout(words, {.spawn_error = &spawn_error, .status = &status});
  if (!spawn_error.empty()) throw std::runtime_error("cannot run " + described + ": " + spawn_error);
  if (!output) throw std::runtime_error(described + " failed (status " + std::to_string(status) + ")");
  const std::string line = output->substr(0, output->find('\n'));
  if (line.empty()) throw std::runtime_error("no output from " + described);
  return line;
}

bool skip_without_device(const char* family) {
  if (has_device()) return false;
  const std::string reason = "no CUDA device: " + no_device_reason();
  benchmark::RegisterBenchmark((std::string(family) + "/skipped").c_str(), [reason](benchmark::State& state) {
    state.SkipWithError(reason.c_str());
    for (auto _ : state) {
    }
  });
  return true;
}

std::string scenario_dir() { return CUJIT_BENCH_SCENARIO_DIR; }
std::string fixture_dir() { return CUJIT_BENCH_FIXTURE_DIR; }

int run_main(int argc, char** argv, const std::function<void()>& register_benchmarks,
             const std::function<int(const ChildArguments&)>& child) {
  // The executable itself, not what argv[0] says (a name found on PATH is no path).
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  self_path = ec ? argv[0] : self.string();
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cujit-quick") {
      quick_flag = true;
    } else if (arg.rfind("--cujit-repetitions=", 0) == 0) {
      if (!parse_repetitions(arg.substr(arg.find('=') + 1), "--cujit-repetitions")) return 2;
    } else if (arg == "--cujit-child" && i + 1 < argc && child) {
      return child(ChildArguments(argv + i + 1, argv + argc));
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (const char* env = std::getenv("CUJIT_BENCH_QUICK"); env != nullptr && std::string(env) == "1") {
    quick_flag = true;
  }
  if (const char* env = std::getenv("CUJIT_BENCH_REPETITIONS"); env != nullptr && repetitions_override == 0) {
    if (!parse_repetitions(env, "CUJIT_BENCH_REPETITIONS")) return 2;
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(count, rest.data())) return 2;
  add_run_record(quick_flag);
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace cujit::bench

namespace cujit::bench {

namespace {

double cpu_seconds(clockid_t clock) {
  timespec now{};
  if (clock_gettime(clock, &now) != 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double seconds_of(const timeval& value) {
  return static_cast<double>(value.tv_sec) + static_cast<double>(value.tv_usec) * 1e-6;
}

// User and system time of the reaped children; NaN when getrusage fails.
double children_cpu_seconds() {
  rusage usage{};
  if (getrusage(RUSAGE_CHILDREN, &usage) != 0) return std::numeric_limits<double>::quiet_NaN();
  return seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
}

double thread_voluntary_switches() {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(usage.ru_nvcsw);
}

}  // namespace

VendorShare::VendorShare()
    : vendor_(vendor_time()),
      process_cpu_s_(cpu_seconds(CLOCK_PROCESS_CPUTIME_ID)),
      children_cpu_s_(children_cpu_seconds()),
      thread_cpu_s_(cpu_seconds(CLOCK_THREAD_CPUTIME_ID)),
      thread_waits_(thread_voluntary_switches()),
      start_(Clock::now()) {}

void VendorShare::finish(benchmark::State& state) const {
  const double wall = seconds_since(start_);
  // Read in the reverse order of the constructor, so the process's window holds the thread's.
  const double waits = thread_voluntary_switches() - thread_waits_;
  const double thread_cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - thread_cpu_s_;
  const double children_cpu = children_cpu_seconds() - children_cpu_s_;
  const double process_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu_s_;
  const VendorTime spent = vendor_time() - vendor_;
  const auto iterations = static_cast<double>(state.iterations());
  if (iterations <= 0) return;
  const auto per_iteration = [&](std::uint64_t ns) { return static_cast<double>(ns) * 1e-9 / iterations; };
  state.counters["nvrtc_s"] = per_iteration(spent.nvrtc_ns);
  state.counters["nvjitlink_s"] = per_iteration(spent.nvjitlink_ns);
  state.counters["driver_s"] = per_iteration(spent.driver_ns);
  state.counters["vendor_s"] = per_iteration(spent.total_ns());
  state.counters["own_s"] = wall / iterations - per_iteration(spent.total_ns());
  // The process's window holds the thread's, so other threads' share is never below zero;
  // a failed read stays NaN, which the gate refuses.
  state.counters["off_thread_cpu_s"] = (process_cpu - thread_cpu + children_cpu) / iterations;
  state.counters["waits"] = waits / iterations;
}

}  // namespace cujit::bench
