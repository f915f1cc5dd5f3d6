#pragma once
// Where the CUDA toolkit's headers are (for CUB through NVRTC) and what CCCL they hold.
// Which of those headers a build reads is found per compile (compile_cached resolves its
// includes and keys each header it reaches by content), so no digest of the whole tree is
// needed.

#include <filesystem>
#include <string>

/// Where the CUDA toolkit's headers are, for compiles that include CUB or CCCL.
namespace cujit::toolkit {

/// The environment variable CUJIT_CUDA_INCLUDE if set, else the toolkit include directory
/// cujit was built with. Never checks that it exists.
std::filesystem::path include_dir();
/// include_dir()/cccl when it exists (CUDA 13 layout), else include_dir().
std::filesystem::path cccl_dir();
/// CCCL_VERSION from cuda/std/__cccl/version.h ("3000001").
/// \throws Error (io) naming the file when it is missing or holds no version.
std::string cccl_version();
}  // namespace cujit::toolkit
