// launch_cost: where a small collective's time goes on the host. Prints (1) the host cost of the CUDA calls a
// launch may make (cudaGetDevice, cudaStreamIsCapturing, cudaEventRecord, kernel launches with 8 B, 1.4 KB and
// 8 KB of parameters), and (2) for 8-byte all-reduce, send/recv (both ways, and one way), gather and all-to-all:
// the host time per call (batches of 30 calls between syncs, so the launch queue never fills), the stream time
// per op of 2000 back-to-back calls (what the perf tools report) and the latency of one call + sync. Not built by
// CMake: compiled on the device against Braid; LD_PRELOAD of libnccl.so.2 measures NCCL. Usage: launch_cost RANK
// (two processes, ranks 0 and 1; rank 0 writes the unique id to /tmp/launch_cost_id.bin).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "probe_id.h"
#define CK(x)                                                       \
  do {                                                              \
    auto r = (x);                                                   \
    if (r != 0) {                                                   \
      printf("fail %s:%d %d\n", __FILE__, __LINE__, (int)r);        \
      exit(1);                                                      \
    }                                                               \
  } while (0)

template <int N>
struct Params {
  char b[N];
};
template <int N>
__global__ void emptyKernel(Params<N> p) {
  if (p.b[0] == 123 && threadIdx.x == 9999) printf("never\n");
}

using Clock = std::chrono::steady_clock;
static double usSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Median over `batches` of the host microseconds per call of `fn`, `per` calls a batch, `sync` between batches.
static double hostPerCall(const std::function<void()>& fn, const std::function<void()>& sync, int batches, int per) {
  std::vector<double> v;
  for (int b = 0; b < batches; ++b) {
    sync();
    auto t0 = Clock::now();
    for (int i = 0; i < per; ++i) fn();
    v.push_back(usSince(t0) / per);
  }
  sync();
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  int rank = atoi(argv[1]);
  const char* idf = "/tmp/launch_cost_id.bin";
  const ncclUniqueId id = probeUniqueId(rank, idf);
  CK(cudaSetDevice(rank));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto sync = [&] { CK(cudaStreamSynchronize(s)); };
  cudaEvent_t ev, e0, e1;
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  if (rank == 0) {
    int dev;
    cudaStreamCaptureStatus cap;
    Params<8> p8{};
    Params<1400> p1k{};
    Params<8192> p8k{};
    printf("cuda calls, host us per call: getDevice %.2f setDevice(same) %.2f streamIsCapturing %.2f eventRecord %.2f",
           hostPerCall([&] { CK(cudaGetDevice(&dev)); }, sync, 20, 50),
           hostPerCall([&] { CK(cudaSetDevice(0)); }, sync, 20, 50),
           hostPerCall([&] { CK(cudaStreamIsCapturing(s, &cap)); }, sync, 20, 50),
           hostPerCall([&] { CK(cudaEventRecord(ev, s)); }, sync, 20, 50));
    printf(" launch8B %.2f launch1.4KB %.2f launch8KB %.2f\n",
           hostPerCall([&] { emptyKernel<8><<<1, 32, 0, s>>>(p8); }, sync, 20, 30),
           hostPerCall([&] { emptyKernel<1400><<<1, 32, 0, s>>>(p1k); }, sync, 20, 30),
           hostPerCall([&] { emptyKernel<8192><<<1, 32, 0, s>>>(p8k); }, sync, 20, 30));
  }
  ncclComm_t comm;
  CK(ncclCommInitRank(&comm, 2, id, rank));
  if (rank == 0) unlink(idf);
  void *sb, *rb;
  CK(cudaMalloc(&sb, 1 << 20));
  CK(cudaMalloc(&rb, 1 << 20));
  CK(cudaMemset(sb, 1, 1 << 20));
  const int peer = 1 - rank;
  std::vector<std::pair<std::string, std::function<void()>>> ops = {
      {"allreduce 8B", [&] { CK(ncclAllReduce(sb, rb, 2, ncclFloat, ncclSum, comm, s)); }},
      {"sendrecv 8B",
       [&] {
         CK(ncclGroupStart());
         CK(ncclSend(sb, 8, ncclInt8, peer, comm, s));
         CK(ncclRecv(rb, 8, ncclInt8, peer, comm, s));
         CK(ncclGroupEnd());
       }},
      // One direction per rank (rank 0 sends, rank 1 receives), and the rooted/all-to-all collectives: small
      // gather/scatter beat NCCL where send/recv and all-to-all lost (docs/PERFORMANCE.md, twelfth session).
      {"send one way 8B",
       [&] {
         CK(ncclGroupStart());
         if (rank == 0) CK(ncclSend(sb, 8, ncclInt8, peer, comm, s));
         if (rank == 1) CK(ncclRecv(rb, 8, ncclInt8, peer, comm, s));
         CK(ncclGroupEnd());
       }},
      {"gather 8B", [&] { CK(ncclGather(sb, rb, 4, ncclInt8, 0, comm, s)); }},
      {"alltoall 8B", [&] { CK(ncclAlltoAll(sb, rb, 4, ncclInt8, comm, s)); }},
  };
  for (auto& [name, fn] : ops) {
    for (int i = 0; i < 200; ++i) fn();
    sync();
    // Both ranks run the same number of calls in every phase, so the collectives pair up.
    const double host = hostPerCall(fn, sync, 30, 30);
    const int n = 2000;
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < n; ++i) fn();
    CK(cudaEventRecord(e1, s));
    sync();
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    std::vector<double> lat;
    for (int i = 0; i < 300; ++i) {
      auto t0 = Clock::now();
      fn();
      sync();
      lat.push_back(usSince(t0));
    }
    std::sort(lat.begin(), lat.end());
    printf("rank %d %s: host per call %.2f us, stream per op %.2f us, call+sync p50 %.2f p10 %.2f us\n", rank,
           name.c_str(), host, 1000.0 * ms / n, lat[lat.size() / 2], lat[lat.size() / 10]);
  }
  ncclCommDestroy(comm);
  return 0;
}
