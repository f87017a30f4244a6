// Names and sizes of collectives and datatypes (for logs, error messages and the executor).
#include "algo/op_desc.h"

namespace braid {

const char* collName(CollType c) {
  switch (c) {
    case CollType::AllReduce: return "AllReduce";
    case CollType::Broadcast: return "Broadcast";
    case CollType::Reduce: return "Reduce";
    case CollType::AllGather: return "AllGather";
    case CollType::ReduceScatter: return "ReduceScatter";
    case CollType::AllToAll: return "AllToAll";
    case CollType::Gather: return "Gather";
    case CollType::Scatter: return "Scatter";
    case CollType::Send: return "Send";
    case CollType::Recv: return "Recv";
  }
  return "Unknown";
}

uint32_t hostStepTag(const OpDesc& op, uint64_t seq) {
  // FNV-1a over the fields, folded to 16 bits; 0 is kept for steps no ring collective wrote.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint64_t>(op.coll));
  mix(static_cast<uint64_t>(static_cast<int64_t>(op.root)));
  mix(op.count);
  mix(static_cast<uint64_t>(op.dtype));
  mix(static_cast<uint64_t>(op.op.kind));
  mix(seq);
  uint32_t t = static_cast<uint32_t>((h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48)) & 0xffffu);
  return t == 0 ? 1u : t;
}

size_t dtypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

bool dtypeIsFloat(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
    case ncclFloat32:
    case ncclFloat64:
    case ncclBfloat16:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return true;
    default: return false;
  }
}

const char* dtypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "float16";
    case ncclFloat32: return "float32";
    case ncclFloat64: return "float64";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat8e4m3: return "float8e4m3";
    case ncclFloat8e5m2: return "float8e5m2";
    default: return "unknown";
  }
}

bool oneShotExact(RedKind kind, ncclDataType_t dtype) {
  switch (kind) {
    case RedKind::Sum:
    case RedKind::Prod:
    case RedKind::SumPostDiv: return true;
    case RedKind::Max:
    case RedKind::Min:
    case RedKind::PreMulSum: return !dtypeIsFloat(dtype);
  }
  return false;
}

}  // namespace braid
