#pragma once
// The identity of a shared library in use, for cache keys: which exact file the process
// loaded, not the version its API reports (NVRTC and nvJitLink report major.minor only,
// and two patch releases of one minor can produce different code).
//
// Every identity reaches the first cache hit of a new process, so each path is resolved
// and each file read with stat(2) once per process, and the library never loaded.

#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>

namespace cujit::detail {

// A file named by path, as dlopen would open it: its real path (symbolic links resolved;
// the path as given when that fails) and its status, or none when it names nothing.
// Resolved once per path and process: later calls answer from memory.
struct ResolvedFile {
  std::string path;
  std::optional<struct stat> status;
};
ResolvedFile resolve_file(const std::string& path);

// "path=<real path>;size=<bytes>;mtime=<ns>;ctime=<ns>;device=<n>;inode=<n>" of the shared object that holds `symbol`
// (found with dladdr), or "unknown:<reason>" when it cannot be found. Statically linked
// code reports the executable. Cheap after the first call per object.
std::string library_identity(const void* symbol);

// The same description of a resolved file ("unknown:stat failed for <path>" without a
// status), then, when `siblings` is not null, "; " and the description of each regular file
// whose name starts with `siblings` in each directory the loader searches for a companion
// loaded by bare name (NVRTC dlopens libnvrtc-builtins.so.<major.minor> at compile time):
// LD_LIBRARY_PATH, the directories /etc/ld.so.cache names for it, then the library's own,
// in that order, each "; "-separated. For a file named
// by path before (or without) loading it, the result is the one the loaded library gives.
std::string file_identity(const ResolvedFile& file, const char* siblings);
std::string library_identity(const void* symbol, const char* siblings);
// file_identity(resolve_file(path), nullptr).
std::string file_identity(const std::string& path);

// How many paths this process resolved and files it read the status of for identities:
// tests check that each is done once.
std::size_t identity_paths_resolved() noexcept;
std::size_t identity_files_stated() noexcept;

}  // namespace cujit::detail
