// Every scenario file under scenarios/repro runs and ends "as expected". Scenarios that
// launch, load a module or use the driver linker are GPU tests; a file of both backends is
// also a CPU test, which runs its nvJitLink half.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <set>

#include "cujit/device.hpp"
#include "runner/scenario_file.hpp"
#include "runner/scenario_replay.hpp"
#include "runner/scenario_render.hpp"
#include "runner/scenario_run.hpp"
#include "support/fixtures.hpp"
#include "support/printers.hpp"

namespace cujit {
namespace {

// The CPU list: files that run something without a device; the GPU list: files that run
// something on one. A file that does not load is listed with the CPU tests, whose run then
// fails naming the defect (rather than throwing while the tests are registered).
bool listed(const std::filesystem::path& file, bool device) {
  try {
    const scenarios::Scenario scenario = scenarios::load_scenario(file);
    return device ? scenario.uses_device() : !scenario.needs_device();
  } catch (const Error&) {
    return !device;
  }
}

std::vector<std::string> scenario_files(bool device) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    if (listed(entry.path(), device)) files.push_back(entry.path().string());
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

// A file of both backends runs its nvJitLink half without a device and names the driver
// half as not run, with the reason; with a device both halves run and nothing is left out.
TEST_F(ScenarioFormat, BothBackendsRunWhatTheMachineCanAndNameTheRest) {
  const auto file = dir.write("both.json", R"({"schema": 1, "name": "both", "backend": "both",
    "inputs": [{"inline": ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n", "format": "ptx", "name": "k.ptx"}],
    "options": {"arch": "sm_90"}, "expect": {"outcome": "success"}})");
  const scenarios::ScenarioReport report = run_file(file);
  EXPECT_EQ(report.verdict, scenarios::Verdict::as_expected) << scenarios::render_text(report);
  std::set<LinkerBackend> ran;
  for (const auto& step : report.steps) ran.insert(step.backend);
  EXPECT_TRUE(ran.count(LinkerBackend::nvjitlink));
  if (has_device()) {
    EXPECT_TRUE(ran.count(LinkerBackend::driver));
    EXPECT_TRUE(report.not_run.empty());
  } else {
    EXPECT_FALSE(ran.count(LinkerBackend::driver));
    ASSERT_EQ(report.not_run.size(), 1u);
    EXPECT_EQ(report.not_run[0].backend, LinkerBackend::driver);
    EXPECT_EQ(report.not_run[0].verdict, "needs a device");
    EXPECT_NE(scenarios::render_text(report).find("[driver] not run: needs a device"), std::string::npos)
        << scenarios::render_text(report);
  }
}

// driver_does_not_apply: the reason reaches the text and the JSON; a file that runs the
// driver cannot also say it does not apply, and the reason must say something.
TEST_F(ScenarioFormat, TheDriverThatDoesNotApplySaysWhy) {
  const std::string ptx = R"("inputs": [{"inline": ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n", "format": "ptx", "name": "k.ptx"}],
    "options": {"arch": "sm_90"}, "expect": {"outcome": "success"}})";
  const auto file = dir.write("lto.json", R"({"schema": 1, "name": "lto", "driver_does_not_apply": "LTO-IR only", )" + ptx);
  const scenarios::ScenarioReport report = run_file(file);
  ASSERT_EQ(report.not_run.size(), 1u);
  EXPECT_EQ(report.not_run[0].verdict, "does not apply");
  EXPECT_NE(scenarios::render_text(report).find("[driver] not run: does not apply (LTO-IR only)"), std::string::npos);
  const auto doc = nlohmann::json::parse(scenarios::render_json(report));
  EXPECT_EQ(doc["not_run"][0]["why"], "LTO-IR only");
  for (const char* bad : {R"("backend": "both", "driver_does_not_apply": "x", )",
                                 R"("backend": "driver", "driver_does_not_apply": "x", )",
                                 R"("driver_does_not_apply": "", )", R"("driver_does_not_apply": 1, )"}) {
    const auto wrong = dir.write("wrong.json", std::string(R"({"schema": 1, "name": "wrong", )") + bad + ptx);
    EXPECT_THROW(scenarios::load_scenario(wrong), Error) << bad;
  }
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
  // The replay the example names, verbatim too (issue 29: a maintainer adds one from this).
  const std::string replay = "replays/lto-and-debug-with-declared-cu/replay_cuda_core.py";
  const auto shown = page.find("`scenarios/" + replay + "`, as committed");
  ASSERT_NE(shown, std::string::npos);
  const auto code = page.find("```python\n", shown);
  ASSERT_NE(code, std::string::npos);
  const auto code_end = page.find("```", code + 10);
  EXPECT_EQ(page.substr(code + 10, code_end - code - 10), test::read_bytes(test::scenario_path(replay)));
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

// Issue 29's table has a cujit-driver cell for every scenario: each committed file runs
// the driver linker or says why it cannot.
TEST(CommittedScenarios, EveryFileRunsTheDriverOrSaysWhyNot) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const scenarios::Scenario scenario = scenarios::load_scenario(entry.path());
    EXPECT_TRUE(scenario.backend != scenarios::BackendChoice::nvjitlink || !scenario.driver_does_not_apply.empty())
        << entry.path().filename() << " neither runs the driver backend nor says why it cannot";
  }
  EXPECT_GT(files, 0);
}

// Issue 29: every committed scenario says, per upstream stack, either which program replays
// the report in that stack's API or why the stack cannot express the case; and a program
// can print both outcome words the file gives it (a word it never prints would make its
// cell "other outcome" forever), through the marker line, its last line.
TEST(CommittedScenarios, EveryStackHasAReplayOrAReasonAndEveryProgramCanPrintItsOutcomes) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    const scenarios::Scenario scenario = scenarios::load_scenario(entry.path());
    EXPECT_TRUE(scenario.reported_at.empty() != scenario.found_here.empty()) << "reported_at or found_here";
    std::set<std::string> stacks;
    for (const scenarios::Replay& replay : scenario.replays) {
      stacks.insert(replay.stack);
      if (!replay.does_not_apply.empty()) continue;
      const std::string program = test::read_bytes(replay.program);
      EXPECT_NE(program.find("print(\"CUJIT_REPLAY \""), std::string::npos) << replay.program;
      for (const std::string& outcome : {replay.reported_outcome, replay.fixed_outcome}) {
        EXPECT_NE(program.find('"' + outcome + '"'), std::string::npos) << replay.program << " never prints " << outcome;
      }
    }
    EXPECT_EQ(stacks.size(), std::size(scenarios::replay_stacks)) << "a stack with neither a replay nor a reason";
  }
  EXPECT_GE(files, 23) << "the 17 scenarios of issue 29 and the six new ones";
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

// ---- replays through upstream stacks (issue 29) ----------------------------------------------

// TempDir::write into a subdirectory, created first.
std::filesystem::path put(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories((dir.path() / name).parent_path());
  return dir.write(name, bytes);
}

// A fake stack on PYTHONPATH: "installed" packages that import, and "absent" ones whose
// import fails, shadowing whatever the machine has, so that every verdict is exercised
// on a CPU machine and on the GPU machine alike, where the real stacks are installed.
class Replays : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string saved_path;
  bool had_path = false;

  void SetUp() override {
    if (const char* value = std::getenv("PYTHONPATH")) {
      had_path = true;
      saved_path = value;
    }
    put(dir, "site/cupy/__init__.py", "__version__ = '0.0-fake'\n");
    put(dir, "site/numba/__init__.py", "");
    put(dir, "site/numba/cuda/__init__.py", "raise ImportError('fake numba.cuda: not installed here')\n");
    put(dir, "site/cuda/__init__.py", "");
    put(dir, "site/cuda/core/__init__.py", "import sys\nsys.exit(7)\n");
    ::setenv("PYTHONPATH", (dir.path() / "site").c_str(), 1);
    // Without site-packages: numba-cuda's .pth hook would send numba.cuda past the fake,
    // and installed distributions would answer for the fakes' versions.
    ::setenv("CUJIT_REPLAY_PYTHON_FLAGS", "-S", 1);
    put(dir, "set/fixtures/.keep", "");
  }
  void TearDown() override {
    if (had_path) ::setenv("PYTHONPATH", saved_path.c_str(), 1);
    else ::unsetenv("PYTHONPATH");
    ::unsetenv("CUJIT_REPLAY_PYTHON_FLAGS");
  }

  // A scenario in dir/set/repro with one replay per (stack, program text).
  scenarios::Scenario scenario(const std::vector<std::pair<std::string, std::string>>& replays) {
    std::string list;
    int index = 0;
    for (const auto& [stack, program] : replays) {
      const std::string name = "r" + std::to_string(index++) + ".py";
      put(dir, "set/replays/s/" + name, program);
      list += std::string(list.empty() ? "" : ", ") + R"({"stack": ")" + stack + R"(", "program": "../replays/s/)" +
              name + R"(", "reported_outcome": "link-error", "fixed_outcome": "ok"})";
    }
    const auto file = put(dir, "set/repro/s.json", R"({"schema": 1, "name": "s", "found_here": "a test",
        "inputs": [{"inline": ".version 9.0\n", "format": "ptx"}], "expect": {"outcome": "success"},
        "replays": [)" + list + "]}");
    return scenarios::load_scenario(file);
  }
};

std::string prints(const std::string& outcome) {
  return "print('CUJIT_REPLAY {\"outcome\": \"" + outcome + "\", \"detail\": \"d\", \"toolkit\": \"t 1.0\"}')\n";
}

TEST_F(Replays, EveryOutcomeOfAnInstalledStackHasItsVerdict) {
  const std::string flood = "import sys\nsys.stdout.write('x' * (3 << 20))\n" + prints("ok");
  const std::vector<std::pair<std::string, std::pair<scenarios::ReplayVerdict, std::string>>> programs = {
      {prints("link-error"), {scenarios::ReplayVerdict::reproduced, "link-error"}},
      {prints("ok"), {scenarios::ReplayVerdict::fixed, "ok"}},
      {prints("wrong-result"), {scenarios::ReplayVerdict::other_outcome, "wrong-result"}},
      {prints("needs-device"), {scenarios::ReplayVerdict::needs_device, "needs-device"}},
      // The last marker line counts; one inside a line does not.
      {prints("ok") + prints("link-error") + "print('x CUJIT_REPLAY {\"outcome\": \"ok\"}')\n",
       {scenarios::ReplayVerdict::reproduced, "link-error"}},
      {"print('no outcome here')\n", {scenarios::ReplayVerdict::other_outcome, ""}},
      {"print('CUJIT_REPLAY not json')\n", {scenarios::ReplayVerdict::other_outcome, ""}},
      {"print('CUJIT_REPLAY {\"outcome\": 5}')\n", {scenarios::ReplayVerdict::other_outcome, ""}},
      {"import os\nos.abort()\n", {scenarios::ReplayVerdict::other_outcome, ""}},
      {"raise SystemExit(3)\n", {scenarios::ReplayVerdict::other_outcome, ""}},
      {flood, {scenarios::ReplayVerdict::other_outcome, ""}},
  };
  // Generous: the interpreter may start slowly on a loaded machine (a pyenv shim is a script).
  scenarios::ReplayOptions options = scenarios::replay_options_from_environment();
  options.replay_timeout = std::chrono::milliseconds(120'000);
  for (const auto& [program, expected] : programs) {
    SCOPED_TRACE(program.substr(0, 120));
    const auto reports = scenarios::run_replays(scenario({{"cupy", program}}), options);
    ASSERT_EQ(reports.size(), 1u);
    const scenarios::ReplayReport& report = reports[0];
    EXPECT_EQ(report.verdict, expected.first) << to_string(report.verdict) << ": " << report.detail << "\n" << report.log;
    EXPECT_EQ(report.outcome, expected.second);
    EXPECT_FALSE(report.stack_version.empty()) << "an installed stack has a version";
    EXPECT_EQ(report.stack, "cupy");
    if (!expected.second.empty()) {
      EXPECT_EQ(report.toolkit, "t 1.0");
    } else {
      EXPECT_NE(report.detail.find("without a CUJIT_REPLAY outcome line"), std::string::npos) << report.detail;
    }
    EXPECT_LE(report.log.size(), std::size_t{70 * 1024}) << "the log is bounded";
  }
}

// A replay that does not end is killed at its time limit: another outcome, saying so.
TEST_F(Replays, AReplayPastItsTimeLimitIsKilled) {
  scenarios::ReplayOptions options = scenarios::replay_options_from_environment();
  options.replay_timeout = std::chrono::milliseconds(5000);
  const auto reports = scenarios::run_replays(scenario({{"cupy", "import time\ntime.sleep(600)\n" + prints("ok")}}), options);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].verdict, scenarios::ReplayVerdict::other_outcome);
  EXPECT_NE(reports[0].detail.find("killed after its time limit"), std::string::npos) << reports[0].detail;
}

TEST_F(Replays, AStackPython3CannotImportIsNotInstalledWithItsReasonAndItsProgramNeverRuns) {
  // The programs would leave a file if they ran.
  const std::string marker = (dir.path() / "ran").string();
  const std::string program = "open(" + nlohmann::json(marker).dump() + ", 'w').write('x')\n" + prints("ok");
  const auto reports =
      scenarios::run_replays(scenario({{"numba-cuda", program}, {"cuda.core", program}}), scenarios::replay_options_from_environment());
  ASSERT_EQ(reports.size(), 2u);
  for (const scenarios::ReplayReport& report : reports) {
    SCOPED_TRACE(report.stack);
    EXPECT_EQ(report.verdict, scenarios::ReplayVerdict::not_installed) << report.detail;
    EXPECT_TRUE(report.outcome.empty());
    EXPECT_TRUE(report.stack_version.empty());
  }
  EXPECT_NE(reports[0].detail.find("import numba.cuda"), std::string::npos) << reports[0].detail;
  EXPECT_NE(reports[0].detail.find("fake numba.cuda: not installed here"), std::string::npos) << reports[0].detail;
  EXPECT_NE(reports[1].detail.find("exited with status 7"), std::string::npos) << reports[1].detail;
  EXPECT_FALSE(std::filesystem::exists(marker));
  // An interpreter that cannot run makes every stack "not installed", saying why.
  scenarios::ReplayOptions missing;
  missing.python = (dir.path() / "no-such-python").string();
  const auto none = scenarios::run_replays(scenario({{"cupy", prints("ok")}}), missing);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].verdict, scenarios::ReplayVerdict::not_installed);
  EXPECT_NE(none[0].detail.find("could not start"), std::string::npos) << none[0].detail;
}

// A replay program swapped for a symlink out of the set after loading is not run.
TEST_F(Replays, TheProgramIsCheckedAgainBeforeItRuns) {
  const scenarios::Scenario loaded = scenario({{"cupy", prints("ok")}});
  put(dir, "elsewhere.py", prints("link-error"));
  std::filesystem::remove(dir.path() / "set/replays/s/r0.py");
  std::filesystem::create_symlink(dir.path() / "elsewhere.py", dir.path() / "set/replays/s/r0.py");
  const auto reports = scenarios::run_replays(loaded, scenarios::replay_options_from_environment());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].verdict, scenarios::ReplayVerdict::other_outcome);
  EXPECT_NE(reports[0].detail.find("leads outside"), std::string::npos) << reports[0].detail;
}

// A replay program, or anything beside it Python could import, that someone other than
// root or this user could have written is never run (red-team finding F3): every mode with
// a group or other write bit, on the program and on a sibling module.
TEST_F(Replays, AProgramOrSiblingOthersCanWriteIsRefusedAndNeverRuns) {
  const std::string marker = (dir.path() / "ran").string();
  const std::string program = "open(" + nlohmann::json(marker).dump() + ", 'w').write('x')\n" + prints("ok");
  for (const char* target : {"r0.py", "helper.py"}) {
    for (const mode_t mode : {0664, 0646, 0666, 0777, 0622, 0602}) {
      SCOPED_TRACE(std::string(target) + " mode " + std::to_string(mode));
      const scenarios::Scenario loaded = scenario({{"cupy", program}});
      put(dir, "set/replays/s/helper.py", "VALUE = 1\n");
      ASSERT_EQ(::chmod((dir.path() / "set/replays/s" / target).c_str(), mode), 0);
      const auto reports = scenarios::run_replays(loaded, scenarios::replay_options_from_environment());
      ASSERT_EQ(reports.size(), 1u);
      EXPECT_EQ(reports[0].verdict, scenarios::ReplayVerdict::other_outcome) << reports[0].detail;
      EXPECT_NE(reports[0].detail.find("refusing to run"), std::string::npos) << reports[0].detail;
      EXPECT_NE(reports[0].detail.find(target), std::string::npos) << reports[0].detail;
      EXPECT_FALSE(std::filesystem::exists(marker)) << "a refused replay ran";
      ASSERT_EQ(::chmod((dir.path() / "set/replays/s" / target).c_str(), 0644), 0);
    }
  }
  // The same files, owned and not writable by others, run (the test's power).
  const auto reports = scenarios::run_replays(scenario({{"cupy", program}}), scenarios::replay_options_from_environment());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].verdict, scenarios::ReplayVerdict::fixed) << reports[0].detail;
  EXPECT_TRUE(std::filesystem::exists(marker));
}

TEST_F(Replays, TheBundleShowsEachReplayAndKeepsCujitsVerdict) {
  scenarios::ScenarioReport report;
  report.name = "s";
  report.verdict = scenarios::Verdict::as_expected;
  report.replays = scenarios::run_replays(scenario({{"cupy", prints("link-error")}}), scenarios::replay_options_from_environment());
  const std::string text = scenarios::render_text(report);
  EXPECT_NE(text.find("cupy 0.0-fake: reproduced (outcome link-error; reported link-error, fixed ok) toolkit t 1.0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("verdict: as expected"), std::string::npos) << text;
  const auto doc = nlohmann::json::parse(scenarios::render_json(report));
  EXPECT_EQ(doc["replays"][0]["verdict"], "reproduced");
  EXPECT_EQ(doc["replays"][0]["stack"], "cupy");
  EXPECT_EQ(doc["verdict"], "as expected");
}

// Every committed replay ends with its outcome line whatever the stack does (issue 29: never
// a traceback without CUJIT_REPLAY): each runs against fakes of all three stacks that import
// but find no device, and whose every compile, link, load or allocation raises. A replay
// must turn that into an outcome (needs-device, setup-error, ...), never end without one.
TEST_F(Replays, EveryCommittedReplayPrintsAnOutcomeWhenTheStackHasNoDeviceAndEveryCallFails) {
  const std::string raise = "raise RuntimeError('fake stack: no device, nothing works')\n";
  // A module whose unknown attributes raise (dunder lookups, as the version probe makes, say
  // "absent" as Python expects).
  const std::string failing_module = "def __getattr__(name):\n    if name.startswith('__'):\n"
                                     "        raise AttributeError(name)\n    " + raise;
  put(dir, "site/numpy/__init__.py", "int32 = int64 = float16 = float32 = object\nrow_stack = vstack = None\n" + failing_module);
  put(dir, "site/numba/__init__.py", "types = None\n");
  put(dir, "site/numba/cuda/__init__.py", "def is_available():\n    return False\n" + failing_module);
  put(dir, "site/numba/cuda/cudadrv/__init__.py", "");
  put(dir, "site/numba/cuda/cudadrv/driver.py", failing_module);
  const std::string failing_class = "class Failing:\n    def __init__(self, *args, **kwargs):\n        " + raise +
                                    "    @staticmethod\n    def from_ptx(*args, **kwargs):\n        " + raise +
                                    "    @staticmethod\n    def from_ltoir(*args, **kwargs):\n        " + raise;
  put(dir, "site/cuda/core/__init__.py", failing_class + "Device = Linker = ObjectCode = Program = Failing\n"
      "class LinkerOptions:\n    def __init__(self, **kwargs):\n        pass\nProgramOptions = LinkerOptions\n");
  put(dir, "site/cupy/cuda/__init__.py", "from . import runtime\n");
  put(dir, "site/cupy/cuda/runtime.py", "def getDeviceCount():\n    return 0\n");
  put(dir, "site/cupy/__init__.py", "__version__ = '0.0-fake'\nfrom . import cuda\n" + failing_module);
  scenarios::ReplayOptions options = scenarios::replay_options_from_environment();
  options.replay_timeout = std::chrono::milliseconds(120'000);
  int programs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    const scenarios::Scenario scenario = scenarios::load_scenario(entry.path());
    for (const scenarios::ReplayReport& report : scenarios::run_replays(scenario, options)) {
      if (report.verdict == scenarios::ReplayVerdict::does_not_apply) continue;
      ++programs;
      SCOPED_TRACE(report.program);
      EXPECT_NE(report.verdict, scenarios::ReplayVerdict::not_installed) << report.detail;
      EXPECT_FALSE(report.outcome.empty()) << "no CUJIT_REPLAY line: " << report.detail << "\n" << report.log;
      EXPECT_NE(report.outcome, report.fixed_outcome) << "a stack that does nothing cannot have fixed the case";
    }
  }
  EXPECT_GE(programs, 33);
}

// A stack that cannot express the case (issue 29): the file says so with the reason, the cell
// is "does not apply" with it, and nothing is probed or run for that stack, even where no
// interpreter could start; a replayed stack beside it still runs.
TEST_F(Replays, AStackThatCannotExpressTheCaseDoesNotApplyWithItsReasonAndNothingRuns) {
  const std::string marker = (dir.path() / "ran").string();
  put(dir, "set/replays/s/r0.py", "open(" + nlohmann::json(marker).dump() + ", 'w').write('x')\n" + prints("ok"));
  const auto file = put(dir, "set/repro/s.json", R"({"schema": 1, "name": "s", "found_here": "a test",
      "inputs": [{"inline": ".version 9.0\n", "format": "ptx"}], "expect": {"outcome": "success"},
      "replays": [{"stack": "numba-cuda", "does_not_apply": "no such API, \u001b[31m here"},
                  {"stack": "cupy", "program": "../replays/s/r0.py", "reported_outcome": "link-error", "fixed_outcome": "ok"}]})");
  const scenarios::Scenario loaded = scenarios::load_scenario(file);
  ASSERT_EQ(loaded.replays.size(), 2u);
  scenarios::ReplayOptions missing;
  missing.python = (dir.path() / "no-such-python").string();
  const auto without_python = scenarios::run_replays(loaded, missing);
  ASSERT_EQ(without_python.size(), 2u);
  EXPECT_EQ(without_python[0].verdict, scenarios::ReplayVerdict::does_not_apply) << without_python[0].detail;
  EXPECT_EQ(without_python[0].detail, "no such API, \x1b[31m here");
  EXPECT_TRUE(without_python[0].outcome.empty());
  EXPECT_EQ(without_python[1].verdict, scenarios::ReplayVerdict::not_installed) << "the other stack was probed";
  const auto reports = scenarios::run_replays(loaded, scenarios::replay_options_from_environment());
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].verdict, scenarios::ReplayVerdict::does_not_apply);
  EXPECT_EQ(reports[1].verdict, scenarios::ReplayVerdict::fixed) << reports[1].detail;
  EXPECT_TRUE(std::filesystem::exists(marker));
  scenarios::ScenarioReport report;
  report.name = "s";
  report.verdict = scenarios::Verdict::as_expected;
  report.replays = reports;
  const std::string text = scenarios::render_text(report);
  EXPECT_NE(text.find("numba-cuda: does not apply\n    no such API, "), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "the reason is printed escaped";
  EXPECT_EQ(nlohmann::json::parse(scenarios::render_json(report))["replays"][0]["verdict"], "does not apply");
}

// An entry is either a replay or a reason, never both, and a reason is never empty.
TEST_F(Replays, ADoesNotApplyEntryTakesOnlyTheStackAndANonEmptyReason) {
  put(dir, "set/replays/s/r0.py", prints("ok"));
  const std::string program = R"("program": "../replays/s/r0.py", "reported_outcome": "a", "fixed_outcome": "b")";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"stack": "cupy", "does_not_apply": "why", )" + program + "}", "unknown field"},
      {R"({"stack": "cupy", "does_not_apply": ""})", "does_not_apply"},
      {R"({"stack": "cupy", "does_not_apply": 5})", "does_not_apply"},
      {R"({"does_not_apply": "why"})", "stack"},
      {R"({"stack": "cupy", "does_not_apply": "why"}, {"stack": "cupy", )" + program + "}", "a second time"},
  };
  for (const auto& [entries, wanted] : refused) {
    SCOPED_TRACE(entries);
    const auto file = put(dir, "set/repro/s.json", R"({"schema": 1, "name": "s", "found_here": "a test",
        "inputs": [{"inline": ".version 9.0\n", "format": "ptx"}], "expect": {"outcome": "success"},
        "replays": [)" + entries + "]}");
    CUJIT_EXPECT_ERROR((void)scenarios::load_scenario(file), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(wanted), std::string::npos) << error.what(););
  }
}

// parse_replay_output over generated output: only a line that starts with the marker and
// holds a JSON object with a string outcome counts, and the last such line wins.
TEST(ReplayOutput, OnlyAWholeMarkerLineWithAStringOutcomeCounts) {
  const std::vector<std::string> noise = {"", "x\n", "CUJIT_REPLAY\n", "CUJIT_REPLAY {}\n", " CUJIT_REPLAY {\"outcome\": \"no\"}\n",
                                          "CUJIT_REPLAY {\"outcome\": [1]}\n", "CUJIT_REPLAY [\"outcome\"]\n",
                                          "\xff\xfe\n"};
  const std::string good = "CUJIT_REPLAY {\"outcome\": \"ok\", \"detail\": \"d\"}\n";
  for (const std::string& before : noise) {
    for (const std::string& after : noise) {
      SCOPED_TRACE(before + "|" + after);
      EXPECT_EQ(scenarios::parse_replay_output(before + after).outcome, "");
      // The last line that starts with the marker decides, valid or not.
      const auto line = scenarios::parse_replay_output(before + good + after);
      if (after.rfind("CUJIT_REPLAY ", 0) == 0) {
        EXPECT_EQ(line.outcome, "");
      } else {
        EXPECT_EQ(line.outcome, "ok");
        EXPECT_EQ(line.detail, "d");
      }
    }
  }
}

}  // namespace
}  // namespace cujit
