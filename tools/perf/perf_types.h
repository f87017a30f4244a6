// Data types of the perf tools: names as nccl-tests prints them, element sizes, and host-side codecs for the
// 16- and 8-bit float formats (half, bfloat16, fp8 e4m3/e5m2), so inputs and expected results can be built
// and compared on the host without CUDA's conversion headers. Header-only so unit tests can include it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "nccl.h"

namespace braid {
namespace perf {

constexpr int kNumTypes = 12;

// nccl-tests' order and names ("all" runs them in this order).
inline const ncclDataType_t* allTypes() {
  static const ncclDataType_t kTypes[kNumTypes] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                                   ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                                   ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  return kTypes;
}

inline const char* typeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "half";
    case ncclFloat32:
      return "float";
    case ncclFloat64:
      return "double";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat8e4m3:
      return "f8e4m3";
    case ncclFloat8e5m2:
      return "f8e5m2";
    default:
      return "?";
  }
}

inline size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

inline bool typeIsFloat(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || t == ncclFloat8e4m3 ||
         t == ncclFloat8e5m2;
}

// Mantissa bits (without the implicit one) of the float types; 0 for integers.
inline int mantissaBits(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
      return 10;
    case ncclFloat32:
      return 23;
    case ncclFloat64:
      return 52;
    case ncclBfloat16:
      return 7;
    case ncclFloat8e4m3:
      return 3;
    case ncclFloat8e5m2:
      return 2;
    default:
      return 0;
  }
}

// The largest N such that every integer 0..N is exactly representable (and, for the integer types, a sum
// of non-negative values up to N cannot overflow). Capped at 2^40 so that hashes stay cheap.
inline int64_t maxExactInt(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return 127;
    case ncclUint8:
      return 255;
    case ncclFloat16:
      return 2048;
    case ncclBfloat16:
      return 256;
    case ncclFloat8e4m3:
      return 16;
    case ncclFloat8e5m2:
      return 8;
    case ncclFloat32:
      return int64_t(1) << 24;
    case ncclInt32:
      return (int64_t(1) << 31) - 1;
    case ncclUint32:
      return (int64_t(1) << 32) - 1;
    default:
      return int64_t(1) << 40;
  }
}

// Generic binary minifloat: `eb` exponent bits, `mb` mantissa bits, IEEE-style bias. `finiteOnly` is the
// e4m3 flavour (no infinities; the all-ones exponent still holds normal numbers except mantissa all-ones,
// which is NaN). Round to nearest even; overflow saturates to infinity (IEEE) or NaN (finiteOnly).
inline uint32_t encodeMinifloat(double v, int eb, int mb, bool finiteOnly) {
  const uint32_t sign = std::signbit(v) ? 1u : 0u;
  const uint32_t signBit = sign << (eb + mb);
  const int bias = (1 << (eb - 1)) - 1;
  const uint32_t expMax = (1u << eb) - 1;
  const uint32_t nanBits = (expMax << mb) | ((1u << mb) - 1);
  if (std::isnan(v)) return signBit | nanBits;
  double a = std::fabs(v);
  // Largest finite value.
  double maxFinite = finiteOnly ? std::ldexp(2.0 - std::ldexp(2.0, -mb), int(expMax) - bias)
                                : std::ldexp(2.0 - std::ldexp(1.0, -mb), int(expMax) - 1 - bias);
  if (std::isinf(a)) return finiteOnly ? (signBit | nanBits) : (signBit | (expMax << mb));
  if (a == 0) return signBit;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int unbiased = e - 1;
  const int minNormal = 1 - bias;
  if (unbiased < minNormal) unbiased = minNormal;  // subnormal: fixed scale
  // Units in the last place at this exponent.
  double scaled = std::ldexp(a, mb - unbiased);
  double r = std::nearbyint(scaled);  // default rounding mode: to nearest even
  uint64_t q = static_cast<uint64_t>(r);
  if (q >= (uint64_t(2) << mb)) {  // rounding carried into the next binade
    q >>= 1;
    unbiased += 1;
  }
  if (std::ldexp(static_cast<double>(q), unbiased - mb) > maxFinite) {
    return finiteOnly ? (signBit | nanBits) : (signBit | (expMax << mb));
  }
  uint32_t expField, mant;
  if (q < (uint64_t(1) << mb)) {  // subnormal
    expField = 0;
    mant = static_cast<uint32_t>(q);
  } else {
    expField = static_cast<uint32_t>(unbiased + bias);
    mant = static_cast<uint32_t>(q - (uint64_t(1) << mb));
  }
  return signBit | (expField << mb) | mant;
}

inline double decodeMinifloat(uint32_t bits, int eb, int mb, bool finiteOnly) {
  const int bias = (1 << (eb - 1)) - 1;
  const uint32_t expMax = (1u << eb) - 1;
  const bool neg = (bits >> (eb + mb)) & 1u;
  const uint32_t expField = (bits >> mb) & expMax;
  const uint32_t mant = bits & ((1u << mb) - 1);
  double v;
  if (expField == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - mb);
  } else if (expField == expMax && !finiteOnly) {
    v = mant ? NAN : INFINITY;
  } else if (expField == expMax && finiteOnly && mant == (1u << mb) - 1) {
    v = NAN;
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -mb), int(expField) - bias);
  }
  return neg ? -v : v;
}

// Writes `v` (an exact value of the type, or the nearest one for floats) as element `t` at `dst`.
inline void encodeValue(ncclDataType_t t, double v, void* dst) {
  switch (t) {
    case ncclInt8: {
      int8_t x = static_cast<int8_t>(static_cast<int64_t>(v));
      std::memcpy(dst, &x, 1);
      break;
    }
    case ncclUint8: {
      uint8_t x = static_cast<uint8_t>(static_cast<int64_t>(v));
      std::memcpy(dst, &x, 1);
      break;
    }
    case ncclInt32: {
      int32_t x = static_cast<int32_t>(static_cast<int64_t>(v));
      std::memcpy(dst, &x, 4);
      break;
    }
    case ncclUint32: {
      uint32_t x = static_cast<uint32_t>(static_cast<int64_t>(v));
      std::memcpy(dst, &x, 4);
      break;
    }
    case ncclInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(dst, &x, 8);
      break;
    }
    case ncclUint64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(dst, &x, 8);
      break;
    }
    case ncclFloat32: {
      float x = static_cast<float>(v);
      std::memcpy(dst, &x, 4);
      break;
    }
    case ncclFloat64:
      std::memcpy(dst, &v, 8);
      break;
    case ncclFloat16: {
      uint16_t x = static_cast<uint16_t>(encodeMinifloat(v, 5, 10, false));
      std::memcpy(dst, &x, 2);
      break;
    }
    case ncclBfloat16: {
      uint16_t x = static_cast<uint16_t>(encodeMinifloat(v, 8, 7, false));
      std::memcpy(dst, &x, 2);
      break;
    }
    case ncclFloat8e4m3: {
      uint8_t x = static_cast<uint8_t>(encodeMinifloat(v, 4, 3, true));
      std::memcpy(dst, &x, 1);
      break;
    }
    case ncclFloat8e5m2: {
      uint8_t x = static_cast<uint8_t>(encodeMinifloat(v, 5, 2, false));
      std::memcpy(dst, &x, 1);
      break;
    }
    default:
      break;
  }
}

// Integer types are written with exact 64-bit arithmetic (a double would lose the low bits of int64).
inline void encodeInt(ncclDataType_t t, int64_t v, void* dst) {
  switch (t) {
    case ncclInt64:
      std::memcpy(dst, &v, 8);
      break;
    case ncclUint64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(dst, &x, 8);
      break;
    }
    default:
      encodeValue(t, static_cast<double>(v), dst);
      break;
  }
}

inline double decodeValue(ncclDataType_t t, const void* src) {
  switch (t) {
    case ncclInt8: {
      int8_t x;
      std::memcpy(&x, src, 1);
      return x;
    }
    case ncclUint8: {
      uint8_t x;
      std::memcpy(&x, src, 1);
      return x;
    }
    case ncclInt32: {
      int32_t x;
      std::memcpy(&x, src, 4);
      return x;
    }
    case ncclUint32: {
      uint32_t x;
      std::memcpy(&x, src, 4);
      return x;
    }
    case ncclInt64: {
      int64_t x;
      std::memcpy(&x, src, 8);
      return static_cast<double>(x);
    }
    case ncclUint64: {
      uint64_t x;
      std::memcpy(&x, src, 8);
      return static_cast<double>(x);
    }
    case ncclFloat32: {
      float x;
      std::memcpy(&x, src, 4);
      return x;
    }
    case ncclFloat64: {
      double x;
      std::memcpy(&x, src, 8);
      return x;
    }
    case ncclFloat16: {
      uint16_t x;
      std::memcpy(&x, src, 2);
      return decodeMinifloat(x, 5, 10, false);
    }
    case ncclBfloat16: {
      uint16_t x;
      std::memcpy(&x, src, 2);
      return decodeMinifloat(x, 8, 7, false);
    }
    case ncclFloat8e4m3: {
      uint8_t x;
      std::memcpy(&x, src, 1);
      return decodeMinifloat(x, 4, 3, true);
    }
    case ncclFloat8e5m2: {
      uint8_t x;
      std::memcpy(&x, src, 1);
      return decodeMinifloat(x, 5, 2, false);
    }
    default:
      return NAN;
  }
}

}  // namespace perf
}  // namespace braid
