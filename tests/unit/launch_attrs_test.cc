// launchAttrsFor / pdlSetting: which launch attributes BRAID_PDL gives a kernel launch, on which GPUs and kernel
// builds, and never inside a stream capture; clusterSetting / collCluster / clusteredGrid: which launches go in
// thread-block clusters (NCCL_CGA_CLUSTER_SIZE, config.cgaClusterSize) and how their grid is rounded.
#include <gtest/gtest.h>

#include "tuner/launch_attrs.h"

using braid::clusteredGrid;
using braid::clusterForLaunch;
using braid::clusterIfFits;
using braid::clusterSetting;
using braid::collCluster;
using braid::kClusterMinBytes;
using braid::LaunchAttrs;
using braid::launchAttrsFor;
using braid::pdlSetting;

TEST(LaunchAttrs, DefaultIsAProgrammaticLaunchOnHopperKernelsOnly) {
  EXPECT_EQ(pdlSetting(1, 9, 90), 1);
  EXPECT_EQ(pdlSetting(1, 10, 100), 1);
  EXPECT_EQ(pdlSetting(1, 8, 80), 0);  // sm_80 has no programmatic launches
  EXPECT_EQ(pdlSetting(3, 7, 70), 0);
  // A Hopper GPU running kernels JIT-compiled from compute_80 PTX: their wait is compiled out.
  EXPECT_EQ(pdlSetting(1, 9, 80), 0);
  EXPECT_EQ(pdlSetting(1, 9, 0), 0);  // unknown
  EXPECT_EQ(pdlSetting(0, 9, 90), 0);
  EXPECT_EQ(pdlSetting(7, 9, 90), 3);   // undefined bits drop
  EXPECT_EQ(pdlSetting(-1, 9, 90), 0);  // not "every bit"
  const LaunchAttrs a = launchAttrsFor(pdlSetting(1, 9, 90), false);
  EXPECT_TRUE(a.programmatic);
  EXPECT_FALSE(a.earlyTrigger);
}

TEST(LaunchAttrs, NothingUnderCapture) {
  for (int pdl = 0; pdl < 4; ++pdl) {
    const LaunchAttrs a = launchAttrsFor(pdl, true);
    EXPECT_FALSE(a.programmatic) << pdl;
    EXPECT_FALSE(a.earlyTrigger) << pdl;
  }
}

TEST(LaunchAttrs, BitsMapToAttributes) {
  EXPECT_FALSE(launchAttrsFor(0, false).programmatic);
  const LaunchAttrs three = launchAttrsFor(3, false);
  EXPECT_TRUE(three.programmatic);
  EXPECT_TRUE(three.earlyTrigger);
  // The early trigger needs a programmatic launch after it: bit 1 alone gives nothing.
  const LaunchAttrs two = launchAttrsFor(2, false);
  EXPECT_FALSE(two.programmatic);
  EXPECT_FALSE(two.earlyTrigger);
}

TEST(Clusters, EnvOverridesConfigOverridesTheDefaultOnHopperKernelsOnly) {
  EXPECT_EQ(clusterSetting(-1, -1, 9, 90), 4);  // neither set: NCCL's default on sm_90
  EXPECT_EQ(clusterSetting(-1, 2, 9, 90), 2);   // the config's
  EXPECT_EQ(clusterSetting(8, 2, 9, 90), 8);    // the environment wins
  EXPECT_EQ(clusterSetting(0, 4, 9, 90), 0);    // off
  EXPECT_EQ(clusterSetting(-1, 0, 9, 90), 0);
  EXPECT_EQ(clusterSetting(1, -1, 9, 90), 0);  // a cluster of one is none
  EXPECT_EQ(clusterSetting(3, -1, 10, 100), 3);
  EXPECT_EQ(clusterSetting(16, -1, 9, 90), 8);  // above the portable limit: the limit, as NCCL
  EXPECT_EQ(clusterSetting(-1, 99, 9, 90), 8);
  EXPECT_EQ(clusterSetting(-1, -1, 8, 80), 0);  // no clusters before sm_90
  EXPECT_EQ(clusterSetting(4, 4, 9, 80), 0);    // kernels JIT-compiled from compute_80 PTX on a Hopper GPU
  EXPECT_EQ(clusterSetting(-1, -1, 9, 0), 0);   // unknown
}

TEST(Clusters, OnlyRingCollectivesOnSimpleFromTheThreshold) {
  EXPECT_EQ(collCluster(4, true, kClusterMinBytes), 4);
  EXPECT_EQ(collCluster(4, true, size_t(512) << 20), 4);
  EXPECT_EQ(collCluster(4, true, kClusterMinBytes - 1), 0);
  EXPECT_EQ(collCluster(4, false, size_t(512) << 20), 0);  // the one-shot, LL, LL128
  EXPECT_EQ(collCluster(0, true, size_t(512) << 20), 0);
  EXPECT_EQ(collCluster(3, true, size_t(512) << 20), 3);
}

TEST(Clusters, GridIsAWholeNumberOfClusters) {
  EXPECT_EQ(clusteredGrid(64, 4), 64);
  EXPECT_EQ(clusteredGrid(13, 4), 16);
  EXPECT_EQ(clusteredGrid(64, 3), 66);
  EXPECT_EQ(clusteredGrid(1, 8), 8);
  EXPECT_EQ(clusteredGrid(13, 0), 13);  // no clusters: as it was
}

// Every CTA of a ring launch must be resident at once: clusters stay only where the widest clustered launch fits.
TEST(Clusters, KeptOnlyWhereEveryChannelsClusterFitsAtOnce) {
  EXPECT_EQ(clusterIfFits(4, 64, 16), 4);   // 16 clusters of 4
  EXPECT_EQ(clusterIfFits(4, 64, 33), 4);   // H100 SXM fits more
  EXPECT_EQ(clusterIfFits(4, 64, 15), 0);   // one would wait for another to end
  EXPECT_EQ(clusterIfFits(4, 13, 4), 4);    // 16 CTAs
  EXPECT_EQ(clusterIfFits(3, 64, 21), 0);   // 22 clusters of 3 (66 CTAs)
  EXPECT_EQ(clusterIfFits(3, 64, 22), 3);
  EXPECT_EQ(clusterIfFits(8, 64, 0), 0);    // unknown: plain
  EXPECT_EQ(clusterIfFits(8, 64, -1), 0);
  EXPECT_EQ(clusterIfFits(0, 64, 100), 0);  // no clusters asked
}

// The size of one ring launch: the user's choice stands; otherwise 4, but 3 for the two-way ring collectives on
// 24-32 channels where init found 3 fit.
TEST(Clusters, ThreeForTwoWayRingsOnTwentyFourToThirtyTwoChannels) {
  for (int nch : {24, 28, 32}) {
    EXPECT_EQ(clusterForLaunch(4, false, true, nch, true), 3) << nch;
    EXPECT_EQ(clusterForLaunch(4, false, true, nch, false), 4) << nch;  // broadcast, reduce
    EXPECT_EQ(clusterForLaunch(4, true, true, nch, true), 4) << nch;    // NCCL_CGA_CLUSTER_SIZE=4 set
    EXPECT_EQ(clusterForLaunch(8, true, true, nch, true), 8) << nch;
    EXPECT_EQ(clusterForLaunch(4, false, false, nch, true), 4) << nch;  // 3 did not fit
    EXPECT_EQ(clusterForLaunch(0, false, true, nch, true), 0) << nch;   // no clusters at all
  }
  for (int nch : {16, 23, 33, 48, 64}) EXPECT_EQ(clusterForLaunch(4, false, true, nch, true), 4) << nch;
}
