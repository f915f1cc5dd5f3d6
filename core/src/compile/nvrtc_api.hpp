#pragma once
// NVRTC, loaded on first use with dlopen + dlsym of the functions nvrtc.h declares, as the
// driver is (driver/driver_api.hpp). A process that only hits the cache never maps the
// library (about 100 MB, the largest part of exec to first result), and CUJIT_NVRTC_LIBRARY
// can name another toolkit's NVRTC at run time.

#include <nvrtc.h>

#include <string>

#include "support/vendor_call.hpp"

namespace cujit::detail {

// Every NVRTC function cujit calls. Each entry has the type nvrtc.h gives it and is timed
// and counted on the calling thread (cujit/vendor_time.hpp): call them as
// nvrtc().nvrtcCompileProgram(...), never directly.
#define CUJIT_NVRTC_FUNCTIONS(X)                                                            \
  X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcAddNameExpression)                   \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) \
  X(nvrtcGetPTX) X(nvrtcGetLTOIRSize) X(nvrtcGetLTOIR) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) \
  X(nvrtcGetLoweredName) X(nvrtcGetErrorString) X(nvrtcVersion)

struct NvrtcApi {
#define CUJIT_DECLARE_NVRTC_MEMBER(fn) VendorEntry<VendorLibrary::nvrtc, decltype(&::fn)> fn;
  CUJIT_NVRTC_FUNCTIONS(CUJIT_DECLARE_NVRTC_MEMBER)
#undef CUJIT_DECLARE_NVRTC_MEMBER
};

// The table, loaded on the first call (once per process, thread-safe; RTLD_NOW |
// RTLD_LOCAL, never unloaded). A library that cannot be loaded or lacks a function is
// Error(unsupported) from "NVRTC (dlopen)" / "NVRTC (dlsym)" naming the path tried and
// dlerror()'s reason; every later call throws the same. The load counts as NVRTC time.
const NvrtcApi& nvrtc();

// The identity of the NVRTC this process uses (library_identity of the file, then its
// libnvrtc-builtins siblings), for cache keys. When the request is a path the file is
// described without loading it, so a cache hit never maps NVRTC; a soname is loaded first,
// since only the loader knows which file it names. Throws what nvrtc() throws when the
// library cannot be found.
std::string nvrtc_library_identity();

}  // namespace cujit::detail
