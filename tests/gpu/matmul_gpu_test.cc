// The matmul demo on 2 GPUs through GPU communicators: both modes, float and bf16,
// uneven sizes, launched by braidrun (one process per GPU, device = BRAID_LOCAL_RANK); the demo verifies C
// against a single-GPU reference and must print "verified". Skips where fewer than 2 GPUs are visible.
#include <gtest/gtest.h>

#include <string>

#include "gpu_subprocess.h"

namespace {

using gpu_test::binDir;
using gpu_test::gpuCount;

int run(const std::string& cmd, std::string* out) { return gpu_test::runCommand(cmd, out); }

class MatmulGpu : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(MatmulGpu, TwoGpusVerified) {
  if (gpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << gpuCount();
  const std::string dir = binDir();
  const char* mode = std::get<0>(GetParam());
  const char* type = std::get<1>(GetParam());
  std::string out;
  int rc = run("NCCL_NVLS_ENABLE=0 " + dir + "/braidrun -n 2 --timeout 120 -- " + dir +
                   "/matmul_demo --device gpu --m 4099 --n 2053 --k 3001 --iters 2 --mode " + mode + " --type " + type,
               &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("verified"), std::string::npos) << out;
  EXPECT_NE(out.find("GPU communicator"), std::string::npos) << "did not run on a GPU communicator:\n" << out;
}

INSTANTIATE_TEST_SUITE_P(Modes, MatmulGpu,
                         ::testing::Combine(::testing::Values("rows", "inner"), ::testing::Values("float", "bf16")));

}  // namespace
