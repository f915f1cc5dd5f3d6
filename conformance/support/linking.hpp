#pragma once
// Helpers shared by the linking suites: adding an input by path or by bytes, and running
// a linked kernel.

#include <memory>
#include <string>
#include <vector>

#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "support/printers.hpp"

namespace cujit::test {

enum class Origin { path, bytes };

std::string_view to_string(Origin origin);

// A fixture input: `file` is relative to the fixture directory, or the scenarios source
// directory for committed `.cu` sources (prefix "src:").
struct FixtureInput {
  std::string file;
  Format format;
};

FixtureInput fixture_input(const std::string& file);
std::filesystem::path input_path(const FixtureInput& input);

// Adds through add_file (path) or add_data (bytes), the two ways users bring code.
void add_input(Linker& linker, const FixtureInput& input, Origin origin);

LinkOptions link_options(LinkerBackend backend, bool lto, const std::string& arch = "sm_90");

// Links the committed CUDA C++ file `relative` (under scenarios/) alone through nvJitLink for
// sm_90 and loads the cubin as module `name` (needs a device).
std::shared_ptr<Module> load_scenario_source(const std::string& relative, const std::string& name);

// Loads `cubin`, launches `kernel` with one block of `threads`, an int output buffer of
// `threads` elements and the int arguments, and returns the buffer.
std::vector<int> run_int_kernel(const Bytes& cubin, const std::string& kernel, unsigned threads,
                                const std::vector<int>& int_args);

// "scale_kernel_sass.fatbin" -> "scale_kernel_sass_fatbin" (test-name safe)
std::string identifier(std::string text);

}  // namespace cujit::test
