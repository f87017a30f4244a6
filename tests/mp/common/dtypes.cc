// Multi-process test harness: datatype conversions written from the format definitions.
#include "mp/common/dtypes.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace mp {

size_t typeSize(ncclDataType_t t) {
  static const size_t kSizes[kNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (int)t >= 0 && (int)t < kNumTypes ? kSizes[(int)t] : 0;
}

const char* typeName(ncclDataType_t t) {
  static const char* kNames[kNumTypes] = {"int8", "uint8", "int32",  "uint32", "int64",   "uint64",
                                          "half", "float", "double", "bf16",   "fp8e4m3", "fp8e5m2"};
  return (int)t >= 0 && (int)t < kNumTypes ? kNames[(int)t] : "badtype";
}

const char* opName(int op) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? kNames[op] : "premulsum";
}

bool isFloatType(ncclDataType_t t) { return t >= ncclFloat16; }
bool isSignedInt(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

double unitRoundoff(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
      return std::ldexp(1.0, -11);
    case ncclBfloat16:
      return std::ldexp(1.0, -8);
    case ncclFloat32:
      return std::ldexp(1.0, -24);
    case ncclFloat64:
      return std::ldexp(1.0, -53);
    case ncclFloat8e4m3:
      return std::ldexp(1.0, -4);
    case ncclFloat8e5m2:
      return std::ldexp(1.0, -3);
    default:
      return 0;
  }
}

double minSubnormal(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
      return std::ldexp(1.0, -24);
    case ncclBfloat16:
      return std::ldexp(1.0, -133);
    case ncclFloat32:
      return std::ldexp(1.0, -149);
    case ncclFloat64:
      return 5e-324;
    case ncclFloat8e4m3:
      return std::ldexp(1.0, -9);
    case ncclFloat8e5m2:
      return std::ldexp(1.0, -16);
    default:
      return 0;
  }
}

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// ---- half ----
uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520: inf
  int exp = (int)(absx >> 23) - 127;
  if (exp < -25) return (uint16_t)sign;            // below half of the smallest subnormal
  uint32_t mant = (absx & 0x7fffffu) | 0x800000u;  // 24-bit significand
  int shift;
  uint32_t base;
  if (exp < -14) {  // subnormal half: value = m * 2^-24
    shift = 13 + (-14 - exp);
    base = 0;
  } else {
    shift = 13;
    base = (uint32_t)(exp + 15) << 10;
    mant &= 0x7fffffu;
  }
  uint32_t q = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) q++;
  return (uint16_t)(sign | (base + q));  // a mantissa carry rolls into the exponent correctly
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp((float)mant, -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp((float)(mant | 0x400u), exp - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}

// ---- bfloat16 ----
uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

float bf16ToFloat(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---- fp8 ----
double fp8ToDouble(uint8_t b, bool e4m3) {
  int sign = b >> 7;
  int expBits = e4m3 ? 4 : 5, manBits = e4m3 ? 3 : 2;
  int bias = e4m3 ? 7 : 15;
  int exp = (b >> manBits) & ((1 << expBits) - 1);
  int mant = b & ((1 << manBits) - 1);
  double v;
  if (e4m3) {
    if (exp == 15 && mant == 7) return NAN;
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
    return sign ? -v : v;
  }
  if (exp == 0)
    v = std::ldexp((double)mant, 1 - bias - manBits);
  else
    v = std::ldexp((double)(mant | (1 << manBits)), exp - bias - manBits);
  return sign ? -v : v;
}

uint8_t doubleToFp8(double v, bool e4m3) {
  if (std::isnan(v)) return e4m3 ? 0x7f : 0x7f;
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  double a = std::fabs(v);
  const double maxFinite = e4m3 ? 448.0 : 57344.0;
  if (!e4m3 && std::isinf(a)) return sign | 0x7c;
  if (a >= maxFinite) {
    if (e4m3) return sign | 0x7e;  // no infinity in e4m3: saturate
    // e5m2: values at or beyond the halfway point to the next binade step round to inf.
    return a >= 61440.0 ? (sign | 0x7c) : (sign | 0x7b);
  }
  // Nearest of the non-negative finite codes (0..maxcode), ties to the even code.
  int maxCode = e4m3 ? 0x7e : 0x7b;
  int lo = 0, hi = maxCode;
  while (lo < hi) {  // first code whose value >= a (codes are monotonic in value)
    int mid = (lo + hi) / 2;
    if (fp8ToDouble((uint8_t)mid, e4m3) < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  int c = lo;
  if (c > 0) {
    double up = fp8ToDouble((uint8_t)c, e4m3), dn = fp8ToDouble((uint8_t)(c - 1), e4m3);
    if (a - dn < up - a || (a - dn == up - a && ((c - 1) & 1) == 0)) c = c - 1;
  }
  return sign | (uint8_t)c;
}

double decodeFloat(ncclDataType_t t, uint64_t bits) {
  switch (t) {
    case ncclFloat16:
      return halfToFloat((uint16_t)bits);
    case ncclBfloat16:
      return bf16ToFloat((uint16_t)bits);
    case ncclFloat32: {
      uint32_t b = (uint32_t)bits;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case ncclFloat64: {
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    case ncclFloat8e4m3:
      return fp8ToDouble((uint8_t)bits, true);
    case ncclFloat8e5m2:
      return fp8ToDouble((uint8_t)bits, false);
    default:
      return (double)bits;
  }
}

uint64_t encodeFloat(ncclDataType_t t, double v) {
  switch (t) {
    case ncclFloat16:
      return floatToHalf((float)v);
    case ncclBfloat16:
      return floatToBf16((float)v);
    case ncclFloat32: {
      float f = (float)v;
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case ncclFloat64: {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    case ncclFloat8e4m3:
      return doubleToFp8(v, true);
    case ncclFloat8e5m2:
      return doubleToFp8(v, false);
    default:
      return (uint64_t)(int64_t)v;
  }
}

int64_t intAsSigned(ncclDataType_t t, uint64_t bits) {
  switch (t) {
    case ncclInt8:
      return (int8_t)(uint8_t)bits;
    case ncclInt32:
      return (int32_t)(uint32_t)bits;
    case ncclInt64:
      return (int64_t)bits;
    default:
      return (int64_t)truncBits(t, bits);
  }
}

uint64_t truncBits(ncclDataType_t t, uint64_t v) {
  size_t s = typeSize(t);
  return s >= 8 ? v : (v & ((1ull << (8 * s)) - 1));
}

uint64_t loadElem(const void* base, ncclDataType_t t, size_t idx) {
  size_t s = typeSize(t);
  uint64_t v = 0;
  std::memcpy(&v, (const char*)base + idx * s, s);  // little-endian host
  return v;
}

void storeElem(void* base, ncclDataType_t t, size_t idx, uint64_t bits) {
  size_t s = typeSize(t);
  std::memcpy((char*)base + idx * s, &bits, s);
}

std::string formatElem(ncclDataType_t t, uint64_t bits) {
  char buf[96];
  bits = truncBits(t, bits);
  if (isFloatType(t)) {
    std::snprintf(buf, sizeof buf, "%.9g (0x%llx)", decodeFloat(t, bits), (unsigned long long)bits);
  } else if (isSignedInt(t)) {
    std::snprintf(buf, sizeof buf, "%lld (0x%llx)", (long long)intAsSigned(t, bits), (unsigned long long)bits);
  } else {
    std::snprintf(buf, sizeof buf, "%llu (0x%llx)", (unsigned long long)bits, (unsigned long long)bits);
  }
  return buf;
}

}  // namespace mp
