#pragma once
// The CUDA C++ inputs of one link, compiled side by side. Each input's stored result is
// looked up first, one after the other on the calling thread (a hit is a few file reads:
// less than a thread's start); only the misses compile. cujit's own work per missing input
// (the include search, keys, the flight) runs on threads (support/concurrently.hpp);
// NVRTC itself runs one compile at a time per process, so when two or more inputs run
// NVRTC at once each does so in a worker process of its own (compile/compile_batch.hpp,
// compile/compile_worker.hpp), with the same result and errors as in-process. An input that
// is the only one to compile (one source, or the others hit the cache) compiles in-process,
// and a build whose inputs all hit starts no thread and no worker.

#include <functional>
#include <optional>
#include <vector>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

// What compiling one CUDA C++ input gives, and what the cache already holds for it (nullopt:
// a miss; it must not compile).
using CompileSource = std::function<LinkableCode(const LinkableCode&)>;
using StoredSource = std::function<std::optional<LinkableCode>(const LinkableCode&)>;

// Replaces each CUDA C++ item of `codes` by stored(item) when that holds a result, else by
// compile(item), the misses on their own threads when there are two or more, each NVRTC
// compile in a worker process when two or more run at once (unless
// CUJIT_COMPILE_IN_PROCESS); other formats are left as they are. The first failing item
// in order throws, after every compile has finished. A lookup that throws counts as a
// miss: the compile reports what is wrong.
void compile_sources(std::vector<LinkableCode>& codes, const StoredSource& stored, const CompileSource& compile);

// The same with no lookup first: every CUDA C++ item compiles (through its own cache, if any).
void compile_sources(std::vector<LinkableCode>& codes, const CompileSource& compile);

}  // namespace cujit::detail
