// Host-visible face of the kernels: which compiled kernel serves a (collective, datatype, reduction), and
// the p2p kernel. Returned as the `const void*` cudaLaunchKernel takes; nullptr when no variant exists.
// The variant table (which (type, functor) pairs are compiled and how they fold) is dev_variants.h.
#pragma once

#include <cuda_runtime.h>

#include "algo/op_desc.h"

namespace braid {

// For AllReduce/Reduce/ReduceScatter: the (T, Fn) kernel after folding (signed/unsigned sum/prod/premulsum
// share the unsigned kernel). For AllGather/Broadcast: the byte-copy kernel (count in bytes).
const void* devCollKernel(CollType coll, ncclDataType_t dtype, RedKind kind);
// The p2p kernel taking P2pLaunchArgsOf<maxBlocks> (dev_work.h: kTinyP2pBlocks, kSmallP2pBlocks, kMidP2pBlocks or
// kMaxP2pBlocks), or P2pTableArgs for kMaxP2pTableBlocks; nullptr for others.
const void* devP2pKernel(int maxBlocks);
// The kernel that copies one P2pTableChunk into device memory (p2p_table.h), launched as one CTA.
const void* devP2pTableFillKernel();
// The LL-protocol kernel for the same arguments (every datatype and reduction in the full preset), or nullptr where
// this build has none (then SIMPLE).
const void* devCollKernelLL(CollType coll, ncclDataType_t dtype, RedKind kind);
// The one-shot and two-shot all-reduce of more than two ranks on LL (kDevAllReduceOneShotPeers,
// kDevAllReduceTwoShotPeers; the LL kernels' variants), or nullptr.
const void* devOneShotPeersKernel(ncclDataType_t dtype, RedKind kind);
// The LL128-protocol kernel (the copies and the float, half and bfloat16 sums), or nullptr.
const void* devCollKernelLL128(CollType coll, ncclDataType_t dtype, RedKind kind);
// Loads every kernel of this build on the current device (cudaFuncGetAttributes forces CUDA's lazy
// module loading). A first launch that loads a module may wait for the device to go idle; in a process
// driving several GPUs, one GPU can be spinning on a peer whose launch is the one waiting. NCCL loads its
// kernels at init for the same reason. Returns the first CUDA error.
cudaError_t devPreloadKernels();
// True when the library was configured with -DBRAID_KERNELS=minimal (float and byte kernels only).
bool devKernelsMinimal();

}  // namespace braid
