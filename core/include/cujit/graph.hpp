#pragma once
// CUDA graphs: Graph (a built CUgraph) -> instantiate() -> GraphExec (a CUgraphExec) ->
// launch(stream). Both own their handles (destroy() releases early and is idempotent) and
// keep alive what the execution needs: kernels' modules and host callbacks.

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cujit/graph_node.hpp"

namespace cujit {

namespace detail {
struct GraphResources;
}

class GraphExec;

class Graph {
 public:
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  GraphExec instantiate() const;
  // instantiate() once, then launch that execution; synchronize() waits for it.
  void launch(StreamHandle stream = nullptr);
  void synchronize();

  std::size_t node_count() const;
  void* handle() const noexcept;
  // Keeps a module alive as long as this graph and its executions (for captured graphs,
  // whose kernels cujit did not see).
  void retain(std::shared_ptr<const Module> module);
  /// Writes the graph as Graphviz DOT (cuGraphDebugDotPrint) to `path`, for debugging:
  /// every node with its type and, verbose, its parameters (kernel names, copy sizes,
  /// conditional bodies). Throws Error(usage) for a destroyed graph or an empty path,
  /// Error(cuda) when the driver cannot write it.
  void write_dot(const std::filesystem::path& path, bool verbose = true) const;
  /// The device address a MemAllocNode of this graph has (fixed for the graph's life; the
  /// memory exists only while a launch runs between the allocation and its free). Throws
  /// Error(usage) if the node is not an allocation of this graph.
  DevicePtr allocation(const Node& node) const;
  void destroy() noexcept;

 private:
  friend class ChildGraphNode;
  friend Graph build_graph(std::span<const Node> sinks);
  friend Graph capture(StreamHandle stream, const std::function<void(StreamHandle)>& work);
  friend class GraphExec;
  explicit Graph(std::shared_ptr<detail::GraphResources> resources);

  // Owns the CUgraph (shared with executions, which need its nodes for updates).
  std::shared_ptr<detail::GraphResources> resources_;
  std::unique_ptr<GraphExec> launched_;
};

// Builds the graph of `sinks` and their dependencies (see graph_order). Kernel arguments
// are checked against each kernel's parameters (count and sizes) first.
Graph build_graph(std::span<const Node> sinks);

// Records what `work` enqueues on `stream` (not the legacy default stream) into a graph.
// If `work` throws, capture is ended and the exception propagates.
Graph capture(StreamHandle stream, const std::function<void(StreamHandle)>& work);

enum class UpdateStatus { updated, needs_reinstantiation };

struct UpdateResult {
  UpdateStatus status;
  std::string reason;  // why the update was refused, empty when updated
};

class GraphExec {
 public:
  ~GraphExec();
  GraphExec(GraphExec&&) noexcept;
  GraphExec& operator=(GraphExec&&) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  void launch(StreamHandle stream = nullptr);
  /// Uploads the execution to the device on `stream` (cuGraphUpload), so that the first
  /// launch does not pay for it. Throws Error(usage) once destroyed, Error(cuda) otherwise.
  void upload(StreamHandle stream = nullptr);
  // Waits for the last launch and rethrows the first exception a host node threw there
  // (in this graph or its child graphs).
  void synchronize();

  /// Pushes a node's current parameters into this execution without re-instantiating:
  /// a kernel node's arguments and launch shape (cuGraphExecKernelNodeSetParams), a memset
  /// node's (cuGraphExecMemsetNodeSetParams) or a memcpy node's
  /// (cuGraphExecMemcpyNodeSetParams; the driver refuses a change of memory kind or
  /// context). The node must be one this execution was built from and is checked as at
  /// build; bound allocations resolve to this graph's addresses. Throws Error(usage) for a
  /// node of another graph, a node inside a conditional body (bodies are fixed at
  /// instantiation: build again and update(graph)), another kind of node, or bad
  /// parameters; Error(cuda) when the driver refuses.
  void update(const Node& node);
  // Takes every parameter of `graph`, which must have this execution's topology
  // (cuGraphExecUpdate); otherwise reports that re-instantiation is needed and changes
  // nothing.
  [[nodiscard]] UpdateResult update(const Graph& graph);

  void* handle() const noexcept { return handle_; }
  void destroy() noexcept;

 private:
  friend class Graph;
  GraphExec(void* handle, std::shared_ptr<detail::GraphResources> resources);

  void* handle_ = nullptr;
  // The graph it was instantiated from (its nodes address per-node updates), then every
  // graph whose parameters it took since (their host callbacks run in it).
  std::vector<std::shared_ptr<detail::GraphResources>> resources_;
  // Node -> position in the instantiated graph, for the graph that last set parameters.
  std::vector<std::pair<const detail::NodeData*, std::size_t>> positions_;
  StreamHandle last_stream_ = nullptr;
  bool launched_ = false;
};

}  // namespace cujit
