// Hand-built host topologies for the path and ring-search tests: a small builder that fills Topology::nodes and
// links the way NCCL's topology model has them (every link listed at both ends; a GPU or NIC under a PCI switch or a
// CPU root port; NVLink to a GPU or an NVSwitch; SYS between CPUs; a NIC's ports as NET nodes), and the machines
// the tests share. Bandwidths are NCCL's numbers: PCIe Gen3 x16 12 GB/s, Gen4 x16 24, an NVLink 20, a 100 Gb/s
// port 12.5, a Skylake UPI 10.
#pragma once

#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology.h"

namespace braid {

// GoogleTest prints a PathClass by this (found by argument-dependent lookup) instead of as a raw byte.
inline void PrintTo(PathClass c, std::ostream* os) {
  static const char* const kNames[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", "NET", "DIS"};
  const unsigned i = static_cast<unsigned>(c);
  *os << (i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?");
}

namespace topotest {

constexpr double kGen3 = 12.0;
constexpr double kGen4 = 24.0;
constexpr double kNvlink = 20.0;
constexpr double kPort100G = 12.5;
constexpr double kUpi = 10.0;

class TopoBuilder {
 public:
  int cpu(int numa) {
    int v = add(TopoKind::Cpu, "");
    topo.nodes[v].numa = numa;
    return v;
  }
  // A PCI switch (or bridge) under `parent` (a CPU or another switch).
  int pci(int parent, double bw) {
    int v = add(TopoKind::Pci, nextBusId());
    link(parent, v, TopoLinkKind::Pci, bw);
    return v;
  }
  int gpu(int parent, double bw, int sm) {
    int v = add(TopoKind::Gpu, nextBusId());
    topo.nodes[v].cudaDev = nGpus_++;
    topo.nodes[v].sm = sm;
    link(parent, v, TopoLinkKind::Pci, bw);
    return v;
  }
  int nvs() {
    nvswitch = add(TopoKind::Nvs, "");
    return nvswitch;
  }
  int nic(int parent, double bw) {
    int v = add(TopoKind::Nic, nextBusId());
    link(parent, v, TopoLinkKind::Pci, bw);
    return v;
  }
  int net(int nic, double speed) {
    int v = add(TopoKind::Net, "");
    TopoNode& n = topo.nodes[v];
    n.dev = nNets_++;
    n.name = "mlx5_" + std::to_string(n.dev);
    n.speedGBs = speed;
    link(nic, v, TopoLinkKind::Net, speed);
    return v;
  }
  // Both directions, as the model lists every link at both of its ends.
  void link(int a, int b, TopoLinkKind kind, double bw) {
    topo.nodes[a].links.push_back({b, kind, bw});
    topo.nodes[b].links.push_back({a, kind, bw});
  }
  void nvlink(int a, int b, int count) { link(a, b, TopoLinkKind::Nvl, count * kNvlink); }

  Topology topo;
  std::vector<int> gpus;  // GPU node indices, in the order they were added
  std::vector<int> nets;
  int nvswitch = -1;

 private:
  int add(TopoKind kind, std::string busId) {
    topo.nodes.emplace_back();
    topo.nodes.back().kind = kind;
    topo.nodes.back().busId = std::move(busId);
    int v = static_cast<int>(topo.nodes.size()) - 1;
    if (kind == TopoKind::Gpu) gpus.push_back(v);
    if (kind == TopoKind::Net) nets.push_back(v);
    return v;
  }
  std::string nextBusId() {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0000:%02x:00.0", ++bus_);
    return buf;
  }
  int bus_ = 0;
  int nGpus_ = 0;
  int nNets_ = 0;
};

// Four Hopper GPUs, each with 18 NVLinks to one NVSwitch (HGX H100 cut to four), each on its own Gen4 switch of one
// CPU.
inline TopoBuilder nvswitchMesh4() {
  TopoBuilder b;
  int c = b.cpu(0);
  int s = b.nvs();
  for (int i = 0; i < 4; ++i) {
    int g = b.gpu(b.pci(c, kGen4), kGen4, 90);
    b.nvlink(g, s, 18);
  }
  return b;
}

// Four PCIe GPUs, two per Gen4 switch under one CPU, with NVLink bridges (3 links) between the pairs given.
inline TopoBuilder nvlinkBridges(std::pair<int, int> bridge0, std::pair<int, int> bridge1) {
  TopoBuilder b;
  int c = b.cpu(0);
  int sw[2] = {b.pci(c, kGen4), b.pci(c, kGen4)};
  for (int i = 0; i < 4; ++i) b.gpu(sw[i / 2], kGen4, 80);
  b.nvlink(b.gpus[bridge0.first], b.gpus[bridge0.second], 3);
  b.nvlink(b.gpus[bridge1.first], b.gpus[bridge1.second], 3);
  return b;
}

// DGX-1 with V100: two Skylake sockets, two Gen3 switches per socket, each with two GPUs and a 100 Gb/s NIC, and
// the hybrid cube-mesh of NVLinks (nvidia-smi topo -m: NV1 / NV2 per pair).
inline TopoBuilder dgx1() {
  TopoBuilder b;
  int c0 = b.cpu(0), c1 = b.cpu(1);
  b.link(c0, c1, TopoLinkKind::Sys, kUpi);
  for (int s = 0; s < 4; ++s) {
    int sw = b.pci(s < 2 ? c0 : c1, kGen3);
    b.gpu(sw, kGen3, 70);
    b.gpu(sw, kGen3, 70);
    b.net(b.nic(sw, kGen3), kPort100G);
  }
  const int links[8][8] = {
      {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
      {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
  };
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j)
      if (links[i][j]) b.nvlink(b.gpus[i], b.gpus[j], links[i][j]);
  return b;
}

// Four Gen4 GPUs on one switch, NVLinked in a chain 0-1-2-3 (one link each): 0-2 and 1-3 are NVB, 0-3 PIX.
inline TopoBuilder nvlinkChainOnSwitch() {
  TopoBuilder b;
  int sw = b.pci(b.cpu(0), kGen4);
  for (int i = 0; i < 4; ++i) b.gpu(sw, kGen4, 80);
  for (int i = 0; i < 3; ++i) b.nvlink(b.gpus[i], b.gpus[i + 1], 1);
  return b;
}

// Four Gen4 GPUs on two switches directly under one CPU; switchOf[i] is GPU i's switch (0 or 1).
inline TopoBuilder pcieSwitches(const std::vector<int>& switchOf) {
  TopoBuilder b;
  int c = b.cpu(0);
  int sw[2] = {b.pci(c, kGen4), b.pci(c, kGen4)};
  for (int s : switchOf) b.gpu(sw[s], kGen4, 80);
  return b;
}

// Four Gen4 GPUs under a tree of switches: a root switch under the CPU, two switches under it, two GPUs on each.
inline TopoBuilder pcieTree() {
  TopoBuilder b;
  int c = b.cpu(0);
  int root = b.pci(c, kGen4);
  int sw[2] = {b.pci(root, kGen4), b.pci(root, kGen4)};
  for (int i = 0; i < 4; ++i) b.gpu(sw[i / 2], kGen4, 80);
  return b;
}

// Two sockets joined by UPI, two GPUs on root ports of each.
inline TopoBuilder twoSockets() {
  TopoBuilder b;
  int c0 = b.cpu(0), c1 = b.cpu(1);
  b.link(c0, c1, TopoLinkKind::Sys, kUpi);
  for (int i = 0; i < 4; ++i) b.gpu(i < 2 ? c0 : c1, kGen4, 80);
  return b;
}

// One CPU, two Gen4 switches: GPU 0 shares the first with a dual-port NIC (NETs 0 and 1), GPU 1 shares the second
// with a single-port NIC (NET 2).
inline TopoBuilder gpuNicSwitches() {
  TopoBuilder b;
  int c = b.cpu(0);
  int sw0 = b.pci(c, kGen4), sw1 = b.pci(c, kGen4);
  b.gpu(sw0, kGen4, 90);
  int nic0 = b.nic(sw0, kGen4);
  b.net(nic0, kPort100G);
  b.net(nic0, kPort100G);
  b.gpu(sw1, kGen4, 90);
  b.net(b.nic(sw1, kGen4), kPort100G);
  return b;
}

}  // namespace topotest
}  // namespace braid
