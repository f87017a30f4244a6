// Low-latency kernels of every reduction for float and double (dev_any_red.cuh).
#include "device/dev_any_red.cuh"

namespace braid {

const void* devAnyRedFloat(ncclDataType_t dtype, DevLowLatency v) {
  switch (dtype) {
    case ncclFloat32: return anyRedKernel<float>(v);
#ifndef BRAID_KERNELS_MINIMAL
    case ncclFloat64: return anyRedKernel<double>(v);
#endif
    default: return nullptr;
  }
}

}  // namespace braid
