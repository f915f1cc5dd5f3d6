#pragma once
// Which GPU a conformance process uses. Under `ctest --resource-spec-file` (ci/gpu.sh) CTest
// allots each GPU test a slot of one GPU and says which in CTEST_RESOURCE_GROUP_0_GPUS
// ("id:2,slots:1"); the id is an ordinal of the devices the host shows (cujit
// resource-spec counts them through the driver). The test process turns it into
// CUDA_VISIBLE_DEVICES before the driver initialises, so that device 0, which every test
// uses, is the allotted GPU: one code path for one GPU and for eight.

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cujit::test {

// A variable's value, or nullopt when it is unset: the real environment, or a fake one.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string&)>;

struct DeviceAllotment {
  std::vector<int> ids;          // the GPUs CTest allotted, as ids of the resource spec
  std::string visible_devices;   // the CUDA_VISIBLE_DEVICES that shows exactly those, in order
  std::string source;            // "CTEST_RESOURCE_GROUP_0_GPUS=id:2,slots:1", for the log
};

// nullopt when the process was given no resource group (not run by ctest with a spec).
// A malformed or inconsistent CTEST_RESOURCE_GROUP_* value, or an id beyond an inherited
// CUDA_VISIBLE_DEVICES, is Error(usage) naming the variable and its value: never a silent
// device 0.
std::optional<DeviceAllotment> device_allotment(const EnvironmentLookup& lookup);

// Reads this process's environment and sets CUDA_VISIBLE_DEVICES from the allotment;
// says so on stderr. Call first thing in main, before anything can initialise the driver.
// Throws what device_allotment throws.
void apply_device_allotment();

// Prints once per process, on stderr, which device this process's GPU tests run on:
// "cujit test: device 0: NAME (sm_XX), GPU 2 of the host (from CTEST_RESOURCE_GROUP_0_GPUS=...)".
// For a device that is present; never throws.
void announce_device() noexcept;

}  // namespace cujit::test
