// GPU faults over one process per GPU (3 or more GPUs): a rank killed with SIGKILL in the middle of a loop of 1 MB
// and 64 MB all-reduces. Every survivor must get ncclRemoteError naming the killed rank within BRAID_TIMEOUT, and
// ncclCommAbort must return promptly. Each survivor reports how long detection and abort took, which the test
// prints (the figures a user sees when a job loses a rank). Skips where fewer than 3 GPUs exist.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu_harness.h"

using namespace gpu_test;

namespace {

constexpr int kTimeoutSec = 20;  // BRAID_TIMEOUT and BRAID_DEVICE_TIMEOUT for the job
constexpr size_t kBig = size_t(16) << 20;   // floats: 64 MB
constexpr size_t kSmall = size_t(1) << 18;  // floats: 1 MB

struct Report {
  int32_t result = -1;    // what the survivor's first failing call returned
  int64_t detectNs = 0;   // steady clock (CLOCK_MONOTONIC: the same in every process) when it saw the failure
  int64_t abortNs = 0;    // how long its ncclCommAbort took
  int64_t loops = 0;      // all-reduces completed and checked before
  char message[480] = {};
};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

__global__ void fill(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = v;
}
__global__ void countWrong(const float* p, size_t n, float want, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    mine += p[i] != want;
  if (mine) atomicAdd(wrong, mine);
}

// One rank: all-reduces of 1 MB and 64 MB in turn, every output poisoned first and checked element by element,
// until a call or the stream reports an error. Writes one byte on `ready` after its first checked all-reduce and
// its Report on `out` at the end.
bool rankMain(int rank, int nranks, const ncclUniqueId& id, int ready, int out) {
  GT_CUDA(cudaSetDevice(rank));
  ncclComm_t comm;
  GT_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *in = nullptr, *res = nullptr;
  unsigned long long* wrong = nullptr;
  GT_CUDA(cudaMalloc(&in, kBig * sizeof(float)));
  GT_CUDA(cudaMalloc(&res, kBig * sizeof(float)));
  GT_CUDA(cudaMalloc(&wrong, sizeof(*wrong)));
  fill<<<264, 512, 0, s>>>(in, kBig, static_cast<float>(rank + 1));
  const float want = static_cast<float>(nranks * (nranks + 1) / 2);
  Report rep;
  ncclResult_t failed = ncclSuccess;
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(3 * kTimeoutSec);
  for (int64_t i = 0; failed == ncclSuccess && std::chrono::steady_clock::now() < giveUp; ++i) {
    const size_t n = i % 2 ? kBig : kSmall;
    fill<<<264, 512, 0, s>>>(res, n, -1.0f);  // poison
    GT_CUDA(cudaMemsetAsync(wrong, 0, sizeof(*wrong), s));
    failed = ncclAllReduce(in, res, n, ncclFloat32, ncclSum, comm, s);
    if (failed != ncclSuccess) break;
    countWrong<<<264, 512, 0, s>>>(res, n, want, wrong);
    cudaError_t q;
    while ((q = cudaStreamQuery(s)) == cudaErrorNotReady && failed == ncclSuccess) {
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async != ncclSuccess) failed = async;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (failed != ncclSuccess) break;
    GT_CUDA(q);
    unsigned long long bad = 0;
    GT_CUDA(cudaMemcpy(&bad, wrong, sizeof(bad), cudaMemcpyDeviceToHost));
    if (bad != 0) {
      fprintf(stderr, "rank %d: all-reduce %lld of %zu floats has %llu wrong elements\n", rank,
              static_cast<long long>(i), n, bad);
      return false;
    }
    rep.loops = i + 1;
    if (i == 1) (void)!write(ready, "r", 1);
  }
  rep.detectNs = nowNs();
  rep.result = failed;
  snprintf(rep.message, sizeof(rep.message), "%s", ncclGetLastError(comm));
  const int64_t t0 = nowNs();
  const ncclResult_t aborted = ncclCommAbort(comm);
  rep.abortNs = nowNs() - t0;
  if (aborted != ncclSuccess) fprintf(stderr, "rank %d: ncclCommAbort returned %d\n", rank, aborted);
  (void)!write(out, &rep, sizeof(rep));
  return aborted == ncclSuccess;
}

}  // namespace

TEST(DeviceFault, KilledRankIsNamedByEverySurvivor) {
  const int n = std::min(gpuCountForked(), 8);
  if (n < 3) GTEST_SKIP() << "needs 3 GPUs (a ring where some survivors are not the dead rank's neighbours), " << n
                          << " visible";
  EnvScope env;
  const std::string t = std::to_string(kTimeoutSec);
  env.set("BRAID_TIMEOUT", t.c_str());
  env.set("BRAID_DEVICE_TIMEOUT", t.c_str());
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const int victim = 1;
  int ready[2], reports[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(reports), 0);
  std::vector<pid_t> pids(n);
  for (int r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      close(ready[0]);
      close(reports[0]);
      _exit(rankMain(r, n, id, ready[1], reports[1]) ? 0 : 1);
    }
  }
  close(ready[1]);
  close(reports[1]);
  // Every rank has checked two all-reduces (one of each size): the loop runs. Kill the victim mid-loop.
  int up = 0;
  char c;
  while (up < n && read(ready[0], &c, 1) == 1) ++up;
  ASSERT_EQ(up, n) << "not every rank reached its all-reduce loop";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t killedNs = nowNs();
  kill(pids[victim], SIGKILL);

  std::vector<Report> got;
  Report rep;
  while (read(reports[0], &rep, sizeof(rep)) == sizeof(rep)) got.push_back(rep);
  close(reports[0]);
  close(ready[0]);
  for (int r = 0; r < n; ++r) {
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (r == victim) continue;
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "rank " << r << " failed (status " << st << ")";
  }
  ASSERT_EQ(static_cast<int>(got.size()), n - 1) << "every survivor reports";
  const std::string named = "rank " + std::to_string(victim);
  for (const Report& g : got) {
    const double detect = (g.detectNs - killedNs) / 1e9, abortS = g.abortNs / 1e9;
    printf("survivor: %s after %.3f s (%lld all-reduces before), ncclCommAbort %.3f s: %s\n",
           ncclGetErrorString(static_cast<ncclResult_t>(g.result)), detect, static_cast<long long>(g.loops),
           abortS, g.message);
    EXPECT_EQ(g.result, ncclRemoteError) << g.message;
    EXPECT_NE(std::string(g.message).find(named), std::string::npos) << "does not name " << named << ": " << g.message;
    EXPECT_LT(detect, kTimeoutSec) << g.message;
    EXPECT_LT(abortS, 5.0);
  }
}
