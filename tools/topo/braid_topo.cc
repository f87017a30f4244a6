// braid_topo: shows the machine as Braid's topology layer sees it: the nodes and links read from a topology file
// (NCCL's XML, as NCCL_TOPO_FILE takes it) or detected on this host, the path class and bandwidth between every pair
// of GPUs and NICs, the rings the search picks for N ranks with each rank's NIC, what a communicator of them runs,
// and the all-reduce trees (over --nodes K such machines). --dot writes the graph for Graphviz; --png / --svg render
// it with `dot`. `braid_topo -h` prints the usage.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "algo/tree_topology.h"
#include "core/result.h"
#include "runtime/gpu/gpu_topology.h"
#include "runtime/ring_order.h"
#include "topology/topo_detect.h"
#include "topology/topo_xml.h"
#include "topology/topology.h"
#include "transport/p2p/p2p_level.h"

namespace braid {
namespace {

const char* usage() {
  return "usage: braid_topo [--file TOPO_XML] [--ranks N] [--nodes K] [--max-rings M] [--ring-order ORDERS]\n"
         "                  [--dot] [--png FILE] [--svg FILE] [--dump FILE] [--graph FILE]\n"
         "Prints the topology (nodes and links), the path class and GB/s between every pair of GPUs and NICs,\n"
         "and the rings Braid's search picks for N ranks (rank r on the r-th GPU by CUDA ordinal) with each\n"
         "rank's nearest NIC.\n"
         "  --file TOPO_XML  read NCCL's topology XML (what NCCL_TOPO_FILE names); without it, detect this host\n"
         "                   (the GPUs CUDA shows, sysfs, NVML)\n"
         "  --ranks N        rings for the first N GPUs (default: every GPU)\n"
         "  --nodes K        also show the all-reduce trees of K such machines (N ranks each): NCCL's double\n"
         "                   binary tree over the machines, a chain in ring order inside each (default 1)\n"
         "  --max-rings M    search at most M rings (default 32)\n"
         "  --ring-order ORDERS\n"
         "                   what communicators run with BRAID_RING_ORDER=ORDERS (rings of ranks, '|' between\n"
         "                   them): each channel's ring where they differ\n"
         "  --dot            write the graph in Graphviz's language to stdout instead of the report (NVLinks bold,\n"
         "                   ring order on dashed arrows)\n"
         "  --png FILE, --svg FILE\n"
         "                   render that graph with Graphviz's dot (which must be on PATH)\n"
         "  --dump FILE      write the topology XML (as NCCL_TOPO_DUMP_FILE holds it)\n"
         "  --graph FILE     write the rings as NCCL's graph XML (as NCCL_GRAPH_DUMP_FILE holds it)\n"
         "  -h, --help       this text\n";
}

struct Options {
  std::string file;
  int ranks = -1;
  int nodes = 1;
  int maxRings = 32;
  bool dot = false;
  std::string png, svg, dump, graph;
  std::string ringOrder;  // --ring-order
};

bool parseCount(const std::string& text, int lo, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > 1 << 20) return false;
  *out = static_cast<int>(v);
  return true;
}

// 0: run; 1: help; 2: error (in *error).
int parseArgs(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    const bool inlineValue = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inlineValue) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto takeValue = [&](std::string* out) {
      if (inlineValue) {
        *out = value;
      } else if (i + 1 < argc) {
        *out = argv[++i];
      } else {
        *error = arg + " needs a value";
        return false;
      }
      if (out->empty()) *error = arg + " needs a value";
      return !out->empty();
    };
    std::string v;
    if (arg == "-h" || arg == "--help") return 1;
    if (arg == "--dot" && !inlineValue) {
      o->dot = true;
    } else if (arg == "--file") {
      if (!takeValue(&o->file)) return 2;
    } else if (arg == "--ranks" || arg == "--max-rings" || arg == "--nodes") {
      if (!takeValue(&v)) return 2;
      int* dst = arg == "--ranks" ? &o->ranks : arg == "--nodes" ? &o->nodes : &o->maxRings;
      if (!parseCount(v, 1, dst)) {
        *error = arg + " takes a whole number of at least 1, not '" + v + "'";
        return 2;
      }
    } else if (arg == "--ring-order") {
      if (!takeValue(&o->ringOrder)) return 2;
    } else if (arg == "--png" || arg == "--svg" || arg == "--dump" || arg == "--graph") {
      std::string* dst = arg == "--png" ? &o->png : arg == "--svg" ? &o->svg : arg == "--dump" ? &o->dump : &o->graph;
      if (!takeValue(dst)) return 2;
    } else {
      *error = "unknown argument '" + std::string(argv[i]) + "'";
      return 2;
    }
  }
  return 0;
}

// This host: the GPUs CUDA shows (none where there is no driver or device: NICs and the PCI tree still come).
ncclResult_t detectHere(Topology* topo, bool* nvlinksKnown) {
  TopoDetectOptions opts;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "braid_topo: CUDA shows no GPUs (%s); detecting without them\n", cudaGetErrorString(e));
    n = 0;
  }
  for (int d = 0; d < n; ++d) {
    char bus[32] = {};
    int major = 0, minor = 0;
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess)
      return recordError(ncclUnhandledCudaError, "CUDA device %d: no PCI address or compute capability", d);
    TopoGpuFact g;
    g.busId = bus;
    g.cudaDev = d;
    g.sm = major * 10 + minor;
    opts.gpus.push_back(g);
  }
  XmlNode system;
  BRAID_CHECK(detectTopology(opts, &system, nvlinksKnown));
  return topologyFromXml(system, "this host", topo);
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

const char* linkKindName(TopoLinkKind k) {
  switch (k) {
    case TopoLinkKind::Loc:
      return "LOC";
    case TopoLinkKind::Nvl:
      return "NVL";
    case TopoLinkKind::Pci:
      return "PCI";
    case TopoLinkKind::Sys:
      return "SYS";
    case TopoLinkKind::Net:
      return "NET";
  }
  return "?";
}

// Short names: GPUs by CUDA ordinal, NETs by device index, others by node index.
std::string label(const Topology& t, int v) {
  const TopoNode& n = t.nodes[v];
  if (n.kind == TopoKind::Gpu && n.cudaDev >= 0) return "GPU" + std::to_string(n.cudaDev);
  if (n.kind == TopoKind::Net && n.dev >= 0) return "NET" + std::to_string(n.dev);
  return std::string(topoKindName(n.kind)) + "#" + std::to_string(v);
}

std::string details(const TopoNode& n) {
  std::string s;
  switch (n.kind) {
    case TopoKind::Cpu:
      s = "numa " + std::to_string(n.numa);
      break;
    case TopoKind::Gpu:
      s = "sm " + std::to_string(n.sm);
      if (n.rank >= 0) s += ", rank " + std::to_string(n.rank);
      if (n.gdr) s += ", gdr";
      break;
    case TopoKind::Net:
      s = n.name + ", " + fmt(n.speedGBs) + " GB/s, port " + std::to_string(n.port);
      if (n.gdr) s += ", gdr";
      break;
    default:
      break;
  }
  if (n.kind != TopoKind::Cpu && n.numa >= 0)
    s += std::string(s.empty() ? "" : ", ") + "numa " + std::to_string(n.numa);
  return s;
}

// GPUs by CUDA ordinal (unknown ones last, in node order): rank r runs on the r-th.
std::vector<int> gpusInOrder(const Topology& t) {
  std::vector<int> g = t.all(TopoKind::Gpu);
  std::stable_sort(g.begin(), g.end(), [&](int a, int b) {
    const int da = t.nodes[a].cudaDev, db = t.nodes[b].cudaDev;
    if ((da < 0) != (db < 0)) return db < 0;
    return da < db;
  });
  return g;
}

void printTopology(const Topology& t, const std::string& source) {
  std::printf("Topology of %s: %zu GPUs, %zu NICs (%zu network ports), %zu CPUs, %zu PCI switches, %zu NVSwitch\n",
              source.c_str(), t.all(TopoKind::Gpu).size(), t.all(TopoKind::Nic).size(), t.all(TopoKind::Net).size(),
              t.all(TopoKind::Cpu).size(), t.all(TopoKind::Pci).size(), t.all(TopoKind::Nvs).size());
  std::printf("\nNodes:\n");
  for (size_t v = 0; v < t.nodes.size(); ++v) {
    const TopoNode& n = t.nodes[v];
    std::printf("  %3zu %-3s %-8s %-12s %s\n", v, topoKindName(n.kind), label(t, static_cast<int>(v)).c_str(),
                n.busId.c_str(), details(n).c_str());
  }
  std::printf("\nLinks (GB/s each way; a/b where the two ways differ):\n");
  for (size_t a = 0; a < t.nodes.size(); ++a) {
    for (const TopoLink& l : t.nodes[a].links) {
      const TopoLink* back = nullptr;
      for (const TopoLink& r : t.nodes[l.peer].links)
        if (r.peer == static_cast<int>(a) && r.kind == l.kind) back = &r;
      if (back && l.peer < static_cast<int>(a)) continue;  // printed from the other end
      std::string bw = fmt(l.bw);
      if (back && back->bw != l.bw) bw += "/" + fmt(back->bw);
      std::printf("  %-8s %s %-8s %s %s\n", label(t, static_cast<int>(a)).c_str(), back ? "<->" : "-> ",
                  label(t, l.peer).c_str(), linkKindName(l.kind), bw.c_str());
    }
  }
}

std::vector<int> endpointsInOrder(const Topology& t) {
  std::vector<int> e = gpusInOrder(t);
  std::vector<int> nets = t.all(TopoKind::Net);
  std::stable_sort(nets.begin(), nets.end(), [&](int a, int b) { return t.nodes[a].dev < t.nodes[b].dev; });
  e.insert(e.end(), nets.begin(), nets.end());
  return e;
}

void printPaths(const Topology& t, const TopoPaths& p) {
  const std::vector<int> e = endpointsInOrder(t);
  if (e.empty()) return;
  std::printf("\nPaths (class/GB/s of the slowest link; row to column):\n%8s", "");
  for (int v : e) std::printf(" %10s", label(t, v).c_str());
  std::printf("\n");
  for (int a : e) {
    std::printf("%8s", label(t, a).c_str());
    for (int b : e) {
      const TopoPath& x = p.between(a, b);
      std::string cell = pathClassName(x.cls);
      if (a != b && x.cls != PathClass::Dis) cell += "/" + fmt(x.bw);
      std::printf(" %10s", cell.c_str());
    }
    std::printf("\n");
  }
}

std::vector<std::vector<int>> distinctRings(const TopoRings& r) {
  std::vector<std::vector<int>> out;
  for (const auto& ring : r.rings)
    if (std::find(out.begin(), out.end(), ring) == out.end()) out.push_back(ring);
  return out;
}

void printRings(const Topology& t, const TopoPaths& p, const std::vector<int>& rankGpu, const TopoRings& r) {
  std::printf("\nRings for %zu ranks: %zu ring%s at %s GB/s each, worst hop %s\n", rankGpu.size(), r.rings.size(),
              r.rings.size() == 1 ? "" : "s", fmt(r.bwPerRing).c_str(), pathClassName(r.worst));
  for (size_t c = 0; c < r.rings.size(); ++c) {
    const std::vector<int>& ring = r.rings[c];
    std::string ranks, hops;
    for (size_t i = 0; i < ring.size(); ++i) {
      ranks += (i ? " " : "") + std::to_string(ring[i]);
      const int next = ring[(i + 1) % ring.size()];
      if (ring.size() > 1)
        hops += std::string(i ? " " : "") + pathClassName(p.between(rankGpu[ring[i]], rankGpu[next]).cls);
    }
    std::printf("  ring %2zu: %s   (hops %s)\n", c, ranks.c_str(), hops.c_str());
  }
  std::printf("\nNIC per rank (nearest: best class, then widest):\n");
  for (size_t rank = 0; rank < rankGpu.size(); ++rank) {
    const std::vector<int> near = nearestNets(t, p, rankGpu[rank]);
    std::string nets;
    for (int n : near) {
      const TopoPath& x = p.between(rankGpu[rank], n);
      nets += (nets.empty() ? "" : ", ") + label(t, n) + " " + t.nodes[n].name + " (" + pathClassName(x.cls) + ", " +
              fmt(x.bw) + " GB/s)";
    }
    std::printf("  rank %2zu on %-6s %s\n", rank, label(t, rankGpu[rank]).c_str(),
                nets.empty() ? "none" : nets.c_str());
  }
}

// A ring's hops between its ranks' GPUs: "0->1 P2P, ..." by NCCL_P2P_LEVEL's `limit`; the slowest hop's GB/s in
// *slowest (-1: none) and whether every hop is P2P in *allP2p.
std::string ringHops(const TopoPaths& p, const std::vector<int>& rankGpu, const std::vector<int>& ring, PathClass limit,
                     double* slowest, bool* allP2p) {
  const size_t n = ring.size();
  std::string hops;
  for (size_t i = 0; n > 1 && i < n; ++i) {
    const TopoPath& x = p.between(rankGpu[ring[i]], rankGpu[ring[(i + 1) % n]]);
    if (x.cls != PathClass::Dis) *slowest = *slowest < 0 ? x.bw : std::min(*slowest, x.bw);
    const bool p2p = x.cls <= limit || x.cls <= PathClass::Nvb;
    *allP2p = *allP2p && p2p;
    hops += std::string(i ? ", " : "") + std::to_string(ring[i]) + "->" + std::to_string(ring[(i + 1) % n]) + " " +
            (p2p ? "P2P" : "SHM");
  }
  return hops;
}

// What a GPU communicator of these ranks runs, as the library decides it: channel c on ring c % nRings of `rings`
// (the search's distinct ones, or --ring-order's; at most kDeviceRingOrders), the channel count (ringChannelsFor the
// slowest hop of any ring, for each ring), and each hop's transport: P2P where the path is within NCCL_P2P_LEVEL (or
// its default for the host's CPUs), else shared memory. Host communicators run the same rings. False where
// NCCL_P2P_LEVEL is malformed.
bool printRunning(const Topology& t, const TopoPaths& p, bool nvlinksKnown, const std::vector<int>& rankGpu,
                  const std::vector<std::vector<int>>& rings, const std::string& ringOrder) {
  HostTopology host;
  host.topo = t;
  host.paths = p;
  host.nvlinkKnown = nvlinksKnown;
  PathClass limit = PathClass::Sys;
  std::string why;
  if (!p2pLevelLimit(&host, &limit, &why)) {
    std::fprintf(stderr, "braid_topo: %s\n", why.c_str());
    return false;
  }
  const size_t nRings = std::min(rings.size(), static_cast<size_t>(kDeviceRingOrders));
  const size_t n = rings[0].size();
  double slowest = -1;
  bool allP2p = true;
  std::vector<std::string> hops;
  for (size_t k = 0; k < nRings; ++k) hops.push_back(ringHops(p, rankGpu, rings[k], limit, &slowest, &allP2p));
  const std::string named = ringOrder.empty() ? "" : " of BRAID_RING_ORDER=\"" + ringOrder + "\"";
  if (nRings == 1)
    std::printf("\nA communicator of these ranks (one process per GPU) runs ring 0%s on every channel:\n",
                named.c_str());
  else
    std::printf("\nA communicator of these ranks (one process per GPU) runs channel c on ring c %% %zu%s:\n", nRings,
                named.c_str());
  std::printf("  P2P up to %s%s\n", pathClassName(limit), nvlinksKnown ? "" : " (NVLinks unknown without NVML)");
  if (n > 1 && nRings == 1) std::printf("  hops: %s\n", hops[0].c_str());
  if (n > 1 && !allP2p)
    std::printf("  channels: 64 (a hop over shared memory: the topology does not set the count)\n");
  else if (n > 1 && slowest > 0 && nvlinksKnown && nRings == 1)
    std::printf("  channels: %d (slowest hop %s GB/s; at most 64, NCCL_MIN_NCHANNELS raises it)\n",
                ringChannelsFor(slowest, 64), fmt(slowest).c_str());
  else if (n > 1 && slowest > 0 && nvlinksKnown)
    std::printf(
        "  channels: %d (%d per ring: the slowest hop of any ring %s GB/s; at most 64, NCCL_MIN_NCHANNELS "
        "raises it)\n",
        std::min(64, ringChannelsFor(slowest, 64) * static_cast<int>(nRings)), ringChannelsFor(slowest, 64),
        fmt(slowest).c_str());
  for (size_t k = 0; nRings > 1 && k < nRings; ++k) {
    const std::vector<int>& r = rings[k];
    std::string ranks, classes;
    for (size_t i = 0; i < r.size(); ++i) {
      ranks += (i ? " " : "") + std::to_string(r[i]);
      classes +=
          std::string(i ? " " : "") + pathClassName(p.between(rankGpu[r[i]], rankGpu[r[(i + 1) % r.size()]]).cls);
    }
    std::printf("  channels %zu, %zu, ...: ring %zu: %s   (hops %s)\n    hops: %s\n", k, k + nRings, k, ranks.c_str(),
                classes.c_str(), hops[k].c_str());
  }
  if (rings.size() > nRings)
    std::printf("  the last %zu ring%s not run: a communicator runs at most %d\n", rings.size() - nRings,
                rings.size() - nRings == 1 ? " is" : "s are", kDeviceRingOrders);
  return true;
}

// The all-reduce trees (tree_topology.h) of `nodes` machines like this one, each running `ring` (this host's ranks'
// order): rank r of machine k is global rank k * n + r, as `braidrun --nodes` places them. Host communicators run
// them where ranks span hosts; on one machine they are two chains in ring order.
void printTrees(const std::vector<int>& ring, int nodes) {
  const int n = static_cast<int>(ring.size());
  std::vector<int> order, nodeOf(static_cast<size_t>(n) * nodes);
  for (int k = 0; k < nodes; ++k)
    for (int p = 0; p < n; ++p) {
      order.push_back(k * n + ring[p]);
      nodeOf[static_cast<size_t>(k * n + ring[p])] = k;
    }
  std::vector<TreeLinks> trees[kNumTrees];
  buildRankTrees(order, nodeOf, nodes, &trees);
  std::printf("\nAll-reduce trees over %d machine%s x %d rank%s (rank = machine * %d + local rank; parent <- rank -> "
              "children):\n", nodes, nodes == 1 ? "" : "s", n, n == 1 ? "" : "s", n);
  for (int t = 0; t < kNumTrees; ++t) {
    std::string line;
    for (size_t r = 0; r < trees[t].size(); ++r) {
      const TreeLinks& l = trees[t][r];
      line += "  " + (l.up < 0 ? std::string("root") : std::to_string(l.up)) + "<-" + std::to_string(r);
      std::string kids;
      for (int d : l.down)
        if (d >= 0) kids += (kids.empty() ? "" : ",") + std::to_string(d);
      if (!kids.empty()) line += "->" + kids;
    }
    std::printf("  tree %d:%s\n", t, line.c_str());
  }
}

// A DOT string: quotes and backslashes escaped, line breaks as DOT's \n.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string dotGraph(const Topology& t, const std::vector<int>& rankGpu, const TopoRings& r) {
  std::string out =
      "graph topology {\n  graph [fontname=\"Helvetica\"];\n  node [fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  std::vector<int> rankOf(t.nodes.size(), -1);
  for (size_t i = 0; i < rankGpu.size(); ++i) rankOf[rankGpu[i]] = static_cast<int>(i);
  for (size_t v = 0; v < t.nodes.size(); ++v) {
    const TopoNode& n = t.nodes[v];
    std::string text = label(t, static_cast<int>(v));
    if (!n.busId.empty()) text += "\n" + n.busId;
    std::string shape;
    switch (n.kind) {
      case TopoKind::Gpu:
        shape = "shape=box, style=filled, fillcolor=palegreen";
        text += "\nsm " + std::to_string(n.sm);
        if (rankOf[v] >= 0) text += "\nrank " + std::to_string(rankOf[v]);
        break;
      case TopoKind::Pci:
        shape = "shape=ellipse";
        break;
      case TopoKind::Nvs:
        shape = "shape=hexagon, style=filled, fillcolor=lightgoldenrod";
        break;
      case TopoKind::Cpu:
        shape = "shape=box3d, style=filled, fillcolor=lightblue";
        text += "\nnuma " + std::to_string(n.numa);
        break;
      case TopoKind::Nic:
        shape = "shape=component";
        break;
      case TopoKind::Net:
        shape = "shape=note";
        text += "\n" + n.name + "\n" + fmt(n.speedGBs) + " GB/s";
        break;
    }
    out += "  n" + std::to_string(v) + " [" + shape + ", label=" + quoted(text) + "];\n";
  }
  for (size_t a = 0; a < t.nodes.size(); ++a) {
    for (const TopoLink& l : t.nodes[a].links) {
      bool back = false;
      for (const TopoLink& x : t.nodes[l.peer].links) back |= x.peer == static_cast<int>(a) && x.kind == l.kind;
      if (back && l.peer < static_cast<int>(a)) continue;
      std::string style = "label=" + quoted(std::string(linkKindName(l.kind)) + " " + fmt(l.bw));
      if (l.kind == TopoLinkKind::Nvl) style += ", penwidth=3, color=forestgreen, fontcolor=forestgreen";
      if (l.kind == TopoLinkKind::Sys) style += ", style=dashed";
      if (!back) style += ", dir=forward";
      out += "  n" + std::to_string(a) + " -- n" + std::to_string(l.peer) + " [" + style + "];\n";
    }
  }
  // Each distinct ring as arrows from GPU to GPU, numbered by step: they show the order, not a link.
  static const char* const kColors[] = {"red", "blue", "darkorange", "purple"};
  const std::vector<std::vector<int>> rings = distinctRings(r);
  for (size_t c = 0; c < rings.size() && c < 4 && rings[c].size() > 1; ++c) {
    const std::vector<int>& ring = rings[c];
    for (size_t i = 0; i < ring.size(); ++i) {
      const int a = rankGpu[ring[i]], b = rankGpu[ring[(i + 1) % ring.size()]];
      out += "  n" + std::to_string(a) + " -- n" + std::to_string(b) +
             " [dir=forward, style=dashed, constraint=false, color=" + kColors[c] + ", fontcolor=" + kColors[c] +
             ", label=" + quoted("ring " + std::to_string(c) + ": " + std::to_string(i + 1)) + "];\n";
    }
  }
  return out + "}\n";
}

bool onPath(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Renders `dot` text into `file` as `format` with Graphviz; false (with a message) when it cannot.
bool render(const std::string& dot, const char* format, const std::string& file) {
  if (!onPath("dot")) {
    std::fprintf(stderr, "braid_topo: --%s needs Graphviz's dot on PATH (or use --dot and render elsewhere)\n", format);
    return false;
  }
  std::string path = "'";
  for (char c : file) path += c == '\'' ? std::string("'\\''") : std::string(1, c);
  path += "'";
  const std::string cmd = std::string("dot -T") + format + " -o " + path;
  FILE* pipe = ::popen(cmd.c_str(), "w");
  if (!pipe) {
    std::fprintf(stderr, "braid_topo: cannot run dot: %s\n", std::strerror(errno));
    return false;
  }
  std::fwrite(dot.data(), 1, dot.size(), pipe);
  const int status = ::pclose(pipe);
  if (status != 0) {
    std::fprintf(stderr, "braid_topo: dot failed writing %s (status %d)\n", file.c_str(), status);
    return false;
  }
  return true;
}

int fail(const char* what) {
  std::fprintf(stderr, "braid_topo: %s: %s\n", what, pendingError().empty() ? "failed" : pendingError().c_str());
  return 1;
}

int run(const Options& o) {
  Topology topo;
  bool nvlinksKnown = true;  // a file states its NVLinks; detection knows them only through NVML
  const std::string source = o.file.empty() ? "this host" : o.file;
  if (!o.file.empty()) {
    if (loadTopologyFile(o.file, &topo) != ncclSuccess) return fail("reading the topology");
  } else if (detectHere(&topo, &nvlinksKnown) != ncclSuccess) {
    return fail("detecting the topology");
  }
  TopoPaths paths;
  if (computePaths(topo, &paths) != ncclSuccess) return fail("computing paths");
  const std::vector<int> gpus = gpusInOrder(topo);
  const int nRanks = o.ranks < 0 ? static_cast<int>(gpus.size()) : o.ranks;
  if (nRanks > static_cast<int>(gpus.size())) {
    std::fprintf(stderr, "braid_topo: --ranks %d, but %s has %zu GPUs\n", nRanks, source.c_str(), gpus.size());
    return 1;
  }
  const std::vector<int> rankGpu(gpus.begin(), gpus.begin() + nRanks);
  TopoRings rings;
  if (!rankGpu.empty() && searchRings(topo, paths, rankGpu, o.maxRings, &rings) != ncclSuccess)
    return fail("searching rings");

  // The rings communicators run: --ring-order's (parsed as BRAID_RING_ORDER is), else the search's distinct ones.
  std::vector<std::vector<int>> running = distinctRings(rings);
  if (!o.ringOrder.empty() && !rankGpu.empty() &&
      parseRingOrders(o.ringOrder, static_cast<int>(rankGpu.size()), &running) != ncclSuccess) {
    std::fprintf(stderr, "braid_topo: --ring-order: %s\n", pendingError().c_str());
    return 2;
  }
  if (o.dot) {
    const std::string dot = dotGraph(topo, rankGpu, rings);
    std::fwrite(dot.data(), 1, dot.size(), stdout);
  } else {
    printTopology(topo, source);
    printPaths(topo, paths);
    if (rankGpu.empty())
      std::printf("\nNo GPUs: no rings.\n");
    else
      printRings(topo, paths, rankGpu, rings);
    if (!rankGpu.empty() && !printRunning(topo, paths, nvlinksKnown, rankGpu, running, o.ringOrder)) return 2;
    if (!rankGpu.empty()) printTrees(running[0], o.nodes);
  }
  bool ok = true;
  if (!o.png.empty() || !o.svg.empty()) {
    const std::string dot = dotGraph(topo, rankGpu, rings);
    if (!o.png.empty()) ok &= render(dot, "png", o.png);
    if (!o.svg.empty()) ok &= render(dot, "svg", o.svg);
  }
  if (!o.dump.empty() && writeXmlFile(o.dump, topo.xml) != ncclSuccess) {
    fail("writing the topology XML");
    ok = false;
  }
  if (!o.graph.empty()) {
    if (rankGpu.empty()) {
      std::fprintf(stderr, "braid_topo: --graph: no GPUs, so no rings to write\n");
      ok = false;
    } else if (writeXmlFile(o.graph, ringsGraphXml(rings, rankGpu, topo)) != ncclSuccess) {
      fail("writing the graph XML");
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace braid

int main(int argc, char** argv) {
  braid::Options o;
  std::string error;
  switch (braid::parseArgs(argc, argv, &o, &error)) {
    case 1:
      std::fputs(braid::usage(), stdout);
      return 0;
    case 2:
      std::fprintf(stderr, "braid_topo: %s\n%s", error.c_str(), braid::usage());
      return 2;
  }
  return braid::run(o);
}
