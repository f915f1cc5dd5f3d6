// CUDA graphs on a GPU: the explicit-construction examples, every node type, fan-out/
// fan-in, stream equivalence, updates, host-node exceptions, capture and lifetimes (the
// host-side planning of nodes is in test_graph_node.cpp).
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "cujit/graph.hpp"
#include "cujit/linker.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// ---- GPU ---------------------------------------------------------------------------------

class GpuGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    CUJIT_REQUIRE_DEVICE();
    module_ = test::load_scenario_source("fixtures/graphs/graph_kernels.cu", "graph_kernels");
  }
  Kernel kernel(const std::string& name) const { return module_->kernel(name); }
  std::shared_ptr<Module> module_;
};

int read_int(const DeviceBuffer& buffer) { return buffer.to_vector<int>(1)[0]; }

TEST_F(GpuGraph, ExampleOneRunsKernelsInDependencyOrder) {
  DeviceBuffer a(sizeof(int));
  const int one = 1;
  a.copy_from_host(&one, sizeof one);
  const ArgValue arr = arg_value(a.ptr());
  KernelNode n1(kernel("add_two"), {arr});
  KernelNode n2(kernel("times_three"), {arr}, {n1});
  KernelNode n3(kernel("times_three"));
  n3.args().push_back(arr);
  n3.deps().push_back(n2);
  Graph g = n3.build();
  EXPECT_EQ(g.node_count(), 3u);
  g.launch();
  g.synchronize();
  EXPECT_EQ(read_int(a), (1 + 2) * 3 * 3);
}

TEST_F(GpuGraph, ExampleTwoCopiesKernelCopyBackAndHostCallback) {
  std::vector<int> host{5};
  DeviceBuffer dev(sizeof(int));
  int seen = -1;
  MemcpyHtoDNode n0(dev.ptr(), host.data(), sizeof(int));
  KernelNode n1(kernel("atomic_add_two"), {arg_value(dev.ptr())}, {n0});
  n1.launch({4}, {1});
  MemcpyDtoHNode n2(host.data(), dev.ptr(), sizeof(int), {n1});
  HostNode n3([&] { seen = host[0]; }, {n2});
  GraphExec exec = n3.build().instantiate();
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(seen, 5 + 4 * 2);
  EXPECT_EQ(host[0], 13);
  // Relaunch: the copy re-reads host[0] (now 13).
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(seen, 13 + 8);
}

// A fan-out / fan-in workload, as a graph and as plain stream launches.
struct FanWorkload {
  static constexpr int segments = 8, length = 256;
  DeviceBuffer data{segments * length * sizeof(int)};
  DeviceBuffer total{sizeof(long long)};
};

long long expected_fan_total() {
  long long sum = 0;
  for (int s = 0; s < FanWorkload::segments; ++s) {
    for (int i = 0; i < FanWorkload::length; ++i) sum += 10 * s + i;
  }
  return sum;
}

TEST_F(GpuGraph, FanOutFanInMatchesStreamLaunches) {
  FanWorkload graph_run, stream_run;
  // Graph: memset root -> 8 fill kernels -> empty join -> sum.
  MemsetNode clear(graph_run.data.ptr(), 0xFFFFFFFFu, 4, FanWorkload::segments * FanWorkload::length);
  std::vector<Node> fills;
  for (int s = 0; s < FanWorkload::segments; ++s) {
    KernelNode fill(kernel("fill_segment"),
                    {arg_value(graph_run.data.ptr()), arg_value(s * FanWorkload::length),
                     arg_value(10 * s), arg_value(FanWorkload::length)},
                    {clear});
    fill.launch({2}, {128});
    fills.push_back(fill);
  }
  EmptyNode join(fills);
  KernelNode sum(kernel("sum_all"),
                 {arg_value(graph_run.data.ptr()),
                  arg_value(FanWorkload::segments * FanWorkload::length),
                  arg_value(graph_run.total.ptr())},
                 {join});
  Graph g = sum.build();
  EXPECT_EQ(g.node_count(), 1u + FanWorkload::segments + 2u);
  g.launch();
  g.synchronize();

  // The same through a stream.
  Stream stream;
  LaunchConfig config;
  config.stream = stream.handle();
  config.grid.x = 2;
  config.block.x = 128;
  const Kernel fill = kernel("fill_segment");
  for (int s = 0; s < FanWorkload::segments; ++s) {
    fill(config, stream_run.data.ptr(), s * FanWorkload::length, 10 * s, FanWorkload::length);
  }
  LaunchConfig one;
  one.stream = stream.handle();
  kernel("sum_all")(one, stream_run.data.ptr(), FanWorkload::segments * FanWorkload::length,
                    stream_run.total.ptr());
  stream.synchronize();

  const std::size_t n = FanWorkload::segments * FanWorkload::length;
  EXPECT_EQ(graph_run.data.to_vector<int>(n), stream_run.data.to_vector<int>(n));
  EXPECT_EQ(graph_run.total.to_vector<long long>(1)[0], expected_fan_total());
  EXPECT_EQ(stream_run.total.to_vector<long long>(1)[0], expected_fan_total());
}

TEST_F(GpuGraph, EveryNodeType) {
  DeviceBuffer bytes(64), shorts(64), words(64), copy(64);
  MemsetNode m1(bytes.ptr(), 0xAB, 1, 64);
  MemsetNode m2(shorts.ptr(), 0xBEEF, 2, 32);
  MemsetNode m4(words.ptr(), 0xDEADBEEF, 4, 16);
  EmptyNode join({m1, m2, m4});
  MemcpyDtoDNode d2d(copy.ptr(), words.ptr(), 64, {join});
  std::vector<unsigned> host(16, 0);
  MemcpyDtoHNode d2h(host.data(), copy.ptr(), 64, {d2d});
  bool ran = false;
  HostNode done([&] { ran = true; }, {d2h});
  KernelNode after_host(kernel("empty_kernel"), {}, {done});
  Graph g = after_host.build();
  g.launch();
  g.synchronize();
  for (unsigned char b : bytes.to_vector<unsigned char>(64)) EXPECT_EQ(b, 0xAB);
  for (unsigned short s : shorts.to_vector<unsigned short>(32)) EXPECT_EQ(s, 0xBEEF);
  for (unsigned w : host) EXPECT_EQ(w, 0xDEADBEEFu);
  EXPECT_TRUE(ran);
}

TEST_F(GpuGraph, KernelArgumentsAreCheckedBeforeTheGraphIsBuilt) {
  KernelNode missing(kernel("add_two"));
  CUJIT_EXPECT_ERROR((void)missing.build(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "add_two")) << error.what();
                     EXPECT_TRUE(contains(error.what(), "takes 1 parameter(s) but 0")););
  KernelNode wrong(kernel("add_two"), {arg_value(1)});
  CUJIT_EXPECT_ERROR((void)wrong.build(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "parameter 0 is 8 bytes")) << error.what(););
}

TEST_F(GpuGraph, UpdateAKernelNodeWithoutReinstantiating) {
  DeviceBuffer a(sizeof(int)), b(sizeof(int));
  const int start = 10;
  a.copy_from_host(&start, sizeof start);
  b.copy_from_host(&start, sizeof start);
  KernelNode add(kernel("add_two"), {arg_value(a.ptr())});
  add.launch({3}, {1});  // three blocks race on a[0] += 2: use one block to be exact
  add.launch({1}, {1});
  Graph g = add.build();
  GraphExec exec = g.instantiate();
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(read_int(a), 12);
  add.args()[0] = arg_value(b.ptr());
  exec.update(add);
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(read_int(a), 12);  // untouched
  EXPECT_EQ(read_int(b), 12);
  // Bad new arguments are refused before they reach the driver.
  add.args().clear();
  CUJIT_EXPECT_ERROR(exec.update(add), ErrorKind::usage, error, (void)error;);
  // A node this execution was not built from.
  KernelNode stranger(kernel("add_two"), {arg_value(a.ptr())});
  CUJIT_EXPECT_ERROR(exec.update(stranger), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "not part of")););
}

TEST_F(GpuGraph, WholeGraphUpdateAndTopologyChange) {
  DeviceBuffer a(sizeof(int)), b(sizeof(int));
  const int zero = 0;
  a.copy_from_host(&zero, sizeof zero);
  b.copy_from_host(&zero, sizeof zero);
  auto chain = [&](DevicePtr target) {
    KernelNode first(kernel("add_two"), {arg_value(target)});
    KernelNode second(kernel("times_three"), {arg_value(target)}, {first});
    return second.build();
  };
  Graph on_a = chain(a.ptr());
  GraphExec exec = on_a.instantiate();
  const UpdateResult same_shape = exec.update(chain(b.ptr()));
  EXPECT_EQ(same_shape.status, UpdateStatus::updated) << same_shape.reason;
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(read_int(a), 0);
  EXPECT_EQ(read_int(b), 6);

  KernelNode first(kernel("add_two"), {arg_value(a.ptr())});
  KernelNode second(kernel("times_three"), {arg_value(a.ptr())}, {first});
  KernelNode third(kernel("times_three"), {arg_value(a.ptr())}, {second});
  const UpdateResult changed = exec.update(third.build());
  EXPECT_EQ(changed.status, UpdateStatus::needs_reinstantiation);
  EXPECT_TRUE(contains(changed.reason, "instantiate")) << changed.reason;
  exec.launch();  // still the previous parameters
  exec.synchronize();
  EXPECT_EQ(read_int(b), (6 + 2) * 3);
}

TEST_F(GpuGraph, HostNodeExceptionSurfacesAtSynchronize) {
  HostNode boom([] { throw std::runtime_error("boom from a host node"); });
  EmptyNode after({boom});
  GraphExec exec = after.build().instantiate();
  exec.launch();
  try {
    exec.synchronize();
    ADD_FAILURE() << "the host node's exception was lost";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "boom from a host node");
  }
  EXPECT_NO_THROW(exec.synchronize());  // reported once
}

TEST_F(GpuGraph, NodesAreReusableAcrossGraphs) {
  DeviceBuffer a(sizeof(int));
  const int one = 1;
  a.copy_from_host(&one, sizeof one);
  KernelNode shared(kernel("add_two"), {arg_value(a.ptr())});
  KernelNode triple(kernel("times_three"), {arg_value(a.ptr())}, {shared});
  Graph only_add = shared.build();
  Graph add_then_triple = triple.build();
  only_add.launch();
  only_add.synchronize();
  add_then_triple.launch();
  add_then_triple.synchronize();
  EXPECT_EQ(read_int(a), (1 + 2 + 2) * 3);
}

TEST_F(GpuGraph, ExecutionKeepsItsKernelsAlive) {
  DeviceBuffer a(sizeof(int));
  const int zero = 0;
  a.copy_from_host(&zero, sizeof zero);
  std::optional<GraphExec> exec;
  {
    Linker linker(test::link_options(LinkerBackend::nvjitlink, false));
    linker.add_file(test::scenario_path("fixtures/graphs/graph_kernels.cu"));
    auto module = Module::load(LinkableCode::cubin(linker.link().code.bytes(), "private"));
    KernelNode node(module->kernel("add_two"), {arg_value(a.ptr())});
    Graph g = node.build();
    exec.emplace(g.instantiate());
    g.destroy();  // the execution outlives its graph and its module handle
  }
  exec->launch();
  exec->synchronize();
  EXPECT_EQ(read_int(a), 2);
}

TEST_F(GpuGraph, DestroyIsIdempotentAndUseAfterIsAnError) {
  KernelNode node(kernel("empty_kernel"));
  Graph g = node.build();
  GraphExec exec = g.instantiate();
  exec.destroy();
  exec.destroy();
  CUJIT_EXPECT_ERROR(exec.launch(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "destroyed")););
  g.destroy();
  g.destroy();
  CUJIT_EXPECT_ERROR((void)g.instantiate(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "destroyed")););
}

TEST_F(GpuGraph, StreamCaptureRecordsLaunchesAndCopies) {
  Stream stream;
  DeviceBuffer a(sizeof(int));
  int host_in = 4, host_out = 0;
  const Kernel add = kernel("add_two");
  const Kernel triple = kernel("times_three");
  Graph g = capture(stream.handle(), [&](StreamHandle s) {
    copy_to_device_async(a.ptr(), &host_in, sizeof host_in, s);
    LaunchConfig config;
    config.stream = s;
    add(config, a.ptr());
    triple(config, a.ptr());
    copy_to_host_async(&host_out, a.ptr(), sizeof host_out, s);
  });
  g.retain(module_);
  EXPECT_EQ(g.node_count(), 4u);
  EXPECT_EQ(host_out, 0);  // captured, not run
  g.launch(stream.handle());
  g.synchronize();
  EXPECT_EQ(host_out, (4 + 2) * 3);
}

TEST_F(GpuGraph, CaptureOfTheLegacyStreamOrAFailingWorkIsAnError) {
  CUJIT_EXPECT_ERROR((void)capture(nullptr, [](StreamHandle) {}), ErrorKind::usage, error,
                     (void)error;);
  Stream stream;
  EXPECT_THROW((void)capture(stream.handle(), [](StreamHandle) { throw std::logic_error("x"); }),
               std::logic_error);
  // The stream is usable again afterwards.
  DeviceBuffer a(sizeof(int));
  LaunchConfig config;
  config.stream = stream.handle();
  kernel("empty_kernel")(config);
  stream.synchronize();
}

}  // namespace
}  // namespace cujit
