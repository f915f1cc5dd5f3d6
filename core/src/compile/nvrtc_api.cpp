#include "compile/nvrtc_api.hpp"

#include "support/vendor_library.hpp"

namespace cujit::detail {
namespace {

LazyLibrary<NvrtcApi>& library() {
  static LazyLibrary<NvrtcApi> nvrtc_library(
      {"NVRTC", "CUJIT_NVRTC_LIBRARY", CUJIT_NVRTC_DEFAULT_LIBRARY, CUJIT_NVRTC_SONAME, "libnvrtc-builtins"},
      VendorLibrary::nvrtc,
      [](NvrtcApi& api, OpenedLibrary& opened, const VendorLibrarySpec& spec, const LibraryRequest& request) {
#define CUJIT_RESOLVE_NVRTC_MEMBER(fn) \
  api.fn.function = reinterpret_cast<decltype(&::fn)>(opened.symbol(spec, request, #fn));
        CUJIT_NVRTC_FUNCTIONS(CUJIT_RESOLVE_NVRTC_MEMBER)
#undef CUJIT_RESOLVE_NVRTC_MEMBER
      });
  return nvrtc_library;
}

}  // namespace

const NvrtcApi& nvrtc() { return library().api(); }

std::string nvrtc_library_identity() {
  // A soname, or a path that names nothing: the loader decides (and explains a failure).
  return library().identity(
      [](const NvrtcApi& api) { return reinterpret_cast<const void*>(api.nvrtcCompileProgram.function); });
}

}  // namespace cujit::detail
