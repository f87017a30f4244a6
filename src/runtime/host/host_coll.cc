// Host collectives: op -> instantiation selection, and the copy collectives (all-gather, broadcast), which
// run once on bytes whatever the datatype.
#include "runtime/host/host_coll.h"

namespace braid {
namespace {

ncclResult_t runCopyChannel(const CollChannelWork& w, int channel) {
  ConnInfo* send;
  ConnInfo* recv;
  uint32_t stepBytes;
  BRAID_CHECK(detail::ringConns(w, channel, &send, &recv, &stepBytes));
  const OpDesc& op = *w.op;
  const RingArgs a = detail::ringArgsFor(w, channel, op.count * dtypeSize(op.dtype), 1, stepBytes);
  if (a.ch.count == 0) return ncclSuccess;
  HostPrims<uint8_t, FuncCopy> prims(send, recv, op.sendbuff, op.recvbuff, FuncCopy{}, w.wait, w.cancel,
                                     w.tag);
  switch (op.coll) {
    case CollType::AllGather: ringAllGather(prims, a); break;
    case CollType::Broadcast: ringBroadcast(prims, a); break;
    default: return recordError(ncclInternalError, "%s is not a copy collective", collName(op.coll));
  }
  return prims.result();
}

const char* redKindName(RedKind k) {
  switch (k) {
    case RedKind::Sum: return "sum";
    case RedKind::Prod: return "prod";
    case RedKind::Max: return "max";
    case RedKind::Min: return "min";
    case RedKind::PreMulSum: return "premulsum";
    case RedKind::SumPostDiv: return "sumpostdiv";
  }
  return "unknown";
}

}  // namespace

ncclResult_t selectCollChannelFn(const OpDesc& op, CollChannelFn* fn) {
  *fn = nullptr;
  if (dtypeSize(op.dtype) == 0)
    return recordError(ncclInvalidArgument, "%s: invalid datatype %d", collName(op.coll), static_cast<int>(op.dtype));
  switch (op.coll) {
    case CollType::AllGather:
    case CollType::Broadcast: *fn = &runCopyChannel; return ncclSuccess;
    case CollType::AllReduce:
    case CollType::Reduce:
    case CollType::ReduceScatter:
      *fn = dtypeIsFloat(op.dtype) ? selectFloatCollFn(op.dtype, op.op.kind) : selectIntCollFn(op.dtype, op.op.kind);
      if (*fn == nullptr)
        return recordError(ncclInvalidArgument, "%s: reduction %s is not supported for datatype %s",
                           collName(op.coll), redKindName(op.op.kind), dtypeName(op.dtype));
      return ncclSuccess;
    default:
      return recordError(ncclInternalError, "%s is not a ring collective", collName(op.coll));
  }
}

}  // namespace braid
