// The point-to-point cases of the multi-rank GPU tests (device_multirank_test.cu): grouped send/recv to rank+2,
// uneven all-pairs send/recv, gather, scatter and all-to-all, each rank's buffers laid out, filled with xValue,
// poisoned around every received block, enqueued and checked element by element.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_harness.h"

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
