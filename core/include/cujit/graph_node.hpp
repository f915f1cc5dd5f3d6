#pragma once
// Graph nodes that are not bound to a graph: arguments, launch shape and dependencies stay
// mutable until build(), and one node may be used in several graphs. Nodes are handles:
// copies refer to the same node.
//
//   KernelNode n1(k1, {arg_value(a)});
//   KernelNode n2(k2, {arg_value(a)}, {n1});
//   KernelNode n3(k2);  n3.args().push_back(arg_value(a));  n3.deps().push_back(n2);
//   Graph g = n3.build();  g.launch();
//
// Dependencies are held strongly: a cycle between handles keeps its nodes alive until a
// dependency is removed (build() refuses cycles, naming the nodes).
//
// Values known only once a graph is built (a MemAllocNode's address, a ConditionalNode's
// handle) reach other nodes by binding: KernelNode::bind(index, source), or the
// MemsetNode / MemcpyDtoHNode / MemcpyHtoDNode constructors that take a MemAllocNode.

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cujit/device.hpp"
#include "cujit/module.hpp"

namespace cujit {

class Graph;

/// What a node does. The kinds after `empty` came with issue 18.
enum class NodeKind {
  kernel,
  memcpy_htod,
  memcpy_dtoh,
  memcpy_dtod,
  memset,
  host,
  empty,
  child_graph,   ///< runs a copy of another Graph
  event_record,  ///< records an Event
  event_wait,    ///< waits for an Event
  mem_alloc,     ///< allocates device memory in the graph
  mem_free,      ///< frees a mem_alloc node's memory
  conditional,   ///< runs a body graph if, or while, a device-set condition holds
};
/// "kernel", "memset", "child graph", "conditional"... for messages.
std::string_view to_string(NodeKind kind) noexcept;

namespace detail {
struct NodeData;
struct EventData;
}  // namespace detail

/// An owning CUDA event (timing disabled) for EventRecordNode and EventWaitNode. A handle:
/// copies refer to the same event, which lives while a copy or a graph using it does.
/// Creating one needs a device (Error(cuda) without).
class Event {
 public:
  /// Creates the event in the current context (device 0's primary one if none is current).
  /// Throws Error(cuda) without a device.
  Event();
  /// Waits until the work the event last recorded is done (at once if never recorded).
  void synchronize() const;
  /// True when the work the event last recorded is done (or it was never recorded).
  bool done() const;
  /// The CUevent.
  void* handle() const noexcept;

 private:
  friend class EventRecordNode;
  friend class EventWaitNode;
  std::shared_ptr<detail::EventData> data_;
};

/// A graph node not bound to a graph: a handle (copies refer to the same node) to its
/// kind, label, dependencies and parameters. Made through the typed node classes.
class Node {
 public:
  /// What the node does.
  NodeKind kind() const noexcept;
  /// For messages: "kernel 'scale' #3" unless a label was set.
  std::string label() const;
  /// Names the node in messages instead of its kind and number.
  Node& set_label(std::string label);

  /// The nodes this one runs after (mutable until build()).
  std::vector<Node>& deps() noexcept;
  /// The nodes this one runs after.
  const std::vector<Node>& deps() const noexcept;
  /// Adds a dependency; returns this node.
  Node& after(Node dependency);

  /// The graph of this node and everything it depends on (build_graph; throws as it does).
  Graph build() const;

  /// True when both handles refer to the same node.
  bool same_as(const Node& other) const noexcept { return data_ == other.data_; }
  /// The node's state (cujit's own use).
  const detail::NodeData& data() const noexcept { return *data_; }
  /// The node's state (cujit's own use).
  detail::NodeData& data() noexcept { return *data_; }

 protected:
  /// A handle to `data`.
  explicit Node(std::shared_ptr<detail::NodeData> data) : data_(std::move(data)) {}
  /// The shared node state.
  std::shared_ptr<detail::NodeData> data_;
  friend struct detail::NodeData;
};

/// Launches a kernel. Arguments are checked against the kernel's parameters (count and
/// sizes) at build and update.
class KernelNode : public Node {
 public:
  /// A launch of `kernel` with `args`, one block of one thread, after `deps`.
  KernelNode(Kernel kernel, std::vector<ArgValue> args = {}, std::vector<Node> deps = {});
  /// The launch shape (numba's KernelNode[grid, block]); one block of one thread by default.
  KernelNode& launch(Dim3 grid, Dim3 block, unsigned shared_bytes = 0);
  /// The argument values (mutable until build, or until GraphExec::update).
  std::vector<ArgValue>& args() noexcept;
  /// Argument `index` becomes, at build, the address of `source` (a MemAllocNode) or the
  /// handle of `source` (a ConditionalNode, for cudaGraphSetConditional in the kernel), 8
  /// bytes either way; args() must hold an 8-byte placeholder there. The build refuses
  /// (Error(usage)) a source of another kind, an allocation the node does not come after
  /// (or that is freed before or alongside it), and a conditional node outside the graph
  /// that contains this node or its enclosing bodies.
  KernelNode& bind(std::size_t index, const Node& source);
  /// The kernel launched.
  const Kernel& kernel() const noexcept;
  /// The grid of the launch.
  Dim3 grid() const noexcept;
  /// The block of the launch.
  Dim3 block() const noexcept;
  /// Dynamic shared memory bytes of the launch.
  unsigned shared_bytes() const noexcept;
};

class MemAllocNode;

/// Copies host memory to the device.
class MemcpyHtoDNode : public Node {
 public:
  /// Copies `bytes` from host `src` to device `dst` after `deps`.
  MemcpyHtoDNode(DevicePtr dst, const void* src, std::size_t bytes, std::vector<Node> deps = {});
  /// Into the memory of a MemAllocNode of the same graph (bound at build, see KernelNode::bind).
  MemcpyHtoDNode(const MemAllocNode& dst, const void* src, std::size_t bytes, std::vector<Node> deps = {});
  /// New parameters, for GraphExec::update(node) (checked at build or update).
  MemcpyHtoDNode& set(DevicePtr dst, const void* src, std::size_t bytes);
};

/// Copies device memory to the host.
class MemcpyDtoHNode : public Node {
 public:
  /// Copies `bytes` from device `src` to host `dst` after `deps`.
  MemcpyDtoHNode(void* dst, DevicePtr src, std::size_t bytes, std::vector<Node> deps = {});
  /// From the memory of a MemAllocNode of the same graph.
  MemcpyDtoHNode(void* dst, const MemAllocNode& src, std::size_t bytes, std::vector<Node> deps = {});
  /// New parameters, for GraphExec::update(node).
  MemcpyDtoHNode& set(void* dst, DevicePtr src, std::size_t bytes);
};

/// Copies device memory to device memory.
class MemcpyDtoDNode : public Node {
 public:
  /// Copies `bytes` from device `src` to device `dst` after `deps`.
  MemcpyDtoDNode(DevicePtr dst, DevicePtr src, std::size_t bytes, std::vector<Node> deps = {});
  /// New parameters, for GraphExec::update(node).
  MemcpyDtoDNode& set(DevicePtr dst, DevicePtr src, std::size_t bytes);
};

/// Sets `count` elements of `element_size` bytes (1, 2 or 4) at dst to `value`.
class MemsetNode : public Node {
 public:
  /// Sets `count` elements of `element_size` bytes at `dst` to `value` after `deps`.
  MemsetNode(DevicePtr dst, unsigned value, unsigned element_size, std::size_t count,
             std::vector<Node> deps = {});
  /// Sets memory of a MemAllocNode of the same graph (bound at build; the build refuses a
  /// count that does not fit the allocation).
  MemsetNode(const MemAllocNode& dst, unsigned value, unsigned element_size, std::size_t count,
             std::vector<Node> deps = {});
  /// New parameters, for GraphExec::update(node) (checked there as at build).
  MemsetNode& set(DevicePtr dst, unsigned value, unsigned element_size, std::size_t count);
};

/// Runs a C++ callable on a driver thread. It must not call CUDA. An exception it throws is
/// kept and rethrown by the next synchronize() of the graph execution that ran it.
class HostNode : public Node {
 public:
  /// Runs `fn` after `deps`.
  HostNode(std::function<void()> fn, std::vector<Node> deps = {});
};

/// Does nothing: joins or forks dependencies.
class EmptyNode : public Node {
 public:
  /// A node after `deps`.
  explicit EmptyNode(std::vector<Node> deps = {});
  // Not copyable as an EmptyNode: `EmptyNode join({other})` with `other` an EmptyNode
  // would otherwise copy the handle instead of depending on it, silently. Copy handles as
  // Node (`Node copy = join;`).
  EmptyNode(const EmptyNode&) = delete;
  EmptyNode& operator=(const EmptyNode&) = delete;
  /// Moves the handle.
  EmptyNode(EmptyNode&&) noexcept = default;
  /// Moves the handle.
  EmptyNode& operator=(EmptyNode&&) noexcept = default;
};

/// Runs a copy of `graph` (cuGraphAddChildGraphNode copies it when the parent is built;
/// later changes to `graph` do not reach the parent). The parent keeps what the child's
/// kernels and host callbacks need alive. Throws Error(usage) if `graph` was destroyed; the
/// driver refuses (Error(cuda)) a child holding memory or conditional nodes.
class ChildGraphNode : public Node {
 public:
  /// Runs a copy of `graph` after `deps`; Error(usage) if `graph` was destroyed.
  explicit ChildGraphNode(const Graph& graph, std::vector<Node> deps = {});
};

/// Records `event` when its dependencies are done; a stream or another graph can wait for
/// it (EventWaitNode), the host with Event::synchronize().
class EventRecordNode : public Node {
 public:
  /// Records `event` after `deps`.
  explicit EventRecordNode(Event event, std::vector<Node> deps = {});
};

/// Waits for the last record of `event` (in a graph or on a stream) before its dependents run.
class EventWaitNode : public Node {
 public:
  /// Waits for `event` after `deps`.
  explicit EventWaitNode(Event event, std::vector<Node> deps = {});
};

/// Allocates `bytes` of device memory (the current device's default pool) when the graph
/// runs; the address is fixed for the life of the graph. It reaches other nodes by binding
/// (KernelNode::bind, MemsetNode / memcpy constructors). Every allocation must be freed by
/// exactly one MemFreeNode of the same graph, after every node using it: the build refuses
/// (Error(usage)) an allocation never freed or freed twice, and a use that does not come
/// after the allocation or may run after (or alongside) its free.
class MemAllocNode : public Node {
 public:
  /// Allocates `bytes` after `deps` (0 bytes is refused at build).
  explicit MemAllocNode(std::size_t bytes, std::vector<Node> deps = {});
  /// The size of the allocation.
  std::size_t bytes() const noexcept;
};

/// Frees the memory of `allocation` (which it depends on without being told).
class MemFreeNode : public Node {
 public:
  /// Frees `allocation` after it and `deps`.
  explicit MemFreeNode(const MemAllocNode& allocation, std::vector<Node> deps = {});
};

/// Whether a ConditionalNode runs its body once if the condition is non-zero, or again and
/// again while it is.
enum class ConditionalKind { if_then, while_loop };

/// A conditional node (CUDA 12.4+): runs the graph of `body` (sinks, built like a graph of
/// its own when the enclosing graph is built) if, or while, its condition is non-zero. The
/// condition starts every launch at `default_value`; a kernel sets it with
/// `cudaGraphSetConditional(handle, value)` (declare it in JIT source as
/// `extern "C" __device__ void cudaGraphSetConditional(unsigned long long, unsigned);` and
/// load the kernel from PTX or a whole-program cubin), the handle bound as one of its
/// arguments (KernelNode::bind). A body may hold kernel, memset, memcpy, empty, child-graph
/// and conditional nodes only, none of its enclosing graph's nodes, and is fixed when the
/// enclosing graph is built: editing body nodes afterwards changes nothing built, and
/// GraphExec::update refuses (Error(usage)) a node inside a body. A graph with a conditional
/// node has one instantiation at a time (driver rule) and cannot be a child graph.
class ConditionalNode : public Node {
 public:
  /// A conditional of `kind` over the graph of `body` (sinks), its condition starting each
  /// launch at `default_value`, after `deps`.
  ConditionalNode(ConditionalKind kind, std::vector<Node> body, unsigned default_value = 0,
                  std::vector<Node> deps = {});
  /// If or while.
  ConditionalKind conditional_kind() const noexcept;
  /// The body's sinks (mutable until the enclosing graph is built).
  std::vector<Node>& body() noexcept;
};

/// The closure of `sinks` over dependencies, each node once, dependencies before
/// dependents: what build() adds, in that order. Throws Error(usage) for an empty graph, a
/// dependency cycle (naming its nodes), a node whose parameters are invalid, or memory and
/// conditional nodes used against their rules (see MemAllocNode, ConditionalNode; bodies
/// are checked too). Pure: no driver needed.
std::vector<Node> graph_order(std::span<const Node> sinks);

}  // namespace cujit
