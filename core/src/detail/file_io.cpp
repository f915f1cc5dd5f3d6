#include "detail/file_io.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include "cujit/error.hpp"

namespace cujit::detail {

std::string read_file(const std::filesystem::path& path, const std::string& component) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(ErrorKind::io, component, "'" + path.string() + "': no such file");
  }
  if (std::filesystem::is_directory(status)) {
    throw Error(ErrorKind::io, component, "'" + path.string() + "' is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::io, component,
                "'" + path.string() + "' cannot be opened: " + std::strerror(errno));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw Error(ErrorKind::io, component, "'" + path.string() + "': read failed");
  }
  return bytes;
}

}  // namespace cujit::detail
