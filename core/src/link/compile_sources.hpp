#pragma once
// The CUDA C++ inputs of one link, compiled side by side. cujit's own work per input (keys,
// cache lookups, the header manifest) runs on threads (support/concurrently.hpp); NVRTC
// itself runs one compile at a time per process, so when two or more inputs run NVRTC at
// once each does so in a worker process of its own (compile/compile_batch.hpp,
// compile/compile_worker.hpp), with the same result and errors as in-process. An input that
// is the only one to compile (one source, or the others hit the cache) compiles in-process.

#include <functional>
#include <vector>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

// Replaces each CUDA C++ item of `codes` by compile(item), the items on their own threads,
// each NVRTC compile in a worker process when two or more run at once (unless
// CUJIT_COMPILE_IN_PROCESS); other formats are left as they are. The first failing item
// in order throws, after every compile has finished.
void compile_sources(std::vector<LinkableCode>& codes,
                     const std::function<LinkableCode(const LinkableCode&)>& compile);

}  // namespace cujit::detail
