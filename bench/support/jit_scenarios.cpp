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

std::vector<LinkableCode> scenario_inputs(const JitScenario& scenario) {
  std::vector<LinkableCode> inputs{LinkableCode::from_path(resolve(scenario.source))};
  for (const std::string& path : scenario.external) inputs.push_back(LinkableCode::from_path(resolve(path)));
  return inputs;
}

KernelBuilder scenario_builder(const JitScenario& scenario, BuildCache& cache, const Arch& arch) {
  KernelOptions options;
  options.link.arch = arch;
  options.link.lto = scenario.lto;
  options.link.backend = LinkerBackend::nvjitlink;
  options.nrt = scenario.nrt;
  KernelBuilder builder(scenario.kernel, options, cache);
  const std::vector<LinkableCode> inputs = scenario_inputs(scenario);
  builder.source(inputs.front());
  for (std::size_t i = 1; i < inputs.size(); ++i) builder.link(inputs[i]);
  return builder;
}

LinkedKernel cujit_link(const JitScenario& scenario, BuildCache& cache, const Arch& arch) {
  return scenario_builder(scenario, cache, arch).link_cubin();
}

std::vector<RawHeader> raw_headers(const std::vector<Header>& headers) {
  std::vector<RawHeader> out;
  for (const Header& header : headers) out.emplace_back(header.name, header.content);
  return out;
}

std::string raw_link(const JitScenario& scenario, const Arch& arch) {
  // The same NVRTC calls cujit makes (its options, its in-memory headers), then one
  // nvJitLink link: identical work with no cujit code in between; the benchmarks check
  // that the cubins are byte-identical before timing.
  CompileOptions compile;
  compile.arch = arch;
  compile.target = cu_compile_target(LinkerBackend::nvjitlink, scenario.lto);
  compile.headers = nrt::headers();
  const std::vector<RawHeader> headers = raw_headers(compile.headers);
  std::vector<RawInput> inputs;
  auto compile_cu = [&](const std::string& path, const std::string& source, CompileTarget target) {
    CompileOptions options = compile;
    options.target = target;
    inputs.emplace_back(target == CompileTarget::ltoir ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX,
                        raw_nvrtc(source, path, nvrtc_options(options), std::string(to_string(target)), headers));
  };
  // KernelBuilder::source compiles the kernel's own CUDA C++ to PTX even under LTO (its
  // NRT detection scans that PTX), so under LTO only the external inputs are LTO-IR and
  // the kernel's calls into them are not inlined (docs/benchmarks.md).
  compile_cu(scenario.source, read_file(resolve(scenario.source)), CompileTarget::ptx);
  for (const std::string& path : scenario.external) {
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".cu") == 0) {
      compile_cu(path, read_file(resolve(path)), compile.target);
    } else {
      inputs.emplace_back(NVJITLINK_INPUT_LTOIR, read_file(resolve(path)));
    }
  }
  if (scenario.nrt) {
    // The name nrt::library gives it: the name is part of the output.
    compile_cu("cujit_nrt.cu", read_file(std::string(CUJIT_BENCH_DEVICE_DIR) + "/nrt.cu"), compile.target);
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
  const VendorShare share;
  for (auto _ : state) benchmark::DoNotOptimize(link());
  share.finish(state);
}

CacheConfig cache_config(CacheMode mode, const std::string& directory) {
  CacheConfig config;
  config.mode = mode;
  config.directory = directory;
  return config;
}

}  // namespace cujit::bench
