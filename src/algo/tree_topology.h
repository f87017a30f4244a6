// The double binary tree all-reduce's topology (docs/DESIGN.md §2, "Trees"): for every rank, its parent and up
// to two children in each of two trees. Pure functions of the agreed ring order and each rank's node, so every
// rank builds the same trees and connects the same pairs.
//
// Across nodes, each tree is a binary tree over the nodes whose in-order is the node index, leaves on one parity
// of index and interior nodes on the other; tree 1 is tree 0 mirrored (even node count) or shifted by one (odd),
// which swaps the parities, so a node is interior in at most one tree and the two trees load the nodes' links
// evenly. Inside a node the ranks form a chain in ring order (reversed in tree 1); the node's parent attaches to
// the chain's head, its first child node to the head and its second child node to the chain's tail, so no rank
// has more than two children.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braid {

constexpr int kNumTrees = 2;
constexpr int kTreeArity = 2;

// One rank's (or node's) place in one tree: -1 where there is none.
struct TreeLinks {
  int up = -1;
  int down[kTreeArity] = {-1, -1};
  int nDown() const { return (down[0] >= 0 ? 1 : 0) + (down[1] >= 0 ? 1 : 0); }
};

// Tree `tree` (0 or 1) over nNodes nodes: entry k is node k's parent and children (node indices). The root is the
// entry without a parent.
std::vector<TreeLinks> nodeBinaryTree(int nNodes, int tree);

// The nodes of ranks whose hosts are hostOf[r] (any value naming a host), numbered in the order their first rank
// appears in `order` (position -> rank).
std::vector<int> nodesOfRanks(const std::vector<int>& order, const std::vector<uint64_t>& hostOf, int* nNodes);

// Both trees over ranks: (*trees)[t][r] is rank r's place in tree t (rank numbers). `order` is the agreed ring
// order (position -> rank, a permutation), nodeOf[r] rank r's node in [0, nNodes) (nodesOfRanks).
void buildRankTrees(const std::vector<int>& order, const std::vector<int>& nodeOf, int nNodes,
                    std::vector<TreeLinks> (*trees)[kNumTrees]);

// The most rank-to-rank hops from a leaf to the root the trees can have with nNodes nodes of at most
// ranksPerNode ranks: what the cost model counts per direction.
int treeDepthBound(int nNodes, int ranksPerNode);
// The same bound split by what each hop crosses: *netHops between nodes (one per node level) and *chainHops
// inside the nodes; their sum is treeDepthBound.
void treeHops(int nNodes, int ranksPerNode, int* netHops, int* chainHops);

}  // namespace braid
