// Host collectives, per channel: resolves an op's (datatype, reduction) to one template instantiation of
// the ring schedules over HostPrims (and, for an all-reduce on the trees, the tree schedule over HostTreePrims), once
// per op; the executor then calls it on every channel thread.
// Signed and unsigned integers share the sum/prod/premulsum code (wrapping arithmetic is the same bits);
// copy collectives (all-gather, broadcast) run once on bytes.
#pragma once

#include <atomic>
#include <cstring>

#include "algo/op_desc.h"
#include "algo/reduce_ops.h"
#include "algo/ring_schedules.h"
#include "algo/tree_schedules.h"
#include "algo/tree_topology.h"
#include "core/result.h"
#include "core/wait.h"
#include "runtime/host/host_prims.h"
#include "runtime/host/host_tree_prims.h"
#include "transport/conn_info.h"

namespace braid {

// One ring as a channel walks it.
struct HostRingView {
  int pos = 0;                 // this rank's ring position
  const int* order = nullptr;  // position -> rank; nullptr: rank order
  const int* posOf = nullptr;  // rank -> position; nullptr: rank order
};

// What one channel thread needs to run its part of one collective.
struct CollChannelWork {
  const OpDesc* op = nullptr;
  int rank = 0;
  int nranks = 1;
  // The rings: channel c walks rings[c % nRings] (the ring its connections were made for).
  const HostRingView* rings = nullptr;
  int nRings = 0;
  int nChannels = 1;
  ConnProvider* conns = nullptr;
  const WaitContext* wait = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  bool oneShot = false;  // AllReduce of 2 ranks as ringAllReduceOneShot (NCCL_ALGO=allreduce:OneShot)
  // AllReduce on the double binary tree (tree_schedules.h): this rank's links in each tree (kNumTrees entries),
  // connected on the trees' channels; null: the ring.
  const TreeLinks* trees = nullptr;
  uint32_t tag = 0;      // hostStepTag of the op and its place in the comm's collectives
};
using CollChannelFn = ncclResult_t (*)(const CollChannelWork& work, int channel);

// The instantiation for `op` (a collective: AllReduce, Broadcast, Reduce, AllGather, ReduceScatter), or an
// ncclInvalidArgument with a recorded message for a datatype/op pair that does not exist.
ncclResult_t selectCollChannelFn(const OpDesc& op, CollChannelFn* fn);

// Per-group selectors (host_coll_int.cc, host_coll_float.cc); nullptr when the pair is not supported.
CollChannelFn selectIntCollFn(ncclDataType_t dtype, RedKind kind);
CollChannelFn selectFloatCollFn(ncclDataType_t dtype, RedKind kind);

namespace detail {

template <typename T>
inline T readScalar(const RedOpDesc& d) {
  T v;
  memcpy(&v, d.scalarPtr ? d.scalarPtr : static_cast<const void*>(d.scalar), sizeof(T));
  return v;
}
template <typename Fn>
struct MakeFn {
  static Fn make(const RedOpDesc&) { return Fn{}; }
};
template <typename T>
struct MakeFn<FuncPreMulSum<T>> {
  static FuncPreMulSum<T> make(const RedOpDesc& d) {
    FuncPreMulSum<T> f;
    f.scalar = readScalar<T>(d);
    return f;
  }
};
template <typename T>
struct MakeFn<FuncSumPostDiv<T>> {
  static FuncSumPostDiv<T> make(const RedOpDesc& d) {
    FuncSumPostDiv<T> f;
    f.divisor = d.divisor == 0 ? 1 : d.divisor;
    return f;
  }
};

// Ring connections of `channel` (none needed for a single rank) and the FIFO step size.
inline ncclResult_t ringConns(const CollChannelWork& w, int channel, ConnInfo** send, ConnInfo** recv,
                              uint32_t* stepBytes) {
  *send = *recv = nullptr;
  *stepBytes = 1u << 20;  // single rank: only the chunking of local copies, which any size does
  if (w.nranks == 1) return ncclSuccess;
  *send = w.conns->ringSend(channel);
  *recv = w.conns->ringRecv(channel);
  if (*send == nullptr || *recv == nullptr || (*send)->buff == nullptr || (*recv)->buff == nullptr)
    return recordError(ncclInternalError, "%s: ring channel %d is not connected on rank %d", collName(w.op->coll),
                       channel, w.rank);
  if ((*send)->nSteps == 0 || (*recv)->nSteps == 0 || (*send)->stepBytes < 8)
    return recordError(ncclInternalError, "ring channel %d of rank %d has an unusable FIFO (%u steps of %u bytes)",
                       channel, w.rank, (*send)->nSteps, (*send)->stepBytes);
  *stepBytes = (*send)->stepBytes;
  return ncclSuccess;
}

inline RingArgs ringArgsFor(const CollChannelWork& w, int channel, size_t count, size_t elemSize,
                            uint32_t stepBytes) {
  const HostRingView ring = w.nRings > 0 ? w.rings[channel % w.nRings] : HostRingView{w.rank, nullptr, nullptr};
  RingArgs a;
  a.pos = ring.pos;
  a.nranks = w.nranks;
  a.order = ring.order;
  a.rootPos = ring.posOf ? ring.posOf[w.op->root] : w.op->root;
  a.count = count;
  a.chunkElems = chunkElemsFor(stepBytes, elemSize);
  a.alignElems = alignElemsFor(a.chunkElems, elemSize);
  a.ch = channelRange(count, w.nChannels, channel, a.alignElems);
  return a;
}

// One channel of a tree all-reduce: the channel's range in halves over the two trees.
template <typename T, typename Fn>
ncclResult_t runTreeAllReduce(const CollChannelWork& w, int channel) {
  const OpDesc& op = *w.op;
  ConnInfo* upSend[kNumTrees];
  ConnInfo* upRecv[kNumTrees];
  ConnInfo* downSend[kNumTrees][2];
  ConnInfo* downRecv[kNumTrees][2];
  TreeArgs a;
  uint32_t stepBytes = 0, nSteps = 0;
  for (int t = 0; t < kNumTrees; ++t) {
    const TreeLinks& l = w.trees[t];
    upSend[t] = upRecv[t] = nullptr;
    if (l.up >= 0) {
      upSend[t] = w.conns->treeSend(t, channel, l.up);
      upRecv[t] = w.conns->treeRecv(t, channel, l.up);
    }
    for (int i = 0; i < 2; ++i) {
      downSend[t][i] = downRecv[t][i] = nullptr;
      if (l.down[i] >= 0) {
        downSend[t][i] = w.conns->treeSend(t, channel, l.down[i]);
        downRecv[t][i] = w.conns->treeRecv(t, channel, l.down[i]);
      }
    }
    const int links[3] = {l.up, l.down[0], l.down[1]};
    ConnInfo* const sends[3] = {upSend[t], downSend[t][0], downSend[t][1]};
    ConnInfo* const recvs[3] = {upRecv[t], downRecv[t][0], downRecv[t][1]};
    for (int k = 0; k < 3; ++k) {
      if (links[k] < 0) continue;
      if (!sends[k] || !recvs[k] || !sends[k]->buff || !recvs[k]->buff)
        return recordError(ncclInternalError, "AllReduce: tree %d channel %d of rank %d is not connected to rank %d",
                           t, channel, w.rank, links[k]);
      if (sends[k]->nSteps == 0 || recvs[k]->nSteps == 0 || sends[k]->stepBytes < 8 ||
          (stepBytes != 0 && (sends[k]->stepBytes != stepBytes || sends[k]->nSteps != nSteps)))
        return recordError(ncclInternalError, "tree %d channel %d of rank %d has an unusable FIFO (%u steps of %u "
                           "bytes)", t, channel, w.rank, sends[k]->nSteps, sends[k]->stepBytes);
      stepBytes = sends[k]->stepBytes;
      nSteps = sends[k]->nSteps;
    }
    a.role[t].hasParent = l.up >= 0;
    a.role[t].nChildren = l.nDown();
  }
  if (stepBytes == 0) stepBytes = 1u << 20;  // a single rank: only the chunking of its local copy
  a.chunkElems = chunkElemsFor(stepBytes, sizeof(T));
  const size_t align = alignElemsFor(a.chunkElems, sizeof(T));
  treeHalves(channelRange(op.count, w.nChannels, channel, align), align, a.half);
  if (a.half[0].count == 0) return ncclSuccess;
  a.lag = treeLagFor(nSteps);
  const Fn fn = MakeFn<Fn>::make(op.op);
  HostTreePrims<T, Fn> prims[kNumTrees] = {
      HostTreePrims<T, Fn>(upSend[0], upRecv[0], downSend[0], downRecv[0], op.sendbuff, op.recvbuff, fn, w.wait,
                           w.cancel, w.tag),
      HostTreePrims<T, Fn>(upSend[1], upRecv[1], downSend[1], downRecv[1], op.sendbuff, op.recvbuff, fn, w.wait,
                           w.cancel, w.tag)};
  treeAllReduce(prims, a);
  for (const HostTreePrims<T, Fn>& p : prims)
    if (p.result() != ncclSuccess) return p.result();
  return ncclSuccess;
}

}  // namespace detail

// One channel of a reducing collective (AllReduce, Reduce, ReduceScatter) on element type T.
template <typename T, typename Fn>
ncclResult_t runReduceChannel(const CollChannelWork& w, int channel) {
  ConnInfo* send;
  ConnInfo* recv;
  uint32_t stepBytes;
  if (w.trees && w.op->coll == CollType::AllReduce) return detail::runTreeAllReduce<T, Fn>(w, channel);
  BRAID_CHECK(detail::ringConns(w, channel, &send, &recv, &stepBytes));
  const OpDesc& op = *w.op;
  const RingArgs a = detail::ringArgsFor(w, channel, op.count, sizeof(T), stepBytes);
  if (a.ch.count == 0) return ncclSuccess;
  HostPrims<T, Fn> prims(send, recv, op.sendbuff, op.recvbuff, detail::MakeFn<Fn>::make(op.op), w.wait, w.cancel,
                         w.tag);
  switch (op.coll) {
    case CollType::AllReduce:
      if (w.oneShot) {
        ringAllReduceOneShot(prims, a);
      } else {
        ringAllReduce(prims, a);
      }
      break;
    case CollType::Reduce: ringReduce(prims, a); break;
    case CollType::ReduceScatter: ringReduceScatter(prims, a); break;
    default: return recordError(ncclInternalError, "%s is not a reducing collective", collName(op.coll));
  }
  return prims.result();
}

// Selects the instantiation for one element type and reduction kind.
template <typename T>
CollChannelFn reduceFnFor(RedKind kind) {
  switch (kind) {
    case RedKind::Sum: return &runReduceChannel<T, FuncSum<T>>;
    case RedKind::Prod: return &runReduceChannel<T, FuncProd<T>>;
    case RedKind::Max: return &runReduceChannel<T, FuncMax<T>>;
    case RedKind::Min: return &runReduceChannel<T, FuncMin<T>>;
    case RedKind::PreMulSum: return &runReduceChannel<T, FuncPreMulSum<T>>;
    case RedKind::SumPostDiv: break;
  }
  return nullptr;
}

}  // namespace braid
