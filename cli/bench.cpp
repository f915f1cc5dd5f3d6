// cujit bench: the benchmark executables with filters by family and scenario, JSON out.
// Quick mode (CPU families, few repetitions) without a GPU unless --full is given.
// Children start from argument vectors; their output goes to a log this command writes.
#include <iostream>

#include "commands.hpp"
#include "cujit/device.hpp"
#include "output.hpp"
#include "paths.hpp"
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
ChildExit run_logged(const ChildSpec& child, const std::filesystem::path& log) {
  OutputFile file(log);
  ChildSpec spec = child;
  spec.out = Sink::capture;
  spec.err_to_out = true;
  const ChildExit exit = run_child(spec, [&](Stream, std::string_view text) { file.write(text); });
  file.finish();
  return exit;
}

}  // namespace

int bench(const BenchOptions& options) {
  for (const std::string& family : options.families) {
    if (family.empty()) throw CliError("bench: --family '': must not be empty");
  }
  for (const std::string& scenario : options.scenarios) {
    if (scenario.empty()) throw CliError("bench: --scenario '': must not be empty");
  }
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
  int status = exit_ok;
  int index = 0;
  for (const std::string& name : executables) {
    ++index;
    std::cerr << "[" << index << "/" << executables.size() << "] bench " << name << (quick ? " (quick)" : "") << "\n";
    const auto json = options.out / (name + ".json");
    const auto log = options.out / (name + ".log");
    ChildSpec child = child_spec({(build_dir() / "bench" / name).string()});
    if (quick) child.argv.push_back("--cujit-quick");
    child.argv.insert(child.argv.end(), {"--benchmark_out=" + json.string(), "--benchmark_out_format=json",
                                         "--benchmark_format=console"});
    if (!regex.empty()) child.argv.push_back("--benchmark_filter=" + regex);
    std::error_code ignored;
    std::filesystem::remove(json, ignored);  // a JSON from an earlier run must not pass for this one's
    const ChildExit exit = run_logged(child, log);
    if (!exit.exited() || exit.exit_code != 0) {
      std::cerr << "cujit bench: " << name << " failed (" << describe(exit) << "), see " << shown(log.string()) << "\n";
      status = exit_failures;
    } else if (const auto size = std::filesystem::file_size(json, ignored); ignored || size == 0) {
      std::cerr << "cujit bench: " << name << " wrote no JSON to " << shown(json.string()) << ", see "
                << shown(log.string()) << "\n";
      status = exit_failures;
    }
  }
  if (!quick) {
    for (const auto& [script, json] : {std::pair{"numba_peer.py", "peer_numba.json"},
                                       std::pair{"cuda_core_peer.py", "peer_cuda_core.json"}}) {
      // Absolute paths: the peers take positional arguments, and an --out such as "-x" must
      // not read as an option.
      const ChildSpec peer = child_spec({python(), (source_dir() / "bench" / "peers" / script).string(),
                            std::filesystem::absolute(options.out / json).string(),
                            std::filesystem::absolute(source_dir() / "scenarios").string(), "5"});
      // A peer that is not installed is not a failure of cujit: its log says why.
      run_logged(peer, options.out / (std::string(json) + ".log"));
    }
  }
  std::cout << "benchmarks: " << options.out.string() << "\n";
  return status;
}

}  // namespace cujit::cli
