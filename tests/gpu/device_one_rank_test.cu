// GPU test, a 1-rank GPU communicator (ncclCommInitAll over one device): it has no connections at all, so
// every point-to-point op is a local copy and every collective a local reduce-copy. Send/recv to itself,
// all-to-all, gather, scatter, all-reduce, all-gather and broadcast, odd counts, every element checked against
// poisoned outputs. Skips with a reason where no GPU exists.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <vector>

#include "gpu_harness.h"

namespace {

using gpu_test::gpuCount;

// Device buffers of `n` floats: input i holds base + i, output poisoned (0xff bytes: NaN).
struct Buffers {
  float* in = nullptr;
  float* out = nullptr;
  size_t n = 0;
  bool init(size_t count, float base) {
    n = count;
    std::vector<float> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = base + static_cast<float>(i);
    return cudaMalloc(&in, n * sizeof(float)) == cudaSuccess && cudaMalloc(&out, n * sizeof(float)) == cudaSuccess &&
           cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess && poison();
  }
  bool poison() { return cudaMemset(out, 0xff, n * sizeof(float)) == cudaSuccess; }
  std::vector<float> read() const {
    std::vector<float> h(n);
    if (cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) h.clear();
    return h;
  }
  ~Buffers() {
    cudaFree(in);
    cudaFree(out);
  }
};

// Counts the elements of `got` that are not base + i; reports the first.
size_t mismatches(const std::vector<float>& got, size_t n, float base, const char* what) {
  if (got.size() != n) {
    ADD_FAILURE() << what << ": could not read the output";
    return n;
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != base + static_cast<float>(i)) {
      if (bad == 0) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << base + i;
      ++bad;
    }
  return bad;
}

TEST(DeviceOneRank, PointToPointAndCollectivesAreLocalCopies) {
  if (gpuCount() < 1) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount reports 0";
  int dev = 0;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &dev), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // Small (LL-sized on a ring), mid and large counts, all odd.
  for (size_t n : {size_t(37), size_t(16385), size_t(1) << 20 | 1}) {
    SCOPED_TRACE(n);
    Buffers b;
    ASSERT_TRUE(b.init(n, 3.0f));
    auto run = [&](const char* what, auto&& call) {
      ASSERT_TRUE(b.poison());
      ASSERT_EQ(call(), ncclSuccess) << what << ": " << ncclGetLastError(comm);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess) << what;
      EXPECT_EQ(mismatches(b.read(), n, 3.0f, what), 0u) << what;
    };
    run("send/recv to itself", [&] {
      ncclGroupStart();
      ncclSend(b.in, n, ncclFloat32, 0, comm, s);
      ncclRecv(b.out, n, ncclFloat32, 0, comm, s);
      return ncclGroupEnd();
    });
    run("all-to-all", [&] { return ncclAlltoAll(b.in, b.out, n, ncclFloat32, comm, s); });
    run("gather", [&] { return ncclGather(b.in, b.out, n, ncclFloat32, 0, comm, s); });
    run("scatter", [&] { return ncclScatter(b.in, b.out, n, ncclFloat32, 0, comm, s); });
    run("all-reduce", [&] { return ncclAllReduce(b.in, b.out, n, ncclFloat32, ncclSum, comm, s); });
    run("all-gather", [&] { return ncclAllGather(b.in, b.out, n, ncclFloat32, comm, s); });
    run("broadcast", [&] { return ncclBroadcast(b.in, b.out, n, ncclFloat32, 0, comm, s); });
  }
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  cudaStreamDestroy(s);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
