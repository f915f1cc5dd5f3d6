// cujit bench: the benchmark executables with filters by family and scenario, JSON out.
// Quick mode (CPU families, few repetitions) without a GPU unless --full is given.
#include <iostream>

#include "commands.hpp"
#include "cujit/device.hpp"
#include "paths.hpp"

namespace cujit::cli {
namespace {

std::string filter(const BenchOptions& options) {
  // Google Benchmark's filter is a regular expression over names like
  // "cujit/nvrtc/tiny/ptx": families and scenarios are name parts.
  auto alternatives = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : "|") + part;
    return "(" + out + ")";
  };
  std::string regex;
  if (!options.families.empty()) regex += ".*" + alternatives(options.families);
  if (!options.scenarios.empty()) regex += ".*" + alternatives(options.scenarios);
  return regex.empty() ? "" : regex + ".*";
}

}  // namespace

int bench(const BenchOptions& options) {
  const bool quick = options.quick || (!options.full && !has_device());
  std::filesystem::create_directories(options.out);
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
    std::string command = (build_dir() / "bench" / name).string() + (quick ? " --cujit-quick" : "") +
                          " --benchmark_out=" + json.string() + " --benchmark_out_format=json" +
                          " --benchmark_format=console";
    if (!regex.empty()) command += " '--benchmark_filter=" + regex + "'";
    command += " > " + (options.out / (name + ".log")).string() + " 2>&1";
    if (run_command(command) != 0) {
      std::cerr << "cujit bench: " << name << " failed, see " << (options.out / (name + ".log")) << "\n";
      status = exit_failures;
    }
  }
  if (!quick) {
    for (const auto& [script, json] : {std::pair{"numba_peer.py", "peer_numba.json"},
                                       std::pair{"cuda_core_peer.py", "peer_cuda_core.json"}}) {
      run_command(python() + " " + (source_dir() / "bench" / "peers" / script).string() + " " +
                  (options.out / json).string() + " " + (source_dir() / "scenarios").string() + " 5 > " +
                  (options.out / (std::string(json) + ".log")).string() + " 2>&1");
    }
  }
  std::cout << "benchmarks: " << options.out.string() << "\n";
  return status;
}

}  // namespace cujit::cli
