// GPU tests of failure paths, one process driving 2 GPUs (ncclCommInitAll + groups): an abort while the peer
// never arrives (per protocol), send/recv counts that differ across the LL threshold or in their FIFO steps,
// and collectives whose counts differ between the ranks, each reported with a message within the device
// timeout, never a hang or a silent wrong result. Split from device_coll_test.cu (its size). Skips with a
// reason where fewer than 2 GPUs exist.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "gpu_harness.h"

using namespace gpu_test;

// Rank 0 starts an all-reduce that rank 1 never joins; aborting rank 0 must return promptly and leave no
// kernel running.
// Per protocol: the SIMPLE wait (thread 0's devSpin) and the LL/LL128 ones (a thread's claim of its CTA's
// turn to read the host words, devPollMustStop) each see the abort.
static void abortWhilePeerNeverArrives() {
  Pair p;
  ASSERT_TRUE(p.init());
  const size_t n = 1 << 24;
  float *in, *out;
  cudaSetDevice(0);
  ASSERT_EQ(cudaMalloc(&in, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * 4), cudaSuccess);
  ASSERT_EQ(ncclAllReduce(in, out, n, ncclFloat32, ncclSum, p.comm[0], p.stream[0]), ncclSuccess);
  usleep(300 * 1000);
  EXPECT_EQ(cudaStreamQuery(p.stream[0]), cudaErrorNotReady) << "the kernel should still be waiting for rank 1";
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(p.comm[0]), ncclSuccess);
  EXPECT_EQ(cudaStreamSynchronize(p.stream[0]), cudaSuccess);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 5.0) << "abort took " << s << " s";
  printf("abort returned and the stream drained in %.3f s\n", s);
  p.comm[0] = nullptr;
  cudaFree(in);
  cudaFree(out);
  EXPECT_EQ(ncclCommAbort(p.comm[1]), ncclSuccess);
  p.comm[1] = nullptr;
  p.destroy();
}
TEST(DeviceColl2Gpu, AbortWhilePeerNeverArrives) {
  NEED_GPUS(2);
  for (const char* proto : {"Simple", "LL", "LL128"}) {
    SCOPED_TRACE(std::string("NCCL_PROTO=") + proto);
    EnvScope env;
    env.set("NCCL_PROTO", proto);
    abortWhilePeerNeverArrives();
  }
}

// Ranks calling one all-reduce with different counts plan it differently (rank 0: one-shot LL for 64 floats,
// rank 1: the Simple ring for 4 Mi; pinned below), so neither kernel can ever finish. With
// BRAID_DEVICE_TIMEOUT=2 both stop by themselves within seconds (rank 0's LL receive may meet rank 1's SIMPLE
// step first: ncclInvalidUsage naming different counts; otherwise ncclRemoteError naming the timeout),
// instead of the streams hanging forever. Then: a rank whose peer never
// calls at all times out the same way, and a second op queued behind a failed one stops at once.
static void expectTimeoutError(Pair& p, int r) {
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(p.comm[r], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError) << "rank " << r;
  const std::string msg = ncclGetLastError(p.comm[r]);
  EXPECT_NE(msg.find("BRAID_DEVICE_TIMEOUT"), std::string::npos) << msg;
}
// Counts that differ make the ranks plan differently: a rank whose LL receive meets the peer's SIMPLE step
// says so at once (ncclInvalidUsage); one that waits for steps that never come times out.
static void expectMismatchError(Pair& p, int r) {
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(p.comm[r], &async), ncclSuccess);
  const std::string msg = ncclGetLastError(p.comm[r]);
  if (async == ncclInvalidUsage) {
    EXPECT_NE(msg.find("different counts"), std::string::npos) << msg;
  } else {
    EXPECT_EQ(async, ncclRemoteError) << "rank " << r << ": " << msg;
    EXPECT_NE(msg.find("BRAID_DEVICE_TIMEOUT"), std::string::npos) << msg;
  }
  printf("rank %d: %s: %s\n", r, ncclGetErrorString(async), msg.c_str());
}
static double waitStreams(Pair& p, std::initializer_list<int> ranks, double limit, bool* done) {
  const auto t0 = std::chrono::steady_clock::now();
  double waited = 0;
  *done = false;
  while (!*done && (waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) < limit) {
    *done = true;
    for (int r : ranks) {
      cudaSetDevice(r);
      if (cudaStreamQuery(p.stream[r]) == cudaErrorNotReady) *done = false;
    }
    if (!*done) usleep(10 * 1000);
  }
  return waited;
}

// Both ranks' buffers of `bytes`, filled with r + 1.
static void allocBoth(uint8_t* buf[2], size_t bytes) {
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf[r], bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(buf[r], r + 1, bytes), cudaSuccess);
  }
}
// After a send/recv group whose counts differ: the streams of `ranks` finish, and rank 1 reports
// ncclInvalidUsage with `want` in its message well inside the 3 s timeout (`foundBy` caught it, not the
// timeout). Then both communicators are aborted and the buffers freed.
static void expectMismatchReported(Pair& p, uint8_t* buf[2], std::initializer_list<int> ranks, const char* want,
                                   const char* foundBy, const char* label) {
  bool done = false;
  const double waited = waitStreams(p, ranks, 30, &done);
  EXPECT_TRUE(done) << "kernels still running after " << waited << " s";
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(p.comm[1], &async), ncclSuccess);
  EXPECT_EQ(async, ncclInvalidUsage) << "rank 1 took mismatched counts silently";
  const std::string msg = ncclGetLastError(p.comm[1]);
  EXPECT_NE(msg.find(want), std::string::npos) << msg;
  EXPECT_LT(waited, 2.5) << "found by " << foundBy << ", not by the 3 s timeout";
  printf("%s after %.2f s: %s: %s\n", label, waited, ncclGetErrorString(async), msg.c_str());
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ncclCommAbort(p.comm[r]);
    p.comm[r] = nullptr;
    cudaFree(buf[r]);
  }
  p.destroy();
}

// Rank 0 sends `sent` bytes, rank 1 receives `received`, in one group on a fresh pair; rank 1 must report it
// (expectMismatchReported, `foundBy` the check that should catch it).
static void expectSendRecvMismatch(size_t sent, size_t received, const char* foundBy, const char* label) {
  Pair p;
  ASSERT_TRUE(p.init());
  uint8_t* buf[2];
  ASSERT_NO_FATAL_FAILURE(allocBoth(buf, std::max(sent, received)));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(ncclSend(buf[0], sent, ncclUint8, 1, p.comm[0], p.stream[0]), ncclSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(ncclRecv(buf[1], received, ncclUint8, 0, p.comm[1], p.stream[1]), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  expectMismatchReported(p, buf, {1}, "different counts", foundBy, label);
}

// Send/recv counts that differ across the LL threshold (10 KiB sent as LL, 160 KiB expected as SIMPLE, then
// the reverse) fail with a message on the receiving rank within the timeout, never a silent stale slot. The
// cut (p2pChannelsForBytes): 10 KiB is two 5 KiB shares on channels 0-1, LL; 160 KiB eight 20 KiB shares,
// SIMPLE (above NCCL_P2P_LL_THRESHOLD's 16 KiB); channel 0 sees both.
TEST(DeviceColl2Gpu, P2pCountsAcrossLlThresholdFail) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("BRAID_DEVICE_TIMEOUT", "3");
  for (int flip = 0; flip < 2; ++flip) {
    SCOPED_TRACE(flip ? "LL receive of a SIMPLE send" : "SIMPLE receive of an LL send");
    Pair p;
    ASSERT_TRUE(p.init());
    const size_t small = 10 << 10, big = 160 << 10;
    uint8_t* buf[2];
    ASSERT_NO_FATAL_FAILURE(allocBoth(buf, 2 * big));
    // Rank 0 sends `a` then `big`; rank 1 receives `b` then `big`.
    const size_t a = flip ? big : small, b = flip ? small : big;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(ncclSend(buf[0], a, ncclUint8, 1, p.comm[0], p.stream[0]), ncclSuccess);
    ASSERT_EQ(ncclSend(buf[0] + big, big, ncclUint8, 1, p.comm[0], p.stream[0]), ncclSuccess);
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    ASSERT_EQ(ncclRecv(buf[1], b, ncclUint8, 0, p.comm[1], p.stream[1]), ncclSuccess);
    ASSERT_EQ(ncclRecv(buf[1] + big, big, ncclUint8, 0, p.comm[1], p.stream[1]), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    expectMismatchReported(p, buf, {0, 1},
                           flip ? "sent a SIMPLE step where this rank expected an LL one" : "sent an LL step of 5120 bytes",
                           "the protocol check", flip ? "LL<-SIMPLE" : "SIMPLE<-LL");
  }
}

// SIMPLE transfers whose counts differ so that each channel's steps on one side are a prefix of the other's:
// on 64 channels 32 MiB goes as 512 KiB shares in 4 x 128 KiB steps (BRAID_P2P_PIECES), 16 MiB as 256 KiB in
// 2 x 128 KiB. The last-step mark (dev_work.h) reports it at once (on 9-63 channels the first steps differ in
// size and the size check reports it; on 8 or fewer both sides go in 512 KiB steps and the mark reports it).
// Not covered: counts that differ only in their channel count with one step per share (e.g. 512 KiB against
// 256 KiB: 8 against 4 channels of 64 KiB), and a 0-byte send against a non-zero receive (the timeout).
TEST(DeviceColl2Gpu, P2pCountsWithPrefixStepsFail) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("BRAID_DEVICE_TIMEOUT", "3");
  env.set("BRAID_P2P_CHANNEL_BYTES", "65536");  // the premises above, whatever the caller's environment
  env.set("BRAID_P2P_PIECES", "4");
  env.set("NCCL_BUFFSIZE", "4194304");
  const size_t big = size_t(32) << 20, half = size_t(16) << 20;
  for (int flip = 0; flip < 2; ++flip) {
    SCOPED_TRACE(flip ? "receive longer than the send" : "send longer than the receive");
    ASSERT_NO_FATAL_FAILURE(expectSendRecvMismatch(flip ? half : big, flip ? big : half, "the last-step mark",
                                                   flip ? "recv longer" : "send longer"));
  }
}

// Balanced transfers (p2p_plan.h: p2pBalanced) whose counts differ, 64 MiB against 64 MiB + 4096 (both balanced):
// the receiver meets a chunk past its own count or a closing step whose size fold is not its own, and says so at once
// instead of leaving output unwritten.
TEST(DeviceColl2Gpu, P2pBalancedCountsFail) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("BRAID_DEVICE_TIMEOUT", "3");
  env.set("BRAID_P2P_BALANCE_BYTES", "65536");
  const size_t big = (size_t(64) << 20) + 4096, base = size_t(64) << 20;
  for (int flip = 0; flip < 2; ++flip) {
    SCOPED_TRACE(flip ? "receive longer than the send" : "send longer than the receive");
    ASSERT_NO_FATAL_FAILURE(expectSendRecvMismatch(flip ? base : big, flip ? big : base, "the balanced step check",
                                                   flip ? "balanced recv longer" : "balanced send longer"));
  }
}

TEST(DeviceColl2Gpu, MismatchedCountsFailWithinTimeout) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("BRAID_DEVICE_TIMEOUT", "2");
  env.set("BRAID_DEVICE_TUNER", "1");
  env.set("NCCL_PROTO", "LL,Simple");
  env.set("NCCL_ALGO", "Ring,OneShot");
  const size_t counts[2] = {64, size_t(4) << 20};
  float* buf[2] = {nullptr, nullptr};
  {
    Pair p;
    ASSERT_TRUE(p.init());
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&buf[r], counts[r] * 2 * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMemset(buf[r], 0, counts[r] * 2 * sizeof(float)), cudaSuccess);
    }
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(ncclAllReduce(buf[r], buf[r] + counts[r], counts[r], ncclFloat32, ncclSum, p.comm[r], p.stream[r]),
                ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    bool done = false;
    const double waited = waitStreams(p, {0, 1}, 30, &done);
    EXPECT_TRUE(done) << "kernels still running after " << waited << " s";
    EXPECT_GT(waited, 1.5) << "stopped before the 2 s timeout";
    for (int r = 0; r < 2 && done; ++r) expectMismatchError(p, r);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ncclCommAbort(p.comm[r]);
      p.comm[r] = nullptr;
    }
    p.destroy();
  }
  {
    // Rank 1 never calls: rank 0's all-reduce and a second one queued behind it both end within ~2 s.
    Pair p;
    ASSERT_TRUE(p.init());
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    for (int k = 0; k < 2; ++k)
      ASSERT_EQ(ncclAllReduce(buf[0], buf[0] + counts[0], counts[0], ncclFloat32, ncclSum, p.comm[0], p.stream[0]),
                ncclSuccess);
    bool done = false;
    const double waited = waitStreams(p, {0}, 30, &done);
    EXPECT_TRUE(done) << "rank 0 still running after " << waited << " s";
    EXPECT_LT(waited, 3.5) << "the queued second all-reduce waited out its own timeout";
    if (done) expectTimeoutError(p, 0);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ncclCommAbort(p.comm[r]);
      p.comm[r] = nullptr;
    }
    p.destroy();
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    cudaFree(buf[r]);
  }
}

