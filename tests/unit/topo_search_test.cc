// Ring search (searchRings) and its graph XML (ringsGraphXml) on hand-built hosts: rank order kept on a full mesh,
// NVLink bridges used, a DGX-1's rings on NVLink only (several distinct ones, every NVLink within its bandwidth),
// PCIe switches and sockets crossed as few times as possible, the greedy walk beyond eight ranks, the ring count
// from bandwidth, bad input, and the XML NCCL_GRAPH_DUMP_FILE gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "topo_test_util.h"
#include "topology/topo_xml.h"
#include "topology/topology.h"
#include "topology_files.h"

namespace braid {
namespace {

using namespace topotest;
using Ring = std::vector<int>;

struct Searched {
  TopoPaths paths;
  TopoRings rings;
};

Searched search(const Topology& topo, const std::vector<int>& rankGpu, int maxRings) {
  Searched s;
  EXPECT_EQ(computePaths(topo, &s.paths), ncclSuccess) << pendingError();
  EXPECT_EQ(searchRings(topo, s.paths, rankGpu, maxRings, &s.rings), ncclSuccess) << pendingError();
  return s;
}

// Rotated so that rank 0 comes first: the same cyclic order compares equal.
Ring canonical(Ring r) {
  auto zero = std::find(r.begin(), r.end(), 0);
  std::rotate(r.begin(), zero, r.end());
  return r;
}

void expectPermutations(const TopoRings& t, int n) {
  ASSERT_FALSE(t.rings.empty());
  for (const Ring& r : t.rings) {
    Ring sorted = r;
    std::sort(sorted.begin(), sorted.end());
    Ring want(n);
    for (int i = 0; i < n; ++i) want[i] = i;
    EXPECT_EQ(sorted, want) << "not a permutation of the ranks";
  }
}

void expectOneOf(const Ring& ring, const std::set<Ring>& allowed) {
  EXPECT_TRUE(allowed.count(canonical(ring)))
      << "ring " << ::testing::PrintToString(ring) << " is not one of " << ::testing::PrintToString(allowed);
}

std::vector<PathClass> hopClasses(const Searched& s, const std::vector<int>& rankGpu, const Ring& ring) {
  std::vector<PathClass> out;
  for (size_t i = 0; i < ring.size(); ++i)
    out.push_back(s.paths.between(rankGpu[ring[i]], rankGpu[ring[(i + 1) % ring.size()]]).cls);
  return out;
}

int countOf(const std::vector<PathClass>& v, PathClass c) {
  return static_cast<int>(std::count(v.begin(), v.end(), c));
}

// No directed link carries more than its bandwidth once every ring takes bwPerRing along each of its hops' routes.
void expectWithinLinkBandwidth(const Topology& topo, const Searched& s, const std::vector<int>& rankGpu) {
  std::map<std::pair<int, int>, double> load;
  for (const Ring& r : s.rings.rings) {
    for (size_t i = 0; i < r.size(); ++i) {
      const std::vector<int>& route = s.paths.between(rankGpu[r[i]], rankGpu[r[(i + 1) % r.size()]]).route;
      for (size_t k = 0; k + 1 < route.size(); ++k) load[{route[k], route[k + 1]}] += s.rings.bwPerRing;
    }
  }
  for (const auto& kv : load) {
    double bw = 0;
    for (const TopoLink& l : topo.nodes[kv.first.first].links)
      if (l.peer == kv.first.second) bw += l.bw;
    EXPECT_LE(kv.second, bw * (1 + 1e-9)) << "link " << kv.first.first << "->" << kv.first.second;
  }
}

TEST(TopoSearch, NvswitchMeshKeepsRankOrderOnEveryRing) {
  TopoBuilder b = nvswitchMesh4();
  Searched s = search(b.topo, b.gpus, 16);
  // 18 NVLinks each way (360 GB/s) at 60 GB/s a channel: six rings, all rank order.
  ASSERT_EQ(s.rings.rings.size(), 6u);
  for (const Ring& r : s.rings.rings) EXPECT_EQ(r, (Ring{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, 60);
  EXPECT_EQ(s.rings.worst, PathClass::Nvl);
  expectWithinLinkBandwidth(b.topo, s, b.gpus);
  // The caller's cap: four rings, still at 60 GB/s each.
  Searched capped = search(b.topo, b.gpus, 4);
  EXPECT_EQ(capped.rings.rings.size(), 4u);
  EXPECT_DOUBLE_EQ(capped.rings.bwPerRing, 60);
}

TEST(TopoSearch, NvlinkBridgedPairsInRankOrderKeepRankOrder) {
  // Bridges 0-1 and 2-3, GPUs 0 1 on one switch and 2 3 on the other: rank order uses both bridges and crosses the
  // host bridge twice, as well as 0 1 3 2 does; rank order stays.
  TopoBuilder b = nvlinkBridges({0, 1}, {2, 3});
  Searched s = search(b.topo, b.gpus, 8);
  expectPermutations(s.rings, 4);
  ASSERT_EQ(s.rings.rings.size(), 1u);
  expectOneOf(s.rings.rings[0], {{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 3, 1}, {0, 3, 2, 1}});
  EXPECT_EQ(s.rings.rings[0], (Ring{0, 1, 2, 3}));
  std::vector<PathClass> cls = hopClasses(s, b.gpus, s.rings.rings[0]);
  EXPECT_EQ(countOf(cls, PathClass::Nvl), 2);
  EXPECT_EQ(countOf(cls, PathClass::Phb), 2);
  EXPECT_EQ(s.rings.worst, PathClass::Phb);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kGen4);
}

TEST(TopoSearch, NvlinkBridgesAcrossTheSwitchesAreBothUsed) {
  // Bridges 0-2 and 1-3, GPUs 0 1 on one switch and 2 3 on the other: 0 1 3 2 takes both bridges and stays under
  // the switches (PIX); rank order would cross the host bridge twice on PCIe alone.
  TopoBuilder b = nvlinkBridges({0, 2}, {1, 3});
  Searched s = search(b.topo, b.gpus, 8);
  expectPermutations(s.rings, 4);
  for (const Ring& r : s.rings.rings) {
    expectOneOf(r, {{0, 1, 3, 2}, {0, 2, 3, 1}});
    std::vector<PathClass> cls = hopClasses(s, b.gpus, r);
    EXPECT_EQ(countOf(cls, PathClass::Nvl), 2);
    EXPECT_EQ(countOf(cls, PathClass::Phb), 0);
  }
  EXPECT_EQ(s.rings.worst, PathClass::Pix);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kGen4);
}

TEST(TopoSearch, NvlinkChainClosesOverNvbRatherThanPcie) {
  // Rank order would close 3 -> 0 over the switch (PIX); going out on even GPUs and back on odd ones (NVB hops
  // through the GPU in between) keeps every hop on NVLink at the same 20 GB/s.
  TopoBuilder b = nvlinkChainOnSwitch();
  Searched s = search(b.topo, b.gpus, 8);
  expectPermutations(s.rings, 4);
  expectOneOf(s.rings.rings[0], {{0, 1, 3, 2}, {0, 2, 3, 1}});
  EXPECT_EQ(s.rings.worst, PathClass::Nvb);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kNvlink);
  EXPECT_EQ(countOf(hopClasses(s, b.gpus, {0, 1, 2, 3}), PathClass::Pix), 1);
  expectWithinLinkBandwidth(b.topo, s, b.gpus);
}

TEST(TopoSearch, Dgx1RingsStayOnNvlink) {
  TopoBuilder b = dgx1();
  const auto start = std::chrono::steady_clock::now();
  Searched s = search(b.topo, b.gpus, 16);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 2.0) << "the search of 8 GPUs must stay fast";
  expectPermutations(s.rings, 8);
  for (const Ring& r : s.rings.rings) {
    std::vector<PathClass> cls = hopClasses(s, b.gpus, r);
    EXPECT_EQ(countOf(cls, PathClass::Nvl), 8) << ::testing::PrintToString(r);
  }
  EXPECT_EQ(s.rings.worst, PathClass::Nvl);
  // The double-NVLink cycle comes first (40 GB/s alone); with the single-NVLink cycle, each run both ways, every
  // NVLink is full in both directions at 20 GB/s a ring: 6 x 20 = 120 GB/s, more than 2 x 40 on the doubles alone.
  const Ring dbl{0, 3, 2, 1, 5, 6, 7, 4}, dblRev{0, 4, 7, 6, 5, 1, 2, 3};
  const Ring sgl{0, 1, 3, 7, 5, 4, 6, 2}, sglRev{0, 2, 6, 4, 5, 7, 3, 1};
  expectOneOf(s.rings.rings[0], {dbl, dblRev});
  ASSERT_EQ(s.rings.rings.size(), 6u);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kNvlink);
  std::set<Ring> distinct;
  for (const Ring& r : s.rings.rings) distinct.insert(canonical(r));
  EXPECT_EQ(distinct, (std::set<Ring>{dbl, dblRev, sgl, sglRev}));
  expectWithinLinkBandwidth(b.topo, s, b.gpus);

  // One ring allowed: the double-NVLink cycle at 40.
  Searched one = search(b.topo, b.gpus, 1);
  ASSERT_EQ(one.rings.rings.size(), 1u);
  expectOneOf(one.rings.rings[0], {dbl, dblRev});
  EXPECT_DOUBLE_EQ(one.rings.bwPerRing, 2 * kNvlink);
}

TEST(TopoSearch, Dgx1QuadOfOneSocketStaysOnNvlink) {
  TopoBuilder b = dgx1();
  std::vector<int> ranks{b.gpus[0], b.gpus[1], b.gpus[2], b.gpus[3]};
  Searched s = search(b.topo, ranks, 16);
  expectPermutations(s.rings, 4);
  for (const Ring& r : s.rings.rings) EXPECT_EQ(countOf(hopClasses(s, ranks, r), PathClass::Nvl), 4);
  // The quad's double NVLinks (0-3, 3-2, 2-1) close no cycle: every ring has a 20 GB/s hop, so rank order stays.
  EXPECT_EQ(s.rings.rings[0], (Ring{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kNvlink);
  expectWithinLinkBandwidth(b.topo, s, ranks);
}

TEST(TopoSearch, PcieSwitchesCrossTheHostBridgeTwice) {
  TopoBuilder b = pcieSwitches({0, 0, 1, 1});
  Searched s = search(b.topo, b.gpus, 8);
  ASSERT_EQ(s.rings.rings.size(), 1u);
  EXPECT_EQ(s.rings.rings[0], (Ring{0, 1, 2, 3}));
  EXPECT_EQ(countOf(hopClasses(s, b.gpus, s.rings.rings[0]), PathClass::Phb), 2);
  EXPECT_EQ(s.rings.worst, PathClass::Phb);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kGen4);
}

TEST(TopoSearch, InterleavedPcieSwitchesLeaveRankOrder) {
  // GPUs 0 2 on one switch, 1 3 on the other: rank order would cross the host bridge four times and share each
  // switch's uplink between two hops.
  TopoBuilder b = pcieSwitches({0, 1, 0, 1});
  Searched s = search(b.topo, b.gpus, 8);
  expectPermutations(s.rings, 4);
  ASSERT_EQ(s.rings.rings.size(), 1u);
  expectOneOf(s.rings.rings[0], {{0, 2, 1, 3}, {0, 3, 1, 2}, {0, 2, 3, 1}, {0, 1, 3, 2}});
  EXPECT_EQ(countOf(hopClasses(s, b.gpus, s.rings.rings[0]), PathClass::Phb), 2);
  EXPECT_EQ(countOf(hopClasses(s, b.gpus, {0, 1, 2, 3}), PathClass::Phb), 4);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kGen4);
  expectWithinLinkBandwidth(b.topo, s, b.gpus);
  // The same GPUs with ranks given in switch order: rank order is best again.
  std::vector<int> bySwitch{b.gpus[0], b.gpus[2], b.gpus[1], b.gpus[3]};
  Searched t = search(b.topo, bySwitch, 8);
  EXPECT_EQ(t.rings.rings[0], (Ring{0, 1, 2, 3}));
}

TEST(TopoSearch, SwitchTreeCrossesTheRootSwitchTwice) {
  TopoBuilder b = pcieTree();
  Searched s = search(b.topo, {b.gpus[0], b.gpus[2], b.gpus[1], b.gpus[3]}, 8);
  expectPermutations(s.rings, 4);
  expectOneOf(s.rings.rings[0], {{0, 2, 1, 3}, {0, 3, 1, 2}, {0, 2, 3, 1}, {0, 1, 3, 2}});
  EXPECT_EQ(s.rings.worst, PathClass::Pxb);
}

TEST(TopoSearch, TwoSocketsCrossTheInterconnectOnceEachWay) {
  TopoBuilder b = twoSockets();
  Searched s = search(b.topo, b.gpus, 8);
  ASSERT_EQ(s.rings.rings.size(), 1u);
  EXPECT_EQ(s.rings.rings[0], (Ring{0, 1, 2, 3}));
  EXPECT_EQ(countOf(hopClasses(s, b.gpus, s.rings.rings[0]), PathClass::Sys), 2);
  EXPECT_EQ(s.rings.worst, PathClass::Sys);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, kUpi);
  // Ranks alternating between the sockets: the ring still crosses twice.
  Searched t = search(b.topo, {b.gpus[0], b.gpus[2], b.gpus[1], b.gpus[3]}, 8);
  EXPECT_EQ(countOf(hopClasses(t, {b.gpus[0], b.gpus[2], b.gpus[1], b.gpus[3]}, t.rings.rings[0]), PathClass::Sys), 2);
}

TEST(TopoSearch, BeyondEightRanksTheGreedyWalkKeepsRankOrderOrCrossesTwice) {
  TopoBuilder mesh;
  int c = mesh.cpu(0), nvs = mesh.nvs();
  for (int i = 0; i < 12; ++i) mesh.nvlink(mesh.gpu(c, kGen4, 90), nvs, 18);
  Searched s = search(mesh.topo, mesh.gpus, 8);
  expectPermutations(s.rings, 12);
  Ring order(12);
  for (int i = 0; i < 12; ++i) order[i] = i;
  for (const Ring& r : s.rings.rings) EXPECT_EQ(r, order);

  std::vector<int> alternate;
  for (int i = 0; i < 10; ++i) alternate.push_back(i % 2);
  TopoBuilder b = pcieSwitches(alternate);
  const auto start = std::chrono::steady_clock::now();
  Searched t = search(b.topo, b.gpus, 8);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  expectPermutations(t.rings, 10);
  EXPECT_EQ(countOf(hopClasses(t, b.gpus, t.rings.rings[0]), PathClass::Phb), 2);
  expectWithinLinkBandwidth(b.topo, t, b.gpus);
}

TEST(TopoSearch, OneRankIsOneRing) {
  TopoBuilder b = pcieSwitches({0});
  Searched s = search(b.topo, b.gpus, 8);
  ASSERT_EQ(s.rings.rings.size(), 1u);
  EXPECT_EQ(s.rings.rings[0], Ring{0});
  EXPECT_EQ(s.rings.worst, PathClass::Loc);
  EXPECT_GT(s.rings.bwPerRing, 0);
}

TEST(TopoSearch, GpusWithoutAPathFallBackToRankOrder) {
  TopoBuilder b = pcieSwitches({0, 0});
  b.topo.nodes.emplace_back();
  b.topo.nodes.back().kind = TopoKind::Gpu;
  std::vector<int> ranks{b.gpus[1], static_cast<int>(b.topo.nodes.size()) - 1, b.gpus[0]};
  Searched s = search(b.topo, ranks, 8);
  ASSERT_EQ(s.rings.rings.size(), 1u);
  EXPECT_EQ(s.rings.rings[0], (Ring{0, 1, 2}));
  EXPECT_EQ(s.rings.worst, PathClass::Dis);
  EXPECT_DOUBLE_EQ(s.rings.bwPerRing, 0);
}

TEST(TopoSearch, BadRanksAreRejected) {
  TopoBuilder b = pcieSwitches({0, 1});
  TopoPaths p;
  ASSERT_EQ(computePaths(b.topo, &p), ncclSuccess);
  struct Case {
    std::vector<int> ranks;
    int maxRings;
    const char* message;
  } cases[] = {
      {{}, 4, "no ranks"},
      {b.gpus, 0, "maxRings 0"},
      {{b.gpus[0], 0}, 4, "rank 1's node 0 is no GPU"},
      {{b.gpus[0], 99}, 4, "rank 1's node 99 is no GPU"},
      {{b.gpus[0], b.gpus[1], b.gpus[0]}, 4, "ranks 0 and 2 are both on GPU node"},
  };
  for (const Case& c : cases) {
    clearPendingError();
    TopoRings out;
    out.bwPerRing = -1;
    EXPECT_EQ(searchRings(b.topo, p, c.ranks, c.maxRings, &out), ncclInvalidArgument) << c.message;
    EXPECT_NE(pendingError().find(c.message), std::string::npos) << pendingError();
    EXPECT_DOUBLE_EQ(out.bwPerRing, -1);  // untouched
  }
  clearPendingError();
}

Topology loadCanned(const std::string& name) {
  Topology t;
  EXPECT_EQ(loadTopologyFile(topologyDir() + "/" + name, &t), ncclSuccess) << pendingError();
  return t;
}

std::vector<int> gpusOf(const Topology& t) {
  std::vector<int> g = t.all(TopoKind::Gpu);
  std::sort(g.begin(), g.end(), [&](int a, int b) { return t.nodes[a].cudaDev < t.nodes[b].cudaDev; });
  return g;
}

TEST(TopoSearch, EveryCannedMachineGetsRingsOfItsRanksWithinTheLinks) {
  for (const std::string& name : cannedTopologyFiles()) {
    SCOPED_TRACE(name);
    Topology t = loadCanned(name);
    const std::vector<int> gpus = gpusOf(t);
    ASSERT_FALSE(gpus.empty());
    Searched s = search(t, gpus, 32);
    expectPermutations(s.rings, static_cast<int>(gpus.size()));
    EXPECT_GT(s.rings.bwPerRing, 0);
    EXPECT_LT(s.rings.worst, PathClass::Net);
    expectWithinLinkBandwidth(t, s, gpus);
  }
}

TEST(TopoSearch, CannedMachinesGetTheirRings) {
  {
    Topology t = loadCanned("dgx1_v100.xml");
    const std::vector<int> g = gpusOf(t);
    Searched s = search(t, g, 32);
    EXPECT_EQ(s.rings.worst, PathClass::Nvl);
    EXPECT_EQ(s.rings.rings.size(), 6u);
    for (const Ring& r : s.rings.rings) EXPECT_EQ(countOf(hopClasses(s, g, r), PathClass::Nvl), 8);
  }
  {
    Topology t = loadCanned("dgx_h100.xml");
    Searched s = search(t, gpusOf(t), 32);
    EXPECT_EQ(s.rings.worst, PathClass::Nvl);
    for (const Ring& r : s.rings.rings) EXPECT_EQ(r, (Ring{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  {
    Topology t = loadCanned("nvbridge_pairs.xml");
    const std::vector<int> g = gpusOf(t);
    Searched s = search(t, g, 32);
    for (const Ring& r : s.rings.rings) EXPECT_EQ(countOf(hopClasses(s, g, r), PathClass::Nvl), 2);
  }
  {
    Topology t = loadCanned("pcie_2sw.xml");
    const std::vector<int> g = gpusOf(t);
    Searched s = search(t, g, 32);
    for (const Ring& r : s.rings.rings) EXPECT_EQ(countOf(hopClasses(s, g, r), PathClass::Phb), 2);
  }
}

const std::string* attrOf(const XmlNode& n, const char* key) { return n.attr(key); }

TEST(TopoSearch, GraphXmlOfAMeshHasOneChannelPerRingAndNoNets) {
  TopoBuilder b = nvswitchMesh4();
  Searched s = search(b.topo, b.gpus, 16);
  XmlNode x = ringsGraphXml(s.rings, b.gpus, b.topo);
  EXPECT_EQ(x.name, "graphs");
  ASSERT_NE(attrOf(x, "version"), nullptr);
  EXPECT_EQ(*attrOf(x, "version"), "1");
  ASSERT_EQ(x.children.size(), 1u);
  const XmlNode& g = x.children[0];
  EXPECT_EQ(g.name, "graph");
  std::vector<std::string> keys;
  for (const auto& a : g.attrs) keys.push_back(a.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "pattern", "crossnic", "nchannels", "speedintra", "speedinter",
                                            "latencyinter", "typeintra", "typeinter", "samechannels"}));
  ASSERT_EQ(g.children.size(), 6u);
  for (const XmlNode& ch : g.children) {
    EXPECT_EQ(ch.name, "channel");
    ASSERT_EQ(ch.children.size(), 4u);  // no NICs: GPUs only
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(ch.children[i].name, "gpu");
      EXPECT_EQ(*attrOf(ch.children[i], "dev"), std::to_string(i));
    }
  }
  const std::string text = writeXml(x);
  EXPECT_NE(text.find("<graphs version=\"1\">\n  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"6\" "
                      "speedintra=\"60\" speedinter=\"60\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" "
                      "samechannels=\"1\">\n    <channel>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"1\"/>"),
            std::string::npos)
      << text;
}

TEST(TopoSearch, GraphXmlNamesCudaDevicesAndTheNicsAtEachEnd) {
  TopoBuilder b = dgx1();
  // Ranks on the GPUs in reverse, so a rank's number and its GPU's CUDA ordinal differ.
  std::vector<int> ranks(b.gpus.rbegin(), b.gpus.rend());
  Searched s = search(b.topo, ranks, 16);
  XmlNode x = ringsGraphXml(s.rings, ranks, b.topo);
  ASSERT_EQ(x.children.size(), 1u);
  const XmlNode& g = x.children[0];
  EXPECT_EQ(*attrOf(g, "nchannels"), std::to_string(s.rings.rings.size()));
  EXPECT_EQ(*attrOf(g, "speedintra"), "20");
  EXPECT_EQ(*attrOf(g, "typeintra"), "NVL");
  EXPECT_EQ(*attrOf(g, "typeinter"), "PIX");  // every GPU has a NIC on its switch
  EXPECT_EQ(*attrOf(g, "samechannels"), "0");
  ASSERT_EQ(g.children.size(), s.rings.rings.size());
  for (size_t c = 0; c < g.children.size(); ++c) {
    const XmlNode& ch = g.children[c];
    const Ring& r = s.rings.rings[c];
    ASSERT_EQ(ch.children.size(), r.size() + 2);
    EXPECT_EQ(ch.children.front().name, "net");
    EXPECT_EQ(ch.children.back().name, "net");
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_EQ(ch.children[i + 1].name, "gpu");
      EXPECT_EQ(*attrOf(ch.children[i + 1], "dev"), std::to_string(7 - r[i]));
    }
    // The NIC on the switch of the first and of the last GPU (two GPUs and one NIC per switch).
    EXPECT_EQ(*attrOf(ch.children.front(), "dev"), std::to_string((7 - r.front()) / 2));
    EXPECT_EQ(*attrOf(ch.children.back(), "dev"), std::to_string((7 - r.back()) / 2));
  }
}

// Channels follow the slowest hop: one per 5 GB/s, at least 4, at most what the runtime offers.
TEST(TopoSearch, ChannelsFollowTheSlowestHop) {
  EXPECT_EQ(ringChannelsFor(370.8, 64), 64);  // NV18
  EXPECT_EQ(ringChannelsFor(320, 64), 64);
  EXPECT_EQ(ringChannelsFor(319, 64), 64);
  EXPECT_EQ(ringChannelsFor(300, 64), 60);
  EXPECT_EQ(ringChannelsFor(40, 64), 8);      // two V100 NVLinks
  EXPECT_EQ(ringChannelsFor(24, 64), 5);      // PCIe Gen4 x16
  EXPECT_EQ(ringChannelsFor(6, 64), 4);       // a socket hop: the floor
  EXPECT_EQ(ringChannelsFor(24, 3), 3);       // never above the offer
  EXPECT_EQ(ringChannelsFor(0, 64), 64);      // unknown: the offer
  EXPECT_EQ(ringChannelsFor(-1, 16), 16);
  EXPECT_EQ(ringChannelsFor(1e9, 64), 64);
}

}  // namespace
}  // namespace braid
