// Host-visible face of the kernels: which compiled kernel serves a (collective, datatype, reduction), and
// the p2p kernel. Returned as the `const void*` cudaLaunchKernel takes; nullptr when no variant exists.
// The variant table (which (type, functor) pairs are compiled and how they fold) is dev_variants.h.
#pragma once

#include "collectives/op_desc.h"

namespace braid {

// For AllReduce/Reduce/ReduceScatter: the (T, Fn) kernel after folding (signed/unsigned sum/prod/premulsum
// share the unsigned kernel). For AllGather/Broadcast: the byte-copy kernel (count in bytes).
const void* devCollKernel(CollType coll, ncclDataType_t dtype, RedKind kind);
const void* devP2pKernel();
// True when the library was configured with -DBRAID_KERNELS=minimal (float and byte kernels only).
bool devKernelsMinimal();

}  // namespace braid
