// The device probe and driver calls on any machine: with no device they answer, or fail
// as typed cuda errors naming the reason; never a crash.
#include <gtest/gtest.h>

#include "cujit/device.hpp"
#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

TEST(DeviceProbe, AnswersWithoutThrowing) {
  const bool present = has_device();
  EXPECT_EQ(no_device_reason().empty(), present) << no_device_reason();
}

TEST(DeviceProbe, DriverCallsWithoutADeviceAreCudaErrors) {
  if (has_device()) GTEST_SKIP() << "a CUDA device is present; this checks the no-device path";
  CUJIT_EXPECT_ERROR(DeviceBuffer(16), ErrorKind::cuda, error,
                     EXPECT_NE(std::string(error.what()).find("no usable CUDA driver"),
                               std::string::npos););
  Linker linker(test::link_options(LinkerBackend::driver, false));
  linker.add_file(test::fixture_path("scale_kernel.ptx"));
  CUJIT_EXPECT_ERROR(linker.link(), ErrorKind::cuda, error, (void)error;);
}

}  // namespace
}  // namespace cujit
