// Prototypes checked by cujit before either backend (core/src/link/prototype_check.hpp):
// generated declarations and definitions over return presence, parameter counts and widths,
// every one-step change of a matching pair refused naming both inputs and both prototypes,
// every matching pair linked; and numba-cuda's real output, whose ABI mismatch nvJitLink
// alone turned into a cubin that faulted.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "cujit/linker.hpp"
#include "link/prototype_check.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"
#include "support/ptx_scan.hpp"

namespace cujit {
namespace {

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// A generated prototype: returns (none or one) and parameters, each a PTX type token.
struct Shape {
  std::vector<std::string> returns;
  std::vector<std::string> parameters;
};

const std::vector<std::string> all_types{".b16", ".b32", ".b64", ".u32", ".s64", ".f32", ".f64"};
// What ptxas passes to a device function under the ABI (no 8- or 16-bit parameters).
const std::vector<std::string> linkable_types{".b32", ".b64", ".u32", ".s64", ".f32", ".f64"};

std::uint64_t bytes_of(const std::string& type) {
  return std::stoull(type.substr(2)) / 8;
}

// The same-width bit type (the caller's parameters are declared with it).
std::string bits_of(const std::string& type) { return ".b" + type.substr(2); }

bool floating(const std::string& type) { return type.rfind(".f", 0) == 0; }

// A type nvJitLink takes for `type`: integers of one width are interchangeable (.b, .u, .s).
std::string interchangeable(const std::string& type) { return floating(type) ? type : ".u" + type.substr(2); }

// `layout` varies the spelling: 0 one line, 1 one parameter per line with comments.
std::string parameter_list(const std::string& name, const std::vector<std::string>& types, int layout) {
  std::string out = "(";
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += ",";
    out += layout == 1 ? "\n\t/* parameter */ .param " : " .param ";
    out += types[i] + " " + name + "_param_" + std::to_string(i);
  }
  return out + (layout == 1 ? "\n)" : ")");
}

std::string header() { return ".version 8.0\n.target sm_90\n.address_size 64\n"; }

std::string prototype_text(const std::string& linkage, const std::string& name, const Shape& shape, int layout) {
  std::string out = linkage + " .func ";
  if (!shape.returns.empty()) out += "(.param " + shape.returns.front() + " func_retval0) ";
  return out + name + parameter_list(name, shape.parameters, layout);
}

// A kernel that declares `name` with `shape` and calls it.
std::string caller_ptx(const std::string& name, const Shape& shape, int layout) {
  std::string out = header() + prototype_text(".extern", name, shape, layout) + ";\n" +
                    "// a comment naming .extern .func decoy(.param .b8 x) is no declaration\n"
                    ".visible .entry caller()\n{\n{\n";
  std::string arguments;
  for (std::size_t i = 0; i < shape.parameters.size(); ++i) {
    const std::string bits = bits_of(shape.parameters[i]);
    const std::string param = "param" + std::to_string(i);
    out += ".param " + bits + " " + param + ";\nst.param" + bits + " [" + param + "+0], 0;\n";
    arguments += (arguments.empty() ? "" : ", ") + param;
  }
  if (!shape.returns.empty()) out += ".param " + bits_of(shape.returns.front()) + " retval0;\n";
  out += "call.uni " + std::string(shape.returns.empty() ? "" : "(retval0), ") + name + ", (" + arguments + ");\n";
  return out + "}\nret;\n}\n";
}

// A definition of `name` with `shape` that returns zero.
std::string definition_ptx(const std::string& name, const Shape& shape, int layout) {
  std::string out = header() + prototype_text(".visible", name, shape, layout) + "\n{\n";
  if (!shape.returns.empty()) {
    const std::string bits = bits_of(shape.returns.front());
    out += "st.param" + bits + " [func_retval0+0], 0;\n";
  }
  return out + "ret;\n}\n";
}

// Every shape of up to `most` parameters over the widths, with and without a return value,
// sampled (a fixed seed, so every run tests the same shapes).
std::vector<Shape> generated_shapes(std::size_t count, const std::vector<std::string>& types = all_types) {
  std::mt19937 random(20261127);
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < count; ++i) {
    Shape shape;
    if (random() % 3 != 0) shape.returns.push_back(types[random() % types.size()]);
    const std::size_t parameters = random() % 5;
    for (std::size_t p = 0; p < parameters; ++p) {
      shape.parameters.push_back(types[random() % types.size()]);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

// Another type of a different width than `type`.
std::string other_width(const std::string& type) { return bytes_of(type) == 8 ? ".b32" : ".b64"; }

// A type of the same width and the other class (floating-point for an integer), where one
// exists.
std::string other_class(const std::string& type) {
  if (bytes_of(type) == 2) return {};
  return (floating(type) ? ".b" : ".f") + type.substr(2);
}

// Every one-step change of `shape` that changes its prototype's shape.
std::vector<std::pair<std::string, Shape>> changes_of(const Shape& shape) {
  std::vector<std::pair<std::string, Shape>> out;
  Shape changed = shape;
  if (shape.returns.empty()) {
    changed.returns.push_back(".b32");
    out.emplace_back("a return value added", changed);
  } else {
    changed.returns.clear();
    out.emplace_back("the return value removed", changed);
    changed = shape;
    changed.returns.front() = other_width(shape.returns.front());
    out.emplace_back("the return value's width", changed);
  }
  changed = shape;
  changed.parameters.push_back(".b32");
  out.emplace_back("a parameter added", changed);
  if (!shape.parameters.empty()) {
    changed = shape;
    changed.parameters.pop_back();
    out.emplace_back("a parameter removed", changed);
    for (std::size_t i = 0; i < shape.parameters.size(); ++i) {
      changed = shape;
      changed.parameters[i] = other_width(shape.parameters[i]);
      out.emplace_back("parameter " + std::to_string(i) + "'s width", changed);
      if (const std::string other = other_class(shape.parameters[i]); !other.empty()) {
        changed.parameters[i] = other;
        out.emplace_back("parameter " + std::to_string(i) + "'s class (integer, floating-point)", changed);
      }
    }
  }
  return out;
}

std::string describe(const Shape& shape) {
  std::string out = shape.returns.empty() ? "()" : "(" + shape.returns.front() + ")";
  out += " f(";
  for (const std::string& type : shape.parameters) out += type + " ";
  return out + ")";
}

// The scanner reads back every generated prototype, in both layouts.
TEST(PtxPrototypes, TheScannerReadsEveryGeneratedPrototype) {
  for (const Shape& shape : generated_shapes(200)) {
    for (const int layout : {0, 1}) {
      const std::vector<detail::PtxPrototype> read = detail::function_prototypes(caller_ptx("f", shape, layout));
      ASSERT_EQ(read.size(), 1u) << describe(shape);
      EXPECT_TRUE(read.front().declaration);
      EXPECT_EQ(read.front().name, "f");
      ASSERT_EQ(read.front().returns.size(), shape.returns.size()) << describe(shape);
      ASSERT_EQ(read.front().parameters.size(), shape.parameters.size()) << describe(shape);
      for (std::size_t i = 0; i < shape.parameters.size(); ++i) {
        EXPECT_EQ(read.front().parameters[i].type, shape.parameters[i]);
        EXPECT_EQ(read.front().parameters[i].bytes, bytes_of(shape.parameters[i]));
      }
    }
  }
}

TEST(PtxPrototypes, AnArrayParameterIsItsWholeSize) {
  const auto read = detail::function_prototypes(
      ".extern .func (.param .align 8 .b8 r[24]) g(.param .align 16 .b8 p[16], .param .b32 n);");
  ASSERT_EQ(read.size(), 1u);
  ASSERT_EQ(read.front().returns.size(), 1u);
  EXPECT_EQ(read.front().returns.front().bytes, 24u);
  ASSERT_EQ(read.front().parameters.size(), 2u);
  EXPECT_EQ(read.front().parameters[0].bytes, 16u);
  EXPECT_EQ(read.front().parameters[1].bytes, 4u);
}

LinkResult link_pair(const std::string& caller, const std::string& definition) {
  Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
  linker.add(LinkableCode::ptx(caller, "generated_caller.ptx"));
  linker.add(LinkableCode::ptx(definition, "generated_definition.ptx"));
  return linker.link();
}

// A declaration matching its definition (same widths and classes; .u for .b and .s, which
// nvJitLink takes for each other) links; every one-step change is refused before nvJitLink runs.
TEST(PrototypeCheck, EveryMatchingGeneratedPairLinksAndEveryChangeIsRefused) {
  int refused = 0;
  for (const Shape& shape : generated_shapes(12, linkable_types)) {
    Shape same_widths = shape;
    for (std::string& type : same_widths.parameters) type = interchangeable(type);
    EXPECT_NO_THROW((void)link_pair(caller_ptx("f", shape, 0), definition_ptx("f", same_widths, 1)))
        << describe(shape);
    for (const auto& [change, changed] : changes_of(shape)) {
      try {
        (void)link_pair(caller_ptx("f", shape, 0), definition_ptx("f", changed, 1));
        ADD_FAILURE() << "linked with " << change << ": " << describe(shape) << " against " << describe(changed);
      } catch (const LinkError& error) {
        ++refused;
        EXPECT_EQ(error.component(), "Linker (prototype check, before the backend)") << error.what();
        EXPECT_TRUE(contains(error.what(), "'f' is declared in 'generated_caller.ptx'")) << error.what();
        EXPECT_TRUE(contains(error.what(), "defined in 'generated_definition.ptx'")) << error.what();
        EXPECT_TRUE(contains(error.what(), detail::to_string(detail::function_prototypes(
                                               caller_ptx("f", shape, 0)).front())))
            << error.what();
      }
    }
  }
  EXPECT_GT(refused, 12);
}

// The same pairs through the pure check: a conflict exactly when the shapes differ.
TEST(PrototypeCheck, AConflictExactlyWhenWidthsOrCountsDiffer) {
  for (const Shape& shape : generated_shapes(200)) {
    const LinkableCode caller = LinkableCode::ptx(caller_ptx("f", shape, 1), "caller.ptx");
    const LinkableCode same = LinkableCode::ptx(definition_ptx("f", shape, 0), "same.ptx");
    EXPECT_TRUE(detail::prototype_conflicts({&caller, &same}).empty()) << describe(shape);
    for (const auto& [change, changed] : changes_of(shape)) {
      const LinkableCode other = LinkableCode::ptx(definition_ptx("f", changed, 0), "other.ptx");
      const auto conflicts = detail::prototype_conflicts({&caller, &other});
      ASSERT_EQ(conflicts.size(), 1u) << change << ": " << describe(shape);
      EXPECT_EQ(conflicts.front().declaring, &caller);
      EXPECT_EQ(conflicts.front().defining, &other);
    }
  }
}

// numba-cuda 0.30.4's real output (scenarios/fixtures/numba): a kernel calling
// `make_and_sum` through cuda.declare_device (numba's ABI: result pointer, int status),
// linked with numba's C-ABI PTX of an int32(int32) function given that name. nvJitLink
// alone returned a cubin that faulted with CUDA_ERROR_ILLEGAL_ADDRESS.
TEST(PrototypeCheck, NumbaAbiDeclarationAgainstACAbiDefinitionNamesTheLikelyCause) {
  std::string definition = test::read_bytes(test::scenario_path("fixtures/numba/nrt_user_c_abi.ptx"));
  for (std::size_t at = definition.find("nrt_user"); at != std::string::npos; at = definition.find("nrt_user", at)) {
    definition.replace(at, 8, "make_and_sum");
  }
  for (const LinkerBackend backend : {LinkerBackend::nvjitlink, LinkerBackend::driver}) {
    // The check runs before either backend: the driver's case needs no GPU.
    Linker linker(test::link_options(backend, false, "sm_90a"));
    linker.add_file(test::scenario_path("fixtures/numba/shim_caller_kernel.ptx"));
    linker.add(LinkableCode::ptx(definition, "make_and_sum_c_abi.ptx"));
    try {
      (void)linker.link();
      ADD_FAILURE() << "linked a numba-ABI call to a C-ABI definition";
    } catch (const LinkError& error) {
      EXPECT_TRUE(contains(error.what(), "'make_and_sum' is declared in 'shim_caller_kernel.ptx'") ||
                  contains(error.what(), "shim_caller_kernel.ptx"))
          << error.what();
      EXPECT_TRUE(contains(error.what(), "(.b32) make_and_sum(.b64, .b32)")) << error.what();
      EXPECT_TRUE(contains(error.what(), "(.b32) make_and_sum(.b32)")) << error.what();
      EXPECT_TRUE(contains(error.what(), "numba's ABI")) << error.what();
      EXPECT_TRUE(contains(error.what(), "make_and_sum_c_abi.ptx")) << error.what();
    }
  }
}

}  // namespace
}  // namespace cujit
