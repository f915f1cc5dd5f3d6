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

// ---- memory nodes (issue 18): every allocation freed once, after its uses ----------------

TEST(GraphMemoryNodes, AChainOfAllocationUsesAndFreePlansInOrder) {
  MemAllocNode alloc(64);
  MemsetNode set(alloc, 7, 4, 16, {alloc});
  int host[16] = {};
  MemcpyDtoHNode back(host, alloc, sizeof host, {set});
  MemFreeNode free_it(alloc, {back});
  const std::vector<Node> order = graph_order(std::vector<Node>{free_it});
  ASSERT_EQ(order.size(), 4u);
  EXPECT_LT(position(order, alloc), position(order, set));
  EXPECT_LT(position(order, back), position(order, free_it));
  EXPECT_EQ(alloc.bytes(), 64u);
}

TEST(GraphMemoryNodes, AnAllocationNeverFreedIsRefused) {
  MemAllocNode alloc(64);
  alloc.set_label("scratch");
  MemsetNode set(alloc, 0, 4, 16, {alloc});
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{set}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "scratch is never freed")) << error.what(););
}

TEST(GraphMemoryNodes, AnAllocationFreedTwiceIsRefused) {
  MemAllocNode alloc(64);
  MemFreeNode first(alloc), second(alloc, {first});
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{second}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "freed twice")) << error.what(););
}

TEST(GraphMemoryNodes, AUseAfterTheFreeIsRefused) {
  MemAllocNode alloc(64);
  MemFreeNode free_it(alloc);
  MemsetNode late(alloc, 0, 4, 16, {free_it});
  late.set_label("late memset");
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{late}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "late memset")) << error.what();
                     EXPECT_TRUE(contains(error.what(), "after its free node")) << error.what(););
}

TEST(GraphMemoryNodes, AUseTheFreeDoesNotWaitForIsRefused) {
  MemAllocNode alloc(64);
  MemsetNode set(alloc, 0, 4, 16, {alloc});
  MemFreeNode free_it(alloc);  // depends on the allocation only: may run before the memset
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{set, free_it}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "may run first")) << error.what(););
}

TEST(GraphMemoryNodes, AUseNotAfterTheAllocationIsRefused) {
  MemAllocNode alloc(64);
  MemsetNode early(alloc, 0, 4, 16);
  MemFreeNode free_it(alloc, {early});
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{free_it}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "does not depend on it")) << error.what(););
}

TEST(GraphMemoryNodes, AnAllocationOfAnotherGraphIsRefused) {
  MemAllocNode alloc(64);
  MemsetNode set(alloc, 0, 4, 16);  // neither depends on the allocation nor is freed with it
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{set}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "not in this graph")) << error.what(););
}

TEST(GraphMemoryNodes, UsesLargerThanTheAllocationAndEmptyAllocationsAreRefused) {
  MemAllocNode alloc(16);
  MemsetNode set(alloc, 0, 4, 5, {alloc});
  MemFreeNode free_it(alloc, {set});
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{free_it}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "uses 20 bytes")) << error.what(););
  MemAllocNode empty(0);
  MemFreeNode free_empty(empty);
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{free_empty}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "0 bytes")) << error.what(););
}

// ---- conditional nodes: bodies ---------------------------------------------------------

TEST(GraphConditionalNodes, BodiesHoldOnlyTheKindsTheDriverAllows) {
  MemAllocNode alloc(16);
  MemFreeNode free_it(alloc);
  // The free's allocation (its dependency) is the first node the check meets.
  const std::vector<std::pair<Node, std::string>> refused = {
      {HostNode([] {}), "node host #"},
      {free_it, "node memory allocation #"},
  };
  for (const auto& [body_node, named] : refused) {
    ConditionalNode cond(ConditionalKind::if_then, {body_node});
    CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{cond}), ErrorKind::usage, error,
                       EXPECT_TRUE(contains(error.what(), named)) << error.what();
                       EXPECT_TRUE(contains(error.what(), "in the body of " + cond.label())) << error.what();
                       EXPECT_TRUE(contains(error.what(), "conditional body holds")) << error.what(););
  }
  ConditionalNode fine(ConditionalKind::while_loop, {MemsetNode(fake, 0, 4, 1), EmptyNode()});
  EXPECT_EQ(graph_order(std::vector<Node>{fine}).size(), 1u);
  EXPECT_EQ(fine.conditional_kind(), ConditionalKind::while_loop);
}

TEST(GraphConditionalNodes, AnEmptyBodyIsRefused) {
  ConditionalNode cond(ConditionalKind::if_then, {});
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{cond}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "empty body")) << error.what(););
}

TEST(GraphConditionalNodes, ABodyNodeAlsoInTheEnclosingGraphIsRefused) {
  EmptyNode shared;
  ConditionalNode cond(ConditionalKind::if_then, {}, 0, {shared});
  cond.body().push_back(shared);
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{cond}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), "both in the body")) << error.what(););
}

TEST(GraphConditionalNodes, AllocationsUsedInABodyFollowTheEnclosingGraphsRules) {
  MemAllocNode alloc(16);
  // The body's memset uses the allocation: the conditional node must come after the
  // allocation and before its free.
  ConditionalNode ordered(ConditionalKind::if_then, {MemsetNode(alloc, 0, 4, 4)}, 1, {alloc});
  MemFreeNode free_it(alloc, {ordered});
  EXPECT_EQ(graph_order(std::vector<Node>{free_it}).size(), 3u);

  MemAllocNode other(16);
  ConditionalNode unordered(ConditionalKind::if_then, {MemsetNode(other, 0, 4, 4)}, 1, {other});
  MemFreeNode free_other(other);
  CUJIT_EXPECT_ERROR(graph_order(std::vector<Node>{unordered, free_other}), ErrorKind::usage, error,
                     EXPECT_TRUE(contains(error.what(), unordered.label())) << error.what();
                     EXPECT_TRUE(contains(error.what(), "may run first")) << error.what(););
}

TEST(GraphNodeKinds, EveryKindHasAName) {
  for (NodeKind kind : {NodeKind::child_graph, NodeKind::event_record, NodeKind::event_wait,
                        NodeKind::mem_alloc, NodeKind::mem_free, NodeKind::conditional}) {
    EXPECT_NE(to_string(kind), "unknown");
  }
  EXPECT_EQ(to_string(NodeKind::mem_alloc), "memory allocation");
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
