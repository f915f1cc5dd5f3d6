// Every scenario file under scenarios/repro runs and ends "as expected". Scenarios that
// launch, load a module or use the driver linker are GPU tests.
#include <gtest/gtest.h>

#include <algorithm>

#include "runner/scenario_file.hpp"
#include "runner/scenario_render.hpp"
#include "runner/scenario_run.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

// A file that does not load is listed with the CPU tests, whose run then fails naming
// the defect (rather than throwing while the tests are registered).
bool needs_device(const std::filesystem::path& file) {
  try {
    return scenarios::load_scenario(file).needs_device();
  } catch (const Error&) {
    return false;
  }
}

std::vector<std::string> scenario_files(bool device) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    if (needs_device(entry.path()) == device) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& file) {
  std::string name = std::filesystem::path(file.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

scenarios::ScenarioReport run_file(const std::filesystem::path& file) {
  return scenarios::run_scenario(scenarios::load_scenario(file), test::fixture_path(""));
}

void expect_as_expected(const std::string& file) {
  const scenarios::ScenarioReport report = run_file(file);
  EXPECT_EQ(report.verdict, scenarios::Verdict::as_expected) << scenarios::render_text(report);
  EXPECT_FALSE(report.steps.empty());
  EXPECT_FALSE(report.inputs.empty());
}

class ScenarioFiles : public ::testing::TestWithParam<std::string> {};
TEST_P(ScenarioFiles, RunAsExpected) { expect_as_expected(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Repro, ScenarioFiles, ::testing::ValuesIn(scenario_files(false)), test_name);

class GpuScenarioFiles : public ::testing::TestWithParam<std::string> {};
TEST_P(GpuScenarioFiles, RunAsExpected) {
  CUJIT_REQUIRE_DEVICE();
  expect_as_expected(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Repro, GpuScenarioFiles, ::testing::ValuesIn(scenario_files(true)), test_name);

// ---- the format itself ---------------------------------------------------------------

// Malformed and hostile files: test_scenario_file.cpp.
class ScenarioFormat : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(ScenarioFormat, AnUnexpectedOutcomeIsReportedAsSuch) {
  const auto file = dir.write("wrong.json", R"({"schema": 1, "name": "wrong",
    "inputs": [{"inline": ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n", "format": "ptx", "name": "k.ptx"}],
    "expect": {"outcome": "error", "kind": "link", "message": "never"}})");
  const scenarios::ScenarioReport report = run_file(file);
  const std::string text = scenarios::render_text(report);
  EXPECT_EQ(report.verdict, scenarios::Verdict::not_as_expected);
  EXPECT_NE(text.find("expected a link error"), std::string::npos) << text;
  EXPECT_NE(scenarios::render_json(report).find("\"verdict\": \"not as expected\""), std::string::npos);
}

TEST_F(ScenarioFormat, TheReportedFailureIsRecognised) {
  const auto file = dir.write("reported.json", R"({"schema": 1, "name": "reported",
    "inputs": [{"inline": ".version 9.0\n.target sm_90\n.address_size 64\n.extern .func missing();\n.visible .entry k()\n{\n call missing, ();\n ret;\n}\n", "format": "ptx", "name": "k.ptx"}],
    "expect": {"outcome": "success"},
    "reported_failure": {"kind": "link", "message": "missing"}})");
  EXPECT_EQ(run_file(file).verdict, scenarios::Verdict::reproduced);
}

}  // namespace
}  // namespace cujit
