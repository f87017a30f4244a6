// The low-latency kernels of every reduction: one LL kernel and one one-shot-over-peers kernel per datatype, the
// reduction read at run time (CollLaunchArgs::redKind) instead of compiled in. LL waits on flags, not on
// arithmetic: a warp-uniform switch per word costs nothing measurable there, and one kernel per type instead of one
// per (type, reduction) keeps the device build near its size (on 2 cores each kernel adds ~15 s). Float, half and
// bfloat16 sums keep their own kernels (packed adds, dev_kernels.cu), the only reductions with LL128 ones: LL128
// is chosen for mid sizes over NVLink, where the other reductions run SIMPLE. Included by the dev_any_*.cu files,
// which instantiate it.
#pragma once

#include <cstring>
#include <type_traits>

#include "device/coll_kernel.cuh"  // FuncAnyRed and its DevMakeFn, OneShotFn
#include "device/dev_variants.h"
#include "device/one_shot_peers.cuh"

#ifdef __CUDACC__

namespace braid {

template <typename T>
const void* anyRedKernel(DevLowLatency v) {
  switch (v) {
    case DevLowLatency::LL: return reinterpret_cast<const void*>(&collKernel<T, FuncAnyRed<T>, false, kDevProtoLL>);
    case DevLowLatency::Peers: return reinterpret_cast<const void*>(&oneShotPeersKernel<T, FuncAnyRed<T>>);
  }
  return nullptr;
}

}  // namespace braid

#endif  // __CUDACC__
