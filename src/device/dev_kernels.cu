// The byte kernels (all-gather/broadcast; p2p transfers) and the dispatch from (collective, datatype,
// reduction) to a compiled kernel.
#include "algo/p2p_plan.h"  // p2pSimpleStepBytes
#include "device/coll_kernel.cuh"
#include "device/dev_kernels.h"
#include "device/dev_variants.h"
#include "device/one_shot_peers.cuh"

namespace braid {

// One transfer of a p2p CTA on its connection, in FIFO-step pieces. Its primitives start from the step
// counters in `sh` and leave them there (SIMPLE's poster advances sh's counters as it publishes; LL's are
// written back), so SIMPLE and LL transfers alternate on one connection in either order.
// Bar, tidBase, nthreads: the warp group that runs it (DevPrims; the whole CTA: 1, 0, blockDim.x).
// A balanced transfer (b.ll < 0, p2p_plan.h's p2pBalanced; b.buf, b.bytes: the whole transfer) instead: the
// sending CTAs of its -b.ll channels claim its chunks from one counter (b.src) until none is left, each step's
// sizes[] word naming its chunk, and close with an empty step; each receiving CTA copies whatever chunks its
// connection brings until that close. The chunk is the step the share would have had, at most 256 KiB on
// paired or wide launches (p2pBalancedChunkBytes). Thread 0 claims one chunk ahead (the atomic's round trip
// overlaps a step), so a CTA holds at most one chunk it has not started.
template <int Bar = 1>
__device__ void p2pBlockSimple(PrimsShared& sh, const P2pBlock& b, bool isSend, DevStatus* st, uint32_t pieces,
                               uint32_t balCapParts, int tidBase, int nthreads) {
  DevPrims<uint8_t, FuncCopy, Bar> prims(&sh, reinterpret_cast<const uint8_t*>(b.buf),
                                         reinterpret_cast<uint8_t*>(b.buf), FuncCopy{}, st, tidBase, nthreads);
  if (b.ll < 0) {
    const int parts = -b.ll;
    const size_t chunk = p2pBalancedChunkBytes(isSend ? sh.send.stepBytes : sh.recv.stepBytes,
                                               p2pShareBytes(b.bytes, parts), pieces, parts, balCapParts);
    const uint32_t nChunks = static_cast<uint32_t>((b.bytes + chunk - 1) / chunk);
    const uint32_t endWord = kDevStepBalMark | kDevStepLastMark | devBalFold(b.bytes, chunk);
    if (!isSend) {
      while (prims.recvChunk(chunk, b.bytes, nChunks, endWord)) {
      }
      return;
    }
    // No claim pair (b.src odd: 2 * channel + 1): chunks channel, channel + parts, ... (p2p_plan.h).
    const uintptr_t fixed = reinterpret_cast<uintptr_t>(b.src);
    unsigned int* claim = (fixed & 1) ? nullptr : reinterpret_cast<unsigned int*>(const_cast<char*>(b.src));
    while (prims.sendChunk(claim, static_cast<uint32_t>(fixed >> 1), static_cast<uint32_t>(parts), chunk, b.bytes,
                           nChunks, endWord)) {
    }
    // The last of the transfer's CTAs to finish zeroes its counters for the next launch. Thread 0 took this CTA's
    // chunks; a fence first, so its takes are done before its count, and one after the last count, so the zeroes
    // come after every CTA's takes in the memory model too; the kernel's end publishes them.
    if (claim && static_cast<int>(threadIdx.x) == tidBase) {
      __threadfence();
      if (atomicAdd(claim + 1, 1u) == static_cast<unsigned int>(parts - 1)) {
        __threadfence();
        claim[0] = 0;
        claim[1] = 0;
      }
    }
    return;
  }
  const size_t step = p2pSimpleStepBytes(isSend ? sh.send.stepBytes : sh.recv.stepBytes, b.bytes, pieces);
  for (size_t o = 0; o < b.bytes; o += step) {
    const size_t n = minSize(step, b.bytes - o);
    prims.setLastStep(o + n == b.bytes);
    if (isSend) {
      prims.send(o, n);
    } else {
      prims.recv(o, n);
    }
  }
}
__device__ void p2pBlockLl(PrimsShared& sh, const P2pBlock& b, bool isSend, DevStatus* st) {
  DevPrimsLL<uint8_t, FuncCopy> prims(&sh, reinterpret_cast<const uint8_t*>(b.buf), reinterpret_cast<uint8_t*>(b.buf),
                                      FuncCopy{}, st);
  prims.begin(isSend, !isSend);  // LL flag-wrap cleaning when due, at the same step on both sides
  const size_t step = llSlotDataBytes(isSend ? sh.send.llSlotBytes : sh.recv.llSlotBytes);
  for (size_t o = 0; o < b.bytes; o += step) {
    const size_t n = minSize(step, b.bytes - o);
    if (isSend) {
      prims.send(o, n);
    } else {
      prims.recv(o, n);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    sh.send.step = prims.sendStep();
    sh.recv.step = prims.recvStep();
    sh.send.llLastClean = prims.sendLastClean();
    sh.recv.llLastClean = prims.recvLastClean();
  }
}

// A paired CTA's half (p2p_plan.h): warp group G (0: threads below blockDim.x / 2, the send blocks; 1: the
// rest, the receive blocks) runs blocks[from] .. + count in order on its own connection state, named
// barriers (DevPrims' Bar 1 or 3; 5 + G between blocks) and thread; only SIMPLE blocks come here (the planner
// pairs no channel with an LL block). Each group's FIFO steps wait only on the peer's matching group or CTA,
// so the two run side by side as two CTAs would, from one SM.
template <int G, class Args>
__device__ __forceinline__ void p2pGroup(const Args& args, PrimsShared& sh, int from, int count) {
  const int half = static_cast<int>(blockDim.x) / 2;
  const int base = G * half;
  const P2pBlock& b0 = args.blocks[from];
  const bool isSend = b0.isSend != 0;
  if (static_cast<int>(threadIdx.x) == base) sh.loadOneWay(*b0.conn, isSend);
  asm volatile("barrier.sync %0, %1;" ::"n"(5 + G), "r"(half) : "memory");
  for (int i = from; i < from + count; ++i) {
    p2pBlockSimple<1 + 2 * G>(sh, args.blocks[i], isSend, args.status, args.pieces, args.balCapParts, base, half);
    asm volatile("barrier.sync %0, %1;" ::"n"(5 + G), "r"(half) : "memory");  // the next starts from sh's counters
  }
  if (static_cast<int>(threadIdx.x) == base) sh.storeOneWay(b0.conn, isSend);
}

// One CTA per connection: its consecutive blocks run in order, each as ceil(bytes / stepBytes) steps of
// SIMPLE, or of LL where the executor marked it (small transfers on connections with LL slots). CTAs
// whose blocks have no connection copy locally (a rank's own share of a gather/scatter/all-to-all, sends
// to itself), so those copies overlap the transfers instead of preceding them on the stream. A paired CTA
// (its first block's nSeg ends before the next CTA's first block) runs a ring channel's send and receive
// blocks on two warp groups (p2pGroup).
// Args: P2pLaunchArgsOf (the lists in the kernel's parameters) or P2pTableArgs (in device memory); both index
// ctaFirst[] and blocks[] alike.
template <class Args>
__device__ __forceinline__ void p2pCta(const Args& args) {
  __shared__ PrimsShared sh;
  const int first = args.ctaFirst[blockIdx.x];
  const P2pBlock& b0 = args.blocks[first];
  DevConn* conn = b0.conn;
  const int end = blockIdx.x + 1 < gridDim.x ? static_cast<int>(args.ctaFirst[blockIdx.x + 1]) : args.nBlocks;
  if (conn != nullptr && first + b0.nSeg < end) {
    __shared__ PrimsShared shRecv;
    if (static_cast<int>(threadIdx.x) < static_cast<int>(blockDim.x) / 2) {
      p2pGroup<0>(args, sh, first, b0.nSeg);
    } else {
      p2pGroup<1>(args, shRecv, first + b0.nSeg, end - first - b0.nSeg);
    }
    return;
  }
  if (conn == nullptr) {
    for (int i = first; i < first + b0.nSeg; ++i) {
      const P2pBlock& b = args.blocks[i];
      reduceCopy<uint8_t, FuncCopy, RcMode<1, 1, false, false, false>>(
          FuncCopy{}, threadIdx.x, blockDim.x, reinterpret_cast<const uint8_t*>(b.src), nullptr,
          reinterpret_cast<uint8_t*>(b.buf), nullptr, b.bytes);
    }
    return;
  }
  const bool isSend = b0.isSend != 0;
  if (threadIdx.x == 0) sh.loadOneWay(*conn, isSend);
  __syncthreads();
  for (int i = first; i < first + b0.nSeg; ++i) {
    const P2pBlock& b = args.blocks[i];
    if (b.ll > 0) {
      p2pBlockLl(sh, b, isSend, args.status);
    } else {
      p2pBlockSimple(sh, b, isSend, args.status, args.pieces, args.balCapParts, 0, static_cast<int>(blockDim.x));
    }
    __syncthreads();  // the next block's primitives start from the counters in sh
  }
  if (threadIdx.x == 0) sh.storeOneWay(conn, isSend);
}

template <int MaxBlocks>
__global__ void __launch_bounds__(kDevLaunchMax, 1) p2pKernel(const P2pLaunchArgsOf<MaxBlocks> args) {
  devAwaitPreviousKernel();
  p2pCta(args);
}
__global__ void __launch_bounds__(kDevLaunchMax, 1) p2pTableKernel(const P2pTableArgs args) {
  devAwaitPreviousKernel();  // also orders the table's fill kernel (p2p_table.cc) before it
  p2pCta(args);
}
__global__ void p2pTableFillKernel(const P2pTableChunk c) {
  const uint4* from = reinterpret_cast<const uint4*>(c.data);
  uint4* to = reinterpret_cast<uint4*>(c.dst);
  for (uint32_t i = threadIdx.x; i < c.bytes / 16; i += blockDim.x) to[i] = from[i];
}

const void* devCollKernel(CollType coll, ncclDataType_t dtype, RedKind kind) {
  switch (coll) {
    case CollType::AllGather:
    case CollType::Broadcast: return reinterpret_cast<const void*>(&collKernel<uint8_t, FuncCopy, true, kDevProtoSimple>);
    case CollType::AllReduce:
    case CollType::Reduce:
    case CollType::ReduceScatter: break;
    default: return nullptr;
  }
  switch (dtype) {
    case ncclFloat32:
    case ncclFloat64: return devSelectFloat(dtype, kind);
    case ncclFloat16: return devSelectHalf(dtype, kind);
    case ncclBfloat16: return devSelectBf16(dtype, kind);
    case ncclFloat8e4m3: return devSelectFp8E4M3(dtype, kind);
    case ncclFloat8e5m2: return devSelectFp8E5M2(dtype, kind);
    case ncclInt8:
    case ncclUint8: return devSelectInt8(dtype, kind);
    case ncclInt32:
    case ncclUint32: return devSelectInt32(dtype, kind);
    case ncclInt64:
    case ncclUint64: return devSelectInt64(dtype, kind);
    default: return nullptr;
  }
}

namespace {

// The low-latency kernels serving every reduction of a datatype (dev_any_red.cuh).
const void* anyRedKernelFor(ncclDataType_t dtype, DevLowLatency v) {
  switch (dtype) {
    case ncclFloat32:
    case ncclFloat64: return devAnyRedFloat(dtype, v);
    case ncclFloat16:
    case ncclBfloat16: return devAnyRedHalf(dtype, v);
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return devAnyRedFp8(dtype, v);
    case ncclInt8:
    case ncclUint8:
    case ncclInt32:
    case ncclUint32: return devAnyRedInt(dtype, v);
    case ncclInt64:
    case ncclUint64: return devAnyRedInt64(dtype, v);
    default: return nullptr;
  }
}

}  // namespace

// LL and LL128 kernels (prims_ll.h, prims_ll128.h): the copy kernel; sums of float, half and bfloat16 (the cases
// that matter most) on kernels of their own, with packed adds; on LL, every other datatype and reduction on its
// type's kernel that reads the reduction at run time (LL128 has none: those run SIMPLE at its sizes).
template <int Proto>
const void* lowLatencyKernel(CollType coll, ncclDataType_t dtype, RedKind kind) {
  switch (coll) {
    case CollType::AllGather:
    case CollType::Broadcast: return reinterpret_cast<const void*>(&collKernel<uint8_t, FuncCopy, true, Proto>);
    case CollType::AllReduce:
    case CollType::Reduce:
    case CollType::ReduceScatter: break;
    default: return nullptr;
  }
  if (kind == RedKind::Sum) {
    switch (dtype) {
      case ncclFloat32: return reinterpret_cast<const void*>(&collKernel<float, FuncSum<float>, false, Proto>);
#ifndef BRAID_KERNELS_MINIMAL
      case ncclFloat16: return reinterpret_cast<const void*>(&collKernel<Half, FuncSum<Half>, false, Proto>);
      case ncclBfloat16: return reinterpret_cast<const void*>(&collKernel<BFloat16, FuncSum<BFloat16>, false, Proto>);
#endif
      default: break;
    }
  }
  return Proto == kDevProtoLL ? anyRedKernelFor(dtype, DevLowLatency::LL) : nullptr;
}

const void* devCollKernelLL(CollType coll, ncclDataType_t dtype, RedKind kind) {
  return lowLatencyKernel<kDevProtoLL>(coll, dtype, kind);
}
const void* devOneShotPeersKernel(ncclDataType_t dtype, RedKind kind) {
  if (kind == RedKind::Sum) {
    switch (dtype) {
      case ncclFloat32: return reinterpret_cast<const void*>(&oneShotPeersKernel<float, FuncSum<float>>);
#ifndef BRAID_KERNELS_MINIMAL
      case ncclFloat16: return reinterpret_cast<const void*>(&oneShotPeersKernel<Half, FuncSum<Half>>);
      case ncclBfloat16: return reinterpret_cast<const void*>(&oneShotPeersKernel<BFloat16, FuncSum<BFloat16>>);
#endif
      default: break;
    }
  }
  return anyRedKernelFor(dtype, DevLowLatency::Peers);
}

const void* devCollKernelLL128(CollType coll, ncclDataType_t dtype, RedKind kind) {
  return lowLatencyKernel<kDevProtoLL128>(coll, dtype, kind);
}

const void* devP2pKernel(int maxBlocks) {
  if (maxBlocks == kTinyP2pBlocks) return reinterpret_cast<const void*>(&p2pKernel<kTinyP2pBlocks>);
  if (maxBlocks == kSmallP2pBlocks) return reinterpret_cast<const void*>(&p2pKernel<kSmallP2pBlocks>);
  if (maxBlocks == kMidP2pBlocks) return reinterpret_cast<const void*>(&p2pKernel<kMidP2pBlocks>);
  if (maxBlocks == kMaxP2pBlocks) return reinterpret_cast<const void*>(&p2pKernel<kMaxP2pBlocks>);
  if (maxBlocks == kMaxP2pTableBlocks) return reinterpret_cast<const void*>(&p2pTableKernel);
  return nullptr;
}

const void* devP2pTableFillKernel() { return reinterpret_cast<const void*>(&p2pTableFillKernel); }

cudaError_t devPreloadKernels() {
  const ncclDataType_t types[] = {ncclInt8,     ncclUint8,   ncclInt32,    ncclUint32,       ncclInt64,       ncclUint64,
                                  ncclFloat16,  ncclFloat32, ncclFloat64,  ncclBfloat16,     ncclFloat8e4m3,  ncclFloat8e5m2};
  const RedKind kinds[] = {RedKind::Sum, RedKind::Prod, RedKind::Max, RedKind::Min, RedKind::PreMulSum, RedKind::SumPostDiv};
  cudaFuncAttributes attr;
  cudaError_t e = cudaSuccess;
  for (int tier : {kTinyP2pBlocks, kSmallP2pBlocks, kMidP2pBlocks, kMaxP2pBlocks, kMaxP2pTableBlocks}) {
    e = cudaFuncGetAttributes(&attr, devP2pKernel(tier));
    if (e != cudaSuccess) return e;
  }
  e = cudaFuncGetAttributes(&attr, devP2pTableFillKernel());
  if (e != cudaSuccess) return e;
  e = cudaFuncGetAttributes(&attr, devCollKernel(CollType::AllGather, ncclInt8, RedKind::Sum));
  if (e != cudaSuccess) return e;
  e = cudaFuncGetAttributes(&attr, devCollKernelLL(CollType::AllGather, ncclInt8, RedKind::Sum));
  if (e != cudaSuccess) return e;
  e = cudaFuncGetAttributes(&attr, devCollKernelLL128(CollType::AllGather, ncclInt8, RedKind::Sum));
  if (e != cudaSuccess) return e;
  for (ncclDataType_t t : types) {
    for (RedKind k : kinds) {
      const void* f = devCollKernel(CollType::AllReduce, t, k);  // one kernel serves all three reducing colls
      if (f && (e = cudaFuncGetAttributes(&attr, f)) != cudaSuccess) return e;
      for (const void* l : {devCollKernelLL(CollType::AllReduce, t, k), devCollKernelLL128(CollType::AllReduce, t, k),
                            devOneShotPeersKernel(t, k)})
        if (l && (e = cudaFuncGetAttributes(&attr, l)) != cudaSuccess) return e;
    }
  }
  return cudaSuccess;
}

bool devKernelsMinimal() {
#ifdef BRAID_KERNELS_MINIMAL
  return true;
#else
  return false;
#endif
}

}  // namespace braid
