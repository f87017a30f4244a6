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

#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"
#include "device/one_shot_peers.cuh"

#ifdef __CUDACC__

namespace braid {

// Any RedKind over T. PreMulSum's scalar multiplies each rank's contribution as it enters (pre); SumPostDiv (integers
// only) divides the final value (post); the others leave both as identities.
template <typename T>
struct FuncAnyRed {
  static constexpr bool kHasPre = true;
  static constexpr bool kHasPost = std::is_integral<T>::value;
  int32_t kind;
  T scalar;
  uint64_t divisor;
  __device__ __forceinline__ T operator()(T a, T b) const {
    switch (static_cast<RedKind>(kind)) {
      case RedKind::Prod: return FuncProd<T>()(a, b);
      case RedKind::Max: return FuncMax<T>()(a, b);
      case RedKind::Min: return FuncMin<T>()(a, b);
      default: return FuncSum<T>()(a, b);  // Sum, PreMulSum, SumPostDiv
    }
  }
  // The product rounded on its own (never fused into the add that follows): the one-shot over peers adds this
  // rank's term in the thread that multiplied it, and a fused one would go in unrounded where the peers' terms
  // arrive rounded, so ranks could store different bits.
  __device__ __forceinline__ T pre(T x) const {
    if (static_cast<RedKind>(kind) != RedKind::PreMulSum) return x;
    if constexpr (std::is_same<T, float>::value) return __fmul_rn(x, scalar);
    else if constexpr (std::is_same<T, double>::value) return __dmul_rn(x, scalar);
    else return FuncProd<T>()(x, scalar);
  }
  __device__ __forceinline__ T post(T x) const {
    if constexpr (std::is_integral<T>::value) {
      if (static_cast<RedKind>(kind) == RedKind::SumPostDiv) {
        FuncSumPostDiv<T> f;
        f.divisor = divisor;
        return f.post(x);
      }
    }
    return x;
  }
};

template <typename T>
struct DevMakeFn<FuncAnyRed<T>> {
  static __device__ FuncAnyRed<T> make(const CollLaunchArgs& a) {
    FuncAnyRed<T> f;
    f.kind = a.redKind;
    const FuncPreMulSum<T> m = DevMakeFn<FuncPreMulSum<T>>::make(a);
    f.scalar = m.scalar;
    f.divisor = a.divisor == 0 ? 1 : a.divisor;
    return f;
  }
};

// The 2-rank one-shot runs on these kernels too; the executor asks for it only where both ranks get the same bits
// (oneShotExact: not float max, min or pre-multiplied sums).
template <typename T>
struct OneShotFn<FuncAnyRed<T>> : std::true_type {};

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
