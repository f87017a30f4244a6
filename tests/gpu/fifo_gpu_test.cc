// The FIFO size seen from outside (runtime/comm.h, agreedFifoBytes): two processes under braidrun run checked
// all-reduces and all-gathers of 16-64 MB with NCCL_DEBUG=INFO, and both ranks' init lines must name the FIFO
// size agreed: 16 MiB per connection under a bound of 8 CTAs and 8 MiB under 16 (GPUs joined by NVLink,
// NCCL_BUFFSIZE unset), 4 MiB where the user sets it, 4 MiB unbounded (64 channels), and 512 KiB on 32 channels
// through host shared memory. Every element is checked by the perf tools (-c 1). Skips without 2 GPUs (and,
// for the larger FIFOs, 2 that reach each other over P2P).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gpu_subprocess.h"

namespace {

using gpu_test::binDir;
using gpu_test::gpuCount;
constexpr auto count = gpu_test::countOf;

std::string run(const std::string& tool, const std::string& env, int* rc) {
  const std::string dir = binDir();
  std::string out;
  // The caller's NCCL_BUFFSIZE or NCCL_P2P_DISABLE would change what is agreed: only `env` sets them.
  *rc = gpu_test::runCommand("env -u NCCL_BUFFSIZE -u NCCL_P2P_DISABLE NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO "
                             "NCCL_DEBUG_SUBSYS=INIT " + env + " " + dir +
                                 "/braidrun -n 2 --timeout 120 -- " + dir + "/" + tool +
                                 " -b 16M -e 64M -f 4 -c 1 -n 3 -w 1",
                             &out);
  return out;
}

// The larger FIFOs are for GPUs joined by NVLink; a pair without peer access rings through SHM (512 KiB).
bool needPeerPair(std::string* why) {
  if (gpuCount() < 2) {
    *why = "needs 2 GPUs, cudaGetDeviceCount reports " + std::to_string(gpuCount());
    return false;
  }
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, 0, 1) != cudaSuccess || !can) {
    *why = "GPUs 0 and 1 have no peer access: the ring would not be P2P";
    return false;
  }
  return true;
}

TEST(Fifo2Proc, LargerUnderABoundOfEightOrSixteenCtas) {
  std::string why;
  if (!needPeerPair(&why)) GTEST_SKIP() << why;
  for (const char* tool : {"all_reduce_perf", "all_gather_perf"}) {
    int rc = -1;
    const std::string out = run(tool, "NCCL_MAX_CTAS=8", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("Out of bounds values : 0 OK"), std::string::npos) << out;
    EXPECT_EQ(count(out, "8 channels (GPU"), 2) << out;
    EXPECT_EQ(count(out, "FIFOs of 16384 KiB per connection (NCCL_BUFFSIZE unset"), 2) << tool << out;
  }
  int rc = -1;
  const std::string out = run("all_reduce_perf", "NCCL_MAX_CTAS=16", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Out of bounds values : 0 OK"), std::string::npos) << out;
  EXPECT_EQ(count(out, "16 channels (GPU"), 2) << out;
  EXPECT_EQ(count(out, "FIFOs of 8192 KiB per connection (NCCL_BUFFSIZE unset"), 2) << out;
}

TEST(Fifo2Proc, FourMiBWhereSetOrUnbounded) {
  std::string why;
  if (!needPeerPair(&why)) GTEST_SKIP() << why;
  int rc = -1;
  const std::string set = run("all_reduce_perf", "NCCL_MAX_CTAS=8 NCCL_BUFFSIZE=4194304", &rc);
  EXPECT_EQ(rc, 0) << set;
  EXPECT_NE(set.find("Out of bounds values : 0 OK"), std::string::npos) << set;
  EXPECT_EQ(count(set, "FIFOs of 4096 KiB per connection\n"), 2) << set;
  const std::string unbounded = run("all_reduce_perf", "", &rc);
  EXPECT_EQ(rc, 0) << unbounded;
  EXPECT_NE(unbounded.find("Out of bounds values : 0 OK"), std::string::npos) << unbounded;
  // 64 channels on a GPU of 128 SMs or more (half its SMs otherwise: a GPU of 32 SMs or fewer gets a larger
  // FIFO here too, by the same rule).
  if (count(unbounded, " 64 channels (GPU") == 2)
    EXPECT_EQ(count(unbounded, "FIFOs of 4096 KiB per connection (NCCL_BUFFSIZE unset"), 2) << unbounded;
  else
    EXPECT_GT(count(unbounded, "FIFOs of "), 0) << unbounded;
}

// Through host shared memory (P2P off): 512 KiB FIFOs and 64 / 2 = 32 channels on two ranks of one host
// (shmRingChannels), every element still checked.
TEST(Fifo2Proc, SmallerAndFewerThroughHostMemory) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << gpuCount();
  // At most half the GPU's SMs (gpu_comm.cc), so a GPU of fewer than 64 SMs gets fewer.
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const std::string channels = " " + std::to_string(std::min(32, sms / 2)) + " channels (GPU";
  for (const char* tool : {"all_reduce_perf", "all_gather_perf"}) {
    int rc = -1;
    const std::string out = run(tool, "NCCL_P2P_DISABLE=1", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("Out of bounds values : 0 OK"), std::string::npos) << out;
    EXPECT_EQ(count(out, channels), 2) << tool << out;
    EXPECT_EQ(count(out, "FIFOs of 512 KiB per connection (NCCL_BUFFSIZE unset"), 2) << tool << out;
  }
}

}  // namespace
