#pragma once
// What graph nodes and built graphs hold.

#include <cuda.h>

#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <variant>

#include "cujit/graph_node.hpp"

namespace cujit::detail {

struct KernelParams {
  Kernel kernel;
  std::vector<ArgValue> args;
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;
};

struct CopyParams {
  DevicePtr dst_device = 0;
  void* dst_host = nullptr;
  DevicePtr src_device = 0;
  const void* src_host = nullptr;
  std::size_t bytes = 0;
};

struct MemsetParams {
  DevicePtr dst = 0;
  unsigned value = 0;
  unsigned element_size = 1;
  std::size_t count = 0;
};

struct HostParams {
  std::function<void()> fn;
};

struct GraphResources;

struct ChildParams {
  std::shared_ptr<GraphResources> graph;
};

struct EventData {
  CUevent event = nullptr;
  EventData() = default;
  EventData(const EventData&) = delete;
  EventData& operator=(const EventData&) = delete;
  ~EventData();
};

struct EventParams {
  std::shared_ptr<EventData> event;
};

struct AllocParams {
  std::size_t bytes = 0;
};

struct FreeParams {
  Node allocation;
};

struct ConditionalParams {
  ConditionalKind kind = ConditionalKind::if_then;
  std::vector<Node> body;
  unsigned default_value = 0;
};

// A value known only once the graph is built: an allocation's address or a conditional's
// handle, written into a kernel argument or a copy's / memset's address.
struct Binding {
  enum class Slot { kernel_arg, dst, src };
  Slot slot = Slot::kernel_arg;
  std::size_t index = 0;  // kernel_arg only
  Node source;
};

struct NodeData : std::enable_shared_from_this<NodeData> {
  NodeKind kind;
  std::uint64_t id;
  std::string label;
  std::vector<Node> deps;
  std::variant<std::monostate, KernelParams, CopyParams, MemsetParams, HostParams, ChildParams,
               EventParams, AllocParams, FreeParams, ConditionalParams>
      params;
  std::vector<Binding> bindings;

  static std::shared_ptr<NodeData> make(NodeKind kind, std::vector<Node> deps);
  static Node handle(std::shared_ptr<NodeData> data) { return Node(std::move(data)); }
};

// The first exception a host node threw, kept for the next synchronize().
struct HostErrors {
  std::mutex mutex;
  std::exception_ptr first;
};

struct HostCallback {
  std::function<void()> fn;
  std::shared_ptr<HostErrors> errors;
};

// Everything a built graph, and every execution made from it, needs alive.
struct GraphResources {
  CUgraph graph = nullptr;
  CUcontext context = nullptr;
  std::vector<CUgraphNode> nodes;                     // in the order they were added
  // The node each one came from, held so positions never match a recycled address.
  std::vector<std::shared_ptr<const NodeData>> node_data;
  std::vector<std::shared_ptr<const Module>> modules;
  std::vector<std::unique_ptr<HostCallback>> callbacks;
  std::shared_ptr<HostErrors> errors = std::make_shared<HostErrors>();
  // Built-time values of memory and conditional nodes, by node.
  std::map<const NodeData*, CUdeviceptr> allocations;
  std::map<const NodeData*, CUgraphConditionalHandle> conditions;
  // Nodes inside conditional bodies (held, as node_data) -> the conditional's label.
  std::map<const NodeData*, std::string> body_members;
  std::vector<std::shared_ptr<const NodeData>> body_data;
  std::vector<std::shared_ptr<GraphResources>> children;  // child graphs' resources
  std::vector<std::shared_ptr<EventData>> events;

  GraphResources() = default;
  GraphResources(const GraphResources&) = delete;
  GraphResources& operator=(const GraphResources&) = delete;
  ~GraphResources();
};

// Driver parameters of a kernel node; `pointers` must outlive the call that uses them.
CUDA_KERNEL_NODE_PARAMS kernel_node_params(const KernelParams& params, std::vector<void*>& pointers);

// The nodes of `sinks` in build order (dependencies first), each checked on its own
// (parameters, cycles) but not against the rules of memory and conditional nodes, which
// graph_order checks for a whole graph: for bodies of conditional nodes, already checked
// with their enclosing graph.
std::vector<Node> order_nodes(std::span<const Node> sinks);

// A node's parameters with its bindings resolved against a built graph's values.
KernelParams bound_kernel(const NodeData& data, const GraphResources& resources);
CopyParams bound_copy(const NodeData& data, const GraphResources& resources);
MemsetParams bound_memset(const NodeData& data, const GraphResources& resources);

}  // namespace cujit::detail
