#include "support/bench_main.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "cujit/device.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "cujit/toolkit.hpp"

extern char** environ;  // the child gets this process's environment

namespace cujit::bench {
namespace {

bool quick_flag = false;
std::string self_path;

void add_context() {
  benchmark::AddCustomContext("cujit_schema", std::to_string(schema_version));
  benchmark::AddCustomContext("cujit_version", CUJIT_BENCH_VERSION);
  benchmark::AddCustomContext("cujit_git_commit", CUJIT_GIT_COMMIT);
  benchmark::AddCustomContext("cujit_mode", quick_flag ? "quick" : "full");
  benchmark::AddCustomContext("nvrtc_version", nvrtc_version());
  benchmark::AddCustomContext("nvjitlink_version", nvjitlink_version());
  try {
    benchmark::AddCustomContext("cccl_version", toolkit::cccl_version());
  } catch (const std::exception&) {
    benchmark::AddCustomContext("cccl_version", "unknown");
  }
  if (has_device()) {
    benchmark::AddCustomContext("device", device_name(0));
    benchmark::AddCustomContext("driver_version", driver_version());
  } else {
    benchmark::AddCustomContext("device", "none (" + no_device_reason() + ")");
    benchmark::AddCustomContext("driver_version", "none");
  }
}

}  // namespace

bool quick() { return quick_flag; }

int repetitions(int full) { return quick_flag ? 3 : full; }

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

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

}  // namespace

std::string run_self(const std::vector<std::string>& arguments) {
  std::vector<std::string> words{self_path, "--cujit-child"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::string described;
  for (const std::string& word : words) described += (described.empty() ? "" : " ") + word;
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);

  Pipe pipe;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe.read_end());
  posix_spawn_file_actions_addclose(&actions, pipe.write_end());
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, self_path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot run " + described + ": " + std::strerror(spawned));
  pipe.close_write();  // so that reading ends when the child exits
  const std::string output = read_all(pipe.read_end());
  const int status = wait_for(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(described + " failed (status " + std::to_string(status) + ")");
  }
  const std::string line = output.substr(0, output.find('\n'));
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
    } else if (arg == "--cujit-child" && i + 1 < argc && child) {
      return child(ChildArguments(argv + i + 1, argv + argc));
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (const char* env = std::getenv("CUJIT_BENCH_QUICK"); env != nullptr && std::string(env) == "1") {
    quick_flag = true;
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(count, rest.data())) return 2;
  add_context();
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace cujit::bench
