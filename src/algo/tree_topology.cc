// The double binary tree's topology (tree_topology.h).
#include "algo/tree_topology.h"

#include <map>

namespace braid {
namespace {

// A full binary tree over indices [lo, hi] (an odd count) whose in-order is the index order: the indices at an
// even distance from lo are the leaves, the others interior. Returns the root; fills links by index.
int buildFull(int lo, int hi, std::vector<TreeLinks>* links) {
  if (lo == hi) return lo;
  const int interior = (hi - lo) / 2;
  const int root = lo + 2 * (interior / 2) + 1;  // the middle interior index keeps both sides balanced
  const int left = buildFull(lo, root - 1, links);
  const int right = buildFull(root + 1, hi, links);
  (*links)[static_cast<size_t>(root)].down[0] = left;
  (*links)[static_cast<size_t>(root)].down[1] = right;
  (*links)[static_cast<size_t>(left)].up = root;
  (*links)[static_cast<size_t>(right)].up = root;
  return root;
}

// Tree 0 by index: odd counts are one full tree (even indices leaves); even counts put the last index (odd, so
// interior) above the full tree of the others, as its only child.
std::vector<TreeLinks> indexTree(int n) {
  std::vector<TreeLinks> links(static_cast<size_t>(n));
  if (n <= 1) return links;
  if (n % 2 == 1) {
    buildFull(0, n - 1, &links);
  } else {
    const int sub = buildFull(0, n - 2, &links);
    links[static_cast<size_t>(n - 1)].down[0] = sub;
    links[static_cast<size_t>(sub)].up = n - 1;
  }
  return links;
}

int ceilLog2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

}  // namespace

std::vector<TreeLinks> nodeBinaryTree(int nNodes, int tree) {
  if (nNodes < 1) return {};
  const std::vector<TreeLinks> base = indexTree(nNodes);
  if (tree == 0 || nNodes == 1) return base;
  // Tree 1: node k plays the part index idx(k) plays in tree 0. Mirroring (even counts) or shifting by one (odd
  // counts) turns tree 0's leaves (even indices) into tree 1's interior nodes and the reverse (with odd counts the
  // last node is a leaf in both).
  auto idx = [nNodes](int k) { return nNodes % 2 == 0 ? nNodes - 1 - k : (k + 1) % nNodes; };
  std::vector<int> nodeAt(static_cast<size_t>(nNodes));
  for (int k = 0; k < nNodes; ++k) nodeAt[static_cast<size_t>(idx(k))] = k;
  auto map = [&](int i) { return i < 0 ? -1 : nodeAt[static_cast<size_t>(i)]; };
  std::vector<TreeLinks> out(static_cast<size_t>(nNodes));
  for (int k = 0; k < nNodes; ++k) {
    const TreeLinks& b = base[static_cast<size_t>(idx(k))];
    TreeLinks& l = out[static_cast<size_t>(k)];
    l.up = map(b.up);
    // Mirroring swaps left and right; keeping the in-order sides does not matter to the schedule, only which
    // end of the parent's chain a child attaches to.
    l.down[0] = map(b.down[0]);
    l.down[1] = map(b.down[1]);
  }
  return out;
}

std::vector<int> nodesOfRanks(const std::vector<int>& order, const std::vector<uint64_t>& hostOf, int* nNodes) {
  std::vector<int> nodeOf(hostOf.size(), -1);
  std::map<uint64_t, int> index;
  for (int r : order) {
    if (r < 0 || static_cast<size_t>(r) >= hostOf.size()) continue;
    auto it = index.emplace(hostOf[static_cast<size_t>(r)], static_cast<int>(index.size())).first;
    nodeOf[static_cast<size_t>(r)] = it->second;
  }
  *nNodes = static_cast<int>(index.size());
  return nodeOf;
}

void buildRankTrees(const std::vector<int>& order, const std::vector<int>& nodeOf, int nNodes,
                    std::vector<TreeLinks> (*trees)[kNumTrees]) {
  const size_t n = nodeOf.size();
  // Each node's chain: its ranks in ring order.
  std::vector<std::vector<int>> chain(static_cast<size_t>(nNodes < 0 ? 0 : nNodes));
  for (int r : order)
    if (r >= 0 && static_cast<size_t>(r) < n && nodeOf[static_cast<size_t>(r)] >= 0 &&
        nodeOf[static_cast<size_t>(r)] < nNodes)
      chain[static_cast<size_t>(nodeOf[static_cast<size_t>(r)])].push_back(r);
  for (int t = 0; t < kNumTrees; ++t) {
    std::vector<TreeLinks>& links = (*trees)[t];
    links.assign(n, TreeLinks());
    const std::vector<TreeLinks> nodes = nodeBinaryTree(nNodes, t);
    // Tree 1 runs each chain the other way, so the two trees' reductions cross a node's links in both directions.
    auto head = [&](int k) {
      const std::vector<int>& c = chain[static_cast<size_t>(k)];
      return t == 0 ? c.front() : c.back();
    };
    auto tail = [&](int k) {
      const std::vector<int>& c = chain[static_cast<size_t>(k)];
      return t == 0 ? c.back() : c.front();
    };
    auto addDown = [&](int r, int child) {
      TreeLinks& l = links[static_cast<size_t>(r)];
      l.down[l.down[0] < 0 ? 0 : 1] = child;
      links[static_cast<size_t>(child)].up = r;
    };
    for (int k = 0; k < nNodes; ++k) {
      const std::vector<int>& c = chain[static_cast<size_t>(k)];
      if (c.empty()) continue;
      const int m = static_cast<int>(c.size());
      for (int i = 0; i + 1 < m; ++i) {
        const int from = t == 0 ? c[static_cast<size_t>(i)] : c[static_cast<size_t>(m - 1 - i)];
        const int to = t == 0 ? c[static_cast<size_t>(i + 1)] : c[static_cast<size_t>(m - 2 - i)];
        addDown(from, to);
      }
      const TreeLinks& nl = nodes[static_cast<size_t>(k)];
      // The first child node hangs off the head (after its chain child), the second off the tail: at most two
      // children per rank, and a node's inter-node traffic is spread over both ends of its chain.
      if (nl.down[0] >= 0 && !chain[static_cast<size_t>(nl.down[0])].empty()) addDown(head(k), head(nl.down[0]));
      if (nl.down[1] >= 0 && !chain[static_cast<size_t>(nl.down[1])].empty()) addDown(tail(k), head(nl.down[1]));
    }
  }
}

int treeDepthBound(int nNodes, int ranksPerNode) {
  if (nNodes < 1 || ranksPerNode < 1) return 0;
  // At most ceilLog2(nNodes) node levels above the deepest node; each costs a whole chain at worst (entering at
  // the tail), plus the deepest node's own chain.
  return (ceilLog2(nNodes) + 1) * ranksPerNode - 1;
}

void treeHops(int nNodes, int ranksPerNode, int* netHops, int* chainHops) {
  const int depth = treeDepthBound(nNodes, ranksPerNode);
  *netHops = depth > 0 ? ceilLog2(nNodes) : 0;
  *chainHops = depth - *netHops;
}

}  // namespace braid
