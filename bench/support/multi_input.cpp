#include "support/multi_input.hpp"

#include <nvJitLink.h>

#include "cujit/program.hpp"
#include "cujit/toolkit.hpp"
#include "support/raw_jit.hpp"

namespace cujit::bench {

std::vector<LinkableCode> multi_input_sources(int k, int revised, long long revision) {
  std::string kernel;
  std::string sum = "0.0f";
  for (int i = 0; i < k; ++i) {
    kernel += "extern \"C\" __device__ float multi_fn" + std::to_string(i) + "(float);\n";
    sum += " + multi_fn" + std::to_string(i) + "(x)";
  }
  kernel += "extern \"C\" __global__ void multi_kernel(float* p) {\n  const float x = p[threadIdx.x];\n  p[threadIdx.x] = " +
            sum + ";\n}\n";
  std::vector<LinkableCode> sources{LinkableCode::cuda_source(kernel, "multi_kernel.cu")};
  for (int i = 0; i < k; ++i) {
    const std::string n = std::to_string(i);
    // Each input instantiates CUB's block reduction for a block size of its own: most of
    // its compile is NVRTC's front end over CUB's headers, as in the builds of numba-cuda's
    // and cuda.compute's users. The revision is a constant in the code, so a new revision
    // is a new compile and a new link, not only new source bytes.
    std::string source = "#define REVISION " + std::to_string(i == revised ? revision : 0) + "\n";
    source += "#include <cub/block/block_reduce.cuh>\n";
    source += "extern \"C\" __device__ float multi_fn" + n + "(float x) {\n"
              "  using Reduce = cub::BlockReduce<float, " + std::to_string(64 * (i + 1)) + ">;\n"
              "  __shared__ typename Reduce::TempStorage temp;\n"
              "  return Reduce(temp).Sum(x) + float(REVISION) * 1.0e-30f;\n}\n";
    sources.push_back(LinkableCode::cuda_source(source, "multi_fn" + n + ".cu"));
  }
  return sources;
}

LinkOptions multi_input_options(const Arch& arch) {
  LinkOptions options;
  options.arch = arch;
  options.backend = LinkerBackend::nvjitlink;
  options.compile.include_paths = {toolkit::cccl_dir().string(), toolkit::include_dir().string()};
  options.compile.options = {"-std=c++17"};
  return options;
}

std::string raw_multi_input_link(const std::vector<LinkableCode>& sources, const LinkOptions& options) {
  CompileOptions compile = options.compile;
  compile.arch = options.arch;
  compile.target = cu_compile_target(LinkerBackend::nvjitlink, options.lto);
  const std::vector<std::string> flags = nvrtc_options(compile);
  const bool ltoir = compile.target == CompileTarget::ltoir;
  std::vector<RawInput> inputs;
  for (const LinkableCode& source : sources) {
    inputs.emplace_back(ltoir ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX,
                        raw_nvrtc(source.bytes(), source.name(), flags, std::string(to_string(compile.target))));
  }
  std::vector<std::string> link{"-arch=" + options.arch.sm()};
  if (options.lto) link.push_back("-lto");
  return raw_nvjitlink(inputs, link);
}

}  // namespace cujit::bench
