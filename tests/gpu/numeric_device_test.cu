// GPU test of the low-precision arithmetic device code uses.
// - The hardware cvt paths (numeric_types.h) must give the bits of the software conversions the host
//   reference and CPU comms use, for every input: all 2^32 float bit patterns into fp16, bf16, fp8 e4m3 and
//   fp8 e5m2, and every 16/8-bit pattern back to float. A NaN must give a NaN; its bits may differ (the
//   hardware gives canonical NaNs where NVIDIA's host conversions keep sign or payload bits), and the test
//   prints how many do.
// - The packed sums (device/packed_math.h) must give the bits of the per-element float path for every pair
//   of fp16, of bf16 (2^32 pairs each) and of each fp8 type, and the wrapping add for every pair of bytes.
// The software conversions are themselves checked against NVIDIA's reference algorithms on the host
// (tests/unit/reduce_types_test.cc). Needs one GPU; skips with a reason otherwise.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "algo/numeric_types.h"
#include "algo/reduce_ops.h"
#include "device/packed_math.h"

using namespace braid;

namespace {

enum Conv { kToHalf, kToBf16, kToE4m3, kToE5m2, kConvs };
const char* const kConvName[kConvs] = {"float->fp16", "float->bf16", "float->e4m3", "float->e5m2"};

struct Mismatch {
  unsigned long long count[kConvs];
  uint32_t first[kConvs];  // the smallest input pattern that disagreed (0xffffffff: none)
  unsigned long long nanBits[kConvs];  // NaN results that are NaN both ways but differ in bits
};

__device__ void note(Mismatch* m, int c, uint32_t x, bool bad) {
  if (!bad) return;
  atomicAdd(&m->count[c], 1ull);
  atomicMin(&m->first[c], x);
}

// NaN tests per format, on bits.
__host__ __device__ bool halfNaN(uint32_t h) { return (h & 0x7fffu) > 0x7c00u; }
__host__ __device__ bool bf16NaN(uint32_t b) { return (b & 0x7fffu) > 0x7f80u; }
__host__ __device__ bool e4m3NaN(uint32_t b) { return (b & 0x7fu) == 0x7fu; }
__host__ __device__ bool e5m2NaN(uint32_t b) { return (b & 0x7fu) > 0x7cu; }
__host__ __device__ bool floatNaN(uint32_t f) { return (f & 0x7fffffffu) > 0x7f800000u; }

// Equal bits, or NaN both ways (counted apart).
__device__ void compare(Mismatch* m, int c, uint32_t x, uint32_t got, uint32_t want, bool (*isNaN)(uint32_t)) {
  if (got == want) return;
  if (isNaN(got) && isNaN(want)) {
    atomicAdd(&m->nanBits[c], 1ull);
    return;
  }
  note(m, c, x, true);
}

// Thread i of the grid covers patterns i, i + stride, ...: every float once, in both conversions.
__global__ void fromFloatAll(Mismatch* m) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (1ull << 32); i += stride) {
    const uint32_t x = uint32_t(i);
    const float f = bitsFloat(x);
    compare(m, kToHalf, x, floatToHalfBits(f), floatToHalfBitsSoft(f), halfNaN);
    compare(m, kToBf16, x, floatToBf16Bits(f), floatToBf16BitsSoft(f), bf16NaN);
    compare(m, kToE4m3, x, floatToFp8Bits(f, true), floatToFp8BitsSoft(f, true), e4m3NaN);
    compare(m, kToE5m2, x, floatToFp8Bits(f, false), floatToFp8BitsSoft(f, false), e5m2NaN);
  }
}

// Packed sum vs the per-element path (float arithmetic, rounded back), every pair (a, b) of 16-bit
// patterns: lane 0 adds (a, b), lane 1 (b, a).
template <typename T>
__global__ void packedSum16All(Mismatch* m, int c) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (1ull << 32); i += stride) {
    const uint32_t a = uint32_t(i) >> 16, b = uint32_t(i) & 0xffffu;
    const uint32_t got = packedSum32<T>(a | (b << 16), b | (a << 16));
    const uint32_t want0 = FuncSum<T>()(T::fromBits(uint16_t(a)), T::fromBits(uint16_t(b))).bits;
    const uint32_t want1 = FuncSum<T>()(T::fromBits(uint16_t(b)), T::fromBits(uint16_t(a))).bits;
    note(m, c, uint32_t(i), got != (want0 | (want1 << 16)));
  }
}
// The same for 8-bit patterns: lanes (a, b), (b, a), (a, a), (b, b).
template <typename T>
__global__ void packedSum8All(Mismatch* m, int c) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536) return;
  const uint32_t a = i >> 8, b = i & 0xffu;
  const uint32_t got = packedSum32<T>(a | (b << 8) | (a << 16) | (b << 24), b | (a << 8) | (a << 16) | (b << 24));
  auto sum = [](uint32_t x, uint32_t y) {
    return uint32_t(FuncSum<T>()(T::fromBits(uint8_t(x)), T::fromBits(uint8_t(y))).bits);
  };
  const uint32_t want = sum(a, b) | (sum(b, a) << 8) | (sum(a, a) << 16) | (sum(b, b) << 24);
  note(m, c, i, got != want);
}

// Bytes as integers: lanes (a, b), (b, a), (a, a), (b, b) against the wrapping byte add.
__global__ void packedSumBytesAll(Mismatch* m, int c) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536) return;
  const uint32_t a = i >> 8, b = i & 0xffu;
  const uint32_t got = packedSum32<uint8_t>(a | (b << 8) | (a << 16) | (b << 24), b | (a << 8) | (a << 16) | (b << 24));
  const uint32_t ab = (a + b) & 0xffu, aa = (2 * a) & 0xffu, bb = (2 * b) & 0xffu;
  note(m, c, i, got != (ab | (ab << 8) | (aa << 16) | (bb << 24)));
}

// Every 16-bit pattern as fp16 and bf16, every 8-bit one as e4m3 and e5m2, to float bits.
__global__ void toFloatAll(uint32_t* half, uint32_t* bf16, uint32_t* e4m3, uint32_t* e5m2) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536) return;
  half[i] = floatBits(halfBitsToFloat(uint16_t(i)));
  bf16[i] = floatBits(bf16BitsToFloat(uint16_t(i)));
  if (i < 256) {
    e4m3[i] = floatBits(fp8e4m3BitsToFloat(uint8_t(i)));
    e5m2[i] = floatBits(fp8e5m2BitsToFloat(uint8_t(i)));
  }
}

// A strided sample of floats converted on the device, compared with the host's software conversion: the
// exhaustive kernel compares against the software code compiled for the device, this ties that to the host.
__global__ void fromFloatSample(uint32_t step, uint16_t* half, uint16_t* bf16, uint8_t* e4m3, uint8_t* e5m2, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float f = bitsFloat(uint32_t(uint64_t(i) * step));
  half[i] = floatToHalfBits(f);
  bf16[i] = floatToBf16Bits(f);
  e4m3[i] = floatToFp8Bits(f, true);
  e5m2[i] = floatToFp8Bits(f, false);
}

// What the device code of this build runs: its __CUDA_ARCH__ and which paths are the hardware ones.
__global__ void whichPaths(int* out) {
#ifdef __CUDA_ARCH__
  out[0] = __CUDA_ARCH__;
#endif
#ifdef BRAID_HW_F16_CVT
  out[1] = 1;
#endif
#ifdef BRAID_HW_BF16_CVT
  out[2] = 1;
#endif
#ifdef BRAID_HW_FP8_CVT
  out[3] = 1;
#endif
  out[4] = HasPackedSum<Half>::value + 2 * HasPackedSum<BFloat16>::value + 4 * HasPackedSum<Fp8E4M3>::value +
           8 * HasPackedSum<Fp8E5M2>::value;
}

bool haveGpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

#define CK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Runs launch(d) on a zeroed device Mismatch record and copies the counts back to *got.
template <typename Launch>
cudaError_t countMismatches(Launch launch, Mismatch* got) {
  Mismatch init;
  for (int c = 0; c < kConvs; ++c) {
    init.count[c] = 0;
    init.first[c] = 0xffffffffu;
    init.nanBits[c] = 0;
  }
  Mismatch* d = nullptr;
  cudaError_t e = cudaMalloc(&d, sizeof(Mismatch));
  if (e == cudaSuccess) e = cudaMemcpy(d, &init, sizeof(init), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) launch(d);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaMemcpy(got, d, sizeof(*got), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return e;
}

TEST(NumericDevice, FloatToLowPrecisionMatchesSoftwareForEveryFloat) {
  if (!haveGpu()) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount reports none";
  Mismatch got;
  CK(countMismatches([](Mismatch* d) { fromFloatAll<<<1024, 256>>>(d); }, &got));
  for (int c = 0; c < kConvs; ++c) {
    EXPECT_EQ(got.count[c], 0u) << kConvName[c] << ": first differing float bits 0x" << std::hex << got.first[c];
    printf("%s: %llu NaN inputs give a NaN of other bits than the host conversion\n", kConvName[c], got.nanBits[c]);
  }
}

TEST(NumericDevice, LowPrecisionToFloatMatchesHostForEveryPattern) {
  if (!haveGpu()) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount reports none";
  uint32_t* d = nullptr;
  CK(cudaMalloc(&d, sizeof(uint32_t) * (65536 * 2 + 512)));
  CK(cudaMemset(d, 0xA5, sizeof(uint32_t) * (65536 * 2 + 512)));
  toFloatAll<<<256, 256>>>(d, d + 65536, d + 131072, d + 131072 + 256);
  CK(cudaGetLastError());
  std::vector<uint32_t> h(65536 * 2 + 512);
  CK(cudaMemcpy(h.data(), d, h.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  int bad = 0, nanBits = 0;
  auto check = [&](const char* what, uint32_t pattern, uint32_t got, uint32_t want) {
    if (got == want) return;
    if (floatNaN(got) && floatNaN(want)) {
      ++nanBits;
      return;
    }
    if (bad++ < 5) ADD_FAILURE() << what << " 0x" << std::hex << pattern << ": 0x" << got << " want 0x" << want;
  };
  for (uint32_t i = 0; i < 65536; ++i) {
    check("fp16", i, h[i], floatBits(halfBitsToFloatSoft(uint16_t(i))));
    check("bf16", i, h[65536 + i], floatBits(bf16BitsToFloat(uint16_t(i))));
  }
  for (uint32_t i = 0; i < 256; ++i) {
    check("e4m3", i, h[131072 + i], floatBits(fp8e4m3BitsToFloatSoft(uint8_t(i))));
    check("e5m2", i, h[131328 + i], floatBits(fp8e5m2BitsToFloatSoft(uint8_t(i))));
  }
  EXPECT_EQ(bad, 0);
  printf("%d NaN patterns give a float NaN of other bits than the host conversion\n", nanBits);
}

TEST(NumericDevice, DeviceConversionsMatchHostOnASample) {
  if (!haveGpu()) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount reports none";
  constexpr int kN = 1 << 20;
  constexpr uint32_t kStep = 4099;  // odd, so the sample walks through every exponent and low mantissa bits
  std::vector<uint8_t> h(kN * 6);
  uint8_t* d = nullptr;
  CK(cudaMalloc(&d, h.size()));
  CK(cudaMemset(d, 0xA5, h.size()));
  fromFloatSample<<<kN / 256, 256>>>(kStep, reinterpret_cast<uint16_t*>(d), reinterpret_cast<uint16_t*>(d + kN * 2),
                                     d + kN * 4, d + kN * 5, kN);
  CK(cudaGetLastError());
  CK(cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  int bad = 0;
  for (int i = 0; i < kN; ++i) {
    const uint32_t x = uint32_t(uint64_t(i) * kStep);
    const float f = bitsFloat(x);
    uint16_t hh, hb;
    memcpy(&hh, &h[size_t(i) * 2], 2);
    memcpy(&hb, &h[size_t(kN) * 2 + size_t(i) * 2], 2);
    if (floatNaN(x)) continue;  // NaN bits: the exhaustive test above
    const bool ok = hh == floatToHalfBitsSoft(f) && hb == floatToBf16BitsSoft(f) &&
                    h[size_t(kN) * 4 + i] == floatToFp8BitsSoft(f, true) && h[size_t(kN) * 5 + i] == floatToFp8BitsSoft(f, false);
    if (!ok && bad++ < 5) ADD_FAILURE() << "float bits 0x" << std::hex << x;
  }
  EXPECT_EQ(bad, 0);
}

TEST(NumericDevice, PackedSumsMatchTheFloatPathForEveryPair) {
  if (!haveGpu()) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount reports none";
  Mismatch got, bytes;
  CK(countMismatches(
      [](Mismatch* d) {
        packedSum16All<Half><<<1024, 256>>>(d, 0);
        packedSum16All<BFloat16><<<1024, 256>>>(d, 1);
        packedSum8All<Fp8E4M3><<<256, 256>>>(d, 2);
        packedSum8All<Fp8E5M2><<<256, 256>>>(d, 3);
      },
      &got));
  CK(countMismatches([](Mismatch* d) { packedSumBytesAll<<<256, 256>>>(d, 0); }, &bytes));
  EXPECT_EQ(bytes.count[0], 0u) << "uint8x4 sum: first differing pair index 0x" << std::hex << bytes.first[0];
  const char* const names[4] = {"fp16x2", "bf16x2", "e4m3x4", "e5m2x4"};
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(got.count[c], 0u) << names[c] << " sum: first differing pair index 0x" << std::hex << got.first[c];
  }
}

// The exhaustive tests above compare the hardware paths with the per-element ones only where this build's
// device code has them; on an sm_90 build every path must be the hardware one, or they compare a path
// with itself.
TEST(NumericDevice, ThisBuildRunsTheHardwarePaths) {
  if (!haveGpu()) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount reports none";
  int* d = nullptr;
  CK(cudaMalloc(&d, 5 * sizeof(int)));
  CK(cudaMemset(d, 0, 5 * sizeof(int)));
  whichPaths<<<1, 1>>>(d);
  CK(cudaGetLastError());
  int h[5];
  CK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  printf("device code sm_%d: hardware fp16 cvt %d, bf16 cvt %d, fp8 cvt %d, packed sums mask %d\n", h[0] / 10, h[1],
         h[2], h[3], h[4]);
  if (h[0] >= 900) {
    EXPECT_EQ(h[1] + h[2] + h[3], 3);
    EXPECT_EQ(h[4], 15);
  } else {
    printf("built below sm_90: some exhaustive checks compare the per-element path with itself\n");
  }
}

}  // namespace
