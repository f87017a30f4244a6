// topo_paths: the best path between every pair of GPU and NET nodes of one host, in NCCL's path classes, and the
// NICs nearest to each GPU (see topology.h).
//
// A path's class is the worst of what its links give it, by NCCL's rules:
//   NVLink (to a GPU, an NVSwitch or a CPU)             NVL  (GPU -> NVSwitch -> GPU stays NVL)
//   any link between two PCI nodes (switch to switch)    PXB  (also the LOC pcilink of a Broadcom switch's halves)
//   PCI with a CPU at either end (the host bridge)       PHB
//   other PCI (a GPU or NIC to its switch)               PIX  (so GPU -> switch -> GPU is PIX)
//   SYS (CPU to CPU)                                     SYS
//   a NIC to its port (NET link), other LOC links        LOC  (a GPU-NET path is the PCI path to the NIC)
// Routes never pass through a NET node, and pass through a GPU only as NVB: GPU -NVLink-> GPU -NVLink-> GPU, one
// GPU in between, from a GPU (NCCL's rule; NCCL_NVB_DISABLE is the caller's business). Between NICs of different
// hosts there is no path here: a host's topology holds only its own NICs.
//
// Of all allowed routes the one of the best class wins, then the widest of that class (the largest bandwidth of its
// slowest link), then the one with fewer hops: NCCL's order. Widest first would make a DGX-1's single-NVLink pairs
// NVB through a double-NVLink neighbour, which NCCL never does. Parallel links of one kind between the same two
// nodes add up, as NCCL's builder merges them (an NVLink listed once per lane carries their sum).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/result.h"
#include "topology/topology.h"

namespace braid {
namespace {

// NCCL's LOC_BW: a node to itself is never anyone's bottleneck.
constexpr double kLocBw = 5000.0;

struct Edge {
  int peer;
  TopoLinkKind kind;
  double bw;
  PathClass cls;  // what crossing this link does to a path's class
};

PathClass linkClass(const Topology& topo, int from, int to, TopoLinkKind kind) {
  const TopoKind a = topo.nodes[from].kind, b = topo.nodes[to].kind;
  // Whatever joins them: the pcilink between two halves of one Broadcom switch (a LOC link) is PXB in NCCL too.
  if (a == TopoKind::Pci && b == TopoKind::Pci) return PathClass::Pxb;
  switch (kind) {
    case TopoLinkKind::Loc:
    case TopoLinkKind::Net:
      return PathClass::Loc;
    case TopoLinkKind::Nvl:
      return PathClass::Nvl;
    case TopoLinkKind::Sys:
      return PathClass::Sys;
    case TopoLinkKind::Pci:
      break;
  }
  if (a == TopoKind::Cpu || b == TopoKind::Cpu) return PathClass::Phb;
  return PathClass::Pix;
}

// Each node's outgoing links, parallel links of one kind merged; links without bandwidth carry nothing and are
// left out.
ncclResult_t buildEdges(const Topology& topo, std::vector<std::vector<Edge>>* out) {
  const int n = static_cast<int>(topo.nodes.size());
  out->assign(n, {});
  for (int a = 0; a < n; ++a) {
    for (const TopoLink& l : topo.nodes[a].links) {
      if (l.peer < 0 || l.peer >= n)
        return recordError(ncclInvalidArgument, "topology: a link of node %d (%s) leads to node %d of %d", a,
                           topo.nodes[a].busId.c_str(), l.peer, n);
      if (!(l.bw >= 0) || std::isinf(l.bw))
        return recordError(ncclInvalidArgument, "topology: the link from node %d to node %d has bandwidth %g", a,
                           l.peer, l.bw);
      if (l.bw == 0 || l.peer == a) continue;
      std::vector<Edge>& edges = (*out)[a];
      auto same =
          std::find_if(edges.begin(), edges.end(), [&](const Edge& e) { return e.peer == l.peer && e.kind == l.kind; });
      if (same != edges.end()) {
        same->bw += l.bw;
      } else {
        edges.push_back({l.peer, l.kind, l.bw, linkClass(topo, a, l.peer, l.kind)});
      }
    }
  }
  return ncclSuccess;
}

bool isEndpoint(TopoKind k) { return k == TopoKind::Gpu || k == TopoKind::Net; }

// Whether candidate path (cls, bw, hops) beats `cur` by the order above.
bool better(PathClass cls, double bw, int hops, const TopoPath& cur) {
  if (cls != cur.cls) return cls < cur.cls;
  if (bw != cur.bw) return bw > cur.bw;
  return hops < cur.hops;
}

// Paths from `src` to every node, NVB aside. For each class c, from the best, and each bandwidth t, from the
// highest, a breadth-first search over the links of class at most c and bandwidth at least t: a node first reached
// at (c, t) has best class c (a better one would have reached it at a smaller c) and, within that class, the widest
// bandwidth t (a wider route would have reached it at a higher t); the search's layers give the fewest hops. Graphs
// of a host have tens of nodes and a handful of distinct classes and bandwidths.
void pathsFrom(const Topology& topo, const std::vector<std::vector<Edge>>& edges, const std::vector<PathClass>& classes,
               const std::vector<double>& widths, int src, std::vector<TopoPath>* out) {
  const int n = static_cast<int>(topo.nodes.size());
  out->assign(n, TopoPath{});
  TopoPath& self = (*out)[src];
  self.cls = PathClass::Loc;
  self.bw = kLocBw;
  self.route = {src};
  int left = n - 1;
  std::vector<int> layerOf(n), parent(n);
  for (PathClass c : classes) {
    for (double t : widths) {
      if (left == 0) return;
      std::fill(layerOf.begin(), layerOf.end(), -1);
      layerOf[src] = 0;
      std::vector<int> layer{src};
      for (int depth = 1; !layer.empty(); ++depth) {
        std::vector<int> next;
        for (int u : layer) {
          // A GPU or NET is where a path ends (NVB is added by the caller), unless it is where the path starts.
          if (u != src && isEndpoint(topo.nodes[u].kind)) continue;
          for (const Edge& e : edges[u]) {
            if (e.cls > c || e.bw < t || layerOf[e.peer] != -1) continue;
            layerOf[e.peer] = depth;
            parent[e.peer] = u;
            next.push_back(e.peer);
          }
        }
        layer.swap(next);
      }
      for (int v = 0; v < n; ++v) {
        if (v == src || layerOf[v] == -1 || (*out)[v].cls != PathClass::Dis) continue;
        TopoPath& p = (*out)[v];
        p.cls = c;
        p.bw = t;
        p.hops = layerOf[v];
        p.route.assign(p.hops + 1, src);
        for (int i = p.hops, x = v; i > 0; --i, x = parent[x]) p.route[i] = x;
        --left;
      }
    }
  }
}

// NVB: from GPU a to GPU c over NVLink through one GPU b in between, the widest such b.
void addNvb(const Topology& topo, const std::vector<std::vector<Edge>>& edges, int a, std::vector<TopoPath>* out) {
  for (const Edge& ab : edges[a]) {
    if (ab.kind != TopoLinkKind::Nvl || topo.nodes[ab.peer].kind != TopoKind::Gpu) continue;
    const int b = ab.peer;
    for (const Edge& bc : edges[b]) {
      const int c = bc.peer;
      if (bc.kind != TopoLinkKind::Nvl || c == a || topo.nodes[c].kind != TopoKind::Gpu) continue;
      const double bw = std::min(ab.bw, bc.bw);
      TopoPath& p = (*out)[c];
      if (!better(PathClass::Nvb, bw, 2, p)) continue;
      p.cls = PathClass::Nvb;
      p.bw = bw;
      p.hops = 2;
      p.route = {a, b, c};
    }
  }
}

}  // namespace

const TopoPath& TopoPaths::between(int fromNode, int toNode) const {
  static const TopoPath kNone;
  const int n = static_cast<int>(endpoints.size());
  if (matrix.size() != static_cast<size_t>(n) * n) return kNone;
  auto at = [&](int node) {
    auto it = std::find(endpoints.begin(), endpoints.end(), node);
    return it == endpoints.end() ? -1 : static_cast<int>(it - endpoints.begin());
  };
  const int i = at(fromNode), j = at(toNode);
  if (i < 0 || j < 0) return kNone;
  return matrix[static_cast<size_t>(i) * n + j];
}

ncclResult_t computePaths(const Topology& topo, TopoPaths* out) {
  std::vector<std::vector<Edge>> edges;
  BRAID_CHECK(buildEdges(topo, &edges));
  std::vector<PathClass> classes;
  std::vector<double> widths;
  for (const auto& es : edges) {
    for (const Edge& e : es) {
      classes.push_back(e.cls);
      widths.push_back(e.bw);
    }
  }
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  std::sort(widths.begin(), widths.end(), [](double x, double y) { return x > y; });
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());

  TopoPaths result;
  for (int v = 0; v < static_cast<int>(topo.nodes.size()); ++v)
    if (isEndpoint(topo.nodes[v].kind)) result.endpoints.push_back(v);
  const size_t m = result.endpoints.size();
  result.matrix.resize(m * m);
  std::vector<TopoPath> from;
  for (size_t i = 0; i < m; ++i) {
    const int src = result.endpoints[i];
    pathsFrom(topo, edges, classes, widths, src, &from);
    if (topo.nodes[src].kind == TopoKind::Gpu) addNvb(topo, edges, src, &from);
    for (size_t j = 0; j < m; ++j) result.matrix[i * m + j] = std::move(from[result.endpoints[j]]);
  }
  *out = std::move(result);
  return ncclSuccess;
}

std::vector<int> nearestNets(const Topology& topo, const TopoPaths& paths, int gpu) {
  std::vector<int> best;
  PathClass bestCls = PathClass::Dis;
  double bestBw = 0;
  for (int v = 0; v < static_cast<int>(topo.nodes.size()); ++v) {
    if (topo.nodes[v].kind != TopoKind::Net) continue;
    const TopoPath& p = paths.between(gpu, v);
    if (p.cls == PathClass::Dis) continue;
    if (best.empty() || p.cls < bestCls || (p.cls == bestCls && p.bw > bestBw)) {
      best.assign(1, v);
      bestCls = p.cls;
      bestBw = p.bw;
    } else if (p.cls == bestCls && p.bw == bestBw) {
      best.push_back(v);
    }
  }
  return best;
}

}  // namespace braid
