// DevPrimsLL128<T, Fn>: the LL128-protocol device Primitives (wire rules: algo/ll128_protocol.h), with
// DevPrims' calls (DevWordPrims) so the ring schedules run on them unchanged. Warps move 512-byte groups of
// four 128-byte lines: each lane loads or stores its 16 bytes with one vector instruction, the whole warp at
// once (every loop below is warp-uniform, so all 32 lanes always take part and each line leaves or arrives as
// one 128-byte transaction). The receiving warp reloads its group until every line's flag lane sees the
// step's flag (__any_sync). No tail, no fence, no cleaning (64-bit flags never repeat): after a step's
// groups are read, a barrier and thread 0's head store hand the slot back; sends wait for head credits as
// in SIMPLE. The executor picks LL128 only where every rank's ring is NVLink P2P on sm_90+.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/ll128_protocol.h"
#include "device/prims_ll.h"

#ifdef __CUDACC__

namespace braid {

__device__ __forceinline__ void ll128Load(const char* p, uint64_t* v0, uint64_t* v1) {
  asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(*v0), "=l"(*v1) : "l"(p) : "memory");
}
__device__ __forceinline__ void ll128Store(char* p, uint64_t v0, uint64_t v1) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(v0), "l"(v1) : "memory");
}

template <typename T, typename Fn>
class DevPrimsLL128 : public DevWordPrims<DevPrimsLL128<T, Fn>, T, Fn> {
  BRAID_WORD_PRIMS_MEMBERS(DevPrimsLL128);
  static constexpr unsigned kFullMask = 0xffffffffu;

 public:
  __device__ DevPrimsLL128(PrimsShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st)
      : Base(sh, in, out, fn, st) {}

 private:
  __device__ __forceinline__ char* slot(const DevConn& c, uint64_t step) const {
    return c.ll128Buff + fifoSlot(step, c.nSteps) * static_cast<size_t>(c.ll128SlotBytes);
  }
  // The whole warp: reloads the lane's 16 bytes of a group until every line's flag lane holds `flag`.
  // False (warp-uniform) when the CTA must stop; lane 0 runs the checks and broadcasts the verdict.
  __device__ __forceinline__ bool waitGroup(const char* p, uint64_t flag, bool flagLane, uint64_t* v0, uint64_t* v1,
                                            DevWaitClock* clock) {
    int spins = 0;
    while (__any_sync(kFullMask, flagLane && *v1 != flag)) {
      if (++spins == 1024) {
        spins = 0;
        int stop = 0;
        if ((tid_ & 31) == 0) stop = devPollMustStop(sh_, st_, sh_->recv.peer, clock, [] { return false; });
        if (__shfl_sync(kFullMask, stop, 0)) return false;
      }
      ll128Load(p, v0, v1);
    }
    return true;
  }

  // One step of n elements: combine(received word d, own(d)) for each data word d; written to `out` (if any)
  // and sent. Warp w takes groups w, w + nWarps, ... in batches of kUnroll: it issues the batch's own loads,
  // then its slot loads, before waiting on any (one memory latency covers the batch), then computes and
  // stores. (Loading the own input per group after the wait serialised four HBM latencies per batch behind
  // the volatile stores: 8 GB/s per channel.)
  static constexpr int kUnroll = 4;
  template <bool Recv, bool Send, bool Own, typename OwnFn, typename Combine>
  __device__ void run(size_t n, OwnFn own, Combine combine, T* out, size_t outN) {
    if (Send) waitCredit();
    __syncthreads();
    if (!sh_->stop) {
      const size_t bytes = n * sizeof(T);
      const size_t words = ll128Words(bytes), groups = ll128Groups(bytes);
      const char* rs = Recv ? slot(sh_->recv, recvStep_) : nullptr;
      char* ss = Send ? slot(sh_->send, sendStep_) : nullptr;
      const uint64_t rflag = ll128Flag(recvStep_), sflag = ll128Flag(sendStep_);
      const int lane = tid_ & 31;
      const size_t warp = static_cast<size_t>(tid_ >> 5), nWarps = static_cast<size_t>(nthreads_ >> 5);
      const bool flagLane = ll128LaneHoldsFlag(lane);
      DevWaitClock clock;
      for (size_t g0 = warp; g0 < groups; g0 += nWarps * kUnroll) {  // warp-uniform
        uint64_t r0[kUnroll] = {}, r1[kUnroll] = {}, o0[kUnroll] = {}, o1[kUnroll] = {};
        if (Own) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const size_t g = g0 + u * nWarps;
            const size_t d = ll128LaneFirstWord(g, lane);
            if (g < groups && d < words) o0[u] = own(d);
            if (g < groups && !flagLane && d + 1 < words) o1[u] = own(d + 1);
          }
        }
        // The 16-byte loads and stores below must issue as one instruction per warp (one 128-byte transaction
        // per line); the element code around them may diverge, so the warp reconverges explicitly.
        __syncwarp();
        if (Recv) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const size_t g = g0 + u * nWarps;
            if (g < groups) ll128Load(rs + ll128LaneOffset(g, lane), &r0[u], &r1[u]);
          }
          bool stopped = false;
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const size_t g = g0 + u * nWarps;
            if (g < groups && !stopped &&
                !waitGroup(rs + ll128LaneOffset(g, lane), rflag, flagLane, &r0[u], &r1[u], &clock))
              stopped = true;
          }
          if (stopped) break;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const size_t g = g0 + u * nWarps;
          if (g >= groups) break;
          const size_t d = ll128LaneFirstWord(g, lane);
          const bool has0 = d < words, has1 = !flagLane && d + 1 < words;
          const uint64_t v0 = has0 ? combine(r0[u], o0[u]) : 0;
          const uint64_t v1 = flagLane ? sflag : (has1 ? combine(r1[u], o1[u]) : 0);
          if (out) {
            if (has0) store(out, outN, d, v0);
            if (has1) store(out, outN, d + 1, v1);
          }
          if (Send) {
            __syncwarp();
            ll128Store(ss + ll128LaneOffset(g, lane), v0, v1);
          }
        }
      }
    }
    if (Recv) {
      __syncthreads();
      if (tid_ == 0 && !sh_->stop) stRelaxedSys(sh_->recv.head, recvStep_ + 1);
      ++recvStep_;
    }
    if (Send) ++sendStep_;
  }
};

}  // namespace braid

#endif  // __CUDACC__
