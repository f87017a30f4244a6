// One enqueued operation, as the API layer hands it to planning/execution. Plain data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid {

enum class CollType : int {
  AllReduce,
  Broadcast,
  Reduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Gather,
  Scatter,
  Send,
  Recv,
};
const char* collName(CollType c);
// Collectives built from point-to-point transfers (send, receive, gather, scatter, all-to-all). Executors run
// a batch's other collectives (the ring ones) one launch each, then its p2p ops side by side in one launch;
// ncclGroupSimulateEnd prices the batch the same way, and NCCL_ALGO does not apply to them.
constexpr bool isP2pColl(CollType c) {
  return c == CollType::Send || c == CollType::Recv || c == CollType::AllToAll || c == CollType::Gather ||
         c == CollType::Scatter;
}
// p2p collectives whose transfers run one way between each pair of ranks, which both ends know from the
// collective alone (P2pXfer::oneWay: the launch and the cost model cut them alike, p2p_plan.h).
constexpr bool isOneWayColl(CollType c) { return c == CollType::Gather || c == CollType::Scatter; }

// The reduction as executed: user ops are resolved by the API layer (Avg becomes PreMulSum by 1/n for
// floating types and SumPostDiv by n for integers; user PreMulSum ops carry their scalar).
enum class RedKind : int { Sum, Prod, Max, Min, PreMulSum, SumPostDiv };

struct RedOpDesc {
  RedKind kind = RedKind::Sum;
  // PreMulSum: the scalar, stored as a value of the op's datatype (bytes), or a pointer to one read when
  // the op executes (ncclScalarDevice). SumPostDiv: divisor in `divisor`.
  uint8_t scalar[8] = {};
  const void* scalarPtr = nullptr;
  uint64_t divisor = 1;
};

struct OpDesc {
  CollType coll = CollType::AllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  // Elements: per rank for AllGather/ReduceScatter/AllToAll/Gather/Scatter (NCCL's meaning), total for
  // AllReduce/Broadcast/Reduce, message size for Send/Recv.
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  RedOpDesc op;
  int root = 0;  // Broadcast/Reduce/Gather/Scatter
  int peer = 0;  // Send/Recv
  void* stream = nullptr;  // cudaStream_t of the call (device communicators); ignored by host ones
};

// A 16-bit tag of what every rank must agree on for a ring collective (type, root, count, datatype,
// reduction kind) and of its place in the comm's sequence of collectives (`seq`, counted alike on every
// rank): host FIFO steps carry it (ConnInfo::tags), so a mismatch, or a stray step an earlier mismatched
// collective left in a FIFO, is an error instead of a success with wrong data or a hang. Never 0.
uint32_t hostStepTag(const OpDesc& op, uint64_t seq);

size_t dtypeSize(ncclDataType_t t);
bool dtypeIsFloat(ncclDataType_t t);
const char* dtypeName(ncclDataType_t t);
// Whether the 2-rank one-shot all-reduce (ring_schedules.h) gives both ranks the same bits for this reduction:
// each rank reduces (peer, own) in its own order and pre-multiplies its own input inside the reduction (a
// contracted FMA), so float max/min (ties of -0/+0, NaN payloads) and float pre-multiplied sums may differ by
// rank; sums, products and integer reductions do not (the GPU's float NaNs are canonical).
bool oneShotExact(RedKind kind, ncclDataType_t dtype);

}  // namespace braid
