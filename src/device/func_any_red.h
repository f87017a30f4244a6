// FuncAnyRed: the reduction functor that reads which reduction it is at run time (CollLaunchArgs::redKind), so one
// kernel per datatype serves every reduction that has no kernel of its own. Its reductions are those of
// algo/reduce_ops.h: PreMulSum's scalar multiplies each rank's contribution as it enters (pre), SumPostDiv (integers
// only) divides the final value (post), and the others leave both as identities.
// LL and the one-shot over peers apply it per element (they wait on flags, not on arithmetic); SIMPLE's reduceCopy
// reads the reduction once per call instead and runs that reduction's own loop (reduce_copy.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "algo/op_desc.h"
#include "algo/reduce_ops.h"

namespace braid {

#ifdef __CUDACC__
template <typename T>
struct FuncAnyRed {
  static constexpr bool kHasPre = true;
  static constexpr bool kHasPost = std::is_integral<T>::value;
  int32_t kind;
  T scalar;
  uint64_t divisor;
  __device__ __forceinline__ RedKind red() const { return static_cast<RedKind>(kind); }
  __device__ __forceinline__ T operator()(T a, T b) const {
    switch (red()) {
      case RedKind::Prod:
        return FuncProd<T>()(a, b);
      case RedKind::Max:
        return FuncMax<T>()(a, b);
      case RedKind::Min:
        return FuncMin<T>()(a, b);
      default:
        return FuncSum<T>()(a, b);  // Sum, PreMulSum, SumPostDiv
    }
  }
  // The product rounded on its own (never fused into the add that follows): the one-shot over peers adds this
  // rank's term in the thread that multiplied it, and a fused one would go in unrounded where the peers' terms
  // arrive rounded, so ranks could store different bits.
  __device__ __forceinline__ T pre(T x) const {
    if (red() != RedKind::PreMulSum) return x;
    if constexpr (std::is_same<T, float>::value)
      return __fmul_rn(x, scalar);
    else if constexpr (std::is_same<T, double>::value)
      return __dmul_rn(x, scalar);
    else
      return FuncProd<T>()(x, scalar);
  }
  __device__ __forceinline__ T post(T x) const {
    if constexpr (std::is_integral<T>::value) {
      if (red() == RedKind::SumPostDiv) return sumPostDiv().post(x);
    }
    return x;
  }
  __device__ __forceinline__ FuncPreMulSum<T> preMulSum() const {
    FuncPreMulSum<T> f;
    f.scalar = scalar;
    return f;
  }
  template <typename U = T, typename = std::enable_if_t<std::is_integral<U>::value>>
  __device__ __forceinline__ FuncSumPostDiv<T> sumPostDiv() const {
    FuncSumPostDiv<T> f;
    f.divisor = divisor;
    return f;
  }
};

template <typename Fn>
struct IsFuncAnyRed : std::false_type {};
template <typename T>
struct IsFuncAnyRed<FuncAnyRed<T>> : std::true_type {};
#endif  // __CUDACC__

// Which SIMPLE reducing kernels are compiled for one reduction alone (its loop inlined at every primitive, but for
// half and fp8, whose loops are out of line: kRcOutline in reduce_copy.h): the sums of every type, and the
// pre-multiplied sums of float, half and bfloat16 (NCCL's average of floating types, which data-parallel training
// runs at full size). Every other reduction runs on its type's FuncAnyRed kernel.
// Integer sums, products and pre-multiplied sums run on the unsigned type (the same wrapping bits), so a signed
// integer's FuncAnyRed kernel serves only max, min and the average.
template <typename T>
BRAID_HDI constexpr bool simpleOwnKernel(RedKind kind) {
  return kind == RedKind::Sum ||
         (kind == RedKind::PreMulSum &&
          (std::is_same<T, float>::value || std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value));
}
template <typename T>
BRAID_HDI constexpr bool simpleAnyServes(RedKind kind) {
  if (simpleOwnKernel<T>(kind)) return false;
  if (kind == RedKind::SumPostDiv) return std::is_integral<T>::value;
  if (std::is_integral<T>::value && std::is_signed<T>::value) return kind == RedKind::Max || kind == RedKind::Min;
  return true;
}

}  // namespace braid
