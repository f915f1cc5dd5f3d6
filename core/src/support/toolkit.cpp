#include "cujit/toolkit.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

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
  // The line "#define CCCL_VERSION 3000001", read token by token.
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    const std::size_t line_end = std::min(text.find('\n', line_start), text.size());
    std::istringstream line(text.substr(line_start, line_end - line_start));
    std::string hash_define, name, value;
    line >> hash_define >> name >> value;
    if (hash_define == "#define" && name == "CCCL_VERSION" && !value.empty() &&
        value.find_first_not_of("0123456789") == std::string::npos) {
      return value;
    }
    line_start = line_end + 1;
  }
  throw Error(ErrorKind::io, "toolkit::cccl_version",
              "no CCCL_VERSION in " + (cccl_dir() / "cuda/std/__cccl/version.h").string());
}

}  // namespace cujit::toolkit
