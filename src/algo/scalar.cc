// encodeScalar/decodeScalar: a double to and from the byte representation of any NCCL datatype.
#include "algo/scalar.h"

#include <cstring>

#include "algo/numeric_types.h"

namespace braid {
namespace {
template <typename T>
void put(T v, uint8_t out[8]) {
  memset(out, 0, 8);
  memcpy(out, &v, sizeof(T));
}
template <typename T>
T get(const void* p) {
  T v;
  memcpy(&v, p, sizeof(T));
  return v;
}
}  // namespace

void encodeScalar(ncclDataType_t t, double v, uint8_t out[8]) {
  switch (t) {
    case ncclInt8: put(static_cast<int8_t>(v), out); break;
    case ncclUint8: put(static_cast<uint8_t>(v), out); break;
    case ncclInt32: put(static_cast<int32_t>(v), out); break;
    case ncclUint32: put(static_cast<uint32_t>(v), out); break;
    case ncclInt64: put(static_cast<int64_t>(v), out); break;
    case ncclUint64: put(static_cast<uint64_t>(v), out); break;
    case ncclFloat16: put(floatToHalfBits(static_cast<float>(v)), out); break;
    case ncclFloat32: put(static_cast<float>(v), out); break;
    case ncclFloat64: put(v, out); break;
    case ncclBfloat16: put(floatToBf16Bits(static_cast<float>(v)), out); break;
    case ncclFloat8e4m3: put(doubleToFp8Bits(v, true), out); break;
    case ncclFloat8e5m2: put(doubleToFp8Bits(v, false), out); break;
    default: memset(out, 0, 8); break;
  }
}

double decodeScalar(ncclDataType_t t, const void* p) {
  switch (t) {
    case ncclInt8: return get<int8_t>(p);
    case ncclUint8: return get<uint8_t>(p);
    case ncclInt32: return get<int32_t>(p);
    case ncclUint32: return get<uint32_t>(p);
    case ncclInt64: return static_cast<double>(get<int64_t>(p));
    case ncclUint64: return static_cast<double>(get<uint64_t>(p));
    case ncclFloat16: return halfBitsToFloat(get<uint16_t>(p));
    case ncclFloat32: return get<float>(p);
    case ncclFloat64: return get<double>(p);
    case ncclBfloat16: return bf16BitsToFloat(get<uint16_t>(p));
    case ncclFloat8e4m3: return fp8e4m3BitsToFloat(get<uint8_t>(p));
    case ncclFloat8e5m2: return fp8e5m2BitsToFloat(get<uint8_t>(p));
    default: return 0;
  }
}

}  // namespace braid
