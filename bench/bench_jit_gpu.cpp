// JIT latency that needs a GPU: module load, the driver linker, end to end from source to
// a launchable kernel, and a disk-cache hit to a launchable kernel in a new process, each
// next to the raw floor (NVRTC + nvJitLink + cuModuleLoadData, cuLink*, written directly
// against the APIs). Truly cold as in bench_jit (fresh programs, no -pch, cache off).
#include <cuda.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "cujit/nrt.hpp"
#include "support/bench_main.hpp"
#include "support/jit_scenarios.hpp"
#include "support/paired.hpp"

namespace cujit::bench {
namespace {

Arch device_arch() { return Arch::of_device(0); }

// What a loaded kernel is, as both sides of a pair see it: the equality check of a pair
// whose output is a function handle (handles differ; what they stand for must not).
std::string function_summary(CUfunction function) {
  std::string summary;
  for (const auto& [name, attribute] : {std::pair{"regs", CU_FUNC_ATTRIBUTE_NUM_REGS},
                                        std::pair{"threads", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
                                        std::pair{"shared", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES},
                                        std::pair{"local", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES}}) {
    int value = -1;
    cuFuncGetAttribute(&value, attribute, function);
    summary += std::string(name) + "=" + std::to_string(value) + ";";
  }
  return summary;
}

// The linked code as a link returns it: what a user hands to Module::load.
LinkableCode cujit_cubin(const JitScenario& scenario) {
  BuildCache off(cache_config(CacheMode::off));
  return cujit_link(scenario, off, device_arch()).link.code;
}

// Module::load takes its code by value: the timed side copies the linked code into it (as
// a caller that keeps its LinkableCode does) but does not build it from bytes again, whose
// format checks belong to LinkableCode, not to the load (they ran once, in the link).
std::string cujit_load(LinkableCode code, const JitScenario& scenario) {
  auto module = Module::load(std::move(code));
  return function_summary(static_cast<CUfunction>(module->kernel(scenario.kernel).handle()));
}

// The raw floor of Module::load + Module::kernel: the same driver calls with the same
// options (JIT log buffers, the binary preserved, the library loaded into the context,
// the kernel's function in this context), without cujit's checks or its parameter table.
// `kept`: where to hand the loaded library instead of unloading it (a child that exits).
std::string raw_load(const std::string& cubin, const std::string& kernel_name, CUlibrary* kept = nullptr) {
  constexpr std::size_t log_capacity = 1 << 14;
  std::string info(log_capacity, '\0');
  std::string error(log_capacity, '\0');
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {info.data(), reinterpret_cast<void*>(std::uintptr_t{log_capacity}), error.data(),
                    reinterpret_cast<void*>(std::uintptr_t{log_capacity})};
  CUlibraryOption library_options[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
  void* library_values[] = {reinterpret_cast<void*>(std::uintptr_t{1})};
  CUlibrary library = nullptr;
  CUmodule module = nullptr;
  CUkernel kernel = nullptr;
  CUfunction function = nullptr;
  std::string summary = "raw load failed";
  if (cuLibraryLoadData(&library, cubin.data(), options, values, 4, library_options, library_values, 1) ==
          CUDA_SUCCESS &&
      cuLibraryGetModule(&module, library) == CUDA_SUCCESS &&
      cuLibraryGetKernel(&kernel, library, kernel_name.c_str()) == CUDA_SUCCESS &&
      cuKernelGetFunction(&function, kernel) == CUDA_SUCCESS) {
    summary = function_summary(function);
  }
  if (kept != nullptr) {
    *kept = library;
  } else if (library != nullptr) {
    cuLibraryUnload(library);
  }
  return summary;
}

void cujit_module_load(benchmark::State& state, const JitScenario* scenario) {
  const LinkableCode cubin = cujit_cubin(*scenario);
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(cujit_load(cubin, *scenario));
  share.finish(state);
}

Pair module_load_pair(const JitScenario& scenario) {
  const LinkableCode cubin = cujit_cubin(scenario);
  return Pair{[cubin, &scenario] { return cujit_load(cubin, scenario); },
              [cubin, &scenario] { return raw_load(cubin.bytes(), scenario.kernel); }};
}

void cujit_e2e_launchable(benchmark::State& state, const JitScenario* scenario) {
  auto build = [&] { return cujit_load(cujit_cubin(*scenario), *scenario); };
  (void)build();
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(build());
  share.finish(state);
}

Pair e2e_launchable_pair(const JitScenario& scenario) {
  return Pair{[&scenario] { return cujit_load(cujit_cubin(scenario), scenario); },
              [&scenario] { return raw_load(raw_link(scenario, device_arch()), scenario.kernel); }};
}

// The driver linker over PTX (non-LTO scenarios): cujit's backend and raw cuLink*.
std::string cujit_driver_link(const std::vector<LinkableCode>& inputs) {
  LinkOptions options;
  options.arch = device_arch();
  options.backend = LinkerBackend::driver;
  Linker linker(options);
  for (const LinkableCode& code : inputs) linker.add(code);
  return linker.link().code.bytes();
}

void cujit_driver_link_bench(benchmark::State& state, const JitScenario* scenario) {
  const std::vector<LinkableCode> inputs = compiled_inputs(*scenario, device_arch(), LinkerBackend::driver);
  (void)cujit_driver_link(inputs);
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(cujit_driver_link(inputs));
  share.finish(state);
}

// cuLink* with the options cujit's driver session passes by default: both log buffers
// (allocated, not zero-filled, as cujit's) and the target; verbose logging only when a link
// asks for it (LinkFlags::verbose), so not here.
std::string raw_driver_link(const std::vector<LinkableCode>& inputs) {
  constexpr std::size_t log_capacity = 1 << 16;
  const std::unique_ptr<char[]> info(new char[log_capacity]);
  const std::unique_ptr<char[]> error(new char[log_capacity]);
  info[0] = error[0] = '\0';
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_TARGET};
  void* values[] = {info.get(), reinterpret_cast<void*>(std::uintptr_t{log_capacity}), error.get(),
                    reinterpret_cast<void*>(std::uintptr_t{log_capacity}),
                    reinterpret_cast<void*>(static_cast<std::uintptr_t>(device_arch().number()))};
  CUlinkState link_state = nullptr;
  std::string out;
  if (cuLinkCreate(5, options, values, &link_state) != CUDA_SUCCESS) return "raw cuLinkCreate failed";
  bool ok = true;
  for (const LinkableCode& code : inputs) {
    ok = ok && cuLinkAddData(link_state, CU_JIT_INPUT_PTX, const_cast<char*>(code.bytes().c_str()),
                             code.bytes().size() + 1, code.name().c_str(), 0, nullptr, nullptr) == CUDA_SUCCESS;
  }
  void* cubin = nullptr;
  std::size_t size = 0;
  if (ok && cuLinkComplete(link_state, &cubin, &size) == CUDA_SUCCESS) out.assign(static_cast<const char*>(cubin), size);
  cuLinkDestroy(link_state);
  return out;
}

Pair driver_link_pair(const JitScenario& scenario) {
  const auto inputs = std::make_shared<std::vector<LinkableCode>>(
      compiled_inputs(scenario, device_arch(), LinkerBackend::driver));
  return Pair{[inputs] { return cujit_driver_link(*inputs); }, [inputs] { return raw_driver_link(*inputs); }};
}

std::string prepared_dir(const JitScenario& scenario) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("cujit-bench-gpu-cache-" + std::to_string(::getpid()) + "-" + scenario.name);
  BuildCache cache(cache_config(CacheMode::disk, dir));
  (void)cujit_link(scenario, cache, device_arch());
  return dir;
}

// Each iteration's time is the child's, lookup to launchable; the counter lookup_s is the
// part before the module load (the cache lookup and decode: CPU work), which says where the
// time went.
void kernel_disk_hit_new_process(benchmark::State& state, const JitScenario* scenario) {
  const std::string dir = prepared_dir(*scenario);
  double lookup_s = 0;
  for (auto _ : state) {
    std::istringstream reply(run_self({"kernel_disk_hit", scenario->name, dir}));
    double total = 0, lookup = 0;
    reply >> total >> lookup;
    state.SetIterationTime(total);
    lookup_s += lookup;
  }
  state.counters["lookup_s"] = lookup_s / static_cast<double>(state.iterations());
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

// The floor of the load part of a new-process disk hit: a new process (context first, as
// above) that reads the very cubin cujit's cache holds from a file and makes its kernel
// launchable with the raw calls raw_load makes. What the driver costs the first time a
// process loads this code, which no JIT layer can take away.
void raw_load_new_process(benchmark::State& state, const JitScenario* scenario) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("cujit-bench-gpu-raw-" + std::to_string(::getpid()) + "-" + scenario->name);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/linked.cubin";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const LinkableCode cubin = cujit_cubin(*scenario);
    out.write(cubin.bytes().data(), static_cast<std::streamsize>(cubin.bytes().size()));
  }
  for (auto _ : state) state.SetIterationTime(std::stod(run_self({"raw_load", scenario->kernel, path})));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

void register_all() {
  if (skip_without_device("jit_gpu")) return;
  use_device(0);
  const int reps = repetitions(9);
  const int iterations = quick() ? 2 : 5;
  for (const JitScenario& scenario : jit_scenarios()) {
    const JitScenario* s = &scenario;
    benchmark::RegisterBenchmark(("cujit/module_load/" + s->name).c_str(), cujit_module_load, s)
        ->Unit(benchmark::kMicrosecond)->Repetitions(reps);
    register_pair("module_load/" + s->name, [s] { return module_load_pair(*s); });
    benchmark::RegisterBenchmark(("cujit/e2e_launchable/" + s->name).c_str(), cujit_e2e_launchable, s)
        ->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(reps);
    register_pair("e2e_launchable/" + s->name, [s] { return e2e_launchable_pair(*s); });
    if (!s->lto) {
      benchmark::RegisterBenchmark(("cujit/driver_link/" + s->name).c_str(), cujit_driver_link_bench, s)
          ->Unit(benchmark::kMillisecond)->Iterations(iterations)->Repetitions(reps);
      register_pair("driver_link/" + s->name, [s] { return driver_link_pair(*s); });
    }
    benchmark::RegisterBenchmark(("cujit/kernel_build/" + s->name + "/disk_hit_new_process").c_str(),
                                 kernel_disk_hit_new_process, s)
        ->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(reps)->UseManualTime();
    benchmark::RegisterBenchmark(("raw/module_load_new_process/" + s->name).c_str(), raw_load_new_process, s)
        ->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(reps)->UseManualTime();
  }
}

// A new process: context first (any CUDA program's start-up), then time the build from
// the disk cache to a launchable kernel. Prints both seconds: to launchable, and to the
// LinkedKernel (before the module load).
int raw_load_child(const std::string& kernel_name, const std::string& path) {
  use_device(0);
  const auto start = Clock::now();
  std::ifstream in(path, std::ios::binary | std::ios::ate);  // one read, sized first
  std::string cubin(static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  in.read(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  CUlibrary library = nullptr;  // left loaded, as the cujit child leaves its module
  const std::string summary = raw_load(cubin, kernel_name, &library);
  const double seconds = seconds_since(start);
  if (cubin.empty() || summary == "raw load failed") return 1;
  std::printf("%.9f\n", seconds);
  return 0;
}

int child(const ChildArguments& arguments) {
  if (arguments.size() == 3 && arguments[0] == "raw_load") return raw_load_child(arguments[1], arguments[2]);
  if (arguments.size() != 3 || arguments[0] != "kernel_disk_hit") return 2;
  const std::string& name = arguments[1];
  const std::string& dir = arguments[2];
  use_device(0);
  const JitScenario& scenario = jit_scenario(name);
  const auto start = Clock::now();
  BuildCache cache(cache_config(CacheMode::disk, dir));
  const std::shared_ptr<const LinkedKernel> linked = scenario_builder(scenario, cache, device_arch()).link_shared();
  const double lookup = seconds_since(start);
  auto module = Module::shared(linked->link.code, linked->key);
  const Kernel kernel = module->kernel(scenario.kernel);
  const double seconds = seconds_since(start);
  if (linked->source != CacheSource::disk || kernel.handle() == nullptr) return 1;
  std::printf("%.9f %.9f\n", seconds, lookup);
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  return cujit::bench::run_main(argc, argv, cujit::bench::register_all, cujit::bench::child);
}
