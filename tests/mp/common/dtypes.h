// Multi-process test harness: the 12 NCCL datatypes on the host side of a test. Elements are handled as
// raw bits (uint64_t, low bytes used); conversions between those bits and double are written here from the
// format definitions (IEEE half, bfloat16, OCP fp8 e4m3 "fn" with max 448, fp8 e5m2 with max 57344,
// round-to-nearest-even), independent of the library under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace mp {

constexpr int kNumTypes = 12;

size_t typeSize(ncclDataType_t t);
const char* typeName(ncclDataType_t t);
const char* opName(int op);  // ncclSum..ncclAvg; others print as "premulsum"
bool isFloatType(ncclDataType_t t);
bool isSignedInt(ncclDataType_t t);
// Unit roundoff of the type's format (2^-(mantissa bits + 1)); 0 for integers.
double unitRoundoff(ncclDataType_t t);
// Smallest positive subnormal of a float format.
double minSubnormal(ncclDataType_t t);

// Float formats: bits <-> double. encode rounds to nearest, ties to even (saturating to the largest finite
// value for e4m3, which has no infinity).
double decodeFloat(ncclDataType_t t, uint64_t bits);
uint64_t encodeFloat(ncclDataType_t t, double v);

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBf16(float f);
float bf16ToFloat(uint16_t b);
uint8_t doubleToFp8(double v, bool e4m3);
double fp8ToDouble(uint8_t b, bool e4m3);

// Integer bits -> signed/unsigned 64-bit value (sign-extended for signed types).
int64_t intAsSigned(ncclDataType_t t, uint64_t bits);
uint64_t truncBits(ncclDataType_t t, uint64_t v);  // keep the type's width

// Element access in a byte buffer.
uint64_t loadElem(const void* base, ncclDataType_t t, size_t idx);
void storeElem(void* base, ncclDataType_t t, size_t idx, uint64_t bits);

// Deterministic hash for test data.
uint64_t mix64(uint64_t x);
inline uint64_t hashOf(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return mix64(a * 0x9E3779B97F4A7C15ull ^ mix64(b + 0x632BE59BD9B4E019ull) ^ mix64(c * 31 + 7) ^ (d << 1));
}

// Formats bits of an element for messages ("int8 -3", "half 1.5 (0x3e00)").
std::string formatElem(ncclDataType_t t, uint64_t bits);

}  // namespace mp
