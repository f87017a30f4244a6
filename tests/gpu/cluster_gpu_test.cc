// Thread-block clusters seen from outside (launch_attrs.h): two processes under braidrun run a checked
// broadcast of 16-64 MB with NCCL_DEBUG=INFO, and both ranks' init lines must say which cluster size they
// launch with: 3 on 64 pinned channels (a grid of 66, 22 clusters, which must fit on the GPU: no "launching
// plainly"), none when NCCL_CGA_CLUSTER_SIZE=0. No rank may report a driver refusal, and every element is
// checked by the perf tool (-c 1: a wrong value exits 1). Skips without 2 GPUs or below sm_90.
#include <gtest/gtest.h>

#include <string>

#include "gpu_subprocess.h"

namespace {

using gpu_test::binDir;
using gpu_test::gpuCount;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

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

TEST(Clusters2Proc, NoneWhenTurnedOff) {
  std::string why;
  if (!needHopperPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string out = runBroadcast("NCCL_CGA_CLUSTER_SIZE=0", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(count(out, "launch in thread-block clusters of 0 "), 2) << out;
}

}  // namespace
