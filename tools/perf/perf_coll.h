// The collectives the perf tools measure, with nccl-tests' buffer arithmetic (how a size on the command line
// becomes send/recv element counts, the count passed to NCCL and the in-place offsets) and its algbw/busbw
// definitions. Header-only so the unit tests check the same code the tools run.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {
namespace perf {

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll, Gather, Scatter, SendRecv };

struct CollInfo {
  const char* name;      // as in nccl-tests' "Collective test" line
  const char* toolName;  // binary name
  bool hasOp;            // takes a reduction op (-o matters)
  bool hasRoot;          // takes a root (-r matters)
  bool checkInPlace;     // nccl-tests reports no errors (N/A) for in-place alltoall and send/recv
};

inline const CollInfo& collInfo(Coll c) {
  static const CollInfo kInfo[] = {
      {"AllReduce", "all_reduce_perf", true, false, true},
      {"AllGather", "all_gather_perf", false, false, true},
      {"ReduceScatter", "reduce_scatter_perf", true, false, true},
      {"Broadcast", "broadcast_perf", false, true, true},
      {"Reduce", "reduce_perf", true, true, true},
      {"AlltoAll", "alltoall_perf", false, false, false},
      {"Gather", "gather_perf", false, true, true},
      {"Scatter", "scatter_perf", false, true, true},
      {"SendRecv", "sendrecv_perf", false, false, false},
  };
  return kInfo[static_cast<int>(c)];
}

// Element counts for one measurement (nccl-tests' getCollByteCount). `count` is size / element size.
struct CollCounts {
  size_t sendCount = 0;          // elements each rank's send buffer holds
  size_t recvCount = 0;          // elements checked in each rank's receive buffer
  size_t paramCount = 0;         // the count argument of the NCCL call ("count" column)
  size_t sendInplaceOffset = 0;  // in-place: send data sits at recvbuff + rank * this (elements)
  size_t recvInplaceOffset = 0;  // in-place: receive data sits at recvbuff + rank * this (elements)
};

// Per-rank chunks of the split collectives are rounded down to whole 16-byte lines, as nccl-tests does.
inline size_t alignedChunk(size_t count, int nranks, size_t eltSize) {
  size_t per = count / static_cast<size_t>(nranks);
  size_t unit = eltSize >= 16 ? 1 : 16 / eltSize;
  return per - per % unit;
}

inline CollCounts collCounts(Coll c, size_t count, size_t eltSize, int nranks) {
  CollCounts k;
  size_t base = alignedChunk(count, nranks, eltSize);
  switch (c) {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv:
      k.sendCount = k.recvCount = k.paramCount = count;
      break;
    case Coll::AllGather:
    case Coll::Gather:
      k.sendCount = base;
      k.recvCount = base * nranks;
      k.paramCount = base;
      k.sendInplaceOffset = base;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      k.sendCount = base * nranks;
      k.recvCount = base;
      k.paramCount = base;
      k.recvInplaceOffset = base;
      break;
    case Coll::AlltoAll:
      k.sendCount = k.recvCount = base * nranks;
      k.paramCount = base;
      break;
  }
  return k;
}

// The "size" column: bytes of the larger of the two buffers.
inline size_t collBytes(const CollCounts& k, size_t eltSize) {
  return (k.sendCount > k.recvCount ? k.sendCount : k.recvCount) * eltSize;
}

// busbw = algbw * factor; the factor makes numbers comparable with the link speed (nccl-tests PERFORMANCE.md).
inline double busFactor(Coll c, int nranks) {
  double n = nranks;
  switch (c) {
    case Coll::AllReduce:
      return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
    case Coll::Gather:
    case Coll::Scatter:
      return (n - 1) / n;
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv:
      return 1.0;
  }
  return 1.0;
}

// algbw in GB/s (1e9 bytes) from the NCCL count argument. For the split collectives the data moved is the
// whole buffer (paramCount * nranks), for the others the count itself.
inline void collBandwidth(Coll c, size_t paramCount, size_t eltSize, double seconds, int nranks, double* algBw,
                          double* busBw) {
  double bytes = static_cast<double>(paramCount) * static_cast<double>(eltSize);
  switch (c) {
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
    case Coll::Gather:
    case Coll::Scatter:
      bytes *= nranks;
      break;
    default:
      break;
  }
  *algBw = seconds > 0 ? bytes / 1.0e9 / seconds : 0.0;
  *busBw = *algBw * busFactor(c, nranks);
}

}  // namespace perf
}  // namespace braid
