#include "paths.hpp"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "output.hpp"
#include "support/spawner.hpp"
#include "spawn.hpp"

namespace cujit::cli {

namespace {

std::filesystem::path self_path() {
  std::error_code error;
  return std::filesystem::canonical("/proc/self/exe", error);
}

// Whether this program is the one built in CUJIT_CLI_BUILD_DIR (or another program of that
// tree): decided by where it is, never by which of several paths happens to exist, since
// the build tree of an installed cujit may be gone and its paths anyone's to fill.
// The build tree counts only while it is the directory CMake made, as written, owned by
// root or this user in directories of the same kind: a gone tree whose path another user
// recreated, or that someone replaced by a link to an ancestor of an installed cujit, is
// not this program's (red-team finding F4).
bool in_build_tree() {
  static const bool inside = [] {
    if (detail::check_trusted_directory_as_written(CUJIT_CLI_BUILD_DIR)) return false;
    std::error_code error;
    const std::filesystem::path root = std::filesystem::canonical(CUJIT_CLI_BUILD_DIR, error);
    if (error) return false;
    const std::string self = self_path().string(), prefix = root.string() + "/";
    return self.compare(0, prefix.size(), prefix) == 0;
  }();
  return inside;
}

std::string not_in_build_tree(const std::string& variable, const std::string& what) {
  return "this cujit (" + shown(self_path().string()) + ") is not the one in its build tree, and an installed cujit " +
         "never uses the tree it was built in: " + what + " needs a build tree; set " + variable + " to one";
}

}  // namespace

std::filesystem::path build_dir() {
  const char* value = std::getenv("CUJIT_BUILD_DIR");
  if (value != nullptr && *value != '\0') return value;
  if (in_build_tree()) return CUJIT_CLI_BUILD_DIR;
  throw CliError(not_in_build_tree("CUJIT_BUILD_DIR", "this command (conformance suites, benchmarks, fixtures)"));
}

std::filesystem::path source_dir() {
  const char* value = std::getenv("CUJIT_SOURCE_DIR");
  if (value != nullptr && *value != '\0') return value;
  if (in_build_tree()) return CUJIT_CLI_SOURCE_DIR;
  throw CliError(not_in_build_tree("CUJIT_SOURCE_DIR", "this command (benchmark peers, scenarios)"));
}

std::filesystem::path reports_dir() {
  const char* value = std::getenv("CUJIT_SOURCE_DIR");
  if ((value != nullptr && *value != '\0') || in_build_tree()) return source_dir() / "reports";
  // Installed: <prefix>/bin/cujit -> <prefix>/share/cujit/reports (cmake/CujitInstall.cmake).
  const std::filesystem::path installed = self_path().parent_path().parent_path() / "share" / "cujit" / "reports";
  std::error_code error;
  if (!std::filesystem::is_directory(installed, error)) {
    throw CliError("the report scripts are not installed: no " + shown(installed.string()) +
                   " beside this cujit (" + shown(self_path().string()) + "); set CUJIT_SOURCE_DIR to a source tree");
  }
  return installed;
}

void require_trusted_script(const std::filesystem::path& script) {
  // Python reads the script, imports modules beside it and the package there (and their
  // bytecode in __pycache__): each must be cujit's own (owned by root or this user, writable
  // by no one else, in directories of the same kind), every file of that directory included.
  std::optional<detail::ExecutableRefusal> refused = detail::check_trusted_file(script.string());
  if (!refused) refused = detail::check_trusted_tree(script.parent_path().string());
  if (refused) throw CliError(refused->message());
}

void require_trusted_ctest_files(const std::filesystem::path& build) {
  // CTest evaluates CTestTestfile.cmake (CMake code) and every file it includes (the test
  // lists of gtest_discover_tests, *_tests.cmake and *_include.cmake beside it): each is code
  // cujit makes CTest run, checked as a script is (red-team finding F5).
  std::optional<detail::ExecutableRefusal> refused = detail::check_trusted_directory(build.string());
  std::error_code error;
  std::filesystem::recursive_directory_iterator it(build, std::filesystem::directory_options::none, error), end;
  for (; !refused && !error && it != end; it.increment(error)) {
    const std::filesystem::path& path = it->path();
    if (it->is_symlink(error) && path.filename() == "CTestTestfile.cmake") {
      refused = detail::ExecutableRefusal{detail::ExecutableProblem::not_regular, path.string(), "is a link"};
    } else if (path.extension() == ".cmake" && it->is_regular_file(error)) {
      refused = detail::check_trusted_file(path.string());
      if (!refused) refused = detail::check_trusted_directory(path.parent_path().string());
    }
  }
  if (refused) throw CliError(refused->message() + " (CTest would run it: the build tree's CMake files must be "
                                                   "owned by root or this user and writable by no one else)");
  if (error) throw CliError("cannot list the build tree " + shown(build.string()) + ": " + error.message());
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
  const std::filesystem::path located = reports_dir() / script;
  require_trusted_script(located);
  const std::string path = located.string();
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
