#include "paths.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "output.hpp"
#include "spawn.hpp"

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
  // machine's) or Debian's, where python3-matplotlib installs. Probed once per process.
  static const std::string chosen = [] {
    for (const char* candidate : {"python3", "/usr/bin/python3"}) {
      ChildSpec probe = child_spec({candidate, "-c", "import matplotlib"});
      probe.out = probe.err = Sink::null;
      const ChildExit exit = run_child(probe);
      if (exit.exited() && exit.exit_code == 0) return std::string(candidate);
    }
    return std::string("python3");
  }();
  return chosen;
}

int run_report_script(const std::string& script, const std::vector<std::string>& args, bool stdout_to_stderr,
                      std::string* captured) {
  const std::string path = (source_dir() / "reports" / script).string();
  ChildSpec spec = child_spec({python(), path});
  spec.out = spec.err = Sink::capture;
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  Tail errors(16384);
  const ChildExit exit = run_child(spec, [&](Stream stream, std::string_view text) {
    if (stream == Stream::out && captured != nullptr) {
      captured->append(text);
    } else if (stream == Stream::out) {
      (stdout_to_stderr ? std::cerr : std::cout) << printable_stream(text);
    } else {
      std::cerr << printable_stream(text);
      errors.append(text);
    }
  });
  if (!exit.started()) throw CliError(script + ": " + describe(exit) + " (the Python is CUJIT_PYTHON or python3)");
  if (!exit.exited()) throw CliError(script + " " + describe(exit));
  if (errors.text().find("Traceback (most recent call last):") != std::string::npos) {
    throw CliError(script + " failed with a Python exception (above): " + errors.last_line());
  }
  return exit.exit_code;
}

std::filesystem::path default_out_dir() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return std::filesystem::path("cujit-out") / stamp;
}

}  // namespace cujit::cli
