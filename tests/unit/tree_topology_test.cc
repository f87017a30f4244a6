// The double binary tree's topology (src/algo/tree_topology.h): for 1-64 nodes of 1-8 ranks, in rank order and in
// shuffled orders, every rank is reached once per tree, the links agree both ways, no rank has more than two
// children, depth stays within the bound, and no node is interior in both node trees.
#include "algo/tree_topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

namespace braid {

bool operator==(const TreeLinks& a, const TreeLinks& b) {
  return a.up == b.up && a.down[0] == b.down[0] && a.down[1] == b.down[1];
}

namespace {

// Checks one tree over `n` members: links mutual, one root, every member reached from it exactly once (so no
// cycles), at most kTreeArity children. Returns the depth (edges on the longest root-to-leaf path) or -1.
int checkTree(const std::vector<TreeLinks>& links, const char* what) {
  const int n = static_cast<int>(links.size());
  int root = -1;
  for (int r = 0; r < n; ++r) {
    const TreeLinks& l = links[static_cast<size_t>(r)];
    if (l.up < 0) {
      EXPECT_EQ(root, -1) << what << ": two roots, " << root << " and " << r;
      root = r;
    } else {
      EXPECT_TRUE(l.up < n && l.up != r) << what << ": member " << r << " has parent " << l.up;
      if (l.up >= n || l.up == r) return -1;
      const TreeLinks& p = links[static_cast<size_t>(l.up)];
      EXPECT_TRUE(p.down[0] == r || p.down[1] == r) << what << ": " << r << "'s parent " << l.up << " lacks it";
    }
    EXPECT_FALSE(l.down[0] < 0 && l.down[1] >= 0) << what << ": member " << r << " fills its second child only";
    EXPECT_NE(l.down[0], l.down[1] >= 0 ? l.down[1] : -2) << what << ": member " << r << " has a child twice";
    for (int c : l.down)
      if (c >= 0) {
        EXPECT_LT(c, n) << what;
        if (c < n) EXPECT_EQ(links[static_cast<size_t>(c)].up, r) << what << ": child " << c << " of " << r;
      }
  }
  EXPECT_GE(root, 0) << what << ": no root";
  if (root < 0) return -1;
  std::vector<int> seen(static_cast<size_t>(n), 0);
  std::vector<std::pair<int, int>> stack{{root, 0}};
  int depth = 0;
  while (!stack.empty()) {
    const auto [r, d] = stack.back();
    stack.pop_back();
    if (++seen[static_cast<size_t>(r)] > 1) {
      ADD_FAILURE() << what << ": member " << r << " reached twice";
      return -1;
    }
    depth = std::max(depth, d);
    for (int c : links[static_cast<size_t>(r)].down)
      if (c >= 0 && c < n) stack.push_back({c, d + 1});
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)], 1) << what << ": member " << r;
  return depth;
}

int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

TEST(TreeTopology, NodeTreesAreBalancedAndComplementary) {
  for (int k = 1; k <= 64; ++k) {
    const std::vector<TreeLinks> t0 = nodeBinaryTree(k, 0), t1 = nodeBinaryTree(k, 1);
    ASSERT_EQ(t0.size(), static_cast<size_t>(k));
    ASSERT_EQ(t1.size(), static_cast<size_t>(k));
    const std::string w0 = "nodes " + std::to_string(k) + " tree 0", w1 = "nodes " + std::to_string(k) + " tree 1";
    EXPECT_LE(checkTree(t0, w0.c_str()), ceilLog2(k)) << w0;
    EXPECT_LE(checkTree(t1, w1.c_str()), ceilLog2(k)) << w1;
    int interiorBoth = 0, leafBoth = 0;
    for (int n = 0; n < k; ++n) {
      const bool i0 = t0[static_cast<size_t>(n)].nDown() > 0, i1 = t1[static_cast<size_t>(n)].nDown() > 0;
      interiorBoth += i0 && i1;
      leafBoth += !i0 && !i1;
    }
    EXPECT_EQ(interiorBoth, 0) << k << " nodes";
    // Every node forwards in one tree, except the one left over when the count is odd.
    EXPECT_LE(leafBoth, k % 2) << k << " nodes";
    if (k > 1) EXPECT_NE(t0, t1) << k;
  }
}

// Builds and checks both rank trees for nodes x ranks-per-node ranks placed by `hostOf` in ring order `order`.
void checkRankTrees(const std::vector<int>& order, const std::vector<uint64_t>& hostOf, int nodes, int perNode) {
  int nNodes = 0;
  const std::vector<int> nodeOf = nodesOfRanks(order, hostOf, &nNodes);
  ASSERT_EQ(nNodes, nodes);
  std::vector<TreeLinks> trees[kNumTrees];
  buildRankTrees(order, nodeOf, nNodes, &trees);
  const std::string what = std::to_string(nodes) + " nodes x " + std::to_string(perNode);
  for (int t = 0; t < kNumTrees; ++t) {
    ASSERT_EQ(trees[t].size(), order.size());
    const std::string w = what + " tree " + std::to_string(t);
    const int depth = checkTree(trees[t], w.c_str());
    EXPECT_GE(depth, 0) << w;
    EXPECT_LE(depth, treeDepthBound(nodes, perNode)) << w;
    // A node's ranks form a chain: within a node every rank but one has its parent on the node.
    std::vector<int> rootsPerNode(static_cast<size_t>(nodes), 0);
    for (size_t r = 0; r < order.size(); ++r) {
      const int up = trees[t][r].up;
      if (up < 0 || nodeOf[static_cast<size_t>(up)] != nodeOf[r]) ++rootsPerNode[static_cast<size_t>(nodeOf[r])];
      int sameNodeChildren = 0;
      for (int c : trees[t][r].down)
        if (c >= 0 && nodeOf[static_cast<size_t>(c)] == nodeOf[r]) ++sameNodeChildren;
      EXPECT_LE(sameNodeChildren, 1) << w << " rank " << r;
    }
    for (int k = 0; k < nodes; ++k) EXPECT_EQ(rootsPerNode[static_cast<size_t>(k)], 1) << w << " node " << k;
  }
  // The trees differ wherever there is a choice.
  if (order.size() > 1) EXPECT_NE(trees[0], trees[1]) << what;
}

std::vector<uint64_t> hostsByBlock(int nodes, int perNode) {
  std::vector<uint64_t> h;
  for (int k = 0; k < nodes; ++k)
    for (int i = 0; i < perNode; ++i) h.push_back(0x1000 + static_cast<uint64_t>(k) * 7919);
  return h;
}

TEST(TreeTopology, RankTreesOverNodesAndChains) {
  for (int nodes = 1; nodes <= 64; ++nodes) {
    for (int perNode = 1; perNode <= 8; ++perNode) {
      const int n = nodes * perNode;
      std::vector<int> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      checkRankTrees(order, hostsByBlock(nodes, perNode), nodes, perNode);
      if (HasFailure()) return;
    }
  }
}

// Nodes whose ranks interleave in rank number (NCCL_HOSTID per rank parity), and an arbitrary ring order: the trees
// still span every rank, each node's ranks in one chain.
TEST(TreeTopology, InterleavedHostsAndShuffledOrders) {
  std::mt19937 rng(43);
  for (int nodes : {2, 3, 5, 8, 13}) {
    for (int perNode : {1, 2, 3, 8}) {
      const int n = nodes * perNode;
      std::vector<uint64_t> hostOf(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) hostOf[static_cast<size_t>(r)] = 100 + static_cast<uint64_t>(r % nodes);
      std::vector<int> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      checkRankTrees(order, hostOf, nodes, perNode);
      if (HasFailure()) return;
    }
  }
}

// Small cases spelled out: one node is a chain in ring order (reversed in tree 1); two single-rank nodes make each
// rank the root of one tree.
TEST(TreeTopology, SmallCasesByHand) {
  std::vector<TreeLinks> trees[kNumTrees];
  int nNodes = 0;
  const std::vector<int> order{2, 0, 1};
  std::vector<int> nodeOf = nodesOfRanks(order, {7, 7, 7}, &nNodes);
  buildRankTrees(order, nodeOf, nNodes, &trees);
  ASSERT_EQ(nNodes, 1);
  EXPECT_EQ(trees[0][2].up, -1);
  EXPECT_EQ(trees[0][2].down[0], 0);
  EXPECT_EQ(trees[0][0].down[0], 1);
  EXPECT_EQ(trees[0][1].nDown(), 0);
  EXPECT_EQ(trees[1][1].up, -1);
  EXPECT_EQ(trees[1][1].down[0], 0);
  EXPECT_EQ(trees[1][0].down[0], 2);
  EXPECT_EQ(trees[1][2].nDown(), 0);

  const std::vector<int> two{0, 1};
  nodeOf = nodesOfRanks(two, {5, 6}, &nNodes);
  buildRankTrees(two, nodeOf, nNodes, &trees);
  ASSERT_EQ(nNodes, 2);
  EXPECT_EQ(trees[0][0].up, 1);
  EXPECT_EQ(trees[0][1].up, -1);
  EXPECT_EQ(trees[1][0].up, -1);
  EXPECT_EQ(trees[1][1].up, 0);
}

}  // namespace
}  // namespace braid
