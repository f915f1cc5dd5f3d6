#include "support/fixtures.hpp"

#include "cujit/environment.hpp"

#include <fstream>
#include <iterator>
#include <random>

namespace cujit::test {

std::filesystem::path fixture_path(const std::string& name) {
  return std::filesystem::path(CUJIT_FIXTURE_DIR) / name;
}

std::filesystem::path scenario_path(const std::string& relative) {
  return std::filesystem::path(CUJIT_SCENARIO_SOURCE_DIR) / relative;
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("test fixture missing: " + path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TempDir::TempDir() {
  std::random_device random;
  path_ = std::filesystem::temp_directory_path() /
          ("cujit-test-" + std::to_string(random()) + std::to_string(random()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path TempDir::write(const std::string& name, const std::string& bytes) const {
  const auto file = path_ / name;
  std::ofstream out(file, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file;
}

bool gpu_required() { return environment::flag("CUJIT_REQUIRE_GPU", false); }

}  // namespace cujit::test
