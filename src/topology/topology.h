// topology: one host's machine as a graph, the paths between its GPUs and NICs, and the ring orders searched on it.
// Built from NCCL's topology XML (topo_xml.h), whether that came from a file (NCCL_TOPO_FILE) or from detection
// (topo_detect.h, which writes the same XML), so a file dumped by Braid or NCCL loads in either. Nodes are GPUs,
// PCI devices (switches and bridges), NVSwitches, CPUs (NUMA nodes), NICs and their network ports; links carry a
// kind and a bandwidth. Paths follow NCCL's classes, so NCCL_P2P_LEVEL means the same here as in NCCL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "topology/topo_xml.h"

namespace braid {

enum class TopoKind : uint8_t { Gpu, Pci, Nvs, Cpu, Nic, Net };
const char* topoKindName(TopoKind k);

// A link's kind, from the fastest: the node itself, NVLink, PCI, the CPUs' interconnect (SMP), the network.
enum class TopoLinkKind : uint8_t { Loc, Nvl, Pci, Sys, Net };

struct TopoLink {
  int peer = -1;     // index into Topology::nodes
  TopoLinkKind kind = TopoLinkKind::Pci;
  double bw = 0;     // GB/s, one direction
};

struct TopoNode {
  TopoKind kind = TopoKind::Pci;
  // GPU, PCI, NVS, NIC: the PCI address, normalised "dddd:bb:dd.f" in lower case (topoBusId); "" where none
  // (an NVSwitch known only by NVLink, a virtual NIC).
  std::string busId;
  int numa = -1;         // CPU: its NUMA node id; others: the NUMA node of the CPU they hang under (-1: unknown)
  // GPU
  int cudaDev = -1;      // the CUDA ordinal in the process that wrote the XML (-1: unknown)
  int sm = 0;            // compute capability x 10 (90: Hopper)
  int rank = -1;         // the rank that drives it, where the XML says
  bool gdr = false;      // GPU / NET: GPUDirect RDMA possible
  // NET (a NIC's port)
  std::string name;      // e.g. "mlx5_0", "eth0"
  int dev = -1;          // the network device index
  double speedGBs = 0;   // port speed
  int port = 0;
  uint64_t guid = 0;
  int maxConn = 0;
  std::vector<TopoLink> links;
};

struct Topology {
  std::vector<TopoNode> nodes;
  XmlNode xml;  // the system element it was built from (what NCCL_TOPO_DUMP_FILE writes)

  // The node of `kind` at PCI address `busId` (any spelling topoBusId accepts), or -1.
  int find(TopoKind kind, const std::string& busId) const;
  // Every node of `kind`, in node order.
  std::vector<int> all(TopoKind kind) const;
};

// "0000:1A:00" and "0000:1a:00.0" both become "0000:1a:00.0"; "" for text that is no PCI address.
std::string topoBusId(const std::string& text);

// Builds the graph from a <system> element (NCCL's schema: system > cpu > pci... > gpu / nic > net, with
// <nvlink target=... count=...> under a gpu). Rejects, with ncclInvalidArgument naming `source`, the line and the
// element: unknown elements or attributes, a gpu outside a pci element, a nic outside a pci or cpu element (NCCL
// puts a NIC without a PCI address, such as a socket interface, under its CPU), an nvlink whose target is neither a
// GPU of the file nor an NVSwitch (class 0x068000; 0x068001, a POWER9 CPU, is also NCCL's), malformed numbers and
// bus ids, duplicate bus ids. Nothing of a rejected file is kept (*out is untouched).
ncclResult_t topologyFromXml(const XmlNode& system, const std::string& source, Topology* out);
// NCCL_TOPO_FILE: reads and builds it (errors name the file).
ncclResult_t loadTopologyFile(const std::string& path, Topology* out);

// Path classes, in NCCL's order (worse is larger): the same GPU, NVLink, NVLink through another GPU, one PCIe
// switch, several switches, through the CPU's host bridge, across CPU sockets, over the network, none.
enum class PathClass : uint8_t { Loc, Nvl, Nvb, Pix, Pxb, Phb, Sys, Net, Dis };
const char* pathClassName(PathClass c);  // "LOC", "NVL", ...
// NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL values: a class name (LOC, NVL, NVB, PIX, PXB, PHB, SYS) or NCCL's numbers
// (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS, 5 SYS). False for anything else.
bool parsePathLevel(const std::string& text, PathClass* out);

struct TopoPath {
  PathClass cls = PathClass::Dis;
  double bw = 0;  // GB/s: the slowest link on the way
  int hops = 0;
  // The nodes on the way, source and destination included (empty for Dis): ring search counts how many hops of a
  // ring share a link (a PCIe uplink, an NVLink), which the class and bandwidth alone cannot tell.
  std::vector<int> route;
};

// The best path between every pair of GPU and NET nodes, as NCCL's path computation orders them: the best class (a
// path's class is that of its worst link), then the widest route of that class, then the fewest hops. Rows and
// columns in Topology node order, for GPU and NET nodes only.
struct TopoPaths {
  std::vector<int> endpoints;           // node index of each row/column
  std::vector<TopoPath> matrix;         // endpoints.size() squared
  // The path between two nodes (GPU or NET); a Dis path for others.
  const TopoPath& between(int fromNode, int toNode) const;
};
ncclResult_t computePaths(const Topology& topo, TopoPaths* out);

// For GPU node `gpu`, the NET nodes nearest to it (best class, then widest), in node order; empty without NICs.
std::vector<int> nearestNets(const Topology& topo, const TopoPaths& paths, int gpu);

// Ring orders for the ranks of one host: rankGpu[r] is rank r's GPU node. Each ring is a permutation of the ranks,
// chosen so its slowest hop is as fast as the machine allows (on a full mesh: rank order; NVLink pairs and hybrid
// cube-meshes: rings that stay on NVLink; PCIe switches: rings that cross the host bridge as few times as possible).
// rings.size(): how many rings to run, at most maxRings, from the bandwidth found (topo_search.cc gives the rule).
struct TopoRings {
  std::vector<std::vector<int>> rings;
  double bwPerRing = 0;  // GB/s of each ring's slowest hop, shared by the rings that use it
  PathClass worst = PathClass::Loc;  // the worst hop's class
};
ncclResult_t searchRings(const Topology& topo, const TopoPaths& paths, const std::vector<int>& rankGpu,
                         int maxRings, TopoRings* out);
// How many channels a ring whose slowest hop moves `slowestGBs` runs: one per 5 GB/s of it, at least 4, at most
// `most`. 64 channels fill NV18 (about 370 GB/s each way; 18 links at NCCL's 20.6 GB/s): 5.6 GB/s each, so an
// NVLink ring keeps the runtime's 64, while a PCIe Gen4 x16 hop (24 GB/s in NCCL's rates) gets 5 and leaves the
// other SMs to the user's kernels, as NCCL's 2-4 channels there do.
int ringChannelsFor(double slowestGBs, int most);

// NCCL_GRAPH_DUMP_FILE: the rings as NCCL's graph XML (<graphs><graph id pattern nchannels ...><channel><gpu dev/>
// ...).
// throughNics: the rings leave the host (a <net> at each end of a channel where the machine has NICs); false for
// rings whose ranks all share the host.
XmlNode ringsGraphXml(const TopoRings& rings, const std::vector<int>& rankGpu, const Topology& topo,
                      bool throughNics = true);

}  // namespace braid
