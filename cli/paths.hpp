#pragma once
// Where the cujit command finds the build tree (conformance and benchmark executables,
// fixtures), the source tree (scenarios, benchmark peers) and the report scripts:
// CUJIT_BUILD_DIR / CUJIT_SOURCE_DIR when set; else, for the cujit inside its build tree
// (decided by where this program is, /proc/self/exe, and only while that tree is the
// directory it was built as, trusted: support/spawner.hpp), where it was built. An installed
// cujit never uses the tree it was built in: it finds the reports beside itself
// (<prefix>/share/cujit/reports), and a command that needs a build tree is a CliError
// (exit 2) saying so.

#include <filesystem>
#include <string>
#include <vector>

namespace cujit::cli {

std::filesystem::path build_dir();
std::filesystem::path source_dir();
std::filesystem::path fixture_dir();
// reports/ of the source tree, or <prefix>/share/cujit/reports for an installed cujit.
std::filesystem::path reports_dir();
// CliError unless `script` (and the cujit_reports package beside it) passes the check of
// files cujit hands an interpreter (support/spawner.hpp).
void require_trusted_script(const std::filesystem::path& script);
// CliError unless the build tree CTest is given and every CMake file in it (CTestTestfile.cmake
// and the test lists it includes: code CTest evaluates) passes that check too.
void require_trusted_ctest_files(const std::filesystem::path& build);
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
