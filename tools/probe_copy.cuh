// probe_copy.cuh: what the stand-alone copy probes (cumem_probe.cu, pcie_assist_probe.cu) share: the CK check
// of a CUDA runtime call and the copy kernel, whose loads and stores follow Braid's reduce_copy.h pattern
// (thread t's u-th 16-byte pack of an iteration is t + u * nthreads; volatile loads), each CTA copying its own
// contiguous `per` bytes in whole iterations of 8 packs a thread.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

struct alignas(16) ProbePack {
  uint64_t lo, hi;
};

constexpr int kProbeUnroll = 8;

__global__ void __launch_bounds__(1024, 1) copyKernel(const char* src, char* dst, size_t per) {
  constexpr int U = kProbeUnroll;
  const int tid = threadIdx.x, nt = blockDim.x;
  const char* s = src + blockIdx.x * per;
  char* d = dst + blockIdx.x * per;
  const size_t iterBytes = static_cast<size_t>(U) * nt * 16;
  for (size_t base = 0; base + iterBytes <= per; base += iterBytes) {
    ProbePack a[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];"
                   : "=l"(a[u].lo), "=l"(a[u].hi)
                   : "l"(s + base + (static_cast<size_t>(u) * nt + tid) * 16)
                   : "memory");
#pragma unroll
    for (int u = 0; u < U; ++u)
      asm volatile("st.global.v2.u64 [%0], {%1,%2};" ::"l"(d + base + (static_cast<size_t>(u) * nt + tid) * 16),
                   "l"(a[u].lo), "l"(a[u].hi)
                   : "memory");
  }
}
