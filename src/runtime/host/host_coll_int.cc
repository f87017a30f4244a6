// Instantiations of the host ring collectives for the integer datatypes. Sum, prod and premulsum of a
// signed type run on the unsigned type of the same width (identical wrapping bits); max, min and the
// integer average (SumPostDiv) need the signedness.
#include "runtime/host/host_coll.h"

namespace braid {
namespace {

template <typename S, typename U>
CollChannelFn intFnFor(RedKind kind) {
  switch (kind) {
    case RedKind::Sum: return &runReduceChannel<U, FuncSum<U>>;
    case RedKind::Prod: return &runReduceChannel<U, FuncProd<U>>;
    case RedKind::PreMulSum: return &runReduceChannel<U, FuncPreMulSum<U>>;
    case RedKind::Max: return &runReduceChannel<S, FuncMax<S>>;
    case RedKind::Min: return &runReduceChannel<S, FuncMin<S>>;
    case RedKind::SumPostDiv: return &runReduceChannel<S, FuncSumPostDiv<S>>;
  }
  return nullptr;
}

}  // namespace

CollChannelFn selectIntCollFn(ncclDataType_t dtype, RedKind kind) {
  switch (dtype) {
    case ncclInt8: return intFnFor<int8_t, uint8_t>(kind);
    case ncclUint8: return intFnFor<uint8_t, uint8_t>(kind);
    case ncclInt32: return intFnFor<int32_t, uint32_t>(kind);
    case ncclUint32: return intFnFor<uint32_t, uint32_t>(kind);
    case ncclInt64: return intFnFor<int64_t, uint64_t>(kind);
    case ncclUint64: return intFnFor<uint64_t, uint64_t>(kind);
    default: return nullptr;
  }
}

}  // namespace braid
