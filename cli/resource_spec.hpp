#pragma once
// The CTest resource spec of this host's GPUs (`ctest --resource-spec-file`): one `gpus`
// resource per device, its id the device's ordinal, each with a number of slots. Every GPU
// test takes one slot (conformance/CMakeLists.txt), so `slots_per_gpu` is how many GPU
// tests share one GPU at once: 4 keeps one GPU as busy as the lane's former `ctest -j4`,
// and a 4-GPU host runs 16 at once, 4 on each.

#include <string>
#include <vector>

#include "devices.hpp"

namespace cujit::cli {

inline constexpr int default_slots_per_gpu = 4;
inline constexpr int max_slots_per_gpu = 64;

// The spec (CTest's format, version 1.0), one GPU per line. No devices: a spec with no
// GPUs, under which ctest would not run the GPU tests at all (ci/gpu.sh then runs them
// without a spec, so that each says why it cannot run). Throws CliError for
// slots_per_gpu outside 1..max_slots_per_gpu.
std::string resource_spec_json(const std::vector<DeviceInfo>& devices, int slots_per_gpu);

}  // namespace cujit::cli
