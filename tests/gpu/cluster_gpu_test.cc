// Thread-block clusters seen from outside (launch_attrs.h): two processes under braidrun run a checked
// broadcast of 16-64 MB with NCCL_DEBUG=INFO, and both ranks' init lines must say which cluster size they
// launch with: 3 on 64 pinned channels (a grid of 66, 22 clusters, which must fit on the GPU: no "launching
// plainly"), none when NCCL_CGA_CLUSTER_SIZE=0. No rank may report a driver refusal, and every element is
// checked by the perf tool (-c 1: a wrong value exits 1). And the tuner's use of them (tuner_model.def,
// BRAID_TUNER_CLUSTERED_RING): a checked all-reduce where the one-shot would run unsplit must run as the
// clustered ring on both ranks, and on neither where one rank launches plainly (the algorithm is agreed at
// init; ranks running different schedules would hang or corrupt the sums). Under a bound of 24 CTAs all-gather
// launches in clusters of 3 and broadcast in 4 (clusterForLaunch), as the TUNING log says of each launch, and
// the ring all-reduce keeps off 128 MiB and up where a rank launches it in clusters of 4. Skips without 2 GPUs
// or below sm_90.
#include <gtest/gtest.h>

#include <string>

#include "gpu_subprocess.h"

namespace {

using gpu_test::binDir;
using gpu_test::gpuCount;
constexpr auto count = gpu_test::countOf;

std::string runBroadcast(const std::string& env, int* rc) {
  const std::string dir = binDir();
  std::string out;
  *rc = gpu_test::runCommand("NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_MIN_NCHANNELS=64 "
                             "NCCL_MAX_NCHANNELS=64 " + env + " " + dir + "/braidrun -n 2 --timeout 120 -- " + dir +
                                 "/broadcast_perf -b 16M -e 64M -f 4 -c 1 -n 3 -w 1",
                             &out);
  return out;
}

bool needHopperPair(std::string* why) {
  if (gpuCount() < 2) {
    *why = "needs 2 GPUs, cudaGetDeviceCount reports " + std::to_string(gpuCount());
    return false;
  }
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess || major < 9) {
    *why = "thread-block clusters need sm_90 or newer; GPU 0 is sm_" + std::to_string(major) + "x";
    return false;
  }
  return true;
}

TEST(Clusters2Proc, BothRanksLaunchInClustersOfTheSizeAsked) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string out = runBroadcast("NCCL_CGA_CLUSTER_SIZE=3", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(count(out, "launch in thread-block clusters of 3 "), 2) << out;
  EXPECT_EQ(count(out, "launching plainly"), 0) << out;
  EXPECT_EQ(count(out, "refused"), 0) << out;
  EXPECT_NE(out.find("Out of bounds values : 0 OK"), std::string::npos) << out;
}

// Lines of `out` that contain `what` and the rank tag of `rank` (" [rank N]", set inside the API calls).
int linesOf(const std::string& out, const std::string& what, int rank) {
  const std::string tag = " [rank " + std::to_string(rank) + "]";
  int n = 0;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    if (line.find(what) != std::string::npos && line.find(tag) != std::string::npos) ++n;
    start = end + 1;
  }
  return n;
}

// A checked all_reduce_perf under braidrun with the TUNING log; `rank1Env` is set for rank 1 only.
std::string runAllReduce(const std::string& env, const std::string& rank1Env, const std::string& sizes, int* rc) {
  const std::string dir = binDir();
  std::string out;
  // 64 channels whatever the GPU's SM count (a minimum only: NCCL_MAX_NCHANNELS would also bound the CTAs and
  // keep the split one-shot out).
  *rc = gpu_test::runCommand("NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING NCCL_MIN_NCHANNELS=64 " +
                                 env + " " + dir +
                                 "/braidrun -n 2 --timeout 120 -- sh -c 'if [ \"$BRAID_RANK\" = 1 ]; then export " +
                                 rank1Env + "; fi; exec " + dir + "/all_reduce_perf " + sizes + " -c 1 -n 3 -w 1'",
                             &out);
  return out;
}

const char* kRingLine = "the clustered ring instead of the unsplit one-shot";

// No bound: the split one-shot keeps 16 MB (it beats the ring there), 256 MB fills each channel's FIFO, so the
// one-shot would run unsplit and the clustered ring runs instead, on both ranks.
TEST(Clusters2Proc, ClusteredRingReplacesTheUnsplitOneShot) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string out = runAllReduce("", "BRAID_UNUSED=0", "-b 16M -e 256M -f 16", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Out of bounds values : 0 OK"), std::string::npos) << out;
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(linesOf(out, std::string("AllReduce 268435456 bytes on 64 channels: ") + kRingLine, r), 0) << r << out;
    // Every switch on this rank is the 256 MB one: 16 MB (logged by the tuner) kept the split one-shot.
    EXPECT_GT(linesOf(out, "AllReduce 16777216 bytes", r), 0) << r << out;
    EXPECT_EQ(linesOf(out, kRingLine, r),
              linesOf(out, std::string("AllReduce 268435456 bytes on 64 channels: ") + kRingLine, r))
        << r << out;
  }
  // A bound of 64 CTAs keeps the split out: 16 MB runs as the clustered ring too.
  const std::string bounded = runAllReduce("NCCL_MAX_CTAS=64", "BRAID_UNUSED=0", "-b 16M -e 16M", &rc);
  EXPECT_EQ(rc, 0) << bounded;
  for (int r = 0; r < 2; ++r)
    EXPECT_GT(linesOf(bounded, std::string("AllReduce 16777216 bytes on 64 channels: ") + kRingLine, r), 0)
        << r << bounded;
}

// Rank 1 launches plainly (NCCL_CGA_CLUSTER_SIZE=0 there only): neither rank may switch, and the sums stay right.
TEST(Clusters2Proc, OnePlainRankKeepsTheOneShotOnBoth) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string out = runAllReduce("NCCL_MAX_CTAS=64", "NCCL_CGA_CLUSTER_SIZE=0", "-b 16M -e 256M -f 16", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_EQ(count(out, kRingLine), 0) << out;
  EXPECT_GT(linesOf(out, "AllReduce 268435456 bytes", 0), 0) << out;  // the TUNING log ran
}

// Under a bound of 24 CTAs the clustered ring replaces the unsplit one-shot at every size from 16 MiB where
// both ranks launch it in clusters of 3; where rank 1's user set 4, from 128 MiB it loses and neither rank
// switches (TuningFacts::clusterThree, tuner_model.def); sums checked either way.
TEST(Clusters2Proc, ClustersOfFourKeepTheOneShotFrom128MiBOnTwentyFourChannels) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string env = "NCCL_MIN_NCHANNELS=24 NCCL_MAX_CTAS=24";  // the later assignment wins over 64
  const std::string mb64 = std::string("AllReduce 67108864 bytes on 24 channels: ") + kRingLine;
  const std::string mb256 = std::string("AllReduce 268435456 bytes on 24 channels: ") + kRingLine;
  const std::string three = runAllReduce(env, "BRAID_UNUSED=0", "-b 64M -e 256M -f 4", &rc);
  EXPECT_EQ(rc, 0) << three;
  EXPECT_NE(three.find("Out of bounds values : 0 OK"), std::string::npos) << three;
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(linesOf(three, mb64, r), 0) << r << three;
    EXPECT_GT(linesOf(three, mb256, r), 0) << r << three;
  }
  const std::string four = runAllReduce(env, "NCCL_CGA_CLUSTER_SIZE=4", "-b 64M -e 256M -f 4", &rc);
  EXPECT_EQ(rc, 0) << four;
  EXPECT_NE(four.find("Out of bounds values : 0 OK"), std::string::npos) << four;
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(linesOf(four, mb64, r), 0) << r << four;
    EXPECT_EQ(linesOf(four, "AllReduce 268435456 bytes on 24 channels: the clustered ring", r), 0) << r << four;
    EXPECT_GT(linesOf(four, "AllReduce 268435456 bytes", r), 0) << r << four;  // the TUNING log ran
  }
}

// `tool` (a perf tool) checked under braidrun with the TUNING log, which says each clustered launch's size.
std::string runTuned(const std::string& tool, const std::string& env, int* rc) {
  const std::string dir = binDir();
  std::string out;
  *rc = gpu_test::runCommand("NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING " + env + " " + dir +
                                 "/braidrun -n 2 --timeout 120 -- " + dir + "/" + tool +
                                 " -b 64M -e 64M -c 1 -n 3 -w 1",
                             &out);
  return out;
}

// Under a bound of 24 CTAs (24 channels) the collectives that load both directions of the link launch in
// clusters of 3, the one-way ones in 4 (clusterForLaunch); a size the user sets holds for all.
TEST(Clusters2Proc, ThreeForTwoWayRingsOnTwentyFourChannels) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const char* three = "on 24 channels: launched in thread-block clusters of 3";
  const char* four = "on 24 channels: launched in thread-block clusters of 4";
  const std::string ag = runTuned("all_gather_perf", "NCCL_MAX_CTAS=24", &rc);
  EXPECT_EQ(rc, 0) << ag;
  EXPECT_NE(ag.find("Out of bounds values : 0 OK"), std::string::npos) << ag;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(linesOf(ag, "on 24-32 channels in 3", r), 1) << r << ag;  // init: clusters of 3 fit
    EXPECT_GT(linesOf(ag, "AllGather ", r), 0) << r << ag;
    EXPECT_GT(linesOf(ag, three, r), 0) << r << ag;
    EXPECT_EQ(linesOf(ag, "launched in thread-block clusters of", r), linesOf(ag, three, r)) << r << ag;
  }
  const std::string bc = runTuned("broadcast_perf", "NCCL_MAX_CTAS=24", &rc);
  EXPECT_EQ(rc, 0) << bc;
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(linesOf(bc, "launched in thread-block clusters of 4", r), 0) << r << bc;
    EXPECT_EQ(linesOf(bc, "launched in thread-block clusters of", r),
              linesOf(bc, "launched in thread-block clusters of 4", r))
        << r << bc;
  }
  const std::string set = runTuned("all_gather_perf", "NCCL_MAX_CTAS=24 NCCL_CGA_CLUSTER_SIZE=4", &rc);
  EXPECT_EQ(rc, 0) << set;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(linesOf(set, "on 24-32 channels in 3", r), 0) << r << set;
    EXPECT_GT(linesOf(set, four, r), 0) << r << set;
    EXPECT_EQ(linesOf(set, "launched in thread-block clusters of", r), linesOf(set, four, r)) << r << set;
  }
}

TEST(Clusters2Proc, NoneWhenTurnedOff) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string out = runBroadcast("NCCL_CGA_CLUSTER_SIZE=0", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(count(out, "launch in thread-block clusters of 0 "), 2) << out;
}

}  // namespace
