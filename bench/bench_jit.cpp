// JIT latency without a GPU: NVRTC, nvJitLink and end-to-end links per scenario, each next
// to the raw-API floor; first call in a new process; a kernel link from the memory tier.
// (The reduce build's figures are in bench_reduce.cpp.)
//
// Truly cold: every iteration creates a fresh nvrtcProgram and nvJitLink handle, NVRTC's
// precompiled header is off (-pch not passed) and the build cache is off, so nothing from
// an earlier iteration is reused. Warm-up: one untimed run per benchmark first (it loads
// the libraries and pages in their code), except for the new-process figures, whose point
// is that nothing is warm.
#include <cstdio>

#include "cujit/device.hpp"
#include "cujit/linker.hpp"
#include "cujit/nrt.hpp"
#include "cujit/program.hpp"
#include "support/bench_main.hpp"
#include "support/jit_scenarios.hpp"
#include "support/raw_jit.hpp"

namespace cujit::bench {
namespace {

const Arch arch = Arch::parse("sm_90");

std::string scenario_source(const JitScenario& scenario) {
  return read_file(scenario_dir() + "/" + scenario.source);
}

// ---- NVRTC -----------------------------------------------------------------------------

void cujit_nvrtc(benchmark::State& state, const JitScenario* scenario, CompileTarget target) {
  const std::string source = scenario_source(*scenario);
  CompileOptions options;
  options.arch = arch;
  options.target = target;
  options.headers = nrt::headers();
  const Program program(source, scenario->source);
  (void)program.compile(options);  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(program.compile(options));
}

void raw_nvrtc_bench(benchmark::State& state, const JitScenario* scenario, CompileTarget target) {
  const std::string source = scenario_source(*scenario);
  CompileOptions options;
  options.arch = arch;
  options.target = target;
  std::vector<std::string> flags = nvrtc_options(options);
  flags.push_back("-I" + std::string(CUJIT_BENCH_DEVICE_DIR));
  const std::string name(to_string(target));
  (void)raw_nvrtc(source, scenario->source, flags, name);
  for (auto _ : state) benchmark::DoNotOptimize(raw_nvrtc(source, scenario->source, flags, name));
}

// ---- end to end: source -> cubin ----------------------------------------------------------

void cujit_e2e(benchmark::State& state, const JitScenario* scenario) {
  BuildCache off(cache_config(CacheMode::off));
  (void)cujit_link(*scenario, off, arch);
  for (auto _ : state) benchmark::DoNotOptimize(cujit_link(*scenario, off, arch));
}

void raw_e2e(benchmark::State& state, const JitScenario* scenario) {
  (void)raw_link(*scenario, arch);
  for (auto _ : state) benchmark::DoNotOptimize(raw_link(*scenario, arch));
}

void first_call_new_process(benchmark::State& state, const JitScenario* scenario) {
  for (auto _ : state) {
    state.SetIterationTime(std::stod(run_self({"first_call", scenario->name})));
  }
}

// ---- nvJitLink alone ----------------------------------------------------------------------

void cujit_nvjitlink(benchmark::State& state, const JitScenario* scenario) {
  LinkOptions options;
  options.arch = arch;
  options.lto = scenario->lto;
  options.backend = LinkerBackend::nvjitlink;
  time_cujit_link(state, compiled_inputs(*scenario, arch, LinkerBackend::nvjitlink), options);
}

void raw_nvjitlink_bench(benchmark::State& state, const JitScenario* scenario) {
  std::vector<RawInput> inputs;
  for (const LinkableCode& code : compiled_inputs(*scenario, arch, LinkerBackend::nvjitlink)) {
    inputs.emplace_back(traits(code.format()).nvjitlink_input, code.bytes());
  }
  std::vector<std::string> options{"-arch=" + arch.sm()};
  if (scenario->lto) options.push_back("-lto");
  (void)raw_nvjitlink(inputs, options);
  for (auto _ : state) benchmark::DoNotOptimize(raw_nvjitlink(inputs, options));
}

// ---- the build cache ----------------------------------------------------------------------

void kernel_link_memory_hit(benchmark::State& state, const JitScenario* scenario) {
  BuildCache cache(cache_config(CacheMode::memory));
  (void)cujit_link(*scenario, cache, arch);
  for (auto _ : state) benchmark::DoNotOptimize(cujit_link(*scenario, cache, arch));
}

// ---- registration -------------------------------------------------------------------------

void register_all() {
  const int reps = repetitions(5);
  const int compile_iterations = quick() ? 2 : 10;
  for (const JitScenario& scenario : jit_scenarios()) {
    // Quick mode (CI, seconds): the smallest scenario and the LTO one.
    if (quick() && scenario.name != "tiny" && scenario.name != "ltoir_operator") continue;
    const JitScenario* s = &scenario;
    for (CompileTarget target : {CompileTarget::ptx, CompileTarget::ltoir, CompileTarget::cubin}) {
      if (quick() && target != CompileTarget::ptx) continue;
      const std::string suffix = "nvrtc/" + s->name + "/" + std::string(to_string(target));
      benchmark::RegisterBenchmark(("cujit/" + suffix).c_str(), cujit_nvrtc, s, target)
          ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
      benchmark::RegisterBenchmark(("raw/" + suffix).c_str(), raw_nvrtc_bench, s, target)
          ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    }
    const std::string link_suffix = "nvjitlink/" + s->name + (s->lto ? "/lto_on" : "/lto_off");
    benchmark::RegisterBenchmark(("cujit/" + link_suffix).c_str(), cujit_nvjitlink, s)
        ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    benchmark::RegisterBenchmark(("raw/" + link_suffix).c_str(), raw_nvjitlink_bench, s)
        ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    benchmark::RegisterBenchmark(("cujit/e2e_cubin/" + s->name).c_str(), cujit_e2e, s)
        ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    benchmark::RegisterBenchmark(("raw/e2e_cubin/" + s->name).c_str(), raw_e2e, s)
        ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    benchmark::RegisterBenchmark(("cujit/first_call_new_process/" + s->name).c_str(),
                                 first_call_new_process, s)
        ->Unit(benchmark::kMillisecond)->Iterations(quick() ? 1 : 3)->Repetitions(reps)->UseManualTime();
    benchmark::RegisterBenchmark(("cujit/kernel_link/" + s->name + "/memory_hit").c_str(),
                                 kernel_link_memory_hit, s)
        ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  }
}

// The child prints one number: seconds for the first link in this process.
int child(const ChildArguments& arguments) {
  if (arguments.size() != 2 || arguments[0] != "first_call") return 2;
  // Create the context first, as any CUDA program does, so the figure is the link's and
  // not the driver's start-up.
  if (has_device()) use_device(0);
  const auto start = Clock::now();
  BuildCache off(cache_config(CacheMode::off));
  (void)cujit_link(jit_scenario(arguments[1]), off, arch);
  std::printf("%.9f\n", seconds_since(start));
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  return cujit::bench::run_main(argc, argv, cujit::bench::register_all, cujit::bench::child);
}
