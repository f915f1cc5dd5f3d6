#include "compile/nvrtc_api.hpp"

#include "support/vendor_library.hpp"

namespace cujit::detail {
namespace {

constexpr VendorLibrarySpec spec{"NVRTC", "CUJIT_NVRTC_LIBRARY", CUJIT_NVRTC_DEFAULT_LIBRARY, CUJIT_NVRTC_SONAME,
                                 "libnvrtc-builtins"};

struct LoadedNvrtc {
  NvrtcApi api;
  std::optional<Error> failure;  // thrown by every nvrtc() call when set
};

const LibraryRequest& request() {
  static const LibraryRequest chosen = choose_library(spec);
  return chosen;
}

LoadedNvrtc load_nvrtc() {
  LoadedNvrtc loaded;
  LibraryRequest wanted;
  try {
    wanted = request();
  } catch (const Error& error) {
    loaded.failure = error;
    return loaded;
  }
  // Loading maps and relocates NVRTC and runs its constructors: NVRTC's time, not cujit's.
  const VendorCallScope scope(VendorLibrary::nvrtc);
  OpenedLibrary library = open_library(spec, wanted);
#define CUJIT_RESOLVE_NVRTC_MEMBER(fn) \
  loaded.api.fn.function = reinterpret_cast<decltype(&::fn)>(library.symbol(spec, wanted, #fn));
  CUJIT_NVRTC_FUNCTIONS(CUJIT_RESOLVE_NVRTC_MEMBER)
#undef CUJIT_RESOLVE_NVRTC_MEMBER
  loaded.failure = library.failure;
  return loaded;
}

const LoadedNvrtc& loaded_nvrtc() {
  static const LoadedNvrtc loaded = load_nvrtc();
  return loaded;
}

}  // namespace

const std::string& nvrtc_library_request() { return request().path; }

const NvrtcApi& nvrtc() {
  const LoadedNvrtc& loaded = loaded_nvrtc();
  if (loaded.failure) throw *loaded.failure;
  return loaded.api;
}

std::string nvrtc_library_identity() {
  if (std::string identity = requested_file_identity(spec, request()); !identity.empty()) return identity;
  // A soname, or a path that names nothing: the loader decides (and explains a failure).
  return loaded_library_identity(spec, reinterpret_cast<const void*>(nvrtc().nvrtcCompileProgram.function));
}

}  // namespace cujit::detail
