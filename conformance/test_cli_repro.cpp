// Every bad-input case of the linking conformance through `cujit repro`: exit 1 (not as
// expected) or 2 (usage / environment), a message naming the input, never a crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>

#include "support/fixtures.hpp"

namespace cujit {
namespace {

struct BadInput {
  const char* name;
  std::string file;   // written into the temp dir (empty: none)
  std::string bytes;
  std::string input;  // the scenario's inputs array
  std::string named;  // what the output must mention
};

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

struct Outcome {
  int exit_code = -1;
  bool signaled = false;
  std::string output;
};

Outcome run(const std::string& command) {
  Outcome out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) out.output += buffer.data();
  const int status = ::pclose(pipe);
  out.signaled = WIFSIGNALED(status);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class CliRepro : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliRepro, BadInputExitsCleanlyNamingTheProblem) {
  const BadInput& c = GetParam();
  test::TempDir dir;
  if (!c.file.empty()) dir.write(c.file, c.bytes);
  if (std::string(c.name) == "directory") std::filesystem::create_directory(dir.path() / "a_directory.ptx");
  const auto scenario = dir.write("scenario.json", R"({"schema": 1, "name": ")" + std::string(c.name) +
                                                       R"(", "inputs": )" + c.input +
                                                       R"(, "expect": {"outcome": "success"}})");
  const Outcome out = run(std::string(CUJIT_CLI_BINARY) + " repro " + scenario.string());
  EXPECT_FALSE(out.signaled) << out.output;
  EXPECT_TRUE(out.exit_code == 1 || out.exit_code == 2) << "exit " << out.exit_code << "\n" << out.output;
  EXPECT_NE(out.output.find(c.named), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("not as expected"), std::string::npos) << out.output;
}

INSTANTIATE_TEST_SUITE_P(Cases, CliRepro, ::testing::ValuesIn(cases()),
                         [](const auto& bad) { return std::string(bad.param.name); });

TEST(CliReproUsage, MalformedFileAndMissingFileAreExit2) {
  test::TempDir dir;
  const auto bad = dir.write("bad.json", "{ nope");
  const Outcome malformed = run(std::string(CUJIT_CLI_BINARY) + " repro " + bad.string());
  EXPECT_EQ(malformed.exit_code, 2) << malformed.output;
  EXPECT_NE(malformed.output.find("bad.json"), std::string::npos) << malformed.output;
  const Outcome missing = run(std::string(CUJIT_CLI_BINARY) + " repro " + (dir.path() / "none.json").string());
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  const Outcome usage = run(std::string(CUJIT_CLI_BINARY) + " repro");
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
}

}  // namespace
}  // namespace cujit
