#include "areas.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "output.hpp"
#include "paths.hpp"
#include "shard_record.hpp"
#include "spawn.hpp"

namespace cujit::cli {
namespace {

constexpr std::string_view not_built_suffix = "_NOT_BUILT";

std::vector<std::string> labels_of(const nlohmann::json& test) {
  std::vector<std::string> labels;
  const auto properties = test.find("properties");
  if (properties == test.end() || !properties->is_array()) return labels;
  for (const auto& property : *properties) {
    if (!property.is_object() || property.value("name", "") != "LABELS") continue;
    const auto value = property.find("value");
    if (value == property.end() || !value->is_array()) continue;
    for (const auto& label : *value) {
      if (label.is_string()) labels.push_back(label.get<std::string>());
    }
  }
  return labels;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::vector<AreaSuite> parse_ctest_areas(const std::string& json, const std::string& where) {
  const nlohmann::json document = nlohmann::json::parse(json, nullptr, false);
  if (document.is_discarded() || !document.is_object() || !document.contains("tests") ||
      !document["tests"].is_array()) {
    throw CliError(shown(where) + ": not CTest's test list (ctest --show-only=json-v1)");
  }
  std::vector<AreaSuite> areas;
  for (const auto& test : document["tests"]) {
    if (!test.is_object()) continue;
    const std::string name = test.value("name", "");
    const auto command = test.find("command");
    const std::string program = command != test.end() && command->is_array() && !command->empty() &&
                                        command->front().is_string()
                                    ? command->front().get<std::string>()
                                    : std::string();
    for (const std::string& label : labels_of(test)) {
      if (label.rfind(area_label_prefix, 0) != 0) continue;
      const std::string area = label.substr(std::string_view(area_label_prefix).size());
      // The name becomes file names under --out (junit/<area>.xml): only a plain name.
      if (!valid_area_name(area)) {
        throw CliError(shown(where) + ": test " + shown(name) + " has the label " + shown(label) +
                       ": an area is a name of lowercase letters, digits and _");
      }
      auto found = std::find_if(areas.begin(), areas.end(), [&](const AreaSuite& a) { return a.name == area; });
      if (found == areas.end()) {
        areas.push_back(AreaSuite{area, program, 0, true});
        found = areas.end() - 1;
      }
      if (ends_with(name, not_built_suffix)) {
        found->built = false;
        continue;
      }
      if (found->tests > 0 && found->executable != program) {
        throw CliError(shown(where) + ": area " + shown(area) + " runs two programs, " +
                       shown(found->executable.string()) + " and " + shown(program) +
                       " (one conformance executable per area)");
      }
      found->executable = program;
      ++found->tests;
    }
  }
  return areas;
}

std::vector<AreaSuite> ctest_areas(const std::filesystem::path& build) {
  std::error_code error;
  // The ctest of the CMake that configured this build reads its CTestTestfile.cmake best.
  const std::string ctest = std::filesystem::is_regular_file(CUJIT_CLI_CTEST, error) ? CUJIT_CLI_CTEST : "ctest";
  require_trusted_ctest_files(build);
  ChildSpec child = child_spec({ctest, "--show-only=json-v1", "--test-dir", build.string()});
  child.out = child.err = Sink::capture;
  std::string listing;
  Tail errors(4096);
  const ChildExit exit = run_child(child, [&](Stream stream, std::string_view text) {
    if (stream == Stream::out) listing.append(text);
    else errors.append(text);
  });
  const std::string what = "listing the conformance areas with " + shown(ctest + " --show-only=json-v1 --test-dir " +
                                                                         build.string());
  if (!exit.exited() || exit.exit_code != 0) {
    throw CliError(what + ": " + describe(exit) + (errors.last_line().empty() ? "" : ": " + errors.last_line()));
  }
  return parse_ctest_areas(listing, what);
}

}  // namespace cujit::cli
