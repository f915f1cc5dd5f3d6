#pragma once
// What graph nodes and built graphs hold.

#include <cuda.h>

#include <cstdint>
#include <exception>
#include <mutex>
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

struct NodeData : std::enable_shared_from_this<NodeData> {
  NodeKind kind;
  std::uint64_t id;
  std::string label;
  std::vector<Node> deps;
  std::variant<std::monostate, KernelParams, CopyParams, MemsetParams, HostParams> params;

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
  std::vector<CUgraphNode> nodes;                     // in the order they were added
  // The node each one came from, held so positions never match a recycled address.
  std::vector<std::shared_ptr<const NodeData>> node_data;
  std::vector<std::shared_ptr<const Module>> modules;
  std::vector<std::unique_ptr<HostCallback>> callbacks;
  std::shared_ptr<HostErrors> errors = std::make_shared<HostErrors>();

  GraphResources() = default;
  GraphResources(const GraphResources&) = delete;
  GraphResources& operator=(const GraphResources&) = delete;
  ~GraphResources();
};

// Driver parameters of a kernel node; `pointers` must outlive the call that uses them.
CUDA_KERNEL_NODE_PARAMS kernel_node_params(const KernelParams& params, std::vector<void*>& pointers);

}  // namespace cujit::detail
