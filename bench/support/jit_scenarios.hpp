#pragma once
// The JIT scenarios the benchmarks time: a kernel's own CUDA C++ plus external inputs.

#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "cujit/kernel_builder.hpp"
#include "support/raw_jit.hpp"

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

// The scenario's KernelBuilder over the given cache, its inputs read from their files.
KernelBuilder scenario_builder(const JitScenario& scenario, BuildCache& cache, const Arch& arch);

// The scenario's inputs as they are read from their files: its own code, then external.
std::vector<LinkableCode> scenario_inputs(const JitScenario& scenario);

// cujit end to end: KernelBuilder over the scenario with the given cache (CacheMode::off
// for truly cold figures), linked to a cubin.
LinkedKernel cujit_link(const JitScenario& scenario, BuildCache& cache, const Arch& arch);

// The raw floor of the same work: NVRTC for each CUDA C++ input (cujit's options and
// in-memory headers), nvJitLink over all of it.
std::string raw_link(const JitScenario& scenario, const Arch& arch);

std::string read_file(const std::string& path);

// cujit's NVRTC headers as raw_nvrtc takes them.
std::vector<RawHeader> raw_headers(const std::vector<Header>& headers);

// The scenario's inputs ready for `backend`: CUDA C++ compiled the way a link with the
// scenario's LTO setting on that backend compiles it, fixtures resolved, the NRT library
// added when the scenario uses NRT.
std::vector<LinkableCode> compiled_inputs(const JitScenario& scenario, const Arch& arch, LinkerBackend backend);

// Times Linker::link over `inputs` (one untimed warm-up first).
void time_cujit_link(benchmark::State& state, const std::vector<LinkableCode>& inputs, const LinkOptions& options);

CacheConfig cache_config(CacheMode mode, const std::string& directory = {});

}  // namespace cujit::bench
