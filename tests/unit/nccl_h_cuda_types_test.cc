// nccl.h brings in the CUDA headers NCCL 2.28's does (cuda_runtime.h, cuda_fp16.h, cuda_bf16.h, cuda_fp8.h), so
// a host program that includes nothing else sees `half`, `__nv_bfloat16` and the fp8 types, and the type
// macros programs test (nccl-tests turns bf16 and fp8 on with __CUDA_BF16_TYPES_EXIST__ /
// __CUDA_FP8_TYPES_EXIST__). The build defines BRAID_HAVE_CUDA_RUNTIME_H for its own code; it is dropped here
// so the header finds the toolkit the way a user's build does, through the include path.
#undef BRAID_HAVE_CUDA_RUNTIME_H
#include "nccl.h"

#include <gtest/gtest.h>

#include <cmath>

#if !defined(__CUDA_BF16_TYPES_EXIST__)
#error "nccl.h must bring in cuda_bf16.h"
#endif
#if !defined(__CUDA_FP8_TYPES_EXIST__)
#error "nccl.h must bring in cuda_fp8.h"
#endif

// The type list nccl-tests builds from those macros: all 12 NCCL types.
static const ncclDataType_t kTypes[] = {
    ncclInt8,       ncclUint8,      ncclInt32, ncclUint32, ncclInt64, ncclUint64, ncclHalf, ncclFloat, ncclDouble,
#if defined(__CUDA_BF16_TYPES_EXIST__) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    ncclBfloat16,
#endif
#if defined(__CUDA_FP8_TYPES_EXIST__) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    ncclFloat8e4m3, ncclFloat8e5m2,
#endif
};
static_assert(sizeof(kTypes) / sizeof(kTypes[0]) == ncclNumTypes, "every NCCL type is available");
static_assert(sizeof(half) == 2 && sizeof(__nv_bfloat16) == 2 && sizeof(__nv_fp8_e4m3) == 1 &&
                  sizeof(__nv_fp8_e5m2) == 1,
              "element sizes");

// Values exact in every one of the four formats convert both ways unchanged; others round to the format.
TEST(NcclHeaderTypes, HalfBf16Fp8ConvertThroughTheHeader) {
  const float exact[] = {0.0f, 1.0f, -1.0f, 1.5f, -2.0f, 0.25f, 3.0f, -6.0f, 0.125f, 12.0f};
  for (float v : exact) {
    EXPECT_EQ(__half2float(__float2half(v)), v) << v;
    EXPECT_EQ(__bfloat162float(__float2bfloat16(v)), v) << v;
    EXPECT_EQ(float(__nv_fp8_e4m3(v)), v) << v;
    EXPECT_EQ(float(__nv_fp8_e5m2(v)), v) << v;
  }
  // 0.1 rounds differently in each: 11, 8, 4 and 3 significant bits.
  EXPECT_NEAR(__half2float(__float2half(0.1f)), 0.1f, 1e-4f);
  EXPECT_NE(__half2float(__float2half(0.1f)), 0.1f);
  EXPECT_NEAR(__bfloat162float(__float2bfloat16(0.1f)), 0.1f, 1e-3f);
  EXPECT_EQ(float(__nv_fp8_e4m3(0.1f)), 0.1015625f);
  EXPECT_EQ(float(__nv_fp8_e5m2(0.1f)), 0.09375f);
  half h = __float2half(2.5f);
  __nv_bfloat16 b = __float2bfloat16(-3.5f);
  EXPECT_EQ(__half2float(h) + __bfloat162float(b), -1.0f);
}
