#pragma once
// The one cached compile. Every NVRTC compile cujit makes for a build (KernelBuilder's
// sources, the NRT library, ABI functions, the reduce kernel and CUDA C++ operators, `cu`
// inputs of a cached link) goes through compile_cached(), which owns the key recipe.
//
// Key ("nvrtc-compile"; docs/cache.md): the recipe of a hermetic compile. cujit resolves
// every include itself and hands NVRTC the source and in-memory headers only, so the key
// names exactly what NVRTC compiles: the exact NVRTC (its libraries by content), the program
// name, the target, the options NVRTC receives verbatim and in order, every file by name and
// content (the rewritten include operands included), the name expressions. A compile that
// cannot be made hermetic (a computed include) runs as given and is not stored; neither is
// one that uses __TIME__, __DATE__ or __TIMESTAMP__.

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

/// The key of the compile's recipe (reads the headers it can reach, as a compile would).
CacheKey compile_key(const Program& program, const CompileOptions& options);

}  // namespace cujit
