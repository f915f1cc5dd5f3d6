#pragma once
// Child processes run at once (never through a shell), for the cache's cross-process and
// fleet tests: start several, kill one, collect each one's output and exit status.

#include <sys/types.h>

#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace cujit::test {

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

// Runs every command at once and returns their results in order.
std::vector<ChildResult> run_children(const std::vector<std::vector<std::string>>& argvs,
                                      const std::vector<std::vector<std::string>>& environments);

}  // namespace cujit::test
