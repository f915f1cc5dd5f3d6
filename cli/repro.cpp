// cujit repro: run one scenario file and print its diagnostic bundle.
#include <iostream>

#include "commands.hpp"
#include "cujit/error.hpp"
#include "paths.hpp"
#include "runner/scenario_file.hpp"
#include "runner/scenario_render.hpp"
#include "runner/scenario_run.hpp"

namespace cujit::cli {

int repro(const std::string& scenario, bool json) {
  try {
    const scenarios::ScenarioReport report = scenarios::run_scenario(scenarios::load_scenario(scenario), fixture_dir());
    std::cout << (json ? scenarios::render_json(report) + "\n" : scenarios::render_text(report));
    return report.verdict == scenarios::Verdict::as_expected ? exit_ok : exit_failures;
  } catch (const Error& error) {
    std::cerr << "cujit repro: " << error.what() << "\n";
    return exit_usage;
  }
}

}  // namespace cujit::cli
