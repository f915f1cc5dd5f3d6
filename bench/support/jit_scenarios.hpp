#pragma once
// The JIT scenarios the benchmarks time: a kernel's own CUDA C++ plus external inputs.

#include <string>
#include <vector>

#include "cujit/kernel_builder.hpp"

namespace cujit::bench {

struct JitScenario {
  std::string name;
  std::string kernel;                 // kernel to load
  std::string source;                 // the kernel's own CUDA C++ (path under scenarios/)
  std::vector<std::string> external;  // external inputs (paths under scenarios/ or fixtures/)
  bool lto = false;
  bool nrt = false;
};

const std::vector<JitScenario>& jit_scenarios();
const JitScenario& jit_scenario(const std::string& name);

// cujit end to end: KernelBuilder over the scenario with the given cache (CacheMode::off
// for truly cold figures), linked to a cubin.
LinkedKernel cujit_link(const JitScenario& scenario, BuildCache& cache, const Arch& arch);

// The raw floor of the same work: NVRTC for each CUDA C++ input, nvJitLink over all of it.
std::string raw_link(const JitScenario& scenario, const Arch& arch);

std::string read_file(const std::string& path);

}  // namespace cujit::bench
