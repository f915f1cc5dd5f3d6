#pragma once
// Progress while a child runs: a line on stderr at least every heartbeat_ms, so that a long
// step of `cujit run` (a suite such as the mutation campaign, a benchmark executable) is
// never silent for more than 30 s. The line names the step, its time, the test running
// (Google Test's last "[ RUN      ]" line) and the child's last line (the campaign prints
// its counts and an estimate there), escaped (printable()): it is the child's text.

#include <chrono>
#include <string>

#include "spawn.hpp"

namespace cujit::cli {

// Set on a ChildSpec (tick_ms) whose handler calls Heartbeat::beat on Stream::tick.
inline constexpr int heartbeat_ms = 20000;

class Heartbeat {
 public:
  explicit Heartbeat(std::string step) : step_(std::move(step)) {}
  // One progress line (nothing under --quiet) from the child's output so far.
  void beat(const Tail& tail) const;

 private:
  std::string step_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace cujit::cli
