// The plan of a GPU all-reduce where trees are connected (coll_plan.h's treeChannels): NCCL_ALGO=Tree runs the tree
// kernel on Simple in two CTAs per channel, within the trees' channels, and on LL where every tree connection has
// LL slots; no trees, or NCCL_PROTO without a protocol the tree can run, keeps the ring; other collectives never run
// on the trees; the tuner's unforced choice across nodes.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/gpu/coll_plan.h"

using namespace braid;

namespace {

// nranks ranks, one per node, over sockets (the ring's class across nodes), trees on 4 of 8 channels.
CollPlanFacts acrossNodes(int nranks) {
  CollPlanFacts f;
  f.rank = 0;
  f.nranks = nranks;
  f.nChannels = 8;
  f.transport = TransportClass::NetSocket;
  f.llPath = false;
  f.ringStepBytes = 512 << 10;
  f.ringSteps = 8;
  f.treeChannels = 4;
  f.nNodes = nranks;
  return f;
}

OpDesc op(CollType coll, size_t count, void* buf) {
  OpDesc o;
  o.coll = coll;
  o.dtype = ncclFloat32;
  o.op.kind = RedKind::Sum;
  o.count = count;
  o.sendbuff = buf;
  o.recvbuff = buf;
  return o;
}

void force(CollPlanFacts* f, const char* algo, const char* proto = nullptr) {
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", algo, &f->tuning.algos), ncclSuccess);
  if (proto) ASSERT_EQ(parseProtoList("NCCL_PROTO", proto, &f->tuning.protos), ncclSuccess);
}

constexpr uint32_t kLowLatency = (1u << static_cast<int>(Proto::LL)) | (1u << static_cast<int>(Proto::LL128));

}  // namespace

TEST(CollPlanTree, ForcedTreeRunsTwoCtasPerChannelWithinTheTrees) {
  for (bool tunerOn : {true, false}) {
    CollPlanFacts f = acrossNodes(2);
    f.tunerOn = tunerOn;
    force(&f, "Tree");
    CollPlanner planner(f);
    std::vector<float> buf(1);
    for (size_t count : {size_t{1}, size_t{1031}, size_t{1} << 20, size_t{16} << 20}) {
      const CollPlan p = planner.plan(op(CollType::AllReduce, count, buf.data()), kLowLatency);
      EXPECT_EQ(p.devColl, kDevAllReduceTree) << count << " tuner " << tunerOn;
      EXPECT_EQ(p.proto, Proto::Simple) << count;
      EXPECT_GE(p.nChannels, 1);
      EXPECT_LE(p.nChannels, f.treeChannels) << count;
      EXPECT_EQ(p.nCta, 2 * p.nChannels) << count;
      EXPECT_EQ(p.cluster, 0);
      EXPECT_GT(p.predictedUs, 0) << count;
    }
    // 16M floats (64 MiB) spread over every tree channel; 1 float on one.
    EXPECT_EQ(planner.plan(op(CollType::AllReduce, size_t{16} << 20, buf.data()), kLowLatency).nChannels, 4);
    EXPECT_EQ(planner.plan(op(CollType::AllReduce, 1, buf.data()), kLowLatency).nChannels, 1);
  }
}

TEST(CollPlanTree, OnlyAllReduceAndOnlyWhereTreesAreConnected) {
  std::vector<float> buf(1);
  CollPlanFacts f = acrossNodes(4);
  force(&f, "Tree");
  CollPlanner trees(f);
  for (CollType c : {CollType::ReduceScatter, CollType::Reduce, CollType::AllGather, CollType::Broadcast})
    EXPECT_NE(trees.plan(op(c, 4096, buf.data()), kLowLatency).devColl, kDevAllReduceTree) << collName(c);

  // One node: init connects no trees, so a forced Tree runs the ring.
  CollPlanFacts one = acrossNodes(4);
  one.treeChannels = 0;
  one.nNodes = 1;
  force(&one, "Tree");
  for (bool tunerOn : {true, false}) {
    one.tunerOn = tunerOn;
    CollPlanner ring(one);
    EXPECT_EQ(ring.plan(op(CollType::AllReduce, 4096, buf.data()), kLowLatency).devColl, kDevAllReduce) << tunerOn;
  }
}

TEST(CollPlanTree, ProtoWithoutSimpleKeepsTheRing) {
  std::vector<float> buf(1);
  CollPlanFacts f = acrossNodes(2);
  f.llPath = true;  // LL slots on every ring connection: NCCL_PROTO=LL can run the ring on LL
  force(&f, "Tree", "LL");
  CollPlanner planner(f);
  const CollPlan p = planner.plan(op(CollType::AllReduce, 4096, buf.data()), kLowLatency);
  EXPECT_EQ(p.devColl, kDevAllReduce);
  EXPECT_EQ(p.proto, Proto::LL);
  EXPECT_EQ(p.nCta, p.nChannels);
}

TEST(CollPlanTree, RingWhereNcclAlgoLeavesTreeOut) {
  std::vector<float> buf(1);
  CollPlanFacts f = acrossNodes(64);
  force(&f, "Ring");
  CollPlanner planner(f);
  for (size_t count : {size_t{2}, size_t{1} << 20})
    EXPECT_EQ(planner.plan(op(CollType::AllReduce, count, buf.data()), kLowLatency).devColl, kDevAllReduce) << count;
}

// Unforced, the model's rows decide: across 4 single-GPU nodes the tree's log-depth wins a small all-reduce and the
// ring's bandwidth a large one, and the tree keeps larger sizes as nodes are added; at 2 nodes the ring (as many
// hops, full bandwidth) wins every size.
TEST(CollPlanTree, TunerPicksTheTreeForSmallSizesAcrossManyNodes) {
  std::vector<float> buf(1);
  CollPlanner four(acrossNodes(4));
  EXPECT_EQ(four.plan(op(CollType::AllReduce, 2, buf.data()), kLowLatency).devColl, kDevAllReduceTree);
  EXPECT_EQ(four.plan(op(CollType::AllReduce, size_t{16} << 20, buf.data()), kLowLatency).devColl, kDevAllReduce);
  CollPlanner many(acrossNodes(64));
  EXPECT_EQ(many.plan(op(CollType::AllReduce, size_t{16} << 20, buf.data()), kLowLatency).devColl, kDevAllReduceTree);
  CollPlanner two(acrossNodes(2));
  for (size_t count : {size_t{2}, size_t{1} << 20, size_t{64} << 20})
    EXPECT_NE(two.plan(op(CollType::AllReduce, count, buf.data()), kLowLatency).devColl, kDevAllReduceTree) << count;
}

// NCCL_PROTO=LL with NCCL_ALGO=Tree: the tree on LL where every tree connection has LL slots and the build has the
// LL kernel; without the slots, the ring on LL (NCCL_PROTO leaves Simple out); with Simple also allowed, the tree
// on Simple.
TEST(CollPlanTree, TreeOnLlWhereTheTreeHasLlSlots) {
  std::vector<float> buf(1);
  for (bool tunerOn : {true, false}) {
    CollPlanFacts f = acrossNodes(4);
    f.nNodes = 2;
    f.llPath = true;
    f.treeLlPath = true;
    f.tunerOn = tunerOn;
    force(&f, "Tree", "LL");
    CollPlanner planner(f);
    for (size_t count : {size_t{1}, size_t{1031}, size_t{262147}}) {
      const CollPlan p = planner.plan(op(CollType::AllReduce, count, buf.data()), kLowLatency);
      EXPECT_EQ(p.devColl, kDevAllReduceTree) << count << " tuner " << tunerOn;
      EXPECT_EQ(p.proto, Proto::LL) << count << " tuner " << tunerOn;
      EXPECT_EQ(p.nCta, 2 * p.nChannels) << count;
      EXPECT_LE(p.nChannels, f.treeChannels) << count;
    }
    // The build without the op's LL kernel: the ring cannot run LL either, so Simple's tree.
    EXPECT_EQ(planner.plan(op(CollType::AllReduce, 1031, buf.data()), 0).proto, Proto::Simple) << tunerOn;
    f.treeLlPath = false;
    CollPlanner noSlots(f);
    const CollPlan ring = noSlots.plan(op(CollType::AllReduce, 1031, buf.data()), kLowLatency);
    EXPECT_EQ(ring.devColl, kDevAllReduce) << tunerOn;
    EXPECT_EQ(ring.proto, Proto::LL) << tunerOn;
    force(&f, "Tree", "LL,Simple");
    CollPlanner simple(f);
    const CollPlan s = simple.plan(op(CollType::AllReduce, 1031, buf.data()), kLowLatency);
    EXPECT_EQ(s.devColl, kDevAllReduceTree) << tunerOn;
    EXPECT_EQ(s.proto, Proto::Simple) << tunerOn;
  }
}

// The planner hands the tuner the ring's own intra-node class (agreed: CollPlanFacts::ringIntra), so a ring over
// SHM inside its nodes is priced as such even where no tree is connected (NCCL_ALGO=Ring).
TEST(CollPlanTree, RingPricedByItsOwnIntraNodeClass) {
  std::vector<float> buf(1);
  CollPlanFacts f = acrossNodes(4);
  f.nNodes = 2;
  force(&f, "Ring", "Simple");
  CollPlanFacts shm = f;
  shm.ringIntra = TransportClass::Shm;
  for (CollType c : {CollType::AllGather, CollType::AllReduce}) {
    const CollPlan nvl = CollPlanner(f).plan(op(c, 4096, buf.data()), kLowLatency);
    const CollPlan viaShm = CollPlanner(shm).plan(op(c, 4096, buf.data()), kLowLatency);
    EXPECT_LT(nvl.predictedUs, viaShm.predictedUs) << static_cast<int>(c);
  }
}

// Unforced, 2 nodes of 2 GPUs over sockets with NVLink inside the nodes: the tree from 512 B to 256 KB (on LL where it
// has the slots, the model's estimate), the ring at 2 MB; the tuner's chain hops follow treeIntra.
TEST(CollPlanTree, TunerPicksTheTreeAtTwoNodesOfTwoGpus) {
  std::vector<float> buf(1);
  for (bool treeLl : {false, true}) {
    CollPlanFacts f = acrossNodes(4);
    f.nNodes = 2;
    f.llPath = true;
    f.treeLlPath = treeLl;
    CollPlanner planner(f);
    for (size_t count : {size_t{128}, size_t{1024}, size_t{8192}, size_t{65536}}) {
      const CollPlan p = planner.plan(op(CollType::AllReduce, count, buf.data()), kLowLatency);
      // A tree without LL slots runs Simple, which the ring on LL beats up to 4 KB (512 B: 44.7 us against the
      // tree's 51.3 on 4xH200 as 2 nodes of 2).
      const bool ringLl = !treeLl && count <= 1024;
      EXPECT_EQ(p.devColl, ringLl ? kDevAllReduce : kDevAllReduceTree) << count << " treeLl " << treeLl;
      EXPECT_EQ(p.proto, ringLl || (treeLl && count <= 1024) ? Proto::LL : Proto::Simple) << count << " " << treeLl;
      if (ringLl || count <= 1024) EXPECT_EQ(p.nChannels, 1) << count << " " << treeLl;
    }
    EXPECT_EQ(planner.plan(op(CollType::AllReduce, size_t{512} << 10, buf.data()), kLowLatency).devColl, kDevAllReduce)
        << treeLl;
  }
  CollPlanFacts nvl = acrossNodes(4);
  nvl.nNodes = 2;
  CollPlanFacts shm = nvl;
  shm.treeIntra = TransportClass::Shm;
  force(&nvl, "Tree");
  force(&shm, "Tree");
  CollPlanner a(nvl), b(shm);
  EXPECT_LT(a.plan(op(CollType::AllReduce, 2, buf.data()), kLowLatency).predictedUs,
            b.plan(op(CollType::AllReduce, 2, buf.data()), kLowLatency).predictedUs);
}
