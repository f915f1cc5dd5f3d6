#include "cujit/graph_node.hpp"

#include <algorithm>
#include <atomic>
#include <map>

#include "cujit/error.hpp"
#include "cujit/graph.hpp"
#include "driver/driver_api.hpp"
#include "graph/graph_data.hpp"

namespace cujit {
namespace detail {

std::shared_ptr<NodeData> NodeData::make(NodeKind kind, std::vector<Node> deps) {
  static std::atomic<std::uint64_t> next_id{1};
  auto data = std::make_shared<NodeData>();
  data->kind = kind;
  data->id = next_id++;
  data->deps = std::move(deps);
  return data;
}

}  // namespace detail

namespace {

constexpr const char* component = "graph";

detail::KernelParams& kernel_params(detail::NodeData& data) {
  return std::get<detail::KernelParams>(data.params);
}

bool bound(const detail::NodeData& data, detail::Binding::Slot slot) {
  return std::any_of(data.bindings.begin(), data.bindings.end(),
                     [&](const detail::Binding& b) { return b.slot == slot; });
}

// Parameter errors a node has, or empty; needs no driver.
std::string node_problem(const detail::NodeData& data) {
  for (const detail::Binding& b : data.bindings) {
    const NodeKind source = b.source.kind();
    if (source != NodeKind::mem_alloc && source != NodeKind::conditional) {
      return "binds " + b.source.label() + ", a " + std::string(to_string(source)) +
             " node; only memory allocation and conditional nodes have values to bind";
    }
    if (b.slot != detail::Binding::Slot::kernel_arg && source != NodeKind::mem_alloc) {
      return "takes an address from " + b.source.label() + ", which is not a memory allocation";
    }
    if (b.slot == detail::Binding::Slot::kernel_arg) {
      const auto& args = std::get<detail::KernelParams>(data.params).args;
      if (b.index >= args.size() || args[b.index].bytes.size() != 8) {
        return "binds argument " + std::to_string(b.index) + " to " + b.source.label() +
               ", but args() has no 8-byte placeholder there";
      }
    }
  }
  if (const auto* k = std::get_if<detail::KernelParams>(&data.params)) {
    std::vector<KernelArg> args;
    for (const ArgValue& value : k->args) args.push_back(KernelArg{value.bytes.data(), value.bytes.size()});
    try {
      k->kernel.check_args(args);
    } catch (const Error& error) {
      return error.message();
    }
    const auto zero = [](Dim3 d) { return d.x == 0 || d.y == 0 || d.z == 0; };
    if (zero(k->grid) || zero(k->block)) return "a grid or block dimension is 0";
  } else if (const auto* c = std::get_if<detail::CopyParams>(&data.params)) {
    if (c->bytes == 0) return "a copy of 0 bytes";
    const bool no_src = c->src_device == 0 && c->src_host == nullptr && !bound(data, detail::Binding::Slot::src);
    const bool no_dst = c->dst_device == 0 && c->dst_host == nullptr && !bound(data, detail::Binding::Slot::dst);
    if (no_src || no_dst) return "a null source or destination";
  } else if (const auto* m = std::get_if<detail::MemsetParams>(&data.params)) {
    if (m->element_size != 1 && m->element_size != 2 && m->element_size != 4) {
      return "element size " + std::to_string(m->element_size) + " (expected 1, 2 or 4)";
    }
    if (m->count == 0 || (m->dst == 0 && !bound(data, detail::Binding::Slot::dst))) {
      return "an empty or null destination";
    }
    if (m->element_size < 4 && m->value >> (8 * m->element_size) != 0) {
      return "value " + std::to_string(m->value) + " does not fit in " +
             std::to_string(m->element_size) + " byte(s)";
    }
  } else if (const auto* h = std::get_if<detail::HostParams>(&data.params)) {
    if (!h->fn) return "an empty host function";
  } else if (const auto* a = std::get_if<detail::AllocParams>(&data.params)) {
    if (a->bytes == 0) return "an allocation of 0 bytes";
  } else if (const auto* cond = std::get_if<detail::ConditionalParams>(&data.params)) {
    if (cond->body.empty()) return "an empty body";
  }
  return {};
}

// Bytes a bound node touches in the allocation it binds (0 for kernels: unknown).
std::size_t bytes_used(const detail::NodeData& data) {
  if (const auto* c = std::get_if<detail::CopyParams>(&data.params)) return c->bytes;
  if (const auto* m = std::get_if<detail::MemsetParams>(&data.params)) return m->count * m->element_size;
  return 0;
}

bool allowed_in_body(NodeKind kind) {
  switch (kind) {
    case NodeKind::kernel:
    case NodeKind::memcpy_htod:
    case NodeKind::memcpy_dtoh:
    case NodeKind::memcpy_dtod:
    case NodeKind::memset:
    case NodeKind::empty:
    case NodeKind::child_graph:
    case NodeKind::conditional: return true;
    default: return false;
  }
}

// What the graph being checked is nested in: the nodes of every enclosing graph and the
// conditional nodes visible to bindings. Null for a top-level graph.
struct Scope {
  const Scope* outer = nullptr;
  std::map<const detail::NodeData*, bool> outer_nodes;  // node -> is a conditional
  std::string conditional_label;
};

bool visible_conditional(const Scope* scope, const detail::NodeData* node) {
  for (; scope != nullptr; scope = scope->outer) {
    const auto found = scope->outer_nodes.find(node);
    if (found != scope->outer_nodes.end() && found->second) return true;
  }
  return false;
}

bool in_enclosing(const Scope* scope, const detail::NodeData* node) {
  for (; scope != nullptr; scope = scope->outer) {
    if (scope->outer_nodes.count(node)) return true;
  }
  return false;
}

Error usage(const std::string& message) { return Error(ErrorKind::usage, component, message); }

// Checks the rules of memory and conditional nodes over one graph's order (and recursively
// its conditional bodies). Returns the allocations of enclosing graphs bound inside it.
std::vector<Node> check_graph(const std::vector<Node>& order, const Scope* scope) {
  std::map<const detail::NodeData*, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[&order[i].data()] = i;
  Scope inner{scope, {}, {}};
  for (const Node& node : order) inner.outer_nodes[&node.data()] = node.kind() == NodeKind::conditional;
  // Allocation uses of each node: its own bindings, and those inside a conditional's body.
  std::vector<std::vector<Node>> uses(order.size());
  std::vector<Node> foreign;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Node& node = order[i];
    if (scope != nullptr) {
      if (!allowed_in_body(node.kind())) {
        throw usage("node " + node.label() + " in the body of " + scope->conditional_label +
                    ": a conditional body holds kernel, memset, memcpy, empty, child graph and "
                    "conditional nodes only");
      }
      if (in_enclosing(scope, &node.data())) {
        throw usage("node " + node.label() + " is both in the body of " + scope->conditional_label +
                    " and in a graph enclosing it");
      }
    }
    for (const detail::Binding& b : node.data().bindings) {
      if (b.source.kind() == NodeKind::conditional) {
        if (!visible_conditional(&inner, &b.source.data())) {
          throw usage("node " + node.label() + " binds " + b.source.label() +
                      ", which is not in its graph or a graph enclosing it");
        }
      } else {
        uses[i].push_back(b.source);
        const auto& alloc = std::get<detail::AllocParams>(b.source.data().params);
        if (bytes_used(node.data()) > alloc.bytes) {
          throw usage("node " + node.label() + " uses " + std::to_string(bytes_used(node.data())) +
                      " bytes of " + b.source.label() + ", which has " + std::to_string(alloc.bytes));
        }
      }
    }
    if (const auto* c = std::get_if<detail::ConditionalParams>(&node.data().params)) {
      Scope body_scope = inner;
      body_scope.outer = scope;
      body_scope.conditional_label = node.label();
      const std::vector<Node> body = detail::order_nodes(c->body);
      for (Node& used : check_graph(body, &body_scope)) uses[i].push_back(std::move(used));
    }
  }
  // Frees of each allocation.
  std::map<const detail::NodeData*, std::vector<std::size_t>> frees;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (const auto* f = std::get_if<detail::FreeParams>(&order[i].data().params)) {
      frees[&f->allocation.data()].push_back(i);
    }
  }
  for (const Node& node : order) {
    if (node.kind() != NodeKind::mem_alloc) continue;
    const auto& f = frees[&node.data()];
    if (f.empty()) {
      throw usage("allocation " + node.label() + " is never freed in its graph (add a MemFreeNode after its uses)");
    }
    if (f.size() > 1) {
      throw usage("allocation " + node.label() + " is freed twice, by " + order[f[0]].label() + " and " +
                  order[f[1]].label());
    }
  }
  // Whether `before` is on a dependency path of `node` (iterative, each node once).
  const auto depends_on = [](const Node& node, const Node& before) {
    std::vector<const Node*> stack{&node};
    std::map<const detail::NodeData*, bool> seen;
    while (!stack.empty()) {
      const Node* at = stack.back();
      stack.pop_back();
      for (const Node& dep : at->deps()) {
        if (dep.same_as(before)) return true;
        if (!seen.emplace(&dep.data(), true).second) continue;
        stack.push_back(&dep);
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (const Node& alloc : uses[i]) {
      const auto at = position.find(&alloc.data());
      if (at == position.end()) {
        if (scope == nullptr) {
          throw usage("node " + order[i].label() + " uses allocation " + alloc.label() +
                      ", which is not in this graph");
        }
        foreign.push_back(alloc);
        continue;
      }
      if (!depends_on(order[i], order[at->second])) {
        throw usage("node " + order[i].label() + " uses allocation " + alloc.label() +
                    " but does not depend on it");
      }
      const std::size_t free_at = frees[&alloc.data()].front();
      if (depends_on(order[i], order[free_at])) {
        throw usage("node " + order[i].label() + " uses allocation " + alloc.label() +
                    " after its free node " + order[free_at].label());
      }
      if (!depends_on(order[free_at], order[i])) {
        throw usage("node " + order[i].label() + " uses allocation " + alloc.label() +
                    " but its free node " + order[free_at].label() + " does not depend on it (it may run first)");
      }
    }
  }
  return foreign;
}

std::string kernel_label_suffix(const detail::NodeData& data) {
  if (const auto* k = std::get_if<detail::KernelParams>(&data.params)) return " '" + k->kernel.name() + "'";
  return {};
}

}  // namespace

std::string_view to_string(NodeKind kind) noexcept {
  switch (kind) {
    case NodeKind::kernel: return "kernel";
    case NodeKind::memcpy_htod: return "memcpy host-to-device";
    case NodeKind::memcpy_dtoh: return "memcpy device-to-host";
    case NodeKind::memcpy_dtod: return "memcpy device-to-device";
    case NodeKind::memset: return "memset";
    case NodeKind::host: return "host";
    case NodeKind::empty: return "empty";
    case NodeKind::child_graph: return "child graph";
    case NodeKind::event_record: return "event record";
    case NodeKind::event_wait: return "event wait";
    case NodeKind::mem_alloc: return "memory allocation";
    case NodeKind::mem_free: return "memory free";
    case NodeKind::conditional: return "conditional";
  }
  return "unknown";
}

NodeKind Node::kind() const noexcept { return data_->kind; }

std::string Node::label() const {
  if (!data_->label.empty()) return data_->label;
  return std::string(to_string(data_->kind)) + kernel_label_suffix(*data_) + " #" +
         std::to_string(data_->id);
}

Node& Node::set_label(std::string label) {
  data_->label = std::move(label);
  return *this;
}

std::vector<Node>& Node::deps() noexcept { return data_->deps; }
const std::vector<Node>& Node::deps() const noexcept { return data_->deps; }

Node& Node::after(Node dependency) {
  data_->deps.push_back(std::move(dependency));
  return *this;
}

Graph Node::build() const { return build_graph(std::span<const Node>(this, 1)); }

KernelNode::KernelNode(Kernel kernel, std::vector<ArgValue> args, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::kernel, std::move(deps))) {
  data_->params = detail::KernelParams{std::move(kernel), std::move(args), Dim3{}, Dim3{}, 0};
}

KernelNode& KernelNode::launch(Dim3 grid, Dim3 block, unsigned shared_bytes) {
  auto& k = kernel_params(*data_);
  k.grid = grid;
  k.block = block;
  k.shared_bytes = shared_bytes;
  return *this;
}

std::vector<ArgValue>& KernelNode::args() noexcept { return kernel_params(*data_).args; }

KernelNode& KernelNode::bind(std::size_t index, const Node& source) {
  auto& bindings = data_->bindings;
  bindings.erase(std::remove_if(bindings.begin(), bindings.end(),
                                [&](const detail::Binding& b) { return b.index == index; }),
                 bindings.end());
  bindings.push_back(detail::Binding{detail::Binding::Slot::kernel_arg, index, source});
  return *this;
}
const Kernel& KernelNode::kernel() const noexcept { return kernel_params(*data_).kernel; }
Dim3 KernelNode::grid() const noexcept { return kernel_params(*data_).grid; }
Dim3 KernelNode::block() const noexcept { return kernel_params(*data_).block; }
unsigned KernelNode::shared_bytes() const noexcept { return kernel_params(*data_).shared_bytes; }

MemcpyHtoDNode::MemcpyHtoDNode(DevicePtr dst, const void* src, std::size_t bytes,
                               std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memcpy_htod, std::move(deps))) {
  data_->params = detail::CopyParams{dst, nullptr, 0, src, bytes};
}

MemcpyHtoDNode::MemcpyHtoDNode(const MemAllocNode& dst, const void* src, std::size_t bytes,
                               std::vector<Node> deps)
    : MemcpyHtoDNode(DevicePtr{0}, src, bytes, std::move(deps)) {
  data_->bindings.push_back(detail::Binding{detail::Binding::Slot::dst, 0, dst});
}

MemcpyHtoDNode& MemcpyHtoDNode::set(DevicePtr dst, const void* src, std::size_t bytes) {
  data_->params = detail::CopyParams{dst, nullptr, 0, src, bytes};
  data_->bindings.clear();
  return *this;
}

MemcpyDtoHNode::MemcpyDtoHNode(void* dst, DevicePtr src, std::size_t bytes, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memcpy_dtoh, std::move(deps))) {
  data_->params = detail::CopyParams{0, dst, src, nullptr, bytes};
}

MemcpyDtoHNode::MemcpyDtoHNode(void* dst, const MemAllocNode& src, std::size_t bytes, std::vector<Node> deps)
    : MemcpyDtoHNode(dst, DevicePtr{0}, bytes, std::move(deps)) {
  data_->bindings.push_back(detail::Binding{detail::Binding::Slot::src, 0, src});
}

MemcpyDtoHNode& MemcpyDtoHNode::set(void* dst, DevicePtr src, std::size_t bytes) {
  data_->params = detail::CopyParams{0, dst, src, nullptr, bytes};
  data_->bindings.clear();
  return *this;
}

MemcpyDtoDNode::MemcpyDtoDNode(DevicePtr dst, DevicePtr src, std::size_t bytes,
                               std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memcpy_dtod, std::move(deps))) {
  data_->params = detail::CopyParams{dst, nullptr, src, nullptr, bytes};
}

MemcpyDtoDNode& MemcpyDtoDNode::set(DevicePtr dst, DevicePtr src, std::size_t bytes) {
  data_->params = detail::CopyParams{dst, nullptr, src, nullptr, bytes};
  return *this;
}

MemsetNode::MemsetNode(DevicePtr dst, unsigned value, unsigned element_size, std::size_t count,
                       std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memset, std::move(deps))) {
  data_->params = detail::MemsetParams{dst, value, element_size, count};
}

MemsetNode::MemsetNode(const MemAllocNode& dst, unsigned value, unsigned element_size, std::size_t count,
                       std::vector<Node> deps)
    : MemsetNode(DevicePtr{0}, value, element_size, count, std::move(deps)) {
  data_->bindings.push_back(detail::Binding{detail::Binding::Slot::dst, 0, dst});
}

MemsetNode& MemsetNode::set(DevicePtr dst, unsigned value, unsigned element_size, std::size_t count) {
  data_->params = detail::MemsetParams{dst, value, element_size, count};
  data_->bindings.clear();
  return *this;
}

HostNode::HostNode(std::function<void()> fn, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::host, std::move(deps))) {
  data_->params = detail::HostParams{std::move(fn)};
}

EmptyNode::EmptyNode(std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::empty, std::move(deps))) {}

// ---- events ----------------------------------------------------------------------------

detail::EventData::~EventData() {
  if (event != nullptr) {
    if (const auto* api = try_driver()) api->cuEventDestroy(event);
  }
}

Event::Event() : data_(std::make_shared<detail::EventData>()) {
  detail::ensure_context();
  detail::check(detail::driver().cuEventCreate(&data_->event, CU_EVENT_DISABLE_TIMING), "cuEventCreate",
                "creating an event");
}

void Event::synchronize() const {
  detail::check(detail::driver().cuEventSynchronize(data_->event), "cuEventSynchronize",
                "waiting for an event");
}

bool Event::done() const {
  const CUresult result = detail::driver().cuEventQuery(data_->event);
  if (result == CUDA_ERROR_NOT_READY) return false;
  detail::check(result, "cuEventQuery", "querying an event");
  return true;
}

void* Event::handle() const noexcept { return data_->event; }

// ---- nodes of issue 18 -------------------------------------------------------------------

ChildGraphNode::ChildGraphNode(const Graph& graph, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::child_graph, std::move(deps))) {
  if (graph.handle() == nullptr) throw usage("a child graph node of a destroyed graph");
  data_->params = detail::ChildParams{graph.resources_};
}

EventRecordNode::EventRecordNode(Event event, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::event_record, std::move(deps))) {
  data_->params = detail::EventParams{event.data_};
}

EventWaitNode::EventWaitNode(Event event, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::event_wait, std::move(deps))) {
  data_->params = detail::EventParams{event.data_};
}

MemAllocNode::MemAllocNode(std::size_t bytes, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::mem_alloc, std::move(deps))) {
  data_->params = detail::AllocParams{bytes};
}

std::size_t MemAllocNode::bytes() const noexcept { return std::get<detail::AllocParams>(data_->params).bytes; }

MemFreeNode::MemFreeNode(const MemAllocNode& allocation, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::mem_free, std::move(deps))) {
  data_->deps.push_back(allocation);
  data_->params = detail::FreeParams{allocation};
}

ConditionalNode::ConditionalNode(ConditionalKind kind, std::vector<Node> body, unsigned default_value,
                                 std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::conditional, std::move(deps))) {
  data_->params = detail::ConditionalParams{kind, std::move(body), default_value};
}

ConditionalKind ConditionalNode::conditional_kind() const noexcept {
  return std::get<detail::ConditionalParams>(data_->params).kind;
}

std::vector<Node>& ConditionalNode::body() noexcept {
  return std::get<detail::ConditionalParams>(data_->params).body;
}

std::vector<Node> graph_order(std::span<const Node> sinks) {
  std::vector<Node> order = detail::order_nodes(sinks);
  (void)check_graph(order, nullptr);
  return order;
}

std::vector<Node> detail::order_nodes(std::span<const Node> sinks) {
  if (sinks.empty()) {
    throw Error(ErrorKind::usage, component, "an empty graph: build() needs at least one node");
  }
  enum class Mark { visiting, done };
  std::map<const detail::NodeData*, Mark> marks;
  std::vector<Node> order;
  std::vector<Node> path;  // the nodes being visited, for the cycle message
  // Depth-first, dependencies first; iterative so deep chains cannot overflow the stack.
  struct Frame {
    Node node;
    std::size_t next_dep;
  };
  for (const Node& sink : sinks) {
    if (marks.count(&sink.data())) continue;
    std::vector<Frame> stack{{sink, 0}};
    marks[&sink.data()] = Mark::visiting;
    path.push_back(sink);
    while (!stack.empty()) {
      Frame& frame = stack.back();
      const auto& deps = frame.node.deps();
      if (frame.next_dep < deps.size()) {
        const Node dep = deps[frame.next_dep++];
        const auto found = marks.find(&dep.data());
        if (found == marks.end()) {
          marks[&dep.data()] = Mark::visiting;
          path.push_back(dep);
          stack.push_back({dep, 0});
        } else if (found->second == Mark::visiting) {
          std::string cycle;
          bool in_cycle = false;
          for (const Node& n : path) {
            in_cycle = in_cycle || n.same_as(dep);
            if (in_cycle) cycle += n.label() + " -> ";
          }
          throw Error(ErrorKind::usage, component, "a dependency cycle: " + cycle + dep.label());
        }
        continue;
      }
      if (const std::string problem = node_problem(frame.node.data()); !problem.empty()) {
        throw Error(ErrorKind::usage, component, "node " + frame.node.label() + ": " + problem);
      }
      marks[&frame.node.data()] = Mark::done;
      order.push_back(frame.node);
      path.pop_back();
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace cujit
