// cujit repro --all [DIR] --out OUT [--stacks]: every scenario file of a directory (the
// source tree's scenarios/repro by default) as one verdict table, scenarios x {cujit
// through nvJitLink, cujit through the driver linker, and with --stacks each upstream
// stack's replay}, written as OUT/verdicts.md and OUT/verdicts.json, each cell linking the
// log it was read from (OUT/logs/...).
//
// cujit's cells come from `cujit repro --json --no-replays FILE` run as a child (so a crash
// is one cell, not the table); a backend the file does not run is "not in file": the
// file's claim is about the backends it names; "does not apply" with the file's reason
// where the driver linker cannot run the case, and "needs a device" for the driver half of
// a "both" file on a machine without one. Stack cells come from run_replays here.
// Exit 0 when every cujit cell is as expected, needs a device, does not apply or is not in
// the file; 1 otherwise. A replay's verdict never changes the exit status: it is the stack's, not cujit's.
#include <algorithm>
#include <cctype>
#include <map>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cujit/error.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "runner/scenario_file.hpp"
#include "runner/scenario_replay.hpp"
#include "spawn.hpp"

namespace cujit::cli {
namespace {

constexpr const char* columns[] = {"cujit-nvjitlink", "cujit-driver", "numba-cuda", "cuda.core", "cupy"};
// Each scenario's `cujit repro` gets the table's --time-limit and --memory-limit for its
// isolated child, which the child's own spawner enforces; this much longer for the parent
// (it writes the bundle after the child) before it counts as a hang of its own.
constexpr unsigned parent_grace_s = 60;

struct Cell {
  std::string verdict;  // "as expected", "needs a device", "not in file", "reproduced", ...
  std::string log;      // relative to OUT; empty: none
  std::string detail;
  bool holds = true;  // a cujit cell that keeps the exit status 0
};

std::string safe_name(const std::string& text) {
  std::string name;
  for (char c : text) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return name.substr(0, 120);
}

// The worst verdict of the steps that ran through `backend`; empty when none did.
std::string backend_verdict(const nlohmann::json& bundle, const std::string& backend) {
  std::string worst;
  if (!bundle.contains("steps") || !bundle["steps"].is_array()) return worst;
  for (const auto& step : bundle["steps"]) {
    if (!step.is_object() || step.value("backend", "") != backend) continue;
    const std::string verdict = step.value("verdict", "");
    if (worst.empty() || worst == "as expected") worst = verdict;
  }
  return worst;
}

// A backend the bundle names as not run ("needs a device", "does not apply") and why.
void not_run_verdict(const nlohmann::json& bundle, const std::string& backend, Cell& cell) {
  if (!bundle.contains("not_run") || !bundle["not_run"].is_array()) return;
  for (const auto& entry : bundle["not_run"]) {
    if (!entry.is_object() || entry.value("backend", "") != backend) continue;
    cell.verdict = entry.value("verdict", "");
    cell.detail = entry.value("why", "");
    return;
  }
}

// cujit's two cells for one file.
std::pair<Cell, Cell> cujit_cells(const std::filesystem::path& file, const std::filesystem::path& out,
                                  const std::string& stem, const ReproOptions& options, std::string& environment) {
  ChildSpec child = child_spec({self_executable(), "repro", "--json", "--no-replays", "--time-limit",
                                std::to_string(options.time_limit_s), "--memory-limit",
                                std::to_string(options.memory_limit_mib), "--", file.string()});
  child.out = Sink::capture;
  child.err = Sink::capture;
  // 0: no limit for the child, and none here either.
  if (options.time_limit_s > 0) child.timeout_ms = static_cast<int>((options.time_limit_s + parent_grace_s) * 1000);
  std::string output, errors;
  const ChildExit exit = run_child(child, [&](Stream stream, std::string_view text) {
    if (stream == Stream::out) output.append(text);
    if (stream == Stream::err) errors.append(text);
  });
  const std::string log = "logs/" + stem + ".cujit.txt";
  write_file(out / log, "$ cujit repro --json --no-replays --time-limit " + std::to_string(options.time_limit_s) +
                            " --memory-limit " + std::to_string(options.memory_limit_mib) + " -- " + file.string() +
                            "\n" + output +
                            (errors.empty() ? "" : "--- stderr ---\n" + errors) + "[" + describe(exit) + "]\n");
  Cell nvjitlink{"", log, "", true}, driver{"", log, "", true};
  const nlohmann::json bundle = nlohmann::json::parse(output, nullptr, false);
  if (exit.exited() && bundle.is_object() && bundle.contains("steps")) {
    if (environment.empty()) environment = bundle.value("environment", "");
    for (auto [cell, backend] : {std::pair{&nvjitlink, "nvjitlink"}, std::pair{&driver, "driver"}}) {
      cell->verdict = backend_verdict(bundle, backend);
      if (cell->verdict.empty()) not_run_verdict(bundle, backend, *cell);
      if (cell->verdict.empty()) cell->verdict = "not in file";
      cell->holds = cell->verdict == "as expected" || cell->verdict == "not in file" ||
                    cell->verdict == "does not apply" || cell->verdict == "needs a device";
    }
    return {nvjitlink, driver};
  }
  // No bundle: a scenario that needs a device where there is none (exit 2, saying so), or
  // a file that is wrong, or a crash.
  const bool no_device = exit.exited() && exit.exit_code == exit_usage && errors.find("needs a CUDA device") != std::string::npos;
  std::string verdict = no_device ? "needs a device"
                        : exit.timed_out ? "timed out"
                        : exit.signal != 0 || (exit.exited() && exit.exit_code == exit_crashed) ? "crashed"
                        : exit.exited() && exit.exit_code == exit_usage ? "file error"
                                                                          : "no bundle (" + describe(exit) + ")";
  Tail tail(2048);
  tail.append(errors);
  for (Cell* cell : {&nvjitlink, &driver}) {
    cell->verdict = verdict;
    cell->detail = tail.last_line();
    cell->holds = no_device;
  }
  // Only the backends the file runs need a device; the other cell says the file has none.
  try {
    const scenarios::Scenario scenario = scenarios::load_scenario(file);
    const auto backends = scenario.backends();
    if (std::find(backends.begin(), backends.end(), LinkerBackend::nvjitlink) == backends.end()) {
      nvjitlink = {"not in file", log, "", true};
    }
    if (std::find(backends.begin(), backends.end(), LinkerBackend::driver) == backends.end()) {
      driver = scenario.driver_does_not_apply.empty() ? Cell{"not in file", log, "", true}
                                                      : Cell{"does not apply", log, scenario.driver_does_not_apply, true};
    }
  } catch (const Error&) {
    // The child already said what is wrong with the file; its cells say "file error".
  }
  return {nvjitlink, driver};
}

std::string markdown_cell(const Cell& cell) {
  std::string text = cell.log.empty() ? cell.verdict : "[" + cell.verdict + "](" + cell.log + ")";
  std::replace(text.begin(), text.end(), '|', '/');
  // A file name is anyone's text: control bytes escaped, so that none starts a row of its
  // own or reaches a terminal.
  return printable(text);
}

}  // namespace

int repro_table(const ReproOptions& options) {
  if (options.out_dir.empty()) throw CliError("repro --all: give --out DIR for the table and its logs");
  const std::filesystem::path dir =
      options.scenario.empty() ? source_dir() / "scenarios" / "repro" : std::filesystem::path(options.scenario);
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) throw CliError("repro --all: " + shown(dir.string()) + " is not a directory of scenario files");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".json" && entry.is_regular_file(error)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw CliError("repro --all: no scenario files (*.json) in " + shown(dir.string()));
  const std::filesystem::path out = options.out_dir;
  make_output_dir(out, "repro: --out");
  make_output_dir(out / "logs", "repro: --out");

  const scenarios::ReplayOptions replay_options = scenarios::replay_options_from_environment();
  std::string environment;
  std::map<std::string, std::string> stack_versions;
  nlohmann::json rows = nlohmann::json::array();
  std::string markdown = "| scenario |";
  for (const char* column : columns) {
    if (options.stacks || std::string(column).rfind("cujit-", 0) == 0) markdown += std::string(" ") + column + " |";
  }
  markdown += "\n|---|";
  for (const char* column : columns) {
    if (options.stacks || std::string(column).rfind("cujit-", 0) == 0) markdown += "---|";
  }
  markdown += "\n";
  bool holds = true;
  for (const std::filesystem::path& file : files) {
    const std::string stem = safe_name(file.stem().string());
    std::cerr << "cujit repro --all: " << printable(file.filename().string()) << "\n";
    std::map<std::string, Cell> cells;
    auto [nvjitlink, driver] = cujit_cells(std::filesystem::absolute(file), out, stem, options, environment);
    cells["cujit-nvjitlink"] = nvjitlink;
    cells["cujit-driver"] = driver;
    holds = holds && nvjitlink.holds && driver.holds;
    if (options.stacks) {
      for (const char* stack : scenarios::replay_stacks) cells[stack] = {"no replay", "", "", true};
      try {
        const scenarios::Scenario scenario = scenarios::load_scenario(file);
        for (const scenarios::ReplayReport& replay : scenarios::run_replays(scenario, replay_options)) {
          const std::string log = "logs/" + stem + "." + replay.stack + ".log";
          write_file(out / log, replay.log + (replay.detail.empty() ? "" : "--- detail ---\n" + replay.detail + "\n"));
          std::string verdict(scenarios::to_string(replay.verdict));
          cells[replay.stack] = {verdict, log, replay.detail, true};
          if (!replay.stack_version.empty()) stack_versions[replay.stack] = replay.stack_version;
        }
      } catch (const Error& failure) {
        for (const char* stack : scenarios::replay_stacks) cells[stack] = {"file error", "", failure.what(), true};
      }
    }
    nlohmann::json row{{"scenario", file.stem().string()}, {"file", file.string()}};
    markdown += "| " + markdown_cell({file.stem().string(), "", "", true}) + " |";
    for (const char* column : columns) {
      const auto found = cells.find(column);
      if (found == cells.end()) continue;
      row["cells"][column] = {{"verdict", found->second.verdict}, {"log", found->second.log}, {"detail", found->second.detail}};
      markdown += " " + markdown_cell(found->second) + " |";
    }
    markdown += "\n";
    rows.push_back(row);
  }
  std::string versions = "cujit environment: " + (environment.empty() ? std::string("(no bundle)") : environment);
  for (const auto& [stack, version] : stack_versions) versions += "; " + stack + " " + version;
  markdown = "# cujit repro --all" + std::string(options.stacks ? " --stacks" : "") + "\n\n" + versions + "\n\n" + markdown;
  nlohmann::json doc{{"schema", 1},
                     {"directory", std::filesystem::absolute(dir).string()},
                     {"environment", environment},
                     {"stack_versions", stack_versions},
                     {"columns", nlohmann::json::array()},
                     {"rows", rows},
                     {"cujit_verdicts_hold", holds}};
  for (const char* column : columns) {
    if (options.stacks || std::string(column).rfind("cujit-", 0) == 0) doc["columns"].push_back(column);
  }
  write_file(out / "verdicts.md", markdown);
  write_file(out / "verdicts.json", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::cout << markdown << "\n(" << (out / "verdicts.md").string() << ", " << (out / "verdicts.json").string()
            << ", logs in " << (out / "logs").string() << ")\n";
  return holds ? exit_ok : exit_failures;
}

}  // namespace cujit::cli
