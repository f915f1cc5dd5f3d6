// cujit resource-spec: the spec of this host's GPUs for `ctest --resource-spec-file`
// (ci/gpu.sh), written to --out or standard output; the devices it counted on stderr.
#include "resource_spec.hpp"

#include <iostream>

#include "commands.hpp"
#include "output.hpp"

namespace cujit::cli {

std::string resource_spec_json(const std::vector<DeviceInfo>& devices, int slots_per_gpu) {
  if (slots_per_gpu < 1 || slots_per_gpu > max_slots_per_gpu) {
    throw CliError("resource-spec: --slots-per-gpu " + std::to_string(slots_per_gpu) + ": expected 1 to " +
                   std::to_string(max_slots_per_gpu));
  }
  std::string gpus;
  for (const DeviceInfo& device : devices) {
    gpus += std::string(gpus.empty() ? "" : ",\n") + "        {\"id\": \"" + std::to_string(device.ordinal) +
            "\", \"slots\": " + std::to_string(slots_per_gpu) + "}";
  }
  return "{\n  \"version\": {\"major\": 1, \"minor\": 0},\n  \"local\": [\n    {\n      \"gpus\": [" +
         (gpus.empty() ? std::string() : "\n" + gpus + "\n      ") + "]\n    }\n  ]\n}\n";
}

int resource_spec(const ResourceSpecOptions& options) {
  std::string why_none;
  const std::vector<DeviceInfo> devices = devices_present(why_none);
  const std::string spec = resource_spec_json(devices, options.slots_per_gpu);
  if (devices.empty()) {
    std::cerr << "cujit resource-spec: no CUDA device (" << why_none
              << "): the spec has no GPUs; run the gpu tests without it to see each one's reason\n";
  }
  for (const DeviceInfo& device : devices) {
    std::cerr << "cujit resource-spec: gpu " << device.ordinal << ": " << device.str() << ", "
              << options.slots_per_gpu << " slots\n";
  }
  if (options.out.empty()) {
    std::cout << spec;
  } else {
    write_file(options.out, spec);
  }
  return exit_ok;
}

}  // namespace cujit::cli
