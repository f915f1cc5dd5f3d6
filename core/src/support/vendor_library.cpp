#include "support/vendor_library.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "cujit/environment.hpp"
#include "support/file_io.hpp"
#include "support/library_identity.hpp"
#include "support/spawner.hpp"

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
// opened once, non-blocking (dlopen's own open would wait forever on a FIFO), checked on
// that descriptor - a regular file, owned by root or this user and writable by no one else,
// in directories of the same kind, as an executable is (loaded code is executed code) - and
// loaded from that same descriptor through /proc/self/fd/N, so that a file swapped in after
// the check is never what loads (red-team finding F13: a swap between the check and a
// second open by path hung dlopen on a FIFO; a world-writable library of another user
// loaded silently). The descriptor stays open for good, as the library stays loaded: its
// identity (library_identity.hpp) resolves the /proc name back to the file's real path.
OpenedLibrary open_library(const VendorLibrarySpec& spec, const LibraryRequest& request) {
  OpenedLibrary opened;
  auto fail = [&](const std::string& why) {
    // The component of every load failure (docs/cli.md): this check is part of the load.
    opened.failure = Error(ErrorKind::unsupported, std::string(spec.component) + " (dlopen)",
                           std::string(spec.component) + " could not be loaded from " + describe(request) + ": " + why);
    return opened;
  };
  std::string load = request.path;
  int fd = -1;
  if (request.path.find('/') != std::string::npos) {  // else the loader's search
    fd = ::open(request.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fail(std::string("cannot open it: ") + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      const std::string what = ::fstat(fd, &info) == 0 ? "it is " + kind_of_file(info.st_mode) : "it cannot be examined";
      ::close(fd);
      return fail(what + ", not a regular file");
    }
    std::optional<ExecutableRefusal> refused = check_trusted_descriptor(fd, request.path);
    if (!refused) refused = check_trusted_file(request.path);
    if (refused) {
      ::close(fd);
      // Loaded code is executed code: the executable rule, said as a load.
      std::string why = refused->message();
      why.replace(0, std::string_view("refusing to run").size(), "refusing to load");
      return fail(why + " (a library cujit loads must be owned by root or this user and writable by no one else)");
    }
    load = "/proc/self/fd/" + std::to_string(fd);
  }
  (void)dlerror();
  opened.handle = dlopen(load.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (opened.handle == nullptr) {
    if (fd >= 0) ::close(fd);
    return fail(dl_reason());
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
