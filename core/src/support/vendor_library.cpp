#include "support/vendor_library.hpp"

#include <dlfcn.h>

#include "cujit/environment.hpp"
#include "support/library_identity.hpp"

namespace cujit::detail {
namespace {

std::string dl_reason() {
  const char* why = dlerror();
  return why != nullptr ? why : "no reason given";
}

std::string describe(const LibraryRequest& request) { return "'" + request.path + "' (" + request.origin + ")"; }

}  // namespace

LibraryRequest choose_library(const VendorLibrarySpec& spec) {
  if (auto path = environment::absolute_path(spec.variable)) return {*path, spec.variable};
  // Resolved here, once: the identity (requested_file_identity) reads the same answer.
  if (resolve_file(spec.built_path).status) return {spec.built_path, "the toolkit cujit was built with"};
  return {spec.soname, std::string("the loader's search; ") + spec.built_path + " is gone"};
}

OpenedLibrary open_library(const VendorLibrarySpec& spec, const LibraryRequest& request) {
  OpenedLibrary opened;
  (void)dlerror();
  opened.handle = dlopen(request.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (opened.handle == nullptr) {
    opened.failure = Error(ErrorKind::unsupported, std::string(spec.component) + " (dlopen)",
                           std::string(spec.component) + " could not be loaded from " + describe(request) +
                               ": " + dl_reason());
  }
  return opened;
}

void* OpenedLibrary::symbol(const VendorLibrarySpec& spec, const LibraryRequest& request, const char* name) {
  if (handle == nullptr) return nullptr;
  (void)dlerror();
  void* address = dlsym(handle, name);
  if (address == nullptr && !failure) {
    failure = Error(ErrorKind::unsupported, std::string(spec.component) + " (dlsym)",
                    describe(request) + " has no " + name + ", which cujit needs from " + spec.component +
                        ": " + dl_reason());
  }
  return address;
}

std::string requested_file_identity(const VendorLibrarySpec& spec, const LibraryRequest& request) {
  if (request.path.empty() || request.path.front() != '/') return {};
  const ResolvedFile file = resolve_file(request.path);
  return file.status ? file_identity(file, spec.siblings) : std::string();
}

std::string loaded_library_identity(const VendorLibrarySpec& spec, const void* symbol) {
  return library_identity(symbol, spec.siblings);
}

}  // namespace cujit::detail
