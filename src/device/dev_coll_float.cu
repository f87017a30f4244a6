// Reducing-kernel variants for the float group (see dev_variants.h).
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

const void* devSelectFloat(ncclDataType_t dtype, RedKind kind) {
#ifdef BRAID_KERNELS_MINIMAL
  if (dtype == ncclFloat32) return simpleKernelFor<float>(kind);
  return nullptr;
#else
  switch (dtype) {
    case ncclFloat32: return simpleKernelFor<float>(kind);
    case ncclFloat64: return simpleKernelFor<double>(kind);
    default: return nullptr;
  }
#endif
}

}  // namespace braid
