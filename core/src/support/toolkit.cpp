#include "cujit/toolkit.hpp"

#include <cstdlib>
#include <regex>

#include "cujit/error.hpp"
#include "support/file_io.hpp"

namespace cujit::toolkit {
namespace fs = std::filesystem;

std::string read_cccl_version();

fs::path include_dir() {
  if (const char* value = std::getenv("CUJIT_CUDA_INCLUDE"); value != nullptr && *value != '\0') {
    return value;
  }
  return CUJIT_CUDA_INCLUDE_DIR;
}

fs::path cccl_dir() {
  const fs::path cccl = include_dir() / "cccl";
  std::error_code ec;
  return fs::is_directory(cccl, ec) ? cccl : include_dir();
}

std::string cccl_version() {
  static const std::string version = read_cccl_version();
  return version;
}

std::string read_cccl_version() {
  const std::string text =
      detail::read_file(cccl_dir() / "cuda" / "std" / "__cccl" / "version.h", "toolkit::cccl_version");
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(R"(#define\s+CCCL_VERSION\s+(\d+))"))) {
    throw Error(ErrorKind::io, "toolkit::cccl_version",
                "no CCCL_VERSION in " + (cccl_dir() / "cuda/std/__cccl/version.h").string());
  }
  return match[1].str();
}

}  // namespace cujit::toolkit
