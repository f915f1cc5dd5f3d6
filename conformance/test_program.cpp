// NVRTC Program: every target, options, lowered names, logs.
#include <gtest/gtest.h>

#include "cujit/program.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

constexpr const char* kernel_source = R"(
template <class T> __global__ void fill(T* out, T value) { out[threadIdx.x] = value; }
extern "C" __global__ void plain(int* out) { out[0] = 1; }
)";

CompileOptions options_for(CompileTarget target) {
  CompileOptions options;
  options.arch = Arch::parse("sm_90");
  options.target = target;
  return options;
}

TEST(Program, CompilesToEveryTarget) {
  const Program program(kernel_source, "fill.cu");
  const auto ptx = program.compile(options_for(CompileTarget::ptx));
  EXPECT_EQ(ptx.code.format(), Format::ptx);
  EXPECT_EQ(ptx.code.name(), "fill.ptx");
  EXPECT_NE(ptx.code.bytes().find(".target sm_90"), std::string::npos);
  EXPECT_NE(ptx.code.bytes().find("plain"), std::string::npos);

  const auto ltoir = program.compile(options_for(CompileTarget::ltoir));
  EXPECT_EQ(ltoir.code.format(), Format::ltoir);
  EXPECT_EQ(detect_format(ltoir.code.bytes()), Format::ltoir);

  const auto cubin = program.compile(options_for(CompileTarget::cubin));
  EXPECT_EQ(cubin.code.format(), Format::cubin);
  EXPECT_EQ(integrity_problem(Format::cubin, cubin.code.bytes()), "");
}

TEST(Program, OptionsFollowTheTarget) {
  CompileOptions options = options_for(CompileTarget::ltoir);
  options.include_paths = {"/opt/include"};
  options.options = {"-DVALUE=3"};
  const auto list = nvrtc_options(options);
  const std::vector<std::string> expected{"-arch=compute_90", "-dlto", "-rdc=true",
                                          "-I/opt/include", "-DVALUE=3"};
  EXPECT_EQ(list, expected);
  options.target = CompileTarget::cubin;
  options.relocatable = false;
  EXPECT_EQ(nvrtc_options(options).front(), "-arch=sm_90");
  EXPECT_EQ(nvrtc_options(options)[1], "-rdc=false");
}

TEST(Program, LowersNameExpressions) {
  CompileOptions options = options_for(CompileTarget::ptx);
  options.name_expressions = {"fill<int>", "fill<float>"};
  const auto result = Program(kernel_source, "fill.cu").compile(options);
  ASSERT_EQ(result.code.lowered_names().size(), 2u);
  EXPECT_EQ(result.code.lowered_names().at("fill<int>"), "_Z4fillIiEvPT_S0_");
  EXPECT_EQ(result.code.lowered_names().at("fill<float>"), "_Z4fillIfEvPT_S0_");
  EXPECT_NE(result.code.bytes().find("_Z4fillIiEvPT_S0_"), std::string::npos);
}

TEST(Program, UsesInMemoryHeaders) {
  CompileOptions options = options_for(CompileTarget::ptx);
  options.headers = {{"value.cuh", "#define VALUE 42\n"}};
  const auto result =
      Program("#include \"value.cuh\"\nextern \"C\" __global__ void k(int* o) { *o = VALUE; }",
              "k.cu")
          .compile(options);
  EXPECT_NE(result.code.bytes().find("42"), std::string::npos);
}

TEST(Program, CompileErrorCarriesTheLogAndTheName) {
  const Program broken("extern \"C\" __global__ void k() { undeclared_thing(); }", "broken.cu");
  CUJIT_EXPECT_ERROR(broken.compile(options_for(CompileTarget::ptx)), ErrorKind::compile, error,
                     EXPECT_NE(error.log().find("undeclared_thing"), std::string::npos)
                         << error.log();
                     EXPECT_NE(std::string(error.what()).find("'broken.cu'"), std::string::npos);
                     EXPECT_NE(error.component().find("nvrtcCompileProgram"),
                               std::string::npos););
}

TEST(Program, LogIsKeptOnSuccess) {
  // An unused variable gives a warning: the log must travel with a successful result.
  const auto result =
      Program("extern \"C\" __global__ void k() { int unused_variable; }", "warn.cu")
          .compile(options_for(CompileTarget::ptx));
  EXPECT_NE(result.log.find("unused_variable"), std::string::npos) << result.log;
}

TEST(Program, ReportsTheNvrtcVersion) {
  EXPECT_NE(nvrtc_version(), "unknown");
  EXPECT_NE(nvrtc_version().find('.'), std::string::npos);
}

}  // namespace
}  // namespace cujit
