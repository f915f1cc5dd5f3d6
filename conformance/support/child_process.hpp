#pragma once
// Programs run as child processes from an argument vector (never a shell), with extra
// environment entries: one at a time (run_child), or several at once, started, killed and
// collected (RunningChild, run_children: the cache's cross-process and fleet tests).

#include <sys/types.h>

#include <string>
#include <vector>

namespace cujit::test {

struct ChildResult {
  int exit_code = -1;  // -1 when it did not exit normally (a signal)
  std::string output;  // stdout and stderr together
};

// A started child whose stdout and stderr go to one pipe.
class RunningChild {
 public:
  RunningChild(const std::vector<std::string>& argv, const std::vector<std::string>& extra_environment);
  ~RunningChild();  // kills (SIGKILL) and reaps a child still running
  RunningChild(RunningChild&& other) noexcept;
  RunningChild(const RunningChild&) = delete;
  RunningChild& operator=(const RunningChild&) = delete;
  RunningChild& operator=(RunningChild&&) = delete;

  pid_t pid() const noexcept { return pid_; }
  void kill(int signal) const;
  // Reads its output to the end and waits for it.
  ChildResult finish();

 private:
  pid_t pid_ = -1;
  int output_ = -1;
};

// Starts the program and waits for it.
ChildResult run_child(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_environment = {});

// Runs every command at once and returns their results in order.
std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& argvs,
                                      const std::vector<std::vector<std::string>>& environments);

}  // namespace cujit::test
