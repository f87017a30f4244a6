// Low-precision value types and reduction functors: exhaustive round trips of every fp16/bf16/fp8 value,
// rounding (ties to even) checked against independent references (the compiler's _Float16 and a
// brute-force nearest-value search for fp8), saturation and NaN/Inf per NVIDIA's __NV_SATFINITE
// conversions, and the functors' wrapping, NaN, pre-op and post-op behaviour.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "algo/numeric_types.h"
#include "algo/reduce_ops.h"
#include "runtime/host/host_f16c.h"

namespace braid {
namespace {

bool isNanF(float f) { return f != f; }

// ---- fp16 ----
TEST(Half, RoundTripsEveryValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = halfBitsToFloat(uint16_t(b));
    const bool nan = ((b >> 10) & 0x1f) == 0x1f && (b & 0x3ff) != 0;
    if (nan) {
      EXPECT_TRUE(isNanF(f)) << b;
      EXPECT_EQ(floatToHalfBits(f), 0x7fff) << b;  // canonical NaN, as __float2half_rn
    } else {
      EXPECT_EQ(floatToHalfBits(f), b) << std::hex << b;
    }
  }
}

TEST(Half, KnownValuesAndTies) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7bff);   // below the midpoint to 65536
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00);   // midpoint: ties to even = inf
  EXPECT_EQ(floatToHalfBits(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-INFINITY), 0xfc00);
  EXPECT_EQ(floatToHalfBits(2049.0f), 0x6800);    // tie between 2048 (even) and 2050
  EXPECT_EQ(floatToHalfBits(2051.0f), 0x6802);    // tie between 2050 and 2052 (even)
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even zero
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie to even 2
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into the smallest normal
}

#if defined(__FLT16_MAX__)
TEST(Half, MatchesCompilerFloat16OnRandomAndMidpoints) {
  std::mt19937 rng(7);
  auto ref = [](float f) {
    _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
  };
  for (int i = 0; i < 2000000; ++i) {
    const float f = bitsFloat(rng());
    if (isNanF(f)) continue;
    ASSERT_EQ(floatToHalfBits(f), ref(f)) << std::hexfloat << f;
  }
  // Every midpoint between adjacent finite halves, and one float either side of it.
  for (uint32_t b = 0; b < 0x7bff; ++b) {
    const float mid = (halfBitsToFloat(uint16_t(b)) + halfBitsToFloat(uint16_t(b + 1))) / 2;  // exact in float
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), -mid}) {
      ASSERT_EQ(floatToHalfBits(f), ref(f)) << std::hexfloat << f;
    }
  }
}
#endif

// ---- bf16 ----
TEST(BFloat16, RoundTripsEveryValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16BitsToFloat(uint16_t(b));
    if (isNanF(f)) {
      EXPECT_EQ(floatToBf16Bits(f), 0x7fff) << b;
    } else {
      EXPECT_EQ(floatToBf16Bits(f), b) << std::hex << b;
    }
  }
}

TEST(BFloat16, TiesOverflowAndNan) {
  EXPECT_EQ(floatToBf16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie: down to even
  EXPECT_EQ(floatToBf16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie: up to even
  EXPECT_EQ(floatToBf16Bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(floatToBf16Bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(floatToBf16Bits(-INFINITY), 0xff80);
  EXPECT_EQ(floatToBf16Bits(NAN), 0x7fff);
  // Against a reference: the nearest of the two neighbours by exact float arithmetic (ties to even).
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = rng();
    const float f = bitsFloat(x);
    if (isNanF(f) || std::isinf(f)) continue;
    const uint32_t lo = x & 0xffff0000u, hi = lo + 0x10000u;
    const double dl = std::fabs(double(bitsFloat(lo)) - f);
    // Past the largest finite value the upper neighbour is infinity, which IEEE rounding treats as 2^128.
    const double hv = std::isinf(bitsFloat(hi)) ? std::copysign(std::ldexp(1.0, 128), f) : double(bitsFloat(hi));
    const double dh = std::fabs(hv - f);
    const uint32_t want = (dl < dh || (dl == dh && ((lo >> 16) & 1) == 0)) ? lo : hi;
    ASSERT_EQ(floatToBf16Bits(f), want >> 16) << std::hexfloat << f;
  }
}

// ---- fp8 ----
struct Fp8Format {
  bool e4m3;
  float (*toFloat)(uint8_t);
  float maxFinite;
};
const Fp8Format kE4M3{true, fp8e4m3BitsToFloat, 448.0f};
const Fp8Format kE5M2{false, fp8e5m2BitsToFloat, 57344.0f};

bool fp8IsNan(const Fp8Format& f, uint8_t b) { return isNanF(f.toFloat(b)); }

// Brute force: nearest finite value (ties to the even code), saturating to the largest finite value.
uint8_t fp8Reference(const Fp8Format& fmt, float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double ax = std::fabs(double(x));
  if (ax >= fmt.maxFinite) return sign | (fmt.e4m3 ? 0x7e : 0x7b);
  uint8_t best = 0;
  double bestErr = INFINITY;
  for (int b = 0; b < 0x80; ++b) {
    const float v = fmt.toFloat(uint8_t(b));
    if (isNanF(v) || std::isinf(v)) continue;
    const double err = std::fabs(double(v) - ax);
    if (err < bestErr || (err == bestErr && (b & 1) == 0)) {
      best = uint8_t(b);
      bestErr = err;
    }
  }
  return sign | best;
}

void checkFp8(const Fp8Format& fmt) {
  int finite = 0;
  for (int b = 0; b < 256; ++b) {
    const float f = fmt.toFloat(uint8_t(b));
    const uint8_t back = doubleToFp8Bits(double(f), fmt.e4m3);
    if (fp8IsNan(fmt, uint8_t(b))) {
      EXPECT_TRUE(fp8IsNan(fmt, back)) << b;
    } else if (std::isinf(f)) {
      EXPECT_EQ(back, (b & 0x80) | 0x7b) << b;  // e5m2 inf saturates to the largest finite value
    } else {
      EXPECT_EQ(back, b) << "code " << b << " value " << f;
      ++finite;
    }
  }
  EXPECT_EQ(finite, fmt.e4m3 ? 254 : 248);
  // Midpoints between all adjacent finite values and their neighbours, plus random floats.
  for (int b = 0; b < 0x7f; ++b) {
    const float a = fmt.toFloat(uint8_t(b)), c = fmt.toFloat(uint8_t(b + 1));
    if (isNanF(c) || std::isinf(c)) continue;
    const float mid = (a + c) / 2;
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), -mid}) {
      ASSERT_EQ(doubleToFp8Bits(double(f), fmt.e4m3), fp8Reference(fmt, f)) << (fmt.e4m3 ? "e4m3 " : "e5m2 ") << f;
    }
  }
  std::mt19937 rng(fmt.e4m3 ? 3 : 5);
  std::uniform_real_distribution<float> mag(-20.0f, 18.0f);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::ldexp(1.0f + float(rng() % 4096) / 4096.0f, int(mag(rng))) * ((rng() & 1) ? -1.0f : 1.0f);
    ASSERT_EQ(doubleToFp8Bits(double(f), fmt.e4m3), fp8Reference(fmt, f)) << (fmt.e4m3 ? "e4m3 " : "e5m2 ") << f;
  }
}

TEST(Fp8, E4M3RoundTripAndRounding) { checkFp8(kE4M3); }
TEST(Fp8, E5M2RoundTripAndRounding) { checkFp8(kE5M2); }

// The integer-only float path (used by the hot loops) against the port of NVIDIA's double conversion:
// every exponent with mantissas that probe each rounding position, plus random bit patterns.
TEST(Fp8, FloatPathMatchesDoublePort) {
  std::mt19937 rng(13);
  auto check = [](uint32_t bits) {
    const float f = bitsFloat(bits);
    for (bool e4m3 : {true, false}) {
      const uint8_t a = floatToFp8Bits(f, e4m3), b = doubleToFp8Bits(double(f), e4m3);
      if (a != b) {
        ADD_FAILURE() << std::hex << "bits 0x" << bits << (e4m3 ? " e4m3 " : " e5m2 ") << int(a) << " vs " << int(b);
        return false;
      }
    }
    return true;
  };
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t exp = 0; exp < 256; ++exp)
      for (uint32_t top = 0; top < 16; ++top)
        for (uint32_t low : {0u, 1u, 0x7ffffu, 0x80000u, 0x80001u, 0xfffffu, 0x40000u, 0x3ffffu, 0x100000u >> 1})
          for (uint32_t pos = 0; pos < 24; pos += 3) {
            const uint32_t mant = ((top << 19) | (low & 0x7ffffu)) ^ ((1u << pos) - 1u) * (pos & 1u);
            if (!check((sign << 31) | (exp << 23) | (mant & 0x7fffffu))) return;
          }
  for (int i = 0; i < 4000000; ++i)
    if (!check(rng())) return;
}

TEST(Fp8, SaturationNanAndSubnormals) {
  EXPECT_EQ(Fp8E4M3(448.0f).bits, 0x7e);
  EXPECT_EQ(Fp8E4M3(464.0f).bits, 0x7e);
  EXPECT_EQ(Fp8E4M3(1e9f).bits, 0x7e);
  EXPECT_EQ(Fp8E4M3(INFINITY).bits, 0x7e);
  EXPECT_EQ(Fp8E4M3(-INFINITY).bits, 0xfe);
  EXPECT_EQ(Fp8E4M3(NAN).bits & 0x7f, 0x7f);
  EXPECT_TRUE(isNanF(float(Fp8E4M3::fromBits(0x7f))));
  EXPECT_TRUE(isNanF(float(Fp8E4M3::fromBits(0xff))));
  EXPECT_EQ(float(Fp8E4M3::fromBits(0x7e)), 448.0f);
  EXPECT_EQ(Fp8E4M3(std::ldexp(1.0f, -9)).bits, 0x01);
  EXPECT_EQ(Fp8E4M3(std::ldexp(1.0f, -10)).bits, 0x00);  // tie to even zero
  EXPECT_EQ(Fp8E4M3(std::ldexp(1.5f, -10)).bits, 0x01);
  EXPECT_EQ(Fp8E4M3(-std::ldexp(1.0f, -12)).bits, 0x80);  // underflow keeps the sign
  EXPECT_EQ(Fp8E5M2(57344.0f).bits, 0x7b);
  EXPECT_EQ(Fp8E5M2(61440.0f).bits, 0x7b);
  EXPECT_EQ(Fp8E5M2(INFINITY).bits, 0x7b);
  EXPECT_EQ(Fp8E5M2(-1e30f).bits, 0xfb);
  EXPECT_TRUE(isNanF(float(Fp8E5M2(NAN))));
  EXPECT_TRUE(std::isinf(float(Fp8E5M2::fromBits(0x7c))));
  EXPECT_EQ(Fp8E5M2(std::ldexp(1.0f, -16)).bits, 0x01);
  EXPECT_EQ(float(Fp8E5M2(1.25f)), 1.25f);
  EXPECT_EQ(float(Fp8E5M2(1.125f)), 1.0f);  // tie to even
  EXPECT_EQ(float(Fp8E5M2(1.375f)), 1.5f);  // tie to even
}

// ---- functors ----
// The host's F16C fp16 sum (host_f16c.cc) gives the bits of FuncSum<Half> (float add, round to nearest
// even, canonical NaN): every fp16 value against operands chosen at the edges (zeros, subnormals, the
// largest finite values, infinities, NaNs of both signs and other payloads), then 4M random pairs; lengths
// that are not a multiple of the 8-lane vector, with one and two destinations.
TEST(Half, F16cSumMatchesThePortableSum) {
#if BRAID_HOST_F16C
  if (!hostHasF16c()) GTEST_SKIP() << "this CPU lacks AVX2 or F16C";
  auto portable = [](uint16_t a, uint16_t b) { return FuncSum<Half>()(Half::fromBits(a), Half::fromBits(b)).bits; };
  const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
                            0x7bfe, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xfc01, 0x7fff, 0xffff, 0x3555, 0x0200};
  std::vector<uint16_t> a, b;
  for (uint16_t e : edges)
    for (uint32_t v = 0; v < 65536; ++v) a.push_back(static_cast<uint16_t>(v)), b.push_back(e);
  std::mt19937 rng(5);
  for (int i = 0; i < (1 << 22); ++i) a.push_back(static_cast<uint16_t>(rng())), b.push_back(static_cast<uint16_t>(rng()));
  const size_t n = a.size() - 3;  // a tail past the last full vector
  std::vector<uint16_t> d0(n + 1, 0xa5a5), d1(n + 1, 0xa5a5);
  hostSumHalfF16c(a.data(), b.data(), d0.data(), d1.data(), n);
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t want = portable(a[i], b[i]);
    if ((d0[i] != want || d1[i] != want) && bad++ < 5)
      ADD_FAILURE() << std::hex << "0x" << a[i] << " + 0x" << b[i] << ": 0x" << d0[i] << " / 0x" << d1[i] << ", want 0x" << want;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(d0[n], 0xa5a5);
  EXPECT_EQ(d1[n], 0xa5a5);
  std::vector<uint16_t> e(11, 0xa5a5);
  hostSumHalfF16c(a.data(), b.data(), e.data(), nullptr, 10);  // one destination, one vector and a tail
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(e[i], portable(a[i], b[i])) << i;
  EXPECT_EQ(e[10], 0xa5a5);
#else
  GTEST_SKIP() << "no F16C path in this build (x86-64 GCC only)";
#endif
}

// A thread that rounds downward (fesetround, an application's choice the executor's threads inherit) must
// still decode +0 as +0: the subnormal decode subtracts x - x, which is -0 there.
TEST(Half, ZeroStaysPositiveWhenRoundingDownward) {
  volatile uint16_t zero16 = 0;
  volatile uint8_t zero8 = 0;
  const int old = std::fegetround();
  ASSERT_EQ(std::fesetround(FE_DOWNWARD), 0);
  const uint32_t h = floatBits(halfBitsToFloat(zero16));
  const uint32_t e4 = floatBits(fp8e4m3BitsToFloat(zero8));
  const uint32_t e5 = floatBits(fp8e5m2BitsToFloat(zero8));
  const uint16_t sum = FuncSum<Half>()(Half::fromBits(zero16), Half::fromBits(zero16)).bits;
  std::fesetround(old);
  EXPECT_EQ(h, 0u);
  EXPECT_EQ(e4, 0u);
  EXPECT_EQ(e5, 0u);
  EXPECT_EQ(sum, 0u);
}

TEST(ReduceOps, IntegerWrapAndSignedness) {
  EXPECT_EQ(FuncSum<int8_t>()(int8_t(127), int8_t(1)), int8_t(-128));
  EXPECT_EQ(FuncSum<uint8_t>()(uint8_t(200), uint8_t(100)), uint8_t(44));
  EXPECT_EQ(FuncSum<int32_t>()(INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(FuncSum<int64_t>()(INT64_MAX, 1), INT64_MIN);
  EXPECT_EQ(FuncProd<int8_t>()(int8_t(-128), int8_t(-1)), int8_t(-128));
  EXPECT_EQ(FuncProd<uint8_t>()(uint8_t(16), uint8_t(17)), uint8_t(16));
  EXPECT_EQ(FuncProd<int32_t>()(65536, 65536), 0);
  EXPECT_EQ(FuncProd<int64_t>()(INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(FuncMax<int8_t>()(int8_t(-1), int8_t(1)), 1);
  EXPECT_EQ(FuncMax<uint8_t>()(uint8_t(255), uint8_t(1)), 255);
  EXPECT_EQ(FuncMin<int32_t>()(-5, 3), -5);
  EXPECT_EQ(FuncMin<uint64_t>()(~0ull, 3ull), 3ull);
}

TEST(ReduceOps, FloatsAndNan) {
  EXPECT_EQ(FuncSum<float>()(1.5f, 2.25f), 3.75f);
  EXPECT_EQ(FuncMax<float>()(NAN, 2.0f), 2.0f);  // fmax semantics
  EXPECT_EQ(FuncMax<float>()(2.0f, NAN), 2.0f);
  EXPECT_EQ(FuncMin<double>()(NAN, -1.0), -1.0);
  EXPECT_EQ(FuncMin<double>()(-3.0, 1.0), -3.0);
}

TEST(ReduceOps, LowPrecisionRoundsPerOperation) {
  EXPECT_EQ(float(FuncSum<Half>()(Half(2048.0f), Half(1.0f))), 2048.0f);  // 2049 ties to even
  EXPECT_EQ(float(FuncSum<Half>()(Half(2048.0f), Half(3.0f))), 2052.0f);  // 2051 ties to even
  EXPECT_EQ(float(FuncSum<BFloat16>()(BFloat16(256.0f), BFloat16(1.0f))), 256.0f);
  EXPECT_EQ(float(FuncSum<Fp8E4M3>()(Fp8E4M3(448.0f), Fp8E4M3(448.0f))), 448.0f);  // saturates
  EXPECT_EQ(float(FuncSum<Fp8E5M2>()(Fp8E5M2(57344.0f), Fp8E5M2(57344.0f))), 57344.0f);
  EXPECT_EQ(float(FuncProd<Fp8E4M3>()(Fp8E4M3(3.0f), Fp8E4M3(3.0f))), 9.0f);
  EXPECT_EQ(float(FuncProd<Fp8E4M3>()(Fp8E4M3(3.0f), Fp8E4M3(7.0f))), 20.0f);  // 21 -> 20 (step 2, tie... to even)
  EXPECT_EQ(float(FuncMax<Half>()(Half(-1.0f), Half(0.5f))), 0.5f);
  EXPECT_EQ(float(FuncMin<BFloat16>()(BFloat16(-1.0f), BFloat16(0.5f))), -1.0f);
  EXPECT_TRUE(isNanF(float(FuncSum<Half>()(Half(NAN), Half(1.0f)))));
}

TEST(ReduceOps, PreMulSumAndSumPostDiv) {
  FuncPreMulSum<float> pm;
  pm.scalar = 0.25f;
  EXPECT_TRUE(FuncPreMulSum<float>::kHasPre);
  EXPECT_FALSE(FuncPreMulSum<float>::kHasPost);
  EXPECT_EQ(pm.pre(8.0f), 2.0f);
  EXPECT_EQ(pm(pm.pre(8.0f), pm.pre(4.0f)), 3.0f);
  FuncPreMulSum<Half> ph;
  ph.scalar = Half(1.0f / 3.0f);
  EXPECT_EQ(float(ph.pre(Half(3.0f))), float(Half(3.0f * float(Half(1.0f / 3.0f)))));
  FuncPreMulSum<int32_t> pi;
  pi.scalar = -3;
  EXPECT_EQ(pi.pre(5), -15);
  FuncSumPostDiv<int32_t> d;
  d.divisor = 2;
  EXPECT_TRUE(FuncSumPostDiv<int32_t>::kHasPost);
  EXPECT_EQ(d.post(d(-4, -3)), -3);  // truncates toward zero, as C division
  FuncSumPostDiv<int8_t> d8;
  d8.divisor = 200;  // more ranks than int8 can count
  EXPECT_EQ(d8.post(int8_t(100)), 0);
  FuncSumPostDiv<uint8_t> du;
  du.divisor = 3;
  EXPECT_EQ(du.post(uint8_t(250)), 83);
  FuncSumPostDiv<uint64_t> d64;
  d64.divisor = 2;
  EXPECT_EQ(d64.post(~0ull), ~0ull / 2);
  EXPECT_FALSE(FuncSum<float>::kHasPre);
  EXPECT_FALSE(FuncMax<int8_t>::kHasPost);
}

}  // namespace
}  // namespace braid
