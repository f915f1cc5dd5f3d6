#pragma once
// Where the CUDA toolkit's headers are (for CUB through NVRTC) and what CCCL they hold.

#include <filesystem>
#include <string>

namespace cujit::toolkit {

// CUJIT_CUDA_INCLUDE if set, else the toolkit include directory cujit was built with.
std::filesystem::path include_dir();
// include_dir()/cccl when it exists (CUDA 13 layout), else include_dir().
std::filesystem::path cccl_dir();
// CCCL_VERSION from cuda/std/__cccl/version.h ("3000001"); Error(io) when missing.
std::string cccl_version();
// SHA-256 over the path and bytes of every file under cccl_dir()/cub and cccl_dir()/cuda:
// what a CUB-based build includes. Computed once per process.
const std::string& cccl_headers_digest();

}  // namespace cujit::toolkit
