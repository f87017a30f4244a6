/* Braid device API: the inline/linkage macros NCCL 2.28's device headers define, the small integer and
 * pointer helpers the device API's inline code needs (namespace nccl::utility), and the trap that marks the
 * parts Braid does not provide (multicast, GPU-initiated networking). */
#ifndef NCCL_DEVICE_UTILITY_H_
#define NCCL_DEVICE_UTILITY_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#if defined(__CUDACC__)
#define NCCL_DEVICE_INLINE __device__ __forceinline__
#define NCCL_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#elif defined(__cplusplus)
#define NCCL_DEVICE_INLINE inline
#define NCCL_HOST_DEVICE_INLINE inline __attribute__((always_inline))
#else
#define NCCL_DEVICE_INLINE static inline
#define NCCL_HOST_DEVICE_INLINE static inline __attribute__((always_inline))
#endif

#ifdef __cplusplus
#define NCCL_EXTERN_C extern "C"
#else
#define NCCL_EXTERN_C
#endif

#if defined(__CUDACC__)
#include <stdio.h>
#include <cuda/atomic>
#endif

#ifdef __cplusplus
namespace nccl {
namespace utility {

/* Only for unevaluated contexts (decltype), like std::declval, without <utility> in device code. */
template <typename T>
T&& declval() noexcept;

template <typename X, typename Y>
NCCL_HOST_DEVICE_INLINE constexpr auto divUp(X x, Y y) -> decltype(x + y) {
  return (x + y - 1) / y;
}

template <typename X, typename Y>
NCCL_HOST_DEVICE_INLINE constexpr auto roundUp(X x, Y y) -> decltype(x + y) {
  return divUp(x, y) * y;
}

/* `a` must be a power of two. */
template <typename X, typename Y>
NCCL_HOST_DEVICE_INLINE constexpr auto alignUp(X x, Y a) -> decltype(x + a) {
  return (x + a - 1) & ~(decltype(x + a))(a - 1);
}

template <typename Int>
NCCL_HOST_DEVICE_INLINE constexpr bool isPow2(Int x) {
  return (x & (x - 1)) == 0;
}

/* A pointer moved by delta4G * 4 GiB: symmetric windows place rank i's copy at base + i * stride4G * 4 GiB,
 * and the addition wraps in the upper 32 bits as the stride arithmetic is defined modulo 2^32. */
template <typename T>
NCCL_HOST_DEVICE_INLINE T* add4G(T* base, uint32_t delta4G) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(base) + (static_cast<uint64_t>(delta4G) << 32));
}

/* Reciprocal for fast division by x on the device (as ncclDevComm's *_rcp32 fields hold): floor(2^32 / x),
 * rounded up when x is a power of two so that division by 1 works too. */
NCCL_HOST_DEVICE_INLINE constexpr uint32_t idivRcp32(uint32_t x) { return uint32_t(-1) / x + (isPow2(x) ? 1u : 0u); }

#if defined(__CUDACC__)
NCCL_DEVICE_INLINE int lane() {
  int id;
  asm("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

NCCL_DEVICE_INLINE uint32_t lanemask_lt() {
  uint32_t mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

/* The acquire half / release half of an ordering, for the load and the store of a barrier. */
NCCL_DEVICE_INLINE cuda::memory_order acquireOrderOf(cuda::memory_order ord) {
  if (ord == cuda::memory_order_release) return cuda::memory_order_relaxed;
  if (ord == cuda::memory_order_acq_rel) return cuda::memory_order_acquire;
  return ord;
}

NCCL_DEVICE_INLINE cuda::memory_order releaseOrderOf(cuda::memory_order ord) {
  if (ord == cuda::memory_order_acquire) return cuda::memory_order_relaxed;
  if (ord == cuda::memory_order_acq_rel) return cuda::memory_order_release;
  return ord;
}
#endif

}  // namespace utility
}  // namespace nccl
#endif /* __cplusplus */

#if defined(__CUDACC__)
/* Device code reached a part of the NCCL device API that Braid declares but does not implement (multicast,
 * GPU-initiated networking), or misused it: print the message, then stop the kernel (its launch fails with
 * cudaErrorLaunchFailure). Braid's ncclDevCommCreate refuses, so only a device communicator built by hand
 * gets here. */
static __device__ __noinline__ __attribute__((noreturn)) void braidDeviceApiTrap(const char* message) {
  printf("Braid device API: %s; trapping\n", message);
  __trap();
  __builtin_unreachable();
}
#endif

#endif /* NCCL_DEVICE_UTILITY_H_ */
