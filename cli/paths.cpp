#include "paths.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

namespace cujit::cli {

std::filesystem::path build_dir() {
  const char* value = std::getenv("CUJIT_BUILD_DIR");
  return value != nullptr && *value != '\0' ? value : CUJIT_CLI_BUILD_DIR;
}

std::filesystem::path source_dir() {
  const char* value = std::getenv("CUJIT_SOURCE_DIR");
  return value != nullptr && *value != '\0' ? value : CUJIT_CLI_SOURCE_DIR;
}

std::filesystem::path fixture_dir() { return build_dir() / "scenarios" / "fixtures"; }

std::string python() {
  if (const char* value = std::getenv("CUJIT_PYTHON"); value != nullptr && *value != '\0') return value;
  // The first interpreter that can import matplotlib: the one on PATH (a venv, the GPU
  // machine's) or Debian's, where python3-matplotlib installs.
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    if (run_command(std::string(candidate) + " -c 'import matplotlib' > /dev/null 2>&1") == 0) return candidate;
  }
  return "python3";
}

std::filesystem::path default_out_dir() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return std::filesystem::path("cujit-out") / stamp;
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

int run_command(const std::string& command) {
  const int status = std::system(command.c_str());
  if (status == -1) return 2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

}  // namespace cujit::cli
