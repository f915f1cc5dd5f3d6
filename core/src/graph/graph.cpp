#include "support/handle_counts.hpp"
#include "cujit/graph.hpp"

#include <algorithm>
#include <utility>

#include "cujit/error.hpp"
#include "driver/driver_api.hpp"
#include "graph/graph_data.hpp"

namespace cujit {
namespace detail {

GraphResources::~GraphResources() {
  if (graph != nullptr) {
    if (const DriverApi* api = try_driver()) api->cuGraphDestroy(graph);
    handle_released(HandleKind::graph);
  }
}

CUDA_KERNEL_NODE_PARAMS kernel_node_params(const KernelParams& params, std::vector<void*>& pointers) {
  pointers.clear();
  for (const ArgValue& value : params.args) {
    pointers.push_back(const_cast<unsigned char*>(value.bytes.data()));
  }
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = static_cast<CUfunction>(params.kernel.handle());
  p.gridDimX = params.grid.x;
  p.gridDimY = params.grid.y;
  p.gridDimZ = params.grid.z;
  p.blockDimX = params.block.x;
  p.blockDimY = params.block.y;
  p.blockDimZ = params.block.z;
  p.sharedMemBytes = params.shared_bytes;
  p.kernelParams = pointers.data();
  return p;
}

}  // namespace detail

namespace {

void CUDA_CB run_host_callback(void* user_data) {
  auto* callback = static_cast<detail::HostCallback*>(user_data);
  try {
    callback->fn();
  } catch (...) {
    // Thrown on a driver thread: kept for the caller's next synchronize().
    std::lock_guard<std::mutex> lock(callback->errors->mutex);
    if (!callback->errors->first) callback->errors->first = std::current_exception();
  }
}

CUDA_MEMCPY3D copy_params(const detail::CopyParams& c) {
  CUDA_MEMCPY3D m{};
  if (c.src_host != nullptr) {
    m.srcMemoryType = CU_MEMORYTYPE_HOST;
    m.srcHost = c.src_host;
  } else {
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = c.src_device;
  }
  if (c.dst_host != nullptr) {
    m.dstMemoryType = CU_MEMORYTYPE_HOST;
    m.dstHost = c.dst_host;
  } else {
    m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    m.dstDevice = c.dst_device;
  }
  m.WidthInBytes = c.bytes;
  m.Height = 1;
  m.Depth = 1;
  return m;
}

CUgraphNode add_node(detail::GraphResources& resources, const detail::NodeData& data,
                     const std::vector<CUgraphNode>& deps, CUcontext context, const std::string& label) {
  const auto& api = detail::driver();
  CUgraphNode node = nullptr;
  CUresult result = CUDA_SUCCESS;
  const char* call = "";
  if (const auto* k = std::get_if<detail::KernelParams>(&data.params)) {
    std::vector<void*> pointers;
    const CUDA_KERNEL_NODE_PARAMS p = detail::kernel_node_params(*k, pointers);
    call = "cuGraphAddKernelNode";
    result = api.cuGraphAddKernelNode(&node, resources.graph, deps.data(), deps.size(), &p);
    resources.modules.push_back(k->kernel.module());
  } else if (const auto* c = std::get_if<detail::CopyParams>(&data.params)) {
    const CUDA_MEMCPY3D m = copy_params(*c);
    call = "cuGraphAddMemcpyNode";
    result = api.cuGraphAddMemcpyNode(&node, resources.graph, deps.data(), deps.size(), &m, context);
  } else if (const auto* s = std::get_if<detail::MemsetParams>(&data.params)) {
    CUDA_MEMSET_NODE_PARAMS p{};
    p.dst = s->dst;
    p.value = s->value;
    p.elementSize = s->element_size;
    p.width = s->count;
    p.height = 1;
    call = "cuGraphAddMemsetNode";
    result = api.cuGraphAddMemsetNode(&node, resources.graph, deps.data(), deps.size(), &p, context);
  } else if (const auto* h = std::get_if<detail::HostParams>(&data.params)) {
    resources.callbacks.push_back(
        std::make_unique<detail::HostCallback>(detail::HostCallback{h->fn, resources.errors}));
    CUDA_HOST_NODE_PARAMS p{};
    p.fn = run_host_callback;
    p.userData = resources.callbacks.back().get();
    call = "cuGraphAddHostNode";
    result = api.cuGraphAddHostNode(&node, resources.graph, deps.data(), deps.size(), &p);
  } else {
    call = "cuGraphAddEmptyNode";
    result = api.cuGraphAddEmptyNode(&node, resources.graph, deps.data(), deps.size());
  }
  detail::check(result, call, "adding node " + label);
  return node;
}

std::shared_ptr<detail::GraphResources> new_graph() {
  detail::ensure_context();
  auto resources = std::make_shared<detail::GraphResources>();
  detail::check(detail::driver().cuGraphCreate(&resources->graph, 0), "cuGraphCreate",
                "creating a graph");
  detail::handle_created(detail::HandleKind::graph);
  return resources;
}

}  // namespace

// ---- Graph -------------------------------------------------------------------------------

Graph::Graph(std::shared_ptr<detail::GraphResources> resources) : resources_(std::move(resources)) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

void* Graph::handle() const noexcept { return resources_ ? resources_->graph : nullptr; }

void Graph::destroy() noexcept {
  launched_.reset();
  resources_.reset();
}

namespace {
const detail::GraphResources& live(const std::shared_ptr<detail::GraphResources>& resources,
                                   const char* what) {
  if (!resources) throw Error(ErrorKind::usage, what, "the graph was destroyed");
  return *resources;
}
}  // namespace

std::size_t Graph::node_count() const {
  std::size_t count = 0;
  detail::check(detail::driver().cuGraphGetNodes(live(resources_, "Graph::node_count").graph,
                                                 nullptr, &count),
                "cuGraphGetNodes", "counting graph nodes");
  return count;
}

void Graph::retain(std::shared_ptr<const Module> module) {
  if (!resources_) throw Error(ErrorKind::usage, "Graph::retain", "the graph was destroyed");
  resources_->modules.push_back(std::move(module));
}

GraphExec Graph::instantiate() const {
  const detail::GraphResources& resources = live(resources_, "Graph::instantiate");
  CUgraphExec exec = nullptr;
  detail::check(detail::driver().cuGraphInstantiateWithFlags(&exec, resources.graph, 0),
                "cuGraphInstantiateWithFlags", "instantiating a graph");
  return GraphExec(exec, resources_);
}

void Graph::launch(StreamHandle stream) {
  if (!launched_) launched_ = std::make_unique<GraphExec>(instantiate());
  launched_->launch(stream);
}

void Graph::synchronize() {
  if (!launched_) throw Error(ErrorKind::usage, "Graph::synchronize", "the graph was never launched");
  launched_->synchronize();
}

Graph build_graph(std::span<const Node> sinks) {
  const std::vector<Node> order = graph_order(sinks);  // validates, before any driver call
  auto resources = new_graph();
  Graph graph(resources);
  CUcontext context = nullptr;
  detail::check(detail::driver().cuCtxGetCurrent(&context), "cuCtxGetCurrent", "building a graph");
  for (const Node& node : order) {
    std::vector<CUgraphNode> deps;
    for (const Node& dep : node.deps()) {
      const auto at = std::find_if(resources->node_data.begin(), resources->node_data.end(),
                                   [&](const auto& kept) { return kept.get() == &dep.data(); });
      const CUgraphNode handle = resources->nodes[static_cast<std::size_t>(at - resources->node_data.begin())];
      if (std::find(deps.begin(), deps.end(), handle) == deps.end()) deps.push_back(handle);
    }
    resources->nodes.push_back(add_node(*resources, node.data(), deps, context, node.label()));
    resources->node_data.push_back(node.data().shared_from_this());
  }
  return graph;
}

Graph capture(StreamHandle stream, const std::function<void(StreamHandle)>& work) {
  if (stream == nullptr) {
    throw Error(ErrorKind::usage, "capture", "the legacy default stream cannot be captured; use a Stream");
  }
  detail::ensure_context();
  const auto& api = detail::driver();
  const auto cu_stream = static_cast<CUstream>(stream);
  detail::check(api.cuStreamBeginCapture(cu_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture", "starting a stream capture");
  auto resources = std::make_shared<detail::GraphResources>();
  try {
    work(stream);
  } catch (...) {
    CUgraph partial = nullptr;
    api.cuStreamEndCapture(cu_stream, &partial);
    if (partial != nullptr) api.cuGraphDestroy(partial);
    throw;
  }
  detail::check(api.cuStreamEndCapture(cu_stream, &resources->graph), "cuStreamEndCapture",
                "ending a stream capture (was an operation in it invalid?)");
  if (resources->graph != nullptr) detail::handle_created(detail::HandleKind::graph);
  return Graph(resources);
}

// ---- GraphExec ---------------------------------------------------------------------------

GraphExec::GraphExec(void* handle, std::shared_ptr<detail::GraphResources> resources)
    : handle_(handle) {
  detail::handle_created(detail::HandleKind::graph_exec);
  for (std::size_t i = 0; i < resources->node_data.size(); ++i) {
    positions_.emplace_back(resources->node_data[i].get(), i);
  }
  resources_.push_back(std::move(resources));
}

GraphExec::~GraphExec() { destroy(); }

GraphExec::GraphExec(GraphExec&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      resources_(std::move(other.resources_)),
      positions_(std::move(other.positions_)),
      last_stream_(other.last_stream_),
      launched_(other.launched_) {}

GraphExec& GraphExec::operator=(GraphExec&& other) noexcept {
  if (this != &other) {
    destroy();
    handle_ = std::exchange(other.handle_, nullptr);
    resources_ = std::move(other.resources_);
    positions_ = std::move(other.positions_);
    last_stream_ = other.last_stream_;
    launched_ = other.launched_;
  }
  return *this;
}

void GraphExec::destroy() noexcept {
  if (handle_ != nullptr) {
    if (const auto* api = detail::try_driver()) api->cuGraphExecDestroy(static_cast<CUgraphExec>(handle_));
    detail::handle_released(detail::HandleKind::graph_exec);
    handle_ = nullptr;
  }
  resources_.clear();
  positions_.clear();
}

namespace {
CUgraphExec live_exec(void* handle, const char* what) {
  if (handle == nullptr) throw Error(ErrorKind::usage, what, "the graph execution was destroyed");
  return static_cast<CUgraphExec>(handle);
}
}  // namespace

void GraphExec::launch(StreamHandle stream) {
  const CUgraphExec exec = live_exec(handle_, "GraphExec::launch");
  detail::check(detail::driver().cuGraphLaunch(exec, static_cast<CUstream>(stream)), "cuGraphLaunch",
                "launching a graph");
  last_stream_ = stream;
  launched_ = true;
}

void GraphExec::synchronize() {
  (void)live_exec(handle_, "GraphExec::synchronize");
  if (launched_) cujit::synchronize(last_stream_);
  for (const auto& resources : resources_) {
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(resources->errors->mutex);
      error = std::exchange(resources->errors->first, nullptr);
    }
    if (error) std::rethrow_exception(error);
  }
}

void GraphExec::update(const KernelNode& node) {
  const CUgraphExec exec = live_exec(handle_, "GraphExec::update");
  const auto found = std::find_if(positions_.begin(), positions_.end(),
                                  [&](const auto& entry) { return entry.first == &node.data(); });
  if (found == positions_.end()) {
    throw Error(ErrorKind::usage, "GraphExec::update",
                "node " + node.label() + " is not part of the graph this execution runs");
  }
  // Same checks as at build time.
  const Node& as_node = node;
  (void)graph_order(std::span<const Node>(&as_node, 1));
  const auto& params = std::get<detail::KernelParams>(node.data().params);
  std::vector<void*> pointers;
  const CUDA_KERNEL_NODE_PARAMS p = detail::kernel_node_params(params, pointers);
  const CUgraphNode target = resources_.front()->nodes[found->second];
  detail::check(detail::driver().cuGraphExecKernelNodeSetParams(exec, target, &p),
                "cuGraphExecKernelNodeSetParams", "updating node " + node.label());
  resources_.front()->modules.push_back(params.kernel.module());
}

namespace {
std::string update_failure(CUgraphExecUpdateResult result) {
  switch (result) {
    case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: return "the topology changed";
    case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: return "a node's type changed";
    case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED: return "a kernel node's function changed";
    case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: return "a parameter cannot be updated";
    case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED: return "the change is not supported";
    case CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE:
      return "the kernel change is not supported";
    case CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED: return "node attributes changed";
    default: return "the driver refused the update";
  }
}
}  // namespace

UpdateResult GraphExec::update(const Graph& graph) {
  const CUgraphExec exec = live_exec(handle_, "GraphExec::update");
  const auto& source = live(graph.resources_, "GraphExec::update");
  CUgraphExecUpdateResultInfo info{};
  const CUresult result = detail::driver().cuGraphExecUpdate(exec, source.graph, &info);
  if (result == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
    return UpdateResult{UpdateStatus::needs_reinstantiation,
                        update_failure(info.result) + "; instantiate the new graph"};
  }
  detail::check(result, "cuGraphExecUpdate", "updating a graph execution");
  // Same topology, same order of addition: position i of the new graph is node i here.
  positions_.clear();
  for (std::size_t i = 0; i < source.node_data.size(); ++i) {
    positions_.emplace_back(source.node_data[i].get(), i);
  }
  resources_.push_back(graph.resources_);
  return UpdateResult{UpdateStatus::updated, {}};
}

}  // namespace cujit
