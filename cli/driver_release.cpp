#include "driver_release.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cujit::cli {
namespace {

bool dotted_number(const std::string& word) {
  if (word.empty() || word.front() == '.' || word.back() == '.') return false;
  bool dot = false;
  for (const char c : word) {
    if (c == '.') {
      dot = true;
    } else if (std::isdigit(static_cast<unsigned char>(c)) == 0) {
      return false;
    }
  }
  return dot && word.find("..") == std::string::npos;
}

}  // namespace

std::optional<std::string> parse_driver_release(std::string_view text) {
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (dotted_number(word)) return word;
    }
  }
  return std::nullopt;
}

std::optional<std::string> driver_release(std::string& why_none) {
  // procfs gives its files a size of 0: read up to a bound rather than by size.
  std::ifstream in(driver_version_file, std::ios::binary);
  if (!in.is_open()) {
    why_none = std::string(driver_version_file) + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  auto release = parse_driver_release(text);
  if (!release) why_none = std::string(driver_version_file) + " names no release";
  return release;
}

}  // namespace cujit::cli
