// reduce_into inside CUDA graphs (issue 18): captured on a stream with caller temporary
// storage, launched again and again; and as an explicit node group (ReduceNodes) whose n
// changes through an execution update. Results against the host reference of
// support/reduce_data (float64 values are multiples of 1/64, so their sums are exact in
// any order and compare equal).
#include <gtest/gtest.h>

#include "cujit/graph.hpp"
#include "cujit/reduce.hpp"
#include "support/fixtures.hpp"
#include "support/reduce_data.hpp"

namespace cujit {
namespace {

using reduce::Builtin;

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::shared_ptr<const reduce::ReduceBuild> build_for(const std::string& type) {
  reduce::ReduceSpec spec;
  spec.input = spec.output = spec.accumulator = Type::parse(type);
  spec.arch = Arch::parse("sm_90");
  return reduce::build_reduce_shared(spec);
}

// n on both sides of the single-pass limit and of a tile, and a multi-wave one.
const std::vector<std::uint64_t> sizes = {0, 1, 4097, 8192, 8193, (1u << 20) + 3};

TEST(ReduceNodes, NeedALoadedBuild) {
  // Without a device the build stops at the cubin; with one, the same build unloaded.
  auto build = std::make_shared<reduce::ReduceBuild>(*build_for("int32"));
  build->tiles.reset();
  build->final.reset();
  CUJIT_EXPECT_ERROR((reduce::ReduceNodes(build, 0, 0, 1, arg_value(0), 0, 0)), ErrorKind::cuda, error,
                     EXPECT_TRUE(contains(error.what(), "not loaded")) << error.what(););
}

class GpuReduceGraph : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { CUJIT_REQUIRE_DEVICE(); }
};

TEST_P(GpuReduceGraph, CapturedWithCallerTempMatchesTheHostOnEveryLaunch) {
  const Type type = Type::parse(GetParam());
  const auto build = build_for(GetParam());
  const std::uint64_t largest = sizes.back();
  DeviceBuffer in(largest * type.size()), out(type.size());
  const std::size_t temp_size = reduce::max_temp_bytes(*build);
  DeviceBuffer temp(temp_size);
  test::fill_device(type, in.ptr(), largest);
  Stream stream;
  for (const std::uint64_t n : sizes) {
    EXPECT_LE(reduce::temp_bytes(*build, n), temp_size);
    const ArgValue init = type.scalar == Scalar::float64 ? arg_value(2.0) : arg_value(2);
    Graph graph = capture(stream.handle(), [&](StreamHandle s) {
      reduce::reduce_into(*build, in.ptr(), out.ptr(), n, init, s, temp.ptr(), temp_size);
    });
    graph.retain(build->module);
    const long double want = test::reference(type, Builtin::sum, n, 2).value;
    for (int launch = 0; launch < 3; ++launch) {
      out.fill_bytes(0xff);
      graph.launch(stream.handle());
      graph.synchronize();
      EXPECT_EQ(test::read_result(type, out.ptr()), want) << "n = " << n << ", launch " << launch;
    }
  }
}

TEST_P(GpuReduceGraph, ACaptureThatWouldAllocateIsRefusedBeforeEnqueuing) {
  const Type type = Type::parse(GetParam());
  const auto build = build_for(GetParam());
  const std::uint64_t n = build->single_pass_limit + 1;
  DeviceBuffer in(n * type.size()), out(type.size());
  Stream stream;
  const ArgValue init = type.scalar == Scalar::float64 ? arg_value(0.0) : arg_value(0);
  CUJIT_EXPECT_ERROR((void)capture(stream.handle(),
                                   [&](StreamHandle s) {
                                     reduce::reduce_into(*build, in.ptr(), out.ptr(), n, init, s);
                                   }),
                     ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "temporary storage")) << error.what(););
  // The stream works afterwards, and without a capture the same call allocates.
  test::fill_device(type, in.ptr(), n);
  reduce::reduce_into(*build, in.ptr(), out.ptr(), n, init, stream.handle());
  stream.synchronize();
  EXPECT_EQ(test::read_result(type, out.ptr()), test::reference(type, Builtin::sum, n, 0).value);
}

TEST_P(GpuReduceGraph, NodeGroupTakesANewNThroughAnExecUpdate) {
  const Type type = Type::parse(GetParam());
  const auto build = build_for(GetParam());
  const std::uint64_t largest = sizes.back();
  DeviceBuffer in(largest * type.size()), out(type.size());
  const std::size_t temp_size = reduce::max_temp_bytes(*build);
  DeviceBuffer temp(temp_size);
  test::fill_device(type, in.ptr(), largest);
  const ArgValue init = type.scalar == Scalar::float64 ? arg_value(1.0) : arg_value(1);
  reduce::ReduceNodes group(build, in.ptr(), out.ptr(), largest, init, temp.ptr(), temp_size);
  int64_t seen = 0;
  HostNode after([&] { ++seen; }, {group.last()});
  Graph graph = after.build();
  EXPECT_EQ(graph.node_count(), 3u);
  GraphExec exec = graph.instantiate();
  // From two passes down to one and to none, and back up: same graph, same topology.
  for (const std::uint64_t n : {largest, std::uint64_t{4097}, std::uint64_t{0}, std::uint64_t{8193},
                                std::uint64_t{1}, largest}) {
    group.set_input(in.ptr(), n);
    group.update(exec);
    out.fill_bytes(0xff);
    exec.launch();
    exec.synchronize();
    EXPECT_EQ(group.n(), n);
    EXPECT_EQ(test::read_result(type, out.ptr()), test::reference(type, Builtin::sum, n, 1).value)
        << "n = " << n;
  }
  EXPECT_EQ(seen, 6);
}

TEST_P(GpuReduceGraph, NodeGroupRefusesTooLittleTempAndAWrongInit) {
  const Type type = Type::parse(GetParam());
  const auto build = build_for(GetParam());
  const std::uint64_t n = build->single_pass_limit * 4;
  DeviceBuffer in(n * type.size()), out(type.size()), temp(type.size());
  const ArgValue init = type.scalar == Scalar::float64 ? arg_value(0.0) : arg_value(0);
  // A single pass needs no temp; two passes need temp_bytes.
  reduce::ReduceNodes group(build, in.ptr(), out.ptr(), 10, init, 0, 0);
  CUJIT_EXPECT_ERROR(group.set_input(in.ptr(), n), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "temporary storage")) << error.what(););
  EXPECT_EQ(group.n(), 10u);  // unchanged by the refused call
  CUJIT_EXPECT_ERROR((reduce::ReduceNodes(build, in.ptr(), out.ptr(), n, init, temp.ptr(), temp.size())),
                     ErrorKind::usage, error, (void)error;);
  CUJIT_EXPECT_ERROR((reduce::ReduceNodes(build, in.ptr(), out.ptr(), 10, arg_value(std::int8_t{0}), 0, 0)),
                     ErrorKind::usage, error, EXPECT_TRUE(contains(error.what(), "init")) << error.what(););
}

INSTANTIATE_TEST_SUITE_P(Types, GpuReduceGraph, ::testing::Values("int32", "float64"));

}  // namespace
}  // namespace cujit
