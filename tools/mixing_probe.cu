// mixing_probe: what graph mixing (NCCL_GRAPH_MIXING_SUPPORT) costs uncaptured calls. Once a communicator has
// captured, each uncaptured batch waits on the communicator's serial event (a replay may have recorded it), even on
// the stream of the batch before, and that wait may cost the programmatic overlap of back-to-back launches.
// Prints the stream time per op of 2000 back-to-back 8-byte all-reduces, five times before the first capture and
// five times after one all-reduce was captured into a graph and replayed once. Not built by CMake: compiled on the
// device against Braid; LD_PRELOAD of libnccl.so.2 measures NCCL. Usage: mixing_probe RANK (two processes, ranks 0
// and 1, one GPU each; rank 0 writes the unique id to /tmp/mixing_probe_id.bin).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_id.h"
#define CK(x)                                                \
  do {                                                       \
    auto r = (x);                                            \
    if (r != 0) {                                            \
      printf("fail %s:%d %d\n", __FILE__, __LINE__, (int)r); \
      exit(1);                                               \
    }                                                        \
  } while (0)

namespace {

constexpr int kOps = 2000;

double eagerUsPerOp(ncclComm_t comm, cudaStream_t s, float* buf) {
  CK(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s));
  CK(cudaStreamSynchronize(s));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kOps; ++i) CK(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s));
  CK(cudaStreamSynchronize(s));
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kOps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = argc > 1 ? atoi(argv[1]) : 0;
  CK(cudaSetDevice(rank));
  ncclUniqueId id = probeUniqueId(rank, "/tmp/mixing_probe_id.bin");
  ncclComm_t comm;
  CK(ncclCommInitRank(&comm, 2, id, rank));
  if (rank == 0) unlink("/tmp/mixing_probe_id.bin");
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* buf;
  CK(cudaMalloc(&buf, 64));
  CK(cudaMemset(buf, 0, 64));
  std::vector<double> before, after;
  for (int r = 0; r < 5; ++r) before.push_back(eagerUsPerOp(comm, s, buf));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, comm, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  for (int r = 0; r < 5; ++r) after.push_back(eagerUsPerOp(comm, s, buf));
  printf("rank %d: 8 B all-reduce, us per op of %d back-to-back: before a capture %.2f (", rank, kOps, median(before));
  for (double v : before) printf(" %.2f", v);
  printf(" ), after one %.2f (", median(after));
  for (double v : after) printf(" %.2f", v);
  printf(" )\n");
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(ncclCommDestroy(comm));
  return 0;
}
