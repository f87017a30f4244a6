// Reducing-kernel variants for the int64 group (see dev_variants.h).
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

const void* devSelectInt64(ncclDataType_t dtype, RedKind kind) {
#ifdef BRAID_KERNELS_MINIMAL
  (void)dtype;
  (void)kind;
  return nullptr;
#else
  switch (dtype) {
    case ncclInt64: return intKernelFor<int64_t, uint64_t>(kind);
    case ncclUint64: return intKernelFor<uint64_t, uint64_t>(kind);
    default: return nullptr;
  }
#endif
}

}  // namespace braid
