// ce_probe: what the NVLink between two GPUs carries per direction by mover: the copy engines
// (cudaMemcpyPeerAsync), SM stores into the peer (push, what the P2P transport's write mode makes), SM loads
// from the peer (pull, read mode), and a copy engine beside SM stores on the same direction. One direction and
// both at once. One process, two GPUs, peer access. Not part of the library: a measuring tool for
// docs/PERFORMANCE.md (eighteenth session), asking whether any mover beats the ~365 GB/s the SM stores of
// tools/link_probe.cu reach (the bound that puts the 16-32 MB all-reduce targets out of reach).
// Build: nvcc -O3 -arch=sm_90 -std=c++17 tools/ce_probe.cu -o ce_probe; run: ce_probe [MiB (256)] [CTAs (64)].
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// A grid-stride copy of 16-byte packs, 8 in flight per thread; src or dst may be the peer's memory.
__global__ void __launch_bounds__(512, 1) smCopy(const uint4* src, uint4* dst, size_t n) {
  constexpr int U = 8;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

struct Gpu {
  int dev;
  char* a;  // source
  char* b;  // destination (the peer writes here in push mode)
  cudaStream_t s1, s2;
};

enum Mover { kNone, kCe, kPush, kPull, kCePush };

// Starts one transfer of `bytes` from GPU `from` to GPU `to` by mover m on from's or to's streams.
static void start(Gpu* g, int from, int to, Mover m, size_t bytes, int ctas) {
  Gpu& f = g[from];
  Gpu& t = g[to];
  size_t packs = bytes / 16;
  switch (m) {
    case kCe:
      CK(cudaMemcpyPeerAsync(t.b, t.dev, f.a, f.dev, bytes, f.s1));
      break;
    case kPush:
      CK(cudaSetDevice(f.dev));
      smCopy<<<ctas, 512, 0, f.s1>>>((const uint4*)f.a, (uint4*)t.b, packs);
      break;
    case kPull:
      CK(cudaSetDevice(t.dev));
      smCopy<<<ctas, 512, 0, t.s1>>>((const uint4*)f.a, (uint4*)t.b, packs);
      break;
    case kCePush: {  // half by each, at once
      size_t half = bytes / 2;
      CK(cudaMemcpyPeerAsync(t.b, t.dev, f.a, f.dev, half, f.s2));
      CK(cudaSetDevice(f.dev));
      smCopy<<<ctas, 512, 0, f.s1>>>((const uint4*)(f.a + half), (uint4*)(t.b + half), (bytes - half) / 16);
      break;
    }
    case kNone:
      break;
  }
}

static void syncAll(Gpu* g) {
  for (int i = 0; i < 2; ++i) {
    CK(cudaSetDevice(g[i].dev));
    CK(cudaDeviceSynchronize());
  }
}

// GB/s per direction: `iters` transfers of `bytes`, each direction's mover given (kNone: idle).
static double measure(Gpu* g, Mover m01, Mover m10, size_t bytes, int ctas, int iters) {
  for (int w = 0; w < 2; ++w) {
    start(g, 0, 1, m01, bytes, ctas);
    start(g, 1, 0, m10, bytes, ctas);
  }
  syncAll(g);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    start(g, 0, 1, m01, bytes, ctas);
    start(g, 1, 0, m10, bytes, ctas);
  }
  syncAll(g);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return (double)bytes * iters / s / 1e9;
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 256;
  int ctas = argc > 2 ? atoi(argv[2]) : 64;
  size_t bytes = mib << 20;
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("ce_probe: needs two GPUs, found %d\n", n);
    return 0;
  }
  Gpu g[2];
  for (int i = 0; i < 2; ++i) {
    g[i].dev = i;
    CK(cudaSetDevice(i));
    CK(cudaDeviceEnablePeerAccess(1 - i, 0));
    CK(cudaMalloc(&g[i].a, bytes));
    CK(cudaMalloc(&g[i].b, bytes));
    CK(cudaMemset(g[i].a, 0x11 * (i + 1), bytes));
    CK(cudaStreamCreateWithFlags(&g[i].s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g[i].s2, cudaStreamNonBlocking));
  }
  int iters = (int)std::max<size_t>(4, (size_t(8) << 30) / bytes);
  struct Row { const char* name; Mover m; };
  const Row rows[] = {
      {"copy engine", kCe}, {"SM push", kPush}, {"SM pull", kPull}, {"CE half + SM push half", kCePush}};
  printf("%zu MiB per transfer, %d CTAs x 512 threads per SM kernel, %d transfers; GB/s per direction\n", mib, ctas,
         iters);
  printf("| mover | one direction | both at once (each way) |\n|---|---|---|\n");
  for (const Row& r : rows) {
    double one = measure(g, r.m, kNone, bytes, ctas, iters);
    double both = measure(g, r.m, r.m, bytes, ctas, iters);
    printf("| %s | %.1f | %.1f |\n", r.name, one, both);
  }
  // Check that the last transfers landed (both directions ran CE half + SM push half last).
  std::vector<unsigned char> h(bytes);
  for (int i = 0; i < 2; ++i) {
    CK(cudaSetDevice(i));
    CK(cudaMemcpy(h.data(), g[i].b, bytes, cudaMemcpyDeviceToHost));
    unsigned char want = (unsigned char)(0x11 * (2 - i));
    size_t bad = 0;
    for (size_t k = 0; k < bytes; ++k) bad += h[k] != want;
    printf("GPU %d destination: %zu wrong bytes\n", i, bad);
  }
  return 0;
}
