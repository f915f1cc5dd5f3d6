#include "compile/nvrtc_api.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <optional>

#include "cujit/environment.hpp"
#include "cujit/error.hpp"
#include "support/library_identity.hpp"

namespace cujit::detail {
namespace {

constexpr const char* variable = "CUJIT_NVRTC_LIBRARY";
constexpr const char* builtins_prefix = "libnvrtc-builtins";

struct LoadedNvrtc {
  NvrtcApi api;
  std::optional<Error> failure;  // thrown by every nvrtc() call when set
};

// The request and where it came from, for messages.
struct Request {
  std::string path;
  std::string origin;
};

const Request& request() {
  static const Request chosen = []() -> Request {
    if (auto path = environment::absolute_path(variable)) return {*path, variable};
    struct stat info {};
    const char* built = CUJIT_NVRTC_DEFAULT_LIBRARY;
    if (::stat(built, &info) == 0) return {built, "the toolkit cujit was built with"};
    return {CUJIT_NVRTC_SONAME, std::string("the loader's search; ") + built + " is gone"};
  }();
  return chosen;
}

std::string dl_reason() {
  const char* why = dlerror();
  return why != nullptr ? why : "no reason given";
}

LoadedNvrtc load_nvrtc() {
  LoadedNvrtc loaded;
  Request wanted;
  try {
    wanted = request();
  } catch (const Error& error) {
    loaded.failure = error;
    return loaded;
  }
  // Loading maps and relocates NVRTC and runs its constructors: NVRTC's time, not cujit's.
  const VendorCallScope scope(VendorLibrary::nvrtc);
  (void)dlerror();
  // Never unloaded: NVRTC keeps state (its builtins library, its caches) until exit.
  const std::string& path = wanted.path;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    loaded.failure = Error(ErrorKind::unsupported, "NVRTC (dlopen)",
                           "NVRTC could not be loaded from '" + path + "' (" + wanted.origin +
                               "): " + dl_reason());
    return loaded;
  }
  auto resolve = [&](const char* name, void** slot) {
    (void)dlerror();
    *slot = dlsym(library, name);
    if (*slot == nullptr && !loaded.failure) {
      loaded.failure = Error(ErrorKind::unsupported, "NVRTC (dlsym)",
                             "'" + path + "' (" + wanted.origin + ") has no " + name +
                                 ", which cujit needs from NVRTC: " + dl_reason());
    }
  };
#define CUJIT_RESOLVE_NVRTC_MEMBER(fn) \
  resolve(#fn, reinterpret_cast<void**>(&loaded.api.fn.function));
  CUJIT_NVRTC_FUNCTIONS(CUJIT_RESOLVE_NVRTC_MEMBER)
#undef CUJIT_RESOLVE_NVRTC_MEMBER
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
  const std::string& request = nvrtc_library_request();
  struct stat info {};
  if (request.front() == '/' && ::stat(request.c_str(), &info) == 0) {
    std::string out = file_identity(request);
    for (const std::string& builtins : sibling_file_identities(request, builtins_prefix)) {
      out += "; " + builtins;
    }
    return out;
  }
  // A soname, or a path that names nothing: the loader decides (and explains a failure).
  const void* symbol = reinterpret_cast<const void*>(nvrtc().nvrtcCompileProgram.function);
  std::string out = library_identity(symbol);
  for (const std::string& builtins : sibling_library_identities(symbol, builtins_prefix)) {
    out += "; " + builtins;
  }
  return out;
}

}  // namespace cujit::detail
