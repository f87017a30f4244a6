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

// The bound the model counts is what the topology builds (tree_topology_test checks the trees against it).
TEST(TunerTree, DepthBound) {
  EXPECT_EQ(treeDepthBound(1, 4), 3);
  EXPECT_EQ(treeDepthBound(2, 1), 1);
  EXPECT_EQ(treeDepthBound(4, 2), 5);
  EXPECT_EQ(treeDepthBound(64, 8), 55);
}

}  // namespace
}  // namespace braid
