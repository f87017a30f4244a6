// braid_smoke: the smallest end-to-end check of a Braid install. Under braidrun, every rank all-reduces
// 1M floats (sum of rank+1) on host buffers through the public nccl.h API and checks every element.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nccl.h"

namespace {

constexpr size_t kCount = 1 << 20;

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::atoi(v) : fallback;
}

int fail(const char* what, ncclResult_t res, ncclComm_t comm, int rank) {
  std::fprintf(stderr, "braid_smoke: rank %d: %s failed: %s (%d); last error: %s\n", rank, what,
               ncclGetErrorString(res), static_cast<int>(res), ncclGetLastError(comm));
  return 1;
}

}  // namespace

int main() {
  // Host buffers need a host communicator; on a machine with GPUs that takes BRAID_HOST_COMM=1. Respect
  // an explicit setting from the user (overwrite = 0).
  setenv("BRAID_HOST_COMM", "1", 0);
  const int rank = envInt("BRAID_RANK", 0);
  const int nranks = envInt("BRAID_NRANKS", 1);
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    std::fprintf(stderr, "braid_smoke: bad BRAID_RANK=%d / BRAID_NRANKS=%d\n", rank, nranks);
    return 2;
  }

  // Every rank asks for the id itself: with NCCL_COMM_ID set (braidrun sets it) they all get the same one.
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) return fail("ncclGetUniqueId", res, nullptr, rank);
  ncclComm_t comm = nullptr;
  res = ncclCommInitRank(&comm, nranks, id, rank);
  if (res != ncclSuccess) return fail("ncclCommInitRank", res, comm, rank);

  std::vector<float> send(kCount, static_cast<float>(rank + 1));
  std::vector<float> recv(kCount, -1.0f);
  auto start = std::chrono::steady_clock::now();
  res = ncclAllReduce(send.data(), recv.data(), kCount, ncclFloat, ncclSum, comm, nullptr);
  auto end = std::chrono::steady_clock::now();
  if (res != ncclSuccess) {
    int rc = fail("ncclAllReduce", res, comm, rank);
    ncclCommAbort(comm);
    return rc;
  }

  // Sums of small integers are exact in float, so the check can be exact too.
  const float expected = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2.0f;
  size_t bad = 0;
  for (size_t i = 0; i < kCount; ++i) {
    if (recv[i] != expected) {
      if (bad < 5) {
        std::fprintf(stderr, "braid_smoke: rank %d: element %zu is %g, expected %g\n", rank, i, recv[i], expected);
      }
      ++bad;
    }
  }
  res = ncclCommDestroy(comm);
  if (bad) {
    std::fprintf(stderr, "braid_smoke: rank %d: %zu of %zu elements wrong\n", rank, bad, kCount);
    return 1;
  }
  if (res != ncclSuccess) return fail("ncclCommDestroy", res, nullptr, rank);
  double ms = std::chrono::duration<double, std::milli>(end - start).count();
  std::printf("braid_smoke: rank %d ok, all-reduce %zu MB in %.3f ms\n", rank, kCount * sizeof(float) >> 20, ms);
  return 0;
}
