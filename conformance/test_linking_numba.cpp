// numba-cuda's real output (committed peer fixtures, sm_90a) linked into a CUDA C++ kernel
// that calls it, and numba's function names: declaring a numba function by module, name
// and signature gives the symbol numba-cuda 0.30.4 emitted, flags tag included.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "compile/numba_tag_encoding.hpp"
#include "cujit/abi.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

using test::scenario_path;

std::string numba_fixture(const std::string& name) {
  return test::read_bytes(scenario_path("fixtures/numba/" + name));
}

// Every numba-mangled name in a fixture (functions, kernels and their NumbaEnv globals).
std::set<std::string> numba_symbols(const std::string& ptx) {
  std::set<std::string> out;
  const std::regex symbol(R"(_ZN\w+)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), symbol); it != std::sregex_iterator();
       ++it) {
    std::string s = it->str();
    if (const auto param = s.find("_param_"); param != std::string::npos) s.resize(param);
    out.insert(s);
  }
  return out;
}

// mangle_numba for no arguments ends in "E", as numba's does; numba's names for these
// fixtures' functions continue with argument types cujit's signatures do not spell (arrays,
// typerefs), so the tests compare up to the "E".
std::string mangled_prefix(const std::string& module, const std::string& name,
                           const abi::NumbaFlags& flags, unsigned uid) {
  return abi::mangle_numba(module, name, {}, flags, uid);
}

TEST(NumbaNames, DeclaringNumbasAddGivesItsExactSymbol) {
  const std::string ptx = numba_fixture("add_i32_numba_abi.ptx");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(ptx, match, std::regex(R"(\.visible \.func\s+\([^)]*\)\s*(_ZN\w+)\()")));
  const std::string numbas = match[1].str();

  DeclaredFunction add;
  add.name = "add";
  add.module = "__main__";
  add.signatures = {Signature::parse("int32(int32, int32)")};
  EXPECT_EQ(add.symbol(add.signatures[0]), numbas);
  EXPECT_EQ(abi::mangle_numba("__main__", "add", add.signatures[0].args), numbas);
  // Its NumbaEnv global is the same name under the "NumbaEnv" namespace.
  EXPECT_TRUE(numba_symbols(ptx).count("_ZN08NumbaEnv" + numbas.substr(3))) << ptx;
  // Another signature, module or function number is another name.
  EXPECT_NE(abi::mangle_numba("__main__", "add", {Type::parse("int64"), Type::parse("int64")}),
            numbas);
  EXPECT_NE(abi::mangle_numba("__main__", "add", add.signatures[0].args, {}, 2), numbas);
}

// numba counts the functions it compiles in a process: the second one is "B2v2", and one
// compiled with options carries their tag. A declaration names both, so it reaches a
// function numba did not compile first with default flags.
TEST(NumbaNames, ADeclarationCarriesNumbasFunctionNumberAndFlags) {
  const std::string ptx = numba_fixture("add_i32_numba_abi.ptx");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(ptx, match, std::regex(R"(\.visible \.func\s+\([^)]*\)\s*(_ZN\w+)\()")));
  const std::string numbas = match[1].str();
  DeclaredFunction add;
  add.name = "add";
  add.signatures = {Signature::parse("int32(int32, int32)")};
  for (const unsigned uid : {1u, 2u, 19u, 1234u}) {
    add.numba_uid = uid;
    const std::string symbol = add.symbol(add.signatures[0]);
    const std::string tag = "B" + std::to_string(1 + std::to_string(uid).size()) + "v" + std::to_string(uid);
    const std::string head = "_ZN8__main__3add";
    EXPECT_EQ(symbol.substr(0, head.size() + tag.size()), head + tag) << symbol;
    // Everything after the function number is numba's own text for uid 1 ("B2v1").
    EXPECT_EQ(symbol.substr(head.size() + tag.size()), numbas.substr(head.size() + 4)) << symbol;
  }
  add.numba_uid = 1;
  abi::NumbaFlags debug;
  debug.debug = true;
  add.numba_flags = debug;
  EXPECT_NE(add.symbol(add.signatures[0]), numbas);
  EXPECT_EQ(add.symbol(add.signatures[0]), abi::mangle_numba("__main__", "add", add.signatures[0].args, debug, 1));
}

TEST(NumbaNames, EveryTaggedNameInTheFixturesIsReproduced) {
  // The kernel numba compiled 19th in its process, with the default flags.
  const std::string kshim = mangled_prefix("__main__", "kshim", {}, 19);
  // numba's own np.empty / np.ones overloads (numbers 12 to 15), compiled for the sm_90
  // device with their nvvm options written opt first.
  abi::NumbaFlags overloads;
  overloads.cc_major = 9;
  overloads.cc_minor = 0;
  overloads.nvvm_order = abi::NvvmOptionOrder::opt_first;
  const std::string arrayobj = "numba.cuda.np.arrayobj";
  const std::vector<std::string> expected_prefixes = {
      kshim,
      "_ZN08NumbaEnv" + kshim.substr(3),
      "_ZN08NumbaEnv" + mangled_prefix(arrayobj + ".ol_np_ones.<locals>", "impl", overloads, 12).substr(3),
      "_ZN08NumbaEnv" + mangled_prefix(arrayobj + ".ol_np_empty.<locals>", "impl", overloads, 13).substr(3),
      "_ZN08NumbaEnv" + mangled_prefix(arrayobj, "_call_allocator", overloads, 14).substr(3),
      "_ZN08NumbaEnv" + mangled_prefix(arrayobj + "._ol_array_allocate.<locals>", "impl", overloads, 15).substr(3),
  };
  std::set<std::string> tagged;
  for (const char* fixture : {"add_i32_numba_abi.ptx", "shim_caller_kernel.ptx", "nrt_user_c_abi.ptx"}) {
    for (const std::string& s : numba_symbols(numba_fixture(fixture))) tagged.insert(s);
  }
  ASSERT_EQ(tagged.size(), 8u) << "the fixtures changed: cover their new names here";
  std::size_t reproduced = 0;
  for (const std::string& symbol : tagged) {
    if (symbol.find("3add") != std::string::npos) continue;  // the test above
    bool found = false;
    for (const std::string& prefix : expected_prefixes) {
      if (symbol.rfind(prefix, 0) == 0) found = true;
    }
    EXPECT_TRUE(found) << symbol;
    reproduced += found;
  }
  EXPECT_EQ(reproduced, 6u);
}

TEST(NumbaNames, TheDefaultFlagsAreADeviceFunctionsFromCompilePtx) {
  EXPECT_EQ(abi::NumbaFlags{}.summary(),
            "CUDAFlags(compute_capability=(7, 5), error_model=numpy, no_cfunc_wrapper=True, "
            "no_compile=True, no_cpython_wrapper=True, nvvm_options={'fastmath': False, "
            "'opt': 3})");
  abi::NumbaFlags all;
  all.cc_major = 12;
  all.cc_minor = 1;
  all.debug = all.lineinfo = all.fastmath = all.forceinline = all.inline_always = all.lto = true;
  all.opt = false;
  all.max_registers = 64;
  EXPECT_EQ(all.summary(),
            "CUDAFlags(compute_capability=(12, 1), dbg_directives_only=True, "
            "dbg_extend_lifetimes=True, debuginfo=True, fastmath=FastMathOptions({'fast'}), "
            "forceinline=True, inline=InlineOptions('always'), max_registers=64, "
            "no_cfunc_wrapper=True, no_compile=True, no_cpython_wrapper=True, "
            "nvvm_options={'fastmath': True, 'opt': 0, 'g': None, 'gen-lto': None})");
  // Every flag changes the name; every combination has a tag cujit reproduces.
  std::set<std::string> tags{abi::numba_flags_tag({})};
  for (int i = 1; i < 64; ++i) {
    abi::NumbaFlags f;
    f.debug = i & 1, f.lineinfo = i & 2, f.fastmath = i & 4, f.opt = !(i & 8);
    f.lto = i & 16, f.forceinline = i & 32;
    EXPECT_TRUE(tags.insert(abi::numba_flags_tag(f)).second) << f.summary();
  }
}

std::string from_base64(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const auto at = alphabet.find(c);
    if (at == std::string::npos) throw std::runtime_error("not base64: " + text);
    value = (value << 6) | static_cast<unsigned>(at);
    if ((bits += 6) >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xFF);
    }
  }
  return out;
}

TEST(NumbaNames, TheEncoderWritesWhatZlibWrites) {
  // Texts and what the zlib Python links wrote for them (make_flag_tag_vectors.py): flag
  // summaries, noise, repeats, fixed, stored and dynamic blocks.
  std::ifstream in(scenario_path("fixtures/numba/flag_tag_vectors.txt"));
  ASSERT_TRUE(in) << "flag_tag_vectors.txt";
  std::string line;
  std::size_t cases = 0, declined = 0;
  const std::string& zdict = abi::detail::numba_flags_dictionary();
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string text = from_base64(line.substr(0, tab));
    const std::string expected = line.substr(tab + 1);
    const auto got = abi::detail::deflate_like_zlib_level9(zdict, text);
    ++cases;
    if (expected == "dynamic") {
      EXPECT_FALSE(got) << "zlib wrote a dynamic block for a text of " << text.size() << " bytes";
      ++declined;
      continue;
    }
    ASSERT_TRUE(got) << text;
    EXPECT_EQ(abi::detail::base64(*got), expected) << text;
  }
  EXPECT_GT(cases, 250u);
  EXPECT_GT(declined, 10u);
}

Linker numba_link(LinkerBackend backend, bool lto, const std::string& arch) {
  Linker linker(test::link_options(backend, lto, arch));
  linker.add_file(scenario_path("fixtures/numba_add_caller.cu"));
  linker.add_file(scenario_path("fixtures/numba/add_i32_c_abi.ptx"));
  linker.add_file(scenario_path("fixtures/numba/add_f32_c_abi_named.ptx"));
  return linker;
}

TEST(NumbaPeer, CAbiPtxLinksForSm90a) {
  for (bool lto : {false, true}) {
    const LinkResult result = numba_link(LinkerBackend::nvjitlink, lto, "sm_90a").link();
    EXPECT_EQ(detect_format(result.code.bytes()), Format::cubin) << "lto " << lto;
    EXPECT_NE(result.code.bytes().find("call_numba_add"), std::string::npos);
  }
}

TEST(NumbaPeer, Sm90aPtxRefusesPlainSm90) {
  CUJIT_EXPECT_ERROR(numba_link(LinkerBackend::nvjitlink, false, "sm_90").link(),
                     ErrorKind::link, error,
                     EXPECT_NE(std::string(error.what()).find(
                                   "cannot be compiled for architecture 'sm_90'"),
                               std::string::npos)
                         << error.what();
                     EXPECT_NE(std::string(error.what()).find("add_i32_c_abi.ptx"),
                               std::string::npos););
}

// A kernel calling numba's own Numba-ABI `add` through a declaration: module, name and
// signature, nothing else, and numba's PTX as the link item.
KernelBuilder calls_numbas_add(LinkerBackend backend) {
  KernelOptions options;
  options.link = test::link_options(backend, false, "sm_90a");
  KernelBuilder builder("call_numbas_add", options, BuildCache::disabled());
  DeclaredFunction add;
  add.name = "add";
  add.signatures = {Signature::parse("int32(int32, int32)")};
  add.link = {LinkableCode::from_path(scenario_path("fixtures/numba/add_i32_numba_abi.ptx"))};
  builder.declare(std::move(add));
  builder.source(LinkableCode::cuda_source(
      "#include \"cujit/declarations.cuh\"\n"
      "extern \"C\" __global__ void call_numbas_add(int* out, int a, int b) {\n"
      "  const int t = static_cast<int>(threadIdx.x);\n"
      "  out[t] = add(a * t, b);\n"
      "}\n",
      "call_numbas_add.cu"));
  return builder;
}

TEST(NumbaPeer, ADeclaredNumbaAbiFunctionResolvesToNumbasPtx) {
  const LinkedKernel linked = calls_numbas_add(LinkerBackend::nvjitlink).link_cubin();
  ASSERT_EQ(linked.resolved.size(), 1u);
  EXPECT_EQ(numba_symbols(numba_fixture("add_i32_numba_abi.ptx")).count(linked.resolved[0].symbol),
            1u)
      << linked.resolved[0].symbol;
  EXPECT_EQ(detect_format(linked.link.code.bytes()), Format::cubin);
}

class GpuNumbaPeer : public ::testing::TestWithParam<LinkerBackend> {};

TEST_P(GpuNumbaPeer, CallsNumbasOwnNumbaAbiFunctionThroughADeclaration) {
  CUJIT_REQUIRE_DEVICE();
  if (Arch::of_device(0).number() != 90) {
    GTEST_SKIP() << "numba fixtures are sm_90a PTX; this device is " << Arch::of_device(0).sm();
  }
  const BuiltKernel built = calls_numbas_add(GetParam()).build();
  constexpr unsigned threads = 64;
  DeviceBuffer out(threads * sizeof(int));
  out.fill_bytes(0xCD);
  const int a = 7, b = -100;
  LaunchConfig config;
  config.block.x = threads;
  built.kernel(config, out.ptr(), a, b);
  const auto got = out.to_vector<int>(threads);
  for (unsigned i = 0; i < threads; ++i) EXPECT_EQ(got[i], a * static_cast<int>(i) + b) << i;
}

TEST_P(GpuNumbaPeer, ReturnsTheRightSums) {
  CUJIT_REQUIRE_DEVICE();
  if (Arch::of_device(0).number() != 90) {
    GTEST_SKIP() << "numba fixtures are sm_90a PTX; this device is " << Arch::of_device(0).sm();
  }
  const LinkResult result = numba_link(GetParam(), false, "sm_90a").link();
  auto module = Module::load(LinkableCode::cubin(result.code.bytes(), "numba_add_caller"));
  const Kernel kernel = module->kernel("call_numba_add");
  constexpr unsigned threads = 64;
  DeviceBuffer ints(threads * sizeof(int)), floats(threads * sizeof(float));
  ints.fill_bytes(0xCD);
  floats.fill_bytes(0xCD);
  const int a = -40, b = 3;
  const float x = 1.5f, y = 0.25f;
  LaunchConfig config;
  config.block.x = threads;
  kernel(config, ints.ptr(), floats.ptr(), a, b, x, y);
  const auto got_i = ints.to_vector<int>(threads);
  const auto got_f = floats.to_vector<float>(threads);
  for (unsigned i = 0; i < threads; ++i) {
    EXPECT_EQ(got_i[i], a + static_cast<int>(i) * b) << i;
    EXPECT_FLOAT_EQ(got_f[i], x + static_cast<float>(i) * y) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuNumbaPeer,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         [](const auto& cell) { return std::string(to_string(cell.param)); });

}  // namespace
}  // namespace cujit
