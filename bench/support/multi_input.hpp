#pragma once
// A build of k independent CUDA C++ inputs: k device functions, each in its own source
// using CUB (about the same compile cost each), and a kernel calling all of them. For the parallel-compile
// pair (cujit's side-by-side compiles against the raw APIs one after the other) and the
// incremental rebuild (one input changed, the others from the cache).

#include <string>
#include <vector>

#include "cujit/linker.hpp"

namespace cujit::bench {

// The kernel's source ("multi_kernel.cu") first, then the k function sources
// ("multi_fn<i>.cu"). `revision` is a constant in the code of input `revised` only, so a
// new revision is a new compile of that input and a new link, the others unchanged.
std::vector<LinkableCode> multi_input_sources(int k, int revised = -1, long long revision = 0);

// How they compile and link: C++17 with the toolkit's CCCL and CUDA headers.
LinkOptions multi_input_options(const Arch& arch);

// The raw floor of linking them: NVRTC for each input one after the other with the options
// cujit passes, then one nvJitLink link.
std::string raw_multi_input_link(const std::vector<LinkableCode>& sources, const LinkOptions& options);

}  // namespace cujit::bench
