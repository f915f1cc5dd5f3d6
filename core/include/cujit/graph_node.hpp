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

enum class NodeKind { kernel, memcpy_htod, memcpy_dtoh, memcpy_dtod, memset, host, empty };
std::string_view to_string(NodeKind kind) noexcept;

namespace detail {
struct NodeData;
}

class Node {
 public:
  NodeKind kind() const noexcept;
  // For messages: "kernel 'scale' #3" unless a label was set.
  std::string label() const;
  Node& set_label(std::string label);

  std::vector<Node>& deps() noexcept;
  const std::vector<Node>& deps() const noexcept;
  Node& after(Node dependency);

  // The graph of this node and everything it depends on.
  Graph build() const;

  bool same_as(const Node& other) const noexcept { return data_ == other.data_; }
  const detail::NodeData& data() const noexcept { return *data_; }
  detail::NodeData& data() noexcept { return *data_; }

 protected:
  explicit Node(std::shared_ptr<detail::NodeData> data) : data_(std::move(data)) {}
  std::shared_ptr<detail::NodeData> data_;
  friend struct detail::NodeData;
};

class KernelNode : public Node {
 public:
  KernelNode(Kernel kernel, std::vector<ArgValue> args = {}, std::vector<Node> deps = {});
  // The launch shape (numba's KernelNode[grid, block]); one block of one thread by default.
  KernelNode& launch(Dim3 grid, Dim3 block, unsigned shared_bytes = 0);
  std::vector<ArgValue>& args() noexcept;
  const Kernel& kernel() const noexcept;
  Dim3 grid() const noexcept;
  Dim3 block() const noexcept;
  unsigned shared_bytes() const noexcept;
};

class MemcpyHtoDNode : public Node {
 public:
  MemcpyHtoDNode(DevicePtr dst, const void* src, std::size_t bytes, std::vector<Node> deps = {});
};

class MemcpyDtoHNode : public Node {
 public:
  MemcpyDtoHNode(void* dst, DevicePtr src, std::size_t bytes, std::vector<Node> deps = {});
};

class MemcpyDtoDNode : public Node {
 public:
  MemcpyDtoDNode(DevicePtr dst, DevicePtr src, std::size_t bytes, std::vector<Node> deps = {});
};

// Sets `count` elements of `element_size` bytes (1, 2 or 4) at dst to `value`.
class MemsetNode : public Node {
 public:
  MemsetNode(DevicePtr dst, unsigned value, unsigned element_size, std::size_t count,
             std::vector<Node> deps = {});
};

// Runs a C++ callable on a driver thread. It must not call CUDA. An exception it throws is
// kept and rethrown by the next synchronize() of the graph execution that ran it.
class HostNode : public Node {
 public:
  HostNode(std::function<void()> fn, std::vector<Node> deps = {});
};

class EmptyNode : public Node {
 public:
  explicit EmptyNode(std::vector<Node> deps = {});
  // Not copyable as an EmptyNode: `EmptyNode join({other})` with `other` an EmptyNode
  // would otherwise copy the handle instead of depending on it, silently. Copy handles as
  // Node (`Node copy = join;`).
  EmptyNode(const EmptyNode&) = delete;
  EmptyNode& operator=(const EmptyNode&) = delete;
  EmptyNode(EmptyNode&&) noexcept = default;
  EmptyNode& operator=(EmptyNode&&) noexcept = default;
};

// The closure of `sinks` over dependencies, each node once, dependencies before
// dependents: what build() adds, in that order. Throws Error(usage) for an empty graph, a
// dependency cycle (naming its nodes) or a node whose parameters are invalid. Pure: no
// driver needed.
std::vector<Node> graph_order(std::span<const Node> sinks);

}  // namespace cujit
