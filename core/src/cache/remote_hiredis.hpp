#pragma once
// hiredis, loaded with dlopen the first time the remote tier connects (issue 33): a program
// that links libcujit needs libhiredis only when CUJIT_CACHE_REMOTE names a Redis, never to
// start. The types and constants still come from the header cujit was built against; the
// library file is the one with that header's ABI (its soname), or CUJIT_HIREDIS_LIBRARY.
#if CUJIT_HAVE_HIREDIS

#include <hiredis/hiredis.h>

namespace cujit::detail {

// The hiredis functions the remote tier calls, resolved from the loaded library.
struct HiredisApi {
  decltype(&::redisConnectWithTimeout) redisConnectWithTimeout = nullptr;
  decltype(&::redisSetTimeout) redisSetTimeout = nullptr;
  decltype(&::redisAppendCommandArgv) redisAppendCommandArgv = nullptr;
  decltype(&::redisBufferWrite) redisBufferWrite = nullptr;
  decltype(&::redisBufferRead) redisBufferRead = nullptr;
  decltype(&::redisGetReplyFromReader) redisGetReplyFromReader = nullptr;
  decltype(&::redisFree) redisFree = nullptr;
  decltype(&::freeReplyObject) freeReplyObject = nullptr;
};

// The table, loaded once per process (thread-safe, never unloaded). A library that cannot
// be loaded, or lacks a function, makes every call throw the same Error(unsupported) with
// component "hiredis (dlopen)" or "hiredis (dlsym)", naming the file and where its name
// came from (CUJIT_HIREDIS_LIBRARY, or the build's).
const HiredisApi& hiredis();

}  // namespace cujit::detail

#endif
