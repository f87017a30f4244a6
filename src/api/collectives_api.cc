// The collective and point-to-point entry points: validate every argument (ncclInvalidArgument with a
// message naming it; nothing is enqueued), resolve the reduction op, and hand an OpDesc to the group.
#include <cstring>

#include "algo/op_desc.h"
#include "algo/scalar.h"
#include "api/api_common.h"
#include "runtime/group.h"

namespace braid {
namespace {

ncclResult_t resolveOp(ncclComm* comm, ncclRedOp_t op, ncclDataType_t dtype, const char* fn, RedOpDesc* out) {
  int o = static_cast<int>(op);
  switch (o) {
    case ncclSum: out->kind = RedKind::Sum; return ncclSuccess;
    case ncclProd: out->kind = RedKind::Prod; return ncclSuccess;
    case ncclMax: out->kind = RedKind::Max; return ncclSuccess;
    case ncclMin: out->kind = RedKind::Min; return ncclSuccess;
    case ncclAvg:
      if (dtypeIsFloat(dtype)) {
        out->kind = RedKind::PreMulSum;
        encodeScalar(dtype, 1.0 / comm->nranks, out->scalar);
      } else {
        out->kind = RedKind::SumPostDiv;
        out->divisor = static_cast<uint64_t>(comm->nranks);
      }
      return ncclSuccess;
    default: break;
  }
  if (o >= ncclNumOps) {
    std::lock_guard<std::mutex> lock(comm->redOpMu);
    size_t idx = static_cast<size_t>(o - ncclNumOps);
    if (idx < comm->userOps.size() && comm->userOps[idx].inUse) {
      const UserRedOp& u = comm->userOps[idx];
      if (u.dtype != dtype)
        return recordError(ncclInvalidArgument,
                           "%s: op %d was created for datatype %d but is used with datatype %d", fn, o,
                           static_cast<int>(u.dtype), static_cast<int>(dtype));
      out->kind = RedKind::PreMulSum;
      if (u.residence == ncclScalarHostImmediate)
        memcpy(out->scalar, u.value, sizeof(out->scalar));
      else
        out->scalarPtr = u.ptr;
      return ncclSuccess;
    }
  }
  return recordError(ncclInvalidArgument, "%s: op %d is invalid (not a built-in op nor one created on this comm)",
                     fn, o);
}

// Validates and enqueues. `needSend`/`needRecv`: whether the buffer is used on this rank.
ncclResult_t submit(ncclComm* comm, const char* fn, OpDesc op, bool needSend, bool needRecv, bool hasOp,
                    ncclRedOp_t redOp, bool hasRoot, bool hasPeer) {
  BRAID_CHECK(checkComm(comm, fn));
  RankTag tag(comm->rank);
  BRAID_CHECK(checkDtype(op.dtype, fn));
  if (hasRoot) BRAID_CHECK(checkRank(op.root, comm->nranks, "root", fn));
  if (hasPeer) BRAID_CHECK(checkRank(op.peer, comm->nranks, "peer", fn));
  if (hasOp) BRAID_CHECK(resolveOp(comm, redOp, op.dtype, fn, &op.op));
  if (op.count > 0) {
    if (needSend) BRAID_CHECK(checkPtr(op.sendbuff, "sendbuff", fn));
    if (needRecv) BRAID_CHECK(checkPtr(op.recvbuff, "recvbuff", fn));
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(op.count, dtypeSize(op.dtype) * static_cast<size_t>(comm->nranks), &bytes))
    return recordError(ncclInvalidArgument, "%s: count %zu is too large", fn, op.count);
  BRAID_INFO(kSubColl, "%s: count %zu datatype %s root %d peer %d sendbuff %p recvbuff %p", fn, op.count,
             dtypeName(op.dtype), op.root, op.peer, op.sendbuff, static_cast<void*>(op.recvbuff));
  // An empty collective moves nothing on any rank (every rank passes the same count), so it is dropped after
  // its arguments are checked, as NCCL does: launching a kernel for a 0-count all-to-all would cost ~4 us
  // against NCCL's 0.2. A 0-byte send or receive is kept: it is a synchronisation with its peer.
  // Outside a group the communicator's state is still checked (an error from earlier, finalized, init not
  // done), as for any call; inside one the group's end checks it.
  if (op.count == 0 && op.coll != CollType::Send && op.coll != CollType::Recv) {
    if (!inGroup()) BRAID_CHECK(checkCommUsable(comm));
    return ncclSuccess;
  }
  return enqueueOp(comm, op);
}

// Wraps submit so that argument errors inside a group also fail the group's ncclGroupEnd.
template <typename F>
ncclResult_t collCall(const char* fn, ncclComm* comm, F&& body) {
  CommUse use(comm);
  return apiCall(fn, comm, [&]() -> ncclResult_t {
    ncclResult_t res = body();
    if (res != ncclSuccess && inGroup()) noteGroupError(res);
    return res;
  });
}

// `t` is copied as bytes: it may be any int the caller passed, and submit's checkDtype reports a bad one.
OpDesc makeOp(CollType c, const void* send, void* recv, size_t count, const ncclDataType_t& t, cudaStream_t stream) {
  OpDesc op;
  op.stream = static_cast<void*>(stream);
  op.coll = c;
  op.sendbuff = send;
  op.recvbuff = recv;
  op.count = count;
  std::memcpy(&op.dtype, &t, sizeof(op.dtype));
  return op;
}

}  // namespace
}  // namespace braid

using namespace braid;

BRAID_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclAllReduce", comm, [&] {
    return submit(comm, "ncclAllReduce", makeOp(CollType::AllReduce, sendbuff, recvbuff, count, datatype, stream), true,
                  true, true, op, false, false);
  });
}

BRAID_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclBroadcast", comm, [&] {
    OpDesc o = makeOp(CollType::Broadcast, sendbuff, recvbuff, count, datatype, stream);
    o.root = root;
    bool isRoot = comm != nullptr && comm->magic == kCommMagic && comm->rank == root;
    return submit(comm, "ncclBroadcast", o, isRoot, true, false, ncclSum, true, false);
  });
}

BRAID_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream) {
  return collCall("ncclBcast", comm, [&] {
    OpDesc o = makeOp(CollType::Broadcast, buff, buff, count, datatype, stream);
    o.root = root;
    return submit(comm, "ncclBcast", o, false, true, false, ncclSum, true, false);
  });
}

BRAID_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclReduce", comm, [&] {
    OpDesc o = makeOp(CollType::Reduce, sendbuff, recvbuff, count, datatype, stream);
    o.root = root;
    bool isRoot = comm != nullptr && comm->magic == kCommMagic && comm->rank == root;
    return submit(comm, "ncclReduce", o, true, isRoot, true, op, true, false);
  });
}

BRAID_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclAllGather", comm, [&] {
    return submit(comm, "ncclAllGather", makeOp(CollType::AllGather, sendbuff, recvbuff, sendcount, datatype, stream),
                  true, true, false, ncclSum, false, false);
  });
}

BRAID_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclReduceScatter", comm, [&] {
    return submit(comm, "ncclReduceScatter",
                  makeOp(CollType::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, stream), true, true, true, op,
                  false, false);
  });
}

BRAID_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclAlltoAll", comm, [&] {
    return submit(comm, "ncclAlltoAll", makeOp(CollType::AllToAll, sendbuff, recvbuff, count, datatype, stream), true,
                  true, false, ncclSum, false, false);
  });
}

BRAID_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclGather", comm, [&] {
    OpDesc o = makeOp(CollType::Gather, sendbuff, recvbuff, count, datatype, stream);
    o.root = root;
    bool isRoot = comm != nullptr && comm->magic == kCommMagic && comm->rank == root;
    return submit(comm, "ncclGather", o, true, isRoot, false, ncclSum, true, false);
  });
}

BRAID_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          int root, ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclScatter", comm, [&] {
    OpDesc o = makeOp(CollType::Scatter, sendbuff, recvbuff, count, datatype, stream);
    o.root = root;
    bool isRoot = comm != nullptr && comm->magic == kCommMagic && comm->rank == root;
    return submit(comm, "ncclScatter", o, isRoot, true, false, ncclSum, true, false);
  });
}

BRAID_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclSend", comm, [&] {
    OpDesc o = makeOp(CollType::Send, sendbuff, nullptr, count, datatype, stream);
    o.peer = peer;
    return submit(comm, "ncclSend", o, true, false, false, ncclSum, false, true);
  });
}

BRAID_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
          ncclComm_t comm, cudaStream_t stream) {
  return collCall("ncclRecv", comm, [&] {
    OpDesc o = makeOp(CollType::Recv, nullptr, recvbuff, count, datatype, stream);
    o.peer = peer;
    return submit(comm, "ncclRecv", o, false, true, false, ncclSum, false, true);
  });
}
