#pragma once
// The versions `cujit --version` and `cujit info` report: the command's, NVRTC's and
// nvJitLink's (the libraries this process loads: CUJIT_NVRTC_LIBRARY,
// CUJIT_NVJITLINK_LIBRARY) and the driver's release (driver_release.hpp).

#include <string>

namespace cujit::cli {

struct Versions {
  std::string cujit;           // "0.1.0"
  std::string nvrtc;           // "13.0", or "unavailable (<why>)"
  std::string nvjitlink;       // "13.0", or "unavailable (<why>)"
  std::string driver_release;  // "580.159.04"; empty without a driver
  std::string driver_cuda;     // the CUDA version the driver supports, "13.0"; empty when libcuda does not load
  std::string why_no_driver;   // set when driver_release is empty
};

// Reads them; never throws (a library that does not load is named "unavailable (...)").
Versions versions();

}  // namespace cujit::cli
