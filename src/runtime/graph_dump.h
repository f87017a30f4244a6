// graph_dump: what NCCL_GRAPH_DUMP_FILE says about a communicator, as pure functions of its agreed rings and its
// ranks' hosts: the rings channel by channel and, across hosts, the double binary tree's chains, each channel as
// the GPUs of one host in the order it visits them (NCCL's graph XML, topo_graph.h).
#pragma once

#include <cstdint>
#include <vector>

#include "topology/topo_graph.h"
#include "topology/topology.h"

namespace braid {

struct CommGraphInput {
  std::vector<std::vector<int>> ringOrders;  // the agreed rings (position -> rank); channel c runs ring c % size
  int nChannels = 1;                         // ring channels
  int treeChannels = 0;                      // tree channels (0: no trees, as on a single host)
  std::vector<uint64_t> hostOf;              // each rank's host (PeerInfo::hostHash)
  uint64_t host = 0;                         // the host the graphs describe
  std::vector<int> rankGpu;                  // rank r's GPU node in `topo` (ranks on `host`), else -1
};

// Graph 0: the rings, one <channel> per ring channel, each this host's ranks from where the ring enters the host to
// where it leaves, with the NICs nearest those ends where the ring spans hosts. Graph 1 (only where the ranks span
// several hosts and treeChannels > 0): NCCL's balanced tree pattern, per tree channel two <channel>s, tree 0's
// and then tree 1's chain through this host (buildRankTrees over ring 0), head first.
std::vector<TopoGraph> commGraphs(const CommGraphInput& in, const Topology& topo, const TopoPaths& paths);

}  // namespace braid
