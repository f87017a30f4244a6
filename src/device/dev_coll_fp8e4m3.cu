// Reducing-kernel variants for fp8 e4m3 (see dev_variants.h): one datatype per translation unit, because these
// are the slowest files to compile (fp8 and 16-bit arithmetic through float conversions) and the 2-core
// build runs them in parallel.
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

BRAID_FLOAT_TYPE_SELECTOR(devSelectFp8E4M3, Fp8E4M3)

}  // namespace braid
