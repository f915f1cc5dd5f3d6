#include "cujit/toolkit.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <vector>

#include "cujit/cache_key.hpp"
#include "cujit/error.hpp"
#include "detail/file_io.hpp"

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

const std::string& cccl_headers_digest() {
  static const std::string digest = [] {
    std::vector<fs::path> files;
    for (const char* part : {"cub", "cuda"}) {
      std::error_code ec;
      for (fs::recursive_directory_iterator it(cccl_dir() / part, ec), end; !ec && it != end;
           it.increment(ec)) {
        if (it->is_regular_file(ec)) files.push_back(it->path());
      }
    }
    std::sort(files.begin(), files.end());
    std::string stream;
    for (const fs::path& file : files) {
      const std::string relative = fs::relative(file, cccl_dir()).string();
      stream += std::to_string(relative.size()) + ":" + relative;
      const std::string bytes = detail::read_file(file, "toolkit::cccl_headers_digest");
      stream += sha256_hex(bytes);
    }
    return sha256_hex(stream);
  }();
  return digest;
}

}  // namespace cujit::toolkit
