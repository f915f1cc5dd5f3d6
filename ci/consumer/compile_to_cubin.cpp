// Compiles a kernel that includes the installed NRT device header to an sm_90 cubin with
// NVRTC through the installed libcujit, and checks what came out. Exit 0 when it is a cubin
// for sm_90; 1 with the reason otherwise (a cujit::Error prints its component and log).
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "cujit/arch.hpp"
#include "cujit/error.hpp"
#include "cujit/format.hpp"
#include "cujit/program.hpp"

int main() {
  constexpr std::string_view source = R"(
#include "cujit/nrt.cuh"
extern "C" __global__ void scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
)";
  try {
    cujit::CompileOptions options;
    options.arch = cujit::Arch::parse("sm_90");
    options.target = cujit::CompileTarget::cubin;
    options.include_paths.emplace_back(CUJIT_CONSUMER_INCLUDE_DIR);
    const cujit::CompileResult result =
        cujit::Program(std::string(source), "consumer_scale.cu").compile(options);
    const std::string& bytes = result.code.bytes();
    if (cujit::detect_format(bytes) != cujit::Format::cubin ||
        cujit::cubin_sm_number(bytes) != 90) {
      std::fprintf(stderr, "cujit_consumer: %s is not an sm_90 cubin\n",
                   result.code.name().c_str());
      return 1;
    }
    std::printf("cujit_consumer: %s, %zu bytes of sm_90 cubin\n", result.code.name().c_str(),
                bytes.size());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "cujit_consumer: %s\n", error.what());
    return 1;
  }
}
