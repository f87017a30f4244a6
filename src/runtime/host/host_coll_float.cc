// Instantiations of the host ring collectives for the floating-point datatypes (fp16, bf16 and fp8
// compute through float and round back per operation). Integer average (SumPostDiv) does not apply:
// floating Avg arrives as PreMulSum by 1/n.
#include "runtime/host/host_coll.h"

namespace braid {

CollChannelFn selectFloatCollFn(ncclDataType_t dtype, RedKind kind) {
  switch (dtype) {
    case ncclFloat16: return reduceFnFor<Half>(kind);
    case ncclFloat32: return reduceFnFor<float>(kind);
    case ncclFloat64: return reduceFnFor<double>(kind);
    case ncclBfloat16: return reduceFnFor<BFloat16>(kind);
    case ncclFloat8e4m3: return reduceFnFor<Fp8E4M3>(kind);
    case ncclFloat8e5m2: return reduceFnFor<Fp8E5M2>(kind);
    default: return nullptr;
  }
}

}  // namespace braid
