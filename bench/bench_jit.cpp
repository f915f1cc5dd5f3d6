// JIT latency without a GPU: NVRTC, nvJitLink and end-to-end links per scenario, each next
// to the raw-API floor; first call in a new process; a kernel link from the memory tier.
// (The reduce build's figures are in bench_reduce.cpp.)
//
// Truly cold: every iteration creates a fresh nvrtcProgram and nvJitLink handle, NVRTC's
// precompiled header is off (-pch not passed) and the build cache is off, so nothing from
// an earlier iteration is reused. Warm-up: one untimed run per benchmark first (it loads
// the libraries and pages in their code), except for the new-process figures, whose point
// is that nothing is warm.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cujit/device.hpp"
#include "cujit/linker.hpp"
#include "cujit/nrt.hpp"
#include "cujit/program.hpp"
#include "support/bench_main.hpp"
#include "support/jit_scenarios.hpp"
#include "support/multi_input.hpp"
#include "support/paired.hpp"
#include "support/raw_jit.hpp"
#include "support/vendor_phases.hpp"

namespace cujit::bench {
namespace {

const Arch arch = Arch::parse("sm_90");

std::string scenario_source(const JitScenario& scenario) {
  return read_file(scenario_dir() + "/" + scenario.source);
}

// ---- NVRTC ----------------------------------------------------------------------------

CompileOptions compile_options(CompileTarget target) {
  CompileOptions options;
  options.arch = arch;
  options.target = target;
  options.headers = nrt::headers();
  return options;
}

void cujit_nvrtc(benchmark::State& state, const JitScenario* scenario, CompileTarget target) {
  const std::string source = scenario_source(*scenario);
  const Program program(source, scenario->source);
  const CompileOptions options = compile_options(target);
  const std::vector<std::string> flags = program.compile(options).options;  // warm-up
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(program.compile(options));
  share.finish(state);
  add_phase_counters(state, nvrtc_phases(source, scenario->source, flags, std::string(to_string(target)),
                                         raw_headers(options.headers)));
}

// cujit's Program::compile against nvrtcCreateProgram + nvrtcCompileProgram with the
// options cujit passed (CompileResult::options) and the same in-memory headers.
Pair nvrtc_pair(const JitScenario& scenario, CompileTarget target) {
  const auto program = std::make_shared<Program>(scenario_source(scenario), scenario.source);
  const CompileOptions options = compile_options(target);
  const std::vector<std::string> flags = program->compile(options).options;
  const std::string source = scenario_source(scenario);
  return Pair{[program, options] { return program->compile(options).code.bytes(); },
              [source, name = scenario.source, flags, target, headers = raw_headers(options.headers)] {
                return raw_nvrtc(source, name, flags, std::string(to_string(target)), headers);
              }};
}

// A compile that includes CUB (one source of parallel_sources: cub::BlockReduce, most of
// it NVRTC's front end over CCCL's headers): cujit's hermetic compile, every header resolved
// by cujit and handed to NVRTC in memory, against raw NVRTC reading the same headers from
// the toolkit's include directories (nvrtc_options gives it the search path).
Pair cub_include_pair() {
  const LinkableCode source = multi_input_sources(1).at(1);
  const std::string text(source.bytes().begin(), source.bytes().end());
  CompileOptions options = multi_input_options(arch).compile;  // CCCL's and the toolkit's include paths
  options.arch = arch;
  options.target = CompileTarget::ptx;
  const auto program = std::make_shared<Program>(text, source.name());
  return Pair{[program, options] { return program->compile(options).code.bytes(); },
              [text, name = source.name(), flags = nvrtc_options(options)] {
                return raw_nvrtc(text, name, flags, "ptx");
              }};
}

// ---- end to end: source -> cubin ----------------------------------------------------------

void cujit_e2e(benchmark::State& state, const JitScenario* scenario) {
  BuildCache off(cache_config(CacheMode::off));
  (void)cujit_link(*scenario, off, arch);
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(cujit_link(*scenario, off, arch));
  share.finish(state);
}

Pair e2e_pair(const JitScenario& scenario) {
  return Pair{[&scenario] {
                BuildCache off(cache_config(CacheMode::off));
                return cujit_link(scenario, off, arch).link.code.bytes();
              },
              [&scenario] { return raw_link(scenario, arch); }};
}

void first_call_new_process(benchmark::State& state, const JitScenario* scenario) {
  for (auto _ : state) {
    state.SetIterationTime(std::stod(run_self({"first_call", scenario->name})));
  }
}

// ---- nvJitLink alone ----------------------------------------------------------------------

LinkOptions nvjitlink_options(const JitScenario& scenario) {
  LinkOptions options;
  options.arch = arch;
  options.lto = scenario.lto;
  options.backend = LinkerBackend::nvjitlink;
  return options;
}

// The raw floor's inputs and options for the same link.
std::vector<RawInput> raw_link_inputs(const std::vector<LinkableCode>& inputs) {
  std::vector<RawInput> raw;
  for (const LinkableCode& code : inputs) raw.emplace_back(traits(code.format()).nvjitlink_input, code.bytes());
  return raw;
}

std::vector<std::string> raw_link_flags(const JitScenario& scenario) {
  std::vector<std::string> flags{"-arch=" + arch.sm()};
  if (scenario.lto) flags.emplace_back("-lto");
  return flags;
}

void cujit_nvjitlink(benchmark::State& state, const JitScenario* scenario) {
  const std::vector<LinkableCode> inputs = compiled_inputs(*scenario, arch, LinkerBackend::nvjitlink);
  time_cujit_link(state, inputs, nvjitlink_options(*scenario));
  add_phase_counters(state, nvjitlink_phases(raw_link_inputs(inputs), raw_link_flags(*scenario)));
}

Pair nvjitlink_pair(const JitScenario& scenario) {
  const auto inputs = std::make_shared<std::vector<LinkableCode>>(
      compiled_inputs(scenario, arch, LinkerBackend::nvjitlink));
  return Pair{[inputs, options = nvjitlink_options(scenario)] {
                Linker linker(options);
                for (const LinkableCode& code : *inputs) linker.add(code);
                return linker.link().code.bytes();
              },
              [raw_inputs = raw_link_inputs(*inputs), flags = raw_link_flags(scenario)] {
                return raw_nvjitlink(raw_inputs, flags);
              }};
}

// ---- the build cache ----------------------------------------------------------------------

// A process asking again for a kernel it built: the builder it holds (as a dispatcher holds
// its overloads) answers from the memo, the very LinkedKernel of the first build.
void kernel_link_memory_hit(benchmark::State& state, const JitScenario* scenario) {
  BuildCache cache(cache_config(CacheMode::memory));
  const KernelBuilder builder = scenario_builder(*scenario, cache, arch);
  const auto first = builder.link_shared();
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(builder.link_shared());
  share.finish(state);
  if (builder.link_shared() != first) state.SkipWithError("the memory hit did not return the memorized object");
}

// The same kernel through a new builder each time, from inputs already in memory: the
// kernel's CUDA C++ is compiled again through the compile cache (a memory hit), then the
// link comes from the memo.
void kernel_link_memory_hit_new_builder(benchmark::State& state, const JitScenario* scenario) {
  BuildCache cache(cache_config(CacheMode::memory));
  const std::vector<LinkableCode> inputs = scenario_inputs(*scenario);
  const auto build = [&] {
    KernelOptions options;
    options.link.arch = arch;
    options.link.lto = scenario->lto;
    options.link.backend = LinkerBackend::nvjitlink;
    options.nrt = scenario->nrt;
    KernelBuilder builder(scenario->kernel, options, cache);
    builder.source(inputs.front());
    for (std::size_t i = 1; i < inputs.size(); ++i) builder.link(inputs[i]);
    return builder.link_shared();
  };
  (void)build();
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(build());
  share.finish(state);
}

// A new process asking a disk cache another process filled: from BuildCache's construction
// to the LinkedKernel (the GPU figure, bench_jit_gpu.cpp's kernel_build/disk_hit_new_process,
// adds the module load). Timed inside the child, so the process start is not in it.
std::string prepared_disk_dir(const JitScenario& scenario) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("cujit-bench-cache-" + std::to_string(::getpid()) + "-" + scenario.name);
  BuildCache cache(cache_config(CacheMode::disk, dir));
  (void)cujit_link(scenario, cache, arch);
  return dir;
}

void kernel_link_disk_hit_new_process(benchmark::State& state, const JitScenario* scenario) {
  const std::string dir = prepared_disk_dir(*scenario);
  for (auto _ : state) state.SetIterationTime(std::stod(run_self({"kernel_disk_hit", scenario->name, dir})));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

// ---- k independent CUDA C++ inputs --------------------------------------------------------

constexpr int multi_k = 4;

LinkOptions multi_options() { return multi_input_options(arch); }

// Linker::add_all (the sources compiled side by side) against NVRTC one input after the
// other: cold on both sides (no cache, fresh programs).
Pair parallel_sources_pair() {
  const auto sources = std::make_shared<std::vector<LinkableCode>>(multi_input_sources(multi_k));
  return Pair{[sources] {
                Linker linker(multi_options(), BuildCache::disabled());
                linker.add_all(*sources);
                return linker.link().code.bytes();
              },
              [sources] { return raw_multi_input_link(*sources, multi_options()); }};
}

// One of the k inputs changes (a new revision each iteration), the others come from the
// cache's memory tier: only that input compiles, then the link.
void incremental_rebuild_one(benchmark::State& state) {
  BuildCache cache(cache_config(CacheMode::memory));
  long long revision = 0;
  const auto build = [&] {
    Linker linker(multi_options(), cache);
    linker.add_all(multi_input_sources(multi_k, 1, ++revision));
    return linker.link_cached();
  };
  (void)build();
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(build());
  share.finish(state);
}

// The same build with nothing cached, for comparison.
void incremental_cold(benchmark::State& state) {
  long long revision = 0;
  const auto build = [&] {
    Linker linker(multi_options(), BuildCache::disabled());
    linker.add_all(multi_input_sources(multi_k, 1, ++revision));
    return linker.link();
  };
  (void)build();
  for (auto _ : state) benchmark::DoNotOptimize(build());
}

// ---- registration -------------------------------------------------------------------------

void register_all() {
  // The families the regression gate reads get 9 repetitions (docs/benchmarks.md); the
  // pairs stop on their own (support/paired.hpp).
  const int reps = repetitions(9);
  const int compile_iterations = quick() ? 2 : 5;
  for (const JitScenario& scenario : jit_scenarios()) {
    const JitScenario* s = &scenario;
    // Every scenario, quick mode too: a few milliseconds a process, and the scenarios with
    // extra sources (external_cu, nrt) are the ones whose hit path costs most.
    benchmark::RegisterBenchmark(("cujit/kernel_link/" + s->name + "/disk_hit_new_process").c_str(),
                                 kernel_link_disk_hit_new_process, s)
        ->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(reps)->UseManualTime();
    // Quick mode (CI, seconds): the smallest scenario and the LTO one.
    if (quick() && scenario.name != "tiny" && scenario.name != "ltoir_operator") continue;
    for (CompileTarget target : {CompileTarget::ptx, CompileTarget::ltoir, CompileTarget::cubin}) {
      if (quick() && target != CompileTarget::ptx) continue;
      const std::string suffix = "nvrtc/" + s->name + "/" + std::string(to_string(target));
      benchmark::RegisterBenchmark(("cujit/" + suffix).c_str(), cujit_nvrtc, s, target)
          ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
      register_pair(suffix, [s, target] { return nvrtc_pair(*s, target); });
    }
    const std::string link_suffix = "nvjitlink/" + s->name + (s->lto ? "/lto_on" : "/lto_off");
    benchmark::RegisterBenchmark(("cujit/" + link_suffix).c_str(), cujit_nvjitlink, s)
        ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    register_pair(link_suffix, [s] { return nvjitlink_pair(*s); });
    benchmark::RegisterBenchmark(("cujit/e2e_cubin/" + s->name).c_str(), cujit_e2e, s)
        ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
    register_pair("e2e_cubin/" + s->name, [s] { return e2e_pair(*s); });
    benchmark::RegisterBenchmark(("cujit/first_call_new_process/" + s->name).c_str(),
                                 first_call_new_process, s)
        ->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(reps)->UseManualTime();
    benchmark::RegisterBenchmark(("cujit/kernel_link/" + s->name + "/memory_hit").c_str(),
                                 kernel_link_memory_hit, s)
        ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark(("cujit/kernel_link/" + s->name + "/memory_hit_new_builder").c_str(),
                                 kernel_link_memory_hit_new_builder, s)
        ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
  }
  // Seconds per build (CUB's headers, k times): full mode only.
  if (quick()) return;
  const std::string k = "k" + std::to_string(multi_k);
  register_pair("nvrtc/cub_block_reduce/ptx", cub_include_pair);
  register_pair("parallel_sources/" + k, parallel_sources_pair);
  benchmark::RegisterBenchmark(("cujit/incremental/" + k + "/rebuild_one").c_str(), incremental_rebuild_one)
      ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
  benchmark::RegisterBenchmark(("cujit/incremental/" + k + "/cold").c_str(), incremental_cold)
      ->Unit(benchmark::kMillisecond)->Iterations(compile_iterations)->Repetitions(reps);
}

// A disk hit in this new process: BuildCache over the prepared directory to the LinkedKernel.
int disk_hit_child(const std::string& name, const std::string& dir) {
  const JitScenario& scenario = jit_scenario(name);
  const auto start = Clock::now();
  BuildCache cache(cache_config(CacheMode::disk, dir));
  const std::shared_ptr<const LinkedKernel> linked = scenario_builder(scenario, cache, arch).link_shared();
  const double seconds = seconds_since(start);
  if (linked->source != CacheSource::disk || linked->link.code.bytes().empty()) return 1;
  std::printf("%.9f\n", seconds);
  return 0;
}

// The child prints one number: seconds for the first link (first_call) or the disk hit
// (kernel_disk_hit) in this process.
int child(const ChildArguments& arguments) {
  if (arguments.size() == 3 && arguments[0] == "kernel_disk_hit") return disk_hit_child(arguments[1], arguments[2]);
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
