#pragma once
// Where the cujit command finds the build tree (conformance and benchmark executables,
// fixtures) and the source tree (reports, scenarios): where it was built, unless
// CUJIT_BUILD_DIR / CUJIT_SOURCE_DIR say otherwise.

#include <filesystem>
#include <string>
#include <vector>

namespace cujit::cli {

std::filesystem::path build_dir();
std::filesystem::path source_dir();
std::filesystem::path fixture_dir();
// The Python that has matplotlib: CUJIT_PYTHON (one executable, not a command line),
// else the first of python3 on PATH and /usr/bin/python3 (Debian's, where
// python3-matplotlib installs) that can import it.
std::string python();
// A fresh "cujit-out/<UTC timestamp>" under the current directory.
std::filesystem::path default_out_dir();

// Runs reports/<script> with python() and `args` (an argument vector: no shell), its
// stdout copied to ours (to our stderr with `stdout_to_stderr`, or into `captured` when
// given) and its stderr to ours. A script that died of an uncaught
// exception (Python exits 1 with a traceback, which would read as "failures found") or
// could not start is an environment error: CliError naming the script.
int run_report_script(const std::string& script, const std::vector<std::string>& args, bool stdout_to_stderr = false,
                      std::string* captured = nullptr);

}  // namespace cujit::cli
