/* Braid device API: the cooperative groups of NCCL 2.28's device API (ncclCoop*), the sets of threads that
 * call a device-API function together. Each offers thread_rank(), size(), num_threads() and sync(), the
 * subset of CUDA cooperative groups the device API relies on. Device code only. */
#ifndef NCCL_DEVICE_COOP_H_
#define NCCL_DEVICE_COOP_H_

#include "utility.h"

#if defined(__CUDACC__)

/* An aligned power-of-two group of lanes inside one warp (1: a thread, 32: the warp). */
template <int nThreadsPow2>
struct ncclCoopTile {
  static_assert(nThreadsPow2 > 0 && nThreadsPow2 <= 32 && nccl::utility::isPow2(nThreadsPow2),
                "ncclCoopTile: the tile is a power of two of at most 32 threads");
  NCCL_DEVICE_INLINE int thread_rank() const { return nccl::utility::lane() & (nThreadsPow2 - 1); }
  NCCL_DEVICE_INLINE constexpr int size() const { return nThreadsPow2; }
  NCCL_DEVICE_INLINE constexpr int num_threads() const { return nThreadsPow2; }
  NCCL_DEVICE_INLINE uint32_t laneMask() const {
    const uint32_t ones = nThreadsPow2 == 32 ? 0xffffffffu : ((1u << nThreadsPow2) - 1u);
    return ones << (nccl::utility::lane() & ~(nThreadsPow2 - 1));
  }
  NCCL_DEVICE_INLINE void sync() {
    if (nThreadsPow2 > 1) __syncwarp(laneMask());
  }
};

typedef ncclCoopTile<1> ncclCoopThread;
typedef ncclCoopTile<32> ncclCoopWarp;

/* Any subset of the lanes of one warp, given by mask. */
struct ncclCoopLanes {
  uint32_t lmask;
  NCCL_DEVICE_INLINE constexpr ncclCoopLanes(uint32_t mask = 0xffffffffu) : lmask(mask) {}
  NCCL_DEVICE_INLINE int thread_rank() const { return __popc(lmask & nccl::utility::lanemask_lt()); }
  NCCL_DEVICE_INLINE int size() const { return __popc(lmask); }
  NCCL_DEVICE_INLINE int num_threads() const { return __popc(lmask); }
  NCCL_DEVICE_INLINE void sync() { __syncwarp(lmask); }
};

/* nWarps consecutive warps from warp0, named by an id in [0, 15]: the id picks the hardware barrier (1 + id;
 * barrier 0 is __syncthreads'), so two spans that run at once must have different ids. */
struct ncclCoopWarpSpan {
  uint32_t warp0 : 8, nWarps : 8, id : 8;
  NCCL_DEVICE_INLINE constexpr ncclCoopWarpSpan(int firstWarp, int warps, int spanId)
      : warp0(firstWarp), nWarps(warps), id(spanId) {}
  NCCL_DEVICE_INLINE int thread_rank() const { return int(threadIdx.x) - 32 * int(warp0); }
  NCCL_DEVICE_INLINE int size() const { return 32 * int(nWarps); }
  NCCL_DEVICE_INLINE int num_threads() const { return 32 * int(nWarps); }
  NCCL_DEVICE_INLINE void sync() { asm volatile("bar.sync %0, %1;" ::"r"(1 + id), "r"(32 * nWarps) : "memory"); }
};

/* The whole thread block. */
struct ncclCoopCta {
  NCCL_DEVICE_INLINE int thread_rank() const { return threadIdx.x; }
  NCCL_DEVICE_INLINE int size() const { return blockDim.x; }
  NCCL_DEVICE_INLINE int num_threads() const { return blockDim.x; }
  NCCL_DEVICE_INLINE void sync() { __syncthreads(); }
};

/* The lanes of the calling warp that belong to the group. */
template <int n>
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopTile<n> coop) {
  return coop.laneMask();
}
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopLanes coop) { return coop.lmask; }
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopWarpSpan) { return 0xffffffffu; }
NCCL_DEVICE_INLINE uint32_t ncclCoopGetLaneMask(ncclCoopCta) { return 0xffffffffu; }

/* Whether the group is known at compile time to be one thread. */
template <int n>
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopTile<n>) {
  return n == 1;
}
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopLanes) { return false; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopWarpSpan) { return false; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopIsThread(ncclCoopCta) { return false; }

/* Whether the group never spans more than one warp. */
template <int n>
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopTile<n>) {
  return true;
}
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopLanes) { return true; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopWarpSpan) { return false; }
NCCL_DEVICE_INLINE constexpr bool ncclCoopWithinWarp(ncclCoopCta) { return false; }

/* The lanes of this warp that are running now. */
NCCL_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced() { return ncclCoopLanes(__activemask()); }

/* The lanes of this warp that may act together inside a collective call of `coop`: a group of whole warps
 * runs every lane of each, a group inside a warp only its own lanes. */
template <typename Coop>
NCCL_DEVICE_INLINE ncclCoopWarp ncclCoopCoalesced(Coop) {
  return ncclCoopWarp();
}
NCCL_DEVICE_INLINE ncclCoopLanes ncclCoopCoalesced(ncclCoopLanes coop) { return coop; }
template <int n>
NCCL_DEVICE_INLINE ncclCoopTile<n> ncclCoopCoalesced(ncclCoopTile<n> coop) {
  return coop;
}

/* `value` as held by the group's thread `root`, returned to every thread of the group. Warp-level groups
 * shuffle 32-bit words; multi-warp groups go through shared memory (16 bytes at most). */
template <int n, typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopTile<n> coop, T value, int root, bool entrySync = true) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  union {
    T v;
    uint32_t w[kWords];
  } u;
  u.v = value;
  const uint32_t mask = coop.laneMask();
#pragma unroll
  for (int i = 0; i < kWords; i++) u.w[i] = __shfl_sync(mask, u.w[i], root, n);
  return u.v;
}

template <typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopLanes coop, T value, int root, bool entrySync = true) {
  /* The lane holding the root-th set bit of the mask. */
  const int srcLane = __fns(coop.lmask, 0, root + 1);
  constexpr int kWords = (sizeof(T) + 3) / 4;
  union {
    T v;
    uint32_t w[kWords];
  } u;
  u.v = value;
#pragma unroll
  for (int i = 0; i < kWords; i++) u.w[i] = __shfl_sync(coop.lmask, u.w[i], srcLane);
  return u.v;
}

/* One 16-byte slot per warp-span id, one for the whole block. */
NCCL_DEVICE_INLINE ulonglong2* ncclCoopBcastSlotsWarpSpan() {
  __shared__ ulonglong2 slots[16];
  return slots;
}
NCCL_DEVICE_INLINE ulonglong2* ncclCoopBcastSlotCta() {
  __shared__ ulonglong2 slot;
  return &slot;
}

template <typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopWarpSpan coop, T value, int root, bool entrySync = true) {
  static_assert(sizeof(T) <= sizeof(ulonglong2), "ncclCoopBcast over warps carries at most 16 bytes");
  T* slot = reinterpret_cast<T*>(&ncclCoopBcastSlotsWarpSpan()[coop.id]);
  if (entrySync) coop.sync();  // the previous broadcast's readers are done with the slot
  if (coop.thread_rank() == root) *slot = value;
  coop.sync();
  return *slot;
}

template <typename T>
NCCL_DEVICE_INLINE T ncclCoopBcast(ncclCoopCta coop, T value, int root, bool entrySync = true) {
  static_assert(sizeof(T) <= sizeof(ulonglong2), "ncclCoopBcast over a block carries at most 16 bytes");
  T* slot = reinterpret_cast<T*>(ncclCoopBcastSlotCta());
  if (entrySync) coop.sync();
  if (coop.thread_rank() == root) *slot = value;
  coop.sync();
  return *slot;
}

#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_COOP_H_ */
