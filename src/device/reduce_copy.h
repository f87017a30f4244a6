// reduce_copy: the one hot loop (docs/DESIGN.md §4). One or two sources are combined element-wise by Fn
// (pre-op on the rank's own contribution, post-op on the final value) and written to one or two
// destinations, by all threads of the CTA: 16-byte packs, UNROLL packs in flight per thread, then single
// packs, then a scalar tail. Pointers sharing a misalignment do a scalar head first. Where they differ (a
// user buffer at an odd offset against an aligned FIFO), a scalar head aligns the destination and each source
// pack is assembled from the two aligned packs that hold it (ld128Shifted); only destinations that differ from
// each other, or from their element size, fall back to scalar code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "algo/reduce_ops.h"
#include "device/func_any_red.h"
#include "device/op128.h"
#include "device/packed_math.h"

#ifdef __CUDACC__

namespace braid {

// How a value is formed: v = NSrc == 2 ? fn(s0, Pre1 ? pre(s1) : s1) : (Pre0 ? pre(s0) : s0); Post: post(v).
template <int NSrc, int NDst, bool Pre0, bool Pre1, bool Post>
struct RcMode {
  static constexpr int kSrc = NSrc;
  static constexpr int kDst = NDst;
  static constexpr bool kPre0 = Pre0;
  static constexpr bool kPre1 = Pre1;
  static constexpr bool kPost = Post;
};

template <typename T, typename Fn, typename M>
__device__ __forceinline__ T rcElem(const Fn& fn, T a, T b) {
  T v;
  if (M::kSrc == 2) {
    v = fn(a, M::kPre1 ? fn.pre(b) : b);
  } else {
    v = M::kPre0 ? fn.pre(a) : a;
  }
  if (M::kPost) v = fn.post(v);
  return v;
}

template <typename T>
union PackOf {
  Pack128 p;
  T e[16 / sizeof(T)];
};

template <typename T, typename Fn, typename M>
__device__ __forceinline__ Pack128 rcPack(const Fn& fn, const Pack128& a, const Pack128& b) {
  constexpr int kN = 16 / sizeof(T);
  if (M::kSrc == 1 && !M::kPre0 && !M::kPost) return a;  // plain copy: no unpacking
  if constexpr (kPackedSum<T, Fn> && M::kSrc == 2) return packedSum128<T>(a, b);  // FuncSum: no pre/post
  PackOf<T> x, y, r;
  x.p = a;
  y.p = b;
#pragma unroll
  for (int i = 0; i < kN; ++i) r.e[i] = rcElem<T, Fn, M>(fn, x.e[i], y.e[i]);
  return r.p;
}

// Scalar loads bypass L1 too (see ld128Volatile).
template <typename T>
__device__ __forceinline__ T ldVolatileElem(const T* p) {
  T t;
  if (sizeof(T) == 1) {
    uint8_t b = *reinterpret_cast<const volatile uint8_t*>(p);
    memcpy(&t, &b, 1);
  } else if (sizeof(T) == 2) {
    uint16_t b = *reinterpret_cast<const volatile uint16_t*>(p);
    memcpy(&t, &b, 2);
  } else if (sizeof(T) == 4) {
    uint32_t b = *reinterpret_cast<const volatile uint32_t*>(p);
    memcpy(&t, &b, 4);
  } else {
    uint64_t b = *reinterpret_cast<const volatile uint64_t*>(p);
    memcpy(&t, &b, 8);
  }
  return t;
}

template <typename T, typename Fn, typename M>
__device__ __forceinline__ void rcScalar(const Fn& fn, int tid, int nthreads, const T* s0, const T* s1, T* d0, T* d1,
                                         size_t begin, size_t end) {
  for (size_t i = begin + tid; i < end; i += nthreads) {
    T a = ldVolatileElem(s0 + i);
    T b = M::kSrc == 2 ? ldVolatileElem(s1 + i) : a;
    T v = rcElem<T, Fn, M>(fn, a, b);
    d0[i] = v;
    if (M::kDst == 2) d1[i] = v;
  }
}

// The pack loop: Unroll packs in flight per thread, then single packs. load0(off) / load1(off): the sources' packs
// at byte offset off (aligned loads, or ld128Shifted where a source is misaligned against the destinations).
template <int Unroll, typename T, typename Fn, typename M, typename L0, typename L1>
__device__ __forceinline__ void rcPacksWith(const Fn& fn, int tid, int nthreads, const L0& load0, const L1& load1,
                                            char* d0, char* d1, size_t nPacks) {
  size_t p = tid;
  for (; p + static_cast<size_t>(Unroll - 1) * nthreads < nPacks; p += static_cast<size_t>(Unroll) * nthreads) {
    Pack128 a[Unroll], b[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) a[u] = load0((p + static_cast<size_t>(u) * nthreads) * 16);
    if (M::kSrc == 2) {
#pragma unroll
      for (int u = 0; u < Unroll; ++u) b[u] = load1((p + static_cast<size_t>(u) * nthreads) * 16);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      Pack128 v = rcPack<T, Fn, M>(fn, a[u], M::kSrc == 2 ? b[u] : a[u]);
      const size_t off = (p + static_cast<size_t>(u) * nthreads) * 16;
      st128(d0 + off, v);
      if (M::kDst == 2) st128(d1 + off, v);
    }
  }
  for (; p < nPacks; p += nthreads) {
    Pack128 a = load0(p * 16);
    Pack128 b = M::kSrc == 2 ? load1(p * 16) : a;
    Pack128 v = rcPack<T, Fn, M>(fn, a, b);
    st128(d0 + p * 16, v);
    if (M::kDst == 2) st128(d1 + p * 16, v);
  }
}

template <int Unroll, typename T, typename Fn, typename M>
__device__ __forceinline__ void rcPacks(const Fn& fn, int tid, int nthreads, const char* s0, const char* s1, char* d0,
                                        char* d1, size_t nPacks) {
  rcPacksWith<Unroll, T, Fn, M>(
      fn, tid, nthreads, [s0](size_t off) { return ld128Volatile(s0 + off); },
      [s1](size_t off) { return ld128Volatile(s1 + off); }, d0, d1, nPacks);
}

// The 16 bytes at a + sh (a 16-byte aligned, 0 <= sh < 16), from the aligned packs at a and a + 16: both lie in
// the 16-byte blocks that hold the wanted bytes, so no load leaves the buffer's pages. The shift is the same
// for every thread of the CTA, so the switch does not diverge.
__device__ __forceinline__ Pack128 ld128Shifted(const char* a, uint32_t sh) {
  if (sh == 0) return ld128Volatile(a);
  const Pack128 x = ld128Volatile(a), y = ld128Volatile(a + 16);
  const uint32_t w[8] = {static_cast<uint32_t>(x.lo), static_cast<uint32_t>(x.lo >> 32),
                         static_cast<uint32_t>(x.hi), static_cast<uint32_t>(x.hi >> 32),
                         static_cast<uint32_t>(y.lo), static_cast<uint32_t>(y.lo >> 32),
                         static_cast<uint32_t>(y.hi), static_cast<uint32_t>(y.hi >> 32)};
  const uint32_t r = (sh & 3) * 8;  // __funnelshift_r by 0 keeps the low word
  uint32_t o[4];
  switch (sh >> 2) {
    case 0:
#pragma unroll
      for (int i = 0; i < 4; ++i) o[i] = __funnelshift_r(w[i], w[i + 1], r);
      break;
    case 1:
#pragma unroll
      for (int i = 0; i < 4; ++i) o[i] = __funnelshift_r(w[i + 1], w[i + 2], r);
      break;
    case 2:
#pragma unroll
      for (int i = 0; i < 4; ++i) o[i] = __funnelshift_r(w[i + 2], w[i + 3], r);
      break;
    default:
#pragma unroll
      for (int i = 0; i < 4; ++i) o[i] = __funnelshift_r(w[i + 3], w[i + 4], r);
      break;
  }
  Pack128 v;
  v.lo = static_cast<uint64_t>(o[0]) | (static_cast<uint64_t>(o[1]) << 32);
  v.hi = static_cast<uint64_t>(o[2]) | (static_cast<uint64_t>(o[3]) << 32);
  return v;
}

// rcPacks over sources that are not aligned with the destination: source k's pack i is the 16 bytes at
// ak + 16 i + shk (ak aligned).
template <int Unroll, typename T, typename Fn, typename M>
__device__ __forceinline__ void rcPacksShifted(const Fn& fn, int tid, int nthreads, const char* a0, uint32_t sh0,
                                               const char* a1, uint32_t sh1, char* d0, char* d1, size_t nPacks) {
  rcPacksWith<Unroll, T, Fn, M>(
      fn, tid, nthreads, [a0, sh0](size_t off) { return ld128Shifted(a0 + off, sh0); },
      [a1, sh1](size_t off) { return ld128Shifted(a1 + off, sh1); }, d0, d1, nPacks);
}

// Sources aligned differently from the destinations: a scalar head up to the destinations' 16-byte boundary,
// shifted packs, a scalar tail. Destinations that differ from each other (or sit off their element size) go
// element by element.
template <typename T, typename Fn, typename M>
__device__ __forceinline__ void reduceCopyShifted(const Fn& fn, int tid, int nthreads, const T* s0, const T* s1,
                                                  T* d0, T* d1, size_t n) {
  const uintptr_t dmis = reinterpret_cast<uintptr_t>(d0) & 15;
  if (dmis % sizeof(T) != 0 || (M::kDst == 2 && (reinterpret_cast<uintptr_t>(d1) & 15) != dmis)) {
    rcScalar<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, 0, n);
    return;
  }
  size_t head = dmis ? (16 - dmis) / sizeof(T) : 0;
  if (head > n) head = n;
  if (head) rcScalar<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, 0, head);
  constexpr size_t kPerPack = 16 / sizeof(T);
  const size_t nPacks = (n - head) / kPerPack;
  if (nPacks) {
    const char* b0 = reinterpret_cast<const char*>(s0 + head);
    const char* b1 = reinterpret_cast<const char*>(M::kSrc == 2 ? s1 + head : s0 + head);
    const uint32_t sh0 = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(b0) & 15);
    const uint32_t sh1 = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(b1) & 15);
    rcPacksShifted<4, T, Fn, M>(fn, tid, nthreads, b0 - sh0, sh0, b1 - sh1, sh1, reinterpret_cast<char*>(d0 + head),
                                reinterpret_cast<char*>(M::kDst == 2 ? d1 + head : d0 + head), nPacks);
  }
  const size_t done = head + nPacks * kPerPack;
  if (done < n) rcScalar<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, done, n);
}

// The body of reduceCopy (below).
template <typename T, typename Fn, typename M>
__device__ __forceinline__ void reduceCopyBody(const Fn& fn, int tid, int nthreads, const T* s0, const T* s1, T* d0,
                                               T* d1, size_t n) {
  if (n == 0) return;
  const uintptr_t mis = reinterpret_cast<uintptr_t>(s0) & 15;
  bool same = (reinterpret_cast<uintptr_t>(d0) & 15) == mis;
  if (M::kSrc == 2) same = same && (reinterpret_cast<uintptr_t>(s1) & 15) == mis;
  if (M::kDst == 2) same = same && (reinterpret_cast<uintptr_t>(d1) & 15) == mis;
  if (!same || mis % sizeof(T) != 0) {
    reduceCopyShifted<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, n);
    return;
  }
  size_t head = mis ? (16 - mis) / sizeof(T) : 0;
  if (head > n) head = n;
  if (head) rcScalar<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, 0, head);
  constexpr size_t kPerPack = 16 / sizeof(T);
  const size_t nPacks = (n - head) / kPerPack;
  // Copies keep more loads in flight; reductions are register-heavier.
  constexpr int kUnroll = (M::kSrc == 1 && !M::kPre0 && !M::kPost) ? 8 : 4;
  rcPacks<kUnroll, T, Fn, M>(fn, tid, nthreads, reinterpret_cast<const char*>(s0 + head),
                             reinterpret_cast<const char*>(M::kSrc == 2 ? s1 + head : s0 + head),
                             reinterpret_cast<char*>(d0 + head), reinterpret_cast<char*>(M::kDst == 2 ? d1 + head : d0 + head),
                             nPacks);
  const size_t done = head + nPacks * kPerPack;
  if (done < n) rcScalar<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, done, n);
}

// Whether a reducing kernel of T calls reduceCopy out of line: one copy per (T, Fn, mode) in the kernel,
// called from every primitive, instead of the unrolled loop inlined at each of the ring schedules' ~20
// primitive calls. Out of line compiles 2-4x faster, but a call costs run time where the inlined loop
// does not (the callee saves registers to the stack): on 2xH200 int8 and int64 all-reduce ran 262/270 GB/s
// outlined against 301/297 inlined at 64 MB (NCCL 266/272) and int8 reduce-scatter 238 against 260, while
// fp16/bf16/fp8 measured the same both ways (docs/TUNING.md, "Device primitives"). So only half
// and the fp8 types, whose inlined objects were the slowest to build, stay out of line (and every reduction of the
// shared FuncAnyRed kernels, through reduceCopyAnyRed below). Clean sm_90 objects
// on the 2-core build machine (nvcc 13.0): int8 70 s inlined (25 outlined), int32 38 (17), int64 30 (13);
// the inlined integer kernels spill 8-88 bytes in a few kernels and are still the faster ones.
template <typename T>
struct RcOutlineType
    : std::integral_constant<bool, (sizeof(T) == 1 && !std::is_integral<T>::value) || std::is_same<T, Half>::value> {};
template <typename T, typename Fn>
constexpr bool kRcOutline = RcOutlineType<T>::value && !std::is_same<Fn, FuncCopy>::value;

// Out of line: the functor comes by value (a reference would put stateful ones, pre-multiplied sums and
// integer averages, in a stack frame).
template <typename T, typename Fn, typename M>
__device__ __noinline__ void reduceCopyOutlined(const Fn fn, int tid, int nthreads, const T* s0, const T* s1, T* d0,
                                                T* d1, size_t n) {
  reduceCopyBody<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, n);
}

// M without the pre / post steps that Fn does not have (FuncAnyRed's modes carry both for whichever reduction runs).
template <typename Fn, typename M>
using RcModeOf = RcMode<M::kSrc, M::kDst, M::kPre0 && Fn::kHasPre, M::kPre1 && Fn::kHasPre, M::kPost && Fn::kHasPost>;

// An in-place copy (a rank's own part where the reduction has no pre or post step) has nothing to do, as in the
// kernels of one reduction (DevPrims::localReduceCopy).
template <typename T, typename Fn, typename M>
__device__ __forceinline__ void reduceCopyAs(const Fn& fn, int tid, int nthreads, const T* s0, const T* s1, T* d0,
                                             T* d1, size_t n) {
  using R = RcModeOf<Fn, M>;
  if (R::kSrc == 1 && R::kDst == 1 && !R::kPre0 && !R::kPost && s0 == d0) return;
  reduceCopyBody<T, Fn, R>(fn, tid, nthreads, s0, s1, d0, d1, n);
}

// FuncAnyRed on SIMPLE: the reduction is read once per call, and that reduction's own loop runs, out of line (one copy
// per mode in the kernel, as kRcOutline). Only the reductions its kernels are chosen for are compiled in
// (simpleAnyServes, which the kernel selection in coll_kernel.cuh follows); another one cannot arrive, and would stop
// the kernel rather than compute the wrong reduction.
template <typename T, typename M>
__device__ __noinline__ void reduceCopyAnyRed(const FuncAnyRed<T> fn, int tid, int nthreads, const T* s0, const T* s1,
                                              T* d0, T* d1, size_t n) {
  switch (fn.red()) {
    case RedKind::Prod:
      if constexpr (simpleAnyServes<T>(RedKind::Prod))
        return reduceCopyAs<T, FuncProd<T>, M>({}, tid, nthreads, s0, s1, d0, d1, n);
      break;
    case RedKind::Max:
      return reduceCopyAs<T, FuncMax<T>, M>({}, tid, nthreads, s0, s1, d0, d1, n);
    case RedKind::Min:
      return reduceCopyAs<T, FuncMin<T>, M>({}, tid, nthreads, s0, s1, d0, d1, n);
    case RedKind::PreMulSum:
      if constexpr (simpleAnyServes<T>(RedKind::PreMulSum))
        return reduceCopyAs<T, FuncPreMulSum<T>, M>(fn.preMulSum(), tid, nthreads, s0, s1, d0, d1, n);
      break;
    case RedKind::SumPostDiv:
      if constexpr (simpleAnyServes<T>(RedKind::SumPostDiv))
        return reduceCopyAs<T, FuncSumPostDiv<T>, M>(fn.sumPostDiv(), tid, nthreads, s0, s1, d0, d1, n);
      break;
    case RedKind::Sum:
      break;
  }
  __trap();
}

// All threads of the CTA call this with the same arguments. s1/d1 are ignored unless M uses them.
template <typename T, typename Fn, typename M>
__device__ __forceinline__ void reduceCopy(const Fn& fn, int tid, int nthreads, const T* s0, const T* s1, T* d0, T* d1,
                                           size_t n) {
  if constexpr (IsFuncAnyRed<Fn>::value && (M::kSrc == 2 || M::kPre0 || M::kPost)) {
    reduceCopyAnyRed<T, M>(fn, tid, nthreads, s0, s1, d0, d1, n);
  } else if constexpr (kRcOutline<T, Fn>) {
    reduceCopyOutlined<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, n);
  } else {
    reduceCopyBody<T, Fn, M>(fn, tid, nthreads, s0, s1, d0, d1, n);
  }
}

}  // namespace braid

#endif  // __CUDACC__
