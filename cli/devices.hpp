#pragma once
// The CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies), read through
// libcujit's lazily loaded driver: `cujit info` lists them, `cujit resource-spec` gives
// CTest one entry per device, and a conformance shard records them.

#include <string>
#include <vector>

namespace cujit::cli {

struct DeviceInfo {
  int ordinal = 0;   // as cuDeviceGet takes it, in this process
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string arch;  // "sm_90"; empty when it could not be read
  std::string str() const { return name + (arch.empty() ? "" : " (" + arch + ")"); }
};

// Every device, in ordinal order; empty, with `why_none` saying why (no driver, no device),
// when there is none. Never throws: a device whose name cannot be read keeps the reason as
// its name.
std::vector<DeviceInfo> devices_present(std::string& why_none);

}  // namespace cujit::cli
