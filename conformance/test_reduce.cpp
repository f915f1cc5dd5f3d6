// The reduce build and reduce_into: builds without a GPU up to the cubin, every operator
// form, errors, what the build compiles and links with; on a GPU the type x operator x n
// matrix against a long double reference (n on both sides of the single-pass limit and of
// tile boundaries), unaligned input, and cached builds (memory, disk, new process) giving
// the same results as a fresh one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <memory>

#include "cujit/compile_cache.hpp"
#include "cujit/linker.hpp"
#include "cujit/reduce.hpp"
#include "support/fixtures.hpp"
#include "support/reduce_data.hpp"

namespace cujit {
namespace {

using reduce::Builtin;
using reduce::Operator;
using reduce::ReduceSpec;

ReduceSpec spec_for(const std::string& type, Operator op = Operator::builtin(Builtin::sum),
                    const std::string& arch = "sm_90") {
  ReduceSpec spec;
  spec.input = spec.output = spec.accumulator = Type::parse(type);
  spec.op = std::move(op);
  spec.arch = Arch::parse(arch);
  return spec;
}

abi::DeviceFunction device_max() { return test::max_i32_device_function(); }

Operator numba_min() {
  return Operator::foreign(
      LinkableCode::from_path(test::scenario_path("fixtures/numba/min_i32_c_abi.ltoir")), "min_i32",
      Signature::parse("int32(int32, int32)"));
}

// ---- CPU -----------------------------------------------------------------------------

TEST(ReduceBuild, ToCubinWithoutADevice) {
  const reduce::ReduceBuild build = reduce::build_reduce(spec_for("int32"));
  EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin);
  EXPECT_NE(build.code.bytes().find(build.tiles_kernel), std::string::npos);
  EXPECT_NE(build.code.bytes().find(build.final_kernel), std::string::npos);
  EXPECT_EQ(build.accumulator_size, 4u);
  EXPECT_EQ(build.key.size(), 64u);
  const reduce::ReduceBuild again = reduce::build_reduce(spec_for("int32"));
  EXPECT_EQ(again.source, CacheSource::memo);
  EXPECT_EQ(again.code.bytes(), build.code.bytes());
}

TEST(ReduceBuild, EveryOperatorForm) {
  for (Operator op : {Operator::device_function(device_max()),
                      Operator::cuda_source("extern \"C\" __device__ int or_i32(int a, int b) { return a | b; }",
                                            "or_i32")}) {
    const reduce::ReduceBuild build = reduce::build_reduce(spec_for("int32", op));
    EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin) << op.describe();
  }
  const reduce::ReduceBuild foreign = reduce::build_reduce(spec_for("int32", numba_min(), "sm_90a"));
  EXPECT_EQ(detect_format(foreign.code.bytes()), Format::cubin);
}

TEST(ReduceBuild, UnsupportedTypesAreUsageErrors) {
  for (const char* type : {"bool", "int32*"}) {
    CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for(type)), ErrorKind::usage, error,
                       EXPECT_NE(std::string(error.what()).find(type), std::string::npos););
  }
}

TEST(ReduceBuild, OperatorSignatureMustMatchTheAccumulator) {
  abi::DeviceFunction fn = device_max();
  fn.signature = Signature::parse("float32(float32, float32)");
  CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for("int32", Operator::device_function(fn))),
                     ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("int32(int32, int32)"), std::string::npos););
  CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for("float64", numba_min(), "sm_90a")),
                     ErrorKind::usage, error,
                     EXPECT_NE(std::string(error.what()).find("min_i32"), std::string::npos););
  CUJIT_EXPECT_ERROR((void)Operator::foreign(LinkableCode::from_path(test::fixture_path("scale_kernel.cubin")),
                                             "x", Signature::parse("int32(int32, int32)")),
                     ErrorKind::usage, error, (void)error;);
}

TEST(ReduceBuild, AnOperatorThatDoesNotCompileCarriesTheLog) {
  const Operator broken = Operator::cuda_source(
      "extern \"C\" __device__ int bad(int a, int b) { return a + undefined_thing; }", "bad");
  CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for("int32", broken)), ErrorKind::compile, error,
                     EXPECT_NE(error.log().find("undefined_thing"), std::string::npos););
}

// NVRTC's time is the headers it parses: CUB's block reduce cost about a second per
// build, the kernels themselves a few milliseconds. An #include here brings that back.
TEST(ReduceBuild, TheGeneratedKernelIncludesNoHeader) {
  for (const char* type : {"int8", "int32", "uint64", "float64"}) {
    const reduce::KernelCompile kernel = reduce::kernel_compile(spec_for(type));
    EXPECT_EQ(kernel.program.source().find("#include"), std::string::npos) << type;
    EXPECT_TRUE(kernel.options.include_paths.empty()) << type << ": nothing to read from a directory";
  }
}

// The tiles kernel's text in PTX: from its .entry to the end of its body.
std::string tiles_kernel_ptx(const std::string& ptx) {
  const std::size_t entry = ptx.find(".entry cujit_reduce_tiles");
  if (entry == std::string::npos) return {};
  const std::size_t end = ptx.find("\n}\n", entry);
  return ptx.substr(entry, end == std::string::npos ? std::string::npos : end - entry);
}

// 16-byte loads: four 32-bit lanes or two 64-bit ones, through either cache path.
std::size_t count_16_byte_loads(const std::string& ptx) {
  std::size_t count = 0;
  for (const char* path : {"ld.global.", "ld.global.nc."}) {
    for (const char* lanes : {"v4.u32", "v4.b32", "v4.s32", "v4.f32", "v2.u64", "v2.b64", "v2.s64", "v2.f64"}) {
      const std::string load = std::string(path) + lanes + " ";
      for (std::size_t at = ptx.find(load); at != std::string::npos; at = ptx.find(load, at + 1)) ++count;
    }
  }
  return count;
}

// Every type the reduce supports builds to a cubin for sm_90 without a device, and its
// tiles kernel reads whole tiles in 16-byte vectors: 1- and 2-byte items too, and at least
// four of them issued together (for those, one vector per tile, that is tiles folded a few
// at a time: a load of a single vector at a time would leave too little in flight).
TEST(ReduceBuild, EveryTypeBuildsAndReadsWholeTilesIn16ByteVectors) {
  CacheConfig off_config;
  off_config.mode = CacheMode::off;
  BuildCache off(off_config);
  for (const char* type : {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
                           "float64"}) {
    SCOPED_TRACE(type);
    const ReduceSpec spec = spec_for(type);
    const reduce::ReduceBuild build = reduce::build_reduce(spec, off);
    EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin);
    EXPECT_EQ(build.input_size, Type::parse(type).size());
    reduce::KernelCompile kernel = reduce::kernel_compile(spec);
    kernel.options.target = CompileTarget::ptx;
    const std::string tiles = tiles_kernel_ptx(compile_cached(kernel.program, kernel.options, off).result.code.bytes());
    ASSERT_FALSE(tiles.empty());
    EXPECT_GE(count_16_byte_loads(tiles), 4u);
  }
}

// -optimize-unused-variables: a device variable that no device code reads (here a table a
// CUDA C++ operator defines) is in the cubin without the option and not with it, and the
// option is part of the link key, so a cubin linked without it is never served for it.
TEST(ReduceBuild, TheLinkDropsDeviceVariablesNoDeviceCodeReads) {
  const std::string op_source =
      "__device__ int cujit_test_unread_table[64] = {7};\n"
      "extern \"C\" __device__ int add_i32(int a, int b) { return a + b; }";
  const reduce::ReduceSpec spec = spec_for("int32", Operator::cuda_source(op_source, "add_i32"));
  CacheConfig off_config;
  off_config.mode = CacheMode::off;
  BuildCache off(off_config);
  const reduce::KernelCompile kernel = reduce::kernel_compile(spec);
  const LinkableCode kernel_code = compile_cached(kernel.program, kernel.options, off).result.code;
  const LinkOptions with = reduce::link_options(spec);
  ASSERT_EQ(with.nvjitlink_options, std::vector<std::string>{"-optimize-unused-variables"});
  LinkOptions without = with;
  without.nvjitlink_options.clear();
  const auto linked = [&](const LinkOptions& options) {
    Linker linker(options, off);
    linker.add(kernel_code);
    linker.add(LinkableCode::cuda_source(op_source, "add_i32.cu"));
    return linker.link().code.bytes();
  };
  EXPECT_NE(linked(without).find("cujit_test_unread_table"), std::string::npos);
  EXPECT_EQ(linked(with).find("cujit_test_unread_table"), std::string::npos);
  EXPECT_EQ(reduce::build_reduce(spec, off).code.bytes().find("cujit_test_unread_table"), std::string::npos);
  EXPECT_NE(link_key({kernel_code}, with, LinkerBackend::nvjitlink).digest(),
            link_key({kernel_code}, without, LinkerBackend::nvjitlink).digest());
}

// Up to the single-pass limit reduce_into launches one kernel (one block) and needs no
// temporary storage and no device query; the limit covers at least one of CUB's single-pass tiles
// (256 threads x 16 items), so no n that CUB reduces in one kernel takes two here.
TEST(ReduceBuild, UpToTheSinglePassLimitOneKernelAndNoTemporaryStorage) {
  const reduce::ReduceBuild build = reduce::build_reduce(spec_for("float64"));
  EXPECT_GE(build.single_pass_limit, std::uint64_t{256} * 16);
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4096}, build.single_pass_limit}) {
    const reduce::Launch launch = reduce::launch_for(build, n);
    EXPECT_TRUE(launch.single_pass) << n;
    EXPECT_EQ(launch.blocks, 1u) << n;
    EXPECT_EQ(reduce::temp_bytes(build, n), 0u) << n;
  }
  if (!has_device()) {
    CUJIT_EXPECT_ERROR((void)reduce::launch_for(build, build.single_pass_limit + 1), ErrorKind::cuda, error,
                       (void)error;);
  } else {
    EXPECT_FALSE(reduce::launch_for(build, build.single_pass_limit + 1).single_pass);
  }
}

TEST(ReduceBuild, ReduceIntoWithoutADeviceIsACudaError) {
  if (has_device()) GTEST_SKIP() << "a CUDA device is present; this checks the no-device path";
  const reduce::ReduceBuild build = reduce::build_reduce(spec_for("int32"));
  CUJIT_EXPECT_ERROR(reduce::reduce_into(build, 0, 0, 10, 0), ErrorKind::cuda, error,
                     EXPECT_NE(std::string(error.what()).find("not loaded"), std::string::npos););
}

// ---- GPU -----------------------------------------------------------------------------

// CUJIT_TEST_MAX_N caps the sizes (compute-sanitizer makes kernels far slower); the
// default runs the whole list: empty, within one warp and block, the edges of a tile
// (4096 items) and of the single-pass limit (8192), and two-pass sizes with a partial last
// tile up to 2^28.
std::vector<std::uint64_t> sizes_up_to_cap() {
  return test::sizes_up_to_cap({0ull, 1ull, 31ull, 255ull, 256ull, 257ull, 1024ull, 4095ull, 4096ull, 4097ull,
                               8191ull, 8192ull, 8193ull, 65536ull, 1000003ull, (1ull << 22) + 5, 1ull << 28});
}

long double init_for(Builtin op) {
  switch (op) {
    case Builtin::sum: return 3;
    case Builtin::min: return 1500;   // above every value: the data decides, unless n = 0
    case Builtin::max: return -1000;  // at or below every value
  }
  return 0;
}

ArgValue init_value(const Type& type, long double value) {
  switch (type.scalar) {
    case Scalar::int8: return arg_value(static_cast<std::int8_t>(value));
    case Scalar::int16: return arg_value(static_cast<std::int16_t>(value));
    case Scalar::uint8: return arg_value(static_cast<std::uint8_t>(std::max<long double>(value, 0)));
    case Scalar::uint16: return arg_value(static_cast<std::uint16_t>(std::max<long double>(value, 0)));
    case Scalar::int32: return arg_value(static_cast<std::int32_t>(value));
    case Scalar::int64: return arg_value(static_cast<std::int64_t>(value));
    case Scalar::uint32: return arg_value(static_cast<std::uint32_t>(std::max<long double>(value, 0)));
    case Scalar::uint64: return arg_value(static_cast<std::uint64_t>(std::max<long double>(value, 0)));
    case Scalar::float32: return arg_value(static_cast<float>(value));
    case Scalar::float64: return arg_value(static_cast<double>(value));
    default: throw std::logic_error("unexpected type");
  }
}

// The stated tolerance for floating-point sums: eps * (the most additions an item goes
// through + 2) * sum |x|. An item goes through its thread's chain (at most 16 items for
// each tile its block takes: ceil(tiles / blocks) tiles of 4096), the block fold (5
// shuffle steps, then thread 0 adds the 7 other warps' totals), in two passes the final
// kernel's chain (blocks / 256 partials) and block fold, and init. Integers, min and max
// are exact.
long double tolerance(const reduce::ReduceBuild& build, const Type& type, Builtin op,
                      std::uint64_t n, long double sum_abs) {
  if (op != Builtin::sum || (type.scalar != Scalar::float32 && type.scalar != Scalar::float64)) return 0;
  const long double eps = type.scalar == Scalar::float32 ? 1.1920929e-7L : 2.220446e-16L;
  const reduce::Launch launch = reduce::launch_for(build, n);
  const std::uint64_t tile = std::uint64_t{build.block_size} * build.items_per_thread;
  const std::uint64_t tiles_per_block = ((n + tile - 1) / tile + launch.blocks - 1) / launch.blocks;
  const long double block_fold = std::log2(32.0L) + (build.block_size / 32 - 1);
  long double depth = static_cast<long double>(build.items_per_thread * tiles_per_block) + block_fold + 1;
  if (!launch.single_pass) {
    depth += std::ceil(static_cast<long double>(launch.blocks) / build.block_size) + block_fold;
  }
  return eps * (depth + 2) * sum_abs;
}

struct MatrixCell {
  const char* type;
  Builtin op;
};

void PrintTo(const MatrixCell& cell, std::ostream* out) { *out << cell.type << " " << to_string(cell.op); }

class GpuReduceMatrix : public ::testing::TestWithParam<MatrixCell> {
 protected:
  void SetUp() override { CUJIT_REQUIRE_DEVICE(); }
};

TEST_P(GpuReduceMatrix, MatchesTheReferenceForEveryN) {
  const ReduceSpec spec = spec_for(GetParam().type, Operator::builtin(GetParam().op),
                                   Arch::of_device(0).sm());
  const reduce::ReduceBuild build = reduce::build_reduce(spec);
  const Type& type = spec.input;
  const long double init = init_for(GetParam().op) < 0 && (type.scalar == Scalar::uint32 ||
                                                          type.scalar == Scalar::uint64)
                               ? 0
                               : init_for(GetParam().op);
  const std::vector<std::uint64_t> sizes = sizes_up_to_cap();
  const std::uint64_t largest = sizes.back();
  DeviceBuffer in(std::max<std::uint64_t>(largest, 1) * type.size()), out(8);
  test::fill_device(type, in.ptr(), largest);  // the first n items are value(0..n-1) for any n
  for (std::uint64_t n : sizes) {
    SCOPED_TRACE(testing::Message() << GetParam().type << " " << reduce::to_string(GetParam().op)
                                    << " n=" << n);
    out.fill_bytes(0xA5);
    reduce::reduce_into(build, in.ptr(), out.ptr(), n, init_value(type, init));
    synchronize(nullptr);
    const long double got = test::read_result(type, out.ptr());
    const test::Reference want = test::reference(type, GetParam().op, n, init);
    const long double tol = tolerance(build, type, GetParam().op, n, want.sum_abs);
    EXPECT_LE(std::fabs(got - want.value), tol) << "got " << static_cast<double>(got) << " want "
                                                << static_cast<double>(want.value);
  }
}

// Every type. The 8- and 16-bit ones with sum only: their device values wrap (value(i)
// spans [-1000, 2000]) and the reference wraps the sum alone, which agrees for sum only.
std::vector<MatrixCell> matrix() {
  std::vector<MatrixCell> cells;
  for (const char* type : {"int32", "int64", "uint32", "uint64", "float32", "float64"}) {
    for (Builtin op : {Builtin::sum, Builtin::min, Builtin::max}) cells.push_back({type, op});
  }
  for (const char* type : {"int8", "int16", "uint8", "uint16"}) cells.push_back({type, Builtin::sum});
  return cells;
}

INSTANTIATE_TEST_SUITE_P(Cells, GpuReduceMatrix, ::testing::ValuesIn(matrix()),
                         [](const auto& cell) {
                           return std::string(cell.param.type) + "_" +
                                  std::string(reduce::to_string(cell.param.op));
                         });

// Input that is aligned to its type but not to 16 bytes is read one item per load; the
// same data one item further on gives the same result, in one pass and in two.
TEST(GpuReduceUnaligned, InputOffsetByOneItemGivesTheSameResult) {
  CUJIT_REQUIRE_DEVICE();
  const std::uint64_t cap = sizes_up_to_cap().back();
  for (const char* name : {"int8", "int32", "uint64", "float32", "float64"}) {
    const ReduceSpec spec = spec_for(name, Operator::builtin(Builtin::sum), Arch::of_device(0).sm());
    const reduce::ReduceBuild build = reduce::build_reduce(spec);
    const Type& type = spec.input;
    for (std::uint64_t n : {std::uint64_t{4096 + 77}, std::uint64_t{1000003}}) {
      if (n > cap) continue;
      SCOPED_TRACE(testing::Message() << name << " n=" << n);
      DeviceBuffer in((n + 1) * type.size()), out(8);
      const DevicePtr shifted = in.ptr() + type.size();
      test::fill_device(type, shifted, n);
      reduce::reduce_into(build, shifted, out.ptr(), n, init_value(type, 3));
      synchronize(nullptr);
      const test::Reference want = test::reference(type, Builtin::sum, n, 3);
      EXPECT_LE(std::fabs(test::read_result(type, out.ptr()) - want.value),
                tolerance(build, type, Builtin::sum, n, want.sum_abs));
    }
  }
}

TEST(GpuReduceOperators, ForeignAndUserOperators) {
  CUJIT_REQUIRE_DEVICE();
  const Type int32 = Type::parse("int32");
  const std::uint64_t largest = sizes_up_to_cap().back();
  DeviceBuffer in(largest * 4), out(4);
  test::fill_device(int32, in.ptr(), largest);
  struct Case {
    Operator op;
    std::string arch;
    Builtin equivalent;
  };
  const std::vector<Case> cases = {
      {numba_min(), "sm_90a", Builtin::min},
      {Operator::device_function(device_max()), Arch::of_device(0).sm(), Builtin::max},
      {Operator::cuda_source("extern \"C\" __device__ int add_i32(int a, int b) { return a + b; }",
                             "add_i32"),
       Arch::of_device(0).sm(), Builtin::sum},
  };
  for (const Case& c : cases) {
    const reduce::ReduceBuild build = reduce::build_reduce(spec_for("int32", c.op, c.arch));
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{257}, std::min<std::uint64_t>(1000003, largest), largest}) {
      SCOPED_TRACE(testing::Message() << c.op.describe() << " n=" << n);
      const long double init = init_for(c.equivalent);
      reduce::reduce_into(build, in.ptr(), out.ptr(), n, static_cast<std::int32_t>(init));
      synchronize(nullptr);
      EXPECT_EQ(test::read_result(int32, out.ptr()), test::reference(int32, c.equivalent, n, init).value);
    }
  }
}

TEST(GpuReduceCache, CachedBuildsGiveTheSameResultsAsAFreshOne) {
  CUJIT_REQUIRE_DEVICE();
  test::TempDir dir;
  CacheConfig config;
  config.mode = CacheMode::disk;
  config.directory = dir.path() / "cache";
  const std::uint64_t n = 1000003;
  const Type int32 = Type::parse("int32");
  DeviceBuffer in(n * 4), out(4);
  test::fill_device(int32, in.ptr(), n);
  auto run = [&](BuildCache& cache, CacheSource expected) {
    ReduceSpec spec = spec_for("int32", Operator::builtin(Builtin::sum), Arch::of_device(0).sm());
    const reduce::ReduceBuild build = reduce::build_reduce(spec, cache);
    EXPECT_EQ(build.source, expected);
    reduce::reduce_into(build, in.ptr(), out.ptr(), n, 3);
    synchronize(nullptr);
    return test::read_result(int32, out.ptr());
  };
  BuildCache first(config);
  const long double fresh = run(first, CacheSource::built);
  EXPECT_EQ(run(first, CacheSource::memo), fresh);
  BuildCache second(config);
  EXPECT_EQ(run(second, CacheSource::disk), fresh);
  EXPECT_EQ(fresh, test::reference(int32, Builtin::sum, n, 3).value);

  // A new process reading the disk entry.
  const std::string command = std::string(CUJIT_REDUCE_CHILD) + " " + config.directory.string() + " " +
                              std::to_string(n);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  ASSERT_TRUE(pipe);
  char line[256] = {};
  ASSERT_NE(std::fgets(line, sizeof line, pipe.get()), nullptr) << command;
  EXPECT_EQ(std::string(line), "disk " + std::to_string(static_cast<long long>(fresh)) + "\n");
}

}  // namespace
}  // namespace cujit
