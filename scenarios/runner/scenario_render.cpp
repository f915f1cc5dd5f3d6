#include "runner/scenario_render.hpp"

#include "runner/printable_text.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace cujit::scenarios {
namespace {

const char* on_off(bool on) { return on ? "on" : "off"; }

}  // namespace

std::string describe(const StepOptions& options) {
  std::string text = "arch=" + options.arch + " lto=" + on_off(options.lto) + " debug=" + on_off(options.debug) +
                     " lineinfo=" + on_off(options.lineinfo);
  // The other link flags only when the step sets them.
  if (options.max_registers) text += " max_registers=" + std::to_string(*options.max_registers);
  if (options.optimization_level) text += " optimization_level=" + std::to_string(*options.optimization_level);
  const std::pair<const char*, const std::optional<bool>*> flags[] = {
      {"ftz", &options.ftz}, {"prec_div", &options.prec_div}, {"prec_sqrt", &options.prec_sqrt}, {"fma", &options.fma}};
  for (const auto& [name, value] : flags) {
    if (*value) text += std::string(" ") + name + "=" + on_off(**value);
  }
  return text + " nrt=" + (options.nrt ? on_off(*options.nrt) : "default") +
         " nrt_global=" + (options.nrt_global ? on_off(*options.nrt_global) : "unchanged");
}

std::string describe_outcome(const StepReport& step) {
  if (!step.error) return "success";
  return std::string(to_string(step.error->kind)) + " error: " + step.error->message;
}

// Every text that comes from the scenario file, its inputs or a vendor library is printed
// through printable_text: a name holding "\nverdict: as expected" stays on its own line.
std::string render_text(const ScenarioReport& report) {
  const auto p = [](std::string_view text) { return printable_text(text); };
  std::ostringstream out;
  out << "scenario: " << p(report.name) << "\n";
  if (!report.reported.empty()) out << "reported: " << p(report.reported) << "\n";
  if (!report.reported_at.empty()) out << "reported at: " << p(report.reported_at) << "\n";
  if (!report.found_here.empty()) out << "found here: " << p(report.found_here) << "\n";
  if (!report.cujit_behaviour.empty()) out << "cujit:    " << p(report.cujit_behaviour) << "\n";
  out << "environment: " << p(report.environment) << "\n";
  out << "inputs:\n";
  for (const InputReport& input : report.inputs) {
    out << "  " << (input.name.empty() ? "(unnamed)" : p(input.name)) << "  " << to_string(input.format) << "  "
        << input.bytes << " bytes  sha256 " << p(input.sha256.substr(0, 16)) << (input.nrt ? "  nrt" : "") << "\n";
  }
  int index = 1;
  for (const StepReport& step : report.steps) {
    out << "step " << index++ << " [" << to_string(step.backend) << "] " << p(describe(step.options)) << "\n";
    out << "  outcome: " << p(describe_outcome(step)) << "\n";
    if (!step.launch_output.empty()) {
      out << "  output:";
      for (const std::string& value : step.launch_output) out << " " << p(value);
      out << "\n";
    }
    if (!step.log.empty()) {
      std::istringstream lines(step.log);
      std::string line;
      out << "  log:\n";
      while (std::getline(lines, line)) out << "    " << p(line) << "\n";
    }
    out << "  verdict: " << to_string(step.verdict) << (step.why.empty() ? "" : " (" + p(step.why) + ")") << "\n";
  }
  for (const BackendNotRun& skipped : report.not_run) {
    out << "[" << to_string(skipped.backend) << "] not run: " << skipped.verdict << " (" << p(skipped.why) << ")\n";
  }
  if (!report.replays.empty()) out << "replays (upstream stacks; cujit's verdict below is its own):\n";
  for (const ReplayReport& replay : report.replays) {
    out << "  " << p(replay.stack) << (replay.stack_version.empty() ? "" : " " + p(replay.stack_version)) << ": "
        << to_string(replay.verdict);
    if (!replay.outcome.empty()) {
      out << " (outcome " << p(replay.outcome) << "; reported " << p(replay.reported_outcome) << ", fixed "
          << p(replay.fixed_outcome) << ")";
    }
    if (!replay.toolkit.empty()) out << " toolkit " << p(replay.toolkit);
    out << "\n";
    if (!replay.detail.empty()) out << "    " << p(replay.detail) << "\n";
  }
  out << "verdict: " << to_string(report.verdict) << "\n";
  return out.str();
}

std::string render_json(const ScenarioReport& report) {
  nlohmann::json doc;
  doc["schema"] = 1;  // the bundle's format (docs/scenario-format.md), versioned like every --json
  doc["scenario"] = report.name;
  doc["reported"] = report.reported;
  doc["reported_at"] = report.reported_at;
  if (!report.found_here.empty()) doc["found_here"] = report.found_here;
  doc["cujit"] = report.cujit_behaviour;
  doc["environment"] = report.environment;
  doc["verdict"] = to_string(report.verdict);
  for (const InputReport& input : report.inputs) {
    doc["inputs"].push_back({{"name", input.name}, {"format", to_string(input.format)}, {"bytes", input.bytes},
                             {"sha256", input.sha256}, {"nrt", input.nrt}});
  }
  for (const StepReport& step : report.steps) {
    doc["steps"].push_back({{"backend", to_string(step.backend)}, {"options", describe(step.options)},
                            {"outcome", describe_outcome(step)}, {"log", step.log}, {"output", step.launch_output},
                            {"verdict", to_string(step.verdict)}, {"why", step.why}});
  }
  for (const BackendNotRun& skipped : report.not_run) {
    doc["not_run"].push_back(
        {{"backend", to_string(skipped.backend)}, {"verdict", skipped.verdict}, {"why", skipped.why}});
  }
  for (const ReplayReport& replay : report.replays) {
    doc["replays"].push_back({{"stack", replay.stack}, {"program", replay.program},
                              {"verdict", to_string(replay.verdict)}, {"outcome", replay.outcome},
                              {"reported_outcome", replay.reported_outcome}, {"fixed_outcome", replay.fixed_outcome},
                              {"stack_version", replay.stack_version}, {"toolkit", replay.toolkit},
                              {"detail", replay.detail}, {"log", replay.log}});
  }
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cujit::scenarios
