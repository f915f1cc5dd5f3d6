#include "input_file.hpp"

#include <fstream>

namespace cujit::cli {

std::optional<std::string> read_input_file(const std::filesystem::path& path, std::string& why,
                                           std::size_t limit) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) {
    why = "does not exist";
    return std::nullopt;
  }
  if (!std::filesystem::is_regular_file(status)) {
    why = "is not a regular file";
    return std::nullopt;
  }
  const auto size = std::filesystem::file_size(path, error);
  if (error) {
    why = "cannot be sized: " + error.message();
    return std::nullopt;
  }
  if (size > limit) {
    why = "is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(limit);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    why = "cannot be opened";
    return std::nullopt;
  }
  // One byte more than its size: a file that grew after it was sized is caught, not cut.
  std::string bytes(static_cast<std::size_t>(size) + 1, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.bad()) {
    why = "cannot be read";
    return std::nullopt;
  }
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (bytes.size() != size) {
    why = "changed size while being read";
    return std::nullopt;
  }
  return bytes;
}

}  // namespace cujit::cli
