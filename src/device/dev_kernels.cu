// The byte kernels (all-gather/broadcast; p2p transfers) and the dispatch from (collective, datatype,
// reduction) to a compiled kernel.
#include "device/coll_kernel.cuh"
#include "device/dev_kernels.h"
#include "device/dev_variants.h"

namespace braid {

// One CTA per connection: its consecutive blocks run in order, each as ceil(bytes / stepBytes) steps.
__global__ void __launch_bounds__(kDevMaxThreads, 1) p2pKernel(const P2pLaunchArgs args) {
  __shared__ PrimsShared sh;
  const int first = args.ctaFirst[blockIdx.x];
  const P2pBlock& b0 = args.blocks[first];
  DevConn* conn = b0.conn;
  const bool isSend = b0.isSend != 0;
  if (threadIdx.x == 0) {
    sh.stop = 0;
    if (isSend) {
      sh.send = *conn;
    } else {
      sh.recv = *conn;
    }
  }
  __syncthreads();
  for (int i = first; i < first + b0.nSeg; ++i) {
    const P2pBlock& b = args.blocks[i];
    DevPrims<uint8_t, FuncCopy> prims(&sh, reinterpret_cast<const uint8_t*>(b.buf), reinterpret_cast<uint8_t*>(b.buf),
                                      FuncCopy{}, args.status);
    const size_t step = isSend ? sh.send.stepBytes : sh.recv.stepBytes;
    for (size_t o = 0; o < b.bytes; o += step) {
      const size_t n = minSize(step, b.bytes - o);
      if (isSend) {
        prims.send(o, n);
      } else {
        prims.recv(o, n);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) conn->step = isSend ? sh.send.step : sh.recv.step;
}

const void* devCollKernel(CollType coll, ncclDataType_t dtype, RedKind kind) {
  switch (coll) {
    case CollType::AllGather:
    case CollType::Broadcast: return reinterpret_cast<const void*>(&collKernel<uint8_t, FuncCopy, true>);
    case CollType::AllReduce:
    case CollType::Reduce:
    case CollType::ReduceScatter: break;
    default: return nullptr;
  }
  switch (dtype) {
    case ncclFloat32:
    case ncclFloat64: return devSelectFloat(dtype, kind);
    case ncclFloat16:
    case ncclBfloat16: return devSelectHalf(dtype, kind);
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return devSelectFp8(dtype, kind);
    case ncclInt8:
    case ncclUint8: return devSelectInt8(dtype, kind);
    case ncclInt32:
    case ncclUint32: return devSelectInt32(dtype, kind);
    case ncclInt64:
    case ncclUint64: return devSelectInt64(dtype, kind);
    default: return nullptr;
  }
}

const void* devP2pKernel() { return reinterpret_cast<const void*>(&p2pKernel); }

bool devKernelsMinimal() {
#ifdef BRAID_KERNELS_MINIMAL
  return true;
#else
  return false;
#endif
}

}  // namespace braid
