// topo_graph: NCCL's graph XML (NCCL_GRAPH_DUMP_FILE), written and read back. A graph is one algorithm's channels
// as one host sees them (the rings, the all-reduce trees): per channel the NIC it enters the host through, the
// host's GPUs in the order the channel visits them, and the NIC it leaves through; a channel that stays on the host
// has no NICs. The layout is NCCL's, so the files compare with NCCL's own dumps.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"
#include "topology/topo_xml.h"
#include "topology/topology.h"

namespace braid {

// NCCL's graph patterns (the <graph pattern> attribute).
constexpr int kGraphPatternBalancedTree = 1;
constexpr int kGraphPatternSplitTree = 2;
constexpr int kGraphPatternTree = 3;
constexpr int kGraphPatternRing = 4;

struct GraphChannel {
  int netIn = -1;         // the NIC's dev (the topology's <net dev>), -1: none
  std::vector<int> gpus;  // CUDA ordinals (<gpu dev>), in the order the channel visits them
  int netOut = -1;
  bool operator==(const GraphChannel& o) const { return netIn == o.netIn && gpus == o.gpus && netOut == o.netOut; }
};

struct TopoGraph {
  int id = 0;  // NCCL numbers the ring graph 0 and the tree graph 1
  int pattern = kGraphPatternRing;
  bool crossNic = false;
  double speedIntra = 0;  // GB/s per channel inside the host
  double speedInter = 0;  // GB/s per channel through the NICs
  PathClass typeIntra = PathClass::Loc;
  PathClass typeInter = PathClass::Pix;
  std::vector<GraphChannel> channels;
};

// <graphs version="1"> with one <graph> per entry, attributes in NCCL's order, samechannels from the channels.
XmlNode graphsXml(const std::vector<TopoGraph>& graphs);
// The graphs of a <graphs> element (as graphsXml writes, or NCCL): ncclInvalidArgument naming the line and problem
// where an element, attribute or number is not what the format has.
ncclResult_t parseGraphsXml(const XmlNode& root, std::vector<TopoGraph>* graphs);

// A GPU node's <gpu dev>: its CUDA ordinal, or where unknown its place among the topology's GPUs (-1: no GPU).
int graphGpuDev(const Topology& topo, int gpu);
// The <net dev> a channel enters or leaves the host through next to GPU node `gpu`: its nearest NICs, spread over
// channels by `channel` as NCCL spreads them; -1 without NICs. *cls is raised to that path's class (typeinter).
int graphNetDev(const Topology& topo, const TopoPaths& paths, int gpu, size_t channel, PathClass* cls);

}  // namespace braid
