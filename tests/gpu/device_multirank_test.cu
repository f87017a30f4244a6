// GPU tests at 3 and 4 ranks (the other gpu tests run 2): every collective x datatype x op of the harness
// (gpu_harness.h allCases) plus point-to-point cases it lacks, every output element checked:
//   - a grouped send/recv to the rank two ahead ((r+2)%n: the reverse ring at 3 ranks, the far peer both ways
//     at 4) of 1, 1031, 262147 and 2^22+5 floats, each alone and all four in one group;
//   - one group in which every rank sends every rank (itself included) a different number of floats, derived
//     from (sender, receiver), one pair sending none;
//   - gather and scatter from each root; all-to-all of 1031 and 2^22+5 floats per peer.
// Their inputs are a hash of (sender, receiver, transfer, index) (xValue), so a misplaced, stale or skipped
// element shows, and the bytes around every received block must keep their poison.
//
// DeviceMultiRank.Processes*: one process per rank, forked before any CUDA call here (the parent stays
// CUDA-free), rank r on GPU r % gpus through ncclCommInitRank: ranks sharing a GPU talk over SHM, the others
// over P2P (on one GPU every connection is SHM; on 4+ GPUs each rank has its own). The tuner's own protocol choice, then NCCL_PROTO=LL,
// LL128 and Simple on a smaller set (float/half/int8, no empty cases, no 2^22+5 p2p transfers).
// DeviceMultiRank.OneProcess*: allCases(n, false) and every p2p case from one process driving every rank
// (ncclCommInitAll, one stream per rank, the ranks' calls in one group), itself a forked child. Braid's
// ncclCommInitAll refuses a device listed twice (ncclInvalidUsage), so with fewer GPUs than ranks these skip,
// quoting the refusal.
//
// With 4 GPUs the whole binary should take about 4 minutes (most of it the processes' sweeps: a case costs tens
// of ms in a multi-process sweep); with 2, ranks share GPUs by time-slicing and it may take longer.
//
// Every test skips (with the reason) where no GPU is visible. Environment: BRAID_MULTIRANK_FULL=1
// runs allCases(n, false) (also counts 1 and 262147) in the processes' default-protocol tests, which otherwise
// run the quick list; BRAID_CASE_TIMEOUT (s, default 20, 60 where ranks share a GPU) bounds one case;
// BRAID_MULTIRANK_LIMIT (s, default 280) one test's processes; BRAID_TEST_VERBOSE=1 prints each case.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_harness.h"

using namespace gpu_test;

namespace gpu_test {

// ---- Point-to-point cases ------------------------------------------------------------------------------

// Element i of the transfer `tag` from rank src to rank dst: an integer in [1, 2^24] (exact in float, never zero,
// never the poison), different for neighbouring elements and for every (src, dst, tag).
__host__ __device__ inline float xValue(int src, int dst, int tag, size_t i) {
  uint32_t h = static_cast<uint32_t>(i) ^ static_cast<uint32_t>(i >> 32) * 0x27D4EB2Fu;
  h ^= static_cast<uint32_t>(src + 1) * 0x9E3779B1u ^ static_cast<uint32_t>(dst + 1) * 0x85EBCA77u ^
       static_cast<uint32_t>(tag + 1) * 0xC2B2AE3Du;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return static_cast<float>((h >> 8) + 1);
}

__global__ void xFill(float* p, size_t n, int src, int dst, int tag) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = xValue(src, dst, tag, i);
}

constexpr uint32_t kPoison = 0xA5A5A5A5u;  // every received-into byte 0xA5 beforehand (a negative float)
constexpr size_t kGuard = 16;              // poisoned floats after the last received block

struct XCase {
  enum Kind { kShift2, kUneven, kGather, kScatter, kAllToAll } kind;
  std::vector<size_t> counts;  // kShift2: one transfer per count, all in one group
  size_t count = 0;            // kGather, kScatter, kAllToAll: floats per rank
  int root = 0;
  std::string name() const {
    std::string s;
    switch (kind) {
      case kShift2:
        s = "send/recv to rank+2 of";
        for (size_t k = 0; k < counts.size(); ++k) s += (k ? ", " : " ") + std::to_string(counts[k]);
        return s + (counts.size() > 1 ? " floats in one group" : " floats");
      case kUneven:
        return "uneven all-pairs send/recv (self included) in one group";
      case kGather:
        return "Gather float count " + std::to_string(count) + " root " + std::to_string(root);
      case kScatter:
        return "Scatter float count " + std::to_string(count) + " root " + std::to_string(root);
      case kAllToAll:
        return "AllToAll float count " + std::to_string(count);
    }
    return "?";
  }
};

// Floats rank src sends rank dst in the uneven case: distinct for every pair, 0 for (0, 0), up to ~1.5 MB.
inline size_t unevenCount(int src, int dst, int n) {
  return static_cast<size_t>((src * 3 + dst * 5) % 7) * 65537 + static_cast<size_t>(src * n + dst);
}

// One block of a rank's send or receive buffer: `count` floats at element `off`, to or from `peer`.
struct Xfer {
  int peer;
  size_t count, off;
  int tag;
};

struct XBufs {
  std::vector<Xfer> sends, recvs;  // in the order they are posted (kShift2, kUneven)
  size_t sendElems = 0, recvElems = 0;
  float* send = nullptr;
  float* recv = nullptr;
};

// What `rank` sends and receives, where in its buffers (the collectives' layouts as the API defines them; the
// grouped cases' blocks one float apart, so most start unaligned and a write past one lands in poison).
inline void layout(const XCase& x, int rank, int n, XBufs* b) {
  size_t so = 0, ro = 0;
  switch (x.kind) {
    case XCase::kShift2:
      for (size_t k = 0; k < x.counts.size(); ++k) {
        b->sends.push_back(Xfer{(rank + 2) % n, x.counts[k], so, static_cast<int>(k)});
        b->recvs.push_back(Xfer{(rank - 2 + n) % n, x.counts[k], ro, static_cast<int>(k)});
        so += x.counts[k] + 1;
        ro += x.counts[k] + 1;
      }
      break;
    case XCase::kUneven:
      for (int k = 0; k < n; ++k) {
        const int dst = (rank + k) % n, src = (rank - k + n) % n;
        b->sends.push_back(Xfer{dst, unevenCount(rank, dst, n), so, 0});
        b->recvs.push_back(Xfer{src, unevenCount(src, rank, n), ro, 0});
        so += b->sends.back().count + 1;
        ro += b->recvs.back().count + 1;
      }
      break;
    case XCase::kGather:
      b->sends.push_back(Xfer{x.root, x.count, 0, 0});
      so = x.count;
      if (rank == x.root)
        for (int s = 0; s < n; ++s) b->recvs.push_back(Xfer{s, x.count, s * x.count, 0});
      ro = n * x.count;  // allocated on every rank: a non-root's stays poisoned
      break;
    case XCase::kScatter:
      if (rank == x.root)
        for (int d = 0; d < n; ++d) b->sends.push_back(Xfer{d, x.count, d * x.count, 0});
      so = n * x.count;
      b->recvs.push_back(Xfer{x.root, x.count, 0, 0});
      ro = x.count;
      break;
    case XCase::kAllToAll:
      for (int p = 0; p < n; ++p) {
        b->sends.push_back(Xfer{p, x.count, p * x.count, 0});
        b->recvs.push_back(Xfer{p, x.count, p * x.count, 0});
      }
      so = ro = n * x.count;
      break;
  }
  b->sendElems = std::max<size_t>(so, 1);
  b->recvElems = ro + kGuard;
}

// The blocks of the send buffer given xValue(rank, peer, tag, j): those sent, and a scatter's non-root's blocks
// as a root's would be (with its own rank as sender: a receiver given those shows the wrong sender).
inline std::vector<Xfer> filledBlocks(const XCase& x, int rank, int n, const XBufs& b) {
  std::vector<Xfer> fills = b.sends;
  if (x.kind == XCase::kScatter && rank != x.root)
    for (int d = 0; d < n; ++d) fills.push_back(Xfer{d, x.count, d * x.count, 0});
  return fills;
}

// Allocates, fills the send buffer (filledBlocks, 0x5A bytes elsewhere), poisons the receive allocation. The
// current device is the rank's.
inline bool prepare(const XCase& x, int rank, int n, XBufs* b) {
  layout(x, rank, n, b);
  GT_CUDA(cudaMalloc(&b->send, b->sendElems * sizeof(float)));
  GT_CUDA(cudaMalloc(&b->recv, b->recvElems * sizeof(float)));
  GT_CUDA(cudaMemset(b->send, 0x5A, b->sendElems * sizeof(float)));
  GT_CUDA(cudaMemset(b->recv, 0xA5, b->recvElems * sizeof(float)));
  for (const Xfer& t : filledBlocks(x, rank, n, *b))
    if (t.count) xFill<<<128, 256>>>(b->send + t.off, t.count, rank, t.peer, t.tag);
  GT_CUDA(cudaGetLastError());
  GT_CUDA(cudaDeviceSynchronize());  // the fills ran on the legacy stream, which the test's streams do not wait for
  return true;
}

inline bool enqueue(const XCase& x, int, int, ncclComm_t comm, cudaStream_t s, const XBufs& b) {
  switch (x.kind) {
    case XCase::kGather:
      GT_NCCL(ncclGather(b.send, b.recv, x.count, ncclFloat32, x.root, comm, s));
      return true;
    case XCase::kScatter:
      GT_NCCL(ncclScatter(b.send, b.recv, x.count, ncclFloat32, x.root, comm, s));
      return true;
    case XCase::kAllToAll:
      GT_NCCL(ncclAlltoAll(b.send, b.recv, x.count, ncclFloat32, comm, s));
      return true;
    default:
      break;
  }
  // Sends and receives interleaved; the group is ended whatever fails in it (no group left open).
  GT_NCCL(ncclGroupStart());
  ncclResult_t first = ncclSuccess;
  for (size_t k = 0; k < b.sends.size() && first == ncclSuccess; ++k) {
    const Xfer& snd = b.sends[k];
    const Xfer& rcv = b.recvs[k];
    first = ncclSend(b.send + snd.off, snd.count, ncclFloat32, snd.peer, comm, s);
    if (first == ncclSuccess) first = ncclRecv(b.recv + rcv.off, rcv.count, ncclFloat32, rcv.peer, comm, s);
  }
  const ncclResult_t end = ncclGroupEnd();
  GT_NCCL(first);
  GT_NCCL(end);
  return true;
}

// Every element of the receive allocation (`got`, on the host): xValue(sender, rank, tag, j) inside a received
// block, the poison elsewhere. The first wrong one is named with its block's sender and index there.
inline bool verifyOutput(const XCase& x, int rank, const XBufs& b, const std::vector<uint32_t>& got) {
  std::vector<uint32_t> want(b.recvElems, kPoison);
  for (const Xfer& t : b.recvs)
    for (size_t j = 0; j < t.count; ++j) {
      const float v = xValue(t.peer, rank, t.tag, j);
      memcpy(&want[t.off + j], &v, sizeof(v));
    }
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    float g, w;
    memcpy(&g, &got[i], sizeof(g));
    memcpy(&w, &want[i], sizeof(w));
    char where[160];
    snprintf(where, sizeof(where), "(outside every received block: must keep the poison)");
    for (const Xfer& t : b.recvs)
      if (i >= t.off && i < t.off + t.count)
        snprintf(where, sizeof(where), "(block from rank %d of %zu floats, its element %zu)", t.peer, t.count,
                 i - t.off);
    fprintf(stderr, "rank %d: %s: element %zu %s is %.9g (0x%08x), expected %.9g (0x%08x)\n", rank, x.name().c_str(), i,
            where, g, got[i], w, want[i]);
    return false;
  }
  return true;
}

// The output checked (verifyOutput); the buffers freed.
inline bool check(const XCase& x, int rank, int, XBufs* b) {
  std::vector<uint32_t> got(b->recvElems);
  const cudaError_t e = cudaMemcpy(got.data(), b->recv, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess)
    fprintf(stderr, "rank %d: %s: cudaMemcpy of the output: %s\n", rank, x.name().c_str(), cudaGetErrorString(e));
  const bool ok = e == cudaSuccess && verifyOutput(x, rank, *b, got);
  cudaFree(b->send);
  cudaFree(b->recv);
  *b = XBufs{};
  return ok;
}

template <class C>
struct BufsOf;
template <>
struct BufsOf<Case> {
  using type = RankBufs;
};
template <>
struct BufsOf<XCase> {
  using type = XBufs;
};

}  // namespace gpu_test

namespace {

// ---- Case lists ----------------------------------------------------------------------------------------

const size_t kBig = (size_t(1) << 22) + 5;

// The p2p cases; `big`: also the 2^22+5 float transfers.
std::vector<XCase> extraCases(int n, bool big) {
  std::vector<XCase> v;
  std::vector<size_t> shift = {1, 1031, 262147};
  if (big) shift.push_back(kBig);
  for (size_t c : shift) v.push_back(XCase{XCase::kShift2, {c}});
  v.push_back(XCase{XCase::kShift2, shift});
  v.push_back(XCase{XCase::kUneven, {}});
  for (size_t c : {size_t{1031}, size_t{262147}})
    for (int root = 0; root < n; ++root) {
      v.push_back(XCase{XCase::kGather, {}, c, root});
      v.push_back(XCase{XCase::kScatter, {}, c, root});
    }
  v.push_back(XCase{XCase::kAllToAll, {}, 1031});
  if (big) v.push_back(XCase{XCase::kAllToAll, {}, kBig});
  return v;
}

struct Sweep {
  std::vector<Case> colls;
  std::vector<XCase> p2p;
};

// The tuner's choice: allCases(n, quick) and every p2p case.
Sweep defaultSweep(int n, bool full) { return Sweep{allCases(n, !full), extraCases(n, true)}; }

// Under a forced protocol: the quick list's float, half and int8 cases that move data, and the p2p cases up to
// 262147 floats.
Sweep protoSweep(int n) {
  Sweep s;
  for (const Case& c : allCases(n, true))
    if ((c.dtype == ncclFloat32 || c.dtype == ncclFloat16 || c.dtype == ncclInt8) && c.count != 0) s.colls.push_back(c);
  s.p2p = extraCases(n, false);
  return s;
}

bool verbose() { return std::getenv("BRAID_TEST_VERBOSE") != nullptr; }

double envSeconds(const char* name, double dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : dflt;
}

double caseLimit(bool sharedGpu) { return envSeconds("BRAID_CASE_TIMEOUT", sharedGpu ? 60.0 : 20.0); }

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- One process per rank ------------------------------------------------------------------------------

// Waits for the rank's stream; past `limit` s names the case and the comm's state and returns false (the caller
// exits, the other ranks' peer watch stops their kernels).
bool waitStream(cudaStream_t s, ncclComm_t comm, int rank, const std::string& what, double limit) {
  const auto t0 = std::chrono::steady_clock::now();
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
    if (secondsSince(t0) > limit) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      fprintf(stderr, "rank %d: %s: still running after %.0f s (async state %s; last error: %s)\n", rank, what.c_str(),
              limit, ncclGetErrorString(async), ncclGetLastError(comm));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (e != cudaSuccess) {
    fprintf(stderr, "rank %d: %s: stream error %s\n", rank, what.c_str(), cudaGetErrorString(e));
    return false;
  }
  return true;
}

// One case on this rank. False where the rank cannot go on (an error, a hang, too many failures).
template <class C>
bool runOnRank(const C& c, int rank, int n, ncclComm_t comm, cudaStream_t s, double limit, int* failures) {
  if (verbose() && rank == 0) printf("case: %s\n", c.name().c_str()), fflush(stdout);
  typename BufsOf<C>::type b;
  if (!prepare(c, rank, n, &b) || !enqueue(c, rank, n, comm, s, b)) {
    fprintf(stderr, "rank %d: %s: could not prepare or enqueue it\n", rank, c.name().c_str());
    return false;
  }
  if (!waitStream(s, comm, rank, c.name(), limit)) return false;
  if (!check(c, rank, n, &b)) {
    fprintf(stderr, "rank %d: FAILED %s\n", rank, c.name().c_str());
    if (++*failures > 10) return false;
  }
  return true;
}

// Every rank must store the same bits from an all-reduce, whatever order a schedule reduces in: the one-shot over
// every peer's sizes (8 KiB-64 KiB of float; half and bfloat16 too), in and out of place, with inputs whose float
// sums depend on the order (large and small values mixed). Each rank gathers every rank's result and compares bit by
// bit, and checks its own against a double-precision sum within the type's rounding.
template <typename T>
bool sameBitsEverywhere(int rank, int n, ncclComm_t comm, cudaStream_t s, ncclDataType_t dt, size_t count, bool inPlace,
                        double limit) {
  auto value = [](int r, size_t i) {
    const double big = (i % 3 == 0) ? 4096.0 : 1.0;
    return big * ((r + 1) * 0.7 + static_cast<double>((i * 2654435761u) % 1000) / 997.0);
  };
  std::vector<T> in(count);
  for (size_t i = 0; i < count; ++i) in[i] = T(static_cast<float>(value(rank, i)));
  T *dIn = nullptr, *dOut = nullptr, *dAll = nullptr;
  GT_CUDA(cudaMalloc(&dIn, count * sizeof(T)));
  GT_CUDA(cudaMalloc(&dOut, count * sizeof(T)));
  GT_CUDA(cudaMalloc(&dAll, count * n * sizeof(T)));
  GT_CUDA(cudaMemcpy(dIn, in.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  GT_CUDA(cudaMemset(dOut, 0xA5, count * sizeof(T)));
  T* out = inPlace ? dIn : dOut;
  GT_NCCL(ncclAllReduce(dIn, out, count, dt, ncclSum, comm, s));
  GT_NCCL(ncclAllGather(out, dAll, count, dt, comm, s));
  const std::string what = "all-reduce of " + std::to_string(count) + " " + typeName(dt) + (inPlace ? " in place" : "");
  if (!waitStream(s, comm, rank, what, limit)) return false;
  std::vector<T> all(count * n);
  GT_CUDA(cudaMemcpy(all.data(), dAll, all.size() * sizeof(T), cudaMemcpyDeviceToHost));
  cudaFree(dIn);
  cudaFree(dOut);
  cudaFree(dAll);
  const double tol = sizeof(T) == 4 ? 1e-5 : 2e-2;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += static_cast<float>(T(static_cast<float>(value(r, i))));
    const float mine = static_cast<float>(all[static_cast<size_t>(rank) * count + i]);
    if (std::fabs(mine - want) > tol * std::fabs(want) + 1e-3) {
      fprintf(stderr, "rank %d: %s: element %zu is %g, want about %g\n", rank, what.c_str(), i, mine, want);
      return false;
    }
    for (int r = 0; r < n; ++r) {
      if (std::memcmp(&all[static_cast<size_t>(r) * count + i], &all[static_cast<size_t>(rank) * count + i],
                      sizeof(T)) != 0) {
        fprintf(stderr, "rank %d: %s: element %zu differs between rank %d (%g) and this rank (%g)\n", rank,
                what.c_str(), i, r, static_cast<float>(all[static_cast<size_t>(r) * count + i]), mine);
        return false;
      }
    }
  }
  return true;
}

bool sameBitsCases(int rank, int n, ncclComm_t comm, cudaStream_t s, double limit) {
  for (bool inPlace : {false, true}) {
    for (size_t count : {size_t{2048}, size_t{10007}, size_t{16384}})
      if (!sameBitsEverywhere<float>(rank, n, comm, s, ncclFloat32, count, inPlace, limit)) return false;
    if (!sameBitsEverywhere<Half>(rank, n, comm, s, ncclFloat16, 32768, inPlace, limit)) return false;
    if (!sameBitsEverywhere<BFloat16>(rank, n, comm, s, ncclBfloat16, 20001, inPlace, limit)) return false;
  }
  return true;
}

bool rankMain(int rank, int n, int gpus, const ncclUniqueId& id, const Sweep& sw, const char* proto) {
  if (proto) setenv("NCCL_PROTO", proto, 1);  // read by ncclCommInitRank
  GT_CUDA(cudaSetDevice(rank % gpus));
  const auto t0 = std::chrono::steady_clock::now();
  ncclComm_t comm;
  GT_NCCL(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const double limit = caseLimit(gpus < n);
  int failures = 0;
  bool going = true;
  for (size_t k = 0; going && k < sw.colls.size(); ++k)
    going = runOnRank(sw.colls[k], rank, n, comm, s, limit, &failures);
  for (size_t k = 0; going && k < sw.p2p.size(); ++k) going = runOnRank(sw.p2p[k], rank, n, comm, s, limit, &failures);
  if (going && !sameBitsCases(rank, n, comm, s, limit)) ++failures;
  if (rank == 0 || !going)
    printf("rank %d of %d processes on %d GPUs%s%s: %zu collective and %zu p2p cases, %d failed%s, %.1f s\n", rank, n,
           gpus, proto ? ", NCCL_PROTO=" : "", proto ? proto : "", sw.colls.size(), sw.p2p.size(), failures,
           going ? "" : ", stopped", secondsSince(t0));
  if (!going) return false;  // the comm is left as it is: the process ends
  GT_CUDA(cudaStreamDestroy(s));
  GT_NCCL(ncclCommDestroy(comm));
  return failures == 0;
}

// ---- Children ------------------------------------------------------------------------------------------

struct ChildResult {
  int status = -1;  // waitpid's
  bool timedOut = false;
  double limit = 0;  // s, where timedOut
  std::string out;   // its stderr (the last 4000 characters)
};

const int kSkipExit = 77;

// Forks k children, child i running body(i) and exiting with what it returns (0 passed, 1 failed, kSkipExit
// skipped). Their stderr comes through a pipe each: echoed here as it arrives and kept for the failure messages.
// After `limit` s whatever still runs is killed.
std::vector<ChildResult> runChildren(int k, const std::function<int(int)>& body, double limit) {
  std::vector<ChildResult> res(k);
  std::vector<pid_t> pids(k, -1);
  std::vector<int> fds(k, -1);
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < k; ++i) {
    int p[2];
    if (pipe(p) != 0) {
      ADD_FAILURE() << "pipe failed";
      break;
    }
    pids[i] = fork();
    if (pids[i] == 0) {
      close(p[0]);
      for (int j = 0; j < i; ++j) close(fds[j]);
      dup2(p[1], 2);
      close(p[1]);
      const int rc = body(i);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    close(p[1]);
    fds[i] = p[0];
  }
  const auto t0 = std::chrono::steady_clock::now();
  int left = 0;
  for (int i = 0; i < k; ++i) left += pids[i] > 0;
  auto drain = [&](int i, int waitMs) {
    pollfd pf{fds[i], POLLIN, 0};
    char buf[4096];
    while (fds[i] >= 0 && poll(&pf, 1, waitMs) > 0) {
      const ssize_t got = read(fds[i], buf, sizeof(buf));
      if (got <= 0) {
        close(fds[i]);
        fds[i] = -1;
        break;
      }
      (void)!write(2, buf, static_cast<size_t>(got));
      res[i].out.append(buf, static_cast<size_t>(got));
      if (res[i].out.size() > 8000) res[i].out.erase(0, res[i].out.size() - 4000);
      waitMs = 0;
    }
  };
  while (left > 0) {
    for (int i = 0; i < k; ++i) {
      if (fds[i] >= 0) drain(i, 0);
      int st;
      if (pids[i] > 0 && res[i].status == -1 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        res[i].status = st;
        --left;
      }
    }
    if (left > 0 && secondsSince(t0) > limit) {
      for (int i = 0; i < k; ++i)
        if (pids[i] > 0 && res[i].status == -1) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], &res[i].status, 0);
          res[i].timedOut = true;
          res[i].limit = limit;
        }
      left = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < k; ++i) {
    if (fds[i] >= 0) drain(i, 100);  // what it wrote before it ended
    if (fds[i] >= 0) close(fds[i]);
    if (res[i].out.size() > 4000) res[i].out.erase(0, res[i].out.size() - 4000);
  }
  return res;
}

std::string describe(const ChildResult& r) {
  if (r.timedOut) return "killed, still running after " + std::to_string(static_cast<int>(r.limit)) + " s";
  if (WIFEXITED(r.status)) return "exit status " + std::to_string(WEXITSTATUS(r.status));
  if (WIFSIGNALED(r.status)) return "killed by signal " + std::to_string(WTERMSIG(r.status));
  return "status " + std::to_string(r.status);
}

// The line a skipping child wrote ("skip: ..."), without the prefix.
std::string skipReason(const std::vector<ChildResult>& res) {
  for (const ChildResult& r : res) {
    const size_t at = r.out.find("skip: ");
    if (at != std::string::npos) return r.out.substr(at + 6, r.out.find('\n', at) - at - 6);
  }
  return "a child skipped without a reason";
}

// Each child (rank) that did not pass is one failure, with its status and its last stderr lines (the failed
// cases' first wrong elements).
void report(const std::string& what, const std::vector<ChildResult>& res, const char* unit) {
  for (size_t i = 0; i < res.size(); ++i) {
    const ChildResult& r = res[i];
    if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) continue;
    ADD_FAILURE() << what << ": " << unit << " " << i << " did not pass (" << describe(r) << "); its last lines:\n"
                  << r.out;
  }
}

bool allSkipped(const std::vector<ChildResult>& res) {
  for (const ChildResult& r : res)
    if (r.timedOut || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != kSkipExit) return false;
  return !res.empty();
}

// The GPUs visible, counted once in a probe child (this process stays CUDA-free so its children may use CUDA).
int gpus() {
  static const int n = gpuCountForked();
  return n;
}

#define NEED_A_GPU()                                                                                         \
  do {                                                                                                       \
    if (gpus() < 1) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount (in a probe child) reports " << gpus(); \
  } while (0)

// ringOrder: BRAID_RING_ORDER set in every child before its init (null: unset, rank order).
void multiProcess(int n, const char* proto, const char* ringOrder = nullptr) {
  const int g = gpus();
  const bool full = std::getenv("BRAID_MULTIRANK_FULL") != nullptr;
  const Sweep sw = proto ? protoSweep(n) : defaultSweep(n, full);
  const std::string what = std::to_string(n) + " processes on " + std::to_string(g) + " GPUs" +
                           (proto ? std::string(", NCCL_PROTO=") + proto : std::string(", default protocols")) +
                           (ringOrder ? std::string(", BRAID_RING_ORDER=") + ringOrder : std::string());
  printf("%s: %zu collective and %zu p2p cases%s\n", what.c_str(), sw.colls.size(), sw.p2p.size(),
         g < n ? " (ranks sharing a GPU talk over SHM)" : "");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);  // no CUDA call
  const auto res = runChildren(
      n,
      [&](int rank) {
        if (ringOrder) setenv("BRAID_RING_ORDER", ringOrder, 1);  // read by ncclCommInitRank
        return rankMain(rank, n, g, id, sw, proto) ? 0 : 1;
      },
      envSeconds("BRAID_MULTIRANK_LIMIT", 280));
  report(what, res, "rank");
}

// ---- One process, every rank -------------------------------------------------------------------------

// The ranks of one ncclCommInitAll, a non-blocking stream each.
struct Ranks {
  int n = 0;
  std::vector<int> dev;
  std::vector<ncclComm_t> comm;
  std::vector<cudaStream_t> stream;

  bool makeStreams() {
    stream.assign(n, nullptr);
    for (int r = 0; r < n; ++r) {
      GT_CUDA(cudaSetDevice(dev[r]));
      GT_CUDA(cudaStreamCreateWithFlags(&stream[r], cudaStreamNonBlocking));
    }
    return true;
  }
  // Every rank's stream done within `limit` s; else the case is named, each rank's state printed and the comms
  // aborted (which stops the kernels).
  bool finish(const std::string& what, double limit, bool* hung) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < n; ++r) {
      GT_CUDA(cudaSetDevice(dev[r]));
      cudaError_t e;
      while ((e = cudaStreamQuery(stream[r])) == cudaErrorNotReady) {
        if (secondsSince(t0) > limit) {
          fprintf(stderr, "%s: rank %d still running after %.0f s; aborting\n", what.c_str(), r, limit);
          for (int k = 0; k < n; ++k) {
            ncclResult_t async = ncclSuccess;
            ncclCommGetAsyncError(comm[k], &async);
            fprintf(stderr, "  rank %d: async state %s; last error: %s\n", k, ncclGetErrorString(async),
                    ncclGetLastError(comm[k]));
          }
          *hung = true;
          for (int k = 0; k < n; ++k) ncclCommAbort(comm[k]), comm[k] = nullptr;
          return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      if (e != cudaSuccess) {
        fprintf(stderr, "%s: rank %d: stream error %s\n", what.c_str(), r, cudaGetErrorString(e));
        return false;
      }
    }
    return true;
  }
  void destroy() {
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(dev[r]);
      if (r < static_cast<int>(stream.size()) && stream[r]) cudaStreamDestroy(stream[r]);
      if (comm[r]) ncclCommDestroy(comm[r]);
      comm[r] = nullptr;
    }
    stream.clear();
  }
};

// One case on every rank: buffers prepared on each rank's device, the calls in one group, each rank checked.
template <class C>
bool runAllRanks(Ranks& R, const C& c, double limit, bool* hung) {
  if (verbose()) printf("case: %s\n", c.name().c_str()), fflush(stdout);
  std::vector<typename BufsOf<C>::type> b(R.n);
  for (int r = 0; r < R.n; ++r) {
    GT_CUDA(cudaSetDevice(R.dev[r]));
    if (!prepare(c, r, R.n, &b[r])) return false;
  }
  GT_NCCL(ncclGroupStart());
  bool enq = true;
  for (int r = 0; r < R.n && enq; ++r) {
    enq = cudaSetDevice(R.dev[r]) == cudaSuccess && enqueue(c, r, R.n, R.comm[r], R.stream[r], b[r]);
  }
  GT_NCCL(ncclGroupEnd());
  if (!enq) return false;
  if (!R.finish(c.name(), limit, hung)) return false;
  bool ok = true;
  for (int r = 0; r < R.n; ++r) {
    GT_CUDA(cudaSetDevice(R.dev[r]));
    ok = check(c, r, R.n, &b[r]) && ok;
  }
  return ok;
}

// The child's body: 0 passed, 1 failed, kSkipExit where ncclCommInitAll refuses a device listed twice.
int oneProcessMain(int n, int gpus) {
  Ranks R;
  R.n = n;
  R.comm.assign(n, nullptr);
  std::string list;
  for (int r = 0; r < n; ++r) {
    R.dev.push_back(r % gpus);
    list += (r ? ", " : "") + std::to_string(r % gpus);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ncclResult_t init = ncclCommInitAll(R.comm.data(), n, R.dev.data());
  if (init != ncclSuccess) {
    if (n > gpus && init == ncclInvalidUsage) {
      fprintf(stderr,
              "skip: ncclCommInitAll refuses a device listed twice (devlist {%s}: %s); %d ranks in one "
              "process need %d GPUs, %d visible\n",
              list.c_str(), ncclGetLastError(nullptr), n, n, gpus);
      return kSkipExit;
    }
    fprintf(stderr, "ncclCommInitAll(%d, {%s}) failed: %s (%s)\n", n, list.c_str(), ncclGetErrorString(init),
            ncclGetLastError(nullptr));
    return 1;
  }
  if (!R.makeStreams()) return 1;
  const Sweep sw = defaultSweep(n, true);
  const double limit = caseLimit(gpus < n);
  int failures = 0, cases = 0;
  bool hung = false;
  auto one = [&](const auto& c) {
    ++cases;
    if (!runAllRanks(R, c, limit, &hung)) {
      fprintf(stderr, "FAILED %s\n", c.name().c_str());
      ++failures;
    }
    return !hung && failures <= 20;  // after an abort the comms are gone
  };
  bool going = true;
  for (size_t k = 0; going && k < sw.colls.size(); ++k) going = one(sw.colls[k]);
  for (size_t k = 0; going && k < sw.p2p.size(); ++k) going = one(sw.p2p[k]);
  if (!hung) R.destroy();
  printf("%d ranks in one process on devices {%s}: %d of %zu cases run, %d failed, %.1f s\n", n, list.c_str(), cases,
         sw.colls.size() + sw.p2p.size(), failures, secondsSince(t0));
  return failures == 0 && going ? 0 : 1;
}

void oneProcess(int n) {
  const int g = gpus();
  const auto res = runChildren(
      1, [&](int) { return oneProcessMain(n, g); }, envSeconds("BRAID_MULTIRANK_LIMIT", 280));
  if (allSkipped(res)) GTEST_SKIP() << skipReason(res);
  report(std::to_string(n) + " ranks in one process", res, "process");
}

}  // namespace

// The tuner's own choice of algorithm and protocol (LL, LL128, Simple by size): allCases(n, quick) and the p2p
// cases, in n processes.
TEST(DeviceMultiRank, Processes3) {
  NEED_A_GPU();
  multiProcess(3, nullptr);
}
TEST(DeviceMultiRank, Processes4) {
  NEED_A_GPU();
  multiProcess(4, nullptr);
}

// The same sweep with the rings in another order than rank order (BRAID_RING_ORDER, src/runtime/ring_order.h):
// ring connections, the schedules' positions and owners, the kernels' position -> rank table, and p2p and the
// one-shot over every peer reusing the ring's connections for the order's neighbours.
TEST(DeviceMultiRank, Processes4RingOrder) {
  NEED_A_GPU();
  multiProcess(4, nullptr, "0,2,1,3");
}

// Each protocol forced for every collective and p2p transfer (where a protocol has no kernel for a case, e.g.
// LL128 for int8 or products or without NVLink, Braid falls back to Simple with a warning).
TEST(DeviceMultiRank, Processes3ProtoLL) {
  NEED_A_GPU();
  multiProcess(3, "LL");
}
TEST(DeviceMultiRank, Processes3ProtoLL128) {
  NEED_A_GPU();
  multiProcess(3, "LL128");
}
TEST(DeviceMultiRank, Processes3ProtoSimple) {
  NEED_A_GPU();
  multiProcess(3, "Simple");
}
TEST(DeviceMultiRank, Processes4ProtoLL) {
  NEED_A_GPU();
  multiProcess(4, "LL");
}
TEST(DeviceMultiRank, Processes4ProtoLL128) {
  NEED_A_GPU();
  multiProcess(4, "LL128");
}
TEST(DeviceMultiRank, Processes4ProtoSimple) {
  NEED_A_GPU();
  multiProcess(4, "Simple");
}

// One process driving every rank: allCases(n, false) and the p2p cases, the ranks' calls grouped.
TEST(DeviceMultiRank, OneProcess3) {
  NEED_A_GPU();
  oneProcess(3);
}
TEST(DeviceMultiRank, OneProcess4) {
  NEED_A_GPU();
  oneProcess(4);
}
