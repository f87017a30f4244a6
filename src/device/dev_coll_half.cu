// Reducing-kernel variants for the half group (see dev_variants.h).
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

const void* devSelectHalf(ncclDataType_t dtype, RedKind kind) {
#ifdef BRAID_KERNELS_MINIMAL
  (void)dtype;
  (void)kind;
  return nullptr;
#else
  switch (dtype) {
    case ncclFloat16: return floatKernelFor<Half>(kind);
    case ncclBfloat16: return floatKernelFor<BFloat16>(kind);
    default: return nullptr;
  }
#endif
}

}  // namespace braid
