#pragma once
// The CUDA C++ inputs of one link, compiled side by side: a build with k independent
// sources takes about the time of its slowest compile rather than the sum.

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
