#include "support/temp_dir.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cujit/error.hpp"

namespace cujit::detail {
namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = tmp != nullptr && *tmp == '/' ? fs::path(tmp) : fs::path("/tmp");
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorKind::io, "TempDir", "making a directory like '" + pattern +
                                              "' failed: " + std::strerror(errno));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);  // never throws; a leftover directory is only litter
}

std::optional<fs::path> TempDir::only_file() const {
  std::optional<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(path_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || found) return std::nullopt;
    found = it->path();
  }
  return found;
}

}  // namespace cujit::detail
