// The one cached compile and the key recipes: every input of a compile or link changes its
// key, and a cache hit is byte-identical to a fresh build, also when headers on disk change
// (the stale-code bugs users reported, through the disk tier in new processes; the
// differential fuzzer in test_stale_code_fuzz.cpp searches for more).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <thread>

#include "cujit/compile_cache.hpp"
#include "cujit/linker.hpp"
#include "cujit/reduce.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

CompileOptions sm90_ptx() {
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.target = CompileTarget::ptx;
  return options;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------
// compile_key: one row per input of a compile

struct CompileVariant {
  const char* name;
  std::function<void(std::string& source, std::string& program_name, CompileOptions&)> change;
  bool changes_key;
};

void PrintTo(const CompileVariant& variant, std::ostream* out) { *out << variant.name; }

class CompileKeyFields : public ::testing::TestWithParam<CompileVariant> {};

std::string compile_digest(const std::function<void(std::string&, std::string&, CompileOptions&)>& change) {
  std::string source = "extern \"C\" __global__ void k(int* p) { *p = V; }\n";
  std::string name = "k.cu";
  CompileOptions options = sm90_ptx();
  options.options = {"-DV=1", "-DV=2", "-I/a", "-I/b"};
  options.headers = {{"one.h", "#define ONE 1\n"}, {"two.h", "#define TWO 2\n"}};
  change(source, name, options);
  return compile_key(Program(source, name), options).digest();
}

TEST_P(CompileKeyFields, ChangeTheKeyExactlyWhenTheyCanChangeTheOutput) {
  const std::string base = compile_digest([](std::string&, std::string&, CompileOptions&) {});
  const std::string changed = compile_digest(GetParam().change);
  if (GetParam().changes_key) {
    EXPECT_NE(changed, base) << GetParam().name << " did not change the key";
  } else {
    EXPECT_EQ(changed, base) << GetParam().name << " changed the key";
  }
}

using S = std::string;
using O = CompileOptions;
INSTANTIATE_TEST_SUITE_P(
    Fields, CompileKeyFields,
    ::testing::Values(
        CompileVariant{"source_byte", [](S& s, S&, O&) { s += ' '; }, true},
        CompileVariant{"program_name", [](S&, S& n, O&) { n = "other.cu"; }, true},
        CompileVariant{"target_ltoir", [](S&, S&, O& o) { o.target = CompileTarget::ltoir; }, true},
        CompileVariant{"target_cubin", [](S&, S&, O& o) { o.target = CompileTarget::cubin; }, true},
        CompileVariant{"arch", [](S&, S&, O& o) { o.arch = Arch::parse("sm_80"); }, true},
        CompileVariant{"arch_suffix", [](S&, S&, O& o) { o.arch = Arch::parse("sm_90a"); }, true},
        CompileVariant{"not_relocatable", [](S&, S&, O& o) { o.relocatable = false; }, true},
        CompileVariant{"define_order", [](S&, S&, O& o) { std::swap(o.options[0], o.options[1]); }, true},
        CompileVariant{"undefine", [](S&, S&, O& o) { o.options.push_back("-UV"); }, true},
        // Include directories reach the key through what they resolve to: here nothing
        // (the source includes nothing), so they change nothing NVRTC is given.
        CompileVariant{"include_dir_order", [](S&, S&, O& o) { std::swap(o.options[2], o.options[3]); }, false},
        CompileVariant{"include_path_field", [](S&, S&, O& o) { o.include_paths = {"/c"}; }, false},
        CompileVariant{"pre_include", [](S&, S&, O& o) { o.options.push_back("-include=one.h"); }, true},
        CompileVariant{"header_content", [](S&, S&, O& o) { o.headers[0].content = "#define ONE 2\n"; }, true},
        CompileVariant{"header_name", [](S&, S&, O& o) { o.headers[0].name = "uno.h"; }, true},
        CompileVariant{"header_order", [](S&, S&, O& o) { std::swap(o.headers[0], o.headers[1]); }, true},
        CompileVariant{"name_expression", [](S&, S&, O& o) { o.name_expressions = {"k"}; }, true},
        CompileVariant{"split_compile_extended", [](S&, S&, O& o) { o.options.push_back("-split-compile-extended=1"); }, true},
        CompileVariant{"jump_table_density", [](S&, S&, O& o) { o.options.push_back("-jump-table-density=50"); }, true},
        CompileVariant{"fast_math", [](S&, S&, O& o) { o.options.push_back("-use_fast_math"); }, true},
        CompileVariant{"device_debug", [](S&, S&, O& o) { o.options.push_back("-G"); }, true},
        CompileVariant{"line_info", [](S&, S&, O& o) { o.options.push_back("-lineinfo"); }, true},
        CompileVariant{"std", [](S&, S&, O& o) { o.options.push_back("-std=c++20"); }, true},
        // Dropped before NVRTC sees them: a hermetic compile never uses the automatic PCH.
        CompileVariant{"automatic_pch", [](S&, S&, O& o) { o.options.push_back("-pch"); }, false},
        CompileVariant{"pch_dir", [](S&, S&, O& o) { o.options.push_back("--pch-dir=/tmp/pch"); }, false},
        // Everything else NVRTC is given is keyed verbatim: a spelling NVRTC rejects
        // ("-std c++17", a bare "-rdc") never shares a key with one it accepts.
        CompileVariant{"timing_output", [](S&, S&, O& o) { o.options.push_back("-time=times.csv"); }, true},
        CompileVariant{"nvrtc_own_cache_off", [](S&, S&, O& o) { o.options.push_back("-no-cache"); }, true},
        CompileVariant{"define_long_spelling", [](S&, S&, O& o) { o.options[0] = "--define-macro=V=1"; }, true},
        CompileVariant{"std_as_two_arguments", [](S&, S&, O& o) { o.options.insert(o.options.end(), {"-std", "c++17"}); }, true},
        CompileVariant{"include_long_spelling", [](S&, S&, O& o) { o.options[2] = "--include-path=/a"; }, false}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(CompileKey, NamesTheExactNvrtc) {
  const std::string text = compile_key(Program("x", "x.cu"), sm90_ptx()).description();
  EXPECT_TRUE(contains(text, "\nnvrtc=")) << text;
  // The major.minor alone is not an identity: the library file is named by path, size and
  // time, and so are the builtins libraries NVRTC loads beside it.
  const std::string& identity = nvrtc_identity();
  EXPECT_EQ(identity.rfind("nvrtc: path=", 0), 0u) << identity;
  EXPECT_TRUE(contains(identity, "libnvrtc.so") && contains(identity, "libnvrtc-builtins")) << identity;
  EXPECT_TRUE(contains(identity, ";size=") && contains(identity, ";mtime=")) << identity;
}

TEST(CompileKey, TheWorkingDirectoryCountsThroughWhatIsFoundThere) {
  test::TempDir one, two;
  one.write("val.h", "#define V 1\n");
  two.write("val.h", "#define V 2\n");
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n", "k.cu");
  const auto key_in = [&](const fs::path& directory) {
    const fs::path before = fs::current_path();
    fs::current_path(directory);
    const std::string digest = compile_key(program, sm90_ptx()).digest();
    fs::current_path(before);
    return digest;
  };
  const std::string in_one = key_in(one.path());
  EXPECT_NE(in_one, key_in(two.path())) << "a quoted include of a relative program name looks in the working directory";
  two.write("val.h", "#define V 1\n");
  EXPECT_EQ(in_one, key_in(two.path())) << "the same bytes found elsewhere are the same compile";
}

// ---------------------------------------------------------------------------------------
// link_key

struct LinkVariant {
  const char* name;
  std::function<void(std::vector<LinkableCode>&, LinkOptions&, LinkerBackend&)> change;
  bool changes_key;
};

void PrintTo(const LinkVariant& variant, std::ostream* out) { *out << variant.name; }

class LinkKeyFields : public ::testing::TestWithParam<LinkVariant> {};

LinkableCode fixture(const std::string& name) { return LinkableCode::from_path(test::fixture_path(name)); }

std::string link_digest(const std::function<void(std::vector<LinkableCode>&, LinkOptions&, LinkerBackend&)>& change) {
  std::vector<LinkableCode> inputs{fixture("scale_kernel.ptx"), fixture("dev_add.ptx")};
  LinkOptions options;
  options.arch = Arch::parse("sm_90");
  LinkerBackend backend = LinkerBackend::nvjitlink;
  change(inputs, options, backend);
  return link_key(inputs, options, backend).digest();
}

TEST_P(LinkKeyFields, ChangeTheKeyExactlyWhenTheyCanChangeTheCubin) {
  const std::string base = link_digest([](auto&, auto&, auto&) {});
  const std::string changed = link_digest(GetParam().change);
  if (GetParam().changes_key) {
    EXPECT_NE(changed, base) << GetParam().name << " did not change the key";
  } else {
    EXPECT_EQ(changed, base) << GetParam().name << " changed the key";
  }
}

using Inputs = std::vector<LinkableCode>;
INSTANTIATE_TEST_SUITE_P(
    Fields, LinkKeyFields,
    ::testing::Values(
        LinkVariant{"input_bytes", [](Inputs& i, LinkOptions&, LinkerBackend&) { i[1] = fixture("dev_mul.ptx"); }, true},
        LinkVariant{"input_order", [](Inputs& i, LinkOptions&, LinkerBackend&) { std::swap(i[0], i[1]); }, true},
        LinkVariant{"input_added", [](Inputs& i, LinkOptions&, LinkerBackend&) { i.push_back(fixture("dev_mul.ptx")); }, true},
        LinkVariant{"input_name", [](Inputs& i, LinkOptions&, LinkerBackend&) {
                      i[1] = LinkableCode::ptx(i[1].bytes(), "renamed.ptx");
                    }, true},
        LinkVariant{"input_format", [](Inputs& i, LinkOptions&, LinkerBackend&) { i[1] = fixture("dev_add.cubin"); }, true},
        LinkVariant{"arch", [](Inputs&, LinkOptions& o, LinkerBackend&) { o.arch = Arch::parse("sm_80"); }, true},
        LinkVariant{"arch_suffix", [](Inputs&, LinkOptions& o, LinkerBackend&) { o.arch = Arch::parse("sm_90a"); }, true},
        LinkVariant{"backend", [](Inputs&, LinkOptions&, LinkerBackend& b) { b = LinkerBackend::driver; }, true},
        LinkVariant{"lto_with_ltoir", [](Inputs& i, LinkOptions& o, LinkerBackend&) {
                      i[0] = fixture("scale_kernel.ltoir");
                      o.lto = true;
                    }, true},
        LinkVariant{"nvjitlink_option", [](Inputs&, LinkOptions& o, LinkerBackend&) { o.nvjitlink_options = {"-g"}; }, true},
        // What the link never sees: an identical input (dropped) and LTO with nothing to optimise.
        LinkVariant{"identical_input_again", [](Inputs& i, LinkOptions&, LinkerBackend&) { i.push_back(i[0]); }, false},
        LinkVariant{"lto_without_ltoir", [](Inputs&, LinkOptions& o, LinkerBackend&) { o.lto = true; }, false},
        LinkVariant{"cu_compile_options", [](Inputs&, LinkOptions& o, LinkerBackend&) {
                      o.compile.options = {"-DX"};  // cu inputs are compiled before the key is made
                    }, false}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(LinkKey, NamesTheExactLinker) {
  const Inputs inputs{fixture("scale_kernel.ptx")};
  LinkOptions options;
  options.arch = Arch::parse("sm_90");
  const std::string text = link_key(inputs, options, LinkerBackend::nvjitlink).description();
  EXPECT_TRUE(contains(text, "\nlinker=")) << text;
  EXPECT_EQ(nvjitlink_identity().rfind("nvjitlink: path=", 0), 0u)
      << nvjitlink_identity();
  EXPECT_TRUE(contains(nvjitlink_identity(), "libnvJitLink.so")) << nvjitlink_identity();
}

// ---------------------------------------------------------------------------------------
// The reduce build: every field of a spec reaches the kernel's compile key; the operator's
// code reaches the link key by content (tested end to end below).

TEST(ReduceKernelCompile, EverySpecFieldReachesTheCompileKey) {
  const auto digest = [](const std::function<void(reduce::ReduceSpec&)>& change) {
    reduce::ReduceSpec spec;
    spec.arch = Arch::parse("sm_90");
    change(spec);
    const reduce::KernelCompile kernel = reduce::kernel_compile(spec);
    return compile_key(kernel.program, kernel.options).digest();
  };
  const std::string base = digest([](reduce::ReduceSpec&) {});
  const std::vector<std::pair<const char*, std::function<void(reduce::ReduceSpec&)>>> changes{
      {"input type", [](reduce::ReduceSpec& s) { s.input = Type::parse("int64"); }},
      {"output type", [](reduce::ReduceSpec& s) { s.output = Type::parse("uint32"); }},
      {"accumulator type", [](reduce::ReduceSpec& s) { s.accumulator = Type::parse("float64"); }},
      {"builtin operator", [](reduce::ReduceSpec& s) { s.op = reduce::Operator::builtin(reduce::Builtin::max); }},
      {"operator name", [](reduce::ReduceSpec& s) {
         s.op = reduce::Operator::cuda_source("extern \"C\" __device__ int op2(int a, int b) { return a; }", "op2");
       }},
      {"arch", [](reduce::ReduceSpec& s) { s.arch = Arch::parse("sm_80"); }},
      {"arch suffix", [](reduce::ReduceSpec& s) { s.arch = Arch::parse("sm_90a"); }},
      {"nvrtc option", [](reduce::ReduceSpec& s) { s.config.nvrtc_options = {"-use_fast_math"}; }},
  };
  for (const auto& [what, change] : changes) EXPECT_NE(digest(change), base) << what;
  EXPECT_EQ(digest([](reduce::ReduceSpec& s) { s.config.include_dirs = {"/opt/extra"}; }), base)
      << "the generated kernel includes nothing: include directories cannot change it";
  EXPECT_EQ(digest([](reduce::ReduceSpec& s) { s.config.precompiled_header = false; }), base)
      << "a hermetic compile never uses the automatic precompiled header";
}

TEST(ReduceKernelCompile, IncludeDirsReachTheOperatorCompileToo) {
  reduce::ReduceSpec spec;
  spec.config.include_dirs = {"/opt/ops"};
  EXPECT_EQ(reduce::link_options(spec).compile.include_paths.front(), "/opt/ops");
  EXPECT_EQ(reduce::kernel_compile(spec).options.include_paths.front(), "/opt/ops");
}

// ---------------------------------------------------------------------------------------
TEST(CompileCache, FailuresAreNeverCached) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  const Program broken("extern \"C\" __global__ void k() { undeclared(); }\n", "broken.cu");
  for (int attempt = 0; attempt < 2; ++attempt) {
    CUJIT_EXPECT_ERROR((void)compile_cached(broken, sm90_ptx(), cache), ErrorKind::compile, error,
                       EXPECT_TRUE(contains(error.log(), "undeclared")) << error.log(););
  }
  EXPECT_EQ(cache.stats().builds, 0u);
  EXPECT_EQ(test::count_files(dir.path() / "cache", ".entry"), 0u);
}

TEST(CompileCache, LoweredNamesAndLogSurviveTheDiskTier) {
  test::TempDir dir;
  CompileOptions options = sm90_ptx();
  options.name_expressions = {"fill<int>"};
  const Program program("template <class T> __global__ void fill(T* p) { *p = T(1); }\n", "fill.cu");
  std::string built_ptx;
  {
    BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
    built_ptx = compile_cached(program, options, cache).result.code.bytes();
  }
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  const CachedCompile hit = compile_cached(program, options, cache);
  EXPECT_EQ(hit.source, CacheSource::disk);
  EXPECT_EQ(hit.result.code.bytes(), built_ptx);
  EXPECT_EQ(hit.result.code.lowered_names().at("fill<int>"), "_Z4fillIiEvPT_");
  EXPECT_EQ(hit.result.code.name(), "fill.ptx");
}

// ---------------------------------------------------------------------------------------
// The reported stale-code bugs, through the disk tier in new processes

struct ChildBuild {
  std::string source;  // where the build came from: built, disk...
  std::string bytes;   // the cubin or PTX it produced
};

ChildBuild run_cache_child(std::vector<std::string> args, const fs::path& out) {
  args.insert(args.begin(), CUJIT_CACHE_CHILD);
  const test::ChildResult child = test::run_child(args);
  EXPECT_EQ(child.exit_code, 0) << child.output;
  // The last line is the child's answer (sanitizer lanes may print reports before it).
  std::string source = child.output;
  while (!source.empty() && (source.back() == '\n' || source.back() == '\r')) source.pop_back();
  source = source.substr(source.rfind('\n') == std::string::npos ? 0 : source.rfind('\n') + 1);
  return {source, test::read_bytes(out)};
}

TEST(StaleCodeRegression, KernelBuilderSeesAnEditedIncludePathHeader) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/val.h", "#define VAL 111\n");
  const std::string cache = (dir.path() / "cache").string(), inc = (dir.path() / "inc").string();
  const fs::path out = dir.path() / "k.cubin";
  const ChildBuild first = run_cache_child({"kernel", cache, inc, out}, out);
  EXPECT_EQ(first.source, "built");
  EXPECT_EQ(run_cache_child({"kernel", cache, inc, out}, out).source, "disk") << "unchanged: a hit";
  dir.write("inc/val.h", "#define VAL 222\n");
  const ChildBuild edited = run_cache_child({"kernel", cache, inc, out}, out);
  const ChildBuild fresh = run_cache_child({"kernel", "off", inc, out}, out);
  EXPECT_EQ(edited.source, "built");
  EXPECT_EQ(edited.bytes, fresh.bytes) << "the cache served what a fresh build would not produce";
  EXPECT_NE(edited.bytes, first.bytes);
}

TEST(StaleCodeRegression, AReduceOperatorSeesAnEditedHeaderOnItsIncludePath) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/op.h", "#define OP(a, b) ((a) + (b))\n");
  const std::string cache = (dir.path() / "cache").string(), inc = (dir.path() / "inc").string();
  const fs::path out = dir.path() / "reduce.cubin";
  const ChildBuild sum = run_cache_child({"reduce", cache, inc, out}, out);
  EXPECT_EQ(sum.source, "built");
  dir.write("inc/op.h", "#define OP(a, b) ((a) < (b) ? (b) : (a))\n");
  const ChildBuild max = run_cache_child({"reduce", cache, inc, out}, out);
  const ChildBuild fresh = run_cache_child({"reduce", "off", inc, out}, out);
  EXPECT_EQ(max.source, "built");
  EXPECT_EQ(max.bytes, fresh.bytes) << "a 'max' reduction was served the 'sum' cubin";
  EXPECT_NE(max.bytes, sum.bytes);
}

TEST(StaleCodeRegression, ReorderedDefinesAreADifferentCompile) {
  test::TempDir dir;
  const std::string cache = (dir.path() / "cache").string();
  const fs::path out = dir.path() / "k.ptx";
  const ChildBuild first = run_cache_child({"compile", cache, out, "-DV=111", "-DV=222"}, out);
  const ChildBuild second = run_cache_child({"compile", cache, out, "-DV=222", "-DV=111"}, out);
  const ChildBuild fresh = run_cache_child({"compile", "off", out, "-DV=222", "-DV=111"}, out);
  EXPECT_EQ(first.source, "built");
  EXPECT_EQ(second.source, "built");
  EXPECT_EQ(second.bytes, fresh.bytes);
  EXPECT_NE(second.bytes, first.bytes);
  EXPECT_EQ(run_cache_child({"compile", cache, out, "-DV=222", "-DV=111"}, out).source, "disk");
}


// The classes the hermetic compile closes (issue 25), each through the disk tier in new
// processes: `compile-file` compiles SOURCE as NAME in CWD with the options given.
ChildBuild child_compile(const std::string& cache, const fs::path& cwd, const fs::path& source, const std::string& name,
                         std::vector<std::string> options) {
  const fs::path out = cwd.parent_path() / ("out-" + cwd.filename().string() + ".ptx");
  std::vector<std::string> args{"compile-file", cache, out.string(), cwd.string(), source.string(), name};
  args.insert(args.end(), options.begin(), options.end());
  return run_cache_child(args, out);
}

// After each change: the cached build in a new process is the fresh build, byte for byte.
void expect_fresh(const std::string& cache, const fs::path& cwd, const fs::path& source, const std::string& name,
                  const std::vector<std::string>& options, const std::string& what) {
  const ChildBuild cached = child_compile(cache, cwd, source, name, options);
  const ChildBuild fresh = child_compile("off", cwd, source, name, options);
  EXPECT_EQ(cached.bytes, fresh.bytes) << what << ": the cache served what a fresh build would not produce ("
                                        << cached.source << " vs " << fresh.source << ")";
  EXPECT_EQ(cached.source.rfind("failed", 0) == 0, fresh.source.rfind("failed", 0) == 0) << what;
}

const char* kernel_using_v = "extern \"C\" __global__ void k(int* p) { *p = V; }\n";

TEST(StaleCodeRegression, TheProgramsOwnDirectoryIsTheWorkingDirectory) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  dir.write("a/val.h", "#define V 111\n");
  dir.write("b/val.h", "#define V 222\n");
  const fs::path source = dir.write("k.cu", std::string("#include \"val.h\"\n") + kernel_using_v);
  const std::string cache = (dir.path() / "cache").string();
  EXPECT_EQ(child_compile(cache, dir.path() / "a", source, "k.cu", {}).source, "built");
  expect_fresh(cache, dir.path() / "b", source, "k.cu", {}, "another working directory");
  // With an absolute -I that also holds val.h: the working directory still comes first.
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/val.h", "#define V 333\n");
  expect_fresh(cache, dir.path() / "a", source, "k.cu", {"-I" + (dir.path() / "inc").string()}, "with -I, dir a");
  expect_fresh(cache, dir.path() / "b", source, "k.cu", {"-I" + (dir.path() / "inc").string()}, "with -I, dir b");
}

TEST(StaleCodeRegression, DotDotThroughASymlinkedDirectoryIsTheFileTheKernelOpens) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  fs::create_directories(dir.path() / "elsewhere/real/sub");
  dir.write("inc/d.h", "#define V 1\n");               // what a lexical ".." would read
  dir.write("elsewhere/real/d.h", "#define V 2\n");    // what the kernel opens
  dir.write("elsewhere/real/sub/c.h", "#include \"../d.h\"\n");
  fs::create_directory_symlink(dir.path() / "elsewhere/real/sub", dir.path() / "inc/sub");
  const fs::path source = dir.write("k.cu", std::string("#include <sub/c.h>\n") + kernel_using_v);
  const std::vector<std::string> options{"-I" + (dir.path() / "inc").string()};
  const std::string cache = (dir.path() / "cache").string();
  fs::create_directories(dir.path() / "cwd");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "first build");
  dir.write("elsewhere/real/d.h", "#define V 3\n");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "the real d.h edited");
  dir.write("inc/d.h", "#define V 4\n");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "the lexical d.h edited");
  // And NVRTC reading the disk itself agrees with the hermetic compile.
  CompileOptions native = sm90_ptx();
  native.options = options;
  const fs::path before = fs::current_path();
  fs::current_path(dir.path() / "cwd");
  const std::string by_nvrtc = Program(test::read_bytes(source), "k.cu").compile(native).code.bytes();
  fs::current_path(before);
  EXPECT_EQ(child_compile("off", dir.path() / "cwd", source, "k.cu", options).bytes, by_nvrtc);
}

TEST(StaleCodeRegression, DigraphsAndSplicedDirectivesAreIncludesToo) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/one.h", "#define ONE 1\n");
  dir.write("inc/two.h", "#define TWO 2\n");
  dir.write("inc/three.h", "#define THREE 3\n");
  const fs::path source = dir.write(
      "k.cu", "%:include \"one.h\"\n#inc\\\nlude \"two.h\"\n# /* c */ include <th\\\nree.h>\n"
              "extern \"C\" __global__ void k(int* p) { p[0] = ONE; p[1] = TWO; p[2] = THREE; }\n");
  const std::vector<std::string> options{"-I" + (dir.path() / "inc").string()};
  const std::string cache = (dir.path() / "cache").string();
  fs::create_directories(dir.path() / "cwd");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "first build");
  for (const char* header : {"one.h", "two.h", "three.h"}) {
    dir.write(std::string("inc/") + header, "#define ONE 7\n#define TWO 8\n#define THREE 9\n");
    expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, std::string(header) + " edited");
  }
}

TEST(StaleCodeRegression, IncludeNextFindsTheNextDirectoryAndHits) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "first");
  fs::create_directories(dir.path() / "second");
  dir.write("first/v.h", "#include_next <v.h>\n#define W 5\n");
  dir.write("second/v.h", "#define V 6\n");
  const fs::path source = dir.write("k.cu", "#include <v.h>\nextern \"C\" __global__ void k(int* p) { *p = V + W; }\n");
  const std::vector<std::string> options{"-I" + (dir.path() / "first").string(), "-I" + (dir.path() / "second").string()};
  const std::string cache = (dir.path() / "cache").string();
  fs::create_directories(dir.path() / "cwd");
  EXPECT_EQ(child_compile(cache, dir.path() / "cwd", source, "k.cu", options).source, "built");
  EXPECT_EQ(child_compile(cache, dir.path() / "cwd", source, "k.cu", options).source, "disk");
  dir.write("second/v.h", "#define V 16\n");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "the next v.h edited");
}

TEST(StaleCodeRegression, AHeaderEditIsSeenWhateverPchOptionsSay) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/val.h", "#define V 1\n");
  const fs::path source = dir.write("k.cu", std::string("#include \"val.h\"\n") + kernel_using_v);
  const std::vector<std::string> options{"-pch", "-I" + (dir.path() / "inc").string()};
  const std::string cache = (dir.path() / "cache").string();
  fs::create_directories(dir.path() / "cwd");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "first build");
  dir.write("inc/val.h", "#define V 2\n");
  expect_fresh(cache, dir.path() / "cwd", source, "k.cu", options, "edited");
  // In one process too: a second compile after the edit is not served from a PCH.
  BuildCache& off = BuildCache::disabled();
  CompileOptions compile = sm90_ptx();
  compile.options = options;
  const Program program(test::read_bytes(source), "k.cu");
  const std::string before = compile_cached(program, compile, off).result.code.bytes();
  dir.write("inc/val.h", "#define V 3\n");
  EXPECT_NE(compile_cached(program, compile, off).result.code.bytes(), before);
}

TEST(StaleCodeRegression, ASpellingNvrtcRejectsNeverSharesAKeyWithOneItAccepts) {
  test::TempDir dir;
  const fs::path source = dir.write("k.cu", std::string("#define V 1\n") + kernel_using_v);
  const std::string cache = (dir.path() / "cache").string();
  fs::create_directories(dir.path() / "cwd");
  EXPECT_EQ(child_compile(cache, dir.path() / "cwd", source, "k.cu", {"-std=c++17"}).source, "built");
  EXPECT_EQ(child_compile(cache, dir.path() / "cwd", source, "k.cu", {"-std", "c++17"}).source, "failed compile");
  EXPECT_EQ(child_compile(cache, dir.path() / "cwd", source, "k.cu", {"-rdc=true"}).source, "built");
  EXPECT_EQ(child_compile(cache, dir.path() / "cwd", source, "k.cu", {"-rdc"}).source, "failed compile");
}

TEST(StaleCodeRegression, TemporalMacrosAreNeverCached) {
  test::TempDir dir;
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  for (const char* macro : {"__TIME__", "__DATE__"}) {  // NVRTC 13.0 has no __TIMESTAMP__
    const Program program(std::string("__device__ const char* when = ") + macro + ";\n" + kernel_using_v, "k.cu");
    CompileOptions options = sm90_ptx();
    options.options = {"-DV=1"};
    const std::uint64_t not_stored = cache.stats().not_stored;
    EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::built) << macro;
    EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::built) << macro << " was served again";
    EXPECT_EQ(cache.stats().not_stored, not_stored + 2) << macro;
  }
  EXPECT_EQ(test::count_files(dir.path() / "cache", ".entry"), 0u);
}

TEST(StaleCodeRegression, AComputedIncludeIsResolvedThroughItsDefinitions) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/val.h", "#define V 1\n");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  CompileOptions options = sm90_ptx();
  options.options = {"-I" + (dir.path() / "inc").string(), "-DHEADER=<val.h>"};
  const Program program(std::string("#include HEADER\n") + kernel_using_v, "k.cu");
  const std::string first = compile_cached(program, options, cache).result.code.bytes();
  EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::memory);
  dir.write("inc/val.h", "#define V 2\n");
  const CachedCompile second = compile_cached(program, options, cache);
  EXPECT_EQ(second.source, CacheSource::built);
  EXPECT_NE(second.result.code.bytes(), first);
  EXPECT_EQ(second.result.code.bytes(), compile_cached(program, options, BuildCache::disabled()).result.code.bytes());
}

TEST(StaleCodeRegression, AnIncludeThatCannotBeExpandedIsCompiledAsGivenAndNotStored) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/val.h", "#define V 1\n");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  CompileOptions options = sm90_ptx();
  options.options = {"-I" + (dir.path() / "inc").string()};
  const Program program(std::string("#define HEADER_OF(x) <x>\n#include HEADER_OF(val.h)\n") + kernel_using_v, "k.cu");
  const std::string first = compile_cached(program, options, cache).result.code.bytes();
  dir.write("inc/val.h", "#define V 2\n");
  const CachedCompile second = compile_cached(program, options, cache);
  EXPECT_EQ(second.source, CacheSource::built);
  EXPECT_NE(second.result.code.bytes(), first);
  EXPECT_EQ(test::count_files(dir.path() / "cache", ".entry"), 0u);
  EXPECT_GE(cache.stats().not_stored, 2u);
}

}  // namespace
}  // namespace cujit
