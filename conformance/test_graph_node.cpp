// Graph nodes before any graph exists: closure, order, cycles and validation, all without
// a GPU (Node::build and graph_order plan on the host).
#include <gtest/gtest.h>

#include "cujit/graph.hpp"
#include "cujit/graph_node.hpp"
#include "support/fixtures.hpp"

namespace cujit {
namespace {

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::size_t position(const std::vector<Node>& order, const Node& node) {
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i].same_as(node)) return i;
  }
  return order.size();
}

// Fake device addresses: graph_order never dereferences them.
constexpr DevicePtr fake = 0x1000;

TEST(GraphOrder, DiamondClosureHasEachNodeOnceDependenciesFirst) {
  EmptyNode top;
  MemsetNode left(fake, 1, 4, 16, {top});
  HostNode right([] {}, {top});
  EmptyNode bottom({left, right});
  const std::vector<Node> order = graph_order(std::vector<Node>{bottom});
  ASSERT_EQ(order.size(), 4u);
  EXPECT_LT(position(order, top), position(order, left));
  EXPECT_LT(position(order, top), position(order, right));
  EXPECT_LT(position(order, left), position(order, bottom));
  EXPECT_LT(position(order, right), position(order, bottom));
}

TEST(GraphOrder, SeveralSinksShareTheirDependencies) {
  EmptyNode root;
  EmptyNode a(std::vector<Node>{root}), b(std::vector<Node>{root});
  const std::vector<Node> order = graph_order(std::vector<Node>{a, b});
  EXPECT_EQ(order.size(), 3u);
}

TEST(GraphOrder, NodesStayMutableUntilBuilt) {
  EmptyNode first;
  EmptyNode second;
  EXPECT_EQ(graph_order(std::vector<Node>{second}).size(), 1u);
  second.deps().push_back(first);
  EXPECT_EQ(graph_order(std::vector<Node>{second}).size(), 2u);
}

TEST(GraphOrder, CyclesAreRefusedNamingTheNodes) {
  EmptyNode a, b, c;
  a.set_label("alpha");
  b.set_label("beta");
  c.set_label("gamma");
  b.after(a);
  c.after(b);
  a.after(c);  // alpha -> beta -> gamma -> alpha
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{c}), ErrorKind::usage, error,
                     const std::string what = error.what();
                     EXPECT_TRUE(contains(what, "cycle")) << what;
                     EXPECT_TRUE(contains(what, "alpha")) << what;
                     EXPECT_TRUE(contains(what, "beta")) << what;
                     EXPECT_TRUE(contains(what, "gamma")) << what;);
  a.deps().clear();  // break the cycle so the handles can be freed
}

TEST(GraphOrder, SelfDependencyIsACycle) {
  EmptyNode self;
  self.after(self);
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{self}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "cycle")););
  self.deps().clear();
}

TEST(GraphOrder, EmptyGraphIsAnError) {
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "empty graph")););
}

TEST(GraphOrder, InvalidNodeParametersNameTheNode) {
  const std::vector<std::pair<Node, std::string>> cases = {
      {MemsetNode(fake, 1, 3, 4), "element size 3"},
      {MemsetNode(fake, 300, 1, 4), "does not fit"},
      {MemsetNode(0, 1, 4, 4), "null"},
      {MemcpyHtoDNode(fake, nullptr, 16), "null"},
      {MemcpyDtoDNode(fake, fake, 0), "0 bytes"},
      {HostNode(std::function<void()>{}), "empty host function"},
  };
  for (const auto& [node, fragment] : cases) {
    CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{EmptyNode({node})}), ErrorKind::usage, error,
                       EXPECT_TRUE(contains(error.what(), fragment)) << error.what();
                       EXPECT_TRUE(contains(error.what(), node.label())) << error.what(););
  }
}

TEST(GraphOrder, DeepChainsNeedNoDeepRecursion) {
  Node last = EmptyNode();
  for (int i = 0; i < 20000; ++i) last = EmptyNode({last});
  EXPECT_EQ(graph_order(std::vector<Node>{last}).size(), 20001u);
  // Unwind iteratively, so destroying the chain cannot overflow the stack either.
  while (!last.deps().empty()) {
    Node next = last.deps().front();
    last.deps().clear();
    last = next;
  }
}

}  // namespace
}  // namespace cujit
