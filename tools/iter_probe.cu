// iter_probe: per-iteration GPU times of one operation between two processes, one GPU each (the perf tools
// report only the mean, which hid a launch-to-launch alternation). Not built by CMake: tools/gpu_iter_probe.sh
// compiles it against Braid; LD_PRELOAD of libnccl.so.2 measures NCCL.
// Usage: iter_probe RANK BYTES ITERS [MODE] (rank 0 writes the unique id to /tmp/probe_id.bin, rank 1 reads it).
// MODE: sendrecv (default: a grouped ncclSend + ncclRecv of BYTES), alltoall, gather, scatter (root 0); for
// those BYTES is the perf tools' size, the whole buffer of n x per-rank count (BYTES / 2 per rank).
#include <nccl.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <unistd.h>
#include <fstream>
#include "probe_id.h"
#include <string>
#include <chrono>
#define CK(x) do { auto r = (x); if (r != 0) { printf("fail %s:%d %d\n", __FILE__, __LINE__, (int)r); exit(1);} } while (0)
int main(int argc, char** argv) {
  int rank = atoi(argv[1]); size_t bytes = strtoull(argv[2], 0, 0); int iters = atoi(argv[3]);
  const std::string mode = argc > 4 ? argv[4] : "sendrecv";
  if (mode != "sendrecv" && mode != "alltoall" && mode != "gather" && mode != "scatter") { printf("bad mode %s\n", mode.c_str()); return 2; }
  const char* idf = "/tmp/probe_id.bin";
  const ncclUniqueId id = probeUniqueId(rank, idf);
  CK(cudaSetDevice(rank));
  ncclComm_t comm; CK(ncclCommInitRank(&comm, 2, id, rank));
  if (rank == 0) unlink(idf);
  void *sb, *rb; CK(cudaMalloc(&sb, bytes)); CK(cudaMalloc(&rb, bytes));
  CK(cudaMemset(sb, 1, bytes));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<cudaEvent_t> ev(iters + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  int peer = 1 - rank;
  const size_t per = bytes / 2;
  auto one = [&] {
    if (mode == "alltoall") { CK(ncclAlltoAll(sb, rb, per, ncclInt8, comm, s)); return; }
    if (mode == "gather") { CK(ncclGather(sb, rb, per, ncclInt8, 0, comm, s)); return; }
    if (mode == "scatter") { CK(ncclScatter(sb, rb, per, ncclInt8, 0, comm, s)); return; }
    CK(ncclGroupStart()); CK(ncclSend(sb, bytes, ncclInt8, peer, comm, s)); CK(ncclRecv(rb, bytes, ncclInt8, peer, comm, s)); CK(ncclGroupEnd());
  };
  for (int i = 0; i < 20; ++i) one();
  CK(cudaStreamSynchronize(s));
  std::vector<double> hostUs(iters);
  auto t0 = std::chrono::steady_clock::now();
  CK(cudaEventRecord(ev[0], s));
  for (int i = 0; i < iters; ++i) { one(); CK(cudaEventRecord(ev[i + 1], s)); hostUs[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count(); }
  CK(cudaStreamSynchronize(s));
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) CK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
  std::vector<float> sorted = ms; std::sort(sorted.begin(), sorted.end());
  double sum = 0; for (float m : ms) sum += m;
  printf("rank %d %s bytes %zu: mean %.1f us, min %.1f p10 %.1f p50 %.1f p90 %.1f max %.1f; host enqueue of all %.0f us\n", rank, mode.c_str(), bytes,
         1000 * sum / iters, 1000 * sorted[0], 1000 * sorted[iters / 10], 1000 * sorted[iters / 2], 1000 * sorted[iters * 9 / 10], 1000 * sorted[iters - 1], hostUs[iters - 1]);
  printf("rank %d first 40:", rank); for (int i = 0; i < 40 && i < iters; ++i) printf(" %.0f", 1000 * ms[i]); printf("\n");
  ncclCommDestroy(comm);
  return 0;
}
