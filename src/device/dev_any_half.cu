// Low-latency kernels of every reduction for half and bfloat16 (dev_any_red.cuh).
#include "device/dev_any_red.cuh"

namespace braid {

const void* devAnyRedHalf(ncclDataType_t dtype, DevLowLatency v) {
  (void)v;  // the minimal preset compiles none of these
  switch (dtype) {
#ifndef BRAID_KERNELS_MINIMAL
    case ncclFloat16: return anyRedKernel<Half>(v);
    case ncclBfloat16: return anyRedKernel<BFloat16>(v);
#endif
    default: return nullptr;
  }
}

}  // namespace braid
