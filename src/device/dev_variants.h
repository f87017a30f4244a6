// The kernel-variant table: which (datatype, reduction) pairs get a compiled reducing kernel, and how they
// fold. Each group below is compiled by its own translation unit (dev_coll_<group>.cu) so the build
// parallelises; dev_kernels.cu dispatches to them. Folding (as NCCL): signed and unsigned integer
// sum/prod/premulsum share the unsigned kernel; all-gather/broadcast and every p2p op run one byte kernel. On
// SIMPLE only sums (and float, half, bfloat16 pre-multiplied sums) have kernels of their own; a type's other
// reductions share one (func_any_red.h).
// Preset: -DBRAID_KERNELS=minimal (CMake; defines BRAID_KERNELS_MINIMAL) compiles only float and the byte kernels, for quick
// development builds; a missing variant is refused at run time with a message naming it.
#pragma once

#include "algo/op_desc.h"

namespace braid {

const void* devSelectFloat(ncclDataType_t dtype, RedKind kind);  // float, double
const void* devSelectHalf(ncclDataType_t dtype, RedKind kind);   // half
const void* devSelectBf16(ncclDataType_t dtype, RedKind kind);   // bfloat16
const void* devSelectFp8E4M3(ncclDataType_t dtype, RedKind kind);
const void* devSelectFp8E5M2(ncclDataType_t dtype, RedKind kind);
const void* devSelectInt8(ncclDataType_t dtype, RedKind kind);   // int8, uint8
const void* devSelectInt32(ncclDataType_t dtype, RedKind kind);  // int32, uint32
const void* devSelectInt64(ncclDataType_t dtype, RedKind kind);  // int64, uint64

// The low-latency kernels that serve every reduction of a datatype (dev_any_red.cuh): the LL collectives, and the
// one-shot / two-shot over every peer. Each group's translation unit is dev_any_<group>.cu; the minimal preset
// compiles float's only.
enum class DevLowLatency { LL, Peers };
const void* devAnyRedFloat(ncclDataType_t dtype, DevLowLatency v);  // float, double
const void* devAnyRedHalf(ncclDataType_t dtype, DevLowLatency v);   // half, bfloat16
const void* devAnyRedFp8(ncclDataType_t dtype, DevLowLatency v);    // both fp8 formats
const void* devAnyRedInt(ncclDataType_t dtype, DevLowLatency v);    // 8- and 32-bit integers
const void* devAnyRedInt64(ncclDataType_t dtype, DevLowLatency v);  // 64-bit integers

}  // namespace braid
