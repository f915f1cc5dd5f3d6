// Module and Kernel on a GPU: loading, parameter info, checked launches, lifetime; and the
// device probe everywhere.
#include <gtest/gtest.h>

#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

Bytes scale_cubin() {
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add_file(test::fixture_path("scale_kernel.ptx"));
  return linker.link().code.bytes();
}

TEST(GpuModule, ReadsParameterInfo) {
  CUJIT_REQUIRE_DEVICE();
  auto module = Module::load(LinkableCode::cubin(scale_cubin(), "scale_kernel"));
  const Kernel kernel = module->kernel("scale_kernel");
  ASSERT_EQ(kernel.params().size(), 2u);
  EXPECT_EQ(kernel.params()[0].size, sizeof(void*));
  EXPECT_EQ(kernel.params()[1].size, sizeof(int));
  EXPECT_EQ(kernel.params()[1].offset, 8u);
}

TEST(GpuModule, LaunchChecksArgumentCountAndSizes) {
  CUJIT_REQUIRE_DEVICE();
  auto module = Module::load(LinkableCode::cubin(scale_cubin(), "scale_kernel"));
  const Kernel kernel = module->kernel("scale_kernel");
  DeviceBuffer out(32 * sizeof(int));
  LaunchConfig config;
  config.block.x = 32;
  CUJIT_EXPECT_ERROR(kernel(config, out.ptr()), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("takes 2 parameter(s) but 1"),
                               std::string::npos)
                         << error.what(););
  const double wrong_size = 1.0;
  CUJIT_EXPECT_ERROR(kernel(config, out.ptr(), wrong_size), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("parameter 1 is 4 bytes"),
                               std::string::npos)
                         << error.what(););
  kernel(config, out.ptr(), 5);
  EXPECT_EQ(out.to_vector<int>(32)[31], 15 + 31);
}

TEST(GpuModule, KernelKeepsItsModuleAlive) {
  CUJIT_REQUIRE_DEVICE();
  std::optional<Kernel> kernel;
  {
    auto module = Module::load(LinkableCode::cubin(scale_cubin(), "scale_kernel"));
    kernel.emplace(module->kernel("scale_kernel"));
  }
  DeviceBuffer out(sizeof(int));
  LaunchConfig config;
  (*kernel)(config, out.ptr(), 2);
  EXPECT_EQ(out.to_vector<int>(1)[0], 6);
}

TEST(GpuModule, MissingKernelNamesWhatIsThere) {
  CUJIT_REQUIRE_DEVICE();
  auto module = Module::load(LinkableCode::cubin(scale_cubin(), "scale_kernel"));
  CUJIT_EXPECT_ERROR((void)module->kernel("no_such_kernel"), ErrorKind::cuda, error,
                     const std::string what = error.what();
                     EXPECT_NE(what.find("no_such_kernel"), std::string::npos) << what;
                     EXPECT_NE(what.find("scale_kernel"), std::string::npos) << what;);
}

TEST(GpuModule, ACubinTheDeviceCannotRunIsACudaErrorWithTheName) {
  CUJIT_REQUIRE_DEVICE();
  // Structurally sound, but SASS for sm_80 (the test device is sm_90): the driver refuses.
  const LinkableCode sm80 = LinkableCode::from_path(test::fixture_path("scale_kernel_sm80.cubin"));
  CUJIT_EXPECT_ERROR((void)Module::load(sm80), ErrorKind::cuda, error,
                     EXPECT_NE(std::string(error.what()).find("scale_kernel_sm80.cubin"),
                               std::string::npos);
                     // The driver refuses at load, or, loading lazily, when the library
                     // is loaded into the context, which Module::load does at once.
                     EXPECT_EQ(error.component().rfind("cuLibrary", 0), 0u) << error.component(););
}

TEST(Module, LoadsOnlyWhatTheDriverRuns) {
  // Needs no device: the format is refused before the driver is asked.
  const LinkableCode ltoir = LinkableCode::from_path(test::fixture_path("scale_kernel.ltoir"));
  CUJIT_EXPECT_ERROR((void)Module::load(ltoir), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("scale_kernel.ltoir"), std::string::npos);
                     EXPECT_NE(std::string(error.what()).find("link other formats first"),
                               std::string::npos););
}

TEST(GpuModule, StreamLaunch) {
  CUJIT_REQUIRE_DEVICE();
  auto module = Module::load(LinkableCode::cubin(scale_cubin(), "scale_kernel"));
  const Kernel kernel = module->kernel("scale_kernel");
  Stream stream;
  DeviceBuffer out(8 * sizeof(int));
  LaunchConfig config;
  config.block.x = 8;
  config.stream = stream.handle();
  kernel(config, out.ptr(), 1);
  stream.synchronize();
  EXPECT_EQ(out.to_vector<int>(8)[7], 3 + 7);
}

}  // namespace
}  // namespace cujit
