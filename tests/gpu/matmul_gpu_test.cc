// The matmul demo on 2 GPUs through GPU communicators (issue 6's gpu test): both modes, float and bf16,
// uneven sizes, launched by braidrun (one process per GPU, device = BRAID_LOCAL_RANK); the demo verifies C
// against a single-GPU reference and must print "verified". Skips where fewer than 2 GPUs are visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int gpuCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::string binDir() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string p = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string("build/bin/x");
  return p.substr(0, p.rfind('/'));
}

// Runs a shell command, returns its exit status and output.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (size_t got = fread(buf, 1, sizeof(buf), p)) out->append(buf, got);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

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
