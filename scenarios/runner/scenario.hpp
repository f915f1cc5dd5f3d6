#pragma once
// Scenario files: a reported bug as data (docs/scenario-format.md). A scenario names its
// inputs, backend and options, optionally a kernel to launch with its expected output, and
// the expected outcome (success, or an error kind and message). run_scenario() runs it and
// returns a diagnostic bundle with a verdict.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cujit/error.hpp"

namespace cujit::scenarios {

// A malformed scenario file: Error(usage) naming the file and the offending field.
struct ScenarioSummary {
  std::filesystem::path path;
  std::string name;
  bool needs_device = false;  // a launch, a module load, or the driver backend
};

ScenarioSummary summarize(const std::filesystem::path& path);
// Checks every field of the file (options, inputs, launch, expectations, steps) without
// reading inputs or compiling anything; throws Error(usage) naming the file and the field.
ScenarioSummary validate(const std::filesystem::path& path);

enum class Verdict {
  as_expected,     // the outcome is the one the scenario expects
  reproduced,      // the outcome is the failure originally reported: the bug is back
  not_as_expected  // something else happened
};
std::string_view to_string(Verdict verdict) noexcept;

struct InputReport {
  std::string name;
  std::string format;
  std::size_t bytes = 0;
  std::string sha256;
  bool nrt = false;
};

struct StepReport {
  std::string backend;
  std::string options;  // as the step ran, for the bundle
  std::string outcome;  // "success" or "<kind> error: <message>"
  std::string log;
  std::vector<std::string> launch_output;  // values read back, as text
  Verdict verdict = Verdict::not_as_expected;
  std::string why;  // for a verdict other than as_expected
};

struct ScenarioReport {
  std::string name;
  std::string reported;        // what was reported upstream
  std::string cujit_behaviour; // what cujit does
  std::vector<InputReport> inputs;
  std::vector<StepReport> steps;
  Verdict verdict = Verdict::as_expected;  // the worst over the steps
  // Versions and device, for the diagnostic bundle.
  std::string environment;
  std::string text() const;  // the human-readable bundle
  std::string json() const;  // the same as JSON
};

// Runs the scenario. `fixture_dir` is where the build put the fixtures that scenarios
// refer to as {"fixture": NAME}. Throws Error(usage) for a malformed file, and
// Error(cuda) when the scenario needs a device and there is none.
ScenarioReport run_scenario(const std::filesystem::path& path, const std::filesystem::path& fixture_dir);

}  // namespace cujit::scenarios
