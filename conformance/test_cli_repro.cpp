// Every bad-input case of the linking conformance through `cujit repro`: exit 1 (not as
// expected) or 2 (usage / environment), a message naming the input, never a crash; both
// in the isolated child (the default) and in process.
#include <gtest/gtest.h>

#include "cli_test_support.hpp"

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

}  // namespace
}  // namespace cujit
