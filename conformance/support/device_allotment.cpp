#include "support/device_allotment.hpp"

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>

#include "cujit/arch.hpp"
#include "cujit/device.hpp"
#include "cujit/error.hpp"

namespace cujit::test {
namespace {

constexpr const char* component = "conformance device allotment";

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// A decimal of at most 6 digits (no sign, no spaces), or -1.
int small_decimal(const std::string& text) {
  if (text.empty() || text.size() > 6) return -1;
  int value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

[[noreturn]] void malformed(const std::string& name, const std::string& value, const std::string& why) {
  throw Error(ErrorKind::usage, component, name + "='" + value + "': " + why);
}

// "id:2,slots:1" -> 2. CTest writes exactly these two fields for each allotted resource.
int allotted_id(const std::string& name, const std::string& value, const std::string& allotment) {
  int id = -1, slots = -1;
  for (const std::string& field : split(allotment, ',')) {
    const std::size_t colon = field.find(':');
    const std::string key = field.substr(0, colon);
    const int number = colon == std::string::npos ? -1 : small_decimal(field.substr(colon + 1));
    if (number < 0 || (key != "id" && key != "slots")) {
      malformed(name, value, "'" + field + "' is not id:<n> or slots:<n> (expected id:<n>,slots:<n>)");
    }
    int& target = key == "id" ? id : slots;
    if (target >= 0) malformed(name, value, "'" + key + "' given twice in '" + allotment + "'");
    target = number;
  }
  if (id < 0 || slots < 1) malformed(name, value, "'" + allotment + "' lacks id:<n> or slots:<n> with n >= 1");
  return id;
}

}  // namespace

std::optional<DeviceAllotment> device_allotment(const EnvironmentLookup& lookup) {
  const std::optional<std::string> count = lookup("CTEST_RESOURCE_GROUP_COUNT");
  if (!count || count->empty()) return std::nullopt;
  if (*count != "1") {
    malformed("CTEST_RESOURCE_GROUP_COUNT", *count, "the GPU tests declare one resource group (gpus:1)");
  }
  const std::string types = lookup("CTEST_RESOURCE_GROUP_0").value_or("");
  bool has_gpus = false;
  for (const std::string& type : split(types, ',')) has_gpus = has_gpus || type == "gpus";
  if (!has_gpus) malformed("CTEST_RESOURCE_GROUP_0", types, "no 'gpus' in the group CTest allotted");

  const std::string name = "CTEST_RESOURCE_GROUP_0_GPUS";
  const std::string value = lookup(name).value_or("");
  if (value.empty()) malformed(name, value, "CTest allotted no GPU to a group of type gpus");
  DeviceAllotment allotment;
  allotment.source = name + "=" + value;
  for (const std::string& each : split(value, ';')) allotment.ids.push_back(allotted_id(name, value, each));

  // The spec's ids are ordinals of the devices this host shows; when the host's own
  // CUDA_VISIBLE_DEVICES already narrows them (a container given GPUs 4-7), id k is its
  // k-th entry, whatever form (index or UUID) that entry has.
  const std::optional<std::string> inherited = lookup("CUDA_VISIBLE_DEVICES");
  const std::vector<std::string> shown = inherited ? split(*inherited, ',') : std::vector<std::string>{};
  for (const int id : allotment.ids) {
    std::string device = std::to_string(id);
    if (inherited) {
      if (inherited->empty() || static_cast<std::size_t>(id) >= shown.size()) {
        malformed(name, value, "id " + device + " is beyond the inherited CUDA_VISIBLE_DEVICES='" + *inherited +
                                   "' (" + std::to_string(inherited->empty() ? 0 : shown.size()) + " devices)");
      }
      device = shown[static_cast<std::size_t>(id)];
    }
    allotment.visible_devices += (allotment.visible_devices.empty() ? "" : ",") + device;
  }
  return allotment;
}

namespace {
// What apply_device_allotment did, for announce_device's line.
std::string& allotment_note() {
  static std::string note = "no CTest resource group: the driver's device 0";
  return note;
}
}  // namespace

void apply_device_allotment() {
  const auto allotment = device_allotment([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  });
  if (!allotment) return;
  if (::setenv("CUDA_VISIBLE_DEVICES", allotment->visible_devices.c_str(), 1) != 0) {
    throw Error(ErrorKind::usage, component, "cannot set CUDA_VISIBLE_DEVICES for " + allotment->source);
  }
  allotment_note() = "GPU " + allotment->visible_devices + " of the host (from " + allotment->source + ")";
  std::cerr << "cujit test: " << allotment->source << " -> CUDA_VISIBLE_DEVICES=" << allotment->visible_devices
            << "\n";
}

void announce_device() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      std::cerr << "cujit test: device 0: " << device_name(0) << " (" << Arch::of_device(0).sm() << "), "
                << allotment_note() << "\n";
    } catch (const std::exception& error) {
      std::cerr << "cujit test: device 0 cannot be described: " << error.what() << "\n";
    }
  });
}

}  // namespace cujit::test
