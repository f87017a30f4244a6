// matmul_demo: the element types (float, IEEE half, bfloat16) with their own small float converters, the
// uneven split of a dimension across ranks, the deterministic input data and the verification tolerance.
// Header-only and free of NCCL/CUDA so the unit tests can check it directly.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace matmul {

// ---- 16-bit floating-point storage types -------------------------------------------------------------------

struct Half {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2 && sizeof(Bf16) == 2, "16-bit storage types must be 2 bytes");

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}
inline float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

// IEEE binary16 from float, round to nearest even; overflow gives infinity, NaN stays a (quiet) NaN.
inline uint16_t floatToHalfBits(float f) {
  const uint32_t x = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (absx >= 0x47800000u) return sign | 0x7c00u;  // >= 2^16 (or inf): infinity
  if (absx < 0x38800000u) {                        // below 2^-14: a subnormal half (or zero)
    // The subnormal unit is 2^-24; the scaled value is < 2^10, exact in float, and nearbyint rounds half to
    // even. A result of 0x400 is the smallest normal, whose encoding is the same bits.
    const float scaled = bitsFloat(absx) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t h = ((((absx >> 23) - 127u + 15u) << 10) | ((absx & 0x7fffffu) >> 13));
  const uint32_t rest = absx & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is still correct
  return static_cast<uint16_t>(sign | h);
}

inline float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // exact: mant < 2^10
    return sign ? -v : v;
  }
  if (exp == 31) return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

// bfloat16 from float, round to nearest even; NaN stays a quiet NaN.
inline uint16_t floatToBf16Bits(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16BitsToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

inline float toFloat(float v) { return v; }
inline float toFloat(Half v) { return halfBitsToFloat(v.bits); }
inline float toFloat(Bf16 v) { return bf16BitsToFloat(v.bits); }

template <typename T>
inline T fromFloat(float f);
template <>
inline float fromFloat<float>(float f) {
  return f;
}
template <>
inline Half fromFloat<Half>(float f) {
  return Half{floatToHalfBits(f)};
}
template <>
inline Bf16 fromFloat<Bf16>(float f) {
  return Bf16{floatToBf16Bits(f)};
}

// ---- element type as a run-time value ----------------------------------------------------------------------

enum class ElemType { kFloat, kHalf, kBf16 };

inline const char* typeName(ElemType t) {
  switch (t) {
    case ElemType::kFloat:
      return "float";
    case ElemType::kHalf:
      return "half";
    case ElemType::kBf16:
      return "bf16";
  }
  return "?";
}

inline bool parseType(const std::string& s, ElemType* out) {
  if (s == "float" || s == "fp32" || s == "float32") {
    *out = ElemType::kFloat;
  } else if (s == "half" || s == "fp16" || s == "float16") {
    *out = ElemType::kHalf;
  } else if (s == "bf16" || s == "bfloat16") {
    *out = ElemType::kBf16;
  } else {
    return false;
  }
  return true;
}

inline size_t typeSize(ElemType t) { return t == ElemType::kFloat ? 4 : 2; }

// Relative tolerance per type, applied to the natural scale of one element of C: sqrt(K) * max|a| * max|b|
// (a sum of K products of random sign has that RMS). float leaves room for a different summation order;
// half and bf16 for rounding each partial result to the type and summing partials in it (inner mode), a
// few units in the last place of the type at up to a few times the RMS.
inline double relTolerance(ElemType t) {
  switch (t) {
    case ElemType::kFloat:
      return 1e-4;
    case ElemType::kHalf:
      return 1e-2;
    case ElemType::kBf16:
      return 8e-2;
  }
  return 0;
}

inline double absTolerance(ElemType t, size_t k, double maxAbsA, double maxAbsB) {
  const double scale = std::sqrt(static_cast<double>(k > 0 ? k : 1)) * maxAbsA * maxAbsB;
  return relTolerance(t) * (scale > 0 ? scale : 1.0);
}

// ---- uneven split --------------------------------------------------------------------------------------------

// Part `index` of `total` items split over `parts`: the first total % parts parts get one item more, so the
// sizes differ by at most one and the parts tile [0, total) in rank order.
struct Range {
  size_t begin = 0;
  size_t count = 0;
};

inline Range splitRange(size_t total, int parts, int index) {
  const size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(index);
  const size_t base = total / p, extra = total % p;
  Range r;
  r.begin = i * base + (i < extra ? i : extra);
  r.count = base + (i < extra ? 1 : 0);
  return r;
}

// ---- input data ------------------------------------------------------------------------------------------------

// A value in [-1, 1) that depends only on (seed, matrix, index): every rank and the reference see the same
// matrices without shipping a generator state around.
inline float inputValue(uint64_t seed, uint64_t matrix, uint64_t index) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + matrix * 0xd1b54a32d192ed03ull + index;
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) * (2.0 / 16777216.0) - 1.0);  // 24 random bits
}

}  // namespace matmul
