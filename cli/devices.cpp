#include "devices.hpp"

#include "cujit/arch.hpp"
#include "cujit/device.hpp"
#include "cujit/error.hpp"

namespace cujit::cli {

std::vector<DeviceInfo> devices_present(std::string& why_none) {
  std::vector<DeviceInfo> devices;
  if (!has_device()) {
    why_none = no_device_reason();
    return devices;
  }
  int count = 0;
  try {
    count = device_count();
  } catch (const Error& error) {
    why_none = error.what();
    return devices;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    DeviceInfo device;
    device.ordinal = ordinal;
    try {
      device.name = device_name(ordinal);
      device.arch = Arch::of_device(ordinal).sm();
    } catch (const Error& error) {
      if (device.name.empty()) device.name = std::string("(cannot be read: ") + error.what() + ")";
    }
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace cujit::cli
