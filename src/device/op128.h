// op128: the lowest device layer (docs/DESIGN.md §4). 16-byte vector loads and stores, the scope-qualified
// loads/stores of FIFO counters, and the fences between them. Everything above goes through these so the
// memory-ordering choices live in one place.
#pragma once

#include <cstdint>

#ifdef __CUDACC__

namespace braid {

struct alignas(16) Pack128 {
  uint64_t lo, hi;
};

// FIFO slots are written by another GPU (or a host proxy) between our reads of the same addresses, so
// data loads bypass the (non-coherent) L1: ld.volatile goes to L2/the owner every time.
__device__ __forceinline__ Pack128 ld128Volatile(const void* p) {
  Pack128 v;
  asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st128(void* p, const Pack128& v) {
  asm volatile("st.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(v.lo), "l"(v.hi) : "memory");
}

// Counters: the reader acquires at system scope (the writer is a peer GPU or a host thread), the writer
// fences at system scope and then stores, so every data store of the CTA (ordered before by the barrier)
// is visible before the counter.
__device__ __forceinline__ uint64_t ldAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ldVolatile32(const volatile uint32_t* p) { return *p; }
__device__ __forceinline__ void stRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stVolatile32(int32_t* p, int32_t v) { *reinterpret_cast<volatile int32_t*>(p) = v; }
__device__ __forceinline__ void fenceSys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
// Between CTAs of one GPU (the split one-shot's guard words).
__device__ __forceinline__ uint64_t ldAcquireGpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void stReleaseGpu(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

}  // namespace braid

#endif  // __CUDACC__
