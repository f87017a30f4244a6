// Value types for the low-precision NCCL datatypes (fp16, bf16, fp8 e4m3, fp8 e5m2) as host C++ that also
// compiles as CUDA device code. Conversions match NVIDIA's cuda_fp16/cuda_bf16/cuda_fp8 host paths bit for
// bit: round-to-nearest-even, canonical NaNs for fp16/bf16, and for fp8 the __NV_SATFINITE saturation NCCL
// uses (finite overflow and infinities become the largest finite value; NaN stays NaN). Arithmetic on these
// types is done by the reduction functors through float, rounding back after each operation.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define BRAID_HD __host__ __device__
#define BRAID_HDI __host__ __device__
#else
#define BRAID_HD
// The per-element helpers force inlining on the host: a translation unit instantiating many (type, op)
// loops exhausts GCC's inline budget, and an fp16 add left as a call per element made host fp16
// reductions ~10x slower than float.
#define BRAID_HDI __attribute__((always_inline))
#endif

namespace braid {

BRAID_HDI inline uint32_t floatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
BRAID_HDI inline float bitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// ---- fp16 (IEEE binary16) ----
// Written as selects, no branches, so reduction loops over fp16 vectorise. Subnormals are rounded by one
// float addition of a magic constant (round-to-nearest-even is the default float rounding mode).
BRAID_HDI inline uint16_t floatToHalfBitsSoft(float f) {
  const uint32_t x = floatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t u = x & 0x7fffffffu;
  // Below 2^-14: adding 0.5 leaves round(|f| * 2^24) in the low mantissa bits.
  const uint32_t sub = floatBits(bitsFloat(u) + 0.5f) - 0x3f000000u;
  const uint32_t odd = (u >> 13) & 1u;
  const uint32_t nrm = (u - 0x38000000u + 0xfffu + odd) >> 13;  // rebias 127 -> 15, round half to even
  uint32_t r = u < 0x38800000u ? sub : nrm;
  r = u >= 0x47800000u ? 0x7c00u : r;  // >= 65536 or inf (65520..65536 already round up to inf above)
  r |= sign;
  return static_cast<uint16_t>(u > 0x7f800000u ? 0x7fffu : r);  // NaN: canonical, as __float2half_rn
}

BRAID_HDI inline float halfBitsToFloatSoft(uint16_t h) {
  uint32_t o = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t e = o & 0x0f800000u;
  o += 0x38000000u;                                  // rebias 15 -> 127
  o += (e == 0x0f800000u) ? 0x38000000u : 0u;         // inf/NaN: exponent all ones
  // m * 2^-24, exact; the sign bit cleared, since x - x is -0 when the thread rounds downward (the sign is
  // or'ed in below).
  const uint32_t den = floatBits(bitsFloat(o + 0x00800000u) - bitsFloat(0x38800000u)) & 0x7fffffffu;
  o = (e == 0) ? den : o;
  return bitsFloat(o | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

// ---- bf16 ----
BRAID_HDI inline uint16_t floatToBf16BitsSoft(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // canonical NaN, as __float2bfloat16_rn
  const uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // RNE; overflow carries into inf
  return static_cast<uint16_t>(rounded >> 16);
}

// ---- fp8 (OCP FP8: e4m3 has no infinities, NaN = S.1111.111; e5m2 is IEEE-like) ----
// Port of __nv_cvt_double_to_fp8 with __NV_SATFINITE (the reference; also converts double scalars).
BRAID_HDI inline uint8_t doubleToFp8Bits(double x, bool e4m3) {
  uint64_t xbits;
  memcpy(&xbits, &x, sizeof(xbits));
  const uint32_t expBias = e4m3 ? 7u : 15u;
  const uint64_t sigBits = e4m3 ? 4u : 3u;
  const uint32_t mantMask = e4m3 ? 0x7u : 0x3u;
  const uint64_t minDenormO2 = e4m3 ? 0x3F50000000000000ull : 0x3EE0000000000000ull;
  const uint64_t overflowThreshold = e4m3 ? 0x407D000000000000ull : (0x40EE000000000000ull - 1ull);
  const uint8_t maxNorm = e4m3 ? 0x7Eu : 0x7Bu;
  const uint64_t minNorm = e4m3 ? 0x3F90000000000000ull : 0x3F10000000000000ull;
  const uint64_t dpInf = 0x7FF0000000000000ull;
  const uint64_t halfUlp = 1ull << (53ull - sigBits - 1ull);

  const uint8_t sign = static_cast<uint8_t>((xbits >> 63) << 7);
  const uint8_t exp = static_cast<uint8_t>(((static_cast<uint32_t>(xbits >> 52)) & 0x7FFu) - 1023u + expBias);
  uint8_t mant = static_cast<uint8_t>((xbits >> (53ull - sigBits)) & mantMask);
  const uint64_t absx = xbits & 0x7FFFFFFFFFFFFFFFull;
  uint8_t res;
  if (absx <= minDenormO2) {
    res = 0;
  } else if (absx > dpInf) {
    res = e4m3 ? 0x7Fu : static_cast<uint8_t>(0x7Eu | mant);
  } else if (absx > overflowThreshold) {
    res = maxNorm;  // __NV_SATFINITE
  } else if (absx >= minNorm) {
    res = static_cast<uint8_t>((exp << (sigBits - 1u)) | mant);
    const uint64_t round = xbits & ((halfUlp << 1ull) - 1ull);
    if (round > halfUlp || (round == halfUlp && (mant & 1u))) res = static_cast<uint8_t>(res + 1u);
  } else {
    const uint8_t shift = static_cast<uint8_t>(1u - exp);
    mant = static_cast<uint8_t>(mant | (1u << (sigBits - 1u)));
    res = static_cast<uint8_t>(mant >> shift);
    const uint64_t round = (xbits | (1ull << 52ull)) & ((halfUlp << (shift + 1ull)) - 1ull);
    if (round > (halfUlp << shift) || (round == (halfUlp << shift) && (res & 1u))) res = static_cast<uint8_t>(res + 1u);
  }
  return static_cast<uint8_t>(res | sign);
}

// The same conversion on float bits, written as selects so the hot loops vectorise (no doubles, no
// branches). Agrees with doubleToFp8Bits for every float (tests check it).
BRAID_HDI inline uint8_t floatToFp8BitsSoft(float f, bool e4m3) {
  const uint32_t x = floatBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t u = x & 0x7fffffffu;
  const uint32_t dropped = e4m3 ? 20u : 21u;                      // 23 - mantissa bits
  const uint32_t rebias = (e4m3 ? 120u : 112u) << 23;             // 127 - bias
  const uint32_t minNorm = e4m3 ? 0x3C800000u : 0x38800000u;      // 2^-6, 2^-14
  // Subnormal: adding 2^14 (e4m3) / 2^7 (e5m2) leaves round(|f| / smallest subnormal) in the low bits.
  const uint32_t magic = e4m3 ? 0x46800000u : 0x43000000u;
  const uint32_t sub = floatBits(bitsFloat(u) + bitsFloat(magic)) - magic;
  const uint32_t odd = (u >> dropped) & 1u;
  const uint32_t nrm = (u - rebias + ((1u << (dropped - 1u)) - 1u) + odd) >> dropped;
  uint32_t r = u < minNorm ? sub : nrm;
  // Past maxnorm + 1/2 ulp (464 for e4m3; 61440, the tie that would round to inf, for e5m2): saturate.
  const bool sat = e4m3 ? u > 0x43E80000u : u >= 0x47700000u;
  r = sat ? (e4m3 ? 0x7Eu : 0x7Bu) : r;
  const uint32_t nan = e4m3 ? 0x7Fu : (0x7Eu | ((x >> 21) & 0x3u));
  r = u > 0x7f800000u ? nan : r;
  return static_cast<uint8_t>(r | sign);
}

BRAID_HDI inline float fp8e4m3BitsToFloatSoft(uint8_t b) {
  uint32_t o = static_cast<uint32_t>(b & 0x7fu) << 20;
  const uint32_t e = o & 0x07800000u;
  o += 120u << 23;                                                                        // rebias 7 -> 127
  const uint32_t den = floatBits(bitsFloat(o + 0x00800000u) - bitsFloat(121u << 23)) & 0x7fffffffu;  // m * 2^-9
  o = (e == 0) ? den : o;
  o = ((b & 0x7fu) == 0x7fu) ? 0x7fffffffu : o;  // the only NaN encoding (no infinities)
  return bitsFloat(o | (static_cast<uint32_t>(b & 0x80u) << 24));
}
// e5m2 is the top byte of an fp16.
BRAID_HDI inline float fp8e5m2BitsToFloatSoft(uint8_t b) { return halfBitsToFloatSoft(static_cast<uint16_t>(b << 8)); }

// ---- The conversions the value types use ----
// Device code converts with the hardware's cvt instructions (one instruction each, where the software
// versions above take 10-25 integer operations per element: enough to make half and fp8 reductions
// ALU-bound on the few SMs a collective runs on: fp16 all-reduce 195 GB/s against 307 with cvt, fp8 145 against
// 298, at 64 MB on 2xH200). tests/gpu/numeric_device_test.cu checks them against the software versions for every
// input (all 2^32 floats, every 8/16-bit pattern): the same bits, except that a NaN may come out as a
// NaN of other bits (the hardware's canonical NaNs, as in NCCL's device code).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
#define BRAID_HW_F16_CVT 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define BRAID_HW_BF16_CVT 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define BRAID_HW_FP8_CVT 1
#endif

BRAID_HDI inline uint16_t floatToHalfBits(float f) {
#ifdef BRAID_HW_F16_CVT
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  return floatToHalfBitsSoft(f);
#endif
}
BRAID_HDI inline float halfBitsToFloat(uint16_t h) {
#ifdef BRAID_HW_F16_CVT
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return halfBitsToFloatSoft(h);
#endif
}
BRAID_HDI inline uint16_t floatToBf16Bits(float f) {
#ifdef BRAID_HW_BF16_CVT
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  return floatToBf16BitsSoft(f);
#endif
}
BRAID_HDI inline float bf16BitsToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }
BRAID_HDI inline uint8_t floatToFp8Bits(float f, bool e4m3) {
#ifdef BRAID_HW_FP8_CVT
  uint16_t r;
  if (e4m3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));
  }
  return static_cast<uint8_t>(r & 0xffu);
#else
  return floatToFp8BitsSoft(f, e4m3);
#endif
}
BRAID_HDI inline float fp8e4m3BitsToFloat(uint8_t b) {
#ifdef BRAID_HW_FP8_CVT
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(static_cast<uint16_t>(b)));
  return halfBitsToFloat(static_cast<uint16_t>(h2 & 0xffffu));
#else
  return fp8e4m3BitsToFloatSoft(b);
#endif
}
// e5m2 is the top byte of an fp16 (exact).
BRAID_HDI inline float fp8e5m2BitsToFloat(uint8_t b) { return halfBitsToFloat(static_cast<uint16_t>(b << 8)); }

// Storage-compatible value types (one plain bits member, trivially copyable, same size as the wire format).
struct Half {
  uint16_t bits;
  Half() = default;
  BRAID_HDI explicit Half(float f) : bits(floatToHalfBits(f)) {}
  BRAID_HDI static Half fromBits(uint16_t b) { Half h; h.bits = b; return h; }
  BRAID_HDI explicit operator float() const { return halfBitsToFloat(bits); }
};
struct BFloat16 {
  uint16_t bits;
  BFloat16() = default;
  BRAID_HDI explicit BFloat16(float f) : bits(floatToBf16Bits(f)) {}
  BRAID_HDI static BFloat16 fromBits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  BRAID_HDI explicit operator float() const { return bf16BitsToFloat(bits); }
};
struct Fp8E4M3 {
  uint8_t bits;
  Fp8E4M3() = default;
  BRAID_HDI explicit Fp8E4M3(float f) : bits(floatToFp8Bits(f, true)) {}
  BRAID_HDI static Fp8E4M3 fromBits(uint8_t b) { Fp8E4M3 h; h.bits = b; return h; }
  BRAID_HDI explicit operator float() const { return fp8e4m3BitsToFloat(bits); }
};
struct Fp8E5M2 {
  uint8_t bits;
  Fp8E5M2() = default;
  BRAID_HDI explicit Fp8E5M2(float f) : bits(floatToFp8Bits(f, false)) {}
  BRAID_HDI static Fp8E5M2 fromBits(uint8_t b) { Fp8E5M2 h; h.bits = b; return h; }
  BRAID_HDI explicit operator float() const { return fp8e5m2BitsToFloat(bits); }
};

// Low-precision floats compute through float; everything else natively.
template <typename T>
struct IsLowPrecision { static constexpr bool value = false; };
template <> struct IsLowPrecision<Half> { static constexpr bool value = true; };
template <> struct IsLowPrecision<BFloat16> { static constexpr bool value = true; };
template <> struct IsLowPrecision<Fp8E4M3> { static constexpr bool value = true; };
template <> struct IsLowPrecision<Fp8E5M2> { static constexpr bool value = true; };

}  // namespace braid
