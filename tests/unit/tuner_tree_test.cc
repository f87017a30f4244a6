// The tuner's choice between the ring and the double binary tree for all-reduce (tuner_model.def's BRAID_TUNER_TREE,
// shapeOf's Tree): by size and node count, only where the executor offers trees, and NCCL_ALGO honoured.
#include <gtest/gtest.h>

#include "algo/tree_topology.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

TuneRequest hostRequest(size_t bytes, int nranks, int nNodes, TransportClass t) {
  TuneRequest r;
  r.coll = CollType::AllReduce;
  r.bytes = bytes;
  r.nranks = nranks;
  r.nNodes = nNodes;
  r.transport = t;
  r.algosAvailable = bit(Algo::Ring) | bit(Algo::Tree);
  r.protosAvailable = bit(Proto::Simple);
  r.connectedChannels = 1;
  r.maxThreads = 1;
  return r;
}

// Across many nodes the tree's latency (log2 of the nodes) wins small all-reduces and the ring's bandwidth large
// ones; the crossover moves up with the node count.
TEST(TunerTree, SmallOnTreesLargeOnRingAcrossNodes) {
  const TunerConfig cfg;
  size_t lastCross = 0;
  for (int nodes : {32, 64, 128}) {
    EXPECT_EQ(tune(hostRequest(8, nodes, nodes, TransportClass::HostSocket), cfg).algo, Algo::Tree) << nodes;
    EXPECT_EQ(tune(hostRequest(size_t{256} << 20, nodes, nodes, TransportClass::HostSocket), cfg).algo, Algo::Ring)
        << nodes;
    size_t cross = 0;
    for (size_t b = 8; b <= (size_t{256} << 20); b *= 2) {
      if (tune(hostRequest(b, nodes, nodes, TransportClass::HostSocket), cfg).algo == Algo::Ring) {
        cross = b;
        break;
      }
    }
    EXPECT_GT(cross, lastCross) << nodes << " nodes";
    lastCross = cross;
  }
}

// A few nodes stay on the ring: a tree hop over sockets measured several ring hops (tuner_model.def).
TEST(TunerTree, FewNodesStayOnTheRing) {
  const TunerConfig cfg;
  for (int nodes : {2, 4, 8})
    for (size_t b : {size_t{8}, size_t{1} << 20})
      EXPECT_EQ(tune(hostRequest(b, nodes * 2, nodes, TransportClass::HostSocket), cfg).algo, Algo::Ring) << nodes;
}

// On one node the trees are chains: no fewer steps than the ring, half its bandwidth, never chosen.
TEST(TunerTree, OneNodeStaysOnTheRing) {
  const TunerConfig cfg;
  for (size_t b : {size_t{8}, size_t{1} << 20, size_t{1} << 30})
    for (TransportClass t : {TransportClass::HostShm, TransportClass::HostSocket})
      EXPECT_EQ(tune(hostRequest(b, 4, 1, t), cfg).algo, Algo::Ring) << b;
}

// The executor's offer bounds the choice; NCCL_ALGO forces either way.
TEST(TunerTree, OfferAndOverride) {
  TunerConfig cfg;
  TuneRequest r = hostRequest(8, 64, 64, TransportClass::HostSocket);
  EXPECT_EQ(tune(r, cfg).algo, Algo::Tree);
  r.algosAvailable = bit(Algo::Ring);
  EXPECT_EQ(tune(r, cfg).algo, Algo::Ring);
  r.algosAvailable |= bit(Algo::Tree);
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "ring", &cfg.algos), ncclSuccess);
  EXPECT_EQ(tune(r, cfg).algo, Algo::Ring);
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "allreduce:tree", &cfg.algos), ncclSuccess);
  r.bytes = size_t{1} << 30;
  TuneDecision d = tune(r, cfg);
  EXPECT_EQ(d.algo, Algo::Tree);
  EXPECT_EQ(d.flags, 0u);
  // The tree's predicted latency follows its depth: more nodes, more steps.
  r.bytes = 8;
  const double few = predictUs(hostRequest(8, 8, 2, TransportClass::HostSocket), Algo::Tree, Proto::Simple, 1, 0);
  const double many = predictUs(hostRequest(8, 128, 64, TransportClass::HostSocket), Algo::Tree, Proto::Simple, 1, 0);
  EXPECT_LT(few, many);
  const double ring = predictUs(hostRequest(8, 128, 64, TransportClass::HostSocket), Algo::Ring, Proto::Simple, 1, 0);
  EXPECT_LT(many, ring);
}

// A GPU communicator across nodes as the planner asks (coll_plan.cc): the ring's class is the network's, the tree's
// chains run over NVLink, Ring and Tree on Simple and LL, the 4 channels a ring with a NET link connects.
TuneRequest gpuRequest(size_t bytes, int nodes, int perNode, uint32_t protos = bit(Proto::Simple) | bit(Proto::LL)) {
  TuneRequest r;
  r.coll = CollType::AllReduce;
  r.bytes = bytes;
  r.nranks = nodes * perNode;
  r.nNodes = nodes;
  r.transport = TransportClass::NetSocket;
  r.intraTransport = TransportClass::P2pNvlink;
  r.algosAvailable = bit(Algo::Ring) | bit(Algo::Tree);
  r.protosAvailable = protos;
  r.connectedChannels = 4;
  r.maxThreads = 512;
  return r;
}

// 2 nodes of 2 GPUs (4xH200, sockets between the nodes; docs/TUNING.md): the tree measured faster than the ring from
// 512 B to 256 KB on Simple, the ring at 2 MB. The ring's data crosses a socket 4 times on its way, the tree's once
// each way, and it walks the chains over NVLink.
TEST(TunerTree, TwoNodesOfTwoGpusPickTheTreeWhereItWins) {
  const TunerConfig cfg;
  for (size_t b : {size_t{512}, size_t{4} << 10, size_t{32} << 10, size_t{256} << 10}) {
    EXPECT_EQ(tune(gpuRequest(b, 2, 2, bit(Proto::Simple)), cfg).algo, Algo::Tree) << b;
    EXPECT_EQ(tune(gpuRequest(b, 2, 2), cfg).algo, Algo::Tree) << b;
  }
  EXPECT_EQ(tune(gpuRequest(size_t{2} << 20, 2, 2, bit(Proto::Simple)), cfg).algo, Algo::Ring);
  EXPECT_EQ(tune(gpuRequest(size_t{2} << 20, 2, 2), cfg).algo, Algo::Ring);
  // Simple's tree against Simple's ring at 4 KB, one channel each: measured 50-57 us against 58.7; the ring's
  // data crosses the socket 4 times on its way, the tree's twice.
  const TuneRequest r = gpuRequest(size_t{4} << 10, 2, 2, bit(Proto::Simple));
  EXPECT_LT(predictUs(r, Algo::Tree, Proto::Simple, 1, 0) + 5.0, predictUs(r, Algo::Ring, Proto::Simple, 1, 0));
}

// 2 nodes of 1 GPU (2xH200): both cross the socket once each way; the ring measured faster at every size.
TEST(TunerTree, TwoNodesOfOneGpuKeepTheRing) {
  const TunerConfig cfg;
  for (size_t b = 8; b <= (size_t{64} << 20); b *= 4) {
    EXPECT_EQ(tune(gpuRequest(b, 2, 1, bit(Proto::Simple)), cfg).algo, Algo::Ring) << b;
    EXPECT_EQ(tune(gpuRequest(b, 2, 1), cfg).algo, Algo::Ring) << b;
  }
}

// Many GPUs a node, 4 and 8 nodes: the ring's data crosses the network twice per node on its way, the tree's
// 2·log2(nodes) times, so the tree takes the small sizes; the ring takes the large ones, where the tree's busiest
// node carries twice the buffer each way and each of its long chains passes a first chunk on.
TEST(TunerTree, EightGpuNodesTreeSmallRingLarge) {
  const TunerConfig cfg;
  for (int nodes : {4, 8}) {
    for (uint32_t protos : {bit(Proto::Simple), bit(Proto::Simple) | bit(Proto::LL)}) {
      EXPECT_EQ(tune(gpuRequest(8, nodes, 8, protos), cfg).algo, Algo::Tree) << nodes;
      EXPECT_EQ(tune(gpuRequest(512, nodes, 8, protos), cfg).algo, Algo::Tree) << nodes;
      EXPECT_EQ(tune(gpuRequest(size_t{256} << 20, nodes, 8, protos), cfg).algo, Algo::Ring) << nodes;
      // One crossover: once the ring wins, it keeps winning.
      bool ring = false;
      for (size_t b = 8; b <= (size_t{1} << 30); b *= 2) {
        const Algo a = tune(gpuRequest(b, nodes, 8, protos), cfg).algo;
        if (ring) EXPECT_EQ(a, Algo::Ring) << nodes << " nodes, " << b << " bytes";
        ring = ring || a == Algo::Ring;
      }
      EXPECT_TRUE(ring) << nodes;
    }
  }
}

// The hops split: chain hops inside a node cost the intra-node row's step, so SHM chains make the tree dearer than
// NVLink chains, and more GPUs a node lengthen the chains, not the network hops.
TEST(TunerTree, ChainHopsPricedByTheirOwnTransport) {
  TuneRequest nvl = gpuRequest(8, 4, 8, bit(Proto::Simple));
  TuneRequest shm = nvl;
  shm.intraTransport = TransportClass::Shm;
  EXPECT_LT(predictUs(nvl, Algo::Tree, Proto::Simple, 1, 0), predictUs(shm, Algo::Tree, Proto::Simple, 1, 0));
  int net = 0, chain = 0;
  treeHops(4, 8, &net, &chain);
  EXPECT_EQ(net, 2);
  EXPECT_EQ(chain, 21);
  EXPECT_EQ(net + chain, treeDepthBound(4, 8));
  treeHops(2, 1, &net, &chain);
  EXPECT_EQ(net, 1);
  EXPECT_EQ(chain, 0);
  treeHops(2, 2, &net, &chain);
  EXPECT_EQ(net, 1);
  EXPECT_EQ(chain, 2);
}

// The ring's steps inside a node cost its own intra-node class (ringIntraTransport), not the tree's: a ring over
// SHM inside the nodes (NCCL_ALGO=Ring, no trees connected) is dearer than one over NVLink, and the tree's class
// leaves the ring's price alone.
TEST(TunerTree, RingStepsInsideANodePricedByTheRingsClass) {
  for (CollType c : {CollType::AllReduce, CollType::AllGather}) {
    TuneRequest nvl = gpuRequest(4096, 2, 4);
    nvl.coll = c;
    TuneRequest shm = nvl;
    shm.ringIntraTransport = TransportClass::Shm;
    EXPECT_LT(predictUs(nvl, Algo::Ring, Proto::Simple, 1, 0), predictUs(shm, Algo::Ring, Proto::Simple, 1, 0))
        << static_cast<int>(c);
    TuneRequest treeShm = nvl;
    treeShm.intraTransport = TransportClass::Shm;
    EXPECT_EQ(predictUs(nvl, Algo::Ring, Proto::Simple, 1, 0), predictUs(treeShm, Algo::Ring, Proto::Simple, 1, 0))
        << static_cast<int>(c);
  }
}

// The bound the model counts is what the topology builds (tree_topology_test checks the trees against it).
TEST(TunerTree, DepthBound) {
  EXPECT_EQ(treeDepthBound(1, 4), 3);
  EXPECT_EQ(treeDepthBound(2, 1), 1);
  EXPECT_EQ(treeDepthBound(4, 2), 5);
  EXPECT_EQ(treeDepthBound(64, 8), 55);
}

}  // namespace
}  // namespace braid
