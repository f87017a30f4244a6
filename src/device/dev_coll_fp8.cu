// Reducing-kernel variants for the fp8 group (see dev_variants.h).
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

const void* devSelectFp8(ncclDataType_t dtype, RedKind kind) {
#ifdef BRAID_KERNELS_MINIMAL
  (void)dtype;
  (void)kind;
  return nullptr;
#else
  switch (dtype) {
    case ncclFloat8e4m3: return floatKernelFor<Fp8E4M3>(kind);
    case ncclFloat8e5m2: return floatKernelFor<Fp8E5M2>(kind);
    default: return nullptr;
  }
#endif
}

}  // namespace braid
