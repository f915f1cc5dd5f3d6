// CUDA C++ kernels calling C-ABI and Numba-ABI device functions, ours and numba-cuda's.
#include <gtest/gtest.h>

#include "cujit/abi.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::scenario_path;

abi::DeviceFunction adder(const std::string& signature) {
  abi::DeviceFunction fn;
  fn.name = "add";
  fn.signature = Signature::parse(signature);
  fn.param_names = {"x", "y"};
  fn.body = "return x + y;";
  return fn;
}

abi::CompileOptions abi_options(const std::string& which, const std::string& output,
                                const std::string& arch = "sm_90") {
  abi::CompileOptions o;
  o.abi = abi::parse_abi(which);
  o.output = parse_compile_target(output).value();
  o.arch = Arch::parse(arch);
  return o;
}

// Our three functions, compiled separately: their internal body helpers share a name,
// which must not clash when they are linked together.
std::vector<LinkableCode> cujit_functions(const std::string& output) {
  abi::CompileOptions named = abi_options("c", output);
  named.abi_name = "add_f32";
  return {abi::compile(adder("int32(int32, int32)"), abi_options("c", output)).code,
          abi::compile(adder("float32(float32, float32)"), named).code,
          abi::compile(adder("int32(int32, int32)"), abi_options("numba", output)).code};
}

struct Results {
  std::vector<int> ints;
  std::vector<float> floats;
  std::vector<int> status;
};

constexpr unsigned threads = 64;

Results run(const Bytes& cubin, const std::string& kernel_name, int a, int b) {
  auto module = Module::load(LinkableCode::cubin(cubin, kernel_name));
  const Kernel kernel = module->kernel(kernel_name);
  DeviceBuffer ints(3 * threads * sizeof(int)), floats(threads * sizeof(float)),
      status(threads * sizeof(int));
  ints.fill_bytes(0xCD);
  floats.fill_bytes(0xCD);
  status.fill_bytes(0xCD);
  LaunchConfig config;
  config.block.x = threads;
  kernel(config, ints.ptr(), floats.ptr(), status.ptr(), a, b);
  return {ints.to_vector<int>(3 * threads), floats.to_vector<float>(threads),
          status.to_vector<int>(threads)};
}

struct Route {
  LinkerBackend backend;
  bool lto;
};

void PrintTo(const Route& route, std::ostream* out) {
  *out << to_string(route.backend) << (route.lto ? " lto" : "");
}

class GpuAbiCalls : public ::testing::TestWithParam<Route> {
 protected:
  void SetUp() override { CUJIT_REQUIRE_DEVICE(); }
};

TEST_P(GpuAbiCalls, CudaKernelCallsCujitFunctions) {
  const Route route = GetParam();
  Linker linker(test::link_options(route.backend, route.lto));
  linker.add_file(scenario_path("fixtures/abi/call_cujit_abi.cu"));
  for (LinkableCode& code : cujit_functions(route.lto ? "ltoir" : "ptx")) linker.add(std::move(code));
  const int a = 11, b = 3;
  const Results r = run(linker.link().code.bytes(), "call_cujit_abi", a, b);
  for (unsigned t = 0; t < threads; ++t) {
    const int i = static_cast<int>(t);
    EXPECT_EQ(r.ints[t], a + i * b) << t;
    EXPECT_FLOAT_EQ(r.floats[t], 0.5f * static_cast<float>(t) + 0.25f) << t;
    EXPECT_EQ(r.status[t], 0) << "numba-ABI status, thread " << t;
    EXPECT_EQ(r.ints[64 + t], a * i + b) << "numba-ABI result, thread " << t;
  }
}

TEST_P(GpuAbiCalls, CudaKernelCallsNumbasOwnOutput) {
  const Route route = GetParam();
  if (!route.lto) {
    // min_i32_c_abi.ltoir links only with LTO: with LTO off it is refused, as documented.
    Linker linker(test::link_options(route.backend, false, "sm_90a"));
    CUJIT_EXPECT_ERROR(linker.add_file(scenario_path("fixtures/numba/min_i32_c_abi.ltoir")),
                       ErrorKind::unsupported, error, (void)error;);
  }
  Linker linker(test::link_options(route.backend, route.lto, "sm_90a"));
  linker.add_file(scenario_path("fixtures/abi/call_numba_abi.cu"));
  linker.add_file(scenario_path("fixtures/numba/add_i32_c_abi.ptx"));
  linker.add_file(scenario_path("fixtures/numba/add_f32_c_abi_named.ptx"));
  linker.add_file(scenario_path("fixtures/numba/add_i32_numba_abi.ptx"));
  // min_i32 as LTO-IR where it can be linked, else numba's PTX of the same function.
  linker.add_file(scenario_path(route.lto ? "fixtures/numba/min_i32_c_abi.ltoir"
                                          : "fixtures/numba/min_i32_c_abi.ptx"));
  const int a = 20, b = 5;
  const Results r = run(linker.link().code.bytes(), "call_numba_abi", a, b);
  for (unsigned t = 0; t < threads; ++t) {
    const int i = static_cast<int>(t);
    EXPECT_EQ(r.ints[t], a + i * b) << t;
    EXPECT_FLOAT_EQ(r.floats[t], 0.5f * static_cast<float>(t) + 0.25f) << t;
    EXPECT_EQ(r.ints[64 + t], std::min(a - i, b)) << t;
    EXPECT_EQ(r.status[t], 0) << t;
    EXPECT_EQ(r.ints[128 + t], a * i + b) << t;
  }
}

std::vector<Route> routes() {
  std::vector<Route> out{{LinkerBackend::nvjitlink, false}, {LinkerBackend::nvjitlink, true}};
  out.push_back({LinkerBackend::driver, false});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Routes, GpuAbiCalls, ::testing::ValuesIn(routes()),
                         [](const auto& route) {
                           return std::string(to_string(route.param.backend)) +
                                  (route.param.lto ? "_lto" : "_ptx");
                         });

TEST(AbiLinking, SeparatelyCompiledFunctionsLinkWithoutClashes) {
  for (bool lto : {false, true}) {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, lto));
    linker.add_file(scenario_path("fixtures/abi/call_cujit_abi.cu"));
    for (LinkableCode& code : cujit_functions(lto ? "ltoir" : "ptx")) linker.add(std::move(code));
    EXPECT_EQ(detect_format(linker.link().code.bytes()), Format::cubin) << "lto " << lto;
  }
}

TEST(GpuAbiDevice, CompileForTheCurrentDevice) {
  CUJIT_REQUIRE_DEVICE();
  const auto compiled = abi::compile_for_current_device(adder("int32(int32, int32)"),
                                                        abi_options("c", "ptx"));
  EXPECT_NE(compiled.code.bytes().find(".target " + Arch::of_device(0).sm()), std::string::npos);
}

}  // namespace
}  // namespace cujit
