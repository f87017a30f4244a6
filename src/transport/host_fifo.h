// Memory layout of a host FIFO: the bytes behind a ConnInfo for the SHM transport (a shared segment) and
// for the socket transport (each side's local staging FIFO). One 4 KiB control page (head, tail and
// errorFlag on separate cache lines so the two sides never false-share, then sizes[] and tags[]), followed by
// nSteps * stepBytes of data starting on a 4 KiB boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/conn_info.h"

namespace braid {

constexpr uint32_t kHostFifoSteps = 8;
constexpr uint32_t kHostFifoMaxSteps = 256;
constexpr size_t kHostFifoPage = 4096;
// Below 1 GiB: a step's byte count must leave bit 30 of sizes[] to kStepLastOfMessage (conn_info.h).
constexpr uint32_t kHostFifoMaxStepBytes = (1u << 30) - static_cast<uint32_t>(kHostFifoPage);

// 128-byte separation: adjacent-line prefetchers pair 64-byte lines.
struct HostFifoCtrl {
  alignas(128) uint64_t head;
  alignas(128) uint64_t tail;
  alignas(128) uint32_t errorFlag;
  uint32_t attached;  // SHM: the sender sets it once it has mapped the segment
  alignas(128) int32_t sizes[kHostFifoMaxSteps];
  alignas(128) uint32_t tags[kHostFifoMaxSteps];  // ConnInfo::tags
};
static_assert(sizeof(HostFifoCtrl) <= kHostFifoPage, "control block fits its page");

inline size_t hostFifoBytes(uint32_t nSteps, uint32_t stepBytes) {
  return kHostFifoPage + static_cast<size_t>(nSteps) * stepBytes;
}

// SHM segments and NET staging FIFOs of GPU communicators carry LL slots after the data (nSteps x
// kShmLlSlotBytes, zeroed like the rest), so they can run the LL protocol through host memory; host
// communicators' do not.
constexpr uint32_t kShmLlSlotBytes = 64 << 10;
inline size_t shmSegmentBytes(uint32_t nSteps, uint32_t stepBytes) {
  return hostFifoBytes(nSteps, stepBytes) + static_cast<size_t>(nSteps) * kShmLlSlotBytes;
}

// Step size for a connection buffer of `buffBytes` (NCCL_BUFFSIZE): buffBytes / nSteps rounded up to
// 4 KiB, at least 4 KiB, at most kHostFifoMaxStepBytes (just under 1 GiB).
inline uint32_t hostFifoStepBytes(size_t buffBytes, uint32_t nSteps) {
  size_t step = nSteps ? buffBytes / nSteps : buffBytes;
  step = (step + kHostFifoPage - 1) / kHostFifoPage * kHostFifoPage;
  if (step < kHostFifoPage) step = kHostFifoPage;
  if (step > kHostFifoMaxStepBytes) step = kHostFifoMaxStepBytes;
  return static_cast<uint32_t>(step);
}

// Points `info` at a FIFO laid out at `base` (control page, then data).
inline void hostFifoView(void* base, uint32_t nSteps, uint32_t stepBytes, ConnInfo* info) {
  auto* ctrl = static_cast<HostFifoCtrl*>(base);
  info->buff = static_cast<char*>(base) + kHostFifoPage;
  info->head = &ctrl->head;
  info->tail = &ctrl->tail;
  info->sizes = ctrl->sizes;
  info->tags = ctrl->tags;
  info->errorFlag = &ctrl->errorFlag;
  info->nSteps = nSteps;
  info->stepBytes = stepBytes;
  info->step = 0;
}

// The LL slots after a FIFO laid out by shmSegmentBytes (SHM segment or NET staging FIFO): nSteps slots of
// llSlotBytes; none (null) when llSlotBytes is 0.
inline void hostFifoLlView(void* base, uint32_t nSteps, uint32_t stepBytes, uint32_t llSlotBytes, ConnInfo* info) {
  info->llBuff = llSlotBytes ? static_cast<char*>(base) + hostFifoBytes(nSteps, stepBytes) : nullptr;
  info->llSlotBytes = llSlotBytes;
}

// Tests only (BRAID_TEST_STEP_BASE, e.g. near LL's 32-bit flag wrap): a GPU communicator's new host FIFO
// starts both counters at `base` instead of 0. Its executors' DevConn::step (DeviceState::upload) and the NET
// proxy (NetProxy::add, which starts from head) take the same value, so every side agrees on the steps.
inline void hostFifoPresetSteps(const ConnInfo& info, int64_t base) {
  if (base <= 0) return;  // as DeviceState::upload: only a positive base presets anything
  __atomic_store_n(info.head, base, __ATOMIC_RELAXED);
  __atomic_store_n(info.tail, base, __ATOMIC_RELEASE);
}

// A process-local FIFO (socket transport): page-aligned, zeroed, freed on destruction.
class HostFifoMem {
 public:
  HostFifoMem() = default;
  ~HostFifoMem() { std::free(base_); }
  HostFifoMem(const HostFifoMem&) = delete;
  HostFifoMem& operator=(const HostFifoMem&) = delete;

  // Returns false when the allocation fails. With llSlotBytes, nSteps LL slots follow the data (zeroed, as
  // LL requires: shmSegmentBytes' layout).
  bool allocate(uint32_t nSteps, uint32_t stepBytes, uint32_t llSlotBytes = 0) {
    std::free(base_);
    const size_t fifo = hostFifoBytes(nSteps, stepBytes);
    bytes_ = fifo + static_cast<size_t>(nSteps) * llSlotBytes;
    base_ = std::aligned_alloc(kHostFifoPage, bytes_);
    if (!base_) return false;
    std::memset(base_, 0, kHostFifoPage);  // control page; data needs no initialisation
    if (llSlotBytes) std::memset(static_cast<char*>(base_) + fifo, 0, bytes_ - fifo);
    nSteps_ = nSteps;
    stepBytes_ = stepBytes;
    llSlotBytes_ = llSlotBytes;
    return true;
  }
  void view(ConnInfo* info) const {
    hostFifoView(base_, nSteps_, stepBytes_, info);
    hostFifoLlView(base_, nSteps_, stepBytes_, llSlotBytes_, info);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  uint32_t nSteps_ = 0;
  uint32_t stepBytes_ = 0;
  uint32_t llSlotBytes_ = 0;
};

}  // namespace braid
