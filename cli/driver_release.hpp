#pragma once
// The NVIDIA driver's release ("580.159.04"), which `cujit --version` and `cujit info`
// report: the kernel module's version from /proc/driver/nvidia/version, read without NVML
// and without loading libcuda. (cuDriverGetVersion gives only the CUDA API version the
// driver supports, 13000 for every 580 release.)

#include <optional>
#include <string>
#include <string_view>

namespace cujit::cli {

inline constexpr const char* driver_version_file = "/proc/driver/nvidia/version";

// The release in the text of that file: the first whitespace-separated word of its
// "NVRM version:" line that is a dotted number ("580.159.04"); nullopt when there is none.
std::optional<std::string> parse_driver_release(std::string_view text);

// The release of the loaded driver, or nullopt with `why_none` saying why (the file does
// not exist: no NVIDIA kernel module is loaded). Never throws.
std::optional<std::string> driver_release(std::string& why_none);

}  // namespace cujit::cli
