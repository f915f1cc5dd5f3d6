#pragma once
// Loading a vendor library (NVRTC, nvJitLink) on first use with dlopen + dlsym, as the
// driver is: a process that only hits the cache never maps them, and an environment
// variable can name another toolkit's file at run time. Each library's table of entries
// lives with its users (compile/nvrtc_api.hpp, link/nvjitlink_api.hpp); what is common to
// choosing, opening and naming the file is here.

#include <optional>
#include <string>
#include <vector>

#include "cujit/error.hpp"

namespace cujit::detail {

struct VendorLibrarySpec {
  const char* component;     // for errors: "NVRTC" gives "NVRTC (dlopen)", "NVRTC (dlsym)"
  const char* variable;      // the environment variable naming a file: CUJIT_NVRTC_LIBRARY
  const char* built_path;    // the file the build found
  const char* soname;        // the loader's own search when that file is gone
  const char* siblings;      // prefix of files beside it that are part of it, or nullptr
};

// Which file to open and why (for messages).
struct LibraryRequest {
  std::string path;
  std::string origin;
};

// The variable when set (an absolute path; anything else is Error(usage) naming it), else
// the build's file when it exists, else the soname.
LibraryRequest choose_library(const VendorLibrarySpec& spec);

// A library opened and its symbols resolved, or the Error every use throws.
struct OpenedLibrary {
  void* handle = nullptr;
  std::optional<Error> failure;

  // The address of `name`, or null with `failure` set (the first missing name is named).
  void* symbol(const VendorLibrarySpec& spec, const LibraryRequest& request, const char* name);
};

// Opens the chosen file (RTLD_NOW | RTLD_LOCAL, never unloaded: the libraries keep state
// until exit). A failure is Error(unsupported) naming the path, where it came from and
// dlerror()'s reason.
OpenedLibrary open_library(const VendorLibrarySpec& spec, const LibraryRequest& request);

// The identity of the requested file (library_identity.hpp, siblings after it) without
// loading it when the request is a path that exists; empty when only loading can tell
// (a soname, or a path naming nothing), so the caller asks the loaded library.
std::string requested_file_identity(const VendorLibrarySpec& spec, const LibraryRequest& request);
// The identity of the loaded library holding `symbol`, siblings after it.
std::string loaded_library_identity(const VendorLibrarySpec& spec, const void* symbol);

}  // namespace cujit::detail
