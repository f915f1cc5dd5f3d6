// The hermetic compile's include search against NVRTC's own: the same programs, compiled by
// NVRTC reading the disk and by cujit resolving every include into memory, give the same
// PTX (with -lineinfo, so that every file's name as NVRTC forms it is compared too), on
// generated include trees and on CUB. And the scanner that finds the includes, on the
// spellings a directive can take.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "compile/hermetic_inputs.hpp"  // core/src
#include "compile/include_scan.hpp"
#include "cujit/compile_cache.hpp"
#include "cujit/error.hpp"
#include "cujit/toolkit.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;
using detail::IncludeKind;
using detail::scan_includes;

std::vector<std::string> operands(const detail::IncludeScan& scan) {
  std::vector<std::string> out;
  for (const auto& site : scan.sites) out.push_back(site.operand);
  return out;
}

TEST(IncludeScan, FindsEverySpellingOfADirective) {
  const auto scan = scan_includes(
      "#include \"a.h\"\n"
      "  #  include <b.h>\n"
      "%:include \"c.h\"\n"
      "#/* comment */include \"d.h\"\n"
      "#inc\\\nlude \"e\\\n.h\"\n"
      "#include_next <f.h>\n"
      "#if __has_include(<g.h>) && __has_include_next(\"h.h\")\n#endif\n");
  EXPECT_EQ(operands(scan), (std::vector<std::string>{"a.h", "b.h", "c.h", "d.h", "e.h", "f.h", "g.h", "h.h"}));
  EXPECT_EQ(scan.sites[5].kind, IncludeKind::include_next);
  EXPECT_EQ(scan.sites[6].kind, IncludeKind::has_include);
  EXPECT_EQ(scan.sites[7].kind, IncludeKind::has_include_next);
  EXPECT_EQ(scan.sites[4].splices, 2u);
}

TEST(IncludeScan, SkipsWhatIsNotADirective) {
  const auto scan = scan_includes(
      "// #include \"comment.h\"\n"
      "/* #include \"block.h\" */\n"
      "const char* s = \"#include \\\"string.h\\\"\";\n"
      "const char* r = R\"x(\n#include \"raw.h\"\n)x\";\n"
      "int n = 1'000'000; char c = '#';\n"
      "int x; #include \"not-at-line-start.h\"\n"
      "#if defined(__has_include)\n#endif\n#ifdef __has_include\n#endif\n");
  EXPECT_TRUE(scan.sites.empty()) << operands(scan).size() << (scan.sites.empty() ? "" : scan.sites[0].operand);
  EXPECT_TRUE(scan.computed.empty());
}

TEST(IncludeScan, ComputedOperandsAndTemporalMacrosAreReported) {
  const auto scan = scan_includes("#include HEADER\n#if __has_include(NAME)\n#endif\nconst char* t = __TIME__;\n");
  ASSERT_EQ(scan.macro_includes.size(), 1u);
  EXPECT_EQ(scan.macro_includes[0].tokens, "HEADER");
  EXPECT_EQ(scan.computed.size(), 1u);
  EXPECT_EQ(scan.temporal_macros, std::vector<std::string>{"__TIME__"});
}

TEST(IncludeScan, WrappersOfHasIncludeAreFollowed) {
  const std::string definitions =
      "#define HAS(x) __has_include(x)\n#define HAS2(y) HAS(y)\n#define NOT_A_WRAPPER(z) foo(z)\n";
  const auto defined = scan_includes(definitions);
  EXPECT_EQ(defined.has_include_wrappers, std::vector<std::string>{"HAS"});
  EXPECT_TRUE(defined.sites.empty());
  EXPECT_TRUE(defined.computed.empty());
  const auto used = scan_includes("#if HAS(<a.h>) || HAS2(\"b.h\")\n#endif\n#if HAS(MACRO)\n#endif\n", {"HAS", "HAS2"});
  EXPECT_EQ(operands(used), (std::vector<std::string>{"a.h", "b.h"}));
  EXPECT_EQ(used.computed.size(), 1u);
}

// Splices may sit anywhere in a directive: inserted at every position of a few directives,
// the scanner finds the same operand and a range that covers exactly the spliced text.
TEST(IncludeScan, ASpliceAnywhereInADirectiveChangesNothing) {
  for (const std::string directive : {"#include \"dir/a.h\"", "%:include <b.h>", "#  include_next \"c.h\""}) {
    const auto plain = scan_includes(directive + "\n");
    ASSERT_EQ(plain.sites.size(), 1u) << directive;
    for (std::size_t at = 1; at < directive.size(); ++at) {
      if (directive.compare(0, 2, "%:") == 0 && at == 1) continue;  // "%\<newline>:" is no digraph
      const std::string spliced = directive.substr(0, at) + "\\\n" + directive.substr(at) + "\n";
      const auto scan = scan_includes(spliced);
      ASSERT_EQ(scan.sites.size(), 1u) << spliced;
      EXPECT_EQ(scan.sites[0].operand, plain.sites[0].operand) << spliced;
      EXPECT_EQ(scan.sites[0].kind, plain.sites[0].kind) << spliced;
      const std::string covered = spliced.substr(scan.sites[0].begin, scan.sites[0].end - scan.sites[0].begin);
      EXPECT_EQ(covered.back(), directive.back()) << spliced;
    }
  }
}

// --------------------------------------------------------------------------------------
// NVRTC's own search and cujit's, on the same programs

CompileOptions ptx_with_line_info(std::vector<std::string> options) {
  CompileOptions compile;
  compile.arch = Arch::parse("sm_90");
  compile.options = std::move(options);
  compile.options.push_back("-lineinfo");
  return compile;
}

struct Outcome {
  std::string ptx;
  std::string failure;
  std::string message;  // the error and its log, shown when the sides disagree
};

Outcome by_nvrtc(const Program& program, const CompileOptions& options) {
  try {
    return {program.compile(options).code.bytes(), {}, {}};
  } catch (const Error& error) {
    return {{}, std::string(to_string(error.kind())), error.what()};
  }
}

Outcome hermetic(const Program& program, const CompileOptions& options) {
  try {
    return {compile_cached(program, options, BuildCache::disabled()).result.code.bytes(), {}, {}};
  } catch (const Error& error) {
    return {{}, std::string(to_string(error.kind())), error.what()};
  }
}

// A random include tree: four directories, headers that include each other in every way
// NVRTC resolves (quoted next to the includer, angle on the path, include_next,
// __has_include, "../"), and a program that includes some of them.
class Tree {
 public:
  Tree(const fs::path& root, unsigned seed) : root_(root), random_(seed) {
    for (const char* dir : {"work", "d0", "d1", "d2", "d3", "d0/sub", "d2/sub"}) fs::create_directories(root_ / dir);
    const std::vector<std::string> dirs{"work", "d0", "d1", "d2", "d3", "d0/sub", "d2/sub"};
    for (int h = 0; h < 8; ++h) {
      for (const std::string& dir : dirs) {
        if (pick(3) != 0) continue;
        std::string text = "#pragma once\n";
        for (int i = 0, n = static_cast<int>(pick(3)); i < n; ++i) text += directive(h);
        text += "__device__ int h" + std::to_string(h) + "_in_" + std::to_string(pick(1000)) + "();\n";
        std::ofstream(root_ / dir / ("h" + std::to_string(h) + ".h")) << text;
      }
    }
    source_ = "";
    for (int i = 0; i < 4; ++i) source_ += directive(-1);
    source_ += "extern \"C\" __global__ void k(int* o) { *o = 1; }\n";
    for (const char* dir : {"d0", "d1", "d2", "d3"}) {
      if (pick(4) != 0) options_.push_back(pick(2) ? "-I" + (root_ / dir).string() : "-I../" + std::string(dir));
    }
  }
  const std::string& source() const { return source_; }
  const std::vector<std::string>& options() const { return options_; }
  // Every header with its text, and the options: what a failure needs to be understood.
  std::string listing() const {
    std::string out;
    for (const std::string& option : options_) out += option + " ";
    out += "\n";
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root_)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      std::ifstream in(file);
      out += "--- " + fs::relative(file, root_).string() + "\n" +
             std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return out;
  }
  fs::path work() const { return root_ / "work"; }

 private:
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random_); }
  std::string directive(int self) {
    const std::string other = "h" + std::to_string(pick(8)) + ".h";
    switch (pick(6)) {
      case 0: return "#include \"" + other + "\"\n";
      case 1: return "#if __has_include(<" + other + ">)\n#include <" + other + ">\n#endif\n";
      case 2: return "#if __has_include(\"sub/" + other + "\")\n#include \"sub/" + other + "\"\n#endif\n";
      case 3: return "#if __has_include(\"../" + other + "\")\n#include \"../" + other + "\"\n#endif\n";
      case 4:
        if (self >= 0) return "#if __has_include_next(<h" + std::to_string(self) + ".h>)\n#include_next <h" + std::to_string(self) + ".h>\n#endif\n";
        return "#include <" + other + ">\n";
      default: return "__device__ int unused_" + std::to_string(pick(1000)) + ";\n";
    }
  }
  fs::path root_;
  std::mt19937 random_;
  std::string source_;
  std::vector<std::string> options_;
};

TEST(HermeticInputs, ResolveIncludesAsNvrtcDoesOnGeneratedTrees) {
  // A new base each run (printed below); CUJIT_HERMETIC_TREE_SEED replays one.
  const char* replay = std::getenv("CUJIT_HERMETIC_TREE_SEED");
  const unsigned base = replay != nullptr ? static_cast<unsigned>(std::stoul(replay)) : std::random_device{}() & 0xffff;
  int compared = 0, failed_alike = 0, refused = 0;
  const fs::path before = fs::current_path();
  for (unsigned seed = base; seed < base + 40; ++seed) {
    test::TempDir dir;
    Tree tree(dir.path(), seed);
    fs::current_path(tree.work());
    const Program program(tree.source(), "k.cu");
    const CompileOptions options = ptx_with_line_info(tree.options());
    const Outcome native = by_nvrtc(program, options);
    const Outcome ours = hermetic(program, options);
    // A refused tree compiles as given: equal by construction, so it is counted apart.
    if (!detail::HermeticInputs::resolve(program, options).refusal().empty()) ++refused;
    fs::current_path(before);
    EXPECT_EQ(ours.failure, native.failure) << "seed " << seed << "\n" << tree.source() << "\nours: " << ours.message
                                            << "\nNVRTC's: " << native.message;
    EXPECT_EQ(ours.ptx, native.ptx) << "seed " << seed << "\n" << tree.source() << tree.listing();
    ++compared;
    if (!native.failure.empty()) ++failed_alike;
  }
  std::printf("hermetic vs NVRTC: %d trees from seed %u, %d failed on both sides, %d refused (compiled as given)\n",
              compared, base, failed_alike, refused);
  EXPECT_LT(failed_alike, compared) << "every tree failed: the comparison saw no compiled code";
  EXPECT_LT(refused, compared / 4) << "most trees were refused: the hermetic search was hardly compared";
}

TEST(HermeticInputs, CubCompilesByteForByteAsNvrtcReadsIt) {
  const Program program(
      "#include <cub/block/block_reduce.cuh>\n"
      "extern \"C\" __global__ void k(const int* in, int* out) {\n"
      "  using R = cub::BlockReduce<int, 128>;\n  __shared__ R::TempStorage t;\n"
      "  int v = R(t).Sum(in[threadIdx.x]);\n  if (threadIdx.x == 0) *out = v;\n}\n",
      "cub_reduce.cu");
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.options = {"-std=c++17", "-I" + toolkit::cccl_dir().string(), "-I" + toolkit::include_dir().string()};
  const detail::HermeticInputs inputs = detail::HermeticInputs::resolve(program, options);
  ASSERT_EQ(inputs.refusal(), "") << "CCCL must compile hermetically";
  EXPECT_TRUE(inputs.uncacheable().empty()) << inputs.uncacheable();
  EXPECT_GT(inputs.key_fields().size(), 3u * 100) << "a CUB kernel reaches hundreds of headers";
  const Outcome native = by_nvrtc(program, options);
  ASSERT_EQ(native.failure, "");
  EXPECT_EQ(hermetic(program, options).ptx, native.ptx);
}

TEST(HermeticInputs, NvrtcIsGivenNoIncludePathAndEveryOperandInMemory) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/a.h", "#include \"b.h\"\n#if __has_include(<missing.h>)\n#endif\n");
  dir.write("inc/b.h", "#define B 1\n");
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.options = {"-I", (dir.path() / "inc").string(), "-pch", "-DX=1"};
  const auto inputs = detail::HermeticInputs::resolve(Program("#include <a.h>\n", "k.cu"), options);
  ASSERT_EQ(inputs.refusal(), "");
  for (const std::string& option : inputs.nvrtc_options()) {
    EXPECT_NE(option.rfind("-I", 0), 0u) << option;
    EXPECT_NE(option, "-pch");
  }
  const CompileOptions given = inputs.options();
  EXPECT_TRUE(given.include_paths.empty());
  ASSERT_EQ(given.headers.size(), 2u);
  EXPECT_EQ(given.headers[0].name, (dir.path() / "inc/a.h").string());
  EXPECT_NE(given.headers[0].content.find("/dev/null/cujit-not-found/missing.h"), std::string::npos);
  EXPECT_NE(inputs.program().source().find(given.headers[0].name), std::string::npos);
  EXPECT_TRUE(inputs.reads_disk());
  const auto memory_only = detail::HermeticInputs::resolve(Program("#include \"m.h\"\n", "k.cu"), [] {
    CompileOptions o;
    o.headers = {{"m.h", "#define M 1\n"}};
    return o;
  }());
  EXPECT_FALSE(memory_only.reads_disk());
}

TEST(HermeticInputs, AMissingHeaderIsNamedAsWrittenInTheLog) {
  CUJIT_EXPECT_ERROR((void)compile_cached(Program("#include \"nowhere.h\"\n", "k.cu"), CompileOptions{}, BuildCache::disabled()),
                     ErrorKind::compile, error,
                     EXPECT_NE(error.log().find("\"nowhere.h\""), std::string::npos) << error.log();
                     EXPECT_EQ(error.log().find("/dev/null"), std::string::npos) << error.log(););
}

}  // namespace
}  // namespace cujit
