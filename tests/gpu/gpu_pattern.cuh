// What the p2p GPU tests share (device_p2p_group_test, device_p2p_balance_test): the byte pattern inputs are filled
// with and outputs checked against (a function of a seed and the byte's index, so every byte of every transfer
// differs from its neighbours and from other transfers' and rounds', seedOf, and a misplaced chunk shows), and a set
// of transfers each way between the two ranks of a Pair, posted in one group and checked byte by byte.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_harness.h"

namespace gpu_test {

__host__ __device__ inline uint8_t patternByte(uint32_t seed, size_t i) {
  const uint32_t x = static_cast<uint32_t>(i) * 2654435761u + seed * 40503u + static_cast<uint32_t>(i >> 16);
  return static_cast<uint8_t>(x >> 13);
}

__global__ void fillPattern(uint8_t* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = patternByte(seed, i);
}

inline uint32_t seedOf(int rank, int round, int k) {
  return static_cast<uint32_t>(rank * 1000003 + round * 7919 + k * 31);
}

// Transfers of the given sizes each way between the two ranks, all in one group. Each has its own slot in one buffer
// per rank and direction, 64-byte aligned with at least one spare byte after it.
class P2pTransfers {
 public:
  explicit P2pTransfers(std::vector<size_t> sizes) : sizes_(std::move(sizes)) {
    for (size_t b : sizes_) {
      off_.push_back(total_);
      total_ += (b + 64) & ~size_t{63};
    }
  }
  P2pTransfers(const P2pTransfers&) = delete;
  P2pTransfers& operator=(const P2pTransfers&) = delete;
  ~P2pTransfers() {
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      cudaFree(in_[r]);
      cudaFree(out_[r]);
    }
  }
  bool alloc() {
    for (int r = 0; r < 2; ++r) {
      GT_CUDA(cudaSetDevice(r));
      GT_CUDA(cudaMalloc(&in_[r], total_));
      GT_CUDA(cudaMalloc(&out_[r], total_));
    }
    return true;
  }
  // New inputs for `round` and poisoned outputs, on the device, finished before returning.
  bool prepare(int round) {
    for (int r = 0; r < 2; ++r) {
      GT_CUDA(cudaSetDevice(r));
      for (size_t k = 0; k < sizes_.size(); ++k)
        fillPattern<<<64, 256>>>(in_[r] + off_[k], sizes_[k], seedOf(r, round, static_cast<int>(k)));
      GT_CUDA(cudaMemset(out_[r], 0xa5, total_));
      GT_CUDA(cudaDeviceSynchronize());
    }
    return true;
  }
  // On each rank's stream, or on streams[r] where given. The group is ended whatever fails inside it, so a failure
  // leaves no group open for the tests after it.
  bool post(Pair& p, const cudaStream_t* streams = nullptr) {
    GT_NCCL(ncclGroupStart());
    ncclResult_t first = ncclSuccess;
    for (int r = 0; r < 2; ++r) {
      const cudaStream_t st = streams ? streams[r] : p.stream[r];
      for (size_t k = 0; k < sizes_.size() && first == ncclSuccess; ++k) {
        // Interleaved as a pipeline schedule posts them; the receive first on rank 1.
        const size_t n = sizes_[k];
        ncclResult_t a = r == 0 ? ncclSend(in_[r] + off_[k], n, ncclUint8, 1, p.comm[r], st)
                                : ncclRecv(out_[r] + off_[k], n, ncclUint8, 0, p.comm[r], st);
        ncclResult_t b = r == 0 ? ncclRecv(out_[r] + off_[k], n, ncclUint8, 1, p.comm[r], st)
                                : ncclSend(in_[r] + off_[k], n, ncclUint8, 0, p.comm[r], st);
        first = a != ncclSuccess ? a : b;
      }
    }
    const ncclResult_t end = ncclGroupEnd();
    GT_NCCL(first);
    GT_NCCL(end);
    return true;
  }
  // Every byte of every transfer is the peer's input of `round` (all compared; the first wrong one named); the
  // byte after each is still poison.
  void check(int round, const std::string& what) {
    std::vector<uint8_t> h(total_), want;
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaMemcpy(h.data(), out_[r], total_, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t k = 0; k < sizes_.size(); ++k) {
        const uint8_t* got = h.data() + off_[k];
        const uint32_t seed = seedOf(1 - r, round, static_cast<int>(k));
        want.resize(sizes_[k]);
        for (size_t i = 0; i < sizes_[k]; ++i) want[i] = patternByte(seed, i);
        if (std::memcmp(got, want.data(), sizes_[k]) != 0) {
          size_t i = 0;
          while (got[i] == want[i]) ++i;
          FAIL() << what << ": rank " << r << " transfer " << k << " of " << sizes_.size() << " (" << sizes_[k]
                 << " bytes), byte " << i << " is " << int(got[i]) << ", not " << int(want[i]);
        }
        ASSERT_EQ(got[sizes_[k]], 0xa5) << what << ": rank " << r << " transfer " << k << " wrote past its end";
      }
    }
  }

 private:
  std::vector<size_t> sizes_, off_;
  size_t total_ = 0;
  uint8_t* in_[2] = {nullptr, nullptr};
  uint8_t* out_[2] = {nullptr, nullptr};
};

}  // namespace gpu_test
