// GPU tests, two processes with one GPU each: the parent forks before any CUDA call (its unique id comes
// from ncclGetUniqueId, which uses no CUDA), each child drives GPU `rank` through ncclCommInitRank and runs
// the collective cases over P2P (CUDA IPC), SHM and sockets. Skips where fewer than 2 GPUs exist (counted
// in a probe child, so the parent stays CUDA-free).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "gpu_harness.h"

using namespace gpu_test;

namespace {

int probeGpus() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)!write(fds[1], &n, sizeof(n));
    _exit(0);
  }
  close(fds[1]);
  int n = 0;
  if (read(fds[0], &n, sizeof(n)) != sizeof(n)) n = 0;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return n;
}

bool childMain(int rank, const ncclUniqueId& id, bool quick) {
  GT_CUDA(cudaSetDevice(rank));
  ncclComm_t comm;
  GT_NCCL(ncclCommInitRank(&comm, 2, id, rank));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int failures = 0;
  // BRAID_TEST_VERBOSE=1: rank 0 prints each case with its prepare / run / check times (this sweep takes
  // ~100 s in two processes where the same cases take 7 s in one; unexplained so far).
  const bool verbose = std::getenv("BRAID_TEST_VERBOSE") != nullptr && rank == 0;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  for (const Case& c : allCases(2, quick)) {
    RankBufs b;
    const auto t0 = Clock::now();
    if (!prepare(c, rank, 2, &b)) return false;
    const auto t1 = Clock::now();
    if (!enqueue(c, rank, 2, comm, s, b)) return false;
    GT_CUDA(cudaStreamSynchronize(s));
    const auto t2 = Clock::now();
    const bool ok = check(c, rank, 2, &b);
    if (verbose)
      printf("case %s: prepare %.2f ms, run %.2f ms, check %.2f ms\n", c.name().c_str(), ms(t0, t1), ms(t1, t2),
             ms(t2, Clock::now())), fflush(stdout);
    if (!ok) {
      fprintf(stderr, "rank %d: FAILED %s\n", rank, c.name().c_str());
      if (++failures > 10) break;
    }
  }
  GT_NCCL(ncclCommDestroy(comm));
  return failures == 0;
}

// Rank 1 dies (exits without destroying its comm) while rank 0's all-reduce waits for it: rank 0's kernel
// must stop within seconds (the peer watch), ncclCommGetAsyncError must say ncclRemoteError, the message name
// rank 1, and the next collective fail at once.
bool deadPeerChild(int rank, const ncclUniqueId& id) {
  GT_CUDA(cudaSetDevice(rank));
  ncclComm_t comm;
  GT_NCCL(ncclCommInitRank(&comm, 2, id, rank));
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // rank 0's kernel is spinning by now
    _exit(0);
  }
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t n = size_t(1) << 20;
  float* buf = nullptr;
  GT_CUDA(cudaMalloc(&buf, n * sizeof(float)));
  GT_CUDA(cudaMemset(buf, 0, n * sizeof(float)));
  GT_CUDA(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, s);
  if (r == ncclSuccess) {
    cudaError_t q;
    while ((q = cudaStreamQuery(s)) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(15)) {
        fprintf(stderr, "rank 0: the all-reduce kernel still spins 15 s after its peer died\n");
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (q != cudaSuccess) {
      fprintf(stderr, "rank 0: stream error %s after the peer died\n", cudaGetErrorString(q));
      return false;
    }
    ncclResult_t async = ncclSuccess;
    GT_NCCL(ncclCommGetAsyncError(comm, &async));
    if (async != ncclRemoteError) {
      fprintf(stderr, "rank 0: ncclCommGetAsyncError gave %d, expected ncclRemoteError\n", async);
      return false;
    }
  } else if (r != ncclRemoteError) {
    fprintf(stderr, "rank 0: ncclAllReduce gave %d, expected success or ncclRemoteError\n", r);
    return false;
  }
  const std::string msg = ncclGetLastError(comm);
  if (msg.find("rank 1") == std::string::npos) {
    fprintf(stderr, "rank 0: the error does not name rank 1: %s\n", msg.c_str());
    return false;
  }
  r = ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, s);
  if (r != ncclRemoteError) {
    fprintf(stderr, "rank 0: a collective after the peer died gave %d, expected ncclRemoteError\n", r);
    return false;
  }
  printf("rank 0: stopped %.2f s after the launch: %s\n",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), msg.c_str());
  ncclCommAbort(comm);
  return true;
}

void runTwoProcesses(bool quick, bool (*child)(int, const ncclUniqueId&) = nullptr) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) _exit((child ? child(r, id) : childMain(r, id, quick)) ? 0 : 1);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  int status[2] = {-1, -1};
  int left = 2;
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < 2; ++r) {
      if (status[r] != -1) continue;
      int st;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < 2; ++r) {
    if (status[r] == -1) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
      ADD_FAILURE() << "rank " << r << " timed out";
    } else {
      EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0) << "rank " << r << " failed (status "
                                                                        << status[r] << ")";
    }
  }
}


}  // namespace

TEST(DeviceColl2Proc, P2pIpc) {
  int n = probeGpus();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  runTwoProcesses(false);
}

TEST(DeviceColl2Proc, Shm) {
  int n = probeGpus();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  EnvScope e;
  e.set("NCCL_P2P_DISABLE", "1");
  runTwoProcesses(true);
}

TEST(DeviceColl2Proc, Socket) {
  int n = probeGpus();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  EnvScope e;
  e.set("NCCL_P2P_DISABLE", "1");
  e.set("NCCL_SHM_DISABLE", "1");
  runTwoProcesses(true);
}

TEST(DeviceColl2Proc, DeadPeerStopsKernelsAndIsNamed) {
  int n = probeGpus();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  runTwoProcesses(true, deadPeerChild);
}
