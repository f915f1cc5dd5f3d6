// cujit bench: the benchmark executables with filters by family and scenario, JSON out.
// Quick mode (CPU families, few repetitions) without a GPU unless --full is given.
// Each executable first lists the benchmarks the selection matches (Google Benchmark's
// --benchmark_list_tests): one that matches none is not run, and a selection that matches
// nothing anywhere is a usage error (exit 2), never an exit 0 with empty JSON files.
// Children start from argument vectors; their output goes to a log this command writes.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "heartbeat.hpp"
#include "cujit/device.hpp"
#include "json_output.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "presentation.hpp"
#include "spawn.hpp"

namespace cujit::cli {
namespace {

// A family or scenario is a substring of benchmark names: its regular-expression
// characters are escaped so that it matches as written.
std::string literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string filter(const BenchOptions& options) {
  // Google Benchmark's filter is a regular expression over names like
  // "cujit/nvrtc/tiny/ptx": families and scenarios are name parts.
  auto alternatives = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : "|") + literal(part);
    return "(" + out + ")";
  };
  std::string regex;
  if (!options.families.empty()) regex += ".*" + alternatives(options.families);
  if (!options.scenarios.empty()) regex += ".*" + alternatives(options.scenarios);
  return regex.empty() ? "" : regex + ".*";
}

// Runs one child with its stdout and stderr into `log`; returns how it ended.
// A progress line at least every 20 s while it runs (heartbeat.hpp).
ChildExit run_logged(const ChildSpec& child, const std::filesystem::path& log, const std::string& name) {
  OutputFile file(log);
  ChildSpec spec = child;
  spec.out = Sink::capture;
  spec.err_to_out = true;
  spec.tick_ms = heartbeat_ms;
  const Heartbeat heartbeat("bench " + name);
  Tail tail;
  const ChildExit exit = run_child(spec, [&](Stream stream, std::string_view text) {
    if (stream == Stream::tick) return heartbeat.beat(tail);
    file.write(text);
    tail.append(text);
    if (verbose()) std::cerr << printable_stream(text);
  });
  file.finish();
  return exit;
}

// The benchmarks `child` (an executable with its selection, no output options) would run:
// its --benchmark_list_tests listing, one name a line. Nullopt, with `why`, when the
// listing itself failed.
std::optional<std::vector<std::string>> list_benchmarks(ChildSpec child, std::string& why) {
  child.argv.push_back("--benchmark_list_tests=true");
  child.out = Sink::capture;
  child.err = Sink::capture;
  std::string listing;
  Tail errors(4096);
  const ChildExit exit = run_child(child, [&](Stream stream, std::string_view text) {
    if (stream == Stream::out) {
      if (listing.size() < (16u << 20)) listing.append(text);
    } else {
      errors.append(text);
    }
  });
  if (!exit.exited() || exit.exit_code != 0) {
    why = describe(exit) + (errors.last_line().empty() ? "" : ": " + errors.last_line());
    return std::nullopt;
  }
  std::vector<std::string> names;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

std::string selection(const BenchOptions& options) {
  std::string text;
  for (const std::string& family : options.families) text += (text.empty() ? "" : " ") + ("--family " + shown(family));
  for (const std::string& scenario : options.scenarios) {
    text += (text.empty() ? "" : " ") + ("--scenario " + shown(scenario));
  }
  return text;
}

}  // namespace

int bench(const BenchOptions& options, nlohmann::json* summary) {
  for (const std::string& family : options.families) {
    if (family.empty()) throw CliError("bench: --family '': must not be empty");
  }
  for (const std::string& scenario : options.scenarios) {
    if (scenario.empty()) throw CliError("bench: --scenario '': must not be empty");
  }
  if (options.quick && options.full) throw CliError("bench: --quick and --full: give one of them");
  const bool quick = options.quick || (!options.full && !has_device());
  make_output_dir(options.out, "bench: --out");
  // bench_reduce's reduce_build family needs no GPU; its throughput family skips without one.
  std::vector<std::string> executables{"bench_jit", "bench_reduce"};
  if (!quick) {
    if (!has_device()) {
      std::cerr << "cujit bench: --full needs a CUDA device (" << no_device_reason() << ")\n";
      return exit_usage;
    }
    executables.insert(executables.end(), {"bench_jit_gpu", "bench_launch"});
  }
  const std::string regex = filter(options);
  auto selected_child = [&](const std::string& name) {
    ChildSpec child = child_spec({(build_dir() / "bench" / name).string()});
    if (quick) child.argv.push_back("--cujit-quick");
    if (!regex.empty()) child.argv.push_back("--benchmark_filter=" + regex);
    return child;
  };
  // What each executable would run, before anything runs.
  int status = exit_ok;
  std::vector<std::string> to_run;
  nlohmann::json each = nlohmann::json::array();
  std::size_t matched = 0;
  for (const std::string& name : executables) {
    std::string why;
    const auto names = list_benchmarks(selected_child(name), why);
    if (!names) {
      std::cerr << "cujit bench: " << name << " cannot list its benchmarks (" << why << ")\n";
      status = exit_failures;
      each.push_back({{"name", name}, {"status", "failed"}, {"benchmarks", 0}, {"why", "listing: " + why}});
      continue;
    }
    matched += names->size();
    if (names->empty()) {
      each.push_back({{"name", name}, {"status", "not selected"}, {"benchmarks", 0}});
      continue;
    }
    to_run.push_back(name);
    each.push_back({{"name", name}, {"status", "ok"}, {"benchmarks", names->size()}});
  }
  if (matched == 0 && status == exit_ok && !regex.empty()) {
    std::cerr << "cujit bench: " << selection(options) << " matches no benchmark"
              << (quick ? " of the quick set (--full runs the GPU families)" : "") << "\n";
    return exit_usage;
  }
  int index = 0;
  for (const std::string& name : to_run) {
    ++index;
    progress() << "[" << index << "/" << to_run.size() << "] bench " << name << (quick ? " (quick)" : "") << "\n";
    const auto json = options.out / (name + ".json");
    const auto log = options.out / (name + ".log");
    ChildSpec child = selected_child(name);
    child.argv.insert(child.argv.end(), {"--benchmark_out=" + json.string(), "--benchmark_out_format=json",
                                         "--benchmark_format=console"});
    std::error_code ignored;
    std::filesystem::remove(json, ignored);  // a JSON from an earlier run must not pass for this one's
    const ChildExit exit = run_logged(child, log, name);
    std::string failure;
    if (!exit.exited() || exit.exit_code != 0) {
      failure = describe(exit);
      std::cerr << "cujit bench: " << name << " failed (" << failure << "), see " << shown(log.string()) << "\n";
    } else if (const auto size = std::filesystem::file_size(json, ignored); ignored || size == 0) {
      failure = "wrote no JSON";
      std::cerr << "cujit bench: " << name << " wrote no JSON to " << shown(json.string()) << ", see "
                << shown(log.string()) << "\n";
    }
    for (auto& entry : each) {
      if (entry["name"] != name) continue;
      entry["json"] = json.string();
      entry["log"] = log.string();
      if (!failure.empty()) {
        entry["status"] = "failed";
        entry["why"] = failure;
      }
    }
    if (!failure.empty()) status = exit_failures;
  }
  nlohmann::json peers = nlohmann::json::array();
  if (!quick) {
    for (const auto& [script, json] : {std::pair{"numba_peer.py", "peer_numba.json"},
                                       std::pair{"cuda_core_peer.py", "peer_cuda_core.json"}}) {
      // Absolute paths: the peers take positional arguments, and an --out such as "-x" must
      // not read as an option.
      require_trusted_script(source_dir() / "bench" / "peers" / script);
      const ChildSpec peer = child_spec({python(), (source_dir() / "bench" / "peers" / script).string(),
                            std::filesystem::absolute(options.out / json).string(),
                            std::filesystem::absolute(source_dir() / "scenarios").string(), "5"});
      // A peer that is not installed is not a failure of cujit: its log says why.
      const ChildExit exit = run_logged(peer, options.out / (std::string(json) + ".log"), json);
      peers.push_back({{"name", script}, {"json", (options.out / json).string()}, {"ran", exit.exited() && exit.exit_code == 0}});
    }
  }
  const nlohmann::json document = {{"schema", 1},
                                   {"out", options.out.string()},
                                   {"quick", quick},
                                   {"filter", regex},
                                   {"executables", each},
                                   {"peers", peers},
                                   {"exit_code", status}};
  if (summary != nullptr) {
    *summary = document;
  } else if (options.json) {
    print_json(document);
  } else {
    std::cout << "benchmarks: " << options.out.string() << "\n";
  }
  return status;
}

}  // namespace cujit::cli
