#pragma once
// The diagnostic bundle of a scenario run, for people (`cujit repro`) and for tools
// (`cujit repro --json`).

#include <string>

#include "runner/scenario_run.hpp"

namespace cujit::scenarios {

// How a step ran, as one line: "arch=sm_90 lto=off debug=off lineinfo=off nrt=default ...".
std::string describe(const StepOptions& options);
// "success" or "<kind> error: <message>".
std::string describe_outcome(const StepReport& step);

std::string render_text(const ScenarioReport& report);
std::string render_json(const ScenarioReport& report);  // the same as JSON

}  // namespace cujit::scenarios
