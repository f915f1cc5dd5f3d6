// cujit --version, and the versions `cujit info` reports too.
#include <iostream>

#include "commands.hpp"
#include "cujit/device.hpp"
#include "cujit/error.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "driver_release.hpp"
#include "versions.hpp"

namespace cujit::cli {

Versions versions() {
  Versions found;
  found.cujit = CUJIT_CLI_VERSION;
  found.nvrtc = nvrtc_version();  // says "unavailable (...)" itself
  try {
    found.nvjitlink = nvjitlink_version();
  } catch (const Error& error) {
    found.nvjitlink = "unavailable (" + error.message() + ")";
  }
  if (auto release = driver_release(found.why_no_driver)) found.driver_release = *release;
  try {
    found.driver_cuda = driver_version();
  } catch (const Error&) {
    // No libcuda, or it does not initialise: the release (when there is one) is still true.
  }
  return found;
}

int version() {
  const Versions found = versions();
  std::cout << "cujit " << found.cujit << "\n"
            << "NVRTC " << found.nvrtc << "\n"
            << "nvJitLink " << found.nvjitlink << "\n";
  if (found.driver_release.empty()) {
    std::cout << "no driver (" << found.why_no_driver << ")\n";
  } else {
    std::cout << "driver " << found.driver_release
              << (found.driver_cuda.empty() ? "" : " (CUDA " + found.driver_cuda + ")") << "\n";
  }
  return exit_ok;
}

}  // namespace cujit::cli
