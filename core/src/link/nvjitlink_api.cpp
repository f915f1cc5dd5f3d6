#include "link/nvjitlink_api.hpp"

#include "support/vendor_library.hpp"

namespace cujit::detail {
namespace {

LazyLibrary<NvJitLinkApi>& library() {
  static LazyLibrary<NvJitLinkApi> nvjitlink_library(
      {"nvJitLink", "CUJIT_NVJITLINK_LIBRARY", CUJIT_NVJITLINK_DEFAULT_LIBRARY, CUJIT_NVJITLINK_SONAME, nullptr},
      VendorLibrary::nvjitlink,
      [](NvJitLinkApi& api, OpenedLibrary& opened, const VendorLibrarySpec& spec, const LibraryRequest& request) {
#define CUJIT_RESOLVE_NVJITLINK_MEMBER(fn, exported) \
  api.fn.function = reinterpret_cast<decltype(&::exported)>(opened.symbol(spec, request, #exported));
        CUJIT_NVJITLINK_FUNCTIONS(CUJIT_RESOLVE_NVJITLINK_MEMBER)
#undef CUJIT_RESOLVE_NVJITLINK_MEMBER
      });
  return nvjitlink_library;
}

}  // namespace

const NvJitLinkApi& nvjitlink() { return library().api(); }

std::string nvjitlink_library_identity() {
  return library().identity(
      [](const NvJitLinkApi& api) { return reinterpret_cast<const void*>(api.nvJitLinkVersion.function); });
}

}  // namespace cujit::detail
