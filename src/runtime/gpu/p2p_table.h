// p2p_table: device memory for the block lists of p2p launches that outgrow the kernel's parameter block
// (dev_work.h's tiers hold up to kMaxP2pBlocks). A group of many transfers must still run as one launch (a
// batch split into several launches can deadlock, p2p_plan.h), so its lists go to device memory instead.
//
// The lists reach that memory through small fill kernels on the launch's stream, their bytes in the fill
// kernels' parameters (P2pTableChunk): kernel parameters are copied when the launch is issued, so nothing
// waits for the device (a pageable cudaMemcpyAsync may; pinned staging needs a pinned allocation, which may
// too), and the same calls captured into a CUDA graph replay the fill before each replay's p2p kernel. One
// buffer serves every launch: a communicator's launches run one after another (on a stream, ordered by the
// executor; in graphs and between replays, by the executor's graph mixing, or by the user where
// NCCL_GRAPH_MIXING_SUPPORT=0, as for the connections' FIFOs). It only grows; a grown-out buffer is
// kept until the store is destroyed, since a captured graph may still fill it and read it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "nccl.h"

namespace braid {

class P2pTableStore {
 public:
  explicit P2pTableStore(int rank) : rank_(rank) {}
  ~P2pTableStore();  // after the communicator's kernels finished: frees every buffer
  P2pTableStore(const P2pTableStore&) = delete;
  P2pTableStore& operator=(const P2pTableStore&) = delete;

  // Enqueues on `s` the copy of `bytes` of `host` (a multiple of 16) into the buffer; *dev is its device
  // address, for a kernel launched next on `s`. `host` may be reused as soon as this returns.
  ncclResult_t put(const void* host, size_t bytes, cudaStream_t s, const void** dev);

  size_t capacity() const { return cap_; }

 private:
  int rank_;
  void* buf_ = nullptr;
  size_t cap_ = 0;
  std::vector<void*> outgrown_;  // earlier buffers a captured graph may still use
  cudaStream_t side_ = nullptr;  // allocates new buffers, apart from any stream a kernel runs on
};

}  // namespace braid
