// Low-latency kernels of every reduction for 64-bit integers (dev_any_red.cuh).
#include "device/dev_any_red.cuh"

namespace braid {

const void* devAnyRedInt64(ncclDataType_t dtype, DevLowLatency v) {
  (void)v;  // the minimal preset compiles none of these
  switch (dtype) {
#ifndef BRAID_KERNELS_MINIMAL
    case ncclInt64: return anyRedKernel<int64_t>(v);
    case ncclUint64: return anyRedKernel<uint64_t>(v);
#endif
    default: return nullptr;
  }
}

}  // namespace braid
