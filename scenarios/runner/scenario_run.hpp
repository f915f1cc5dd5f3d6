#pragma once
// Runs a loaded Scenario: every step through every backend it names, with one build
// cache shared between the steps, and returns what happened with a verdict per step.
// Rendering the outcome for people or tools is scenario_render.hpp's job.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cujit/error.hpp"
#include "cujit/format.hpp"
#include "cujit/linker.hpp"
#include "runner/scenario_file.hpp"
#include "runner/scenario_replay.hpp"

namespace cujit::scenarios {

enum class Verdict {
  as_expected,     // the outcome is the one the scenario expects
  reproduced,      // the outcome is the failure originally reported: the bug is back
  not_as_expected  // something else happened
};
std::string_view to_string(Verdict verdict) noexcept;

struct InputReport {
  std::string name;
  Format format = Format::ptx;
  std::size_t bytes = 0;
  std::string sha256;
  bool nrt = false;
};

struct StepError {
  ErrorKind kind = ErrorKind::usage;
  std::string message;
};

struct StepReport {
  LinkerBackend backend = LinkerBackend::nvjitlink;
  StepOptions options;                     // as the step ran
  std::optional<StepError> error;          // none: the step succeeded
  std::string log;
  std::vector<std::string> launch_output;  // values read back, as text
  Verdict verdict = Verdict::not_as_expected;
  std::string why;  // for a verdict other than as_expected
};

// A backend the file names or rules out that did not run here, and why.
struct BackendNotRun {
  LinkerBackend backend = LinkerBackend::driver;
  std::string verdict;  // "needs a device" (a "both" file without one) or "does not apply"
  std::string why;      // the missing device's reason, or the file's driver_does_not_apply
};

struct ScenarioReport {
  std::string name;
  std::string reported;         // what was reported upstream
  std::string reported_at;      // where it was reported (empty: not known)
  std::string found_here;       // no upstream report: what cujit's own work found
  std::string cujit_behaviour;  // what cujit does
  std::vector<InputReport> inputs;
  std::vector<StepReport> steps;
  Verdict verdict = Verdict::as_expected;  // the worst over the steps
  // Backends that did not run; never counted as a pass, never changing `verdict`.
  std::vector<BackendNotRun> not_run;
  // Versions and device, for the diagnostic bundle.
  std::string environment;
  // The scenario's replays through upstream stacks (run_replays; filled by the caller, who
  // decides whether they run). They never change `verdict`: that is cujit's own.
  std::vector<ReplayReport> replays;
};

// Runs the scenario. `fixture_dir` is where the build put the fixtures that scenarios
// refer to as {"fixture": NAME}. Throws Error(cuda) when nothing of the scenario runs
// without a device and there is none (a "both" file runs its nvJitLink half and names the
// driver half in `not_run`), and Error(usage) from "scenario file" when an input file it names cannot
// be read or patched.
ScenarioReport run_scenario(const Scenario& scenario, const std::filesystem::path& fixture_dir);

}  // namespace cujit::scenarios
