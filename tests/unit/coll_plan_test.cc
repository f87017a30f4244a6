// The plan of a GPU collective (src/runtime/gpu/coll_plan.h): every decision the launch uses is in it. The split
// one-shot by buffer placement, grids in whole clusters, clusters switched off after a driver refusal, one rank.
#include <gtest/gtest.h>

#include <vector>

#include "algo/ll_protocol.h"
#include "coll_plan_fixtures.h"
#include "runtime/gpu/coll_plan.h"
#include "tuner/launch_attrs.h"

using namespace braid;
using braid_test::allReduce;
using braid_test::kAllProtos;
using braid_test::nvlinkPair;

TEST(CollPlan, SplitOneShotFollowsTheBuffers) {
  CollPlanner planner(nvlinkPair());
  const size_t count = size_t(8) << 18;  // 8 MB of floats: 128 KiB per channel on 64 channels
  std::vector<char> mem(count * 4 * 3);
  char* a = mem.data();
  const CollPlan inPlace = planner.plan(allReduce(count, a, a), kAllProtos);
  ASSERT_EQ(inPlace.devColl, kDevAllReduceOneShotSplit) << "8 MB on NVLink runs the split one-shot";
  EXPECT_EQ(inPlace.proto, Proto::Simple);
  EXPECT_EQ(inPlace.nCta, 2 * inPlace.nChannels);
  EXPECT_TRUE(inPlace.splitGuard);
  EXPECT_EQ(inPlace.cluster, 0);
  EXPECT_GT(inPlace.predictedUs, 0);

  const CollPlan apart = planner.plan(allReduce(count, a, a + count * 4), kAllProtos);
  EXPECT_EQ(apart.devColl, kDevAllReduceOneShotSplit);
  EXPECT_EQ(apart.nCta, 2 * apart.nChannels);
  EXPECT_FALSE(apart.splitGuard);

  // Overlapping but not the same buffer (not valid NCCL usage): the unsplit one-shot, one CTA per channel.
  const CollPlan overlap = planner.plan(allReduce(count, a, a + 4096), kAllProtos);
  EXPECT_EQ(overlap.devColl, kDevAllReduceOneShot);
  EXPECT_EQ(overlap.nCta, overlap.nChannels);
  EXPECT_FALSE(overlap.splitGuard);
  EXPECT_EQ(overlap.nChannels, inPlace.nChannels);
}

TEST(CollPlan, SplitNeedsTwiceItsChannelsWithinTheCtaBound) {
  CollPlanFacts f = nvlinkPair();
  f.tuning.maxCtas = 64;  // the split's 2 x 64 CTAs do not fit
  CollPlanner planner(f);
  const size_t count = size_t(8) << 18;
  std::vector<char> mem(count * 4);
  const CollPlan p = planner.plan(allReduce(count, mem.data(), mem.data()), kAllProtos);
  EXPECT_NE(p.devColl, kDevAllReduceOneShotSplit);
  EXPECT_LE(p.nCta, 64);
}

TEST(CollPlan, ClusteredGridsAreWholeClustersUntilTheDriverRefuses) {
  CollPlanFacts f = nvlinkPair();
  f.cluster = kDefaultCgaCluster;
  CollPlanner planner(f);
  OpDesc op;
  op.coll = CollType::Broadcast;
  op.dtype = ncclFloat32;
  op.count = size_t(64) << 18;  // 64 MB: Simple, in clusters (kClusterMinBytes)
  std::vector<char> mem(op.count * 4);
  op.sendbuff = op.recvbuff = mem.data();
  const CollPlan p = planner.plan(op, kAllProtos);
  ASSERT_EQ(p.proto, Proto::Simple);
  EXPECT_EQ(p.cluster, kDefaultCgaCluster);
  EXPECT_EQ(p.nCta % p.cluster, 0);
  EXPECT_GE(p.nCta, p.nChannels);
  EXPECT_LT(p.nCta, p.nChannels + p.cluster);

  planner.clustersOff();  // the memoised plan must not keep its clusters
  const CollPlan plain = planner.plan(op, kAllProtos);
  EXPECT_EQ(plain.cluster, 0);
  EXPECT_EQ(plain.nCta, plain.nChannels);

  // Below kClusterMinBytes nothing is clustered.
  CollPlanner small(f);
  op.count = 1 << 10;
  const CollPlan s = small.plan(op, kAllProtos);
  EXPECT_EQ(s.cluster, 0);
  EXPECT_EQ(s.nCta, s.nChannels);
}

TEST(CollPlan, OneRankRunsPlainOnItsChannels) {
  CollPlanFacts f;
  f.nranks = 1;
  f.nChannels = 64;
  f.cluster = kDefaultCgaCluster;
  CollPlanner planner(f);
  std::vector<char> mem(size_t(64) << 20);
  const CollPlan p = planner.plan(allReduce(size_t(16) << 20, mem.data(), mem.data()), kAllProtos);
  EXPECT_EQ(p.devColl, kDevAllReduce);
  EXPECT_EQ(p.proto, Proto::Simple);
  EXPECT_EQ(p.cluster, 0);
  EXPECT_GE(p.nChannels, 1);
  EXPECT_EQ(p.nCta, p.nChannels);
}

TEST(CollPlan, ProtocolsWithoutKernelsAreNeverPlanned) {
  CollPlanner planner(nvlinkPair());
  std::vector<char> mem(4096);
  for (size_t count : {size_t(2), size_t(256), size_t(1024)}) {
    const CollPlan p = planner.plan(allReduce(count, mem.data(), mem.data() + 2048), 0);
    EXPECT_EQ(p.proto, Proto::Simple) << count << " floats with no LL/LL128 kernel";
    const CollPlan q = planner.plan(allReduce(count, mem.data(), mem.data() + 2048), kAllProtos);
    EXPECT_NE(q.proto, Proto::Simple) << count << " floats: small all-reduces run LL or LL128 where they can";
  }
}

// More than two ranks: small all-reduces take the one-shot over every peer (kDevAllReduceOneShotPeers) on LL,
// one channel per BRAID_PEERS_CHANNEL_BYTES (4 KiB) up to the agreed cap; past BRAID_ONESHOT_PEERS_BYTES, without the LL kernel, where init
// found a peer it cannot reach so (oneShotPeersBytes 0), for other collectives, or where NCCL_ALGO leaves out
// OneShot or NCCL_PROTO leaves out LL, the ring.
TEST(CollPlan, OneShotOfMoreRanksForSmallAllReduces) {
  CollPlanFacts f = nvlinkPair();
  f.nranks = 4;
  f.oneShotPeersBytes = 65536;
  f.oneShotPeerChannels = 10;
  std::vector<char> mem(size_t(1) << 20);
  const uint32_t ll = 1u << static_cast<int>(Proto::LL);
  {
    CollPlanner planner(f);
    for (size_t bytes : {size_t(4), size_t(4096), size_t(8192), size_t(8196), size_t(40000), size_t(65536)}) {
      const CollPlan p = planner.plan(allReduce(bytes / 4, mem.data(), mem.data()), kAllProtos);
      EXPECT_EQ(p.devColl, kDevAllReduceOneShotPeers) << bytes;
      EXPECT_EQ(p.proto, Proto::LL) << bytes;
      EXPECT_EQ(p.nChannels, std::min<int>(10, static_cast<int>((bytes + 4095) / 4096))) << bytes;
      EXPECT_EQ(p.nCta, p.nChannels) << bytes;
      EXPECT_GT(p.predictedUs, 0) << bytes;
    }
    EXPECT_NE(planner.plan(allReduce(65540 / 4, mem.data(), mem.data()), kAllProtos).devColl, kDevAllReduceOneShotPeers);
    EXPECT_NE(planner.plan(allReduce(1024, mem.data(), mem.data()), 0).devColl, kDevAllReduceOneShotPeers)
        << "no LL kernel for the op";
    OpDesc rs = allReduce(1024, mem.data(), mem.data());
    rs.coll = CollType::ReduceScatter;
    EXPECT_NE(planner.plan(rs, kAllProtos).devColl, kDevAllReduceOneShotPeers);
  }
  // The cap is the agreed one (SHM peers: 4).
  f.oneShotPeerChannels = 4;
  EXPECT_EQ(CollPlanner(f).plan(allReduce(16384, mem.data(), mem.data()), ll).nChannels, 4);
  f.oneShotPeerChannels = 10;
  // Unreachable peers, two ranks, or the user's NCCL_ALGO / NCCL_PROTO: the ring.
  CollPlanFacts off = f;
  off.oneShotPeersBytes = 0;
  EXPECT_EQ(CollPlanner(off).plan(allReduce(1024, mem.data(), mem.data()), ll).devColl, kDevAllReduce);
  CollPlanFacts two = f;
  two.nranks = 2;
  EXPECT_NE(CollPlanner(two).plan(allReduce(1024, mem.data(), mem.data()), ll).devColl, kDevAllReduceOneShotPeers);
  CollPlanFacts ring = f;
  ring.tuning.algos.mask[static_cast<int>(CollType::AllReduce)] = 1u << static_cast<int>(Algo::Ring);
  EXPECT_EQ(CollPlanner(ring).plan(allReduce(1024, mem.data(), mem.data()), ll).devColl, kDevAllReduce);
  CollPlanFacts simple = f;
  simple.tuning.protos.mask[static_cast<int>(CollType::AllReduce)] = 1u << static_cast<int>(Proto::Simple);
  EXPECT_EQ(CollPlanner(simple).plan(allReduce(1024, mem.data(), mem.data()), ll).devColl, kDevAllReduce);
}

// The one-shot over every peer runs on as few threads as still give each at most one LL line of its channel's
// share (never under 128, never over the communicator's); NCCL_NTHREADS set keeps every launch on its count, and
// the two-shot and the ring keep the communicator's.
TEST(CollPlan, OneShotOfMoreRanksOnFewerThreadsForFewLines) {
  EXPECT_EQ(oneShotPeersThreads(8, 1, 512), 128);
  EXPECT_EQ(oneShotPeersThreads(512, 1, 512), 128);   // 64 lines
  EXPECT_EQ(oneShotPeersThreads(1024, 1, 512), 128);  // 128 lines
  EXPECT_EQ(oneShotPeersThreads(1032, 1, 512), 256);  // 129
  EXPECT_EQ(oneShotPeersThreads(2048, 1, 512), 256);
  EXPECT_EQ(oneShotPeersThreads(4096, 1, 512), 512);  // 512 lines
  EXPECT_EQ(oneShotPeersThreads(65536, 10, 512), 512);
  EXPECT_EQ(oneShotPeersThreads(8192, 4, 512), 256);  // 2 KiB a channel
  EXPECT_EQ(oneShotPeersThreads(8, 1, 256), 128);
  EXPECT_EQ(oneShotPeersThreads(8, 1, 128), 128);
  EXPECT_EQ(oneShotPeersThreads(8, 1, 96), 96);  // never more than the communicator's
  for (size_t bytes = 8; bytes <= 65536; bytes *= 2)
    for (int ch = 1; ch <= 16; ++ch) {
      const int t = oneShotPeersThreads(bytes, ch, 512);
      const size_t lines = llLines((bytes + static_cast<size_t>(ch) - 1) / static_cast<size_t>(ch));
      EXPECT_TRUE(t == 128 || t == 256 || t == 512) << bytes << " " << ch;
      EXPECT_TRUE(lines <= static_cast<size_t>(t) || t == 512) << bytes << " " << ch;  // a line a thread at most
      EXPECT_TRUE(t == 128 || lines > static_cast<size_t>(t / 2)) << bytes << " " << ch;  // and no fewer would do
    }

  CollPlanFacts f = nvlinkPair();
  f.nranks = 4;
  f.oneShotPeersBytes = 65536;
  f.twoShotPeersBytes = 1 << 20;
  f.oneShotPeerChannels = 10;
  std::vector<char> mem(size_t(4) << 20);
  const uint32_t ll = 1u << static_cast<int>(Proto::LL);
  EXPECT_EQ(CollPlanner(f).plan(allReduce(2, mem.data(), mem.data()), ll).nThreads, 128);
  EXPECT_EQ(CollPlanner(f).plan(allReduce(1024, mem.data(), mem.data()), ll).nThreads, 512);
  EXPECT_EQ(CollPlanner(f).plan(allReduce(65536, mem.data(), mem.data()), ll).nThreads, 0) << "the two-shot";
  CollPlanFacts set = f;
  set.threadsAuto = false;
  set.threads = 256;
  EXPECT_EQ(CollPlanner(set).plan(allReduce(2, mem.data(), mem.data()), ll).nThreads, 0);
  EXPECT_EQ(CollPlanner(nvlinkPair()).plan(allReduce(2, mem.data(), mem.data()), ll).nThreads, 0) << "2 ranks";
}

// Past BRAID_ONESHOT_PEERS_BYTES and up to BRAID_TWOSHOT_PEERS_BYTES, the two-shot over the same connections, on
// LL, one channel per BRAID_PEERS_CHANNEL_BYTES up to the same cap; NCCL_ALGO without TwoShot, or 0 bytes, the ring.
TEST(CollPlan, TwoShotOfMoreRanksForMidAllReduces) {
  CollPlanFacts f = nvlinkPair();
  f.nranks = 4;
  f.oneShotPeersBytes = 65536;
  f.twoShotPeersBytes = 1 << 20;
  f.peersChannelBytes = 16384;
  f.oneShotPeerChannels = 10;
  std::vector<char> mem(size_t(4) << 20);
  {
    CollPlanner planner(f);
    for (size_t bytes : {size_t(4096), size_t(65536)})
      EXPECT_EQ(planner.plan(allReduce(bytes / 4, mem.data(), mem.data()), kAllProtos).devColl,
                kDevAllReduceOneShotPeers)
          << bytes;
    EXPECT_EQ(planner.plan(allReduce(4096 / 4, mem.data(), mem.data()), kAllProtos).nChannels, 1);
    for (size_t bytes : {size_t(65540), size_t(100000), size_t(262144), size_t(1) << 20}) {
      const CollPlan p = planner.plan(allReduce(bytes / 4, mem.data(), mem.data()), kAllProtos);
      EXPECT_EQ(p.devColl, kDevAllReduceTwoShotPeers) << bytes;
      EXPECT_EQ(p.proto, Proto::LL) << bytes;
      EXPECT_EQ(p.nChannels, std::min<int>(10, static_cast<int>((bytes + 16383) / 16384))) << bytes;
      EXPECT_EQ(p.nCta, p.nChannels) << bytes;
    }
    EXPECT_NE(planner.plan(allReduce(((1 << 20) + 4) / 4, mem.data(), mem.data()), kAllProtos).devColl,
              kDevAllReduceTwoShotPeers);
    EXPECT_NE(planner.plan(allReduce(262144 / 4, mem.data(), mem.data()), 0).devColl, kDevAllReduceTwoShotPeers)
        << "no LL kernel for the op";
  }
  CollPlanFacts off = f;
  off.twoShotPeersBytes = 0;
  EXPECT_NE(CollPlanner(off).plan(allReduce(262144 / 4, mem.data(), mem.data()), kAllProtos).devColl,
            kDevAllReduceTwoShotPeers);
  CollPlanFacts oneOnly = f;
  oneOnly.tuning.algos.mask[static_cast<int>(CollType::AllReduce)] =
      (1u << static_cast<int>(Algo::Ring)) | (1u << static_cast<int>(Algo::OneShot));
  EXPECT_NE(CollPlanner(oneOnly).plan(allReduce(262144 / 4, mem.data(), mem.data()), kAllProtos).devColl,
            kDevAllReduceTwoShotPeers);
  EXPECT_EQ(CollPlanner(oneOnly).plan(allReduce(1024, mem.data(), mem.data()), kAllProtos).devColl,
            kDevAllReduceOneShotPeers);
  // The one-shot left out: the two-shot takes the small sizes too.
  CollPlanFacts twoOnly = f;
  twoOnly.tuning.algos.mask[static_cast<int>(CollType::AllReduce)] =
      (1u << static_cast<int>(Algo::Ring)) | (1u << static_cast<int>(Algo::TwoShot));
  EXPECT_EQ(CollPlanner(twoOnly).plan(allReduce(1024, mem.data(), mem.data()), kAllProtos).devColl,
            kDevAllReduceTwoShotPeers);
}

// With the tuner off (BRAID_DEVICE_TUNER=0) the one-shot over every peer runs only where NCCL_ALGO leaves out the
// ring, as the 2-rank one-shot.
TEST(CollPlan, OneShotOfMoreRanksWithTheTunerOffOnlyWhenAsked) {
  CollPlanFacts f = nvlinkPair();
  f.nranks = 4;
  f.oneShotPeersBytes = 65536;
  f.oneShotPeerChannels = 10;
  f.tunerOn = false;
  std::vector<char> mem(8192);
  const uint32_t ll = 1u << static_cast<int>(Proto::LL);
  EXPECT_EQ(CollPlanner(f).plan(allReduce(1024, mem.data(), mem.data()), ll).devColl, kDevAllReduce);
  f.tuning.algos.mask[static_cast<int>(CollType::AllReduce)] = 1u << static_cast<int>(Algo::OneShot);
  EXPECT_EQ(CollPlanner(f).plan(allReduce(1024, mem.data(), mem.data()), ll).devColl, kDevAllReduceOneShotPeers);
}
