#pragma once
// Replays: a scenario's small programs in an upstream stack's own API (numba-cuda,
// cuda.core, CuPy), each run in a python3 child with a time limit through core's one
// spawner, so that a maintainer learns whether their stack still has the reported bug,
// not only what cujit does (docs/scenario-format.md, "Replays").
//
// Each stack is first probed with a child `python3 -c 'import <module>'` (cached per
// process): a stack that python3 cannot import is "not installed", with the reason, and its
// replay is not run. A replay prints, as its last line starting with "CUJIT_REPLAY ", a JSON
// object {"outcome": WORD, "detail": TEXT, "toolkit": TEXT}; the outcome is compared with
// the scenario's reported_outcome and fixed_outcome. "needs-device" is the outcome of a
// replay that found no device.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "runner/scenario_file.hpp"

namespace cujit::scenarios {

// What starts a replay's outcome line; one space and the JSON object follow it.
inline constexpr std::string_view replay_marker = "CUJIT_REPLAY";

enum class ReplayVerdict {
  reproduced,     // the outcome the report described: the stack still has the bug
  fixed,          // the scenario's fixed_outcome
  other_outcome,  // anything else: another outcome, no outcome line, a crash, a time-out
  not_installed,  // python3 cannot import the stack (or python3 cannot run)
  needs_device,   // the replay found no CUDA device
  does_not_apply,  // the file says the stack cannot express the case, and why; nothing runs
};
std::string_view to_string(ReplayVerdict verdict) noexcept;

struct ReplayReport {
  std::string stack;
  std::string program;  // the replay's file
  ReplayVerdict verdict = ReplayVerdict::other_outcome;
  std::string outcome;           // what the program printed (empty: it printed none)
  std::string reported_outcome;  // from the scenario
  std::string fixed_outcome;
  std::string stack_version;  // as the probe found it (empty: not installed)
  std::string toolkit;        // as the replay printed it (the stack's CUDA toolkit)
  std::string detail;         // why: the reason not installed, the program's detail, ...
  std::string log;            // the probe's and the program's output, bounded
};

struct ReplayOptions {
  // The interpreter: CUJIT_REPLAY_PYTHON, else "python3" looked up on PATH.
  std::string python;
  // Interpreter flags before cujit's own (-B): CUJIT_REPLAY_PYTHON_FLAGS, split at spaces,
  // each starting with '-'. "-S" leaves site-packages and their .pth hooks out, so that
  // stacks on PYTHONPATH are the only ones (numba-cuda's .pth redirects numba.cuda past
  // anything on the path).
  std::vector<std::string> python_flags;
  std::chrono::milliseconds probe_timeout{30'000};
  std::chrono::milliseconds replay_timeout{300'000};
};
ReplayOptions replay_options_from_environment();

// Runs every replay of the scenario (in the file's order); never throws for a replay's
// sake: every failure is that replay's verdict.
std::vector<ReplayReport> run_replays(const Scenario& scenario, const ReplayOptions& options);

// The outcome a replay printed: the JSON of its last "CUJIT_REPLAY " line, or nullopt-like
// empty outcome when there is none or it is not such an object. Exposed for the tests.
struct ReplayLine {
  std::string outcome, detail, toolkit;
};
ReplayLine parse_replay_output(std::string_view output);

}  // namespace cujit::scenarios
