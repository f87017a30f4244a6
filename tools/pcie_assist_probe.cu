// pcie_assist_probe: can a path through pinned host memory, over each GPU's own PCIe link, carry bytes between
// two NVLink-connected GPUs beside what NVLink carries, and so raise what a 16-32 MB all-reduce can move? On
// 2xH100 NV18 SM stores move ~365 GB/s per direction both ways (cumem_probe.cu), and issue 5's 1.5x NCCL at
// 16-32 MB needs ~410 (docs/PERFORMANCE.md, "What 1.5x needs"). A host path costs each GPU one PCIe write
// (its share, to host) and one PCIe read (the peer's share, from host), both on its own link, full duplex.
// One process, two GPUs, both directions at once. Parts, each timed from a common start event per GPU:
//   nv   : 256 MiB copied into the peer's cudaMalloc'd memory, 64 CTAs in clusters of 4 (Braid's ring launch)
//   smw  : HOST_MIB MiB of this GPU's memory stored to pinned host memory by CTAS CTAs (SM, mapped pointer)
//   smr  : HOST_MIB MiB of the peer's host buffer loaded into this GPU's memory by CTAS CTAs
//   cew / cer : the same two by the copy engines (cudaMemcpyAsync D2H / H2D on their own streams)
// Rows: each part alone, then nv with each host path beside it; GB/s per direction per part and, for the
// combined rows, (nv + host bytes) / the slowest part's time. Not part of the library: a measuring tool
// (twentieth session). Build: nvcc -O3 -arch=sm_90 -std=c++17 tools/pcie_assist_probe.cu;
// run: pcie_assist_probe [HOST_MIB (32)] [CTAS (16)].

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_copy.cuh"

constexpr int kThreads = 512;
constexpr size_t kIter = size_t(kProbeUnroll) * kThreads * 16;

// Bytes a copyKernel of `ctas` CTAs over `total` bytes moves (whole iterations per CTA).
size_t launchCopy(const char* src, char* dst, size_t total, int ctas, int cluster, cudaStream_t s) {
  const size_t per = total / ctas / kIter * kIter;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(ctas);
  cfg.blockDim = dim3(kThreads);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cluster > 1 ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, copyKernel, src, dst, per));
  return per * ctas;
}

enum Part { kNv, kSmw, kSmr, kCew, kCer, kParts };
const char* kNames[kParts] = {"nv", "smw", "smr", "cew", "cer"};

struct Gpu {
  char *src, *peerDst, *hostLanded;  // peerDst: on this GPU, written by the peer over NVLink
  char* host;                        // pinned, written by this GPU, read by the peer
  cudaStream_t s[kParts];
  cudaEvent_t start, end[kParts];
};

int main(int argc, char** argv) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("pcie_assist_probe: needs 2 GPUs, found %d\n", n);
    return 0;
  }
  const size_t hostBytes = size_t(argc > 1 ? atoi(argv[1]) : 32) << 20;
  const int ctas = argc > 2 ? atoi(argv[2]) : 16;
  const size_t nvBytes = size_t(256) << 20;
  Gpu g[2];
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CK(cudaMalloc(&g[d].src, nvBytes + hostBytes));
    CK(cudaMemset(g[d].src, d + 1, nvBytes + hostBytes));
    CK(cudaMalloc(&g[d].peerDst, nvBytes));
    CK(cudaMalloc(&g[d].hostLanded, hostBytes));
    CK(cudaHostAlloc(&g[d].host, hostBytes, cudaHostAllocPortable | cudaHostAllocMapped));
    memset(g[d].host, d + 1, hostBytes);
    for (int p = 0; p < kParts; ++p) {
      CK(cudaStreamCreateWithFlags(&g[d].s[p], cudaStreamNonBlocking));
      CK(cudaEventCreate(&g[d].end[p]));
    }
    CK(cudaEventCreate(&g[d].start));
  }
  printf("# nv %zu MiB in clusters of 4 on 64 CTAs; host paths %zu MiB (SM: %d CTAs); both GPUs at once;\n"
         "# GB/s per direction per part, median of 7 (time from a common start); worst GPU\n",
         nvBytes >> 20, hostBytes >> 20, ctas);
  const std::vector<std::vector<Part>> rows = {{kNv},  {kSmw},        {kSmr},        {kSmw, kSmr},
                                               {kCew}, {kCer},        {kCew, kCer},  {kNv, kSmw, kSmr},
                                               {kNv, kCew, kCer}};
  for (const auto& row : rows) {
    std::vector<std::vector<float>> ms(kParts);
    std::vector<float> slowest;
    size_t moved[kParts] = {};
    for (int rep = 0; rep < 8; ++rep) {
      for (int d = 0; d < 2; ++d) {
        Gpu& x = g[d];
        Gpu& peer = g[1 - d];
        CK(cudaSetDevice(d));
        CK(cudaEventRecord(x.start, x.s[kNv]));
        for (Part p : row) {
          if (p != kNv) CK(cudaStreamWaitEvent(x.s[p], x.start, 0));
          switch (p) {
            case kNv: moved[p] = launchCopy(x.src, peer.peerDst, nvBytes, 64, 4, x.s[p]); break;
            case kSmw: moved[p] = launchCopy(x.src + nvBytes, x.host, hostBytes, ctas, 1, x.s[p]); break;
            case kSmr: moved[p] = launchCopy(peer.host, x.hostLanded, hostBytes, ctas, 1, x.s[p]); break;
            case kCew:
              CK(cudaMemcpyAsync(x.host, x.src + nvBytes, hostBytes, cudaMemcpyDeviceToHost, x.s[p]));
              moved[p] = hostBytes;
              break;
            case kCer:
              CK(cudaMemcpyAsync(x.hostLanded, peer.host, hostBytes, cudaMemcpyHostToDevice, x.s[p]));
              moved[p] = hostBytes;
              break;
            default: break;
          }
          CK(cudaEventRecord(x.end[p], x.s[p]));
        }
      }
      float worstAll = 0;
      std::vector<float> worst(kParts, 0.f);
      for (int d = 0; d < 2; ++d)
        for (Part p : row) {
          CK(cudaEventSynchronize(g[d].end[p]));
          float t;
          CK(cudaEventElapsedTime(&t, g[d].start, g[d].end[p]));
          worst[p] = std::max(worst[p], t);
          worstAll = std::max(worstAll, t);
        }
      if (rep == 0) continue;
      for (Part p : row) ms[p].push_back(worst[p]);
      slowest.push_back(worstAll);
    }
    std::string name;
    size_t total = 0;
    for (Part p : row) name += std::string(name.empty() ? "" : "+") + kNames[p];
    printf("%-12s", name.c_str());
    for (Part p : row) {
      std::sort(ms[p].begin(), ms[p].end());
      const float t = ms[p][ms[p].size() / 2];
      printf("  %s %8.1f us %6.1f GB/s", kNames[p], t * 1e3, moved[p] / (t * 1e-3) / 1e9);
      if (p != kSmr && p != kCer) total += moved[p];  // one direction: what this GPU sends
    }
    std::sort(slowest.begin(), slowest.end());
    const float t = slowest[slowest.size() / 2];
    if (row.size() > 1 && row[0] == kNv) printf("  | sent %.1f GB/s", total / (t * 1e-3) / 1e9);
    printf("\n");
    fflush(stdout);
  }
  return 0;
}
