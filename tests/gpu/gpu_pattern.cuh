// The byte pattern the p2p GPU tests fill inputs with and check outputs against (device_p2p_group_test,
// device_p2p_balance_test): a function of a seed and the byte's index, so every byte of every transfer differs from
// its neighbours and from other transfers' and rounds' (seedOf), and a misplaced chunk shows.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace gpu_test
