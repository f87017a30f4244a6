// link_probe: how fast one CTA can push bytes to a peer GPU's memory over NVLink, by access pattern, load
// kind and per-step fence, with 1-64 CTAs, one direction or both at once. One process, two GPUs, peer access
// (the same NVLink stores the P2P transport makes across processes). Not part of the library: a measuring
// tool for docs/PERFORMANCE.md (fifteenth session). Build: nvcc -O3 -arch=sm_90 -std=c++17 tools/link_probe.cu;
// run: link_probe [NTHREADS (512)] [FILTER (a substring of the variant names)].
//
// Patterns (16-byte packs, UNROLL packs in flight per thread):
//   strided   thread t's u-th pack of an iteration is t + u * nthreads (reduce_copy.h today)
//   warpblk   warp w's iteration covers UNROLL * 512 contiguous bytes, its lanes' u-th packs 512 bytes apart
// Loads: volatile (ld.volatile, reduce_copy.h today), plain (ld.global), nc (ld.global.nc).
// Two destinations (-2dst): each pack also goes to a second buffer on the sending GPU (the out-of-place
// broadcast root's copySend), remote store first.
// Step sync: none, or every 512 KiB a CTA barrier and thread 0's fence.acq_rel.sys + a relaxed flag store to
// the peer (the SIMPLE FIFO's publish without the poster warp).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct alignas(16) P { uint64_t lo, hi; };

template <int Ld>
__device__ __forceinline__ P ld(const char* p) {
  P v;
  if (Ld == 0) asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");
  if (Ld == 1) asm volatile("ld.global.v2.u64 {%0,%1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");
  if (Ld == 2) asm volatile("ld.global.nc.v2.u64 {%0,%1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st(char* p, const P& v) {
  asm volatile("st.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(v.lo), "l"(v.hi) : "memory");
}

template <int U, int Pattern, int Ld, int NDst = 1>
__global__ void __launch_bounds__(1024, 1) copyKernel(const char* src, char* dst, size_t per, size_t stepBytes,
                                                      int sync, uint64_t* flags, char* local) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5;
  const char* s = src + blockIdx.x * per;
  char* d = dst + blockIdx.x * per;
  char* d2 = local + blockIdx.x * per;
  const size_t iterBytes = static_cast<size_t>(U) * nt * 16;
  uint64_t step = 0;
  for (size_t base = 0; base < per; base += iterBytes) {
    P a[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t off = Pattern == 0 ? base + (static_cast<size_t>(u) * nt + tid) * 16
                                      : base + (static_cast<size_t>(warp) * U * 32 + u * 32 + lane) * 16;
      a[u] = ld<Ld>(s + off);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t off = Pattern == 0 ? base + (static_cast<size_t>(u) * nt + tid) * 16
                                      : base + (static_cast<size_t>(warp) * U * 32 + u * 32 + lane) * 16;
      st(d + off, a[u]);
      if (NDst == 2) st(d2 + off, a[u]);
    }
    if (sync && (base + iterBytes) % stepBytes == 0) {
      __syncthreads();
      if (tid == 0) {
        asm volatile("fence.acq_rel.sys;" ::: "memory");
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(flags + blockIdx.x), "l"(++step) : "memory");
      }
    }
  }
}

typedef void (*KernelFn)(const char*, char*, size_t, size_t, int, uint64_t*, char*);
struct Variant {
  const char* name;
  KernelFn fn;
};

int main(int argc, char** argv) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("link_probe: needs 2 GPUs, found %d\n", n);
    return 0;
  }
  const int nthreads = argc > 1 ? atoi(argv[1]) : 512;
  const size_t per = size_t(8) << 20;  // bytes per CTA
  const int maxCta = 64;
  char *src[2], *dst[2], *loc[2];
  uint64_t* flags[2];
  cudaStream_t str[2];
  cudaEvent_t e0[2], e1[2];
  for (int g = 0; g < 2; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&src[g], per * maxCta));
    CK(cudaMalloc(&dst[g], per * maxCta));
    CK(cudaMalloc(&loc[g], per * maxCta));
    CK(cudaMalloc(&flags[g], 8 * maxCta));
    CK(cudaMemset(src[g], g + 1, per * maxCta));
    CK(cudaStreamCreateWithFlags(&str[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
  }
  std::vector<Variant> vars = {
      {"strided-volatile-u8", copyKernel<8, 0, 0>}, {"strided-plain-u8", copyKernel<8, 0, 1>},
      {"strided-nc-u8", copyKernel<8, 0, 2>},       {"warpblk-volatile-u8", copyKernel<8, 1, 0>},
      {"warpblk-plain-u8", copyKernel<8, 1, 1>},    {"warpblk-nc-u8", copyKernel<8, 1, 2>},
      {"strided-volatile-u4", copyKernel<4, 0, 0>}, {"warpblk-volatile-u4", copyKernel<4, 1, 0>},
      {"strided-volatile-u16", copyKernel<16, 0, 0>}, {"warpblk-plain-u16", copyKernel<16, 1, 1>},
      {"strided-volatile-u8-2dst", copyKernel<8, 0, 0, 2>}, {"strided-plain-u8-2dst", copyKernel<8, 0, 1, 2>},
      {"warpblk-plain-u8-2dst", copyKernel<8, 1, 1, 2>},
  };
  const char* only = argc > 2 ? argv[2] : nullptr;  // a substring of the variants to run
  const int ctas[] = {1, 8, 16, 24, 32, 48, 64};
  printf("# nthreads %d, %zu MiB per CTA; GB/s per direction (median of 5), per CTA in brackets\n", nthreads,
         per >> 20);
  printf("%-26s %-4s %-4s", "variant", "sync", "dir");
  for (int c : ctas) printf(" %13d", c);
  printf("\n");
  for (const Variant& v : vars) {
    if (only && !strstr(v.name, only)) continue;
    for (int sync = 0; sync < 2; ++sync) {
      for (int bi = 0; bi < 2; ++bi) {
        printf("%-26s %-4s %-4s", v.name, sync ? "fnc" : "-", bi ? "bi" : "uni");
        for (int c : ctas) {
          std::vector<float> t;
          for (int rep = 0; rep < 6; ++rep) {
            for (int g = 0; g < (bi ? 2 : 1); ++g) {
              CK(cudaSetDevice(g));
              CK(cudaEventRecord(e0[g], str[g]));
              v.fn<<<c, nthreads, 0, str[g]>>>(src[g], dst[1 - g], per, size_t(512) << 10, sync, flags[1 - g], loc[g]);
              CK(cudaGetLastError());
              CK(cudaEventRecord(e1[g], str[g]));
            }
            float worst = 0;
            for (int g = 0; g < (bi ? 2 : 1); ++g) {
              CK(cudaEventSynchronize(e1[g]));
              float ms;
              CK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
              worst = std::max(worst, ms);
            }
            if (rep > 0) t.push_back(worst);
          }
          std::sort(t.begin(), t.end());
          const double gbs = per * c / (t[t.size() / 2] * 1e-3) / 1e9;
          printf(" %6.1f(%5.1f)", gbs, gbs / c);
        }
        printf("\n");
        fflush(stdout);
      }
    }
  }
  return 0;
}
