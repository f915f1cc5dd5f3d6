#include "link/nvjitlink_api.hpp"

#include "support/vendor_library.hpp"

namespace cujit::detail {
namespace {

constexpr VendorLibrarySpec spec{"nvJitLink", "CUJIT_NVJITLINK_LIBRARY", CUJIT_NVJITLINK_DEFAULT_LIBRARY,
                                 CUJIT_NVJITLINK_SONAME, nullptr};

struct LoadedNvJitLink {
  NvJitLinkApi api;
  std::optional<Error> failure;  // thrown by every nvjitlink() call when set
};

const LibraryRequest& request() {
  static const LibraryRequest chosen = choose_library(spec);
  return chosen;
}

LoadedNvJitLink load_nvjitlink() {
  LoadedNvJitLink loaded;
  LibraryRequest wanted;
  try {
    wanted = request();
  } catch (const Error& error) {
    loaded.failure = error;
    return loaded;
  }
  const VendorCallScope scope(VendorLibrary::nvjitlink);
  OpenedLibrary library = open_library(spec, wanted);
#define CUJIT_RESOLVE_NVJITLINK_MEMBER(fn, exported) \
  loaded.api.fn.function = reinterpret_cast<decltype(&::exported)>(library.symbol(spec, wanted, #exported));
  CUJIT_NVJITLINK_FUNCTIONS(CUJIT_RESOLVE_NVJITLINK_MEMBER)
#undef CUJIT_RESOLVE_NVJITLINK_MEMBER
  loaded.failure = library.failure;
  return loaded;
}

const LoadedNvJitLink& loaded_nvjitlink() {
  static const LoadedNvJitLink loaded = load_nvjitlink();
  return loaded;
}

}  // namespace

const NvJitLinkApi& nvjitlink() {
  const LoadedNvJitLink& loaded = loaded_nvjitlink();
  if (loaded.failure) throw *loaded.failure;
  return loaded.api;
}

std::string nvjitlink_library_identity() {
  if (std::string identity = requested_file_identity(spec, request()); !identity.empty()) return identity;
  return loaded_library_identity(spec, reinterpret_cast<const void*>(nvjitlink().nvJitLinkVersion.function));
}

}  // namespace cujit::detail
