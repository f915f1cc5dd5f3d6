#pragma once
// nvJitLink, loaded on first use like NVRTC (compile/nvrtc_api.hpp, support/vendor_library.hpp):
// a process whose links all hit the cache never maps it, and CUJIT_NVJITLINK_LIBRARY can
// name another toolkit's file at run time.

#include <nvJitLink.h>

#include <string>

#include "support/vendor_call.hpp"

namespace cujit::detail {

// Every nvJitLink function cujit calls, with the symbol it is resolved by. Most are inline
// wrappers in nvJitLink.h around symbols versioned by the header's release
// (__nvJitLinkCreate_13_0): the table resolves those, so a library that does not offer this
// header's version of a function is refused by name instead of called with another layout.
#define CUJIT_NVJITLINK_FUNCTIONS(X)                                                      \
  X(nvJitLinkCreate, __nvJitLinkCreate_13_0)                                              \
  X(nvJitLinkDestroy, __nvJitLinkDestroy_13_0)                                            \
  X(nvJitLinkAddData, __nvJitLinkAddData_13_0)                                            \
  X(nvJitLinkComplete, __nvJitLinkComplete_13_0)                                          \
  X(nvJitLinkGetLinkedCubinSize, __nvJitLinkGetLinkedCubinSize_13_0)                      \
  X(nvJitLinkGetLinkedCubin, __nvJitLinkGetLinkedCubin_13_0)                              \
  X(nvJitLinkGetErrorLogSize, __nvJitLinkGetErrorLogSize_13_0)                            \
  X(nvJitLinkGetErrorLog, __nvJitLinkGetErrorLog_13_0)                                    \
  X(nvJitLinkGetInfoLogSize, __nvJitLinkGetInfoLogSize_13_0)                              \
  X(nvJitLinkGetInfoLog, __nvJitLinkGetInfoLog_13_0)                                      \
  X(nvJitLinkVersion, nvJitLinkVersion)

// Each entry is timed and counted on the calling thread (cujit/vendor_time.hpp): call them
// as nvjitlink().nvJitLinkComplete(...), never directly.
struct NvJitLinkApi {
#define CUJIT_DECLARE_NVJITLINK_MEMBER(fn, exported) VendorEntry<VendorLibrary::nvjitlink, decltype(&::exported)> fn;
  CUJIT_NVJITLINK_FUNCTIONS(CUJIT_DECLARE_NVJITLINK_MEMBER)
#undef CUJIT_DECLARE_NVJITLINK_MEMBER
};

// The table, loaded on the first call (once per process, thread-safe). A library that
// cannot be loaded or lacks a function is Error(unsupported) from "nvJitLink (dlopen)" /
// "nvJitLink (dlsym)" naming the path tried and dlerror()'s reason; every later call throws
// the same. The load counts as nvJitLink time.
const NvJitLinkApi& nvjitlink();

// The identity of the nvJitLink this process uses, for cache keys: the requested file's
// when it is a path (described without loading it, so a cache hit never maps nvJitLink),
// else the loaded library's.
std::string nvjitlink_library_identity();

}  // namespace cujit::detail
