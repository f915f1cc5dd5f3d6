// cujit info: toolkit, driver, every device, cache, NRT, and what each backend supports.
#include <cstdlib>
#include <iostream>

#include "commands.hpp"
#include "devices.hpp"
#include "cujit/build_cache.hpp"
#include "cujit/device.hpp"
#include "cujit/error.hpp"
#include "cujit/format.hpp"
#include "cujit/linker.hpp"
#include "cujit/nrt.hpp"
#include "cujit/program.hpp"
#include "cujit/toolkit.hpp"

namespace cujit::cli {

int info() {
  std::cout << "cujit " << CUJIT_CLI_VERSION << "\n"
            << "NVRTC " << nvrtc_version() << ", nvJitLink " << nvjitlink_version() << "\n";
  try {
    std::cout << "CCCL " << toolkit::cccl_version() << " (" << toolkit::cccl_dir().string() << ")\n";
  } catch (const Error& error) {
    std::cout << "CCCL: " << error.message() << "\n";
  }
  std::string why_no_device;
  const std::vector<DeviceInfo> devices = devices_present(why_no_device);
  if (devices.empty()) {
    std::cout << "no CUDA device: " << why_no_device << "\n";
  } else {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    std::cout << "driver " << driver_version() << ", " << devices.size() << " device(s)"
              << (visible != nullptr ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string()) << "\n";
    for (const DeviceInfo& device : devices) std::cout << "device " << device.ordinal << ": " << device.str() << "\n";
  }
  const BuildCache& cache = BuildCache::global();
  std::cout << "cache: " << to_string(cache.config().mode) << " at " << cache.config().directory.string()
            << (cache.disk_usable() ? "" : " (disk tier not used)") << "\n";
  std::cout << "NRT: " << (nrt::enabled() ? "enabled" : "disabled") << " globally (CUJIT_ENABLE_NRT)\n";
  std::cout << "linker backends: nvjitlink (every format), driver ("
            << (has_device() ? "available" : "needs a device") << "; no LTO-IR)\n";
  std::cout << "formats:";
  for (Format format : all_formats) {
    std::cout << " " << to_string(format) << "(" << (backend_accepts(LinkerBackend::driver, format) ? "both" : "nvjitlink") << ")";
  }
  std::cout << "\n";
  std::cout << "remote cache tier: "
            << (!BuildCache::remote_built_in() ? std::string("not built in (this cujit was built without hiredis)")
                : cache.remote_url().empty()   ? std::string("built in, not configured (CUJIT_CACHE_REMOTE)")
                                               : cache.remote_url())
            << "\n";
  return exit_ok;
}

}  // namespace cujit::cli
