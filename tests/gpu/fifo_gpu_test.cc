// The FIFO size seen from outside (core/comm.h, agreedFifoBytes): two processes under braidrun run a checked
// all-reduce and all-gather of 16-64 MB with NCCL_DEBUG=INFO, and both ranks' init lines must name the FIFO size
// agreed: 16 MiB per connection under a bound of 8 CTAs, 8 MiB under 16 (NVLink P2P, NCCL_BUFFSIZE unset), 4 MiB where the user
// sets it, and 4 MiB unbounded (64 channels). Every element is checked by the perf tools (-c 1). Skips without
// 2 GPUs.
#include <gtest/gtest.h>

#include <string>

#include "gpu_subprocess.h"

namespace {

using gpu_test::binDir;
using gpu_test::gpuCount;
constexpr auto count = gpu_test::countOf;

std::string run(const std::string& tool, const std::string& env, int* rc) {
  const std::string dir = binDir();
  std::string out;
  *rc = gpu_test::runCommand("NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT " + env + " " + dir +
                                 "/braidrun -n 2 --timeout 120 -- " + dir + "/" + tool +
                                 " -b 16M -e 64M -f 4 -c 1 -n 3 -w 1",
                             &out);
  return out;
}

TEST(Fifo2Proc, LargerUnderABoundOfEightOrSixteenCtas) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << gpuCount();
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
  EXPECT_EQ(count(out, "FIFOs of 8192 KiB per connection (NCCL_BUFFSIZE unset"), 2) << out;
}

TEST(Fifo2Proc, FourMiBWhereSetOrUnbounded) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << gpuCount();
  int rc = -1;
  const std::string set = run("all_reduce_perf", "NCCL_MAX_CTAS=8 NCCL_BUFFSIZE=4194304", &rc);
  EXPECT_EQ(rc, 0) << set;
  EXPECT_EQ(count(set, "FIFOs of 4096 KiB per connection\n"), 2) << set;
  const std::string unbounded = run("all_reduce_perf", "", &rc);
  EXPECT_EQ(rc, 0) << unbounded;
  EXPECT_NE(unbounded.find("Out of bounds values : 0 OK"), std::string::npos) << unbounded;
  // 64 channels on a GPU of 128 SMs or more (half its SMs otherwise: a small GPU may get 8 MiB here too).
  if (count(unbounded, " 64 channels (GPU") == 2)
    EXPECT_EQ(count(unbounded, "FIFOs of 4096 KiB per connection (NCCL_BUFFSIZE unset"), 2) << unbounded;
}

}  // namespace
