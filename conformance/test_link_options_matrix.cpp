// The option x backend matrix of issue 18: each typed link option changes what a link
// produces, on each backend that honours it. nvJitLink cells link on the CPU and read the
// cubin (debug and line sections, the register count ptxas recorded, which kernels and
// variables are left, the code size); driver cells need a GPU (suites named *Gpu*), and also
// check the register count the driver reports for the loaded kernel (cuFuncGetAttribute).
// Refusals are tested on the CPU in test_link_options.cpp.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cujit/compile_cache.hpp"
#include "cujit/kernel_builder.hpp"
#include "cujit/linker.hpp"
#include "cujit/module.hpp"
#include "support/fixtures.hpp"
#include "support/printers.hpp"

namespace cujit {
namespace {

// `hungry` needs many registers (56 on sm_90 with nvJitLink 13.0) and spills under a low
// limit; `spare` is never used; `dropped_var` is unused once `kept_var` is named as used.
constexpr const char* matrix_source = R"(
__device__ int kept_var[4];
__device__ int dropped_var[4];
extern "C" __global__ void hungry(float* out, const float* in, int n) {
  float acc[32];
  for (int i = 0; i < 32; ++i) acc[i] = in[(threadIdx.x + i * 7) % n];
  float s = 0;
  for (int k = 0; k < 32; ++k)
    for (int i = 0; i < 32; ++i) s += acc[i] * acc[(i + k) % 32] / (acc[k] + 1.0f);
  out[threadIdx.x] = sqrtf(s) / in[0] + kept_var[1] + dropped_var[2];
}
extern "C" __global__ void spare(float* out) { out[0] = 1.0f; }
extern "C" __global__ void math(float* out, const float* a, const float* b, const float* c) {
  int i = threadIdx.x;
  out[i] = a[i] * b[i] + c[i];
  out[i + 32] = a[i] / b[i];
}
)";

const Arch& sm90() {
  static const Arch arch = Arch::parse("sm_90");
  return arch;
}

LinkableCode compiled(CompileTarget target) {
  CompileOptions options;
  options.arch = sm90();
  options.target = target;
  return compile_cached(Program(matrix_source, "matrix.cu"), options).result.code;
}

// ---- A minimal reader of the cubin's ELF: section names and sizes, symbols, and the
// register counts in .nv.info (EIATTR_REGCOUNT).

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
};

template <class T>
T read_at(const std::string& bytes, std::uint64_t offset) {
  T value{};
  if (offset + sizeof(T) <= bytes.size()) std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::vector<Section> sections_of(const std::string& cubin) {
  std::vector<Section> out;
  if (cubin.size() < 64 || cubin.compare(0, 4, "\x7f" "ELF") != 0 || cubin[4] != 2) return out;
  const auto header_offset = read_at<std::uint64_t>(cubin, 0x28);
  const auto entry_size = read_at<std::uint16_t>(cubin, 0x3A);
  const auto count = read_at<std::uint16_t>(cubin, 0x3C);
  const auto names_index = read_at<std::uint16_t>(cubin, 0x3E);
  for (std::uint16_t i = 0; i < count; ++i) {
    const std::uint64_t at = header_offset + std::uint64_t{i} * entry_size;
    out.push_back(Section{std::to_string(read_at<std::uint32_t>(cubin, at)), read_at<std::uint32_t>(cubin, at + 4),
                          read_at<std::uint64_t>(cubin, at + 0x18), read_at<std::uint64_t>(cubin, at + 0x20),
                          read_at<std::uint32_t>(cubin, at + 0x28)});
  }
  if (names_index >= out.size()) return {};
  const std::uint64_t names = out[names_index].offset;
  for (Section& section : out) {
    const std::uint64_t at = names + std::stoull(section.name);
    section.name = at < cubin.size() ? std::string(cubin.c_str() + at) : std::string();
  }
  return out;
}

bool has_section(const std::string& cubin, const std::string& name) {
  for (const Section& section : sections_of(cubin)) {
    if (section.name == name) return true;
  }
  return false;
}

std::optional<Section> section_named(const std::string& cubin, const std::string& name) {
  for (const Section& section : sections_of(cubin)) {
    if (section.name == name) return section;
  }
  return std::nullopt;
}

// The symbol-table index of `symbol`, or -1.
long symbol_index(const std::string& cubin, const std::string& symbol) {
  const std::vector<Section> sections = sections_of(cubin);
  for (const Section& table : sections) {
    if (table.type != 2 /* SHT_SYMTAB */ || table.link >= sections.size()) continue;
    const std::uint64_t strings = sections[table.link].offset;
    for (std::uint64_t i = 0; i * 24 < table.size; ++i) {
      const auto name = read_at<std::uint32_t>(cubin, table.offset + i * 24);
      if (strings + name < cubin.size() && symbol == cubin.c_str() + strings + name) return static_cast<long>(i);
    }
  }
  return -1;
}

// The register count ptxas recorded for `kernel` (.nv.info, EIATTR_REGCOUNT), or -1.
long registers_of(const std::string& cubin, const std::string& kernel) {
  const long index = symbol_index(cubin, kernel);
  const std::optional<Section> info = section_named(cubin, ".nv.info");
  if (index < 0 || !info) return -1;
  constexpr unsigned char eiattr_regcount = 0x2f, format_sized = 0x04;
  std::uint64_t at = info->offset;
  while (at + 4 <= info->offset + info->size) {
    const auto format = static_cast<unsigned char>(cubin[at]);
    const auto attribute = static_cast<unsigned char>(cubin[at + 1]);
    if (format != format_sized) {
      at += format == 0x01 ? 2 : 4;
      continue;
    }
    const auto size = read_at<std::uint16_t>(cubin, at + 2);
    if (attribute == eiattr_regcount && size == 8 && read_at<std::uint32_t>(cubin, at + 4) == static_cast<std::uint32_t>(index)) {
      return read_at<std::uint32_t>(cubin, at + 8);
    }
    at += 4 + size;
  }
  return -1;
}

std::uint64_t code_size_of(const std::string& cubin, const std::string& kernel) {
  const std::optional<Section> text = section_named(cubin, ".text." + kernel);
  return text ? text->size : 0;
}

LinkResult link_with(const LinkableCode& input, LinkerBackend backend, const LinkFlags& flags, bool lto = false) {
  LinkOptions options;
  options.arch = sm90();
  options.backend = backend;
  options.lto = lto;
  options.flags = flags;
  Linker linker(options);
  linker.add(input);
  return linker.link();
}

// ---- The cells: one check per option, run on each backend that honours it.

void expect_debug_sections(LinkerBackend backend) {
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  const std::string plain = link_with(ptx, backend, {}).code.bytes();
  LinkFlags flags;
  flags.debug = true;
  const std::string debug = link_with(ptx, backend, flags).code.bytes();
  EXPECT_FALSE(has_section(plain, ".nv_debug_info_reg_sass"));
  EXPECT_TRUE(has_section(debug, ".nv_debug_info_reg_sass"));
  EXPECT_TRUE(has_section(debug, ".debug_line"));
}

void expect_line_tables(LinkerBackend backend) {
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  const std::string plain = link_with(ptx, backend, {}).code.bytes();
  LinkFlags flags;
  flags.line_info = true;
  const std::string lines = link_with(ptx, backend, flags).code.bytes();
  EXPECT_FALSE(has_section(plain, ".nv_debug_line_sass"));
  EXPECT_TRUE(has_section(lines, ".nv_debug_line_sass"));
  EXPECT_FALSE(has_section(lines, ".nv_debug_info_reg_sass")) << "line tables only, not debug information";
}

void expect_register_limit(LinkerBackend backend, const LinkFlags& flags, long limit) {
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  const long unlimited = registers_of(link_with(ptx, backend, {}).code.bytes(), "hungry");
  const long limited = registers_of(link_with(ptx, backend, flags).code.bytes(), "hungry");
  ASSERT_GT(unlimited, limit) << "the kernel must need more registers than the limit for the cell to mean anything";
  EXPECT_GT(limited, 0);
  EXPECT_LE(limited, limit);
}

void expect_unoptimised_code(LinkerBackend backend) {
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  LinkFlags flags;
  flags.optimization_level = 0;
  const std::uint64_t optimised = code_size_of(link_with(ptx, backend, {}).code.bytes(), "hungry");
  const std::uint64_t unoptimised = code_size_of(link_with(ptx, backend, flags).code.bytes(), "hungry");
  ASSERT_GT(optimised, 0u);
  EXPECT_GT(unoptimised, optimised);
}

void expect_verbose_log(LinkerBackend backend) {
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  LinkFlags flags;
  flags.verbose = true;
  const std::string quiet = link_with(ptx, backend, {}).info_log;
  const std::string verbose = link_with(ptx, backend, flags).info_log;
  EXPECT_EQ(quiet.find("registers"), std::string::npos) << quiet;
  EXPECT_NE(verbose.find("registers"), std::string::npos) << verbose;
}

void expect_split_compile_links(LinkerBackend backend) {
  LinkFlags flags;
  flags.split_compile = 2;
  const std::string cubin = link_with(compiled(CompileTarget::ptx), backend, flags).code.bytes();
  EXPECT_GT(code_size_of(cubin, "hungry"), 0u);
  EXPECT_GT(code_size_of(cubin, "spare"), 0u);
}

// ---- nvJitLink: every option, on the CPU.

TEST(LinkOptionsMatrixNvJitLink, DebugAddsDebugSections) { expect_debug_sections(LinkerBackend::nvjitlink); }
TEST(LinkOptionsMatrixNvJitLink, LineInfoAddsLineTables) { expect_line_tables(LinkerBackend::nvjitlink); }
TEST(LinkOptionsMatrixNvJitLink, MaxRegistersLimitsTheKernel) {
  LinkFlags flags;
  flags.max_registers = 24;
  expect_register_limit(LinkerBackend::nvjitlink, flags, 24);
}
TEST(LinkOptionsMatrixNvJitLink, OptimisationLevelZeroLeavesCodeUnoptimised) {
  expect_unoptimised_code(LinkerBackend::nvjitlink);
}
TEST(LinkOptionsMatrixNvJitLink, VerboseFillsTheInfoLog) { expect_verbose_log(LinkerBackend::nvjitlink); }
TEST(LinkOptionsMatrixNvJitLink, SplitCompileLinksEveryKernel) { expect_split_compile_links(LinkerBackend::nvjitlink); }
TEST(LinkOptionsMatrixNvJitLink, PtxasOptionsReachPtxas) {
  LinkFlags flags;
  flags.ptxas_options = {"-maxrregcount=24"};
  expect_register_limit(LinkerBackend::nvjitlink, flags, 24);
}

TEST(LinkOptionsMatrixNvJitLink, KernelsUsedRemovesTheOthers) {
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  LinkFlags flags;
  flags.kernels_used = {"hungry"};
  const std::string all = link_with(ptx, LinkerBackend::nvjitlink, {}).code.bytes();
  const std::string used = link_with(ptx, LinkerBackend::nvjitlink, flags).code.bytes();
  EXPECT_GE(symbol_index(all, "spare"), 0);
  EXPECT_LT(symbol_index(used, "spare"), 0);
  EXPECT_GE(symbol_index(used, "hungry"), 0);
}

TEST(LinkOptionsMatrixNvJitLink, VariablesUsedRemovesTheOthersWithLto) {
  const LinkableCode ltoir = compiled(CompileTarget::ltoir);
  LinkFlags flags;
  flags.variables_used = {"kept_var"};
  const std::string all = link_with(ltoir, LinkerBackend::nvjitlink, {}, true).code.bytes();
  const std::string used = link_with(ltoir, LinkerBackend::nvjitlink, flags, true).code.bytes();
  EXPECT_NE(all.find("dropped_var"), std::string::npos);
  EXPECT_EQ(used.find("dropped_var"), std::string::npos);
  EXPECT_NE(used.find("kept_var"), std::string::npos);
  EXPECT_GE(symbol_index(used, "hungry"), 0) << "kernels stay";
}

// ftz, prec_div and fma change the code nvJitLink generates from LTO-IR.
struct MathCell {
  const char* name;
  LinkFlags flags;
};
void PrintTo(const MathCell& cell, std::ostream* out) { *out << cell.name; }

LinkFlags math_flags(std::optional<bool> ftz, std::optional<bool> prec_div, std::optional<bool> fma) {
  LinkFlags flags;
  flags.ftz = ftz;
  flags.prec_div = prec_div;
  flags.fma = fma;
  return flags;
}

class LinkOptionsMatrixNvJitLinkMath : public ::testing::TestWithParam<MathCell> {};

TEST_P(LinkOptionsMatrixNvJitLinkMath, ChangesTheCodeGeneratedFromLtoIr) {
  const LinkableCode ltoir = compiled(CompileTarget::ltoir);
  const std::string text = ".text.math";
  const std::string base_cubin = link_with(ltoir, LinkerBackend::nvjitlink, {}, true).code.bytes();
  const std::string changed_cubin = link_with(ltoir, LinkerBackend::nvjitlink, GetParam().flags, true).code.bytes();
  const std::optional<Section> base = section_named(base_cubin, text);
  const std::optional<Section> changed = section_named(changed_cubin, text);
  ASSERT_TRUE(base && changed);
  EXPECT_NE(base_cubin.substr(base->offset, base->size), changed_cubin.substr(changed->offset, changed->size));
}

INSTANTIATE_TEST_SUITE_P(Flags, LinkOptionsMatrixNvJitLinkMath,
                         ::testing::Values(MathCell{"ftz", math_flags(true, std::nullopt, std::nullopt)},
                                           MathCell{"prec_div", math_flags(std::nullopt, false, std::nullopt)},
                                           MathCell{"fma", math_flags(std::nullopt, std::nullopt, false)}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(LinkOptionsMatrixNvJitLink, DebugReachesNvrtcForCudaCppInputs) {
  LinkOptions options;
  options.arch = sm90();
  options.backend = LinkerBackend::nvjitlink;
  options.flags.debug = true;
  Linker linker(options);
  linker.add(LinkableCode::cuda_source(matrix_source, "matrix.cu"));
  // Full DWARF (.debug_info) comes only from code NVRTC compiled with -G.
  EXPECT_TRUE(has_section(linker.link().code.bytes(), ".debug_info"));
}

TEST(LinkOptionsMatrixNvJitLink, KernelBuilderLinksWithTheFlags) {
  KernelOptions options;
  options.link.arch = sm90();
  options.link.backend = LinkerBackend::nvjitlink;
  options.link.flags.max_registers = 24;
  KernelBuilder builder("hungry", options);
  builder.source(LinkableCode::cuda_source(matrix_source, "matrix.cu"));
  const long registers = registers_of(builder.link_cubin().link.code.bytes(), "hungry");
  EXPECT_GT(registers, 0);
  EXPECT_LE(registers, 24);
}

TEST(LinkOptionsMatrixNvJitLink, KernelBuilderMemoTellsFlagsApart) {
  CacheConfig config;
  config.mode = CacheMode::memory;
  BuildCache cache(config);  // its own memo: other tests' builds are not in it
  const auto builder = [&cache](std::optional<unsigned> max_registers) {
    KernelOptions options;
    options.link.arch = sm90();
    options.link.backend = LinkerBackend::nvjitlink;
    options.link.flags.max_registers = max_registers;
    KernelBuilder built("hungry", options, cache);
    built.source(LinkableCode::cuda_source(matrix_source, "matrix.cu"));
    return built;
  };
  const LinkedKernel plain = builder(std::nullopt).link_cubin();
  const LinkedKernel again = builder(std::nullopt).link_cubin();
  const LinkedKernel limited = builder(24).link_cubin();
  EXPECT_EQ(again.source, CacheSource::memo);
  EXPECT_NE(limited.source, CacheSource::memo);
  EXPECT_NE(limited.key, plain.key);
  EXPECT_LE(registers_of(limited.link.code.bytes(), "hungry"), 24);
}

// ---- The driver linker: the options it honours, on a GPU.

TEST(LinkOptionsMatrixDriverGpu, DebugAddsDebugSections) {
  CUJIT_REQUIRE_DEVICE();
  expect_debug_sections(LinkerBackend::driver);
}
TEST(LinkOptionsMatrixDriverGpu, LineInfoAddsLineTables) {
  CUJIT_REQUIRE_DEVICE();
  expect_line_tables(LinkerBackend::driver);
}
TEST(LinkOptionsMatrixDriverGpu, MaxRegistersLimitsTheKernel) {
  CUJIT_REQUIRE_DEVICE();
  LinkFlags flags;
  flags.max_registers = 24;
  expect_register_limit(LinkerBackend::driver, flags, 24);
}
TEST(LinkOptionsMatrixDriverGpu, OptimisationLevelZeroLeavesCodeUnoptimised) {
  CUJIT_REQUIRE_DEVICE();
  expect_unoptimised_code(LinkerBackend::driver);
}
TEST(LinkOptionsMatrixDriverGpu, VerboseFillsTheInfoLog) {
  CUJIT_REQUIRE_DEVICE();
  expect_verbose_log(LinkerBackend::driver);
}
TEST(LinkOptionsMatrixDriverGpu, SplitCompileLinksEveryKernel) {
  CUJIT_REQUIRE_DEVICE();
  expect_split_compile_links(LinkerBackend::driver);
}

// The register count the driver reports for the loaded kernel, through cuFuncGetAttribute
// (CU_FUNC_ATTRIBUTE_NUM_REGS = 4), read from the libcuda the core has loaded.
int loaded_registers(const Kernel& kernel) {
  using GetAttribute = int (*)(int*, int, void*);
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) return -1;
  const auto get = reinterpret_cast<GetAttribute>(dlsym(library, "cuFuncGetAttribute"));
  int registers = -1;
  const int status = get != nullptr ? get(&registers, 4, kernel.handle()) : -1;
  dlclose(library);
  return status == 0 ? registers : -1;
}

class LinkOptionsMatrixRegistersGpu : public ::testing::TestWithParam<LinkerBackend> {};

TEST_P(LinkOptionsMatrixRegistersGpu, TheLoadedKernelKeepsTheLimit) {
  CUJIT_REQUIRE_DEVICE();
  LinkFlags flags;
  flags.max_registers = 24;
  const LinkableCode ptx = compiled(CompileTarget::ptx);
  const std::shared_ptr<Module> unlimited = Module::load(link_with(ptx, GetParam(), {}).code);
  const std::shared_ptr<Module> limited = Module::load(link_with(ptx, GetParam(), flags).code);
  ASSERT_GT(loaded_registers(unlimited->kernel("hungry")), 24);
  const int registers = loaded_registers(limited->kernel("hungry"));
  EXPECT_GT(registers, 0);
  EXPECT_LE(registers, 24);
}

INSTANTIATE_TEST_SUITE_P(Backends, LinkOptionsMatrixRegistersGpu,
                         ::testing::Values(LinkerBackend::nvjitlink, LinkerBackend::driver),
                         [](const auto& param_info) { return std::string(to_string(param_info.param)); });

}  // namespace
}  // namespace cujit
