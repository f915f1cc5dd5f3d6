#pragma once
// Loading a vendor library (NVRTC, nvJitLink) on first use with dlopen + dlsym, as the
// driver is: a process that only hits the cache never maps them, and an environment
// variable can name another toolkit's file at run time. Each library's table of entries
// lives with its users (compile/nvrtc_api.hpp, link/nvjitlink_api.hpp); what is common to
// choosing, opening and naming the file is here.

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cujit/error.hpp"
#include "support/vendor_call.hpp"

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
// until exit). A file named by path must be a regular file owned by root or this user and
// writable by no one else, in directories of the same kind (spawner.hpp), and is loaded from
// the descriptor that was checked (/proc/self/fd/N), which stays open (close-on-exec) as
// long as the library stays mapped: closed, its number could be reused and dlopen would
// take the new file's /proc name for the library already loaded under it. A failure is Error(unsupported) naming the path, where it came from and
// dlerror()'s reason.
OpenedLibrary open_library(const VendorLibrarySpec& spec, const LibraryRequest& request);

// The identity of the requested file (library_identity.hpp, siblings after it) without
// loading it when the request is a path that exists; empty when only loading can tell
// (a soname, or a path naming nothing), so the caller asks the loaded library.
std::string requested_file_identity(const VendorLibrarySpec& spec, const LibraryRequest& request);
// The identity of the loaded library holding `symbol`, siblings after it.
std::string loaded_library_identity(const VendorLibrarySpec& spec, const void* symbol);

// One library's table of entries (Api), loaded on the first api() call: once per process,
// thread-safe, never unloaded. `resolve` fills the table from the opened library. A library
// that cannot be loaded or lacks a function makes every api() call throw the same Error;
// the load counts as the library's time (cujit/vendor_time.hpp).
template <class Api>
class LazyLibrary {
 public:
  using Resolve = void (*)(Api& api, OpenedLibrary& library, const VendorLibrarySpec& spec,
                           const LibraryRequest& request);
  LazyLibrary(const VendorLibrarySpec& spec, VendorLibrary vendor, Resolve resolve)
      : spec_(spec), vendor_(vendor), resolve_(resolve) {}

  // What is (or would be) opened; Error(usage) while the variable names no absolute path.
  const LibraryRequest& request() {
    std::call_once(request_once_, [this] { request_ = choose_library(spec_); });
    return request_;
  }

  const Api& api() {
    std::call_once(load_once_, [this] { load(); });
    if (failure_) throw *failure_;
    return api_;
  }

  // The requested file's identity without loading it when it is a path that exists, else
  // the loaded library's, found through the entry `entry` picks. Computed once (a failure
  // to load is thrown, and tried again by the next call).
  const std::string& identity(const void* (*entry)(const Api&)) {
    std::call_once(identity_once_, [this, entry] {
      identity_ = requested_file_identity(spec_, request());
      if (identity_.empty()) identity_ = loaded_library_identity(spec_, entry(api()));
    });
    return identity_;
  }

 private:
  void load() {
    LibraryRequest wanted;
    try {
      wanted = request();
    } catch (const Error& error) {
      failure_ = error;
      return;
    }
    // Loading maps and relocates the library and runs its constructors: its time, not cujit's.
    const VendorCallScope scope(vendor_);
    OpenedLibrary library = open_library(spec_, wanted);
    resolve_(api_, library, spec_, wanted);
    failure_ = library.failure;
  }

  const VendorLibrarySpec spec_;
  const VendorLibrary vendor_;
  const Resolve resolve_;
  std::once_flag request_once_, load_once_, identity_once_;
  LibraryRequest request_;
  std::string identity_;
  Api api_;
  std::optional<Error> failure_;
};

}  // namespace cujit::detail
