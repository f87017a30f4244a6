// Host collectives, per channel: resolves an op's (datatype, reduction) to one template instantiation of
// the ring schedules over HostPrims, once per op; the executor then calls it on every channel thread.
// Signed and unsigned integers share the sum/prod/premulsum code (wrapping arithmetic is the same bits);
// copy collectives (all-gather, broadcast) run once on bytes.
#pragma once

#include <atomic>
#include <cstring>

#include "algo/op_desc.h"
#include "algo/reduce_ops.h"
#include "algo/ring_schedules.h"
#include "core/result.h"
#include "core/wait.h"
#include "runtime/host/host_prims.h"
#include "transport/conn_info.h"

namespace braid {

// What one channel thread needs to run its part of one collective.
struct CollChannelWork {
  const OpDesc* op = nullptr;
  int rank = 0;
  int nranks = 1;
  int ringPos = 0;                   // this rank's ring position
  const int* ringOrder = nullptr;    // position -> rank; nullptr: rank order
  const int* ringPosOf = nullptr;    // rank -> position; nullptr: rank order
  int nChannels = 1;
  ConnProvider* conns = nullptr;
  const WaitContext* wait = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  bool oneShot = false;  // AllReduce of 2 ranks as ringAllReduceOneShot (NCCL_ALGO=allreduce:OneShot)
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
  RingArgs a;
  a.pos = w.ringPos;
  a.nranks = w.nranks;
  a.order = w.ringOrder;
  a.rootPos = w.ringPosOf ? w.ringPosOf[w.op->root] : w.op->root;
  a.count = count;
  a.chunkElems = chunkElemsFor(stepBytes, elemSize);
  a.alignElems = alignElemsFor(a.chunkElems, elemSize);
  a.ch = channelRange(count, w.nChannels, channel, a.alignElems);
  return a;
}

}  // namespace detail

// One channel of a reducing collective (AllReduce, Reduce, ReduceScatter) on element type T.
template <typename T, typename Fn>
ncclResult_t runReduceChannel(const CollChannelWork& w, int channel) {
  ConnInfo* send;
  ConnInfo* recv;
  uint32_t stepBytes;
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
