// cujit info: versions (versions.hpp), CCCL, every device, the cache, NRT, and what each
// backend supports; as text, or with --json as one object (docs/cli.md lists its fields).
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/device.hpp"
#include "cujit/error.hpp"
#include "cujit/format.hpp"
#include "cujit/linker.hpp"
#include "cujit/nrt.hpp"
#include "cujit/toolkit.hpp"
#include "devices.hpp"
#include "json_output.hpp"
#include "read_only_cache.hpp"
#include "versions.hpp"

namespace cujit::cli {
namespace {

nlohmann::json gather() {
  const Versions found = versions();
  nlohmann::json info = {{"schema", 1},
                         {"cujit", found.cujit},
                         {"nvrtc", found.nvrtc},
                         {"nvjitlink", found.nvjitlink},
                         {"driver_release", found.driver_release.empty() ? nlohmann::json() : nlohmann::json(found.driver_release)},
                         {"driver_cuda", found.driver_cuda.empty() ? nlohmann::json() : nlohmann::json(found.driver_cuda)}};
  try {
    info["cccl"] = {{"version", toolkit::cccl_version()}, {"dir", toolkit::cccl_dir().string()}};
  } catch (const Error& error) {
    info["cccl"] = {{"error", error.message()}};
  }
  std::string why_no_device;
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceInfo& device : devices_present(why_no_device)) {
    devices.push_back({{"ordinal", device.ordinal}, {"name", device.name}, {"arch", device.arch}});
  }
  info["devices"] = devices;
  info["why_no_device"] = devices.empty() ? nlohmann::json(why_no_device) : nlohmann::json();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  info["cuda_visible_devices"] = visible != nullptr ? nlohmann::json(visible) : nlohmann::json();
  // A read-only command: a cache directory that does not exist stays so (read_only_cache.hpp).
  ReadOnlyCache opened;
  open_read_only_cache(opened);
  const BuildCache& cache = opened.cache();
  info["cache"] = {{"mode", to_string(opened.configured.mode)},
                   {"directory", opened.configured.directory.string()},
                   {"directory_exists", !opened.directory_missing},
                   {"disk_usable", cache.disk_usable()},
                   {"remote_built_in", BuildCache::remote_built_in()},
                   {"remote", cache.remote_url().empty() ? nlohmann::json() : nlohmann::json(cache.remote_url())}};
  info["nrt_enabled"] = nrt::enabled();
  info["driver_backend_available"] = has_device();
  nlohmann::json formats = nlohmann::json::object();
  for (Format format : all_formats) {
    formats[to_string(format)] = backend_accepts(LinkerBackend::driver, format) ? "both" : "nvjitlink";
  }
  info["formats"] = formats;
  return info;
}

void print_text(const nlohmann::json& info) {
  std::cout << "cujit " << info["cujit"].get<std::string>() << "\n"
            << "NVRTC " << info["nvrtc"].get<std::string>() << ", nvJitLink " << info["nvjitlink"].get<std::string>()
            << "\n";
  if (info["cccl"].contains("error")) {
    std::cout << "CCCL: " << info["cccl"]["error"].get<std::string>() << "\n";
  } else {
    std::cout << "CCCL " << info["cccl"]["version"].get<std::string>() << " (" << info["cccl"]["dir"].get<std::string>()
              << ")\n";
  }
  std::cout << (info["driver_release"].is_null() ? std::string("no driver")
                                                 : "driver " + info["driver_release"].get<std::string>())
            << (info["driver_cuda"].is_null() ? std::string() : " (CUDA " + info["driver_cuda"].get<std::string>() + ")");
  const auto& devices = info["devices"];
  if (devices.empty()) {
    std::cout << "\nno CUDA device: " << info["why_no_device"].get<std::string>() << "\n";
  } else {
    std::cout << ", " << devices.size() << " device(s)"
              << (info["cuda_visible_devices"].is_null()
                      ? std::string()
                      : " (CUDA_VISIBLE_DEVICES=" + info["cuda_visible_devices"].get<std::string>() + ")")
              << "\n";
    for (const auto& device : devices) {
      const std::string arch = device["arch"].get<std::string>();
      std::cout << "device " << device["ordinal"].get<int>() << ": " << device["name"].get<std::string>()
                << (arch.empty() ? "" : " (" + arch + ")") << "\n";
    }
  }
  const auto& cache = info["cache"];
  std::cout << "cache: " << cache["mode"].get<std::string>() << " at " << cache["directory"].get<std::string>()
            << (cache["disk_usable"].get<bool>() ? "" : " (disk tier not used)") << "\n";
  std::cout << "NRT: " << (info["nrt_enabled"].get<bool>() ? "enabled" : "disabled") << " globally (CUJIT_ENABLE_NRT)\n";
  std::cout << "linker backends: nvjitlink (every format), driver ("
            << (info["driver_backend_available"].get<bool>() ? "available" : "needs a device") << "; no LTO-IR)\n";
  std::cout << "formats:";
  for (const auto& [format, backends] : info["formats"].items()) {
    std::cout << " " << format << "(" << backends.get<std::string>() << ")";
  }
  std::cout << "\n";
  std::cout << "remote cache tier: "
            << (!cache["remote_built_in"].get<bool>() ? std::string("not built in (this cujit was built without hiredis)")
                : cache["remote"].is_null()           ? std::string("built in, not configured (CUJIT_CACHE_REMOTE)")
                                                      : cache["remote"].get<std::string>())
            << "\n";
}

}  // namespace

int info(bool json) {
  const nlohmann::json found = gather();
  if (json) {
    print_json(found);
  } else {
    print_text(found);
  }
  return exit_ok;
}

}  // namespace cujit::cli
