#include "cache/remote_hiredis.hpp"

#if CUJIT_HAVE_HIREDIS

#include <mutex>
#include <optional>

#include "support/vendor_library.hpp"

namespace cujit::detail {
namespace {

// The same choice as NVRTC's (support/vendor_library.hpp): the variable, else the file the
// build found, else the loader's search for the soname of the header's ABI.
const VendorLibrarySpec hiredis_spec{"hiredis", "CUJIT_HIREDIS_LIBRARY", CUJIT_HIREDIS_DEFAULT_LIBRARY,
                                     CUJIT_HIREDIS_SONAME, nullptr};

struct Loaded {
  HiredisApi api;
  std::optional<Error> failure;
};

Loaded load() {
  Loaded loaded;
  LibraryRequest request;
  try {
    request = choose_library(hiredis_spec);
    // choose_library names the build's file as a toolkit's (its users are NVRTC and
    // nvJitLink); say what it is here, so that a message names the right thing.
    if (request.path == hiredis_spec.built_path) request.origin = "the hiredis cujit was built against";
  } catch (const Error& error) {  // CUJIT_HIREDIS_LIBRARY is not an absolute path
    loaded.failure = error;
    return loaded;
  }
  OpenedLibrary opened = open_library(hiredis_spec, request);
#define CUJIT_RESOLVE_HIREDIS(fn) \
  loaded.api.fn = reinterpret_cast<decltype(&::fn)>(opened.symbol(hiredis_spec, request, #fn));
  CUJIT_RESOLVE_HIREDIS(redisConnectWithTimeout)
  CUJIT_RESOLVE_HIREDIS(redisSetTimeout)
  CUJIT_RESOLVE_HIREDIS(redisAppendCommandArgv)
  CUJIT_RESOLVE_HIREDIS(redisBufferWrite)
  CUJIT_RESOLVE_HIREDIS(redisBufferRead)
  CUJIT_RESOLVE_HIREDIS(redisGetReplyFromReader)
  CUJIT_RESOLVE_HIREDIS(redisFree)
  CUJIT_RESOLVE_HIREDIS(freeReplyObject)
#undef CUJIT_RESOLVE_HIREDIS
  loaded.failure = opened.failure;
  return loaded;
}

}  // namespace

const HiredisApi& hiredis() {
  static const Loaded loaded = load();
  if (loaded.failure) throw *loaded.failure;
  return loaded.api;
}

}  // namespace cujit::detail

#endif
