// Reducing-kernel variants for the int8 group (see dev_variants.h).
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

const void* devSelectInt8(ncclDataType_t dtype, RedKind kind) {
#ifdef BRAID_KERNELS_MINIMAL
  (void)dtype;
  (void)kind;
  return nullptr;
#else
  switch (dtype) {
    case ncclInt8: return intKernelFor<int8_t, uint8_t>(kind);
    case ncclUint8: return intKernelFor<uint8_t, uint8_t>(kind);
    default: return nullptr;
  }
#endif
}

}  // namespace braid
