// Low-latency kernels of every reduction for the two fp8 formats (dev_any_red.cuh).
#include "device/dev_any_red.cuh"

namespace braid {

const void* devAnyRedFp8(ncclDataType_t dtype, DevLowLatency v) {
  (void)v;  // the minimal preset compiles none of these
  switch (dtype) {
#ifndef BRAID_KERNELS_MINIMAL
    case ncclFloat8e4m3: return anyRedKernel<Fp8E4M3>(v);
    case ncclFloat8e5m2: return anyRedKernel<Fp8E5M2>(v);
#endif
    default: return nullptr;
  }
}

}  // namespace braid
