#include "gtest_json.hpp"

#include <nlohmann/json.hpp>

#include "output.hpp"

namespace cujit::cli {
namespace {

nlohmann::json parse(const std::string& text, const std::string& where) {
  nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object() || !document.contains("testsuites") ||
      !document["testsuites"].is_array()) {
    throw CliError(shown(where) + ": not a Google Test JSON report");
  }
  return document;
}

std::string string_field(const nlohmann::json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

bool disabled(const std::string& suite, const std::string& name) {
  return suite.rfind("DISABLED_", 0) == 0 || suite.find("/DISABLED_") != std::string::npos ||
         name.rfind("DISABLED_", 0) == 0;
}

// Calls `each(suite_name, test_object)` for every test of the report.
template <class Each>
void for_each_test(const nlohmann::json& document, const std::string& where, Each&& each) {
  for (const auto& suite : document["testsuites"]) {
    if (!suite.is_object() || !suite.contains("testsuite") || !suite["testsuite"].is_array()) {
      throw CliError(shown(where) + ": a test suite of the report has no tests array");
    }
    const std::string suite_name = string_field(suite, "name");
    for (const auto& test : suite["testsuite"]) {
      if (!test.is_object() || string_field(test, "name").empty()) {
        throw CliError(shown(where) + ": a test of suite " + shown(suite_name) + " has no name");
      }
      each(suite_name, test);
    }
  }
}

}  // namespace

std::vector<TestCase> parse_gtest_report(const std::string& text, const std::string& where) {
  const nlohmann::json document = parse(text, where);
  std::vector<TestCase> cases;
  for_each_test(document, where, [&](const std::string& suite, const nlohmann::json& test) {
    if (string_field(test, "status") == "NOTRUN") return;
    TestCase found;
    found.suite = string_field(test, "classname").empty() ? suite : string_field(test, "classname");
    found.name = string_field(test, "name");
    std::string time = string_field(test, "time");
    if (!time.empty() && time.back() == 's') time.pop_back();
    if (!time.empty()) found.time = time;
    const auto failures = test.find("failures");
    if (failures != test.end() && failures->is_array() && !failures->empty()) {
      found.result = Result::failed;
      found.message = string_field(failures->front(), "failure");
    } else if (string_field(test, "result") == "SKIPPED") {
      found.result = Result::skipped;
      // Later Google Tests give the reason in the report; 1.12 does not (skip_reason_from_log).
      const auto skipped = test.find("skipped");
      if (skipped != test.end() && skipped->is_array() && !skipped->empty()) {
        found.message = string_field(skipped->front(), "message");
      }
    }
    cases.push_back(std::move(found));
  });
  return cases;
}

std::vector<std::string> parse_gtest_listing(const std::string& text, const std::string& where) {
  const nlohmann::json document = parse(text, where);
  std::vector<std::string> names;
  for_each_test(document, where, [&](const std::string& suite, const nlohmann::json& test) {
    const std::string name = string_field(test, "name");
    if (!disabled(suite, name)) names.push_back(suite + "." + name);
  });
  return names;
}

std::string skip_reason_from_log(std::string_view log, const std::string& suite, const std::string& name) {
  const std::string full = suite + "." + name;
  const std::string run_line = "[ RUN      ] " + full + "\n";
  const std::size_t run = log.rfind(run_line);
  if (run == std::string_view::npos) return {};
  const std::size_t from = run + run_line.size();
  const std::size_t skipped = log.find("[  SKIPPED ] " + full, from);
  if (skipped == std::string_view::npos) return {};
  const std::string_view block = log.substr(from, skipped - from);
  // The reason follows the last "file:line: Skipped" line of the block (a line scan: a
  // test's output can hold lines of any length).
  constexpr std::string_view skipped_suffix = ": Skipped";
  std::size_t reason_at = std::string_view::npos;
  for (std::size_t start = 0; start < block.size();) {
    const std::size_t end = block.find('\n', start);
    if (end == std::string_view::npos) break;  // the line must end: "Skipped\n"
    const std::string_view line = block.substr(start, end - start);
    if (line.size() > skipped_suffix.size() && line.substr(line.size() - skipped_suffix.size()) == skipped_suffix &&
        is_source_location(line.substr(0, line.size() - skipped_suffix.size()))) {
      reason_at = end + 1;
    }
    start = end + 1;
  }
  const std::string reason = reason_at == std::string_view::npos ? std::string() : std::string(block.substr(reason_at));
  std::string joined;
  std::size_t start = 0;
  while (start < reason.size()) {
    std::size_t end = reason.find('\n', start);
    if (end == std::string::npos) end = reason.size();
    std::string line = reason.substr(start, end - start);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos) {
      line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
      joined += (joined.empty() ? "" : " ") + line;
    }
    start = end + 1;
  }
  return joined;
}

}  // namespace cujit::cli
