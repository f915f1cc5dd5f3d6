#pragma once
// Runs a program as a child process from an argument vector (never a shell), with extra
// environment entries, and returns its exit status and combined output.

#include <string>
#include <vector>

namespace cujit::test {

struct ChildResult {
  int exit_code = -1;  // -1 when it did not exit normally (a signal)
  std::string output;  // stdout and stderr together
};

ChildResult run_child(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_environment = {});

}  // namespace cujit::test
