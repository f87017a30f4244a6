// Low-latency kernels of every reduction for 8- and 32-bit integers (dev_any_red.cuh). Signed and unsigned types
// get their own: max, min and the integer average depend on the sign.
#include "device/dev_any_red.cuh"

namespace braid {

const void* devAnyRedInt(ncclDataType_t dtype, DevLowLatency v) {
  (void)v;  // the minimal preset compiles none of these
  switch (dtype) {
#ifndef BRAID_KERNELS_MINIMAL
    case ncclInt8: return anyRedKernel<int8_t>(v);
    case ncclUint8: return anyRedKernel<uint8_t>(v);
    case ncclInt32: return anyRedKernel<int32_t>(v);
    case ncclUint32: return anyRedKernel<uint32_t>(v);
#endif
    default: return nullptr;
  }
}

}  // namespace braid
