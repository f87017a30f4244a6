// p2p_table: the device buffer of large p2p launches' block lists and its fill launches (see p2p_table.h).
#include "runtime/gpu/p2p_table.h"

#include <algorithm>
#include <cstring>

#include "core/result.h"
#include "device/dev_kernels.h"
#include "device/dev_work.h"
#include "runtime/gpu/gpu_state.h"  // BRAID_CUDA_CHECK

namespace braid {
P2pTableStore::~P2pTableStore() {
  outgrown_.push_back(buf_);
  for (void* p : outgrown_)
    if (p) cudaFree(p);
  if (side_) cudaStreamDestroy(side_);
  cudaGetLastError();
}

ncclResult_t P2pTableStore::put(const void* host, size_t bytes, cudaStream_t s, const void** dev) {
  if (bytes % 16 != 0)
    return recordError(ncclInternalError, "rank %d: a p2p table of %zu bytes is not a whole number of 16-byte words",
                       rank_, bytes);
  if (bytes > cap_) {
    RelaxedCapture relaxed;
    if (!side_)
      BRAID_CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking),
                       "rank %d: creating the p2p table stream", rank_);
    const size_t want = std::max(bytes, 2 * cap_);
    void* p = nullptr;
    // Stream-ordered on an idle stream: the synchronisation waits for this allocation only. Devices without
    // memory pools take cudaMalloc.
    if (cudaMallocAsync(&p, want, side_) != cudaSuccess) {
      cudaGetLastError();
      BRAID_CUDA_CHECK(cudaMalloc(&p, want), "rank %d: allocating %zu bytes for a p2p launch's lists", rank_, want);
    }
    BRAID_CUDA_CHECK(cudaStreamSynchronize(side_), "rank %d: allocating %zu bytes for a p2p launch's lists", rank_,
                     want);
    if (buf_) outgrown_.push_back(buf_);
    buf_ = p;
    cap_ = want;
  }
  P2pTableChunk c;
  const void* fill = devP2pTableFillKernel();
  for (size_t o = 0; o < bytes; o += kP2pTableChunkBytes) {
    const size_t n = std::min<size_t>(kP2pTableChunkBytes, bytes - o);
    c.dst = static_cast<char*>(buf_) + o;
    c.bytes = static_cast<uint32_t>(n);
    std::memcpy(c.data, static_cast<const char*>(host) + o, n);
    void* args[1] = {&c};
    BRAID_CUDA_CHECK(cudaLaunchKernel(fill, dim3(1), dim3(256), args, 0, s),
                     "rank %d: launching the fill of a p2p launch's lists (%zu of %zu bytes)", rank_, n, bytes);
  }
  *dev = buf_;
  return ncclSuccess;
}

}  // namespace braid
