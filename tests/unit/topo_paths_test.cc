// Paths between GPUs and NICs (computePaths, TopoPaths::between, nearestNets) on hand-built hosts: NCCL's classes
// (NVL through an NVSwitch, NVB through one GPU, PIX / PXB / PHB by the PCI switches and host bridge crossed, SYS
// across sockets), the widest route of the best class with the fewest hops, the routes themselves, and bad graphs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/result.h"
#include "topo_test_util.h"
#include "topology/topology.h"
#include "topology_files.h"

namespace braid {
namespace {

using namespace topotest;

TopoPaths pathsOf(const Topology& topo) {
  TopoPaths p;
  EXPECT_EQ(computePaths(topo, &p), ncclSuccess) << pendingError();
  return p;
}

// Every path's route starts and ends where it should, has hops + 1 nodes, and every step is a link of the graph.
void expectRoutesFollowLinks(const Topology& topo, const TopoPaths& p) {
  for (int a : p.endpoints) {
    for (int z : p.endpoints) {
      const TopoPath& t = p.between(a, z);
      if (t.cls == PathClass::Dis) {
        EXPECT_TRUE(t.route.empty());
        continue;
      }
      ASSERT_EQ(t.route.size(), static_cast<size_t>(t.hops + 1)) << a << "->" << z;
      EXPECT_EQ(t.route.front(), a);
      EXPECT_EQ(t.route.back(), z);
      for (size_t i = 0; i + 1 < t.route.size(); ++i) {
        bool linked = false;
        for (const TopoLink& l : topo.nodes[t.route[i]].links) linked |= l.peer == t.route[i + 1];
        EXPECT_TRUE(linked) << "step " << i << " of " << a << "->" << z;
      }
    }
  }
}

TEST(TopoPaths, EndpointsAreTheGpusAndNetsInNodeOrder) {
  TopoBuilder b = gpuNicSwitches();
  TopoPaths p = pathsOf(b.topo);
  std::vector<int> want{b.gpus[0], b.nets[0], b.nets[1], b.gpus[1], b.nets[2]};
  EXPECT_EQ(p.endpoints, want);
  EXPECT_EQ(p.matrix.size(), want.size() * want.size());
}

TEST(TopoPaths, NvswitchMeshIsNvlEverywhere) {
  TopoBuilder b = nvswitchMesh4();
  TopoPaths p = pathsOf(b.topo);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const TopoPath& t = p.between(b.gpus[i], b.gpus[j]);
      if (i == j) {
        EXPECT_EQ(t.cls, PathClass::Loc);
        EXPECT_EQ(t.hops, 0);
        EXPECT_EQ(t.route, std::vector<int>{b.gpus[i]});
        continue;
      }
      EXPECT_EQ(t.cls, PathClass::Nvl) << i << "->" << j;
      EXPECT_DOUBLE_EQ(t.bw, 18 * kNvlink);
      EXPECT_EQ(t.hops, 2);
      EXPECT_EQ(t.route, (std::vector<int>{b.gpus[i], b.nvswitch, b.gpus[j]}));
    }
  }
  expectRoutesFollowLinks(b.topo, p);
}

TEST(TopoPaths, NvlinkBridgesAreNvlAndTheRestCrossesTheHostBridge) {
  TopoBuilder b = nvlinkBridges({0, 1}, {2, 3});
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& bridged = p.between(b.gpus[0], b.gpus[1]);
  EXPECT_EQ(bridged.cls, PathClass::Nvl);
  EXPECT_DOUBLE_EQ(bridged.bw, 3 * kNvlink);
  EXPECT_EQ(bridged.hops, 1);
  // 1 and 2 share neither a bridge nor a switch: GPU, switch, CPU, switch, GPU. No NVLink route joins them, so no
  // NVB either.
  const TopoPath& across = p.between(b.gpus[1], b.gpus[2]);
  EXPECT_EQ(across.cls, PathClass::Phb);
  EXPECT_DOUBLE_EQ(across.bw, kGen4);
  EXPECT_EQ(across.hops, 4);
  EXPECT_EQ(p.between(b.gpus[0], b.gpus[3]).cls, PathClass::Phb);
  expectRoutesFollowLinks(b.topo, p);
}

TEST(TopoPaths, PcieSwitchIsPixAndTheHostBridgePhb) {
  TopoBuilder b = pcieSwitches({0, 0, 1, 1});
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& same = p.between(b.gpus[0], b.gpus[1]);
  EXPECT_EQ(same.cls, PathClass::Pix);
  EXPECT_DOUBLE_EQ(same.bw, kGen4);
  EXPECT_EQ(same.hops, 2);
  const TopoPath& other = p.between(b.gpus[1], b.gpus[2]);
  EXPECT_EQ(other.cls, PathClass::Phb);
  EXPECT_EQ(other.hops, 4);
  EXPECT_EQ(p.between(b.gpus[2], b.gpus[3]).cls, PathClass::Pix);
}

TEST(TopoPaths, SeveralSwitchesWithoutTheHostBridgeArePxb) {
  TopoBuilder b = pcieTree();
  TopoPaths p = pathsOf(b.topo);
  EXPECT_EQ(p.between(b.gpus[0], b.gpus[1]).cls, PathClass::Pix);
  const TopoPath& t = p.between(b.gpus[1], b.gpus[2]);
  EXPECT_EQ(t.cls, PathClass::Pxb);
  EXPECT_EQ(t.hops, 4);
  for (int v : t.route) EXPECT_NE(b.topo.nodes[v].kind, TopoKind::Cpu);
}

TEST(TopoPaths, BroadcomSwitchHalvesJoinedByAPcilinkArePxb) {
  // Two switches under one CPU that also list each other as pcilinks (a LOC link of 5000 GB/s, as the builder
  // makes it): GPU, switch, switch, GPU without the host bridge.
  TopoBuilder b = pcieSwitches({0, 1});
  const int sw0 = b.topo.nodes[b.gpus[0]].links[0].peer, sw1 = b.topo.nodes[b.gpus[1]].links[0].peer;
  b.link(sw0, sw1, TopoLinkKind::Loc, 5000);
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& t = p.between(b.gpus[0], b.gpus[1]);
  EXPECT_EQ(t.cls, PathClass::Pxb);
  EXPECT_EQ(t.route, (std::vector<int>{b.gpus[0], sw0, sw1, b.gpus[1]}));
  EXPECT_DOUBLE_EQ(t.bw, kGen4);
}

TEST(TopoPaths, AcrossSocketsIsSysAtTheInterconnectsBandwidth) {
  TopoBuilder b = twoSockets();
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& near = p.between(b.gpus[0], b.gpus[1]);
  EXPECT_EQ(near.cls, PathClass::Phb);  // two root ports of one CPU
  EXPECT_EQ(near.hops, 2);
  const TopoPath& far = p.between(b.gpus[1], b.gpus[2]);
  EXPECT_EQ(far.cls, PathClass::Sys);
  EXPECT_DOUBLE_EQ(far.bw, kUpi);
  EXPECT_EQ(far.hops, 3);
}

TEST(TopoPaths, Dgx1NvlinkPeersAreNvlAndTheOthersNvbThroughTheWidestGpu) {
  TopoBuilder b = dgx1();
  TopoPaths p = pathsOf(b.topo);
  const std::vector<int>& g = b.gpus;
  EXPECT_EQ(p.between(g[0], g[1]).cls, PathClass::Nvl);
  EXPECT_DOUBLE_EQ(p.between(g[0], g[1]).bw, kNvlink);
  EXPECT_DOUBLE_EQ(p.between(g[0], g[3]).bw, 2 * kNvlink);
  // The class comes first: 0-2 is one NVLink (NVL, 20 GB/s), not NVB over the NV2 pairs 0-3 and 3-2 (40 GB/s).
  EXPECT_EQ(p.between(g[0], g[2]).cls, PathClass::Nvl);
  EXPECT_DOUBLE_EQ(p.between(g[0], g[2]).bw, kNvlink);
  EXPECT_EQ(p.between(g[0], g[2]).hops, 1);
  // 0 and 7 share no NVLink; through 3 the route would carry NV2 then NV1, through 4 NV2 twice.
  const TopoPath& nvb = p.between(g[0], g[7]);
  EXPECT_EQ(nvb.cls, PathClass::Nvb);
  EXPECT_DOUBLE_EQ(nvb.bw, 2 * kNvlink);
  EXPECT_EQ(nvb.route, (std::vector<int>{g[0], g[4], g[7]}));
  // NVB (20 GB/s) beats the SYS route over the sockets' interconnect (10 GB/s).
  const TopoPath& nvb5 = p.between(g[0], g[5]);
  EXPECT_EQ(nvb5.cls, PathClass::Nvb);
  EXPECT_DOUBLE_EQ(nvb5.bw, kNvlink);
  EXPECT_EQ(nvb5.hops, 2);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      if (i != j) EXPECT_LE(p.between(g[i], g[j]).cls, PathClass::Nvb) << i << "->" << j;
  expectRoutesFollowLinks(b.topo, p);
}

TEST(TopoPaths, Dgx1GpuToNicIsAPciPathToTheNic) {
  TopoBuilder b = dgx1();
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& local = p.between(b.gpus[0], b.nets[0]);
  EXPECT_EQ(local.cls, PathClass::Pix);
  EXPECT_DOUBLE_EQ(local.bw, kGen3);  // the switch's Gen3 port, not the 12.5 GB/s of the network port
  EXPECT_EQ(local.hops, 3);           // GPU, switch, NIC, port
  EXPECT_EQ(p.between(b.nets[0], b.gpus[0]).cls, PathClass::Pix);
  EXPECT_EQ(p.between(b.gpus[0], b.nets[1]).cls, PathClass::Phb);
  // A NET path never borrows a GPU's NVLinks: to the other socket's NIC it is SYS.
  const TopoPath& remote = p.between(b.gpus[0], b.nets[3]);
  EXPECT_EQ(remote.cls, PathClass::Sys);
  EXPECT_DOUBLE_EQ(remote.bw, kUpi);
  EXPECT_EQ(p.between(b.nets[0], b.nets[1]).cls, PathClass::Phb);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(nearestNets(b.topo, p, b.gpus[i]), std::vector<int>{b.nets[i / 2]}) << i;
}

TEST(TopoPaths, CannedDgx1FileGivesNvlForItsNvlinksAndNvbForTheRest) {
  Topology t;
  ASSERT_EQ(loadTopologyFile(topologyDir() + "/dgx1_v100.xml", &t), ncclSuccess) << pendingError();
  std::vector<int> g(8, -1), net(4, -1);
  for (size_t v = 0; v < t.nodes.size(); ++v) {
    if (t.nodes[v].kind == TopoKind::Gpu) g.at(t.nodes[v].cudaDev) = static_cast<int>(v);
    if (t.nodes[v].kind == TopoKind::Net) net.at(t.nodes[v].dev) = static_cast<int>(v);
  }
  TopoPaths p = pathsOf(t);
  // The file's own table of NVLinks per pair.
  const int nv[8][8] = {
      {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
      {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
  };
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      if (i == j) continue;
      const TopoPath& x = p.between(g[i], g[j]);
      EXPECT_EQ(x.cls, nv[i][j] ? PathClass::Nvl : PathClass::Nvb) << i << "->" << j;
      if (nv[i][j]) EXPECT_DOUBLE_EQ(x.bw, nv[i][j] * kNvlink) << i << "->" << j;
    }
    EXPECT_EQ(p.between(g[i], net[i / 2]).cls, PathClass::Pix) << i;
    EXPECT_EQ(p.between(g[i], net[(i / 2) ^ 1]).cls, PathClass::Phb) << i;
    EXPECT_EQ(p.between(g[i], net[(i / 2 + 2) % 4]).cls, PathClass::Sys) << i;
    EXPECT_EQ(nearestNets(t, p, g[i]), std::vector<int>{net[i / 2]}) << i;
  }
}

TEST(TopoPaths, NearestNetsIsTheNicOnTheGpusSwitch) {
  TopoBuilder b = gpuNicSwitches();
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& t = p.between(b.gpus[0], b.nets[0]);
  EXPECT_EQ(t.cls, PathClass::Pix);
  EXPECT_DOUBLE_EQ(t.bw, kPort100G);
  EXPECT_EQ(p.between(b.gpus[0], b.nets[2]).cls, PathClass::Phb);
  EXPECT_EQ(p.between(b.nets[0], b.nets[1]).cls, PathClass::Loc);  // two ports of one NIC
  EXPECT_EQ(nearestNets(b.topo, p, b.gpus[0]), (std::vector<int>{b.nets[0], b.nets[1]}));
  EXPECT_EQ(nearestNets(b.topo, p, b.gpus[1]), std::vector<int>{b.nets[2]});
  TopoBuilder none = pcieSwitches({0, 1});
  TopoPaths q = pathsOf(none.topo);
  EXPECT_TRUE(nearestNets(none.topo, q, none.gpus[0]).empty());
}

TEST(TopoPaths, WidestRouteWinsThenFewerHops) {
  // A single NVLink between two GPUs that also have four NVLinks each to an NVSwitch: the switch is wider.
  TopoBuilder b;
  int c = b.cpu(0);
  int g0 = b.gpu(c, kGen4, 90), g1 = b.gpu(c, kGen4, 90);
  int s = b.nvs();
  b.nvlink(g0, g1, 1);
  b.nvlink(g0, s, 4);
  b.nvlink(g1, s, 4);
  TopoPaths p = pathsOf(b.topo);
  EXPECT_DOUBLE_EQ(p.between(g0, g1).bw, 4 * kNvlink);
  EXPECT_EQ(p.between(g0, g1).route, (std::vector<int>{g0, s, g1}));
  // As wide directly as through the switch: the direct link, one hop.
  b.nvlink(g0, g1, 3);  // listed again: parallel NVLinks add up to 4
  p = pathsOf(b.topo);
  EXPECT_DOUBLE_EQ(p.between(g0, g1).bw, 4 * kNvlink);
  EXPECT_EQ(p.between(g0, g1).hops, 1);
}

TEST(TopoPaths, UnreachableIsDisAndNonEndpointsHaveNoPath) {
  TopoBuilder b = pcieSwitches({0, 0});
  b.topo.nodes.emplace_back();
  b.topo.nodes.back().kind = TopoKind::Gpu;  // a GPU with no links
  const int lone = static_cast<int>(b.topo.nodes.size()) - 1;
  TopoPaths p = pathsOf(b.topo);
  const TopoPath& t = p.between(b.gpus[0], lone);
  EXPECT_EQ(t.cls, PathClass::Dis);
  EXPECT_DOUBLE_EQ(t.bw, 0);
  EXPECT_TRUE(t.route.empty());
  EXPECT_EQ(p.between(lone, lone).cls, PathClass::Loc);
  EXPECT_EQ(p.between(b.gpus[0], 0).cls, PathClass::Dis);  // node 0 is the CPU
  EXPECT_EQ(p.between(-1, b.gpus[0]).cls, PathClass::Dis);
  EXPECT_EQ(TopoPaths{}.between(0, 0).cls, PathClass::Dis);
}

TEST(TopoPaths, ALinkToNoNodeIsRejected) {
  TopoBuilder b = pcieSwitches({0, 0});
  b.topo.nodes[b.gpus[1]].links.push_back({42, TopoLinkKind::Nvl, kNvlink});
  TopoPaths p;
  p.endpoints = {7};
  clearPendingError();
  EXPECT_EQ(computePaths(b.topo, &p), ncclInvalidArgument);
  EXPECT_NE(pendingError().find("node 42"), std::string::npos) << pendingError();
  EXPECT_EQ(p.endpoints, std::vector<int>{7});  // untouched
  clearPendingError();
  b.topo.nodes[b.gpus[1]].links.back() = {b.gpus[0], TopoLinkKind::Nvl, -1};
  EXPECT_EQ(computePaths(b.topo, &p), ncclInvalidArgument);
  EXPECT_NE(pendingError().find("bandwidth -1"), std::string::npos) << pendingError();
  clearPendingError();
}

}  // namespace
}  // namespace braid
