#include "support/jit_scenarios.hpp"

#include <nvJitLink.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "cujit/nrt.hpp"
#include "support/bench_main.hpp"
#include "support/raw_jit.hpp"

namespace cujit::bench {
namespace {

std::string resolve(const std::string& path) {
  if (path.rfind("fixtures:", 0) == 0) return fixture_dir() + "/" + path.substr(9);
  return scenario_dir() + "/" + path;
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const std::vector<JitScenario>& jit_scenarios() {
  static const std::vector<JitScenario> scenarios = {
      {"tiny", "scale_kernel", "fixtures/scale_kernel.cu", {}, false, false},
      {"external_cu", "mixed_kernel", "fixtures/mixed_kernel.cu",
       {"fixtures/dev_add.cu", "fixtures/dev_mul.cu"}, false, false},
      {"ltoir_operator", "mixed_kernel", "fixtures/mixed_kernel.cu",
       {"fixtures:dev_add.ltoir", "fixtures:dev_mul.ltoir"}, true, false},
      {"nrt", "nrt_direct_kernel", "fixtures/nrt/nrt_direct_kernel.cu", {}, false, true},
  };
  return scenarios;
}

const JitScenario& jit_scenario(const std::string& name) {
  for (const JitScenario& scenario : jit_scenarios()) {
    if (scenario.name == name) return scenario;
  }
  throw std::runtime_error("no JIT scenario " + name);
}

LinkedKernel cujit_link(const JitScenario& scenario, BuildCache& cache, const Arch& arch) {
  KernelOptions options;
  options.link.arch = arch;
  options.link.lto = scenario.lto;
  options.link.backend = LinkerBackend::nvjitlink;
  options.nrt = scenario.nrt;
  KernelBuilder builder(scenario.kernel, options, cache);
  builder.source(LinkableCode::from_path(resolve(scenario.source)));
  for (const std::string& path : scenario.external) builder.link(LinkableCode::from_path(resolve(path)));
  return builder.link_cubin();
}

std::string raw_link(const JitScenario& scenario, const Arch& arch) {
  const std::string target = scenario.lto ? "ltoir" : "ptx";
  std::vector<std::string> nvrtc{"-arch=" + arch.compute(), "-rdc=true"};
  if (scenario.lto) nvrtc.push_back("-dlto");
  const int code_type = scenario.lto ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX;
  std::vector<RawInput> inputs;
  auto compile = [&](const std::string& path, const std::string& source) {
    // The NRT header is what the kernel includes; the raw floor gets it as an include dir.
    std::vector<std::string> options = nvrtc;
    options.push_back("-I" + std::string(CUJIT_BENCH_DEVICE_DIR));
    inputs.emplace_back(code_type, raw_nvrtc(source, path, options, target));
  };
  compile(scenario.source, read_file(resolve(scenario.source)));
  for (const std::string& path : scenario.external) {
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".cu") == 0) {
      compile(path, read_file(resolve(path)));
    } else {
      inputs.emplace_back(NVJITLINK_INPUT_LTOIR, read_file(resolve(path)));
    }
  }
  if (scenario.nrt) {
    std::vector<std::string> options = nvrtc;
    options.push_back("-I" + std::string(CUJIT_BENCH_DEVICE_DIR));
    inputs.emplace_back(code_type, raw_nvrtc(read_file(std::string(CUJIT_BENCH_DEVICE_DIR) + "/nrt.cu"),
                                             "nrt.cu", options, target));
  }
  std::vector<std::string> link{"-arch=" + arch.sm()};
  if (scenario.lto) link.push_back("-lto");
  return raw_nvjitlink(inputs, link);
}

std::vector<LinkableCode> compiled_inputs(const JitScenario& scenario, const Arch& arch, LinkerBackend backend) {
  LinkOptions options;
  options.arch = arch;
  options.lto = scenario.lto;
  options.compile.headers = nrt::headers();
  // Compiled afresh, never from a cache: these inputs feed timed links.
  std::vector<LinkableCode> inputs{
      compile_for_link(LinkableCode::from_path(resolve(scenario.source)), options, backend, BuildCache::disabled())};
  for (const std::string& path : scenario.external) {
    inputs.push_back(compile_for_link(LinkableCode::from_path(resolve(path)), options, backend, BuildCache::disabled()));
  }
  if (scenario.nrt) {
    BuildCache off(cache_config(CacheMode::off));
    inputs.push_back(nrt::library(arch, cu_compile_target(backend, scenario.lto), {}, off));
  }
  return inputs;
}

void time_cujit_link(benchmark::State& state, const std::vector<LinkableCode>& inputs, const LinkOptions& options) {
  auto link = [&] {
    Linker linker(options);
    for (const LinkableCode& code : inputs) linker.add(code);
    return linker.link();
  };
  (void)link();
  for (auto _ : state) benchmark::DoNotOptimize(link());
}

CacheConfig cache_config(CacheMode mode, const std::string& directory) {
  CacheConfig config;
  config.mode = mode;
  config.directory = directory;
  return config;
}

}  // namespace cujit::bench
