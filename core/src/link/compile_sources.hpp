#pragma once
// The CUDA C++ inputs of one link, compiled side by side. cujit's own work per input (keys,
// cache lookups, the header manifest) runs in parallel; NVRTC 13.0 itself runs one compile
// at a time per process however many threads call it (measured: two threads compiling CUB
// sources take 1.69 s where one after the other take 1.53 s), so k NVRTC-bound inputs still
// take about the sum. Compiling in worker processes is what would overlap NVRTC's work.

#include <functional>
#include <vector>

#include "cujit/linkable_code.hpp"

namespace cujit::detail {

// Replaces each CUDA C++ item of `codes` by compile(item), the compiles on their own
// threads (support/concurrently.hpp); other formats are left as they are. The first failing
// item in order throws, after every compile has finished.
void compile_sources(std::vector<LinkableCode>& codes,
                     const std::function<LinkableCode(const LinkableCode&)>& compile);

}  // namespace cujit::detail
