#pragma once
// The identity of a shared library in use, for cache keys: which exact file the process
// loaded, not the version its API reports (NVRTC and nvJitLink report major.minor only,
// and two patch releases of one minor can produce different code).

#include <string>
#include <vector>

namespace cujit::detail {

// "path=<real path>;size=<bytes>;mtime=<ns>" of the shared object that holds `symbol`
// (found with dladdr), or "unknown:<reason>" when it cannot be found. Statically linked
// code reports the executable. Cheap after the first call per object.
std::string library_identity(const void* symbol);

// The same description for files next to that shared object whose names start with
// `prefix` (NVRTC loads libnvrtc-builtins.so.* from its own directory at compile time),
// sorted by name.
std::vector<std::string> sibling_library_identities(const void* symbol, const std::string& prefix);

// The same two descriptions for a library file named by path, before (or without) loading
// it: the path is resolved to the real file first, as dlopen resolves it, so the result is
// the one library_identity gives once that file is loaded. "unknown:..." when it cannot be
// resolved.
std::string file_identity(const std::string& path);
std::vector<std::string> sibling_file_identities(const std::string& path, const std::string& prefix);

}  // namespace cujit::detail
