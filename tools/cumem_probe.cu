// cumem_probe: does the way the peer's memory is allocated and mapped change what SM stores carry over NVLink?
// NCCL 2.28 maps its P2P buffers with the cuMem* API ("P2P/CUMEM") and moves 362-369 GB/s of broadcast and
// reduce on 24 CTAs, where Braid's cudaMalloc'd FIFOs (cudaIpc / peer access) need 64 CTAs for 355-364 and
// link_probe.cu's plain copy into cudaMalloc'd peer memory gets 350 on 24 (docs/PERFORMANCE.md). One process,
// two GPUs; GPU 0 (and, "bi", GPU 1 at once) copies 512 MiB from its own memory into a buffer on the other GPU
// that is either cudaMalloc'd (peer access enabled) or cuMemCreate'd on that GPU and mapped read-write for
// both. Then, into cudaMalloc'd memory, the same kernels launched in thread-block clusters of 2, 4 and 8 CTAs
// (cudaLaunchAttributeClusterDimension: a cluster's CTAs run on one GPC; NCCL launches in clusters of 4 on
// sm_90, NCCL_CGA_CLUSTER_SIZE). Not part of the library: a measuring tool (nineteenth session).
// Build: nvcc -O3 -arch=sm_90 -std=c++17 tools/cumem_probe.cu -lcuda; run: cumem_probe [NTHREADS (512)].
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_copy.cuh"

#define CU(x)                                                                                   \
  do {                                                                                          \
    CUresult r_ = (x);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                   \
      const char* s_ = nullptr;                                                                 \
      cuGetErrorString(r_, &s_);                                                                \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?");                 \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)


// `bytes` on device `owner`, mapped read-write for both devices.
static char* cumemAlloc(int owner, size_t bytes) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = owner;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  bytes = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h;
  CU(cuMemCreate(&h, bytes, &prop, 0));
  CUdeviceptr p = 0;
  CU(cuMemAddressReserve(&p, bytes, gran, 0, 0));
  CU(cuMemMap(p, bytes, 0, h, 0));
  CUmemAccessDesc acc[2] = {};
  for (int g = 0; g < 2; ++g) {
    acc[g].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc[g].location.id = g;
    acc[g].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  CU(cuMemSetAccess(p, bytes, acc, 2));
  return reinterpret_cast<char*>(p);
}

int main(int argc, char** argv) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("cumem_probe: needs 2 GPUs, found %d\n", n);
    return 0;
  }
  const int nthreads = argc > 1 ? atoi(argv[1]) : 512;
  const size_t total = size_t(512) << 20;
  char *src[2], *dstMalloc[2], *dstCumem[2];
  cudaStream_t str[2];
  cudaEvent_t e0[2], e1[2];
  for (int g = 0; g < 2; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceEnablePeerAccess(1 - g, 0));
    CK(cudaMalloc(&src[g], total));
    CK(cudaMemset(src[g], g + 1, total));
    CK(cudaMalloc(&dstMalloc[g], total));  // on g, written by 1 - g
    CK(cudaStreamCreateWithFlags(&str[g], cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0[g]));
    CK(cudaEventCreate(&e1[g]));
  }
  for (int g = 0; g < 2; ++g) dstCumem[g] = cumemAlloc(g, total);
  const int ctas[] = {16, 24, 32, 48, 64, 96, 128, 132};
  printf("# nthreads %d, 512 MiB per direction; GB/s per direction (median of 7), per CTA in brackets\n", nthreads);
  printf("%-8s %-4s", "dst", "dir");
  for (int c : ctas) printf(" %13d", c);
  printf("\n");
  // kind 0: cudaMalloc, 1: cuMem, 2-4: cudaMalloc in clusters of 2, 4, 8.
  for (int kind = 0; kind < 5; ++kind) {
    char** dst = kind == 1 ? dstCumem : dstMalloc;
    const int cluster = kind < 2 ? 1 : 1 << (kind - 1);
    static const char* names[] = {"malloc", "cumem", "clus2", "clus4", "clus8"};
    for (int bi = 0; bi < 2; ++bi) {
      printf("%-8s %-4s", names[kind], bi ? "bi" : "uni");
      for (int c : ctas) {
        if (c % cluster != 0) {
          printf(" %13s", "-");
          continue;
        }
        const size_t per = total / c / 16 * 16;
        std::vector<float> t;
        for (int rep = 0; rep < 8; ++rep) {
          for (int g = 0; g < (bi ? 2 : 1); ++g) {
            CK(cudaSetDevice(g));
            CK(cudaEventRecord(e0[g], str[g]));
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(c);
            cfg.blockDim = dim3(nthreads);
            cfg.stream = str[g];
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeClusterDimension;
            attr[0].val.clusterDim.x = cluster;
            attr[0].val.clusterDim.y = 1;
            attr[0].val.clusterDim.z = 1;
            cfg.attrs = attr;
            cfg.numAttrs = cluster > 1 ? 1 : 0;
            CK(cudaLaunchKernelEx(&cfg, copyKernel, static_cast<const char*>(src[g]), dst[1 - g], per));
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
        const size_t iterBytes = size_t(kProbeUnroll) * nthreads * 16;
        const double moved = static_cast<double>(per / iterBytes * iterBytes) * c;
        const double gbs = moved / (t[t.size() / 2] * 1e-3) / 1e9;
        printf(" %6.1f(%5.1f)", gbs, gbs / c);
      }
      printf("\n");
      fflush(stdout);
    }
  }
  return 0;
}
