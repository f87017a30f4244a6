// Reducing-kernel variants for half (see dev_variants.h): one datatype per translation unit, because these
// are the slowest files to compile (fp8 and 16-bit arithmetic through float conversions) and the 2-core
// build runs them in parallel.
#include "device/coll_kernel.cuh"
#include "device/dev_variants.h"

namespace braid {

BRAID_FLOAT_TYPE_SELECTOR(devSelectHalf, Half)

}  // namespace braid
