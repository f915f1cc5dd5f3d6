#pragma once
// The one cached compile. Every NVRTC compile cujit makes for a build (KernelBuilder's
// sources, the NRT library, ABI functions, the reduce kernel and CUDA C++ operators, `cu`
// inputs of a cached link) goes through compile_cached(), which owns the key recipe.
//
// Key ("nvrtc-compile", then "nvrtc-compile-result"; docs/cache.md):
//   the exact NVRTC (version, library file, builtins libraries), the program name and
//   source, the target, the NVRTC options in the order given (key_options), every
//   in-memory header by name and content, the name expressions in order, the working
//   directory when an include path is relative; then, for the result, every header the
//   compile read from the file system by content (its header manifest, taken from NVRTC's
//   time trace) and the earlier include directories where such a header must stay absent.

#include <string>
#include <vector>

#include "cujit/build_cache.hpp"
#include "cujit/cache_key.hpp"
#include "cujit/program.hpp"

namespace cujit {

/// A compile's result and where it came from.
struct CachedCompile {
  CompileResult result;                     ///< what Program::compile returns
  CacheSource source = CacheSource::built;  ///< built, or the tier that answered
  /// The result entry's key digest; empty when the result could not be keyed by the headers
  /// it read (then it was not stored) or the cache is off.
  std::string key;
};

/// Compiles through `cache`: a hit returns what a fresh compile would, byte for byte.
/// Throws as Program::compile does (Error(compile) with the NVRTC log); failures are never
/// cached.
CachedCompile compile_cached(const Program& program, const CompileOptions& options,
                             BuildCache& cache = BuildCache::global());

/// The first-level key: every input of the compile except the headers it reads from the
/// file system (pure apart from the NVRTC identity and, for relative include paths, the
/// working directory).
CacheKey compile_key(const Program& program, const CompileOptions& options);

/// NVRTC options as they enter a key: in the order given (the order of -D, -U, -include and
/// -I changes the code), spelled one way ("--gpu-architecture=sm_90" and "-arch sm_90" are
/// "-arch=sm_90"; "-D X" is "-DX"), without the few options that provably change nothing
/// NVRTC produces: automatic precompiled headers (-pch, -pch-dir, -pch-verbose,
/// -pch-messages), timing output (-time, -fdevice-time-trace) and -no-cache (NVRTC's own
/// result cache).
std::vector<std::string> key_options(const std::vector<std::string>& options);

}  // namespace cujit
