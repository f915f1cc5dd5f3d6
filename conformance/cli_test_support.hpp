#pragma once
// What the test_cli_*.cpp suites share: running the cujit command as a child from an
// argument vector (fork + execve, never a shell) in a chosen directory and environment,
// with its stdout optionally sent to a file such as /dev/full; a fake build tree whose
// suites and benchmarks are cli_fake_tool; scenario files; and the check that a hostile
// name did not make anything run ("no file named PWNED appeared").

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/fixtures.hpp"

extern char** environ;

namespace cujit::test::cli {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;  // -1: it did not exit (a signal)
  int signal = 0;
  std::string out, err;
  std::string all() const { return out + err; }
};

struct Spec {
  std::vector<std::string> args;  // after the cujit binary
  std::vector<std::pair<std::string, std::string>> env;  // set in the child's environment
  std::vector<std::string> unset;                         // removed from it
  fs::path cwd;                                           // empty: this process's
  std::optional<std::string> stdout_path;                 // stdout to this file, not captured
};

// Runs `program` (an executable's path) with the spec's arguments and environment.
inline Run run_program(const std::string& program, const Spec& spec) {
  std::vector<std::string> args{program};
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::string name = text.substr(0, text.find('='));
    bool drop = false;
    for (const std::string& unset : spec.unset) drop = drop || unset == name;
    for (const auto& [set, value] : spec.env) drop = drop || set == name;
    if (!drop) environment.push_back(text);
  }
  for (const auto& [name, value] : spec.env) environment.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  Run run;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    run.err = "pipe failed";
    return run;
  }
  int stdout_file = -1;
  if (spec.stdout_path) stdout_file = ::open(spec.stdout_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const std::string cwd = spec.cwd.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(stdout_file >= 0 ? stdout_file : out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (stdout_file >= 0) ::close(stdout_file);
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> into{&run.out, &run.err};
  int open = 2;
  std::array<char, 65536> buffer{};
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      into[i]->append(buffer.data(), static_cast<std::size_t>(got));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  return run;
}

inline Run run_cujit(const Spec& spec) { return run_program(CUJIT_CLI_BINARY, spec); }

// Every file or directory under `root` named exactly `name`.
inline std::vector<fs::path> find_named(const fs::path& root, const std::string& name) {
  std::vector<fs::path> found;
  std::error_code error;
  for (fs::recursive_directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename() == name) found.push_back(it->path());
  }
  return found;
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A file of the source tree (e.g. "reports/tests/golden/base.json").
inline fs::path source_path(const std::string& relative) { return fs::path(CUJIT_CLI_SOURCE_DIR) / relative; }

inline std::string read_all(const fs::path& path) {
  return fs::exists(path) ? read_bytes(path) : std::string();
}

// A build tree whose conformance executables (one per area) and benchmark executables are
// cli_fake_tool; point CUJIT_BUILD_DIR at it. Its CTestTestfile.cmake lists each area's
// three fake tests with the label area:<area>, as conformance/CMakeLists.txt labels the real
// ones: the command reads the areas from there.
inline fs::path make_fake_build(const fs::path& root, const std::vector<std::string>& areas) {
  const fs::path build = root / "fake-build";
  fs::create_directories(build / "conformance");
  fs::create_directories(build / "bench");
  std::string ctest_file;
  for (const std::string& area : areas) {
    const fs::path suite = build / "conformance" / ("conformance_" + area);
    fs::create_symlink(CUJIT_CLI_FAKE_TOOL, suite);
    for (const char* test : {"Passes", "Skips", "Crashes"}) {
      const std::string name = std::string("FakeSuite.") + test + "." + area;
      ctest_file += "add_test([==[" + name + "]==] [==[" + suite.string() + "]==] --gtest_filter=FakeSuite." + test + ")\n";
      ctest_file += "set_tests_properties([==[" + name + "]==] PROPERTIES LABELS \"cpu;area:" + area + "\")\n";
    }
  }
  std::ofstream(build / "CTestTestfile.cmake", std::ios::binary) << ctest_file;
  for (const char* bench : {"bench_jit", "bench_reduce"}) fs::create_symlink(CUJIT_CLI_FAKE_TOOL, build / "bench" / bench);
  return build;
}

inline const std::vector<std::string>& every_area() {
  static const std::vector<std::string> areas{"format", "program", "linking", "module", "nrt", "abi",
                                              "graph", "cache", "scenarios", "reliability", "mutation", "cli"};
  return areas;
}

// A scenario that links one committed fixture with nvJitLink and expects success: it runs
// on a machine without a GPU.
inline std::string linking_scenario(const std::string& name, const std::string& backend = "nvjitlink") {
  return R"({"schema": 1, "name": ")" + name + R"(", "backend": ")" + backend +
         R"(", "inputs": [{"fixture": "scale_kernel.ptx"}], "expect": {"outcome": "success"}})";
}

// `cujit conformance --out OUT [--shard SHARD] --area A...` over a fake build tree, with
// extra environment entries (CUJIT_FAKE_CRASH=1 makes FakeSuite.Crashes die).
inline Run conformance_run(const fs::path& build, const fs::path& out, const std::string& shard,
                           const std::vector<std::string>& areas,
                           std::vector<std::pair<std::string, std::string>> env = {}) {
  Spec spec;
  spec.args = {"conformance", "--out", out.string()};
  if (!shard.empty()) spec.args.insert(spec.args.end(), {"--shard", shard});
  for (const std::string& area : areas) spec.args.insert(spec.args.end(), {"--area", area});
  spec.env = std::move(env);
  spec.env.emplace_back("CUJIT_BUILD_DIR", build.string());
  spec.unset = {"CUJIT_FAKE_CRASH", "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX"};
  return run_cujit(spec);
}

// The argument vectors cli_fake_tool logged (CUJIT_FAKE_ARGV_LOG), each as its arguments.
inline std::vector<std::vector<std::string>> logged_calls(const fs::path& log) {
  std::vector<std::vector<std::string>> calls;
  const std::string text = read_all(log);
  std::vector<std::string> call;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\0', at);
    if (end == std::string::npos) break;
    if (end == at) {
      calls.push_back(std::move(call));
      call.clear();
    } else {
      call.push_back(text.substr(at, end - at));
    }
    at = end + 1;
  }
  return calls;
}

// Whether some logged call received `argument` as one whole argument.
inline bool received(const fs::path& log, const std::string& argument) {
  for (const auto& call : logged_calls(log)) {
    for (const std::string& arg : call) {
      if (arg == argument) return true;
    }
  }
  return false;
}

}  // namespace cujit::test::cli
