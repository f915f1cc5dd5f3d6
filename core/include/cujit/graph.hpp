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

/// A built CUDA graph (an owned CUgraph) and what its executions need alive (kernels'
/// modules, host callbacks, child graphs, events). Move-only; made by build_graph(),
/// Node::build() or capture().
class Graph {
 public:
  /// Releases the CUgraph once no execution made from it needs it.
  ~Graph();
  /// Takes over `other`'s graph; `other` is left destroyed.
  Graph(Graph&&) noexcept;
  /// Releases this graph, then takes over `other`'s.
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// A new execution of this graph (cuGraphInstantiateWithFlags). Throws Error(usage) once
  /// destroyed, Error(cuda) when the driver refuses.
  GraphExec instantiate() const;
  /// instantiate() once, then launches that execution on `stream`. Throws as instantiate()
  /// and GraphExec::launch().
  void launch(StreamHandle stream = nullptr);
  /// Waits for launch()'s execution and rethrows a host node's exception; Error(usage) if
  /// the graph was never launched.
  void synchronize();

  /// The number of top-level nodes (cuGraphGetNodes). Throws Error(usage) once destroyed.
  std::size_t node_count() const;
  /// The CUgraph, null once destroyed.
  void* handle() const noexcept;
  /// Keeps a module alive as long as this graph and its executions (for captured graphs,
  /// whose kernels cujit did not see). Throws Error(usage) once destroyed.
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
  /// Releases the graph now (executions made from it keep what they need); idempotent,
  /// later use is Error(usage).
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

/// Builds the graph of `sinks` and their dependencies (see graph_order). Kernel arguments
/// are checked against each kernel's parameters (count and sizes) first. Throws
/// Error(usage) for what graph_order refuses, Error(cuda) when the driver refuses a node.
Graph build_graph(std::span<const Node> sinks);

/// Records what `work` enqueues on `stream` (not the legacy default stream: Error(usage))
/// into a graph. If `work` throws, capture is ended and the exception propagates; an
/// operation the capture refused is Error(cuda) from cuStreamEndCapture.
Graph capture(StreamHandle stream, const std::function<void(StreamHandle)>& work);

/// The outcome of GraphExec::update(graph).
enum class UpdateStatus {
  updated,                ///< the execution took the graph's parameters
  needs_reinstantiation,  ///< the graph differs in topology or kind; nothing changed
};

/// What GraphExec::update(graph) did, and why not when it did not.
struct UpdateResult {
  UpdateStatus status;  ///< updated or not
  std::string reason;   ///< why the update was refused, empty when updated
};

/// An instantiated graph (an owned CUgraphExec): launched, updated, uploaded. Keeps alive
/// the graph it came from and every graph whose parameters it took. Move-only.
class GraphExec {
 public:
  /// destroy().
  ~GraphExec();
  /// Takes over `other`'s execution; `other` is left destroyed.
  GraphExec(GraphExec&&) noexcept;
  /// Destroys this execution, then takes over `other`'s.
  GraphExec& operator=(GraphExec&&) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  /// Launches the execution on `stream` (cuGraphLaunch). Throws Error(usage) once
  /// destroyed, Error(cuda) when the driver refuses.
  void launch(StreamHandle stream = nullptr);
  /// Uploads the execution to the device on `stream` (cuGraphUpload), so that the first
  /// launch does not pay for it. Throws Error(usage) once destroyed, Error(cuda) otherwise.
  void upload(StreamHandle stream = nullptr);
  /// Waits for the last launch and rethrows the first exception a host node threw there
  /// (in this graph or its child graphs). Throws Error(usage) once destroyed.
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
  /// Takes every parameter of `graph`, which must have this execution's topology
  /// (cuGraphExecUpdate); otherwise reports that re-instantiation is needed and changes
  /// nothing. Throws Error(usage) when either is destroyed, Error(cuda) for other driver
  /// failures.
  [[nodiscard]] UpdateResult update(const Graph& graph);

  /// The CUgraphExec, null once destroyed.
  void* handle() const noexcept { return handle_; }
  /// Releases the execution now; idempotent, later use is Error(usage).
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
