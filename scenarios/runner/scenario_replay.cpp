#include "runner/scenario_replay.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>
#include <utility>

#include "support/spawner.hpp"

namespace cujit::scenarios {

namespace {

// What a replay's output may grow to before the child is killed, and what the log keeps.
constexpr std::size_t max_replay_output = std::size_t{1} << 20;
constexpr std::size_t max_log_chars = 64 * 1024;
constexpr std::string_view marker = "CUJIT_REPLAY ";
static_assert(marker.substr(0, replay_marker.size()) == replay_marker && marker.size() == replay_marker.size() + 1);

struct StackModule {
  const char* stack;
  const char* module;  // what the probe imports: the API the replays use
  const char* distributions;  // importlib.metadata names, in order, for the version
};
constexpr StackModule stack_modules[] = {
    {"numba-cuda", "numba.cuda", "'numba-cuda', 'numba_cuda'"},
    {"cuda.core", "cuda.core", "'cuda-core', 'cuda_core'"},
    {"cupy", "cupy", "'cupy-cuda13x', 'cupy-cuda12x', 'cupy-cuda11x', 'cupy'"},
};

const StackModule& module_of(const std::string& stack) {
  for (const StackModule& entry : stack_modules) {
    if (stack == entry.stack) return entry;
  }
  return stack_modules[0];  // not reached: load_scenario accepts only these stacks
}

std::string bounded(std::string text) {
  if (text.size() > max_log_chars) text = "[... cut]\n" + text.substr(text.size() - max_log_chars);
  return text;
}

std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

struct ChildRun {
  detail::ChildResult result;
  std::string output;  // stdout and stderr together
};

// The interpreter and its flags, as logs show the command.
std::string interpreter_text(const ReplayOptions& options) {
  std::string text = options.python;
  for (const std::string& flag : options.python_flags) text += " " + flag;
  return text;
}

ChildRun run_python(const ReplayOptions& options, std::vector<std::string> args, std::chrono::milliseconds timeout) {
  detail::ChildOptions child;
  child.argv = {options.python};
  child.argv.insert(child.argv.end(), options.python_flags.begin(), options.python_flags.end());
  child.argv.emplace_back("-B");
  child.argv.insert(child.argv.end(), args.begin(), args.end());
  child.environment = {{"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONUNBUFFERED", "1"}};
  child.out = detail::ChildSink::capture;
  child.err_to_out = true;
  child.timeout = timeout;
  child.max_output_bytes = max_replay_output;
  ChildRun run;
  run.result = detail::run_child_process(child, [&](detail::ChildStream stream, std::string_view text) {
    if (stream != detail::ChildStream::tick) run.output.append(text);
  });
  return run;
}

std::string how_it_ended(const detail::ChildResult& result) {
  if (!result.started()) return "could not start: " + result.start_error;
  if (result.timed_out) return "was killed after its time limit";
  if (result.output_too_long) return "was killed: its output passed " + std::to_string(max_replay_output) + " bytes";
  if (result.signal != 0) return "was killed by signal " + std::to_string(result.signal);
  return "exited with status " + std::to_string(result.exit_code);
}

struct Probe {
  bool installed = false;
  std::string version;  // when installed
  std::string why;      // when not
  std::string log;
};

Probe probe(const ReplayOptions& options, const std::string& stack) {
  static std::mutex mutex;
  // Keyed by what decides the answer: the interpreter, the stack and the module search path.
  static std::map<std::tuple<std::string, std::string, std::string>, Probe> probed;
  const std::lock_guard lock(mutex);
  const char* search_path = std::getenv("PYTHONPATH");
  const auto key = std::make_tuple(interpreter_text(options), stack, std::string(search_path != nullptr ? search_path : ""));
  if (auto found = probed.find(key); found != probed.end()) return found->second;
  const StackModule& entry = module_of(stack);
  const std::string code = std::string("import importlib, importlib.metadata as md\n") + "m = importlib.import_module('" +
                           entry.module + "')\n" + "v = ''\nfor d in (" + entry.distributions + ",):\n" +
                           "    try:\n        v = md.version(d)\n        break\n    except Exception:\n        pass\n" +
                           "print(v or str(getattr(m, '__version__', 'unknown')))\n";
  const ChildRun run = run_python(options, {"-c", code}, options.probe_timeout);
  Probe result;
  result.log = "$ " + interpreter_text(options) + " -B -c 'import " + entry.module + "' (and its version)\n" + run.output;
  if (run.result.exited() && run.result.exit_code == 0) {
    result.installed = true;
    result.version = last_line(run.output);
  } else {
    const std::string line = last_line(run.output);
    result.why = interpreter_text(options) + " -c 'import " + std::string(entry.module) + "' " + how_it_ended(run.result) +
                 (line.empty() ? std::string() : ": " + line.substr(0, 300));
  }
  probed.emplace(key, result);
  return result;
}

}  // namespace

std::string_view to_string(ReplayVerdict verdict) noexcept {
  switch (verdict) {
    case ReplayVerdict::reproduced: return "reproduced";
    case ReplayVerdict::fixed: return "fixed";
    case ReplayVerdict::other_outcome: return "other outcome";
    case ReplayVerdict::not_installed: return "not installed";
    case ReplayVerdict::needs_device: return "needs a device";
    case ReplayVerdict::does_not_apply: return "does not apply";
  }
  return "?";
}

ReplayOptions replay_options_from_environment() {
  ReplayOptions options;
  const char* python = std::getenv("CUJIT_REPLAY_PYTHON");
  options.python = python != nullptr && *python != '\0' ? python : "python3";
  if (const char* flags = std::getenv("CUJIT_REPLAY_PYTHON_FLAGS")) {
    std::istringstream words(flags);
    for (std::string word; words >> word;) {
      // Only flags: a word that is not one would become the program python runs.
      if (word.size() > 1 && word[0] == '-') options.python_flags.push_back(word);
    }
  }
  return options;
}

ReplayLine parse_replay_output(std::string_view output) {
  ReplayLine line;
  std::size_t at = std::string_view::npos;
  for (std::size_t from = 0; (from = output.find(marker, from)) != std::string_view::npos; ++from) {
    if (from == 0 || output[from - 1] == '\n') at = from;
  }
  if (at == std::string_view::npos) return line;
  std::string_view text = output.substr(at + marker.size());
  text = text.substr(0, text.find('\n'));
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("outcome") || !doc["outcome"].is_string()) return line;
  line.outcome = doc["outcome"].get<std::string>().substr(0, 40);
  if (doc.contains("detail") && doc["detail"].is_string()) line.detail = doc["detail"].get<std::string>().substr(0, 2000);
  if (doc.contains("toolkit") && doc["toolkit"].is_string()) line.toolkit = doc["toolkit"].get<std::string>().substr(0, 200);
  return line;
}

std::vector<ReplayReport> run_replays(const Scenario& scenario, const ReplayOptions& options) {
  std::vector<ReplayReport> reports;
  for (const Replay& replay : scenario.replays) {
    ReplayReport report;
    report.stack = replay.stack;
    report.program = replay.program.string();
    report.reported_outcome = replay.reported_outcome;
    report.fixed_outcome = replay.fixed_outcome;
    // A stack that cannot express the case has no program: the file's reason is the cell, and
    // no probe runs for it.
    if (!replay.does_not_apply.empty()) {
      report.verdict = ReplayVerdict::does_not_apply;
      report.detail = replay.does_not_apply;
      reports.push_back(std::move(report));
      continue;
    }
    const Probe found = probe(options, replay.stack);
    report.log = found.log;
    if (!found.installed) {
      report.verdict = ReplayVerdict::not_installed;
      report.detail = found.why;
      reports.push_back(std::move(report));
      continue;
    }
    report.stack_version = found.version;
    // Checked again just before it runs, as every input is: the file may have changed since
    // it was loaded.
    std::string program;
    try {
      Input as_input;
      as_input.field = replay.field;
      as_input.source = InputFile{replay.program};
      program = input_file_path(scenario, as_input, {}).string();
    } catch (const Error& error) {
      report.verdict = ReplayVerdict::other_outcome;
      report.detail = error.what();
      reports.push_back(std::move(report));
      continue;
    }
    // Python runs the program and imports what lies beside it: all of it must be owned by
    // root or this user and writable by no one else, as for cujit's own scripts (a scenario
    // handed over in a bug report must not run code anyone could have put there).
    std::optional<detail::ExecutableRefusal> refused = detail::check_trusted_file(program);
    if (!refused) refused = detail::check_trusted_tree(std::filesystem::path(program).parent_path().string());
    if (refused) {
      report.verdict = ReplayVerdict::other_outcome;
      report.detail = refused->message();
      reports.push_back(std::move(report));
      continue;
    }
    const ChildRun run = run_python(options, {program}, options.replay_timeout);
    report.log = bounded(report.log + "$ " + interpreter_text(options) + " -B " + program + "\n" + run.output + "[" +
                         how_it_ended(run.result) + "]\n");
    const ReplayLine line = parse_replay_output(run.output);
    report.outcome = line.outcome;
    report.toolkit = line.toolkit;
    report.detail = line.detail;
    if (line.outcome.empty()) {
      report.verdict = ReplayVerdict::other_outcome;
      report.detail = "the replay " + how_it_ended(run.result) + " without a CUJIT_REPLAY outcome line" +
                      (last_line(run.output).empty() ? std::string() : ": " + last_line(run.output).substr(0, 300));
    } else if (line.outcome == "needs-device") {
      report.verdict = ReplayVerdict::needs_device;
    } else if (line.outcome == replay.reported_outcome) {
      report.verdict = ReplayVerdict::reproduced;
    } else if (line.outcome == replay.fixed_outcome) {
      report.verdict = ReplayVerdict::fixed;
    } else {
      report.verdict = ReplayVerdict::other_outcome;
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace cujit::scenarios
