#include "support/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

extern char** environ;

namespace cujit::test {

RunningChild::RunningChild(const std::vector<std::string>& argv, const std::vector<std::string>& extra_environment) {
  std::vector<std::string> environment(extra_environment);
  for (char** entry = environ; *entry != nullptr; ++entry) environment.emplace_back(*entry);
  std::vector<char*> args, envp;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  const int spawned = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    pid_ = -1;
    throw std::runtime_error("cannot start " + argv.front());
  }
  output_ = fds[0];
}

RunningChild::RunningChild(RunningChild&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), output_(std::exchange(other.output_, -1)) {}

RunningChild::~RunningChild() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (output_ >= 0) ::close(output_);
}

void RunningChild::kill(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

ChildResult RunningChild::finish() {
  ChildResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(output_, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(std::exchange(output_, -1));
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_environment) {
  return RunningChild(argv, extra_environment).finish();
}

std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& argvs,
                                      const std::vector<std::vector<std::string>>& environments) {
  std::vector<RunningChild> children;
  children.reserve(argvs.size());
  for (std::size_t i = 0; i < argvs.size(); ++i) {
    children.emplace_back(argvs[i], i < environments.size() ? environments[i] : std::vector<std::string>{});
  }
  // Pipes hold 64 KiB: the children print a few lines each, so reading them in turn after
  // they all started never blocks one of them.
  std::vector<ChildResult> results;
  for (RunningChild& child : children) results.push_back(child.finish());
  return results;
}

}  // namespace cujit::test
