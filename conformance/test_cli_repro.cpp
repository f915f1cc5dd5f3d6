// Every bad-input case of the linking conformance through `cujit repro`: exit 1 (not as
// expected) or 2 (usage / environment), a message naming the input, never a crash; both
// in the isolated child (the default) and in process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"
#include "cujit/device.hpp"

namespace cujit {
namespace {

struct BadInput {
  const char* name;
  std::string file;   // written into the temp dir (empty: none)
  std::string bytes;
  std::string input;  // the scenario's inputs array
  std::string named;  // what the output must mention
};

void PrintTo(const BadInput& input, std::ostream* out) { *out << input.name; }

std::string fixture(const std::string& name) { return test::read_bytes(test::fixture_path(name)); }

std::vector<BadInput> cases() {
  const std::string cubin = fixture("scale_kernel.cubin"), fatbin = fixture("scale_kernel_sass.fatbin");
  std::string wrong_magic = fatbin;
  wrong_magic[0] = 'X';
  wrong_magic[1] = '\0';
  auto path_input = [](const std::string& file) { return R"([{"path": ")" + file + R"("}])"; };
  return {
      {"empty_file", "empty.ptx", "", path_input("empty.ptx"), "empty.ptx"},
      {"truncated_cubin", "cut.cubin", cubin.substr(0, cubin.size() / 2), path_input("cut.cubin"), "truncated"},
      {"truncated_fatbin", "cut.fatbin", fatbin.substr(0, fatbin.size() / 2), path_input("cut.fatbin"), "truncated"},
      {"wrong_magic", "magic.fatbin", wrong_magic, path_input("magic.fatbin"), "magic.fatbin"},
      {"extension_disagrees", "holds_ptx.cubin", fixture("scale_kernel.ptx"), path_input("holds_ptx.cubin"), "content is ptx"},
      {"no_extension", "kernel", fixture("scale_kernel.ptx"), path_input("kernel"), "has no extension"},
      {"unknown_extension", "header.cuh", "__device__ int f();\n", path_input("header.cuh"), "unknown extension"},
      {"missing_path", "", "", path_input("missing.ptx"), "no such file"},
      {"directory", "", "", path_input("a_directory.ptx"), "is a directory"},
      {"ptx_syntax_error", "broken.ptx", ".version 9.0\n.target sm_90\n.visible .entry k()\n{\n frob;\n}\n",
       path_input("broken.ptx"), "broken.ptx"},
      {"unresolved_extern", "", "",
       R"([{"fixture": "mixed_kernel.ptx"}, {"fixture": "dev_add.ptx"}])", "dev_mul"},
      {"duplicate_symbol", "", "",
       R"([{"fixture": "dev_add.ptx"}, {"fixture": "dev_add.cubin"}])", "defined more than once"},
      {"cubin_for_sm80", "", "", R"([{"fixture": "scale_kernel_sm80.cubin"}])", "SASS for sm_80"},
      {"sm90a_ptx_for_sm90", "", "", R"([{"fixture": "scale_kernel_sm90a.ptx"}])", "sm_90a"},
      {"nvrtc_compile_error", "broken.cu", "extern \"C\" __global__ void k() { nope(); }\n",
       path_input("broken.cu"), "broken.cu"},
  };
}

test::cli::Run repro(std::vector<std::string> args) {
  test::cli::Spec spec;
  spec.args = std::move(args);
  spec.args.insert(spec.args.begin(), "repro");
  spec.unset = {"CUJIT_LINKER", "CUJIT_TEST_REPRO_CRASH", "CUJIT_BUILD_DIR"};
  return test::cli::run_cujit(spec);
}

class HostileCliRepro : public ::testing::TestWithParam<BadInput> {};

TEST_P(HostileCliRepro, BadInputExitsCleanlyNamingTheProblem) {
  const BadInput& c = GetParam();
  test::TempDir dir;
  if (!c.file.empty()) dir.write(c.file, c.bytes);
  if (std::string(c.name) == "directory") std::filesystem::create_directory(dir.path() / "a_directory.ptx");
  const auto scenario = dir.write("scenario.json", R"({"schema": 1, "name": ")" + std::string(c.name) +
                                                       R"(", "inputs": )" + c.input +
                                                       R"(, "expect": {"outcome": "success"}})");
  for (const bool in_process : {false, true}) {
    SCOPED_TRACE(in_process ? "in process" : "isolated");
    const auto out = in_process ? repro({"--in-process", scenario.string()}) : repro({scenario.string()});
    EXPECT_EQ(out.signal, 0) << out.all();
    EXPECT_TRUE(out.exit_code == 1 || out.exit_code == 2) << "exit " << out.exit_code << "\n" << out.all();
    EXPECT_NE(out.all().find(c.named), std::string::npos) << out.all();
    EXPECT_NE(out.all().find("not as expected"), std::string::npos) << out.all();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, HostileCliRepro, ::testing::ValuesIn(cases()),
                         [](const auto& bad) { return std::string(bad.param.name); });

TEST(HostileCliReproUsage, MalformedFileAndMissingFileAreExit2) {
  test::TempDir dir;
  const auto bad = dir.write("bad.json", "{ nope");
  const auto malformed = repro({bad.string()});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.all();
  EXPECT_NE(malformed.err.find("bad.json"), std::string::npos) << malformed.all();
  const auto missing = repro({(dir.path() / "none.json").string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.all();
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.all();
  const auto usage = repro({});
  EXPECT_EQ(usage.exit_code, 2) << usage.all();
}

// ---- from any directory, replays and the verdict table (issue 29) ----------------------------

// TempDir::write into a subdirectory, created first.
std::filesystem::path put(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories((dir.path() / name).parent_path());
  return dir.write(name, bytes);
}

test::cli::Run repro_with(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env,
                          const std::filesystem::path& cwd) {
  test::cli::Spec spec;
  spec.args = std::move(args);
  spec.args.insert(spec.args.begin(), "repro");
  spec.env = std::move(env);
  spec.cwd = cwd;
  spec.unset = {"CUJIT_LINKER", "CUJIT_TEST_REPRO_CRASH", "CUJIT_BUILD_DIR", "CUJIT_SCENARIO_PATH"};
  return test::cli::run_cujit(spec);
}

// Without a device, a scenario that needs one exits 2 saying so; that is the only exit 2.
void expect_ran(const test::cli::Run& out) {
  if (out.exit_code == 2 && !has_device()) {
    EXPECT_NE(out.err.find("needs a CUDA device"), std::string::npos) << out.all();
  } else {
    EXPECT_EQ(out.exit_code, 0) << out.all();
    EXPECT_NE(out.out.find("verdict: as expected"), std::string::npos) << out.all();
  }
}

// Every committed file, run from another directory and from a copy of the scenario set
// elsewhere (another checkout, a download): no usage error, no build fixture set needed
// for "path" inputs.
TEST(CliReproAnywhere, EveryCommittedFileRunsFromAnyDirectoryAndFromACopyOfTheSet) {
  test::TempDir elsewhere;
  std::filesystem::create_directories(elsewhere.path() / "set");
  for (const char* part : {"repro", "fixtures", "replays"}) {
    std::filesystem::copy(test::scenario_path(part), elsewhere.path() / "set" / part,
                          std::filesystem::copy_options::recursive);
  }
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::scenario_path("repro"))) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    expect_ran(repro_with({"--no-replays", entry.path().string()}, {}, elsewhere.path()));
    const auto copy = elsewhere.path() / "set" / "repro" / entry.path().filename();
    expect_ran(repro_with({"--no-replays", std::filesystem::relative(copy, elsewhere.path()).string()}, {},
                          elsewhere.path()));
  }
  EXPECT_GE(files, 17u);
}

// A fake CuPy on PYTHONPATH (and a numba.cuda that cannot import), so that the command's
// replay path runs the same on a CPU machine and on one with the real stacks.
struct FakeStacks {
  test::TempDir dir;
  FakeStacks() {
    put(dir, "site/cupy/__init__.py", "__version__ = '0.0-fake'\n");
    put(dir, "site/numba/__init__.py", "");
    put(dir, "site/numba/cuda/__init__.py", "raise ImportError('fake numba.cuda: not installed here')\n");
    put(dir, "set/fixtures/.keep", "");
  }
  // -S: the fakes alone, whatever the machine has installed (docs/cli.md, CUJIT_REPLAY_PYTHON_FLAGS).
  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"PYTHONPATH", (dir.path() / "site").string()}, {"CUJIT_REPLAY_PYTHON_FLAGS", "-S"}};
  }
  // set/repro/NAME.json, linking one inline PTX function (no device needed), with a CuPy
  // replay printing `outcome` and a numba-cuda replay; `expect` is cujit's expectation.
  // `repro --all` over the set (`more` arguments after it): must exit 0; its verdicts.json.
  nlohmann::json table(const std::vector<std::string>& more = {}) {
    const auto out_dir = dir.path() / "out";
    std::vector<std::string> args{"--all", (dir.path() / "set" / "repro").string()};
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"--out", out_dir.string()});
    const auto run = repro_with(args, env(), dir.path());
    EXPECT_EQ(run.exit_code, 0) << run.all();
    return nlohmann::json::parse(test::read_bytes(out_dir / "verdicts.json"));
  }
  // `fields`: more of the file's top-level fields, each followed by a comma.
  std::filesystem::path scenario(const std::string& name, const std::string& outcome, const std::string& expect,
                                 const std::string& fields = "") {
    put(dir, "set/replays/" + name + "/replay_cupy.py",
              "print('CUJIT_REPLAY {\"outcome\": \"" + outcome + "\", \"toolkit\": \"fake 1.0\"}')\n");
    put(dir, "set/replays/" + name + "/replay_numba_cuda.py", "raise SystemExit('must not run')\n");
    return put(dir, "set/repro/" + name + ".json", R"({"schema": 1, "name": ")" + name + R"(", "found_here": "a test", )" + fields + R"(
      "inputs": [{"inline": ".version 8.0\n.target sm_90\n.address_size 64\n.visible .func f() { ret; }\n", "format": "ptx", "name": "f.ptx"}],
      "options": {"arch": "sm_90"}, "expect": )" + expect + R"(,
      "replays": [
        {"stack": "cupy", "program": "../replays/)" + name + R"(/replay_cupy.py", "reported_outcome": "link-error", "fixed_outcome": "ok"},
        {"stack": "numba-cuda", "program": "../replays/)" + name + R"(/replay_numba_cuda.py", "reported_outcome": "link-error", "fixed_outcome": "ok"}]})");
  }
};

TEST(CliReproReplays, EachReplayIsReportedAndNeverChangesCujitsExitStatus) {
  FakeStacks fake;
  const auto file = fake.scenario("upstream-still-broken", "link-error", R"({"outcome": "success"})");
  const auto out = repro_with({file.string()}, fake.env(), fake.dir.path());
  EXPECT_EQ(out.exit_code, 0) << out.all();
  EXPECT_NE(out.out.find("cupy 0.0-fake: reproduced (outcome link-error; reported link-error, fixed ok) toolkit fake 1.0"),
            std::string::npos)
      << out.all();
  EXPECT_NE(out.out.find("numba-cuda: not installed"), std::string::npos) << out.all();
  EXPECT_NE(out.out.find("fake numba.cuda: not installed here"), std::string::npos) << out.all();
  const auto json_out = repro_with({"--json", file.string()}, fake.env(), fake.dir.path());
  EXPECT_EQ(json_out.exit_code, 0) << json_out.all();
  const auto doc = nlohmann::json::parse(json_out.out);
  ASSERT_EQ(doc["replays"].size(), 2u) << json_out.out;
  EXPECT_EQ(doc["replays"][0]["verdict"], "reproduced");
  EXPECT_EQ(doc["replays"][1]["verdict"], "not installed");
  const auto none = repro_with({"--no-replays", file.string()}, fake.env(), fake.dir.path());
  EXPECT_EQ(none.exit_code, 0) << none.all();
  EXPECT_EQ(none.out.find("replays"), std::string::npos) << none.all();
}

// --all --stacks --out: one table, scenarios x {cujit-nvjitlink, cujit-driver, numba-cuda,
// cuda.core, cupy}, in markdown and JSON, each cell naming a log that exists; exit 0 when
// cujit's verdicts hold, 1 when one does not, whatever the stacks say.
// A scenario file's name is anyone's text: a name holding a newline, table syntax and an
// escape sequence neither forges a row nor reaches the terminal (red-team finding F12).
TEST(CliReproTable, AFileNameCannotForgeARowOrSendEscapes) {
  FakeStacks fake;
  const std::filesystem::path plain = fake.scenario("plain", "ok", R"({"outcome": "success"})");
  std::filesystem::copy_file(plain, plain.parent_path() /
                                        "z | [as expected](x) |\n| forged | [as expected](y) |\x1b[31m.json");
  const auto out_dir = fake.dir.path() / "out";
  const auto run = repro_with({"--all", (fake.dir.path() / "set" / "repro").string(), "--out", out_dir.string()},
                              fake.env(), fake.dir.path());
  const std::string markdown = test::read_bytes(out_dir / "verdicts.md");
  for (const std::string& text : {run.out, markdown}) {
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find("\n| forged"), std::string::npos) << text;
  }
  EXPECT_NE(markdown.find("\\n/ forged"), std::string::npos) << markdown;
}

TEST(CliReproTable, AllStacksWritesOneTableWhoseCellsLinkTheirLogs) {
  FakeStacks fake;
  fake.scenario("a-fixed-upstream", "ok", R"({"outcome": "success"})");
  fake.scenario("b-still-broken-upstream", "link-error", R"({"outcome": "success"})");
  const auto out_dir = fake.dir.path() / "out";
  const auto doc = fake.table({"--stacks"});
  EXPECT_EQ(doc["columns"], nlohmann::json({"cujit-nvjitlink", "cujit-driver", "numba-cuda", "cuda.core", "cupy"}));
  ASSERT_EQ(doc["rows"].size(), 2u);
  const auto& a = doc["rows"][0]["cells"];
  const auto& b = doc["rows"][1]["cells"];
  EXPECT_EQ(a["cujit-nvjitlink"]["verdict"], "as expected");
  EXPECT_EQ(a["cujit-driver"]["verdict"], "not in file");
  EXPECT_EQ(a["cupy"]["verdict"], "fixed");
  EXPECT_EQ(b["cupy"]["verdict"], "reproduced");
  EXPECT_EQ(a["numba-cuda"]["verdict"], "not installed");
  EXPECT_EQ(a["cuda.core"]["verdict"], "no replay");
  for (const auto& row : doc["rows"]) {
    for (const auto& [column, cell] : row["cells"].items()) {
      const std::string log = cell["log"];
      if (log.empty()) continue;
      EXPECT_TRUE(std::filesystem::is_regular_file(out_dir / log)) << column << ": " << log;
    }
  }
  const std::string markdown = test::read_bytes(out_dir / "verdicts.md");
  EXPECT_NE(markdown.find("| scenario | cujit-nvjitlink | cujit-driver | numba-cuda | cuda.core | cupy |"), std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| b-still-broken-upstream | [as expected](logs/b-still-broken-upstream.cujit.txt) |"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("[reproduced](logs/b-still-broken-upstream.cupy.log)"), std::string::npos) << markdown;

  // One cujit verdict that does not hold: exit 1, and the table is still written.
  fake.scenario("c-cujit-wrong", "ok", R"({"outcome": "error", "kind": "link"})");
  const auto failing = repro_with({"--all", (fake.dir.path() / "set" / "repro").string(), "--out", out_dir.string()},
                                  fake.env(), fake.dir.path());
  EXPECT_EQ(failing.exit_code, 1) << failing.all();
  const auto second = nlohmann::json::parse(test::read_bytes(out_dir / "verdicts.json"));
  EXPECT_EQ(second["rows"][2]["cells"]["cujit-nvjitlink"]["verdict"], "not as expected");
  EXPECT_EQ(second["columns"].size(), 2u) << "without --stacks, cujit's columns only";
  // --all needs --out; --stacks and --out need --all.
  EXPECT_EQ(repro_with({"--all"}, {}, fake.dir.path()).exit_code, 2);
  EXPECT_EQ(repro_with({"--stacks", "x.json"}, {}, fake.dir.path()).exit_code, 2);
}

// --all gives each scenario's isolated child the table's --time-limit: a scenario whose
// child never ends (the hang seam) is killed at that limit and is its cell's verdict; the
// table is written and its exit says a cujit verdict did not hold (red-team F8, whose
// fixed 300 s limit --all kept).
// The driver cell is never blank and never a pass it did not earn: "does not apply" with the
// file's reason, or, for a file that runs both backends, the driver's own verdict where
// there is a device and "needs a device" with its reason where there is none (the nvJitLink
// half still runs and is judged).
TEST(CliReproTable, TheDriverCellSaysWhyItDidNotRun) {
  FakeStacks fake;
  fake.scenario("a-lto-only", "ok", R"({"outcome": "success"})",
                R"("driver_does_not_apply": "LTO-IR inputs: the driver linker takes none",)");
  fake.scenario("b-both", "ok", R"({"outcome": "success"})", R"("backend": "both",)");
  const auto doc = fake.table();
  ASSERT_EQ(doc["rows"].size(), 2u);
  const auto& lto_only = doc["rows"][0]["cells"];
  const auto& both = doc["rows"][1]["cells"];
  EXPECT_EQ(lto_only["cujit-nvjitlink"]["verdict"], "as expected");
  EXPECT_EQ(lto_only["cujit-driver"]["verdict"], "does not apply");
  EXPECT_EQ(lto_only["cujit-driver"]["detail"], "LTO-IR inputs: the driver linker takes none");
  EXPECT_EQ(both["cujit-nvjitlink"]["verdict"], "as expected");
  if (has_device()) {
    EXPECT_EQ(both["cujit-driver"]["verdict"], "as expected");
  } else {
    EXPECT_EQ(both["cujit-driver"]["verdict"], "needs a device");
    EXPECT_NE(both["cujit-driver"]["detail"].get<std::string>(), "");
  }
  const std::string markdown = test::read_bytes(fake.dir.path() / "out" / "verdicts.md");
  EXPECT_NE(markdown.find("does not apply"), std::string::npos) << markdown;
}

TEST(CliReproTable, EachScenarioChildIsKilledAtTheTablesTimeLimit) {
  FakeStacks fake;
  fake.scenario("hangs", "ok", R"({"outcome": "success"})");
  const auto out_dir = fake.dir.path() / "out";
  auto env = fake.env();
  env.emplace_back("CUJIT_TEST_REPRO_CRASH", "hang");
  const auto run = repro_with({"--all", (fake.dir.path() / "set" / "repro").string(), "--out", out_dir.string(),
                               "--time-limit", "2"},
                              env, fake.dir.path());
  EXPECT_EQ(run.exit_code, 1) << run.all();
  const auto doc = nlohmann::json::parse(test::read_bytes(out_dir / "verdicts.json"));
  ASSERT_EQ(doc["rows"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["rows"][0]["cells"]["cujit-nvjitlink"]["verdict"], "crashed") << doc.dump();
  const std::string log = test::read_bytes(out_dir / "logs" / "hangs.cujit.txt");
  EXPECT_NE(log.find("timed out and was killed"), std::string::npos) << log;
  EXPECT_NE(log.find("hang forever"), std::string::npos) << "the seam ran: " << log;
}

}  // namespace
}  // namespace cujit
