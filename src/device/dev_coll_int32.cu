// Reducing-kernel variants for the int32 group (see dev_variants.h).
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

const void* devSelectInt32(ncclDataType_t dtype, RedKind kind) {
#ifdef BRAID_KERNELS_MINIMAL
  (void)dtype;
  (void)kind;
  return nullptr;
#else
  switch (dtype) {
    case ncclInt32: return intKernelFor<int32_t, uint32_t>(kind);
    case ncclUint32: return intKernelFor<uint32_t, uint32_t>(kind);
    default: return nullptr;
  }
#endif
}

}  // namespace braid
