#pragma once
// cujit's environment variables, read one way. Each accepts a documented set of values;
// anything else is Error(usage) naming the variable, its value and what it accepts,
// never a silent default. The variables (docs/cli.md lists them with their values):
//   CUJIT_ENABLE_NRT   flag    link NRT when code uses it (nrt::enabled)
//   CUJIT_LINKER       nvjitlink | driver   the linker backend when none is requested
//   CUJIT_CACHE        off | memory | disk  the build cache's tiers
//   CUJIT_CACHE_DIR    path    the disk tier's directory
//   CUJIT_CACHE_MAX_BYTES, CUJIT_CACHE_MEMORY_BYTES   byte sizes (512M, 1G)
//   CUJIT_CUDA_INCLUDE path    the toolkit's include directory (CUB, CCCL)
//   CUJIT_NVRTC_LIBRARY absolute path   the libnvrtc file loaded on first use
//   CUJIT_NVJITLINK_LIBRARY absolute path   the libnvJitLink file loaded on first use
//   CUJIT_CACHE_REMOTE redis://...   the Redis tier (CUJIT_CACHE_REMOTE_TIMEOUT_MS,
//                      CUJIT_CACHE_REMOTE_LOCK_MS, CUJIT_CACHE_REMOTE_TTL; who is trusted:
//                      CUJIT_CACHE_REMOTE_VERIFY_KEY, CUJIT_CACHE_REMOTE_SIGNING_KEY paths,
//                      CUJIT_CACHE_REMOTE_UNAUTHENTICATED, CUJIT_CACHE_REMOTE_READONLY flags)
//   CUJIT_CACHE_LOCK_TIMEOUT seconds   waiting on another process's build of one key
//   CUJIT_REQUIRE_GPU  flag    GPU tests fail instead of skipping without a device
//   CUJIT_CAPTURE_DIR  path    failing links and builds write scenario files there
//   CUJIT_COMPILE_IN_PROCESS flag   side-by-side compiles stay in this process
//   CUJIT_COMPILE_WORKER absolute path   the compile worker (CUJIT_COMPILE_WORKER_TIMEOUT, s)

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

/// cujit's environment variables, each read one way (see the top of this header).
namespace cujit::environment {

/// "1", "true", "on", "yes" -> true; "0", "false", "off", "no" -> false; unset or empty ->
/// `fallback`.
bool flag(const char* name, bool fallback);
/// One of `allowed`; unset or empty -> `fallback`.
std::string choice(const char* name, std::initializer_list<std::string_view> allowed,
                   std::string_view fallback);
/// A decimal count of at most 2^64-1; unset or empty -> `fallback`.
std::uint64_t count(const char* name, std::uint64_t fallback);
/// A byte size: decimal digits with an optional fraction and an optional binary unit, K,
/// M, G or T (powers of 1024; either case, optionally followed by "iB" or "B"), or "B":
/// "1073741824", "512M", "1G", "1.5G", "64KiB". A fraction needs a unit and is rounded
/// down to whole bytes. Throws Error(usage) naming `text` for anything else: empty, a sign,
/// spaces, another unit, more than 2^64-1 bytes.
std::uint64_t parse_byte_size(std::string_view text);
/// A byte size (parse_byte_size) from the variable `name`; unset or empty -> `fallback`.
/// Throws Error(usage) naming the variable and its value for anything else.
std::uint64_t byte_size(const char* name, std::uint64_t fallback);
/// An absolute path (starting with '/'), returned as given; unset or empty -> nullopt. Only
/// the spelling is checked: whether the file exists is its user's question.
std::optional<std::string> absolute_path(const char* name);

}  // namespace cujit::environment
