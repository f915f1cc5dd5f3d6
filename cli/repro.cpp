// cujit repro: run one scenario file and print its diagnostic bundle.
//
// By default the scenario runs in a child process (this program again, with --in-process
// and a progress descriptor), so that a vendor library that crashes on the scenario's
// inputs (SIGSEGV, SIGFPE, SIGABRT inside NVRTC, nvJitLink or the driver) becomes a
// verdict, "crashed: SIGSEGV", with what the child was doing and printed last, and exit 3
// rather than a dead command. The child writes the bundle to the standard output it
// shares with this process; its stderr passes through here.
//
// The scenario's replays (docs/scenario-format.md, "Replays") run after cujit's steps, each
// in a python3 child of its own with a time limit; --no-replays leaves them out. Their
// verdicts are printed in the bundle and never change the exit status, which is cujit's.
//
// CUJIT_LINKER forces the backend of every step (the scenario file's "backend" included),
// as it forces every link of a process; an unknown value is a usage error.
//
// --cache-dir DIR / --no-cache run the scenario with a cache of its own (CUJIT_CACHE_DIR)
// or none (CUJIT_CACHE=off), so that a repro neither reads a build that hides the bug nor
// writes into the user's cache. --capture DIR -- COMMAND... runs any program with
// CUJIT_CAPTURE_DIR=DIR, where cujit's failing links and builds leave scenario files, and
// lists the ones it left.
#include <unistd.h>

#include <csignal>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string_view>
#include <vector>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "cujit/nrt.hpp"
#include "json_output.hpp"
#include "output.hpp"
#include "presentation.hpp"
#include "paths.hpp"
#include "runner/scenario_file.hpp"
#include "runner/scenario_render.hpp"
#include "runner/scenario_run.hpp"
#include "spawn.hpp"
#include "support/planted_slowdown.hpp"

namespace cujit::cli {
namespace {

constexpr int child_progress_fd = 3;
constexpr const char* finished = "finished";

const char* backend_name(scenarios::BackendChoice choice) {
  switch (choice) {
    case scenarios::BackendChoice::nvjitlink: return "nvjitlink";
    case scenarios::BackendChoice::driver: return "driver";
    case scenarios::BackendChoice::both: return "both";
  }
  return "?";
}

// CUJIT_LINKER, when set, replaces the file's backend choice; core's choose_backend decides
// what the value means (and refuses an unknown one, naming it).
void apply_linker_environment(scenarios::Scenario& scenario, bool announce) {
  const char* value = std::getenv("CUJIT_LINKER");
  if (value == nullptr || *value == '\0') return;
  const LinkerBackend backend = choose_backend(std::nullopt, value);
  const auto forced = backend == LinkerBackend::driver ? scenarios::BackendChoice::driver
                                                       : scenarios::BackendChoice::nvjitlink;
  if (announce && forced != scenario.backend) {
    std::cerr << "cujit repro: CUJIT_LINKER=" << value << ": every step runs through " << to_string(backend)
              << " (the file says " << backend_name(scenario.backend) << ")\n";
  }
  scenario.backend = forced;
}

// One line of progress to the parent (nothing without a progress descriptor).
void progress(int fd, const std::string& line) {
  if (fd < 0) return;
  const std::string text = line + "\n";
  // Best effort: a parent that stopped listening loses only the progress.
  [[maybe_unused]] const ssize_t ignored = ::write(fd, text.data(), text.size());
}

// TEST SEAM, documented in docs/cli.md: in the isolated child only (never with
// --in-process alone), CUJIT_TEST_REPRO_CRASH=SIGSEGV (or SIGFPE, SIGABRT, SIGBUS, SIGILL)
// makes the child die of that signal where a vendor library would, so that the
// conformance suite can show a real crash becoming a verdict.
// The same seam's runaway values, for the child's limits (--time-limit, --memory-limit):
// "hang" sleeps, "spin" burns CPU, "allocate" maps and touches memory, each forever.
void test_seam_crash() {
  const char* value = std::getenv("CUJIT_TEST_REPRO_CRASH");
  if (value == nullptr || *value == '\0') return;
  const std::string_view runaway(value);
  if (runaway == "hang" || runaway == "spin" || runaway == "allocate") {
    std::cerr << "cujit repro: test seam CUJIT_TEST_REPRO_CRASH: " << runaway << " forever" << std::endl;
    std::vector<std::unique_ptr<char[]>> held;
    std::atomic<unsigned long> turns{0};  // an atomic step: a loop that makes progress
    for (;; turns.fetch_add(1, std::memory_order_relaxed)) {
      if (runaway == "hang") ::pause();
      if (runaway == "allocate") {
        held.emplace_back(new char[64 << 20]);
        std::memset(held.back().get(), 1, 64 << 20);
      }
    }
  }
  const int signal = signal_number(value);
  if (signal != SIGSEGV && signal != SIGFPE && signal != SIGABRT && signal != SIGBUS && signal != SIGILL) return;
  std::cerr << "cujit repro: test seam CUJIT_TEST_REPRO_CRASH: raising " << signal_name(signal) << std::endl;
  std::signal(signal, SIG_DFL);  // past any handler (a sanitizer's), as an unhandled crash
  std::raise(signal);
}

// The variables the scenario's run reads, read here first: a bad value is a usage error
// (exit 2, naming the variable, as docs/cli.md says), not a step that failed (exit 1).
void check_environment() {
  (void)CacheConfig::from_environment();
  (void)nrt::enabled();
  (void)detail::planted_slowdown();
  for (const char* library : {"CUJIT_NVRTC_LIBRARY", "CUJIT_NVJITLINK_LIBRARY"}) (void)environment::absolute_path(library);
}

std::string what_runs(const scenarios::Scenario& scenario) {
  std::string backends;
  for (LinkerBackend backend : scenario.backends()) backends += (backends.empty() ? "" : " and ") + std::string(to_string(backend));
  return "running scenario " + shown(scenario.name) + " (" + std::to_string(scenario.steps.size()) + " step" +
         (scenario.steps.size() == 1 ? "" : "s") + " through " + backends + ")";
}

// The environment --cache-dir / --no-cache give the process running the scenario.
std::vector<std::pair<std::string, std::string>> cache_environment(const ReproOptions& options) {
  if (options.no_cache && !options.cache_dir.empty()) {
    throw CliError("repro: --cache-dir " + shown(options.cache_dir) + " and --no-cache: give one of them");
  }
  if (options.no_cache) return {{"CUJIT_CACHE", "off"}};
  if (options.cache_dir.empty()) return {};
  make_directory(options.cache_dir, "repro: --cache-dir");
  return {{"CUJIT_CACHE_DIR", std::filesystem::absolute(options.cache_dir).string()}};
}

int run_here(const ReproOptions& options) {
  const int fd = options.progress_fd;
  // Before anything can touch BuildCache::global(), which reads them once.
  for (const auto& [name, value] : cache_environment(options)) ::setenv(name.c_str(), value.c_str(), 1);
  try {
    progress(fd, "loading " + options.scenario);
    check_environment();
    scenarios::Scenario scenario = scenarios::load_scenario(options.scenario);
    apply_linker_environment(scenario, true);
    progress(fd, what_runs(scenario));
    if (fd >= 0) test_seam_crash();
    scenarios::ScenarioReport report = scenarios::run_scenario(scenario, fixture_dir());
    if (options.replays && !scenario.replays.empty()) {
      progress(fd, "running the replays through upstream stacks");
      report.replays = scenarios::run_replays(scenario, scenarios::replay_options_from_environment());
    }
    progress(fd, "printing the bundle");
    std::cout << (options.json ? scenarios::render_json(report) + "\n" : scenarios::render_text(report));
    progress(fd, finished);
    return report.verdict == scenarios::Verdict::as_expected ? exit_ok : exit_failures;
  } catch (const Error& error) {
    std::cerr << "cujit repro: " << printable_lines(error.what()) << "\n";
    progress(fd, finished);
    return exit_usage;
  }
}

// The verdict for a child that died (or exited without finishing): text or JSON.
void print_crash(const ReproOptions& options, const scenarios::Scenario& scenario, const ChildExit& exit,
                 const std::string& doing, const std::string& last_output) {
  const std::string verdict = exit.signal != 0 ? describe(exit) : "died: " + describe(exit) + " before finishing";
  if (options.json) {
    nlohmann::json doc;
    doc["schema"] = 1;
    doc["scenario"] = scenario.name;
    doc["file"] = options.scenario;
    doc["verdict"] = verdict;
    doc["signal"] = exit.signal != 0 ? nlohmann::json(signal_name(exit.signal)) : nlohmann::json(nullptr);
    doc["exit_status"] = exit.signal == 0 ? nlohmann::json(exit.exit_code) : nlohmann::json(nullptr);
    doc["while"] = doing;
    doc["last_output"] = last_output;
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::cout << "scenario: " << printable(scenario.name) << "\n"
            << "file: " << printable(options.scenario) << "\n"
            << "verdict: " << verdict << "\n"
            << "  the process running the scenario died while " << (doing.empty() ? "starting" : printable(doing))
            << "\n";
  if (!last_output.empty()) {
    std::cout << "  its last output:\n";
    std::size_t start = 0;
    while (start < last_output.size()) {
      const std::size_t end = last_output.find('\n', start);
      std::cout << "    " << printable(last_output.substr(start, end == std::string::npos ? std::string::npos : end - start))
                << "\n";
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  std::cout << "  (cujit repro --in-process runs the scenario in this process instead)\n";
}

// The last `count` complete lines of `text` (a tail may start inside a line).
std::string last_lines(const std::string& text, std::size_t count) {
  std::size_t start = text.size();
  if (start > 0 && text.back() == '\n') --start;
  for (std::size_t lines = 0; start > 0 && lines < count; ++lines) {
    const std::size_t newline = text.rfind('\n', start - 1);
    if (newline == std::string::npos) return text.size() < 4096 ? text : text.substr(text.find('\n') + 1);
    start = newline;
  }
  return text.substr(start == 0 ? 0 : start + 1);
}

int run_isolated(const ReproOptions& options) {
  // Loaded here too, so that a wrong file or CUJIT_LINKER is exit 2 without a child, and
  // a crash can be reported under the scenario's name.
  scenarios::Scenario scenario;
  try {
    scenario = scenarios::load_scenario(options.scenario);
    apply_linker_environment(scenario, false);
    // After --cache-dir / --no-cache would set the cache's variables: those are the child's.
    if (options.cache_dir.empty() && !options.no_cache) check_environment();
    else (void)nrt::enabled();
  } catch (const Error& error) {
    std::cerr << "cujit repro: " << printable_lines(error.what()) << "\n";
    return exit_usage;
  }
  ChildSpec child = child_spec({self_executable(), "repro", "--in-process", "--progress-fd",
                                std::to_string(child_progress_fd)});
  child.environment = cache_environment(options);
  if (options.json) child.argv.emplace_back("--json");
  if (!options.replays) child.argv.emplace_back("--no-replays");
  child.argv.insert(child.argv.end(), {"--", options.scenario});
  child.err = Sink::capture;
  child.report_fd = child_progress_fd;
  if (options.time_limit_s > 0) {
    child.timeout_ms = static_cast<int>(options.time_limit_s) * 1000;
    child.cpu_limit_seconds = options.time_limit_s;
  }
  child.memory_limit_bytes = options.memory_limit_mib * 1024 * 1024;
  Tail errors(4096), steps(4096);
  const ChildExit exit = run_child(child, [&](Stream stream, std::string_view text) {
    if (stream == Stream::report) {
      steps.append(text);
      return;
    }
    std::cerr << printable_stream(text) << std::flush;
    errors.append(text);
  });
  if (!exit.started()) throw CliError("repro: cannot run the scenario in a child process: " + describe(exit));
  const std::string doing = steps.last_line();
  if (exit.exited() && doing == finished) return exit.exit_code;
  std::cerr << "cujit repro: the process running scenario " << shown(scenario.name) << " " << describe(exit);
  if (exit.timed_out || exit.signal == SIGXCPU) std::cerr << " (--time-limit " << options.time_limit_s << " s)";
  std::cerr << "\n";
  print_crash(options, scenario, exit, doing, last_lines(errors.text(), 20));
  return exit_crashed;
}

}  // namespace

// Every regular file under `dir` with its modification time, to tell what a run added.
std::map<std::string, std::filesystem::file_time_type> files_under(const std::filesystem::path& dir) {
  std::map<std::string, std::filesystem::file_time_type> files;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::error_code ignored;
    if (it->is_regular_file(ignored)) files[it->path().string()] = it->last_write_time(ignored);
  }
  return files;
}

int capture(const ReproOptions& options) {
  if (options.command.empty()) {
    throw CliError("repro: --capture " + shown(options.capture_dir) + ": give the command after --");
  }
  make_output_dir(options.capture_dir, "repro: --capture");
  const std::filesystem::path dir = std::filesystem::absolute(options.capture_dir);
  const auto before = files_under(dir);
  ChildSpec child = child_spec(options.command);
  child.environment = cache_environment(options);
  child.environment.emplace_back("CUJIT_CAPTURE_DIR", dir.string());
  // With --json, standard output holds the document: the command's own goes to stderr.
  if (options.json) {
    child.out = Sink::capture;
  }
  const ChildExit exit = run_child(child, [](Stream, std::string_view text) { std::cerr << text; });
  if (!exit.started()) throw CliError("repro: --capture: cannot run " + shown(options.command.front()) + ": " + describe(exit));
  std::vector<std::string> written;
  for (const auto& [path, time] : files_under(dir)) {
    const auto found = before.find(path);
    if (found == before.end() || found->second != time) written.push_back(path);
  }
  if (options.json) {
    print_json({{"schema", 1},
                {"capture_dir", dir.string()},
                {"command", options.command},
                {"exit_status", exit.signal == 0 ? nlohmann::json(exit.exit_code) : nlohmann::json()},
                {"signal", exit.signal != 0 ? nlohmann::json(signal_name(exit.signal)) : nlohmann::json()},
                {"scenarios", written}});
    return exit_ok;
  }
  std::cout << "command: " << describe(exit) << "\n"
            << "captured " << written.size() << " file" << (written.size() == 1 ? "" : "s") << " in " << printable(dir.string())
            << "\n";
  // The names are the command's: escaped, so that none sends escapes or starts a line.
  for (const std::string& path : written) std::cout << "  " << printable(path) << "\n";
  if (!written.empty()) std::cout << "(cujit repro FILE runs one)\n";
  return exit_ok;
}

int repro(const ReproOptions& options) {
  if (!options.capture_dir.empty()) return capture(options);
  return options.in_process ? run_here(options) : run_isolated(options);
}

}  // namespace cujit::cli
