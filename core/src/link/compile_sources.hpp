#pragma once
// The CUDA C++ inputs of one link, compiled side by side. cujit's own work per input (keys,
// cache lookups, the header manifest) runs on threads (support/concurrently.hpp); NVRTC
// itself runs one compile at a time per process, so when two or more inputs compile at
// once each NVRTC compile runs in a worker process of its own (compile/compile_worker.hpp),
// with the same result and errors as in-process. One input compiles in-process.

#include <functional>
#include <vector>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

// Replaces each CUDA C++ item of `codes` by compile(item), the compiles on their own
// threads, each NVRTC compile in a worker process when there are two or more (unless
// CUJIT_COMPILE_IN_PROCESS); other formats are left as they are. The first failing item
// in order throws, after every compile has finished.
void compile_sources(std::vector<LinkableCode>& codes,
                     const std::function<LinkableCode(const LinkableCode&)>& compile);

}  // namespace cujit::detail
