// Every scenario file under scenarios/repro runs and ends "as expected". Scenarios that
// launch, load a module or use the driver linker are GPU tests.
#include <gtest/gtest.h>

#include <algorithm>

#include "runner/scenario_file.hpp"
#include "runner/scenario_render.hpp"
#include "runner/scenario_run.hpp"
#include "support/fixtures.hpp"
#include "support/printers.hpp"

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
  return test_identifier(std::filesystem::path(file.param).stem().string());
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

TEST_F(ScenarioFormat, TheReportIsNamedInTheBundle) {
  const auto file = dir.write("at.json", R"({"schema": 1, "name": "at",
    "reported_at": "https://github.com/NVIDIA/cuda-python/issues/920",
    "inputs": [{"inline": ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n", "format": "ptx", "name": "k.ptx"}],
    "expect": {"outcome": "success"}})");
  const scenarios::ScenarioReport report = run_file(file);
  EXPECT_EQ(report.reported_at, "https://github.com/NVIDIA/cuda-python/issues/920");
  EXPECT_NE(scenarios::render_text(report).find("reported at: https://github.com/NVIDIA/cuda-python/issues/920"),
            std::string::npos);
  EXPECT_NE(scenarios::render_json(report).find("\"reported_at\": \"https://github.com/NVIDIA/cuda-python/issues/920\""),
            std::string::npos);
}

TEST_F(ScenarioFormat, TheAbiBuilderFailsWhenTheOtherCompilerNamesTheFunctionOtherwise) {
  // numba's add is __main__.add; cujit's function of another name has another symbol.
  const std::string numbas = test::scenario_path("fixtures/numba/add_i32_numba_abi.ptx").string();
  const auto file = dir.write("abi.json", R"j({"schema": 1, "name": "abi", "builder": "abi",
    "inputs": [{"abi": {"name": "sub", "signature": "int32(int32, int32)", "body": "return arg0 - arg1;",
                        "abi": "numba", "output": "ptx"}},
               {"path": ")j" + numbas + R"j("}],
    "options": {"arch": "sm_90a"},
    "expect": {"outcome": "error", "kind": "link", "message": "does not define '_ZN8__main__3subB2v1B92"}})j");
  scenarios::LoadOptions trusted;
  trusted.allow_paths_outside = true;
  const scenarios::ScenarioReport report =
      scenarios::run_scenario(scenarios::load_scenario(file, trusted), test::fixture_path(""));
  EXPECT_EQ(report.verdict, scenarios::Verdict::as_expected) << scenarios::render_text(report);
}

TEST_F(ScenarioFormat, BuilderRulesAreCheckedWhenTheFileLoads) {
  const std::string ptx = R"j({"inline": ".version 9.0\n", "format": "ptx"})j";
  const std::string success = R"j("expect": {"outcome": "success"})j";
  const auto refused = [&](const std::string& name, const std::string& body, const std::string& wanted) {
    const auto file = dir.write(name, R"j({"schema": 1, "name": "n", )j" + body + ", " + success + "}");
    CUJIT_EXPECT_ERROR((void)scenarios::load_scenario(file), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(wanted), std::string::npos) << error.what(););
  };
  refused("reduce.json", R"j("builder": "reduce", "inputs": [)j" + ptx + "]", "reduce is missing");
  refused("declared.json", R"j("builder": "reduce", "reduce": {"op": "declared"}, "inputs": [)j" + ptx + "]",
          "op 'declared' needs exactly one input with 'declares'");
  refused("stray.json", R"j("reduce": {"op": "sum"}, "inputs": [)j" + ptx + "]",
          "reduce applies to the reduce builder only");
  refused("declares.json",
          R"j("inputs": [{"inline": "x", "format": "ptx", "declares": {"name": "f", "signature": "int32()"}}])j",
          "inputs[0].declares applies to the kernel and reduce builders only");
  refused("graph.json", R"j("builder": "graph", "inputs": [)j" + ptx + "]", "launch is missing");
  refused("abi.json", R"j("builder": "abi", "inputs": [)j" + ptx + "]", "needs an 'abi' input");
  refused("at.json", R"j("reported_at": "see the forum", "inputs": [)j" + ptx + "]", "reported_at must be");
}

// docs/scenario-format.md once showed an example no file had and claimed backends a file
// did not run: its example is now a committed file, verbatim, and its table names every
// file with the builder and backend the file says.
TEST(ScenarioDocs, TheFormatPageShowsACommittedFileVerbatimAndEveryFileAsItRuns) {
  const std::string page = test::read_bytes(test::scenario_path("../docs/scenario-format.md"));
  const std::string intro = "`scenarios/repro/";
  const auto committed = page.find(".json`, as committed:");
  ASSERT_NE(committed, std::string::npos);
  const auto named = page.rfind(intro, committed);
  ASSERT_NE(named, std::string::npos);
  const std::string file = page.substr(named + intro.size(), committed + 5 - named - intro.size());
  const auto start = page.find("```json\n", named);
  ASSERT_NE(start, std::string::npos);
  const auto end = page.find("```", start + 8);
  EXPECT_EQ(page.substr(start + 8, end - start - 8), test::read_bytes(test::scenario_path("repro/" + file)))
      << "the example is not " << file << " as committed";
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    const scenarios::Scenario scenario = scenarios::load_scenario(entry.path());
    const char* builders[] = {"linker", "kernel", "module", "abi", "reduce", "graph"};
    const char* backends[] = {"nvjitlink", "driver", "both"};
    const std::string row = "| `" + entry.path().stem().string() + "` | " +
                            builders[static_cast<int>(scenario.builder)] + " | " +
                            backends[static_cast<int>(scenario.backend)] + " | ";
    EXPECT_NE(page.find(row), std::string::npos) << "no row " << row;
  }
}

class GpuScenarioBuilders : public ScenarioFormat {};

TEST_F(GpuScenarioBuilders, GraphBuilderLaunchesThroughACapturedGraph) {
  CUJIT_REQUIRE_DEVICE();
  const std::string kernel = test::scenario_path("fixtures/mixed_kernel.cu").string();
  const auto file = dir.write("graph.json", R"j({"schema": 1, "name": "graph", "builder": "graph",
    "inputs": [{"path": ")j" + kernel + R"j("}, {"fixture": "dev_add.ptx"}, {"fixture": "dev_mul.ptx"}],
    "options": {"arch": "device"},
    "launch": {"kernel": "mixed_kernel", "grid": [1], "block": [1],
               "args": [{"output": "int32", "count": 3}, {"int32": 6}, {"int32": 7}], "expect": [13, 42, 48]},
    "expect": {"outcome": "success"}})j");
  scenarios::LoadOptions trusted;
  trusted.allow_paths_outside = true;
  const scenarios::ScenarioReport report =
      scenarios::run_scenario(scenarios::load_scenario(file, trusted), test::fixture_path(""));
  EXPECT_EQ(report.verdict, scenarios::Verdict::as_expected) << scenarios::render_text(report);
}

}  // namespace
}  // namespace cujit
