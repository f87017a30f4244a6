// packed_math: sums of the 16- and 8-bit floats two elements per instruction (fp16x2, bf16x2 adds; fp8 pairs
// through fp16x2), and of 8-bit integers four per word, used by the reduce-copy loop and the LL primitives in place of the per-element path
// (convert to float, add, round back). They give the same bits: one correctly rounded add in the wider
// format followed by the rounding to the narrow one equals rounding the exact sum once (fp16 and bf16
// against float, fp8 against fp16: the wider format has at least 2p+2 bits), overflow saturates or goes to
// inf the same way, and a NaN gives the same canonical NaN. tests/gpu/numeric_device_test.cu checks this
// for every pair of fp16 and of bf16 values (2^32 each) and every pair of fp8 and of 8-bit integer values.
#pragma once

#include <cstdint>
#include <type_traits>

#include "algo/numeric_types.h"
#include "algo/reduce_ops.h"
#include "device/op128.h"

#ifdef __CUDACC__

namespace braid {

// Which types have a packed sum on the architecture being compiled (always false in host passes).
template <typename T>
struct HasPackedSum : std::false_type {};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
template <> struct HasPackedSum<Half> : std::true_type {};
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
template <> struct HasPackedSum<BFloat16> : std::true_type {};
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
template <> struct HasPackedSum<Fp8E4M3> : std::true_type {};
template <> struct HasPackedSum<Fp8E5M2> : std::true_type {};
#endif
// 8-bit integers (signed sums run the unsigned kernel): four wrapping byte adds in one word, everywhere.
template <> struct HasPackedSum<uint8_t> : std::true_type {};
template <> struct HasPackedSum<int8_t> : std::true_type {};

// Whether functor Fn over T reduces through the packed sum.
template <typename T, typename Fn>
constexpr bool kPackedSum = HasPackedSum<T>::value && std::is_same<Fn, FuncSum<T>>::value;

// Sum of the elements packed in two 32-bit words (2 x 16-bit or 4 x 8-bit). The generic version is the
// per-element path, for architectures without the instructions below.
template <typename T>
__device__ __forceinline__ uint32_t packedSum32(uint32_t a, uint32_t b) {
  union Word {
    uint32_t u;
    T e[4 / sizeof(T)];
  } x, y;
  x.u = a;
  y.u = b;
#pragma unroll
  for (int k = 0; k < int(4 / sizeof(T)); ++k) x.e[k] = FuncSum<T>()(x.e[k], y.e[k]);
  return x.u;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
template <>
__device__ __forceinline__ uint32_t packedSum32<Half>(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
template <>
__device__ __forceinline__ uint32_t packedSum32<BFloat16>(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
#endif

// Bytes: add the low 7 bits of each byte (no carry can cross a byte), then set each top bit to the sum of
// the two top bits and the carry into it (xor). Wraps exactly as the per-byte unsigned add.
template <>
__device__ __forceinline__ uint32_t packedSum32<uint8_t>(uint32_t a, uint32_t b) {
  return ((a & 0x7f7f7f7fu) + (b & 0x7f7f7f7fu)) ^ ((a ^ b) & 0x80808080u);
}
template <>
__device__ __forceinline__ uint32_t packedSum32<int8_t>(uint32_t a, uint32_t b) {
  return packedSum32<uint8_t>(a, b);
}

// fp8: each 16-bit half of the word widens to fp16x2 exactly, adds, and rounds back with saturation.
#define BRAID_FP8_PACKED_SUM(T, KIND)                                                               \
  template <>                                                                                       \
  __device__ __forceinline__ uint32_t packedSum32<T>(uint32_t a, uint32_t b) {                      \
    uint32_t r = 0;                                                                                 \
    _Pragma("unroll") for (int k = 0; k < 2; ++k) {                                                  \
      const uint16_t a2 = static_cast<uint16_t>(a >> (16 * k)), b2 = static_cast<uint16_t>(b >> (16 * k)); \
      uint32_t ha, hb, hs;                                                                          \
      uint16_t s2;                                                                                  \
      asm("cvt.rn.f16x2." KIND "x2 %0, %1;" : "=r"(ha) : "h"(a2));                                  \
      asm("cvt.rn.f16x2." KIND "x2 %0, %1;" : "=r"(hb) : "h"(b2));                                  \
      asm("add.rn.f16x2 %0, %1, %2;" : "=r"(hs) : "r"(ha), "r"(hb));                                \
      asm("cvt.rn.satfinite." KIND "x2.f16x2 %0, %1;" : "=h"(s2) : "r"(hs));                        \
      r |= static_cast<uint32_t>(s2) << (16 * k);                                                   \
    }                                                                                               \
    return r;                                                                                       \
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
BRAID_FP8_PACKED_SUM(Fp8E4M3, "e4m3")
BRAID_FP8_PACKED_SUM(Fp8E5M2, "e5m2")
#endif
#undef BRAID_FP8_PACKED_SUM

template <typename T>
__device__ __forceinline__ uint64_t packedSum64(uint64_t a, uint64_t b) {
  const uint32_t lo = packedSum32<T>(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  const uint32_t hi = packedSum32<T>(static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b >> 32));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

template <typename T>
__device__ __forceinline__ Pack128 packedSum128(const Pack128& a, const Pack128& b) {
  return Pack128{packedSum64<T>(a.lo, b.lo), packedSum64<T>(a.hi, b.hi)};
}

}  // namespace braid

#endif  // __CUDACC__
