// Tests of the matmul demo's building blocks (examples/matmul, header-only parts): the float <-> half/bf16
// converters against exhaustive and hand-picked cases, the uneven split, and the cache-blocked CPU kernel
// against the triple loop, including the bit-identity of row blocks that lets rows mode verify exactly.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "../../examples/matmul/host_gemm.h"
#include "../../examples/matmul/matmul_types.h"

namespace matmul {
namespace {

TEST(MatmulConvert, HalfRoundTripsEveryBitPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = halfBitsToFloat(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_EQ(floatToHalfBits(f) & 0x7e00, 0x7e00) << h;  // quiet NaN
      continue;
    }
    EXPECT_EQ(floatToHalfBits(f), h) << "half bits 0x" << std::hex << h << " -> " << f;
  }
}

TEST(MatmulConvert, HalfValues) {
  EXPECT_EQ(halfBitsToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfBitsToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfBitsToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(halfBitsToFloat(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0xfc00)) && halfBitsToFloat(0xfc00) < 0);
  // Round to nearest, ties to even.
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);                          // tie, even is 1.0
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);                      // tie, even is up
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // above the tie
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7bff);  // below the overflow tie
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00);  // the tie rounds to infinity
  EXPECT_EQ(floatToHalfBits(1e30f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(-1e30f), 0xfc00);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24: even
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);             // tie between 1 and 2 units: even
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14) * 0.99999f), 0x0400);  // rounds up into the normals
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -40)), 0x0000);
}

// Against the compiler's own binary16 where it has one (GCC >= 12 on x86-64).
#if defined(__FLT16_MAX__)
TEST(MatmulConvert, HalfMatchesCompilerFloat16) {
  std::mt19937 gen(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = gen();
    if (i % 2) bits = (bits & 0x8fffffffu) | 0x30000000u;  // bias half the cases into the half range
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    if (std::isnan(f)) continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, sizeof(want));
    ASSERT_EQ(floatToHalfBits(f), want) << "float bits 0x" << std::hex << bits;
  }
}
#endif

TEST(MatmulConvert, Bf16RoundTripsAndRoundsToNearestEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16BitsToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    EXPECT_EQ(floatToBf16Bits(f), b) << b;
  }
  EXPECT_EQ(floatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16Bits(std::nanf("")) & 0x7fc0, 0x7fc0);
  std::mt19937 gen(11);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t bits = gen() & 0x7f7fffffu;  // finite, positive
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    const uint16_t got = floatToBf16Bits(f);
    const uint16_t lo = static_cast<uint16_t>(bits >> 16), hi = static_cast<uint16_t>(lo + 1);
    const double dlo = f - static_cast<double>(bf16BitsToFloat(lo));
    // Above the largest bf16, the next step up is 2^128 (rounding there gives infinity).
    const double vhi = hi == 0x7f80 ? std::ldexp(1.0, 128) : static_cast<double>(bf16BitsToFloat(hi));
    const double dhi = vhi - f;
    const uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
    ASSERT_EQ(got, want) << "float bits 0x" << std::hex << bits;
  }
}

TEST(MatmulSplit, PartsTileTheRangeAndDifferByAtMostOne) {
  for (size_t total : {0, 1, 2, 3, 5, 7, 263, 517, 1001}) {
    for (int parts = 1; parts <= 9; ++parts) {
      size_t next = 0, lo = SIZE_MAX, hi = 0;
      for (int i = 0; i < parts; ++i) {
        Range r = splitRange(total, parts, i);
        EXPECT_EQ(r.begin, next) << total << "/" << parts << " part " << i;
        next = r.begin + r.count;
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      EXPECT_EQ(next, total);
      EXPECT_LE(hi - lo, 1u);
    }
  }
  EXPECT_EQ(splitRange(1001, 4, 0).count, 251u);
  EXPECT_EQ(splitRange(1001, 4, 3).begin, 751u);
  EXPECT_EQ(splitRange(3, 4, 3).count, 0u);
}

template <typename T>
std::vector<T> randomMatrix(size_t count, uint64_t which) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = fromFloat<T>(inputValue(5, which, i));
  return v;
}

template <typename T>
void checkAgainstNaive(size_t m, size_t n, size_t k, double rel) {
  auto a = randomMatrix<T>(m * k, 1);
  auto b = randomMatrix<T>(k * n, 2);
  std::vector<T> got(m * n), want(m * n);
  hostGemm(a.data(), k, b.data(), n, got.data(), n, m, n, k);
  naiveGemm(a.data(), b.data(), want.data(), m, n, k);
  const double tol = rel * std::sqrt(static_cast<double>(k ? k : 1));
  for (size_t i = 0; i < m * n; ++i)
    ASSERT_NEAR(toFloat(got[i]), toFloat(want[i]), tol) << m << "x" << n << "x" << k << " element " << i;
}

TEST(MatmulHostGemm, MatchesTripleLoopOnAwkwardShapes) {
  // Shapes around the tile sizes (6 x 16 registers, 72 x 256 x 512 blocks) and degenerate ones.
  const size_t shapes[][3] = {{1, 1, 1},      {1, 17, 3},     {7, 1, 5},    {5, 15, 1}, {6, 16, 256},
                              {73, 513, 257}, {13, 700, 600}, {150, 31, 2}, {2, 3, 0}};
  for (const auto& s : shapes) {
    SCOPED_TRACE(testing::Message() << s[0] << "x" << s[1] << "x" << s[2]);
    checkAgainstNaive<float>(s[0], s[1], s[2], 1e-5);
    checkAgainstNaive<Half>(s[0], s[1], s[2], 2e-3);
    checkAgainstNaive<Bf16>(s[0], s[1], s[2], 2e-2);
  }
}

TEST(MatmulHostGemm, StridedOperands) {
  // Sub-matrices of larger ones: A's rows 10 apart, B's 9 apart, C's 8 apart.
  const size_t m = 5, n = 7, k = 6, lda = 10, ldb = 9, ldc = 8;
  auto a = randomMatrix<float>(m * lda, 3);
  auto b = randomMatrix<float>(k * ldb, 4);
  std::vector<float> c(m * ldc, -7.0f);
  hostGemm(a.data(), lda, b.data(), ldb, c.data(), ldc, m, n, k);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < ldc; ++j) {
      if (j >= n) {
        EXPECT_EQ(c[i * ldc + j], -7.0f) << "wrote outside C at " << i << "," << j;
        continue;
      }
      double s = 0;
      for (size_t p = 0; p < k; ++p) s += static_cast<double>(a[i * lda + p]) * b[p * ldb + j];
      EXPECT_NEAR(c[i * ldc + j], s, 1e-5);
    }
  }
}

// rows mode relies on this: any row block computed alone equals the same rows of the whole product, bit for
// bit, so the demo's error against its single-rank reference is exactly zero in rows mode.
TEST(MatmulHostGemm, RowBlocksAreBitIdenticalToTheWholeProduct) {
  const size_t m = 301, n = 530, k = 263;
  auto a = randomMatrix<float>(m * k, 1);
  auto b = randomMatrix<float>(k * n, 2);
  std::vector<float> whole(m * n), part(m * n);
  hostGemm(a.data(), k, b.data(), n, whole.data(), n, m, n, k);
  for (int parts : {2, 3, 7}) {
    for (int q = 0; q < parts; ++q) {
      Range r = splitRange(m, parts, q);
      hostGemm(a.data() + r.begin * k, k, b.data(), n, part.data() + r.begin * n, n, r.count, n, k);
    }
    EXPECT_EQ(0, std::memcmp(whole.data(), part.data(), whole.size() * sizeof(float))) << parts << " parts";
  }
}

TEST(MatmulTolerance, LooserForNarrowerTypesAndScaledBySqrtK) {
  EXPECT_LT(relTolerance(ElemType::kFloat), relTolerance(ElemType::kHalf));
  EXPECT_LT(relTolerance(ElemType::kHalf), relTolerance(ElemType::kBf16));
  EXPECT_DOUBLE_EQ(absTolerance(ElemType::kFloat, 400, 1.0, 1.0), 20 * relTolerance(ElemType::kFloat));
  EXPECT_DOUBLE_EQ(absTolerance(ElemType::kHalf, 100, 0.5, 2.0), 10 * relTolerance(ElemType::kHalf));
}

TEST(MatmulInput, DeterministicAndInRange) {
  for (uint64_t i = 0; i < 100000; ++i) {
    const float v = inputValue(1, 1, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
  }
  EXPECT_EQ(inputValue(3, 1, 12345), inputValue(3, 1, 12345));
  EXPECT_NE(inputValue(3, 1, 12345), inputValue(3, 2, 12345));
}

}  // namespace
}  // namespace matmul
