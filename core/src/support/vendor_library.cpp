#include "support/vendor_library.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "cujit/environment.hpp"
#include "support/file_io.hpp"
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

// A library named by path (CUJIT_NVRTC_LIBRARY, CUJIT_NVJITLINK_LIBRARY, the built path) is
// opened non-blocking and checked on the descriptor before dlopen, whose own open would
// wait forever on a FIFO. (The check and dlopen open the path twice: loading from the
// checked descriptor, /proc/self/fd/N, would give the library that name for good, and its
// identity in cache keys is read from the loaded file's path.)
std::optional<Error> not_a_library_file(const VendorLibrarySpec& spec, const LibraryRequest& request) {
  if (request.path.find('/') == std::string::npos) return std::nullopt;  // the loader's search
  const int fd = ::open(request.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;  // dlopen says why, as before
  struct stat info {};
  const bool examined = ::fstat(fd, &info) == 0;
  ::close(fd);
  if (!examined || S_ISREG(info.st_mode)) return std::nullopt;
  // The component of every load failure (docs/cli.md): this check is part of the load.
  return Error(ErrorKind::unsupported, std::string(spec.component) + " (dlopen)",
               std::string(spec.component) + " could not be loaded from " + describe(request) + ": it is " +
                   kind_of_file(info.st_mode) + ", not a regular file");
}

OpenedLibrary open_library(const VendorLibrarySpec& spec, const LibraryRequest& request) {
  OpenedLibrary opened;
  if (auto refused = not_a_library_file(spec, request)) {
    opened.failure = std::move(*refused);
    return opened;
  }
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
