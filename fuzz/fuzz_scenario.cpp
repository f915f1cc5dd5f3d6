// Arbitrary bytes as a scenario file: parsed and validated field by field (nothing is
// compiled), every defect a typed usage error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "cujit/error.hpp"
#include "runner/scenario_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/cujit-fuzz-scenario-" + std::to_string(::getpid()) + ".json";
  if (FILE* out = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, out);
    std::fclose(out);
  }
  try {
    (void)cujit::scenarios::load_scenario(path);
  } catch (const cujit::Error&) {
  }
  return 0;
}
