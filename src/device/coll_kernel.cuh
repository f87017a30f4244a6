// Kernel entry points (docs/DESIGN.md §4, top layer): the ring collectives, the tree all-reduce and the p2p
// transfers. One CTA per channel (collectives; two for the tree and the split one-shot) or per connection (p2p);
// arguments arrive by value, connection state is loaded from and stored back to device memory, so a launch
// depends on nothing the host does afterwards and CUDA graph capture/replay works. Included by the variant files
// (dev_coll_*.cu), which instantiate it.
#pragma once

#include <cstring>
#include <type_traits>

#include "algo/op_desc.h"
#include "algo/reduce_ops.h"
#include "algo/ring_schedules.h"
#include "algo/tree_schedules.h"
#include "device/dev_probe.h"
#include "device/func_any_red.h"
#include "device/dev_work.h"
#include "device/prims_ll.h"
#include "device/prims_ll128.h"
#include "device/prims_simple.h"
#include "device/prims_tree.h"
#include "device/prims_tree_ll.h"

namespace braid {

template <typename Fn>
struct DevMakeFn {
  static __device__ Fn make(const CollLaunchArgs&) { return Fn{}; }
};
template <typename T>
struct DevMakeFn<FuncPreMulSum<T>> {
  static __device__ FuncPreMulSum<T> make(const CollLaunchArgs& a) {
    FuncPreMulSum<T> f;
    if (a.scalarPtr) {
      memcpy(&f.scalar, a.scalarPtr, sizeof(T));
    } else {
      memcpy(&f.scalar, &a.scalar, sizeof(T));
    }
    return f;
  }
};
template <typename T>
struct DevMakeFn<FuncSumPostDiv<T>> {
  static __device__ FuncSumPostDiv<T> make(const CollLaunchArgs& a) {
    FuncSumPostDiv<T> f;
    f.divisor = a.divisor == 0 ? 1 : a.divisor;
    return f;
  }
};
template <typename T>
struct DevMakeFn<FuncAnyRed<T>> {
  static __device__ FuncAnyRed<T> make(const CollLaunchArgs& a) {
    FuncAnyRed<T> f;
    f.kind = a.redKind;
    f.scalar = DevMakeFn<FuncPreMulSum<T>>::make(a).scalar;
    f.divisor = a.divisor == 0 ? 1 : a.divisor;
    return f;
  }
};

// Which ring directions a schedule uses (nranks > 1): broadcast and reduce are chains (ring_schedules.h), the
// others use both. LL cleans exactly these before its first step (DevPrimsLL::begin).
__device__ __forceinline__ bool llWillSend(int32_t coll, const RingArgs& a) {
  if (coll == kDevBroadcast) return (a.pos + 1) % a.nranks != a.rootPos;  // all but the chain's last
  if (coll == kDevReduce) return a.pos != a.rootPos;
  return true;
}
__device__ __forceinline__ bool llWillRecv(int32_t coll, const RingArgs& a) {
  if (coll == kDevBroadcast) return a.pos != a.rootPos;
  if (coll == kDevReduce) return a.pos != (a.rootPos + 1) % a.nranks;  // all but the chain's first
  return true;
}

// Whether a reducing kernel carries the one-shot schedule: the executor picks it only where every rank gets the
// same bits (oneShotExact in algo/op_desc.h: sums, products and integer reductions), so the float pre-multiplied
// sums' kernels leave it out. The shared FuncAnyRed kernels carry it for their integer reductions and products; their
// floating max/min never run it.
template <typename Fn>
struct OneShotFn : std::false_type {};
template <typename T>
struct OneShotFn<FuncSum<T>> : std::true_type {};
template <typename T>
struct OneShotFn<FuncProd<T>> : std::true_type {};
template <typename T>
struct OneShotFn<FuncSumPostDiv<T>> : std::true_type {};
// The executor asks a FuncAnyRed kernel for the one-shot only where every rank gets the same bits (oneShotExact).
template <typename T>
struct OneShotFn<FuncAnyRed<T>> : std::true_type {};
template <typename T, typename Fn>
constexpr bool kHasOneShot = std::is_integral<T>::value || OneShotFn<Fn>::value;

// Runs the ring schedule of args.coll on `prims`. A kernel without the one-shot schedule runs the ring
// all-reduce for it (every rank runs the same kernel for an op, so they agree; the executor never asks).
// doSend / doRecv: this CTA's directions in the split one-shot (kDevAllReduceOneShotSplit); both otherwise.
template <bool IsCopy, bool HasOneShot = true, typename Prims>
__device__ __forceinline__ void runRing(Prims& prims, const RingArgs& a, int32_t coll, bool doSend = true,
                                        bool doRecv = true) {
  if (IsCopy) {
    if (coll == kDevAllGather) {
      ringAllGather(prims, a);
    } else {
      ringBroadcast(prims, a);
    }
  } else {
    if (coll == kDevAllReduce || (!HasOneShot && (coll == kDevAllReduceOneShot || coll == kDevAllReduceOneShotSplit))) {
      ringAllReduce(prims, a);
    } else if (HasOneShot && (coll == kDevAllReduceOneShot || coll == kDevAllReduceOneShotSplit)) {
      ringAllReduceOneShot(prims, a, doSend, doRecv);
    } else if (coll == kDevReduce) {
      ringReduce(prims, a);
    } else {
      ringReduceScatter(prims, a);
    }
  }
}

// One CTA of the tree all-reduce (kDevAllReduceTree): tree t of channel c, for CTA 2c + t. The channel's range is
// cut as the host executor cuts it (channelRange, then treeHalves), and the tree's connections' step counters go
// back to device memory at the end, as the ring's do. Out of line, so its registers are allocated apart from the
// ring schedules' (inlined, the float sum kernel spilled 100 bytes instead of 40 and min/max 52 instead of none:
// ptxas -v, sm_90, minimal preset).
template <typename T, typename Fn>
__device__ __noinline__ void treeCta(const CollLaunchArgs args) {
  __shared__ TreeShared sh;
  if (static_cast<int>(blockIdx.x) >= 2 * args.nChannels || args.treeConns == nullptr) return;
  const int ch = static_cast<int>(blockIdx.x) >> 1;
  const int t = static_cast<int>(blockIdx.x) & 1;
  DevConn* conns = args.treeConns + static_cast<size_t>(2 * ch + t) * kDevTreeConns;
  if (threadIdx.x == 0) {
    sh.stop = 0;
    sh.stopCall = 0;
    for (int k = 0; k < kDevTreeConns; ++k) sh.conn[k] = conns[k];
  }
  __syncthreads();
  TreeRole role;
  role.hasParent = sh.conn[kTreeUpSend].buff != nullptr;
  role.nChildren = (sh.conn[kTreeDownSend].buff ? 1 : 0) + (sh.conn[kTreeDownSend + 2].buff ? 1 : 0);
  const DevConn& any = role.hasParent ? sh.conn[kTreeUpSend] : sh.conn[kTreeDownSend];
  uint32_t stepBytes = any.stepBytes;
  if (args.stepCap != 0 && args.stepCap < stepBytes) stepBytes = args.stepCap;
  const size_t chunk = chunkElemsFor(stepBytes, sizeof(T));
  const size_t align = alignElemsFor(chunk, sizeof(T));
  ElemRange half[2];
  treeHalves(channelRange(args.count, args.nChannels, ch, align), align, half);
  if (half[t].count != 0) {
    DevTreePrims<T, Fn> prims(&sh, static_cast<const T*>(args.sendbuff), static_cast<T*>(args.recvbuff),
                              DevMakeFn<Fn>::make(args), args.status, role.nChildren);
    treeAllReduceOne(prims, role, half[t], chunk, treeLagFor(any.nSteps));
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int k = 0; k < kDevTreeConns; ++k)
      if (sh.conn[k].buff) conns[k].step = sh.conn[k].step, conns[k].headSeen = sh.conn[k].headSeen;
}

// One CTA of the tree all-reduce on LL (kDevAllReduceTree in an LL kernel): as treeCta, over each link's LL slots
// (prims_tree_ll.h), a step carrying one LL slot's data. Each link's clean steps run first where due, every send
// direction before any receive direction (prims_ll.h), and each link's counters go back to device memory at the end.
template <typename T, typename Fn>
__device__ __noinline__ void treeCtaLL(const CollLaunchArgs args) {
  __shared__ PrimsShared links[kTreeLinks];
  if (static_cast<int>(blockIdx.x) >= 2 * args.nChannels || args.treeConns == nullptr) return;
  const int ch = static_cast<int>(blockIdx.x) >> 1;
  const int t = static_cast<int>(blockIdx.x) & 1;
  DevConn* conns = args.treeConns + static_cast<size_t>(2 * ch + t) * kDevTreeConns;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < kTreeLinks) {
    links[tid].reset();
    links[tid].send = conns[2 * tid];
    links[tid].recv = conns[2 * tid + 1];
  }
  __syncthreads();
  TreeRole role;
  role.hasParent = links[kTreeParentLink].send.buff != nullptr;
  role.nChildren = (links[1].send.buff ? 1 : 0) + (links[2].send.buff ? 1 : 0);
  const Fn fn = DevMakeFn<Fn>::make(args);
  const T* in = static_cast<const T*>(args.sendbuff);
  T* out = static_cast<T*>(args.recvbuff);
  devLlCleanLinks(links, kTreeLinks, in, out, fn, args.status);
  const DevConn& any = role.hasParent ? links[kTreeParentLink].send : links[1].send;
  const size_t chunk = chunkElemsFor(static_cast<uint32_t>(llSlotDataBytes(any.llSlotBytes)), sizeof(T));
  const size_t align = alignElemsFor(chunk, sizeof(T));
  ElemRange half[2];
  treeHalves(channelRange(args.count, args.nChannels, ch, align), align, half);
  if (half[t].count != 0) {
    DevTreePrimsLL<T, Fn> prims(links, role.nChildren, in, out, fn, args.status);
    treeAllReduceOne(prims, role, half[t], chunk, treeLagFor(any.nSteps));
    prims.saveSteps();
  }
  __syncthreads();
  if (tid < kTreeLinks && links[tid].send.buff) {
    conns[2 * tid].step = links[tid].send.step;
    conns[2 * tid].llLastClean = links[tid].send.llLastClean;
    conns[2 * tid].headSeen = links[tid].send.headSeen;
    conns[2 * tid + 1].step = links[tid].recv.step;
    conns[2 * tid + 1].llLastClean = links[tid].recv.llLastClean;
  }
}

// IsCopy: all-gather/broadcast on bytes; otherwise all-reduce/reduce/reduce-scatter on T. Proto (DevProto):
// SIMPLE, LL (prims_ll.h; P2P and SHM connections) or LL128 (prims_ll128.h; NVLink P2P), chosen by the executor.
template <typename T, typename Fn, bool IsCopy, int Proto>
__global__ void __launch_bounds__(kDevLaunchMax, 1) collKernel(const CollLaunchArgs args) {
  __shared__ PrimsShared sh;
  BRAID_PROBE(0);
  devAwaitPreviousKernel();
  if (args.pdlTrigger) devLetNextKernelLaunch();
  if constexpr (Proto == kDevProtoSimple && !IsCopy) {
    if (args.coll == kDevAllReduceTree) {
      treeCta<T, Fn>(args);
      return;
    }
  }
  if constexpr (Proto == kDevProtoLL && !IsCopy) {
    if (args.coll == kDevAllReduceTree) {
      treeCtaLL<T, Fn>(args);
      return;
    }
  }
  // The split one-shot (SIMPLE): CTAs [0, nChannels) send, [nChannels, 2 nChannels) receive; each stores
  // back only its own direction's counters. In place, the receiving CTA writes a chunk only after the
  // sending one has read it (args.splitGuard, DevPrims::setSplitGuard).
  // A kernel that cannot run the split (never asked: the executor splits only the 2-rank one-shot on
  // SIMPLE kernels that carry it) runs the unsplit schedule on its first nChannels CTAs. CTAs past the
  // schedule's (a grid rounded up to whole thread-block clusters, launch_attrs.h) return here, before they
  // touch any connection, so nothing in this kernel may wait for every CTA of a cluster.
  const bool split = Proto == kDevProtoSimple && kHasOneShot<T, Fn> && args.nranks == 2 &&
                     args.coll == kDevAllReduceOneShotSplit;
  if (static_cast<int>(blockIdx.x) >= (split ? 2 : 1) * args.nChannels) return;
  const bool doSend = !split || static_cast<int>(blockIdx.x) < args.nChannels;
  const bool doRecv = !split || !doSend;
  const int ch = doSend ? blockIdx.x : blockIdx.x - args.nChannels;
  const bool ring = args.nranks > 1;
  if (threadIdx.x == 0) {
    sh.reset();
    if (ring) {
      // Both, also in the split: the chunk size comes from the send side's stepBytes (which no CTA writes;
      // the other CTA of a split channel may be storing its counters back meanwhile, which this one ignores).
      sh.send = args.ringConns[ch];
      sh.recv = args.ringConns[args.ringStride + ch];
    }
  }
  __syncthreads();
  BRAID_PROBE(1);
  RingArgs a;
  a.pos = args.ringPos;
  a.nranks = args.nranks;
  a.rootPos = args.rootPos;
  a.order = args.ringOrder;
  if (args.nRings > 1) {
    // This channel's ring: the same ring (ch % nRings) its connections were made for at init.
    const int32_t* t = args.ringTables + static_cast<size_t>(ch % args.nRings) * 2 * args.nranks;
    a.order = t;
    a.pos = t[args.nranks + args.rank];
    a.rootPos = args.root >= 0 && args.root < args.nranks ? t[args.nranks + args.root] : 0;
  }
  a.count = args.count;
  uint32_t stepBytes = ring ? sh.send.stepBytes : (1u << 20);
  if (Proto == kDevProtoLL && ring) stepBytes = static_cast<uint32_t>(llSlotDataBytes(sh.send.llSlotBytes));
  if (Proto == kDevProtoLL128 && ring) stepBytes = static_cast<uint32_t>(ll128SlotDataBytes(sh.send.ll128SlotBytes));
  if (Proto == kDevProtoSimple && args.stepCap != 0 && args.stepCap < stepBytes) stepBytes = args.stepCap;
  a.chunkElems = chunkElemsFor(stepBytes, sizeof(T));
  a.alignElems = alignElemsFor(a.chunkElems, sizeof(T));
  a.ch = channelRange(args.count, args.nChannels, ch, a.alignElems);
  if (a.ch.count != 0) {
    if constexpr (Proto == kDevProtoLL) {
      DevPrimsLL<T, Fn> prims(&sh, static_cast<const T*>(args.sendbuff), static_cast<T*>(args.recvbuff),
                              DevMakeFn<Fn>::make(args), args.status);
      if (ring) prims.begin(llWillSend(args.coll, a), llWillRecv(args.coll, a));
      BRAID_PROBE(2);
      runRing<IsCopy, kHasOneShot<T, Fn>>(prims, a, args.coll);
      BRAID_PROBE(3);
      __syncthreads();
      if (threadIdx.x == 0) {
        sh.send.step = prims.sendStep();
        sh.recv.step = prims.recvStep();
        sh.send.llLastClean = prims.sendLastClean();
        sh.recv.llLastClean = prims.recvLastClean();
      }
    } else if constexpr (Proto == kDevProtoLL128) {
      DevPrimsLL128<T, Fn> prims(&sh, static_cast<const T*>(args.sendbuff), static_cast<T*>(args.recvbuff),
                                 DevMakeFn<Fn>::make(args), args.status);
      // The 2-rank one-shot runs on the same primitives (send, then receive-reduce-copy) over LL128 lines.
      runRing<IsCopy, kHasOneShot<T, Fn>>(prims, a, args.coll);
      __syncthreads();
      if (threadIdx.x == 0) {
        sh.send.step = prims.sendStep();
        sh.recv.step = prims.recvStep();
      }
    } else {
      DevPrims<T, Fn> prims(&sh, static_cast<const T*>(args.sendbuff), static_cast<T*>(args.recvbuff),
                            DevMakeFn<Fn>::make(args), args.status);
      if (split && args.splitGuard) prims.setSplitGuard(args.splitGuard + ch, doSend);
      runRing<IsCopy, kHasOneShot<T, Fn>>(prims, a, args.coll, doSend, doRecv);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && ring) {
    if (doSend) {
      args.ringConns[ch].step = sh.send.step;
      args.ringConns[ch].llLastClean = sh.send.llLastClean;
      args.ringConns[ch].headSeen = sh.send.headSeen;
    }
    if (doRecv) {
      args.ringConns[args.ringStride + ch].step = sh.recv.step;
      args.ringConns[args.ringStride + ch].llLastClean = sh.recv.llLastClean;
      // This launch's sending CTA has counted up to its last chunk, which this CTA waited for: back to zero
      // for the next split launch (which starts after this kernel ends).
      if (split && args.splitGuard && !sh.stop) stReleaseGpu(args.splitGuard + ch, 0);
    }
  }
  BRAID_PROBE(4);
  BRAID_PROBE_REPORT(Proto == kDevProtoLL ? "ringLL" : Proto == kDevProtoLL128 ? "ringLL128" : "ringSimple", args.rank);
}

template <typename T, typename Fn>
const void* reduceKernelPtr() {
  return reinterpret_cast<const void*>(&collKernel<T, Fn, false, kDevProtoSimple>);
}

// A reduction's SIMPLE kernel: its own where simpleOwnKernel says so, else its type's FuncAnyRed kernel
// (func_any_red.h), or none (SumPostDiv on floating types, which average through PreMulSum). Compiling each
// reduction's loop only where its speed matters keeps the device build small.
template <typename T>
const void* simpleAnyKernelFor(RedKind kind) {
  return simpleAnyServes<T>(kind) ? reduceKernelPtr<T, FuncAnyRed<T>>() : nullptr;
}
template <typename T>
const void* simpleKernelFor(RedKind kind) {
  switch (kind) {
    case RedKind::Sum: return reduceKernelPtr<T, FuncSum<T>>();
    case RedKind::PreMulSum:
      if constexpr (simpleOwnKernel<T>(RedKind::PreMulSum)) return reduceKernelPtr<T, FuncPreMulSum<T>>();
      break;
    default: break;
  }
  return simpleAnyKernelFor<T>(kind);
}

// The selector of a translation unit holding one floating type's reducing kernels (none in the minimal
// preset, which compiles only float's).
#ifdef BRAID_KERNELS_MINIMAL
#define BRAID_FLOAT_TYPE_SELECTOR(name, T) \
  const void* name(ncclDataType_t, RedKind) { return nullptr; }
#else
#define BRAID_FLOAT_TYPE_SELECTOR(name, T) \
  const void* name(ncclDataType_t, RedKind kind) { return simpleKernelFor<T>(kind); }
#endif

// Integers: sum/prod/premulsum on the unsigned type (same wrapping bits); max/min/average need the sign.
template <typename S, typename U>
const void* intKernelFor(RedKind kind) {
  switch (kind) {
    case RedKind::Sum:
    case RedKind::Prod:
    case RedKind::PreMulSum: return simpleKernelFor<U>(kind);
    case RedKind::Max:
    case RedKind::Min:
    case RedKind::SumPostDiv: return simpleAnyKernelFor<S>(kind);  // never a signed sum kernel
  }
  return nullptr;
}

}  // namespace braid
