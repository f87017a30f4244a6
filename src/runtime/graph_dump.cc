// The rings and trees of a communicator as NCCL graphs (graph_dump.h).
#include "runtime/graph_dump.h"

#include <algorithm>
#include <set>

#include "algo/tree_topology.h"

namespace braid {
namespace {

bool onHost(const CommGraphInput& in, int r) {
  return r >= 0 && static_cast<size_t>(r) < in.hostOf.size() && in.hostOf[static_cast<size_t>(r)] == in.host;
}

// This host's ranks of ring `order`, from the position the ring enters the host (the first on-host rank whose
// predecessor is off it; position 0 where every rank is on the host).
std::vector<int> hostSegment(const CommGraphInput& in, const std::vector<int>& order) {
  const size_t n = order.size();
  size_t start = 0;
  for (size_t p = 0; p < n; ++p)
    if (onHost(in, order[p]) && !onHost(in, order[(p + n - 1) % n])) {
      start = p;
      break;
    }
  std::vector<int> seg;
  for (size_t i = 0; i < n; ++i)
    if (onHost(in, order[(start + i) % n])) seg.push_back(order[(start + i) % n]);
  return seg;
}

int gpuOf(const CommGraphInput& in, int r) {
  return r >= 0 && static_cast<size_t>(r) < in.rankGpu.size() ? in.rankGpu[static_cast<size_t>(r)] : -1;
}

// One channel through `ranks` (this host's, in visiting order), entering and leaving through NICs when `nets`.
GraphChannel channelOf(const CommGraphInput& in, const std::vector<int>& ranks, bool nets, size_t c,
                       const Topology& topo, const TopoPaths& paths, TopoGraph* g) {
  GraphChannel ch;
  for (int r : ranks) ch.gpus.push_back(graphGpuDev(topo, gpuOf(in, r)));
  if (nets && !ranks.empty()) {
    ch.netIn = graphNetDev(topo, paths, gpuOf(in, ranks.front()), c, &g->typeInter);
    ch.netOut = graphNetDev(topo, paths, gpuOf(in, ranks.back()), c, &g->typeInter);
    g->crossNic |= ch.netIn != ch.netOut;
  }
  // The worst and slowest hop between consecutive GPUs (a ring that stays on the host closes on itself).
  const size_t m = ranks.size();
  const size_t hops = nets ? (m > 0 ? m - 1 : 0) : (m > 1 ? m : 0);
  for (size_t i = 0; i < hops; ++i) {
    const int a = gpuOf(in, ranks[i]), b = gpuOf(in, ranks[(i + 1) % m]);
    if (a < 0 || b < 0 || a == b) continue;
    const TopoPath& hop = paths.between(a, b);
    if (hop.cls == PathClass::Dis) continue;
    g->typeIntra = std::max(g->typeIntra, hop.cls);
    g->speedIntra = g->speedIntra <= 0 ? hop.bw : std::min(g->speedIntra, hop.bw);
  }
  return ch;
}

}  // namespace

std::vector<TopoGraph> commGraphs(const CommGraphInput& in, const Topology& topo, const TopoPaths& paths) {
  std::vector<TopoGraph> out;
  const int n = static_cast<int>(in.hostOf.size());
  std::set<uint64_t> hosts(in.hostOf.begin(), in.hostOf.end());
  const bool spans = hosts.size() > 1;
  std::vector<std::vector<int>> orders = in.ringOrders;
  if (orders.empty()) {
    orders.emplace_back();
    for (int r = 0; r < n; ++r) orders.back().push_back(r);
  }
  TopoGraph rings;
  rings.id = 0;
  rings.pattern = kGraphPatternRing;
  const int nch = std::max(1, in.nChannels);
  for (int c = 0; c < nch; ++c) {
    const std::vector<int>& order = orders[static_cast<size_t>(c) % orders.size()];
    rings.channels.push_back(channelOf(in, hostSegment(in, order), spans, static_cast<size_t>(c), topo, paths, &rings));
  }
  // Every channel's hops share the links: each channel gets its share of the slowest.
  rings.speedIntra = std::max(0.0, rings.speedIntra) / nch;
  rings.speedInter = rings.speedIntra;
  out.push_back(std::move(rings));
  if (!spans || in.treeChannels < 1) return out;

  int nNodes = 1;
  const std::vector<int> nodeOf = nodesOfRanks(orders[0], in.hostOf, &nNodes);
  std::vector<TreeLinks> trees[kNumTrees];
  buildRankTrees(orders[0], nodeOf, nNodes, &trees);
  TopoGraph tree;
  tree.id = 1;
  tree.pattern = kGraphPatternBalancedTree;
  std::vector<int> chains[kNumTrees];
  for (int t = 0; t < kNumTrees; ++t) {
    // The head: this host's rank whose parent is elsewhere (or none); then each rank's child on this host.
    int at = -1;
    for (int r = 0; r < n && at < 0; ++r)
      if (onHost(in, r) && !onHost(in, trees[t][static_cast<size_t>(r)].up)) at = r;
    while (at >= 0 && static_cast<int>(chains[t].size()) < n) {
      chains[t].push_back(at);
      const TreeLinks& l = trees[t][static_cast<size_t>(at)];
      at = onHost(in, l.down[0]) ? l.down[0] : onHost(in, l.down[1]) ? l.down[1] : -1;
    }
  }
  for (int c = 0; c < in.treeChannels; ++c)
    for (int t = 0; t < kNumTrees; ++t)
      tree.channels.push_back(channelOf(in, chains[t], true, static_cast<size_t>(c), topo, paths, &tree));
  tree.speedIntra = std::max(0.0, tree.speedIntra) / in.treeChannels;
  tree.speedInter = tree.speedIntra;
  out.push_back(std::move(tree));
  return out;
}

}  // namespace braid
