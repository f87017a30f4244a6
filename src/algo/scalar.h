// Scalars of any NCCL datatype as bytes: encode a double into the datatype's representation (fp16/bf16/
// fp8 rounded to nearest even, saturating like the device conversions) and decode back. Used to resolve
// ncclAvg to a pre-multiplication by 1/nranks and to read PreMulSum scalars.
#pragma once

#include <cstdint>

#include "nccl.h"

namespace braid {
void encodeScalar(ncclDataType_t t, double v, uint8_t out[8]);
double decodeScalar(ncclDataType_t t, const void* p);
}  // namespace braid
