// reduce::Backend::cub: CUB's own DeviceReduce kernels JIT-built from the toolkit's CCCL (or
// one placed first on the include path). Without a GPU: every type builds to a cubin holding
// CUB's three kernels with the shape CUB's policy gives, every operator form links, the key
// and the memo tell the backends apart, and an edit of a CUB header in a copied CCCL tree
// misses the cache and gives the new code. On a GPU: both backends agree with each other and
// with the host reference over every type and n, with foreign LTO-IR and PTX operators,
// through reduce_into with and without caller storage, a stream capture and a node group.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cujit/compile_cache.hpp"
#include "cujit/graph.hpp"
#include "cujit/reduce.hpp"
#include "cujit/toolkit.hpp"
#include "support/fixtures.hpp"
#include "support/reduce_data.hpp"

namespace cujit {
namespace {

using reduce::Backend;
using reduce::Builtin;
using reduce::Operator;
using reduce::ReduceSpec;

const std::vector<std::string> every_type = {"int8",   "int16",  "int32",   "int64",  "uint8",
                                             "uint16", "uint32", "uint64", "float32", "float64"};

ReduceSpec spec_for(const std::string& type, Backend backend, Operator op = Operator::builtin(Builtin::sum),
                    const std::string& arch = "sm_90") {
  ReduceSpec spec;
  spec.input = spec.output = spec.accumulator = Type::parse(type);
  spec.op = std::move(op);
  spec.arch = Arch::parse(arch);
  spec.backend = backend;
  return spec;
}

Operator foreign_min(const char* file) {
  return Operator::foreign(LinkableCode::from_path(test::scenario_path(std::string("fixtures/numba/") + file)),
                           "min_i32", Signature::parse("int32(int32, int32)"));
}

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// ---- CPU -----------------------------------------------------------------------------

// CUB's policy for sm_90 (Policy600 of tuning_reduce.cuh: 256 threads, 16 items of 4 bytes,
// scaled by MemBoundScaling to min(64 / size, 32) items): the shape read back from the
// compile is CUB's, for every type, and the cubin holds the three kernels by those names.
TEST(ReduceCubBuild, EveryTypeBuildsCubsKernelsWithCubsPolicy) {
  for (const std::string& type : every_type) {
    SCOPED_TRACE(type);
    const reduce::ReduceBuild build = reduce::build_reduce(spec_for(type, Backend::cub));
    EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin);
    EXPECT_EQ(build.backend, Backend::cub);
    EXPECT_TRUE(contains(build.single_kernel, "DeviceReduceSingleTileKernel")) << build.single_kernel;
    EXPECT_TRUE(contains(build.final_kernel, "DeviceReduceSingleTileKernel")) << build.final_kernel;
    EXPECT_TRUE(contains(build.tiles_kernel, "DeviceReduceKernel")) << build.tiles_kernel;
    EXPECT_NE(build.single_kernel, build.final_kernel);
    for (const std::string* name : {&build.single_kernel, &build.tiles_kernel, &build.final_kernel}) {
      EXPECT_TRUE(contains(build.code.bytes(), *name)) << *name;
    }
    const std::size_t size = Type::parse(type).size();
    const unsigned items = static_cast<unsigned>(std::min<std::size_t>(64 / size, 32));
    EXPECT_EQ(build.block_size, 256u);
    EXPECT_EQ(build.final_block_size, 256u);
    EXPECT_EQ(build.items_per_thread, items);
    EXPECT_EQ(build.tile_items, 256u * items);
    EXPECT_EQ(build.single_pass_limit, 256u * items);
    EXPECT_EQ(build.accumulator_size, size);
  }
}

// The compile includes CUB from the toolkit's CCCL and names its kernels as expressions;
// the hand-written one includes nothing.
TEST(ReduceCubBuild, TheSourceIncludesCubFromTheToolkitsCccl) {
  const reduce::KernelCompile cub = reduce::kernel_compile(spec_for("int32", Backend::cub));
  EXPECT_TRUE(contains(cub.program.source(), "#include <cub/device/dispatch/kernels/reduce.cuh>"));
  ASSERT_FALSE(cub.options.include_paths.empty());
  EXPECT_EQ(cub.options.include_paths.front(), toolkit::cccl_dir().string());
  EXPECT_EQ(cub.options.name_expressions.size(), 4u);
  const reduce::KernelCompile handwritten = reduce::kernel_compile(spec_for("int32", Backend::handwritten));
  EXPECT_FALSE(contains(handwritten.program.source(), "#include"));
}

// The same spec but the backend: different keys, and the memo never answers one backend's
// spec with the other's build.
TEST(ReduceCubBuild, TheKeyAndTheMemoTellTheBackendsApart) {
  test::TempDir dir;
  CacheConfig config;
  config.mode = CacheMode::disk;
  config.directory = dir.path() / "cache";
  BuildCache cache(config);
  for (const std::string& type : {std::string("int32"), std::string("float64")}) {
    const reduce::ReduceBuild handwritten = reduce::build_reduce(spec_for(type, Backend::handwritten), cache);
    const reduce::ReduceBuild cub = reduce::build_reduce(spec_for(type, Backend::cub), cache);
    EXPECT_EQ(cub.source, CacheSource::built) << type;
    EXPECT_NE(handwritten.key, cub.key) << type;
    EXPECT_NE(handwritten.code.bytes(), cub.code.bytes()) << type;
    const reduce::ReduceBuild again = reduce::build_reduce(spec_for(type, Backend::cub), cache);
    EXPECT_EQ(again.source, CacheSource::memo) << type;
    EXPECT_EQ(again.key, cub.key) << type;
    EXPECT_EQ(again.tiles_kernel, cub.tiles_kernel) << type;
  }
  // A new cache over the same directory: the disk entry, with the kernels' names and shape
  // read from the (cached) compile again.
  BuildCache second(config);
  const reduce::ReduceBuild disk = reduce::build_reduce(spec_for("int32", Backend::cub), second);
  EXPECT_EQ(disk.source, CacheSource::disk);
  EXPECT_TRUE(contains(disk.tiles_kernel, "DeviceReduceKernel"));
  EXPECT_EQ(disk.single_pass_limit, 4096u);
}

// Every operator form links with either backend's kernels: a C-ABI device function, CUDA
// C++, foreign LTO-IR and foreign PTX (numba-cuda's min_i32, both made for sm_90a).
TEST(ReduceCubBuild, EveryOperatorFormLinks) {
  const abi::DeviceFunction max_fn = test::max_i32_device_function();
  const std::vector<std::pair<Operator, std::string>> cases = {
      {Operator::device_function(max_fn), "sm_90"},
      {Operator::cuda_source("extern \"C\" __device__ int or_i32(int a, int b) { return a | b; }", "or_i32"),
       "sm_90"},
      {foreign_min("min_i32_c_abi.ltoir"), "sm_90a"},
      {foreign_min("min_i32_c_abi.ptx"), "sm_90a"},
  };
  for (Backend backend : {Backend::cub, Backend::handwritten}) {
    for (const auto& [op, arch] : cases) {
      const reduce::ReduceBuild build = reduce::build_reduce(spec_for("int32", backend, op, arch));
      EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin) << reduce::to_string(backend) << " " << op.describe();
    }
  }
}

// Copies the CCCL headers the CUB reduce reads (cub, cuda, nv) into dir.
std::filesystem::path copy_cccl(const std::filesystem::path& dir) {
  const std::filesystem::path from = toolkit::cccl_dir();
  const std::filesystem::path to = dir / "cccl";
  std::filesystem::create_directories(to);
  for (const char* sub : {"cub", "cuda", "nv"}) {
    std::filesystem::copy(from / sub, to / sub, std::filesystem::copy_options::recursive);
  }
  return to;
}

// The hermetic recipe keys every CCCL header by content: with a copied CCCL first on the
// include path, the build hits until a CUB header is edited, then misses and links the
// edited code (a kernel the edit adds is in the new cubin, not in the old).
TEST(ReduceCubBuild, EditingACubHeaderInACopiedCcclMissesAndGivesTheNewCode) {
  test::TempDir dir;
  const std::filesystem::path cccl = copy_cccl(dir.path());
  CacheConfig config;
  config.mode = CacheMode::disk;
  config.directory = dir.path() / "cache";
  BuildCache cache(config);
  ReduceSpec spec = spec_for("int32", Backend::cub);
  spec.config.include_dirs = {cccl.string()};
  const reduce::ReduceBuild first = reduce::build_reduce(spec, cache);
  EXPECT_EQ(first.source, CacheSource::built);
  const reduce::ReduceBuild hit = reduce::build_reduce(spec, cache);
  EXPECT_NE(hit.source, CacheSource::built);
  EXPECT_EQ(hit.key, first.key);

  const std::string marker = "cujit_edited_cub_marker_kernel";
  {
    std::ofstream header(cccl / "cub/device/dispatch/kernels/reduce.cuh", std::ios::app);
    header << "\nextern \"C\" __global__ void " << marker << "() {}\n";
  }
  const reduce::ReduceBuild edited = reduce::build_reduce(spec, cache);
  EXPECT_EQ(edited.source, CacheSource::built);
  EXPECT_NE(edited.key, first.key);
  EXPECT_TRUE(contains(edited.code.bytes(), marker));
  EXPECT_FALSE(contains(first.code.bytes(), marker));
}

// What the two backends' shapes imply without a device: CUB's single tile up to one of its
// tiles, no temporary storage there; above, a device query (Error(cuda) here).
TEST(ReduceCubBuild, UpToOneTileOneKernelAndNoTemporaryStorage) {
  const reduce::ReduceBuild build = reduce::build_reduce(spec_for("float64", Backend::cub));
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, build.single_pass_limit}) {
    EXPECT_TRUE(reduce::launch_for(build, n).single_pass) << n;
    EXPECT_EQ(reduce::temp_bytes(build, n), 0u) << n;
  }
  if (!has_device()) {
    CUJIT_EXPECT_ERROR((void)reduce::launch_for(build, build.single_pass_limit + 1), ErrorKind::cuda, error,
                       (void)error;);
    CUJIT_EXPECT_ERROR(reduce::reduce_into(build, 0, 0, 10, 0.0), ErrorKind::cuda, error,
                       EXPECT_TRUE(contains(error.what(), "not loaded")) << error.what(););
  } else {
    EXPECT_FALSE(reduce::launch_for(build, build.single_pass_limit + 1).single_pass);
  }
}

// ---- GPU -----------------------------------------------------------------------------

long double init_for(const Type& type, Builtin op) {
  const bool is_unsigned = type.scalar == Scalar::uint8 || type.scalar == Scalar::uint16 ||
                           type.scalar == Scalar::uint32 || type.scalar == Scalar::uint64;
  switch (op) {
    case Builtin::sum: return 3;
    case Builtin::min: return 1500;  // above every value: the data decides, unless n = 0
    case Builtin::max: return is_unsigned ? 0 : -1000;
  }
  return 0;
}

ArgValue init_value(const Type& type, long double value) {
  switch (type.scalar) {
    case Scalar::int8: return arg_value(static_cast<std::int8_t>(value));
    case Scalar::int16: return arg_value(static_cast<std::int16_t>(value));
    case Scalar::uint8: return arg_value(static_cast<std::uint8_t>(value));
    case Scalar::uint16: return arg_value(static_cast<std::uint16_t>(value));
    case Scalar::int32: return arg_value(static_cast<std::int32_t>(value));
    case Scalar::int64: return arg_value(static_cast<std::int64_t>(value));
    case Scalar::uint32: return arg_value(static_cast<std::uint32_t>(value));
    case Scalar::uint64: return arg_value(static_cast<std::uint64_t>(value));
    case Scalar::float32: return arg_value(static_cast<float>(value));
    case Scalar::float64: return arg_value(static_cast<double>(value));
    default: throw std::logic_error("unexpected type");
  }
}

// A bound on the additions an item goes through in a build's reduction of n items: its
// thread's chain over its block's tiles, a block fold (at most log2(32) shuffles and one
// step per warp), in two passes the final block's chain and fold, and init.
long double float_sum_tolerance(const reduce::ReduceBuild& build, const Type& type, std::uint64_t n,
                                long double sum_abs) {
  const long double eps = type.scalar == Scalar::float32 ? 1.1920929e-7L : 2.220446e-16L;
  const reduce::Launch launch = reduce::launch_for(build, n);
  const std::uint64_t tiles = (n + build.tile_items - 1) / build.tile_items;
  const std::uint64_t tiles_per_block = (tiles + launch.blocks - 1) / launch.blocks;
  const long double fold = 5.0L + build.block_size / 32;
  long double depth = static_cast<long double>(build.items_per_thread * std::max<std::uint64_t>(tiles_per_block, 1)) +
                      fold + 1;
  if (!launch.single_pass) {
    depth += std::ceil(static_cast<long double>(launch.blocks) / build.final_block_size) + 5.0L +
             build.final_block_size / 32;
  }
  return eps * (depth + 2) * sum_abs;
}

struct Cell {
  std::string type;
  Builtin op;
};

// Every type; the 8- and 16-bit ones with sum only (their device values wrap, and the
// reference wraps the sum alone).
std::vector<Cell> cells() {
  std::vector<Cell> out;
  for (const std::string& type : every_type) {
    const bool narrow = Type::parse(type).size() < 4;
    for (Builtin op : {Builtin::sum, Builtin::min, Builtin::max}) {
      if (!narrow || op == Builtin::sum) out.push_back({type, op});
    }
  }
  return out;
}

// The sizes both backends are checked at: empty, one and two items, either side of a
// warp-multiple, a partial last tile, two passes at 2^22 and 2^28 (cuda.parallel's large
// inputs: 1 GiB of int32, 2 GiB of 64-bit items). CUJIT_TEST_MAX_N caps them, as for the
// hand-written matrix (compute-sanitizer makes kernels far slower).
std::vector<std::uint64_t> sizes_up_to_cap() {
  return test::sizes_up_to_cap({0ull, 1ull, 2ull, 1023ull, 1024ull, (1ull << 16) + 1, 1ull << 22, 1ull << 28});
}

// Both backends over every type, operator and n (sizes_up_to_cap): integer results and min/max are
// exact and equal, float64 sums are exact (values are multiples of 1/64), float32 sums each
// within the stated bound of the long double reference (their orders differ).
TEST(GpuReduceCub, BothBackendsMatchTheReferenceForEveryTypeAndN) {
  CUJIT_REQUIRE_DEVICE();
  const std::vector<std::uint64_t> sizes = sizes_up_to_cap();
  const std::uint64_t largest = std::max<std::uint64_t>(sizes.back(), 1);
  const std::string arch = Arch::of_device(0).sm();
  for (const Cell& cell : cells()) {
    const Type type = Type::parse(cell.type);
    DeviceBuffer in(largest * type.size()), out(8);
    test::fill_device(type, in.ptr(), largest);
    const long double init = init_for(type, cell.op);
    const reduce::ReduceBuild handwritten =
        reduce::build_reduce(spec_for(cell.type, Backend::handwritten, Operator::builtin(cell.op), arch));
    const reduce::ReduceBuild cub =
        reduce::build_reduce(spec_for(cell.type, Backend::cub, Operator::builtin(cell.op), arch));
    for (std::uint64_t n : sizes) {
      SCOPED_TRACE(testing::Message() << cell.type << " " << reduce::to_string(cell.op) << " n=" << n);
      const test::Reference want = test::reference(type, cell.op, n, init);
      long double got[2] = {};
      int index = 0;
      for (const reduce::ReduceBuild* build : {&handwritten, &cub}) {
        out.fill_bytes(0xA5);
        reduce::reduce_into(*build, in.ptr(), out.ptr(), n, init_value(type, init));
        synchronize(nullptr);
        got[index] = test::read_result(type, out.ptr());
        if (type.scalar == Scalar::float32 && cell.op == Builtin::sum) {
          EXPECT_LE(std::fabs(got[index] - want.value), float_sum_tolerance(*build, type, n, want.sum_abs))
              << reduce::to_string(build->backend) << " got " << static_cast<double>(got[index]) << " want "
              << static_cast<double>(want.value);
        } else {
          EXPECT_EQ(got[index], want.value) << reduce::to_string(build->backend);
        }
        ++index;
      }
      if (!(type.scalar == Scalar::float32 && cell.op == Builtin::sum)) {
        EXPECT_EQ(got[0], got[1]);
      }
    }
  }
}

// Foreign LTO-IR and PTX operators (numba-cuda's min_i32), through both backends.
TEST(GpuReduceCub, ForeignLtoirAndPtxOperatorsOnBothBackends) {
  CUJIT_REQUIRE_DEVICE();
  const Type int32 = Type::parse("int32");
  const std::vector<std::uint64_t> sizes = sizes_up_to_cap();
  DeviceBuffer in(std::max<std::uint64_t>(sizes.back(), 1) * 4), out(4);
  test::fill_device(int32, in.ptr(), sizes.back());
  // Both fixtures are made for sm_90a (.target sm_90a): an sm_90 device (H100) runs them.
  const std::string device_arch = Arch::of_device(0).sm();
  ASSERT_EQ(device_arch, "sm_90") << "the numba-cuda fixtures are sm_90a code";
  for (const char* file : {"min_i32_c_abi.ltoir", "min_i32_c_abi.ptx"}) {
    const std::string arch = "sm_90a";
    for (Backend backend : {Backend::handwritten, Backend::cub}) {
      const reduce::ReduceBuild build = reduce::build_reduce(spec_for("int32", backend, foreign_min(file), arch));
      for (std::uint64_t n : sizes) {
        SCOPED_TRACE(testing::Message() << file << " " << reduce::to_string(backend) << " n=" << n);
        out.fill_bytes(0xA5);
        reduce::reduce_into(build, in.ptr(), out.ptr(), n, std::int32_t{1500});
        synchronize(nullptr);
        EXPECT_EQ(test::read_result(int32, out.ptr()), test::reference(int32, Builtin::min, n, 1500).value);
      }
    }
  }
}

// CUB's two passes with caller storage (temp_bytes, max_temp_bytes), captured into a graph
// and launched again; a capture that would allocate is refused.
TEST(GpuReduceCub, CapturedWithCallerTempAndRefusedWithout) {
  CUJIT_REQUIRE_DEVICE();
  const Type type = Type::parse("float64");
  const auto build = reduce::build_reduce_shared(
      spec_for("float64", Backend::cub, Operator::builtin(Builtin::sum), Arch::of_device(0).sm()));
  const std::vector<std::uint64_t> sizes = {0, 1, build->single_pass_limit, build->single_pass_limit + 1,
                                            (1u << 20) + 3};
  DeviceBuffer in(sizes.back() * 8), out(8);
  const std::size_t temp_size = reduce::max_temp_bytes(*build);
  DeviceBuffer temp(temp_size);
  test::fill_device(type, in.ptr(), sizes.back());
  Stream stream;
  for (const std::uint64_t n : sizes) {
    EXPECT_LE(reduce::temp_bytes(*build, n), temp_size) << n;
    Graph graph = capture(stream.handle(), [&](StreamHandle s) {
      reduce::reduce_into(*build, in.ptr(), out.ptr(), n, arg_value(2.0), s, temp.ptr(), temp_size);
    });
    graph.retain(build->module);
    for (int launch = 0; launch < 2; ++launch) {
      out.fill_bytes(0xff);
      graph.launch(stream.handle());
      graph.synchronize();
      EXPECT_EQ(test::read_result(type, out.ptr()), test::reference(type, Builtin::sum, n, 2).value)
          << "n = " << n << ", launch " << launch;
    }
  }
  const std::uint64_t n = build->single_pass_limit + 1;
  CUJIT_EXPECT_ERROR((void)capture(stream.handle(),
                                   [&](StreamHandle s) {
                                     reduce::reduce_into(*build, in.ptr(), out.ptr(), n, arg_value(0.0), s);
                                   }),
                     ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "temporary storage")) << error.what(););
}

// The node group of a CUB build runs two passes at every n (including 0 and one item) and
// takes a new n through an execution update; it needs temp at every n.
TEST(GpuReduceCub, NodeGroupTakesANewNThroughAnExecUpdate) {
  CUJIT_REQUIRE_DEVICE();
  const Type type = Type::parse("int32");
  const auto build = reduce::build_reduce_shared(
      spec_for("int32", Backend::cub, Operator::builtin(Builtin::sum), Arch::of_device(0).sm()));
  const std::uint64_t largest = (1u << 22) + 5;
  DeviceBuffer in(largest * 4), out(4);
  const std::size_t temp_size = reduce::max_temp_bytes(*build);
  DeviceBuffer temp(temp_size);
  test::fill_device(type, in.ptr(), largest);
  CUJIT_EXPECT_ERROR((reduce::ReduceNodes(build, in.ptr(), out.ptr(), 10, arg_value(1), 0, 0)), ErrorKind::usage,
                     error, EXPECT_TRUE(contains(error.what(), "temporary storage")) << error.what(););
  reduce::ReduceNodes group(build, in.ptr(), out.ptr(), largest, arg_value(1), temp.ptr(), temp_size);
  Graph graph = group.last().build();
  GraphExec exec = graph.instantiate();
  for (const std::uint64_t n : {largest, std::uint64_t{4097}, std::uint64_t{0}, std::uint64_t{4096},
                                std::uint64_t{1}, std::uint64_t{2}, largest}) {
    group.set_input(in.ptr(), n);
    group.update(exec);
    out.fill_bytes(0xff);
    exec.launch();
    exec.synchronize();
    EXPECT_EQ(test::read_result(type, out.ptr()), test::reference(type, Builtin::sum, n, 1).value) << "n = " << n;
  }
}

}  // namespace
}  // namespace cujit
