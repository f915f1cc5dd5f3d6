// C-ABI and Numba-ABI compilation of device functions: exact prototypes, mangling, errors.
#include <cxxabi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "cujit/abi.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

using abi::DeviceFunction;

DeviceFunction add_fn(const std::string& signature = "int32(int32, int32)") {
  DeviceFunction fn;
  fn.name = "add";
  fn.signature = Signature::parse(signature);
  fn.param_names = {"x", "y"};
  fn.body = "return x + y;";
  return fn;
}

abi::CompileOptions options(const std::string& abi_name_value, const std::string& output = "ptx") {
  abi::CompileOptions o;
  o.abi = abi::parse_abi(abi_name_value);
  o.output = parse_compile_target(output).value();
  o.arch = Arch::parse("sm_90");
  return o;
}

// The .func prototype of `symbol` in `ptx`, whitespace collapsed to single spaces and
// removed next to parentheses and commas.
std::string prototype(const std::string& ptx, const std::string& symbol) {
  const auto start = ptx.find(".visible .func");
  EXPECT_NE(start, std::string::npos);
  const auto name = ptx.find(" " + symbol + "(", start);
  EXPECT_NE(name, std::string::npos) << symbol;
  const auto end = ptx.find(')', name);
  std::string text = ptx.substr(start, end + 1 - start);
  text = std::regex_replace(text, std::regex(R"(\s+)"), " ");
  text = std::regex_replace(text, std::regex(R"(\s*([(),])\s*)"), "$1");
  return std::regex_replace(text, std::regex(R"(,)"), ", ");
}

std::string demangle(const std::string& symbol) {
  int status = 0;
  char* text = ::abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && text != nullptr ? text : "<status " + std::to_string(status) + ">";
  std::free(text);
  return out;
}

TEST(CAbi, ExactPrototypeWithTheDefaultName) {
  const auto compiled = abi::compile(add_fn(), options("c"));
  EXPECT_EQ(compiled.symbol, "add");
  EXPECT_EQ(prototype(compiled.code.bytes(), "add"),
            ".visible .func(.param .b32 func_retval0)add(.param .b32 add_param_0, "
            ".param .b32 add_param_1)");
}

TEST(CAbi, ExactPrototypeWithACustomName) {
  abi::CompileOptions o = options("c");
  o.abi_name = "add_f32";
  const auto compiled = abi::compile(add_fn("float32(float32, float32)"), o);
  EXPECT_EQ(compiled.symbol, "add_f32");
  EXPECT_EQ(prototype(compiled.code.bytes(), "add_f32"),
            ".visible .func(.param .b32 func_retval0)add_f32(.param .b32 add_f32_param_0, "
            ".param .b32 add_f32_param_1)");
  // numba-cuda's own output for the same request has the same prototype.
  const std::string numba =
      test::read_bytes(test::scenario_path("fixtures/numba/add_f32_c_abi_named.ptx"));
  EXPECT_EQ(prototype(numba, "add_f32"), prototype(compiled.code.bytes(), "add_f32"));
}

TEST(CAbi, SixtyFourBitTypesReturnB64) {
  for (const char* signature : {"int64(int64, int64)", "float64(float64, float64)",
                                "uint64(uint64, uint64)", "int32*(int32*, int32*)"}) {
    DeviceFunction fn = add_fn(signature);
    if (std::string(signature).find('*') != std::string::npos) fn.body = "return x;";
    const auto compiled = abi::compile(fn, options("c"));
    EXPECT_EQ(prototype(compiled.code.bytes(), "add"),
              ".visible .func(.param .b64 func_retval0)add(.param .b64 add_param_0, "
              ".param .b64 add_param_1)")
        << signature;
  }
}

TEST(NumbaAbi, MangledNameParametersAndStatus) {
  const auto compiled = abi::compile(add_fn(), options("numba"));
  // numba's own name for the function, flags tag included (test_linking_numba.cpp checks
  // it against numba's output).
  EXPECT_EQ(compiled.symbol, abi::mangle_numba("__main__", "add", add_fn().signature.args));
  EXPECT_EQ(compiled.symbol.rfind("_ZN8__main__3addB2v1B92cw51c", 0), 0u) << compiled.symbol;
  EXPECT_EQ(demangle(compiled.symbol),
            "__main__::add[abi:v1][abi:" + abi::numba_flags_tag({}) + "](int, int)");
  const std::string s = compiled.symbol;
  EXPECT_EQ(prototype(compiled.code.bytes(), s),
            ".visible .func(.param .b32 func_retval0)" + s + "(.param .b64 " + s +
                "_param_0, .param .b32 " + s + "_param_1, .param .b32 " + s + "_param_2)");
  EXPECT_NE(compiled.declaration.find("int " + s + "(int*, int, int)"), std::string::npos)
      << compiled.declaration;
}

TEST(NumbaAbi, NumbasOwnNameDemanglesTheSameWay) {
  const std::string ptx =
      test::read_bytes(test::scenario_path("fixtures/numba/add_i32_numba_abi.ptx"));
  std::smatch match;
  ASSERT_TRUE(std::regex_search(ptx, match, std::regex(R"(\.visible \.func\s+\([^)]*\)\s*(_ZN\w+))")));
  const std::string demangled = demangle(match[1].str());
  EXPECT_EQ(demangled.rfind("__main__::add[abi:v1][abi:cw51c", 0), 0u) << demangled;
  EXPECT_EQ(demangled.substr(demangled.size() - 10), "(int, int)") << demangled;
}

TEST(NumbaAbi, ManglingEscapesAndNests) {
  const std::vector<std::string> v1{"v1"};
  EXPECT_EQ(abi::mangle_numba_tags("pkg.mod", "f", {Type::parse("float64"), Type::parse("int64*")}, v1),
            "_ZN3pkg3mod1fB2v1Ed8int64_2a");
  // No arguments add nothing (numba writes no 'v').
  EXPECT_EQ(abi::mangle_numba_tags("__main__", "my-fn", {}, v1), "_ZN8__main__7my_2dfnB2v1E");
  // No module: one identifier, not nested.
  EXPECT_EQ(abi::mangle_numba_tags("", "add", {Type::parse("int32"), Type::parse("int32*")}, v1),
            "_Z3addB2v1i8int32_2a");
  EXPECT_EQ(abi::mangle_numba_tags("", "f", {}, v1), "_Z1fB2v1");
  // An empty module part is a part ("0"), as numba splits "a..b".
  EXPECT_EQ(abi::mangle_numba_tags("a..b", "f", {}, v1), "_ZN1a01b1fB2v1E");
  EXPECT_EQ(abi::mangle_numba_tags("__main__", "9lives", {Type::parse("uint8")}, v1),
            "_ZN8__main__7_9livesB2v1Eh");
  EXPECT_EQ(demangle(abi::mangle_numba_tags("pkg.mod", "f", {Type::parse("float32")}, v1)),
            "pkg::mod::f[abi:v1](float)");
  // Tags are escaped as names are (base64's '+', '/' and '='), digits first get a '_'.
  EXPECT_EQ(abi::mangle_numba_tags("m", "f", {}, {"a+/=", "9x"}), "_ZN1m1fB10a_2b_2f_3dB3_9xE");
  // The function number is the first tag, the flags the second.
  EXPECT_EQ(abi::mangle_numba("m", "f", {}, {}, 42),
            abi::mangle_numba_tags("m", "f", {}, {"v42", abi::numba_flags_tag({})}));
}

TEST(AbiOutput, LtoIrHasTheMagic) {
  for (const char* which : {"c", "numba"}) {
    const auto compiled = abi::compile(add_fn(), options(which, "ltoir"));
    EXPECT_EQ(compiled.code.format(), Format::ltoir);
    ASSERT_GE(compiled.code.bytes().size(), 4u);
    EXPECT_EQ(compiled.code.bytes().substr(0, 4), std::string("\xed\x43\x4e\x7f", 4));
  }
}

TEST(AbiErrors, UnsupportedAbiName) {
  CUJIT_EXPECT_ERROR(abi::compile(add_fn(), options("fortran")), ErrorKind::unsupported, error,
                     EXPECT_NE(std::string(error.what()).find("ABI 'fortran'"), std::string::npos););
}

TEST(AbiErrors, UnsupportedOutput) {
  CUJIT_EXPECT_ERROR(abi::compile(add_fn(), options("c", "cubin")), ErrorKind::unsupported, error,
                     EXPECT_NE(std::string(error.what()).find("output 'cubin'"), std::string::npos););
}

TEST(AbiErrors, CAbiForAKernel) {
  DeviceFunction kernel = add_fn("void(int32*, int32)");
  kernel.kernel = true;
  kernel.body = "x[0] = y;";
  CUJIT_EXPECT_ERROR(abi::compile(kernel, options("c")), ErrorKind::unsupported, error,
                     EXPECT_NE(std::string(error.what()).find("kernel"), std::string::npos););
  // The numba ABI compiles it, as an entry with a mangled name.
  const auto compiled = abi::compile(kernel, options("numba"));
  EXPECT_NE(compiled.code.bytes().find(".entry " + abi::mangle_numba("__main__", "add", kernel.signature.args)),
            std::string::npos);
}

TEST(AbiErrors, AbiNameThatIsNotAnIdentifier) {
  for (const char* bad : {"2fast", "has space", "dash-name", ""}) {
    abi::CompileOptions o = options("c");
    o.abi_name = bad;
    CUJIT_EXPECT_ERROR(abi::compile(add_fn(), o), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find("not a valid identifier"),
                                 std::string::npos););
  }
}

TEST(AbiErrors, BodyThatDoesNotCompileCarriesTheLog) {
  DeviceFunction fn = add_fn();
  fn.body = "return x + undefined_name;";
  CUJIT_EXPECT_ERROR(abi::compile(fn, options("c")), ErrorKind::compile, error,
                     EXPECT_NE(error.log().find("undefined_name"), std::string::npos) << error.log();
                     EXPECT_NE(std::string(error.what()).find("__main__.add"), std::string::npos););
}

}  // namespace
}  // namespace cujit
