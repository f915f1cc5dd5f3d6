// The one cached compile and the key recipes: every input of a compile or link changes its
// key, nothing irrelevant does, and a cache hit is byte-identical to a fresh build, also
// when headers on disk change (the three stale-code bugs users reported, through the disk
// tier in new processes).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <thread>

#include "compile/header_manifest.hpp"
#include "support/record.hpp"  // core/src: the trace reader is tested directly
#include "cujit/compile_cache.hpp"
#include "cujit/linker.hpp"
#include "cujit/reduce.hpp"
#include "support/cache_helpers.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

namespace fs = std::filesystem;

// A header must have settled before a compile that reads it can be stored (see
// detail::settle_time): tests that need a stored result wait this long after writing.
void let_headers_settle() { std::this_thread::sleep_for(std::chrono::milliseconds(1100)); }

CompileOptions sm90_ptx() {
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.target = CompileTarget::ptx;
  return options;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------
// key_options

TEST(KeyOptions, KeepsTheOrderGiven) {
  EXPECT_NE(key_options({"-DV=111", "-DV=222"}), key_options({"-DV=222", "-DV=111"}));
  EXPECT_NE(key_options({"-I/a", "-I/b"}), key_options({"-I/b", "-I/a"}));
  EXPECT_NE(key_options({"-include=a.h", "-include=b.h"}), key_options({"-include=b.h", "-include=a.h"}));
  EXPECT_NE(key_options({"-DX", "-UX"}), key_options({"-UX", "-DX"}));
}

TEST(KeyOptions, SpellsEachOptionOneWay) {
  EXPECT_EQ(key_options({"--define-macro=X=1", "-D", "Y", "--gpu-architecture=sm_90", "-arch", "sm_90",
                         "--include-path=/a", "-I", "/b", "--relocatable-device-code=true", "-rdc"}),
            (std::vector<std::string>{"-DX=1", "-DY", "-arch=sm_90", "-arch=sm_90", "-I/a", "-I/b",
                                      "-rdc=true", "-rdc=true"}));
}

TEST(KeyOptions, DropsOnlyTheDocumentedOutputNeutralOptions) {
  EXPECT_TRUE(key_options({"-pch", "--pch", "-pch-dir=/tmp", "--pch-dir=/x", "-pch-verbose=true",
                           "-pch-messages=false", "-time=t.csv", "--time=t.csv",
                           "--fdevice-time-trace=t", "-fdevice-time-trace=t", "-no-cache", "--no-cache"})
                  .empty());
  // Options that can change the output stay, however they look.
  for (const char* kept : {"-split-compile-extended=1", "-jump-table-density=50", "-w", "-Werror",
                           "-split-compile=4", "-pchx", "-instantiate-templates-in-pch=true", "-use_fast_math"}) {
    EXPECT_EQ(key_options({kept}), std::vector<std::string>{kept}) << kept;
  }
}

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
        CompileVariant{"include_dir_order", [](S&, S&, O& o) { std::swap(o.options[2], o.options[3]); }, true},
        CompileVariant{"include_path_field", [](S&, S&, O& o) { o.include_paths = {"/c"}; }, true},
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
        CompileVariant{"automatic_pch", [](S&, S&, O& o) { o.options.push_back("-pch"); }, false},
        CompileVariant{"pch_dir", [](S&, S&, O& o) { o.options.push_back("--pch-dir=/tmp/pch"); }, false},
        CompileVariant{"timing_output", [](S&, S&, O& o) { o.options.push_back("-time=times.csv"); }, false},
        CompileVariant{"time_trace", [](S&, S&, O& o) { o.options.push_back("--fdevice-time-trace=t"); }, false},
        CompileVariant{"nvrtc_own_cache_off", [](S&, S&, O& o) { o.options.push_back("-no-cache"); }, false},
        CompileVariant{"define_long_spelling", [](S&, S&, O& o) { o.options[0] = "--define-macro=V=1"; }, false},
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

TEST(CompileKey, ARelativeIncludePathAddsTheWorkingDirectory) {
  CompileOptions options = sm90_ptx();
  options.include_paths = {"inc"};
  EXPECT_TRUE(contains(compile_key(Program("x", "x.cu"), options).description(), "working-directory="));
  options.include_paths = {"/abs/inc"};
  EXPECT_FALSE(contains(compile_key(Program("x", "x.cu"), options).description(), "working-directory="));
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
      {"include dir", [](reduce::ReduceSpec& s) { s.config.include_dirs = {"/opt/extra"}; }},
  };
  for (const auto& [what, change] : changes) EXPECT_NE(digest(change), base) << what;
  EXPECT_EQ(digest([](reduce::ReduceSpec& s) { s.config.precompiled_header = false; }), base)
      << "the precompiled header changes how NVRTC works, not what it makes";
}

TEST(ReduceKernelCompile, IncludeDirsReachTheOperatorCompileToo) {
  reduce::ReduceSpec spec;
  spec.config.include_dirs = {"/opt/ops"};
  EXPECT_EQ(reduce::link_options(spec).compile.include_paths.front(), "/opt/ops");
  EXPECT_EQ(reduce::kernel_compile(spec).options.include_paths.front(), "/opt/ops");
}

// ---------------------------------------------------------------------------------------
// The header manifest, read from NVRTC's time trace

TEST(HeaderManifest, CoversEveryHeaderTheCompileReads) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "inc" / "nested");
  dir.write("inc/val.h", "#include \"nested/deep.h\"\n#define VAL (DEEP + 1)\n");
  dir.write("inc/nested/deep.h", "#define DEEP 41\n");
  let_headers_settle();
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  CompileOptions options = sm90_ptx();
  options.include_paths = {(dir.path() / "inc").string()};
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu");
  const CachedCompile first = compile_cached(program, options, cache);
  EXPECT_EQ(first.source, CacheSource::built);
  EXPECT_FALSE(first.key.empty()) << "the compile was keyed by its headers";
  EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::memory);

  // A header two levels down changes: the next compile is fresh, and right.
  dir.write("inc/nested/deep.h", "#define DEEP 99\n");
  const CachedCompile second = compile_cached(program, options, cache);
  EXPECT_EQ(second.source, CacheSource::built);
  EXPECT_TRUE(contains(second.result.code.bytes(), "100")) << "VAL = DEEP + 1 = 100";
  EXPECT_EQ(second.result.code.bytes(), program.compile(options).code.bytes());
}

TEST(HeaderManifest, AHeaderAppearingEarlierOnTheIncludePathIsSeen) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "first");
  fs::create_directories(dir.path() / "second");
  dir.write("second/val.h", "#define VAL 222\n");
  let_headers_settle();
  CompileOptions options = sm90_ptx();
  options.include_paths = {(dir.path() / "first").string(), (dir.path() / "second").string()};
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu");
  {
    BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
    EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::built);
  }
  dir.write("first/val.h", "#define VAL 111\n");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  const CachedCompile shadowed = compile_cached(program, options, cache);
  EXPECT_EQ(shadowed.source, CacheSource::built);
  EXPECT_TRUE(contains(shadowed.result.code.bytes(), "111"));
}

TEST(HeaderManifest, APreIncludedHeaderIsCoveredByContent) {
  test::TempDir dir;
  const fs::path pre = dir.write("pre.h", "#define V 5\n");
  let_headers_settle();
  CompileOptions options = sm90_ptx();
  options.options = {"-include=" + pre.string()};
  const Program program("extern \"C\" __global__ void k(int* p) { *p = V; }\n", "k.cu");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::built);
  dir.write("pre.h", "#define V 6\n");
  const CachedCompile changed = compile_cached(program, options, cache);
  EXPECT_EQ(changed.source, CacheSource::built);
  EXPECT_EQ(changed.result.code.bytes(), program.compile(options).code.bytes());
}

TEST(HeaderManifest, AnAbsoluteIncludeWithoutIncludePathsIsCoveredToo) {
  test::TempDir dir;
  const fs::path header = dir.write("abs.h", "#define V 31\n");
  let_headers_settle();
  const Program program("#include \"" + header.string() + "\"\nextern \"C\" __global__ void k(int* p) { *p = V; }\n",
                        "k.cu");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  EXPECT_FALSE(compile_cached(program, sm90_ptx(), cache).key.empty());
  dir.write("abs.h", "#define V 32\n");
  const CachedCompile changed = compile_cached(program, sm90_ptx(), cache);
  EXPECT_EQ(changed.source, CacheSource::built);
  EXPECT_EQ(changed.result.code.bytes(), program.compile(sm90_ptx()).code.bytes());
}

// The manifest of a compile that read one settled header, dir/val.h ("#define VAL 7").
detail::HeaderManifest manifest_of_one_header(test::TempDir& dir) {
  const fs::path header = dir.write("val.h", "#define VAL 7\n");
  let_headers_settle();
  std::string why_not;
  auto captured = detail::HeaderManifest::capture({header.string()}, {}, {}, std::chrono::system_clock::now(), why_not);
  if (!captured) throw std::runtime_error("no manifest: " + why_not);
  return *captured;
}

// A manifest read back in a new process trusts a header's recorded digest while the file's
// stamp (device, inode, size, mtime, ctime) is the one recorded, so an unchanged header is
// stat()ed, not read and hashed: shown by a recorded digest no read could produce, which
// stands until the file changes.
TEST(HeaderManifest, AnUnchangedHeaderIsKeyedByItsStampWithoutBeingRead) {
  test::TempDir dir;
  const detail::HeaderManifest captured = manifest_of_one_header(dir);
  const std::string real_digest = captured.key_fields().at(2);
  std::string encoded = captured.encode();
  const std::string planted(64, 'a');
  encoded.replace(encoded.find(real_digest), real_digest.size(), planted);
  const auto decoded = detail::HeaderManifest::decode(encoded);
  ASSERT_TRUE(decoded);
  const auto unchanged = decoded->current_key_fields();
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(unchanged->at(2), planted) << "the recorded digest, not a read";

  dir.write("val.h", "#define VAL 8\n");
  const auto changed = decoded->current_key_fields();
  ASSERT_TRUE(changed);
  EXPECT_NE(changed->at(2), planted);
  EXPECT_NE(changed->at(2), real_digest);
}

TEST(HeaderManifest, AManifestWithoutStampsDoesNotDecode) {
  test::TempDir dir;
  const detail::HeaderManifest captured = manifest_of_one_header(dir);
  detail::Record record = *detail::decode_record(captured.encode());
  record.erase("stamp.0");
  EXPECT_FALSE(detail::HeaderManifest::decode(detail::encode_record(record)));
  record["stamp.0"] = "1 2 three 4 5";
  EXPECT_FALSE(detail::HeaderManifest::decode(detail::encode_record(record)));
}

TEST(HeaderManifest, ACompileThatCannotReadFilesIsStoredAtOnce) {
  // Only in-memory headers and no include path: nothing on disk can change the output,
  // so no header needs to settle and no trace is taken.
  test::TempDir dir;
  CompileOptions options = sm90_ptx();
  options.headers = {{"val.h", "#define VAL 5\n"}};
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  EXPECT_FALSE(compile_cached(program, options, cache).key.empty());
  EXPECT_EQ(cache.stats().not_stored, 0u);
  EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::memory);
}

TEST(HeaderManifest, TouchingAHeaderWithoutChangingItKeepsTheHit) {
  test::TempDir dir;
  dir.write("val.h", "#define VAL 7\n");
  let_headers_settle();
  CompileOptions options = sm90_ptx();
  options.include_paths = {dir.path().string()};
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu");
  {
    BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
    EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::built);
  }
  fs::last_write_time(dir.path() / "val.h", fs::file_time_type::clock::now());
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  EXPECT_EQ(compile_cached(program, options, cache).source, CacheSource::disk);
}

TEST(HeaderManifest, AHeaderChangedDuringTheCompileWindowIsNotStored) {
  test::TempDir dir;
  dir.write("val.h", "#define VAL 8\n");  // no settling: it may still be changing
  CompileOptions options = sm90_ptx();
  options.include_paths = {dir.path().string()};
  const Program program("#include \"val.h\"\nextern \"C\" __global__ void k(int* p) { *p = VAL; }\n", "k.cu");
  BuildCache cache(test::disk_cache_at(dir.path() / "cache"));
  const CachedCompile compiled = compile_cached(program, options, cache);
  EXPECT_TRUE(compiled.key.empty());
  EXPECT_EQ(cache.stats().not_stored, 1u);
  EXPECT_TRUE(test::has_warning(cache, "changed less than"));
  EXPECT_TRUE(contains(compiled.result.code.bytes(), "8"));
}

TEST(HeaderManifest, TimeTracesAreReadStrictly) {
  const std::string trace = R"({"traceEvents":[
    {"name":"Processing Header File","args":{"detail":"/x/a.h"}},
    {"name":"Phase I","args":{"detail":"/x/not-a-header"}},
    {"name":"Processing Header File","args":{"detail":"/x/a.h"}},
    {"name":"Processing Header File","args":{"detail":"mem.h"}},
    {"name":"Processing Header File","args":{}}]})";
  EXPECT_EQ(detail::headers_in_trace(trace), (std::vector<std::string>{"/x/a.h", "mem.h"}));
  EXPECT_FALSE(detail::headers_in_trace("not json"));
  EXPECT_FALSE(detail::headers_in_trace(R"({"events":[]})"));
  EXPECT_FALSE(detail::headers_in_trace(R"({"traceEvents":{}})"));
}

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
  let_headers_settle();
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
  let_headers_settle();
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

}  // namespace
}  // namespace cujit
