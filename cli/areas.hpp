#pragma once
// The conformance areas, read from CTest's own list of the build tree (`ctest
// --show-only=json-v1`): every test of conformance_<area> carries the label `area:<area>`
// (conformance/CMakeLists.txt), so `cujit conformance` and `cujit run` run exactly the
// areas `ctest` runs, and a suite added there is run without a second list to update.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace cujit::cli {

inline constexpr const char* area_label_prefix = "area:";

struct AreaSuite {
  std::string name;                  // the label without "area:"
  std::filesystem::path executable;  // the one program every test of the area runs
  std::size_t tests = 0;             // how many tests CTest lists for it
  // CTest lists only its placeholder (<target>_NOT_BUILT): the suite has not been built,
  // so its tests are unknown. A run refuses it rather than running one area fewer.
  bool built = true;
};

// The areas of a `ctest --show-only=json-v1` document, in CTest's order. Throws CliError
// naming `where` for a document that is not CTest's JSON, or an area whose tests run more
// than one program.
std::vector<AreaSuite> parse_ctest_areas(const std::string& json, const std::string& where);

// Runs ctest on `build` (the ctest of the CMake that configured cujit, else `ctest` on
// PATH) and parses its list; CliError when it cannot.
std::vector<AreaSuite> ctest_areas(const std::filesystem::path& build);

}  // namespace cujit::cli
