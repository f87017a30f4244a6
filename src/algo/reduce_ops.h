// Reduction functors, one per RedKind, over every NCCL datatype (host C++ and CUDA device code). A functor
// has: operator()(a, b) the binary reduction; pre(x) applied once to a rank's own contribution when it
// enters the reduction (PreMulSum's scalar multiply); post(x) applied once to the final result
// (SumPostDiv's divide); kHasPre/kHasPost so hot loops skip identities at compile time.
// Integer sum/prod wrap (computed in unsigned arithmetic: no signed-overflow UB); low-precision floats
// compute in float and round back after every operation, as NCCL's device code does.
#pragma once

#include <cstdint>
#include <type_traits>

#include "algo/numeric_types.h"

namespace braid {

namespace detail {
template <typename T, bool IsInt = std::is_integral<T>::value>
struct Arith;

// Integers: wrapping add/mul through the unsigned type of the same width.
template <typename T>
struct Arith<T, true> {
  using U = typename std::make_unsigned<T>::type;
  BRAID_HDI static T add(T a, T b) { return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b))); }
  BRAID_HDI static T mul(T a, T b) {
    // uint8 operands promote to int: 255*255 fits. Wider types multiply as unsigned.
    using W = typename std::conditional<(sizeof(T) < sizeof(unsigned)), unsigned, U>::type;
    return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  }
  BRAID_HDI static T max(T a, T b) { return a > b ? a : b; }
  BRAID_HDI static T min(T a, T b) { return a < b ? a : b; }
};

// float/double: max/min ignore a NaN operand (fmax semantics, as NCCL's fmaxf), written as selects so
// the loops vectorise.
template <typename T, bool Low = IsLowPrecision<T>::value>
struct FloatArith {
  BRAID_HDI static T add(T a, T b) { return a + b; }
  BRAID_HDI static T mul(T a, T b) { return a * b; }
  BRAID_HDI static T max(T a, T b) { return (a > b || b != b) ? a : b; }
  BRAID_HDI static T min(T a, T b) { return (a < b || b != b) ? a : b; }
};
template <typename T>
struct FloatArith<T, true> {
  BRAID_HDI static T add(T a, T b) { return T(static_cast<float>(a) + static_cast<float>(b)); }
  BRAID_HDI static T mul(T a, T b) { return T(static_cast<float>(a) * static_cast<float>(b)); }
  BRAID_HDI static T max(T a, T b) {
    return T(FloatArith<float>::max(static_cast<float>(a), static_cast<float>(b)));
  }
  BRAID_HDI static T min(T a, T b) {
    return T(FloatArith<float>::min(static_cast<float>(a), static_cast<float>(b)));
  }
};
template <typename T>
struct Arith<T, false> : FloatArith<T> {};
}  // namespace detail

template <typename T>
struct FuncBase {
  static constexpr bool kHasPre = false;
  static constexpr bool kHasPost = false;
  BRAID_HDI T pre(T x) const { return x; }
  BRAID_HDI T post(T x) const { return x; }
};

template <typename T>
struct FuncSum : FuncBase<T> {
  BRAID_HDI T operator()(T a, T b) const { return detail::Arith<T>::add(a, b); }
};
template <typename T>
struct FuncProd : FuncBase<T> {
  BRAID_HDI T operator()(T a, T b) const { return detail::Arith<T>::mul(a, b); }
};
template <typename T>
struct FuncMax : FuncBase<T> {
  BRAID_HDI T operator()(T a, T b) const { return detail::Arith<T>::max(a, b); }
};
template <typename T>
struct FuncMin : FuncBase<T> {
  BRAID_HDI T operator()(T a, T b) const { return detail::Arith<T>::min(a, b); }
};

// Each rank's contribution is multiplied by `scalar` once, then everything is summed.
template <typename T>
struct FuncPreMulSum {
  static constexpr bool kHasPre = true;
  static constexpr bool kHasPost = false;
  T scalar;
  BRAID_HDI T operator()(T a, T b) const { return detail::Arith<T>::add(a, b); }
  BRAID_HDI T pre(T x) const { return detail::Arith<T>::mul(x, scalar); }
  BRAID_HDI T post(T x) const { return x; }
};

// Integer average: wrapping sum, then one division of the final value.
template <typename T>
struct FuncSumPostDiv {
  static_assert(std::is_integral<T>::value, "SumPostDiv is for integer types");
  static constexpr bool kHasPre = false;
  static constexpr bool kHasPost = true;
  uint64_t divisor;  // kept wide: nranks may exceed the range of an 8-bit type
  BRAID_HDI T operator()(T a, T b) const { return detail::Arith<T>::add(a, b); }
  BRAID_HDI T pre(T x) const { return x; }
  BRAID_HDI T post(T x) const {
    if (std::is_signed<T>::value) return static_cast<T>(static_cast<int64_t>(x) / static_cast<int64_t>(divisor));
    return static_cast<T>(static_cast<uint64_t>(x) / divisor);
  }
};

// Copy collectives (all-gather, broadcast) move bytes; the functor is never asked to reduce.
struct FuncCopy : FuncBase<uint8_t> {
  BRAID_HDI uint8_t operator()(uint8_t a, uint8_t) const { return a; }
};

}  // namespace braid
