#include "cujit/graph_node.hpp"

#include <algorithm>
#include <atomic>
#include <map>

#include "cujit/error.hpp"
#include "cujit/graph.hpp"
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

// Parameter errors a node has, or empty; needs no driver.
std::string node_problem(const detail::NodeData& data) {
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
    const bool no_src = c->src_device == 0 && c->src_host == nullptr;
    const bool no_dst = c->dst_device == 0 && c->dst_host == nullptr;
    if (no_src || no_dst) return "a null source or destination";
  } else if (const auto* m = std::get_if<detail::MemsetParams>(&data.params)) {
    if (m->element_size != 1 && m->element_size != 2 && m->element_size != 4) {
      return "element size " + std::to_string(m->element_size) + " (expected 1, 2 or 4)";
    }
    if (m->count == 0 || m->dst == 0) return "an empty or null destination";
    if (m->element_size < 4 && m->value >> (8 * m->element_size) != 0) {
      return "value " + std::to_string(m->value) + " does not fit in " +
             std::to_string(m->element_size) + " byte(s)";
    }
  } else if (const auto* h = std::get_if<detail::HostParams>(&data.params)) {
    if (!h->fn) return "an empty host function";
  }
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
  }
  return "unknown";
}

NodeKind Node::kind() const noexcept { return data_->kind; }

std::string Node::label() const {
  if (!data_->label.empty()) return data_->label;
  std::string out(to_string(data_->kind));
  if (const auto* k = std::get_if<detail::KernelParams>(&data_->params)) {
    out += " '" + k->kernel.name() + "'";
  }
  return out + " #" + std::to_string(data_->id);
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
const Kernel& KernelNode::kernel() const noexcept { return kernel_params(*data_).kernel; }
Dim3 KernelNode::grid() const noexcept { return kernel_params(*data_).grid; }
Dim3 KernelNode::block() const noexcept { return kernel_params(*data_).block; }
unsigned KernelNode::shared_bytes() const noexcept { return kernel_params(*data_).shared_bytes; }

MemcpyHtoDNode::MemcpyHtoDNode(DevicePtr dst, const void* src, std::size_t bytes,
                               std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memcpy_htod, std::move(deps))) {
  data_->params = detail::CopyParams{dst, nullptr, 0, src, bytes};
}

MemcpyDtoHNode::MemcpyDtoHNode(void* dst, DevicePtr src, std::size_t bytes, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memcpy_dtoh, std::move(deps))) {
  data_->params = detail::CopyParams{0, dst, src, nullptr, bytes};
}

MemcpyDtoDNode::MemcpyDtoDNode(DevicePtr dst, DevicePtr src, std::size_t bytes,
                               std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memcpy_dtod, std::move(deps))) {
  data_->params = detail::CopyParams{dst, nullptr, src, nullptr, bytes};
}

MemsetNode::MemsetNode(DevicePtr dst, unsigned value, unsigned element_size, std::size_t count,
                       std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::memset, std::move(deps))) {
  data_->params = detail::MemsetParams{dst, value, element_size, count};
}

HostNode::HostNode(std::function<void()> fn, std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::host, std::move(deps))) {
  data_->params = detail::HostParams{std::move(fn)};
}

EmptyNode::EmptyNode(std::vector<Node> deps)
    : Node(detail::NodeData::make(NodeKind::empty, std::move(deps))) {}

std::vector<Node> graph_order(std::span<const Node> sinks) {
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
