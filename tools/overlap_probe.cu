// overlap_probe: what an all-reduce and a stream of compute kernels cost each other when they run at once, as
// in data-parallel training (gradient all-reduces beside the backward pass). Two processes, one GPU each, like
// iter_probe.cu; LD_PRELOAD of libnccl.so.2 measures NCCL. Not built by CMake; tools/gpu_next38.sh compiles it.
// Usage: overlap_probe RANK BYTES [NAR (50)] [NCOMP (400)]
// PROBE_CTA_POLICY=N in the environment: the communicator is made with config.CTAPolicy = N.
// Compute: NCOMP kernels of 4 blocks per SM x 256 threads of dependent FMAs (~57 us each on H200) on one stream;
// communication: NAR float sum all-reduces of BYTES on another. Prints, per rank, each alone and both together
// (median of 5): the compute stream's time, the all-reduce stream's time, and the slowdowns.
#include <nccl.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_id.h"

#define CK(x) do { auto r_ = (x); if (r_ != 0) { printf("fail %s:%d %d\n", __FILE__, __LINE__, (int)r_); exit(1); } } while (0)

__global__ void burn(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, b, c);
    b = fmaf(b, c, a * 1e-7f);
  }
  if (a == 12345.f) out[blockIdx.x] = a + b;  // never true; keeps the loop
}

int main(int argc, char** argv) {
  const int rank = atoi(argv[1]);
  const size_t bytes = strtoull(argv[2], 0, 0);
  const int nar = argc > 3 ? atoi(argv[3]) : 50, ncomp = argc > 4 ? atoi(argv[4]) : 400;
  const char* idf = "/tmp/overlap_id.bin";
  const ncclUniqueId id = probeUniqueId(rank, idf);
  CK(cudaSetDevice(rank));
  ncclComm_t comm;
  if (const char* pol = getenv("PROBE_CTA_POLICY")) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.CTAPolicy = atoi(pol);
    CK(ncclCommInitRankConfig(&comm, 2, id, rank, &cfg));
  } else {
    CK(ncclCommInitRank(&comm, 2, id, rank));
  }
  if (rank == 0) unlink(idf);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rank));
  float *buf, *out;
  CK(cudaMalloc(&buf, bytes));
  CK(cudaMalloc(&out, 4 * sms * sizeof(float)));
  CK(cudaMemset(buf, 0, bytes));
  cudaStream_t sc, sa;
  CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  cudaEvent_t c0, c1, a0, a1;
  for (cudaEvent_t* e : {&c0, &c1, &a0, &a1}) CK(cudaEventCreate(e));
  const int iters = 4000;
  auto comp = [&] {
    CK(cudaEventRecord(c0, sc));
    for (int i = 0; i < ncomp; ++i) burn<<<4 * sms, 256, 0, sc>>>(out, iters);
    CK(cudaEventRecord(c1, sc));
  };
  auto comm_ = [&] {
    CK(cudaEventRecord(a0, sa));
    for (int i = 0; i < nar; ++i) CK(ncclAllReduce(buf, buf, bytes / 4, ncclFloat, ncclSum, comm, sa));
    CK(cudaEventRecord(a1, sa));
  };
  auto ms = [](cudaEvent_t x, cudaEvent_t y) { float m; CK(cudaEventElapsedTime(&m, x, y)); return m; };
  // Both ranks start each phase together: a small all-reduce on the communication stream, synchronised.
  auto align = [&] { CK(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, sa)); CK(cudaStreamSynchronize(sa)); };
  std::vector<float> tc, ta, bc, ba;
  comm_();  // warm up
  CK(cudaStreamSynchronize(sa));
  for (int rep = 0; rep < 5; ++rep) {
    align();
    comp();
    CK(cudaStreamSynchronize(sc));
    tc.push_back(ms(c0, c1));
    align();
    comm_();
    CK(cudaStreamSynchronize(sa));
    ta.push_back(ms(a0, a1));
    align();
    comm_();
    comp();
    CK(cudaStreamSynchronize(sa));
    CK(cudaStreamSynchronize(sc));
    ba.push_back(ms(a0, a1));
    bc.push_back(ms(c0, c1));
  }
  auto med = [](std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  printf("rank %d bytes %zu nar %d ncomp %d: compute alone %.3f ms, all-reduce alone %.3f ms (%.1f us each); "
         "together: compute %.3f ms (x%.2f), all-reduce %.3f ms (x%.2f)\n",
         rank, bytes, nar, ncomp, med(tc), med(ta), 1e3 * med(ta) / nar, med(bc), med(bc) / med(tc), med(ba),
         med(ba) / med(ta));
  CK(ncclCommDestroy(comm));
  return 0;
}
