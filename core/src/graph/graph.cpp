#include "support/handle_counts.hpp"
#include "support/planted_slowdown.hpp"
#include "cujit/graph.hpp"

#include <algorithm>
#include <map>
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

namespace {
DevicePtr allocation_address(const Node& source, const GraphResources& resources) {
  const auto found = resources.allocations.find(&source.data());
  if (found == resources.allocations.end()) {
    throw Error(ErrorKind::usage, "graph", "allocation " + source.label() + " is not in this graph");
  }
  return found->second;
}
}  // namespace

KernelParams bound_kernel(const NodeData& data, const GraphResources& resources) {
  KernelParams params = std::get<KernelParams>(data.params);
  for (const Binding& b : data.bindings) {
    unsigned long long value = 0;
    if (b.source.kind() == NodeKind::conditional) {
      const auto found = resources.conditions.find(&b.source.data());
      if (found == resources.conditions.end()) {
        throw Error(ErrorKind::usage, "graph", "conditional " + b.source.label() + " is not in this graph");
      }
      value = found->second;
    } else {
      value = allocation_address(b.source, resources);
    }
    params.args.at(b.index) = arg_value(value);
  }
  return params;
}

CopyParams bound_copy(const NodeData& data, const GraphResources& resources) {
  CopyParams params = std::get<CopyParams>(data.params);
  for (const Binding& b : data.bindings) {
    (b.slot == Binding::Slot::dst ? params.dst_device : params.src_device) =
        allocation_address(b.source, resources);
  }
  return params;
}

MemsetParams bound_memset(const NodeData& data, const GraphResources& resources) {
  MemsetParams params = std::get<MemsetParams>(data.params);
  for (const Binding& b : data.bindings) params.dst = allocation_address(b.source, resources);
  return params;
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

CUDA_MEMSET_NODE_PARAMS memset_params(const detail::MemsetParams& m) {
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = m.dst;
  p.value = m.value;
  p.elementSize = m.element_size;
  p.width = m.count;
  p.height = 1;
  return p;
}

void add_nodes(detail::GraphResources& resources, CUgraph target, const std::vector<Node>& order,
               const std::string& body_of);

CUgraphNode add_node(detail::GraphResources& resources, CUgraph target, const detail::NodeData& data,
                     const std::vector<CUgraphNode>& deps, const std::string& label) {
  const auto& api = detail::driver();
  const CUcontext context = resources.context;
  CUgraphNode node = nullptr;
  CUresult result = CUDA_SUCCESS;
  const char* call = "";
  if (std::holds_alternative<detail::KernelParams>(data.params)) {
    const detail::KernelParams k = detail::bound_kernel(data, resources);
    std::vector<void*> pointers;
    const CUDA_KERNEL_NODE_PARAMS p = detail::kernel_node_params(k, pointers);
    call = "cuGraphAddKernelNode";
    result = api.cuGraphAddKernelNode(&node, target, deps.data(), deps.size(), &p);
    resources.modules.push_back(k.kernel.module());
  } else if (std::holds_alternative<detail::CopyParams>(data.params)) {
    const CUDA_MEMCPY3D m = copy_params(detail::bound_copy(data, resources));
    call = "cuGraphAddMemcpyNode";
    result = api.cuGraphAddMemcpyNode(&node, target, deps.data(), deps.size(), &m, context);
  } else if (std::holds_alternative<detail::MemsetParams>(data.params)) {
    const CUDA_MEMSET_NODE_PARAMS p = memset_params(detail::bound_memset(data, resources));
    call = "cuGraphAddMemsetNode";
    result = api.cuGraphAddMemsetNode(&node, target, deps.data(), deps.size(), &p, context);
  } else if (const auto* h = std::get_if<detail::HostParams>(&data.params)) {
    resources.callbacks.push_back(
        std::make_unique<detail::HostCallback>(detail::HostCallback{h->fn, resources.errors}));
    CUDA_HOST_NODE_PARAMS p{};
    p.fn = run_host_callback;
    p.userData = resources.callbacks.back().get();
    call = "cuGraphAddHostNode";
    result = api.cuGraphAddHostNode(&node, target, deps.data(), deps.size(), &p);
  } else if (const auto* c = std::get_if<detail::ChildParams>(&data.params)) {
    call = "cuGraphAddChildGraphNode";
    result = api.cuGraphAddChildGraphNode(&node, target, deps.data(), deps.size(), c->graph->graph);
    resources.children.push_back(c->graph);
  } else if (const auto* e = std::get_if<detail::EventParams>(&data.params)) {
    if (data.kind == NodeKind::event_record) {
      call = "cuGraphAddEventRecordNode";
      result = api.cuGraphAddEventRecordNode(&node, target, deps.data(), deps.size(), e->event->event);
    } else {
      call = "cuGraphAddEventWaitNode";
      result = api.cuGraphAddEventWaitNode(&node, target, deps.data(), deps.size(), e->event->event);
    }
    resources.events.push_back(e->event);
  } else if (const auto* a = std::get_if<detail::AllocParams>(&data.params)) {
    CUdevice device = 0;
    detail::check(api.cuCtxGetDevice(&device), "cuCtxGetDevice", "adding node " + label);
    CUDA_MEM_ALLOC_NODE_PARAMS p{};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = device;
    p.bytesize = a->bytes;
    call = "cuGraphAddMemAllocNode";
    result = api.cuGraphAddMemAllocNode(&node, target, deps.data(), deps.size(), &p);
    if (result == CUDA_SUCCESS) resources.allocations[&data] = p.dptr;
  } else if (const auto* f = std::get_if<detail::FreeParams>(&data.params)) {
    call = "cuGraphAddMemFreeNode";
    result = api.cuGraphAddMemFreeNode(&node, target, deps.data(), deps.size(),
                                       resources.allocations.at(&f->allocation.data()));
  } else if (const auto* cond = std::get_if<detail::ConditionalParams>(&data.params)) {
    CUgraphNodeParams p{};
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = resources.conditions.at(&data);
    p.conditional.type =
        cond->kind == ConditionalKind::while_loop ? CU_GRAPH_COND_TYPE_WHILE : CU_GRAPH_COND_TYPE_IF;
    p.conditional.size = 1;
    p.conditional.ctx = context;
    call = "cuGraphAddNode";
    result = api.cuGraphAddNode(&node, target, deps.data(), nullptr, deps.size(), &p);
    detail::check(result, call, "adding node " + label + " (conditional nodes need CUDA 12.4+)");
    // The body graph belongs to the node; its nodes are added now, already checked with
    // the enclosing graph.
    add_nodes(resources, p.conditional.phGraph_out[0], detail::order_nodes(cond->body), label);
  } else {
    call = "cuGraphAddEmptyNode";
    result = api.cuGraphAddEmptyNode(&node, target, deps.data(), deps.size());
  }
  detail::check(result, call, "adding node " + label);
  return node;
}

// Adds `order` (dependencies first) to `target`: the top-level graph (body_of empty) or
// the body of conditional `body_of`.
void add_nodes(detail::GraphResources& resources, CUgraph target, const std::vector<Node>& order,
               const std::string& body_of) {
  const auto& api = detail::driver();
  // Handles first: a kernel before its conditional node (or in its body) binds them.
  for (const Node& node : order) {
    if (const auto* cond = std::get_if<detail::ConditionalParams>(&node.data().params)) {
      CUgraphConditionalHandle handle = 0;
      detail::check(api.cuGraphConditionalHandleCreate(&handle, target, resources.context, cond->default_value,
                                                       CU_GRAPH_COND_ASSIGN_DEFAULT),
                    "cuGraphConditionalHandleCreate",
                    "creating the handle of " + node.label() + " (conditional nodes need CUDA 12.4+)");
      resources.conditions[&node.data()] = handle;
    }
  }
  std::map<const detail::NodeData*, CUgraphNode> added;
  for (const Node& node : order) {
    std::vector<CUgraphNode> deps;
    for (const Node& dep : node.deps()) {
      const CUgraphNode handle = added.at(&dep.data());
      if (std::find(deps.begin(), deps.end(), handle) == deps.end()) deps.push_back(handle);
    }
    const CUgraphNode handle = add_node(resources, target, node.data(), deps, node.label());
    added[&node.data()] = handle;
    if (body_of.empty()) {
      resources.nodes.push_back(handle);
      resources.node_data.push_back(node.data().shared_from_this());
    } else {
      resources.body_members[&node.data()] = body_of;
      resources.body_data.push_back(node.data().shared_from_this());
    }
  }
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

void Graph::write_dot(const std::filesystem::path& path, bool verbose) const {
  const detail::GraphResources& resources = live(resources_, "Graph::write_dot");
  if (path.empty()) throw Error(ErrorKind::usage, "Graph::write_dot", "an empty path");
  const unsigned flags = verbose ? CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE : 0;
  detail::check(detail::driver().cuGraphDebugDotPrint(resources.graph, path.c_str(), flags),
                "cuGraphDebugDotPrint", "writing the graph as DOT to " + path.string());
}

DevicePtr Graph::allocation(const Node& node) const {
  const detail::GraphResources& resources = live(resources_, "Graph::allocation");
  const auto found = resources.allocations.find(&node.data());
  if (found == resources.allocations.end()) {
    throw Error(ErrorKind::usage, "Graph::allocation", "node " + node.label() + " is not a memory allocation of this graph");
  }
  return found->second;
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
  detail::check(detail::driver().cuCtxGetCurrent(&resources->context), "cuCtxGetCurrent", "building a graph");
  add_nodes(*resources, resources->graph, order, {});
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
  const detail::PlantedDelay planted;
  const CUgraphExec exec = live_exec(handle_, "GraphExec::launch");
  detail::check(detail::driver().cuGraphLaunch(exec, static_cast<CUstream>(stream)), "cuGraphLaunch",
                "launching a graph");
  last_stream_ = stream;
  launched_ = true;
}

void GraphExec::upload(StreamHandle stream) {
  const CUgraphExec exec = live_exec(handle_, "GraphExec::upload");
  detail::check(detail::driver().cuGraphUpload(exec, static_cast<CUstream>(stream)), "cuGraphUpload",
                "uploading a graph execution");
}

namespace {
void rethrow_host_error(const detail::GraphResources& resources) {
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(resources.errors->mutex);
    error = std::exchange(resources.errors->first, nullptr);
  }
  if (error) std::rethrow_exception(error);
  for (const auto& child : resources.children) rethrow_host_error(*child);
}
}  // namespace

void GraphExec::synchronize() {
  (void)live_exec(handle_, "GraphExec::synchronize");
  if (launched_) cujit::synchronize(last_stream_);
  for (const auto& resources : resources_) rethrow_host_error(*resources);
}

void GraphExec::update(const Node& node) {
  const CUgraphExec exec = live_exec(handle_, "GraphExec::update");
  const auto found = std::find_if(positions_.begin(), positions_.end(),
                                  [&](const auto& entry) { return entry.first == &node.data(); });
  if (found == positions_.end()) {
    for (const auto& resources : resources_) {
      const auto body = resources->body_members.find(&node.data());
      if (body != resources->body_members.end()) {
        throw Error(ErrorKind::usage, "GraphExec::update",
                    "node " + node.label() + " is in the body of " + body->second +
                        ", fixed when the graph was instantiated; build the graph again and update(graph)");
      }
    }
    throw Error(ErrorKind::usage, "GraphExec::update",
                "node " + node.label() + " is not part of the graph this execution runs");
  }
  // Same checks as at build time, on the node alone.
  (void)detail::order_nodes(std::span<const Node>(&node, 1));
  detail::GraphResources& built = *resources_.front();
  const CUgraphNode target = built.nodes[found->second];
  const auto& api = detail::driver();
  const std::string what = "updating node " + node.label();
  switch (node.kind()) {
    case NodeKind::kernel: {
      const detail::KernelParams params = detail::bound_kernel(node.data(), built);
      std::vector<void*> pointers;
      const CUDA_KERNEL_NODE_PARAMS p = detail::kernel_node_params(params, pointers);
      detail::check(api.cuGraphExecKernelNodeSetParams(exec, target, &p), "cuGraphExecKernelNodeSetParams", what);
      built.modules.push_back(params.kernel.module());
      return;
    }
    case NodeKind::memset: {
      const CUDA_MEMSET_NODE_PARAMS p = memset_params(detail::bound_memset(node.data(), built));
      detail::check(api.cuGraphExecMemsetNodeSetParams(exec, target, &p, built.context),
                    "cuGraphExecMemsetNodeSetParams", what);
      return;
    }
    case NodeKind::memcpy_htod:
    case NodeKind::memcpy_dtoh:
    case NodeKind::memcpy_dtod: {
      const CUDA_MEMCPY3D m = copy_params(detail::bound_copy(node.data(), built));
      detail::check(api.cuGraphExecMemcpyNodeSetParams(exec, target, &m, built.context),
                    "cuGraphExecMemcpyNodeSetParams", what);
      return;
    }
    default:
      throw Error(ErrorKind::usage, "GraphExec::update",
                  "node " + node.label() + " is a " + std::string(to_string(node.kind())) +
                      " node; update(node) takes kernel, memset and memcpy nodes (update(graph) takes the rest)");
  }
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
