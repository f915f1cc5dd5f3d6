#pragma once
// Where the cujit command finds the build tree (conformance and benchmark executables,
// fixtures) and the source tree (reports, scenarios): where it was built, unless
// CUJIT_BUILD_DIR / CUJIT_SOURCE_DIR say otherwise.

#include <filesystem>
#include <string>

namespace cujit::cli {

std::filesystem::path build_dir();
std::filesystem::path source_dir();
std::filesystem::path fixture_dir();
// The Python that has matplotlib: CUJIT_PYTHON, else the first of python3 on PATH and
// /usr/bin/python3 (Debian's, where python3-matplotlib installs) that can import it.
std::string python();
// A fresh "cujit-out/<UTC timestamp>" under the current directory.
std::filesystem::path default_out_dir();

// `text` in single quotes, for a word of a run_command line.
std::string quoted(const std::string& text);

// Runs a shell command, streaming its output; returns its exit status.
int run_command(const std::string& command);

}  // namespace cujit::cli
