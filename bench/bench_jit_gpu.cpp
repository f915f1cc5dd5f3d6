// JIT latency that needs a GPU: module load, the driver linker, end to end from source to
// a launchable kernel, and a disk-cache hit to a launchable kernel in a new process, each
// next to the raw floor (NVRTC + nvJitLink + cuModuleLoadData, cuLink*, written directly
// against the APIs). Truly cold as in bench_jit (fresh programs, no -pch, cache off).
#include <cuda.h>
#include <unistd.h>

#include <filesystem>
#include <cstdio>

#include "cujit/nrt.hpp"
#include "support/bench_main.hpp"
#include "support/jit_scenarios.hpp"

namespace cujit::bench {
namespace {

Arch device_arch() { return Arch::of_device(0); }

void cujit_module_load(benchmark::State& state, const JitScenario* scenario) {
  BuildCache off(cache_config(CacheMode::off));
  const Bytes cubin = cujit_link(*scenario, off, device_arch()).link.code.bytes();
  for (auto _ : state) {
    auto module = Module::load(LinkableCode::cubin(cubin, scenario->name));
    benchmark::DoNotOptimize(module->kernel(scenario->kernel));
  }
}

void raw_module_load(benchmark::State& state, const JitScenario* scenario) {
  BuildCache off(cache_config(CacheMode::off));
  const Bytes cubin = cujit_link(*scenario, off, device_arch()).link.code.bytes();
  for (auto _ : state) {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    cuModuleLoadData(&module, cubin.data());
    cuModuleGetFunction(&function, module, scenario->kernel.c_str());
    benchmark::DoNotOptimize(function);
    cuModuleUnload(module);
  }
}

void cujit_e2e_launchable(benchmark::State& state, const JitScenario* scenario) {
  BuildCache off(cache_config(CacheMode::off));
  auto build = [&] {
    auto module = Module::load(LinkableCode::cubin(cujit_link(*scenario, off, device_arch()).link.code.bytes(), scenario->name));
    return module->kernel(scenario->kernel);
  };
  (void)build();
  for (auto _ : state) benchmark::DoNotOptimize(build());
}

void raw_e2e_launchable(benchmark::State& state, const JitScenario* scenario) {
  auto build = [&] {
    const std::string cubin = raw_link(*scenario, device_arch());
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    cuModuleLoadData(&module, cubin.data());
    cuModuleGetFunction(&function, module, scenario->kernel.c_str());
    cuModuleUnload(module);
    return function;
  };
  (void)build();
  for (auto _ : state) benchmark::DoNotOptimize(build());
}

// The driver linker over PTX (non-LTO scenarios): cujit's backend and raw cuLink*.
void cujit_driver_link(benchmark::State& state, const JitScenario* scenario) {
  LinkOptions options;
  options.arch = device_arch();
  options.backend = LinkerBackend::driver;
  time_cujit_link(state, compiled_inputs(*scenario, device_arch(), LinkerBackend::driver), options);
}

void raw_driver_link(benchmark::State& state, const JitScenario* scenario) {
  const std::vector<LinkableCode> inputs = compiled_inputs(*scenario, device_arch(), LinkerBackend::driver);
  auto link = [&] {
    CUlinkState link_state = nullptr;
    cuLinkCreate(0, nullptr, nullptr, &link_state);
    for (const LinkableCode& code : inputs) {
      cuLinkAddData(link_state, CU_JIT_INPUT_PTX, const_cast<char*>(code.bytes().c_str()),
                    code.bytes().size() + 1, "input", 0, nullptr, nullptr);
    }
    void* cubin = nullptr;
    std::size_t size = 0;
    cuLinkComplete(link_state, &cubin, &size);
    std::string out(static_cast<const char*>(cubin), size);
    cuLinkDestroy(link_state);
    return out;
  };
  (void)link();
  for (auto _ : state) benchmark::DoNotOptimize(link());
}

std::string prepared_dir(const JitScenario& scenario) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("cujit-bench-gpu-cache-" + std::to_string(::getpid()) + "-" + scenario.name);
  BuildCache cache(cache_config(CacheMode::disk, dir));
  (void)cujit_link(scenario, cache, device_arch());
  return dir;
}

void kernel_disk_hit_new_process(benchmark::State& state, const JitScenario* scenario) {
  const std::string dir = prepared_dir(*scenario);
  for (auto _ : state) {
    state.SetIterationTime(std::stod(run_self({"kernel_disk_hit", scenario->name, dir})));
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

void register_all() {
  if (skip_without_device("jit_gpu")) return;
  use_device(0);
  const int reps = repetitions(5);
  const int iterations = quick() ? 2 : 10;
  for (const JitScenario& scenario : jit_scenarios()) {
    const JitScenario* s = &scenario;
    benchmark::RegisterBenchmark(("cujit/module_load/" + s->name).c_str(), cujit_module_load, s)
        ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark(("raw/module_load/" + s->name).c_str(), raw_module_load, s)
        ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    benchmark::RegisterBenchmark(("cujit/e2e_launchable/" + s->name).c_str(), cujit_e2e_launchable, s)
        ->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(reps);
    benchmark::RegisterBenchmark(("raw/e2e_launchable/" + s->name).c_str(), raw_e2e_launchable, s)
        ->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(reps);
    if (!s->lto) {
      benchmark::RegisterBenchmark(("cujit/driver_link/" + s->name).c_str(), cujit_driver_link, s)
          ->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(reps);
      benchmark::RegisterBenchmark(("raw/driver_link/" + s->name).c_str(), raw_driver_link, s)
          ->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(reps);
    }
    benchmark::RegisterBenchmark(("cujit/kernel_build/" + s->name + "/disk_hit_new_process").c_str(),
                                 kernel_disk_hit_new_process, s)
        ->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(reps)->UseManualTime();
  }
}

// A new process: context first (any CUDA program's start-up), then time the build from
// the disk cache to a launchable kernel.
int child(const ChildArguments& arguments) {
  if (arguments.size() != 3 || arguments[0] != "kernel_disk_hit") return 2;
  const std::string& name = arguments[1];
  const std::string& dir = arguments[2];
  use_device(0);
  const JitScenario& scenario = jit_scenario(name);
  const auto start = Clock::now();
  BuildCache cache(cache_config(CacheMode::disk, dir));
  const LinkedKernel linked = cujit_link(scenario, cache, device_arch());
  auto module = Module::shared(linked.link.code, linked.key);
  const Kernel kernel = module->kernel(scenario.kernel);
  const double seconds = seconds_since(start);
  if (linked.source != CacheSource::disk || kernel.handle() == nullptr) return 1;
  std::printf("%.9f\n", seconds);
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  return cujit::bench::run_main(argc, argv, cujit::bench::register_all, cujit::bench::child);
}
