// GPU tests, two processes with one GPU each: the parent forks before any CUDA call (its unique id comes
// from ncclGetUniqueId, which uses no CUDA), each child drives GPU `rank` through ncclCommInitRank and runs
// the collective cases over P2P (CUDA IPC), SHM and sockets. Skips where fewer than 2 GPUs exist (counted
// in a probe child, so the parent stays CUDA-free).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gpu_harness.h"

using namespace gpu_test;

namespace {

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

// ncclGroupSimulateEnd's estimate of a grouped 4 MB send/recv and of an 8 MB all-reduce stays within 3x of
// what they take (the p2p estimate once assumed one channel: ~8x too slow), and the grouped send/recv
// estimate is the slower op's, not the sum. The data is checked too (the timed runs really moved it).
bool simulateChild(int rank, const ncclUniqueId& id) {
  GT_CUDA(cudaSetDevice(rank));
  ncclComm_t comm;
  GT_NCCL(ncclCommInitRank(&comm, 2, id, rank));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int peer = 1 - rank;
  const size_t p2pBytes = size_t(4) << 20, arCount = size_t(2) << 20;
  uint8_t *sb = nullptr, *rb = nullptr;
  float* ab = nullptr;
  GT_CUDA(cudaMalloc(&sb, p2pBytes));
  GT_CUDA(cudaMalloc(&rb, p2pBytes));
  GT_CUDA(cudaMalloc(&ab, arCount * sizeof(float)));
  std::vector<uint8_t> h(p2pBytes);
  for (size_t i = 0; i < p2pBytes; ++i) h[i] = static_cast<uint8_t>(rank * 91 + i * 7 + (i >> 12));
  GT_CUDA(cudaMemcpy(sb, h.data(), p2pBytes, cudaMemcpyHostToDevice));
  GT_CUDA(cudaMemset(rb, 0xee, p2pBytes));
  GT_CUDA(cudaMemset(ab, 0, arCount * sizeof(float)));
  auto sendRecv = [&](bool send, bool recv) {
    GT_NCCL(ncclGroupStart());
    if (send) GT_NCCL(ncclSend(sb, p2pBytes, ncclUint8, peer, comm, s));
    if (recv) GT_NCCL(ncclRecv(rb, p2pBytes, ncclUint8, peer, comm, s));
    return true;
  };
  auto simulated = [&](bool send, bool recv) -> float {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    if (!sendRecv(send, recv) || ncclGroupSimulateEnd(&info) != ncclSuccess) return -1;
    return info.estimatedTime;
  };
  const float estBoth = simulated(true, true), estSend = simulated(true, false);
  ncclSimInfo_t arInfo = NCCL_SIM_INFO_INITIALIZER;
  GT_NCCL(ncclGroupStart());
  GT_NCCL(ncclAllReduce(ab, ab, arCount, ncclFloat32, ncclSum, comm, s));
  GT_NCCL(ncclGroupSimulateEnd(&arInfo));
  // Time each: 5 warm-up launches, then 20 between two events.
  cudaEvent_t e0, e1;
  GT_CUDA(cudaEventCreate(&e0));
  GT_CUDA(cudaEventCreate(&e1));
  auto timed = [&](auto&& launch) -> float {
    for (int i = 0; i < 5; ++i)
      if (!launch()) return -1;
    GT_CUDA(cudaEventRecord(e0, s));
    for (int i = 0; i < 20; ++i)
      if (!launch()) return -1;
    GT_CUDA(cudaEventRecord(e1, s));
    GT_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    GT_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1000 / 20;
  };
  const float p2pUs = timed([&] { return sendRecv(true, true) && ncclGroupEnd() == ncclSuccess; });
  const float arUs = timed([&] { return ncclAllReduce(ab, ab, arCount, ncclFloat32, ncclSum, comm, s) == ncclSuccess; });
  std::vector<uint8_t> got(p2pBytes);
  GT_CUDA(cudaMemcpy(got.data(), rb, p2pBytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < p2pBytes; ++i) wrong += got[i] != static_cast<uint8_t>(peer * 91 + i * 7 + (i >> 12));
  printf("rank %d: send/recv 4 MB estimated %.1f us (send alone %.1f), took %.1f; all-reduce 8 MB estimated %.1f, "
         "took %.1f; %zu wrong bytes\n", rank, estBoth, estSend, p2pUs, arInfo.estimatedTime, arUs, wrong);
  fflush(stdout);  // the child ends in _exit, which drops what stdio still buffers (the line a failure points at)
  bool ok = wrong == 0 && estBoth > 0 && p2pUs > 0 && arUs > 0;
  ok = ok && estBoth < 3 * p2pUs && 3 * estBoth > p2pUs;
  ok = ok && arInfo.estimatedTime < 3 * arUs && 3 * arInfo.estimatedTime > arUs;
  ok = ok && std::abs(estBoth - estSend) <= 1e-3f * estSend;  // the send and the receive run side by side
  if (!ok) fprintf(stderr, "rank %d: estimates, times or data out of bounds (see the line above)\n", rank);
  GT_CUDA(cudaEventDestroy(e0));
  GT_CUDA(cudaEventDestroy(e1));
  cudaFree(sb), cudaFree(rb), cudaFree(ab);
  GT_NCCL(ncclCommDestroy(comm));
  return ok;
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
  int n = gpuCountForked();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  runTwoProcesses(false);
}

TEST(DeviceColl2Proc, Shm) {
  int n = gpuCountForked();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  EnvScope e;
  e.set("NCCL_P2P_DISABLE", "1");
  runTwoProcesses(true);
}

TEST(DeviceColl2Proc, Socket) {
  int n = gpuCountForked();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  EnvScope e;
  e.set("NCCL_P2P_DISABLE", "1");
  e.set("NCCL_SHM_DISABLE", "1");
  runTwoProcesses(true);
}

TEST(DeviceColl2Proc, DeadPeerStopsKernelsAndIsNamed) {
  int n = gpuCountForked();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  runTwoProcesses(true, deadPeerChild);
}

TEST(DeviceColl2Proc, GroupSimulateEndNearMeasured) {
  int n = gpuCountForked();
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs, cudaGetDeviceCount reports " << n;
  runTwoProcesses(true, simulateChild);
}
