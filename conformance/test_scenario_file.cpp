// Hostile and broken scenario files: every field of the schema with every wrong JSON type,
// unknown and duplicate fields, files that are not regular or too large, and input paths
// that lead outside the scenario's directory and the fixture set. Every defect must be a
// ScenarioFileError (Error(usage) from "scenario file") naming the file and the field's
// JSON path; nothing may crash, hang or read outside.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "runner/scenario_file.hpp"
#include "runner/scenario_run.hpp"
#include "support/fixtures.hpp"
#include "support/printers.hpp"

namespace cujit {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using scenarios::LoadOptions;
using scenarios::ScenarioFileError;

// A file that loads and uses every field of the schema ("expect" is tested on kExpectBase:
// a file has either "steps" or "expect").
const char* const kEveryField = R"json({
  "schema": 1,
  "name": "every-field",
  "reported": "what was reported",
  "reported_at": "NVIDIA/numba-cuda#101",
  "cujit": "what cujit does",
  "builder": "kernel",
  "backend": "nvjitlink",
  "inputs": [
    {"path": "k.cu", "role": "source", "nrt": false, "format": "cu", "name": "k.cu", "origin": "file"},
    {"fixture": "dev_add.ptx", "declares": {"name": "dev_add", "module": "m", "signature": "int32(int32, int32)",
                                            "abi": "c", "abi_name": "dev_add"}},
    {"inline": ".version 9.0\n", "format": "ptx", "name": "inline.ptx", "origin": "bytes",
     "patch": [{"offset": 0, "hex": "2e"}]},
    {"abi": {"name": "add", "signature": "int32(int32, int32)", "params": ["x", "y"], "body": "return x + y;",
             "abi": "c", "abi_name": "add_c", "output": "ltoir"}, "nrt": false, "role": "link"}
  ],
  "options": {"arch": "sm_90", "lto": true, "debug": false, "lineinfo": false, "max_registers": 32,
              "optimization_level": 3, "ftz": false, "prec_div": true, "prec_sqrt": true, "fma": true,
              "nrt": null, "nrt_global": false},
  "launch": {"kernel": "k", "grid": [1, 1, 1], "block": [32],
             "args": [{"output": "int32", "count": 4}, {"int32": 5}, {"int64": 5}, {"uint32": 5}, {"uint64": 5},
                      {"float32": 1.5}, {"float64": 1.5}],
             "expect": [1, 2]},
  "steps": [{"options": {"arch": "sm_80"},
             "expect": {"outcome": "success", "cubin_sm": 80, "kind": "link", "message": "m"}}],
  "reported_failure": {"kind": "link", "message": "m"}
})json";

const char* const kExpectBase = R"({
  "schema": 1, "name": "expect-field",
  "inputs": [{"inline": ".version 9.0\n", "format": "ptx"}],
  "expect": {"outcome": "error", "kind": "link", "message": "m", "cubin_sm": 90}
})";

// The values every field is tried with.
enum Sample { null_, true_, int_, float_, float_huge, uint_huge, negative, string_, array_, object_, sample_count };
json sample(int which) {
  switch (which) {
    case null_: return nullptr;
    case true_: return true;
    case int_: return 5;
    case float_: return 1.5;
    case float_huge: return 1e30;
    case uint_huge: return 18446744073709551615ULL;  // 2^64 - 1
    case negative: return -1;
    case string_: return "text";
    case array_: return json::array();
    default: return json::object();
  }
}
const char* sample_name(int which) {
  static const char* const names[] = {"null",     "true",     "int",    "float", "float_huge",
                                      "uint_huge", "negative", "string", "array", "object"};
  return names[which];
}

// A field and the samples it accepts; every other sample must be refused naming it.
struct FieldCase {
  const char* pointer;  // JSON pointer into the base file
  std::vector<int> accepted;
  bool expect_base = false;
};

void PrintTo(const FieldCase& field, std::ostream* out) { *out << field.pointer; }

const std::vector<int> any_string{string_};
const std::vector<int> boolean{true_};
const std::vector<int> nothing{};
const std::vector<int> small_unsigned{int_};
const std::vector<int> any_number{int_, float_, float_huge, uint_huge, negative};

std::vector<FieldCase> field_cases() {
  return {
      {"/schema", nothing},
      {"/name", any_string},
      {"/reported", any_string},
      {"/reported_at", nothing},  // "text" names no report
      {"/cujit", any_string},
      {"/builder", nothing},
      {"/backend", nothing},
      {"/inputs", nothing},  // [] is empty: refused too
      {"/inputs/0", nothing},
      {"/inputs/0/path", any_string},
      {"/inputs/0/role", nothing},
      {"/inputs/0/nrt", boolean},
      {"/inputs/0/format", nothing},
      {"/inputs/0/name", any_string},
      {"/inputs/0/origin", nothing},
      {"/inputs/1/fixture", any_string},
      {"/inputs/1/declares", nothing},  // {} has no name
      {"/inputs/1/declares/name", any_string},
      {"/inputs/1/declares/module", any_string},
      {"/inputs/1/declares/signature", nothing},
      {"/inputs/1/declares/abi", nothing},
      {"/inputs/1/declares/abi_name", any_string},
      {"/inputs/2/inline", any_string},
      {"/inputs/2/patch", {array_}},
      {"/inputs/2/patch/0", nothing},
      {"/inputs/2/patch/0/offset", small_unsigned},
      {"/inputs/2/patch/0/hex", nothing},  // "text" is not hex
      {"/inputs/3/abi", nothing},
      {"/inputs/3/abi/name", any_string},
      {"/inputs/3/abi/signature", nothing},
      {"/inputs/3/abi/params", {array_}},
      {"/inputs/3/abi/params/0", any_string},
      {"/inputs/3/abi/body", any_string},
      {"/inputs/3/abi/abi", nothing},
      {"/inputs/3/abi/abi_name", any_string},
      {"/inputs/3/abi/output", nothing},
      {"/options", {object_}},
      {"/options/arch", any_string},
      {"/options/lto", boolean},
      {"/options/debug", boolean},
      {"/options/lineinfo", boolean},
      {"/options/max_registers", small_unsigned},
      {"/options/optimization_level", nothing},  // 5 is out of range
      {"/options/ftz", boolean},
      {"/options/prec_div", boolean},
      {"/options/prec_sqrt", boolean},
      {"/options/fma", boolean},
      {"/options/nrt", {null_, true_}},
      {"/options/nrt_global", boolean},
      {"/launch", nothing},  // {} has no kernel
      {"/launch/kernel", any_string},
      {"/launch/grid", nothing},
      {"/launch/grid/0", small_unsigned},
      {"/launch/block", nothing},
      {"/launch/block/0", small_unsigned},
      {"/launch/args", {array_}},
      {"/launch/args/0", nothing},
      {"/launch/args/0/output", nothing},
      {"/launch/args/0/count", small_unsigned},
      {"/launch/args/1/int32", {int_, negative}},
      {"/launch/args/2/int64", {int_, negative}},
      {"/launch/args/3/uint32", small_unsigned},
      {"/launch/args/4/uint64", {int_, uint_huge}},
      {"/launch/args/5/float32", any_number},
      {"/launch/args/6/float64", any_number},
      {"/launch/expect", {array_}},
      {"/launch/expect/0", any_number},
      {"/steps", nothing},  // [] is empty: refused too
      {"/steps/0", nothing},
      {"/steps/0/options", {object_}},
      {"/steps/0/options/lto", boolean},
      {"/steps/0/expect", nothing},
      {"/steps/0/expect/outcome", nothing},
      {"/steps/0/expect/kind", nothing},
      {"/steps/0/expect/message", any_string},
      {"/steps/0/expect/cubin_sm", small_unsigned},
      {"/reported_failure", {object_}},
      {"/reported_failure/kind", nothing},
      {"/reported_failure/message", any_string},
      {"/expect", nothing, true},
      {"/expect/outcome", nothing, true},
      {"/expect/kind", nothing, true},
      {"/expect/message", any_string, true},
      {"/expect/cubin_sm", small_unsigned, true},
  };
}

// "/steps/0/options/lto" -> "steps[0].options.lto", as the loader names fields.
std::string json_path(const std::string& pointer) {
  std::string out;
  std::size_t at = 1;
  while (at <= pointer.size()) {
    const std::size_t end = std::min(pointer.find('/', at), pointer.size());
    const std::string part = pointer.substr(at, end - at);
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      out += "[" + part + "]";
    } else {
      out += (out.empty() ? "" : ".") + part;
    }
    at = end + 1;
  }
  return out;
}

// The message after "'FILE': " begins with the field's path (or says it is unknown).
void expect_names(const Error& error, const fs::path& file, const std::string& path) {
  EXPECT_EQ(error.kind(), ErrorKind::usage) << error.what();
  EXPECT_EQ(error.component(), "scenario file") << error.what();
  EXPECT_NE(dynamic_cast<const ScenarioFileError*>(&error), nullptr) << error.what();
  const std::string prefix = "'" + file.string() + "': ";
  const std::string& message = error.message();
  ASSERT_EQ(message.rfind(prefix, 0), 0u) << message;
  const std::string rest = message.substr(prefix.size());
  const bool names = rest.rfind(path, 0) == 0 && rest.size() > path.size() &&
                     std::string(" .[").find(rest[path.size()]) != std::string::npos;
  EXPECT_TRUE(names) << "expected the message to name " << path << ": " << message;
}

class HostileScenarioFields : public ::testing::TestWithParam<FieldCase> {};

TEST_P(HostileScenarioFields, EveryWrongJsonTypeIsAUsageErrorNamingTheField) {
  const FieldCase& c = GetParam();
  test::TempDir dir;
  const json base = json::parse(c.expect_base ? kExpectBase : kEveryField);
  {
    const auto file = dir.write("base.json", base.dump());
    EXPECT_NO_THROW((void)scenarios::load_scenario(file)) << "the base file must load";
  }
  for (int which = 0; which < sample_count; ++which) {
    SCOPED_TRACE(std::string(c.pointer) + " = " + sample(which).dump() + " (" + sample_name(which) + ")");
    json doc = base;
    doc[json::json_pointer(c.pointer)] = sample(which);
    const auto file = dir.write(std::string("case_") + sample_name(which) + ".json", doc.dump());
    const bool accepted = std::find(c.accepted.begin(), c.accepted.end(), which) != c.accepted.end();
    try {
      (void)scenarios::load_scenario(file);
      EXPECT_TRUE(accepted) << "loaded, but " << sample(which).dump() << " is wrong for " << c.pointer;
    } catch (const Error& error) {
      EXPECT_FALSE(accepted) << error.what();
      if (!accepted) expect_names(error, file, json_path(c.pointer));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schema, HostileScenarioFields, ::testing::ValuesIn(field_cases()),
                         [](const ::testing::TestParamInfo<FieldCase>& field) {
                           return test_identifier(json_path(field.param.pointer) +
                                                  (field.param.expect_base ? "_alone" : ""));
                         });

// ---- whole files --------------------------------------------------------------------------

class HostileScenarioFile : public ::testing::Test {
 protected:
  test::TempDir dir;

  // `text` is refused with a ScenarioFileError whose message names the file and holds `fragment`.
  void expect_rejected(const std::string& text, const std::string& fragment, const LoadOptions& options = {}) {
    const auto file = dir.write("bad.json", text);
    expect_rejected_file(file, fragment, options);
  }
  void expect_rejected_file(const fs::path& file, const std::string& fragment, const LoadOptions& options = {}) {
    try {
      (void)scenarios::load_scenario(file, options);
      ADD_FAILURE() << "loaded: " << file << ", expected an error with " << fragment;
    } catch (const ScenarioFileError& error) {
      const std::string what = error.what();
      EXPECT_EQ(error.kind(), ErrorKind::usage);
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << what;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "not a ScenarioFileError: " << error.what();
    }
  }
  // A minimal scenario around one inputs array.
  static std::string with_inputs(const std::string& inputs) {
    return R"({"schema": 1, "name": "x", "inputs": )" + inputs + R"(, "expect": {"outcome": "success"}})";
  }
};

TEST_F(HostileScenarioFile, MalformedFilesNameTheFileAndTheField) {
  expect_rejected("{ not json", "not valid JSON");
  // Regression (fuzz_scenario): a number too large for a double is out_of_range, not a
  // parse error; it used to escape as an uncaught exception.
  expect_rejected(R"({"schema": 3333333333333333333333333333333333333333333333333E3333})", "not valid JSON");
  // Regression (fuzz_scenario aborted on this 28-byte input): float-to-int out of range.
  expect_rejected(R"({"schema": 1e30, "name": "x"})", "schema must be 1, not the number 1e+30");
  expect_rejected(R"({"schema": 2, "name": "x"})", "schema must be 1, not the number 2");
  expect_rejected(R"([1, 2])", "the top level must be an object, not an array");
  expect_rejected(R"({"schema": 1})", "name is missing");
  expect_rejected(R"({"schema": 1, "name": "x", "backend": "gold"})", "backend must be one of nvjitlink, driver, both");
  expect_rejected(R"({"schema": 1, "name": "x", "builder": "magic"})", "builder must be one of");
  expect_rejected(R"({"schema": 1, "name": "x", "expect": {"outcome": "success"}})", "inputs is missing");
  expect_rejected(R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}]})", "expect is missing");
  expect_rejected(R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}], "expect": {"outcome": "maybe"}})",
                  "expect.outcome must be one of success, error");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "pdf"}])"), "inputs[0].format is not a format");
  expect_rejected(with_inputs(R"([{"inline": "x"}])"), "inputs[0].format is missing");
  expect_rejected(with_inputs(R"([{"path": 5}])"), "inputs[0].path must be a string, not the number 5");
  expect_rejected(with_inputs(R"([{"fixture": null}])"), "inputs[0].fixture must be a string, not null");
  expect_rejected(with_inputs(R"([{"inline": "x", "path": "y"}])"), "inputs[0] needs exactly one of");
  expect_rejected(with_inputs(R"json([{"abi": {"name": "f", "signature": "int32()"}, "format": "ptx"}])json"),
                  "inputs[0].format does not apply to an 'abi' input");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "origin": "file"}])"), "inputs[0].origin cannot be 'file'");
  expect_rejected(R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}], "steps": [],
                      "expect": {"outcome": "success"}})",
                  "expect cannot be given with 'steps'");
  expect_rejected(R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}], "steps": []})",
                  "steps must not be empty");
}

TEST_F(HostileScenarioFile, NumbersOutOfRangeAreRefused) {
  // 2^64 - 1 as a patch offset used to reach the runner and throw std::out_of_range there.
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "patch": [{"offset": 18446744073709551615, "hex": "00"}]}])"),
                  "inputs[0].patch[0].offset must be an integer from 0 to 1073741824");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "patch": [{"offset": 1.0, "hex": "00"}]}])"),
                  "inputs[0].patch[0].offset must be an integer");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "patch": [{"offset": 0, "hex": "0g"}]}])"),
                  "inputs[0].patch[0].hex must be hex digits");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "patch": [{"offset": 0, "hex": "000"}]}])"),
                  "an odd length");
  const std::string launch = R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}],
      "expect": {"outcome": "success"}, "launch": )";
  expect_rejected(launch + R"({"kernel": "k", "grid": [4294967296]}})", "launch.grid[0] must be an integer from 1 to 4294967295");
  expect_rejected(launch + R"({"kernel": "k", "block": [0]}})", "launch.block[0] must be an integer from 1");
  expect_rejected(launch + R"({"kernel": "k", "block": [1, 1, 1, 1]}})", "launch.block must hold 1 to 3 numbers");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"int32": 2147483648}]}})", "launch.args[0].int32 must be an integer");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"int32": 1e30}]}})", "launch.args[0].int32 must be an integer");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"uint32": -1}]}})", "launch.args[0].uint32 must be an integer");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"float32": 1e300}]}})", "launch.args[0].float32 must be a number");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"int32*": 1}]}})", "unknown field launch.args[0][\"int32*\"]");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"output": "int32", "count": 18446744073709551615}]}})",
                  "launch.args[0].count must be an integer from 1 to 67108864");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"output": "void"}]}})", "launch.args[0].output must be one of");
  expect_rejected(launch + R"({"kernel": "k", "args": [{"output": "int32*"}]}})", "launch.args[0].output must be one of");
}

TEST_F(HostileScenarioFile, UnknownFieldsAreRefusedNamingTheirPath) {
  // A misspelt reported_failure used to be ignored, silently turning off the "reproduced" verdict.
  expect_rejected(R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}],
                      "expect": {"outcome": "success"}, "reported_failur": {"kind": "link"}})",
                  "unknown field reported_failur");
  expect_rejected(R"({"schema": 1, "name": "x", "options": {"colour": "red"}, "inputs": [{"inline": "x", "format": "ptx"}],
                      "expect": {"outcome": "success"}})",
                  "unknown field options.colour");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "nrt ": true}])"), "unknown field inputs[0][\"nrt \"]");
  expect_rejected(R"({"schema": 1, "name": "x", "inputs": [{"inline": "x", "format": "ptx"}],
                      "steps": [{"expect": {"outcome": "error", "kindd": "link"}}]})",
                  "unknown field steps[0].expect.kindd");
  expect_rejected(with_inputs(R"json([{"abi": {"name": "f", "signature": "int32()", "bodyy": ""}}])json"),
                  "unknown field inputs[0].abi.bodyy");
  expect_rejected(with_inputs(R"([{"inline": "x", "format": "ptx", "patch": [{"offset": 0, "hex": "", "len": 1}]}])"),
                  "unknown field inputs[0].patch[0].len");
  // A field given twice: JSON keeps the last one, which would silently drop the first.
  expect_rejected(R"({"schema": 1, "name": "x", "name": "y"})", "the field \"name\" appears twice");
  // Control characters and invalid UTF-8 in a key are escaped in the message, not echoed.
  expect_rejected("{\"schema\": 1, \"a\\u001b[31m\": 1}", "unknown field [\"a\\u001b[31m\"]");
}

TEST_F(HostileScenarioFile, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = "{\"schema\": 1, \"name\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_rejected(deep, "name must be a string, not an array");
}

// ---- reading the scenario file itself --------------------------------------------------------

TEST_F(HostileScenarioFile, OnlyRegularFilesOfBoundedSizeAreRead) {
  expect_rejected_file(dir.path() / "missing.json", "no such file");
  fs::create_directory(dir.path() / "a_directory.json");
  expect_rejected_file(dir.path() / "a_directory.json", "is a directory");
  // A FIFO without a writer would block a plain open() forever.
  const fs::path fifo = dir.path() / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_rejected_file(fifo, "is a FIFO");
  // Endless bytes: refused before reading.
  expect_rejected_file("/dev/zero", "is a character device");
  // Larger than the limit: refused from its size (a sparse file: nothing is written).
  const fs::path huge = dir.write("huge.json", "{");
  fs::resize_file(huge, scenarios::max_scenario_file_bytes + 1);
  expect_rejected_file(huge, "more than the " + std::to_string(scenarios::max_scenario_file_bytes) + "-byte limit");
}

TEST_F(HostileScenarioFile, AnUnreadableFileIsAUsageError) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not restrict root";
  const auto file = dir.write("locked.json", with_inputs(R"([{"inline": "x", "format": "ptx"}])"));
  fs::permissions(file, fs::perms::none);
  expect_rejected_file(file, "cannot be opened");
}

// ---- where inputs may be -------------------------------------------------------------------

class HostileScenarioPaths : public HostileScenarioFile {
 protected:
  // dir/scenarios/s.json next to dir/outside.ptx.
  fs::path scenario_dir() const { return dir.path() / "scenarios"; }
  fs::path write_scenario(const std::string& inputs) const {
    fs::create_directories(scenario_dir());
    const fs::path file = scenario_dir() / "s.json";
    dir.write("scenarios/s.json", with_inputs(inputs));
    return file;
  }
  LoadOptions trusted() const {
    LoadOptions options;
    options.allow_paths_outside = true;
    return options;
  }
  void SetUp() override { dir.write("outside.ptx", ".version 9.0\n"); }
};

TEST_F(HostileScenarioPaths, DotDotEscapesAreRefused) {
  const fs::path file = write_scenario(R"([{"path": "../outside.ptx"}])");
  expect_rejected_file(file, "inputs[0].path \"../outside.ptx\" leads outside the scenario file's directory");
  EXPECT_NO_THROW((void)scenarios::load_scenario(file, trusted()));
  // ".." that stays inside is a path like any other.
  EXPECT_NO_THROW((void)scenarios::load_scenario(write_scenario(R"([{"path": "sub/../k.ptx"}])")));
}

TEST_F(HostileScenarioPaths, AbsolutePathsAreRefused) {
  const fs::path file = write_scenario(R"([{"path": "/etc/passwd"}])");
  expect_rejected_file(file, "inputs[0].path must be relative to the scenario file, not the absolute path \"/etc/passwd\"");
  const auto scenario = scenarios::load_scenario(file, trusted());
  EXPECT_EQ(std::get<scenarios::InputFile>(scenario.inputs.at(0).source).path, fs::path("/etc/passwd"));
}

TEST_F(HostileScenarioPaths, SymlinksLeadingOutsideAreRefused) {
  const fs::path file = write_scenario(R"([{"path": "link.ptx"}, {"path": "linked_dir/outside.ptx"}])");
  fs::create_symlink(dir.path() / "outside.ptx", scenario_dir() / "link.ptx");
  fs::create_directory_symlink(dir.path(), scenario_dir() / "linked_dir");
  expect_rejected_file(file, "inputs[0].path \"link.ptx\" leads outside");
  const fs::path second = write_scenario(R"([{"path": "linked_dir/outside.ptx"}])");
  expect_rejected_file(second, "inputs[0].path \"linked_dir/outside.ptx\" leads outside");
  // A symlink that stays inside is fine.
  dir.write("scenarios/inside.ptx", ".version 9.0\n");
  fs::create_symlink(scenario_dir() / "inside.ptx", scenario_dir() / "alias.ptx");
  EXPECT_NO_THROW((void)scenarios::load_scenario(write_scenario(R"([{"path": "alias.ptx"}])")));
}

TEST_F(HostileScenarioPaths, FixtureNamesStayInTheFixtureDirectory) {
  expect_rejected_file(write_scenario(R"([{"fixture": "../outside.ptx"}])"), "inputs[0].fixture must be a name in the fixture directory");
  expect_rejected_file(write_scenario(R"([{"fixture": "/etc/passwd"}])"), "inputs[0].fixture must be a name in the fixture directory");
  expect_rejected_file(write_scenario(R"([{"fixture": ""}])"), "inputs[0].fixture must not be empty");
  expect_rejected_file(write_scenario("[{\"fixture\": \"a\\u0000b\"}]"), "inputs[0].fixture must not contain a NUL");
}

TEST_F(HostileScenarioPaths, InputRootsAddDirectories) {
  const fs::path file = write_scenario(R"([{"path": "../outside.ptx"}])");
  LoadOptions options;
  options.input_roots = {dir.path()};
  EXPECT_NO_THROW((void)scenarios::load_scenario(file, options));
  // scenarios/repro names "../fixtures/...": the set's own fixtures, beside the file's
  // directory, with or without the build's fixture set as a root.
  EXPECT_NO_THROW((void)scenarios::load_scenario(test::scenario_path("repro/nrt-only-in-external-ptx.json")));
  LoadOptions no_roots;
  no_roots.input_roots.clear();
  EXPECT_NO_THROW((void)scenarios::load_scenario(test::scenario_path("repro/nrt-only-in-external-ptx.json"), no_roots));
  expect_rejected_file(file, "leads outside", no_roots);
}

// The check runs again as the input is read: a file swapped for a symlink after loading is
// still refused, and so is a fixture that is a symlink leading out of the fixture directory.
TEST_F(HostileScenarioPaths, InputsAreCheckedAgainWhenRead) {
  const fs::path file = write_scenario(R"([{"path": "late.ptx", "origin": "bytes", "format": "ptx"}])");
  dir.write("scenarios/late.ptx", ".version 9.0\n");
  const scenarios::Scenario scenario = scenarios::load_scenario(file);
  fs::remove(scenario_dir() / "late.ptx");
  fs::create_symlink(dir.path() / "outside.ptx", scenario_dir() / "late.ptx");
  CUJIT_EXPECT_ERROR((void)scenarios::run_scenario(scenario, dir.path()), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("inputs[0].path \"" + (scenario_dir() / "late.ptx").string() +
                                                              "\" leads outside"),
                               std::string::npos)
                     << error.what(););

  const fs::path fixtures = dir.path() / "fixtures";
  fs::create_directory(fixtures);
  fs::create_symlink(dir.path() / "outside.ptx", fixtures / "evil.ptx");
  const scenarios::Scenario by_fixture =
      scenarios::load_scenario(write_scenario(R"([{"fixture": "evil.ptx", "origin": "bytes", "format": "ptx"}])"));
  CUJIT_EXPECT_ERROR((void)scenarios::run_scenario(by_fixture, fixtures), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("leads outside the fixture directory"), std::string::npos)
                     << error.what(););
}

// Input files read as bytes go through the bounded regular-file reader; patches past the
// end are refused without arithmetic overflow.
TEST_F(HostileScenarioPaths, InputFilesThatAreNotRegularOrArePatchedPastTheEndAreUsageErrors) {
  const fs::path fifo = scenario_dir() / "fifo.ptx";
  const fs::path file = write_scenario(R"([{"path": "fifo.ptx", "origin": "bytes", "format": "ptx"}])");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CUJIT_EXPECT_ERROR((void)scenarios::run_scenario(scenarios::load_scenario(file), dir.path()), ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("is a FIFO"), std::string::npos) << error.what(););
  const fs::path zero = write_scenario(R"([{"path": "/dev/zero", "origin": "bytes", "format": "ptx"}])");
  CUJIT_EXPECT_ERROR((void)scenarios::run_scenario(scenarios::load_scenario(zero, trusted()), dir.path()),
                     ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("is a character device"), std::string::npos)
                     << error.what(););
  const fs::path patched = write_scenario(
      R"([{"inline": "abc", "format": "ptx", "patch": [{"offset": 1073741824, "hex": "ffff"}]}])");
  CUJIT_EXPECT_ERROR((void)scenarios::run_scenario(scenarios::load_scenario(patched), dir.path()), ErrorKind::usage,
                     error,
                     EXPECT_NE(std::string(error.what()).find("inputs[0].patch[0] (offset 1073741824, 2 bytes) reaches past"),
                               std::string::npos)
                     << error.what(););
}

// ---- a scenario set from anywhere (issue 29) ------------------------------------------------

// A scenario set is DIR/<any>/s.json with DIR/fixtures and DIR/replays beside: a file reads
// those two directories and its own, whatever DIR is, and nothing else. The class of paths
// is generated: every sequence of up to three parts from ones that climb, stay, descend into
// the set, or take a symlink out; each path either loads and resolves inside the allowed
// directories, or is refused naming the field. None may load and point elsewhere.
TEST_F(HostileScenarioPaths, GeneratedPathsNeverResolveOutsideTheScenarioSet) {
  fs::create_directories(dir.path() / "fixtures" / "sub");
  fs::create_directories(dir.path() / "replays" / "s");
  fs::create_directories(dir.path() / "elsewhere");
  dir.write("fixtures/x.ptx", ".version 9.0\n");
  dir.write("fixtures/sub/y.ptx", ".version 9.0\n");
  dir.write("replays/s/replay.py", "print('CUJIT_REPLAY {\"outcome\": \"ok\"}')\n");
  dir.write("elsewhere/secret.ptx", ".version 9.0\n");
  fs::create_directories(scenario_dir());
  fs::create_symlink(dir.path() / "elsewhere", dir.path() / "fixtures" / "link_out");
  fs::create_symlink(dir.path() / "elsewhere" / "secret.ptx", scenario_dir() / "file_out.ptx");
  const std::vector<fs::path> allowed = {fs::canonical(scenario_dir()), fs::canonical(dir.path() / "fixtures"),
                                         fs::canonical(dir.path() / "replays")};
  const auto inside_allowed = [&](const fs::path& path) {
    const fs::path real = fs::weakly_canonical(path);
    return std::any_of(allowed.begin(), allowed.end(), [&](const fs::path& root) {
      const auto [end, ignored] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
      return end == root.end();
    });
  };
  const std::vector<std::string> parts = {"..", ".", "fixtures", "replays", "sub", "link_out", "elsewhere",
                                          "scenarios", "x.ptx", "secret.ptx", "file_out.ptx", "s"};
  LoadOptions no_roots;
  no_roots.input_roots.clear();
  std::size_t loaded = 0, refused = 0;
  std::vector<std::size_t> index;
  for (std::size_t length = 1; length <= 3; ++length) {
    index.assign(length, 0);
    while (true) {
      fs::path relative;
      for (std::size_t i : index) relative /= parts[i];
      for (const bool absolute : {false, true}) {
        const std::string text = absolute ? (scenario_dir() / relative).string() : relative.string();
        SCOPED_TRACE(text);
        const std::string doc = R"({"schema": 1, "name": "x", "inputs": [{"path": )" + json(text).dump() +
                                R"(}], "expect": {"outcome": "success"}})";
        const fs::path file = dir.write("scenarios/s.json", doc);
        try {
          const scenarios::Scenario scenario = scenarios::load_scenario(file, no_roots);
          ++loaded;
          EXPECT_FALSE(absolute) << "an absolute path loaded";
          const fs::path named = std::get<scenarios::InputFile>(scenario.inputs.at(0).source).path;
          EXPECT_TRUE(inside_allowed(named)) << "loaded, but leads to " << fs::weakly_canonical(named);
          // And again when read: input_file_path must agree.
          EXPECT_NO_THROW((void)scenarios::input_file_path(scenario, scenario.inputs.at(0), dir.path() / "fixtures"));
        } catch (const ScenarioFileError& error) {
          ++refused;
          EXPECT_NE(std::string(error.what()).find("inputs[0].path"), std::string::npos) << error.what();
          if (!absolute) {
            EXPECT_FALSE(inside_allowed(scenario_dir() / relative)) << "refused inside: " << error.what();
          }
        }
      }
      std::size_t at = 0;
      while (at < length && ++index[at] == parts.size()) index[at++] = 0;
      if (at == length) break;
    }
  }
  // The generator reaches both sides: paths into the set load, escapes are refused.
  EXPECT_GT(loaded, 20u);
  EXPECT_GT(refused, 200u);
}

// A "fixtures" or "replays" beside the file's directory counts only when it is a real
// directory: one that is a symlink could lead anywhere.
TEST_F(HostileScenarioPaths, ASetDirectoryThatIsASymlinkIsNotPartOfTheSet) {
  fs::create_directories(dir.path() / "elsewhere");
  dir.write("elsewhere/secret.ptx", ".version 9.0\n");
  fs::create_directory_symlink(dir.path() / "elsewhere", dir.path() / "fixtures");
  LoadOptions no_roots;
  no_roots.input_roots.clear();
  expect_rejected_file(write_scenario(R"([{"path": "../fixtures/secret.ptx"}])"), "leads outside", no_roots);
  EXPECT_TRUE(scenarios::scenario_set_roots(scenario_dir()).empty());
  fs::remove(dir.path() / "fixtures");
  fs::create_directory(dir.path() / "fixtures");
  dir.write("fixtures/ok.ptx", ".version 9.0\n");
  EXPECT_NO_THROW((void)scenarios::load_scenario(write_scenario(R"([{"path": "../fixtures/ok.ptx"}])"), no_roots));
}

// CUJIT_SCENARIO_PATH adds directories (colon-separated) to the default LoadOptions.
TEST_F(HostileScenarioPaths, ScenarioPathAddsDirectories) {
  fs::create_directories(dir.path() / "extra");
  dir.write("extra/e.ptx", ".version 9.0\n");
  const fs::path file = write_scenario(R"([{"path": "../extra/e.ptx"}])");
  ::unsetenv("CUJIT_SCENARIO_PATH");
  expect_rejected_file(file, "leads outside");
  ::setenv("CUJIT_SCENARIO_PATH", ("/nonexistent::" + (dir.path() / "extra").string()).c_str(), 1);
  EXPECT_NO_THROW((void)scenarios::load_scenario(file));
  EXPECT_EQ(scenarios::scenario_path_from_environment(),
            (std::vector<fs::path>{"/nonexistent", dir.path() / "extra"}));
  ::unsetenv("CUJIT_SCENARIO_PATH");
}

// Every committed scenario works from a copy of the scenario set anywhere (another
// checkout, a download): no build's fixture set is needed for its "path" inputs and replay
// programs. And every one says where it comes from.
TEST(ScenarioSet, EveryCommittedFileLoadsFromACopyElsewhereAndNamesItsOrigin) {
  test::TempDir copy;
  for (const char* part : {"repro", "fixtures", "replays"}) {
    fs::copy(test::scenario_path(part), copy.path() / part, fs::copy_options::recursive);
  }
  LoadOptions no_roots;
  no_roots.input_roots.clear();
  std::size_t files = 0, replays = 0;
  for (const auto& entry : fs::directory_iterator(copy.path() / "repro")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    scenarios::Scenario scenario;
    ASSERT_NO_THROW(scenario = scenarios::load_scenario(entry.path(), no_roots));
    EXPECT_NE(scenario.reported_at.empty(), scenario.found_here.empty()) << "reported_at or found_here, one of them";
    for (const scenarios::Replay& replay : scenario.replays) {
      if (!replay.does_not_apply.empty()) continue;  // a reason, no program
      ++replays;
      EXPECT_TRUE(fs::is_regular_file(replay.program)) << replay.program;
      const fs::path real = fs::canonical(replay.program);
      EXPECT_EQ(real.string().rfind(fs::canonical(copy.path()).string(), 0), 0u) << real;
    }
  }
  EXPECT_GE(files, 23u);
  EXPECT_GE(replays, 33u);
}

TEST_F(HostileScenarioFile, ReplaysAreChecked) {
  const auto with_replays = [](const std::string& replays) {
    return R"({"schema": 1, "name": "x", "inputs": [{"inline": ".version 9.0\n", "format": "ptx"}],
               "expect": {"outcome": "success"}, "replays": )" + replays + "}";
  };
  const std::string good = R"({"stack": "cupy", "program": "r.py", "reported_outcome": "link-error", "fixed_outcome": "ok"})";
  EXPECT_NO_THROW((void)scenarios::load_scenario(dir.write("good.json", with_replays("[" + good + "]"))));
  expect_rejected(with_replays(R"([{"stack": "torch", "program": "r.py", "reported_outcome": "a", "fixed_outcome": "b"}])"),
                  "replays[0].stack must be one of");
  expect_rejected(with_replays("[" + good + ", " + good + "]"), "replays[1].stack names \"cupy\" a second time");
  expect_rejected(with_replays(R"([{"stack": "cupy", "program": "r.sh", "reported_outcome": "a", "fixed_outcome": "b"}])"),
                  "replays[0].program must name a Python file");
  expect_rejected(with_replays(R"([{"stack": "cupy", "program": "/tmp/r.py", "reported_outcome": "a", "fixed_outcome": "b"}])"),
                  "replays[0].program must be relative");
  expect_rejected(with_replays(R"([{"stack": "cupy", "program": "../../r.py", "reported_outcome": "a", "fixed_outcome": "b"}])"),
                  "replays[0].program \"../../r.py\" leads outside");
  expect_rejected(with_replays(R"([{"stack": "cupy", "program": "r.py", "reported_outcome": "ok", "fixed_outcome": "ok"}])"),
                  "replays[0].fixed_outcome must differ");
  expect_rejected(with_replays(R"([{"stack": "cupy", "program": "r.py", "reported_outcome": "Link Error", "fixed_outcome": "ok"}])"),
                  "replays[0].reported_outcome must be an outcome word");
  expect_rejected(with_replays(R"([{"stack": "cupy", "program": "r.py", "reported_outcome": "a"}])"),
                  "replays[0].fixed_outcome is missing");
  expect_rejected(R"({"schema": 1, "name": "x", "reported_at": "a/b#1", "found_here": "f",
                      "inputs": [{"inline": ".version 9.0\n", "format": "ptx"}], "expect": {"outcome": "success"}})",
                  "found_here and reported_at");
}

}  // namespace
}  // namespace cujit
