// The node kinds of issue 18 on a GPU: child graphs, event record / wait, memory
// allocation and free, conditional if / while nodes (a kernel setting the condition), upload,
// the DOT dump, and execution updates of memset and memcpy nodes; with the errors that need
// a device (their host-side rules are in test_graph_node.cpp).
#include <gtest/gtest.h>

#include "cujit/graph.hpp"
#include "cujit/linker.hpp"
#include "cujit/program.hpp"
#include "support/fixtures.hpp"
#include "support/linking.hpp"

namespace cujit {
namespace {

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// Kernels that set a conditional node's value. cudaGraphSetConditional is a device-runtime
// builtin the driver resolves when it loads the code: declared here, compiled by NVRTC to
// PTX and loaded as PTX (whole-program), no device runtime library linked.
constexpr const char* conditional_kernels = R"(
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);
extern "C" __global__ void set_if_positive(unsigned long long handle, const int* x) {
  cudaGraphSetConditional(handle, *x > 0 ? 1u : 0u);
}
// One loop iteration: counts it, and keeps looping while *left > 0.
extern "C" __global__ void count_down(unsigned long long handle, int* left, int* iterations) {
  *iterations += 1;
  *left -= 1;
  cudaGraphSetConditional(handle, *left > 0 ? 1u : 0u);
}
extern "C" __global__ void add_one(int* x) { *x += 1; }
)";

class GpuGraphKinds : public ::testing::Test {
 protected:
  void SetUp() override {
    CUJIT_REQUIRE_DEVICE();
    module_ = test::load_scenario_source("fixtures/graphs/graph_kernels.cu", "graph_kernels");
  }
  Kernel kernel(const std::string& name) const { return module_->kernel(name); }

  std::shared_ptr<Module> conditional_module() const {
    CompileOptions options;
    options.arch = Arch::parse("sm_90");
    options.target = CompileTarget::ptx;
    options.relocatable = false;
    const CompileResult compiled = Program(conditional_kernels, "conditional_kernels.cu").compile(options);
    return Module::load(compiled.code);
  }

  std::shared_ptr<Module> module_;
};

int read_int(const DeviceBuffer& buffer) { return buffer.to_vector<int>(1)[0]; }

void write_int(DeviceBuffer& buffer, int value) { buffer.copy_from_host(&value, sizeof value); }

// A placeholder for an argument bound at build.
const ArgValue placeholder = arg_value(DevicePtr{0});

TEST_F(GpuGraphKinds, AChildGraphRunsInsideItsParent) {
  DeviceBuffer a(sizeof(int));
  write_int(a, 1);
  const ArgValue arr = arg_value(a.ptr());
  Graph child = KernelNode(kernel("add_two"), {arr}).build();
  ChildGraphNode inner(child);
  KernelNode after(kernel("times_three"), {arr}, {inner});
  Graph parent = after.build();
  child.destroy();  // the parent holds its own copy
  EXPECT_EQ(parent.node_count(), 2u);
  parent.launch();
  parent.synchronize();
  EXPECT_EQ(read_int(a), (1 + 2) * 3);
  CUJIT_EXPECT_ERROR(ChildGraphNode{child}, ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "destroyed")) << error.what(););
}

TEST_F(GpuGraphKinds, AChildGraphsHostExceptionSurfacesInTheParent) {
  Graph child = HostNode([] { throw std::runtime_error("from the child"); }).build();
  Graph parent = ChildGraphNode(child).build();
  GraphExec exec = parent.instantiate();
  exec.launch();
  EXPECT_THROW(exec.synchronize(), std::runtime_error);
}

TEST_F(GpuGraphKinds, EventNodesOrderTwoGraphsOnTwoStreams) {
  DeviceBuffer a(sizeof(int));
  write_int(a, 1);
  const ArgValue arr = arg_value(a.ptr());
  Event event;
  EXPECT_TRUE(event.done());  // never recorded
  Graph first = EventRecordNode(event, {KernelNode(kernel("add_two"), {arr})}).build();
  Graph second = KernelNode(kernel("times_three"), {arr}, {EventWaitNode(event)}).build();
  Stream s1, s2;
  first.launch(s1.handle());
  second.launch(s2.handle());
  second.synchronize();
  EXPECT_TRUE(event.done());
  event.synchronize();
  EXPECT_EQ(read_int(a), (1 + 2) * 3);
}

TEST_F(GpuGraphKinds, MemoryNodesAllocateUseAndFreeOnEveryLaunch) {
  MemAllocNode alloc(4 * sizeof(int));
  MemsetNode set(alloc, 7, 4, 4, {alloc});
  KernelNode add(kernel("add_two"), {placeholder}, {set});
  add.bind(0, alloc);
  int host[4] = {};
  MemcpyDtoHNode back(host, alloc, sizeof host, {add});
  MemFreeNode free_it(alloc, {back});
  Graph graph = free_it.build();
  EXPECT_NE(graph.allocation(alloc), DevicePtr{0});
  CUJIT_EXPECT_ERROR((void)graph.allocation(set), ErrorKind::usage, error, (void)error;);
  GraphExec exec = graph.instantiate();
  for (int launch = 0; launch < 3; ++launch) {
    host[0] = host[1] = 0;
    exec.launch();
    exec.synchronize();
    EXPECT_EQ(host[0], 7 + 2);
    EXPECT_EQ(host[1], 7);
  }
}

TEST_F(GpuGraphKinds, AnIfNodeRunsItsBodyWhenTheKernelSetsTheCondition) {
  const auto conditional = conditional_module();
  DeviceBuffer x(sizeof(int)), y(sizeof(int));
  KernelNode body(conditional->kernel("add_one"), {arg_value(y.ptr())});
  ConditionalNode when(ConditionalKind::if_then, {body});
  KernelNode decide(conditional->kernel("set_if_positive"), {placeholder, arg_value(x.ptr())});
  decide.bind(0, when);
  when.after(decide);
  Graph graph = when.build();
  graph.retain(conditional);
  GraphExec exec = graph.instantiate();
  write_int(y, 0);
  for (const int value : {5, -3, 1, 0}) {
    write_int(x, value);
    exec.launch();
    exec.synchronize();
  }
  EXPECT_EQ(read_int(y), 2);  // the body ran for 5 and 1 only
  // A node of the body is fixed once instantiated.
  CUJIT_EXPECT_ERROR(exec.update(body), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "in the body of " + when.label())) << error.what(););
}

TEST_F(GpuGraphKinds, AWhileNodeLoopsUntilTheKernelClearsTheCondition) {
  const auto conditional = conditional_module();
  DeviceBuffer left(sizeof(int)), iterations(sizeof(int));
  KernelNode step(conditional->kernel("count_down"),
                  {placeholder, arg_value(left.ptr()), arg_value(iterations.ptr())});
  ConditionalNode loop(ConditionalKind::while_loop, {step}, /*default_value=*/1);
  step.bind(0, loop);
  Graph graph = loop.build();
  GraphExec exec = graph.instantiate();
  write_int(left, 6);
  write_int(iterations, 0);
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(read_int(iterations), 6);
  EXPECT_EQ(read_int(left), 0);
}

TEST_F(GpuGraphKinds, AKernelBindingAConditionalOfAnotherGraphIsRefused) {
  const auto conditional = conditional_module();
  DeviceBuffer x(sizeof(int));
  ConditionalNode elsewhere(ConditionalKind::if_then, {EmptyNode()});
  KernelNode decide(conditional->kernel("set_if_positive"), {placeholder, arg_value(x.ptr())});
  decide.bind(0, elsewhere);
  CUJIT_EXPECT_ERROR((void)decide.build(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "not in its graph")) << error.what(););
  // A binding without its placeholder argument, and a binding of a node with no value.
  KernelNode no_placeholder(conditional->kernel("set_if_positive"), {arg_value(x.ptr())});
  no_placeholder.bind(1, elsewhere);
  CUJIT_EXPECT_ERROR((void)no_placeholder.build(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "placeholder")) << error.what(););
  KernelNode wrong(conditional->kernel("set_if_positive"), {placeholder, arg_value(x.ptr())});
  wrong.bind(0, EmptyNode());
  CUJIT_EXPECT_ERROR((void)wrong.build(), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "no values to bind") ||
                                 contains(error.what(), "only memory allocation")) << error.what(););
}

TEST_F(GpuGraphKinds, UploadThenLaunch) {
  DeviceBuffer a(sizeof(int));
  write_int(a, 4);
  GraphExec exec = KernelNode(kernel("add_two"), {arg_value(a.ptr())}).build().instantiate();
  Stream stream;
  exec.upload(stream.handle());
  exec.launch(stream.handle());
  exec.synchronize();
  EXPECT_EQ(read_int(a), 6);
  exec.destroy();
  CUJIT_EXPECT_ERROR(exec.upload(stream.handle()), ErrorKind::usage, error, (void)error;);
}

TEST_F(GpuGraphKinds, TheDotDumpNamesTheNodes) {
  DeviceBuffer a(sizeof(int));
  const ArgValue arr = arg_value(a.ptr());
  KernelNode first(kernel("add_two"), {arr});
  MemsetNode clear(a.ptr(), 0, 4, 1, {first});
  KernelNode last(kernel("times_three"), {arr}, {clear});
  Graph graph = last.build();
  test::TempDir dir;
  const auto path = dir.path() / "graph.dot";
  graph.write_dot(path);
  const std::string dot = test::read_bytes(path);
  EXPECT_TRUE(contains(dot, "digraph")) << dot;
  EXPECT_TRUE(contains(dot, "add_two")) << dot;
  EXPECT_TRUE(contains(dot, "times_three")) << dot;
  CUJIT_EXPECT_ERROR(graph.write_dot(""), ErrorKind::usage, error, (void)error;);
  CUJIT_EXPECT_ERROR(graph.write_dot(dir.path() / "missing" / "graph.dot"), ErrorKind::cuda, error,
                     EXPECT_TRUE(contains(error.what(), "cuGraphDebugDotPrint")) << error.what(););
}

TEST_F(GpuGraphKinds, MemsetAndMemcpyNodesUpdateWithoutReinstantiating) {
  DeviceBuffer a(sizeof(int)), b(sizeof(int));
  int first = 0, second = 0;
  MemsetNode set(a.ptr(), 5, 4, 1);
  MemcpyDtoHNode back(&first, a.ptr(), sizeof(int), {set});
  GraphExec exec = back.build().instantiate();
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(first, 5);
  set.set(b.ptr(), 9, 4, 1);
  back.set(&second, b.ptr(), sizeof(int));
  exec.update(set);
  exec.update(back);
  exec.launch();
  exec.synchronize();
  EXPECT_EQ(second, 9);
  EXPECT_EQ(first, 5);
  EXPECT_EQ(read_int(a), 5);
  // Checked as at build, before the driver sees it.
  set.set(b.ptr(), 300, 1, 4);
  CUJIT_EXPECT_ERROR(exec.update(set), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "does not fit")) << error.what(););
}

TEST_F(GpuGraphKinds, UpdatingAnotherKindOrAForeignNodeIsRefused) {
  DeviceBuffer a(sizeof(int));
  Event event;
  EventRecordNode record(event, {MemsetNode(a.ptr(), 1, 4, 1)});
  GraphExec exec = record.build().instantiate();
  CUJIT_EXPECT_ERROR(exec.update(record), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "event record")) << error.what(););
  MemsetNode stranger(a.ptr(), 1, 4, 1);
  CUJIT_EXPECT_ERROR(exec.update(stranger), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "not part of")) << error.what(););
}

}  // namespace
}  // namespace cujit
