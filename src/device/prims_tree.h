// DevTreePrims<T, Fn>: the SIMPLE-protocol device primitives of the tree all-reduce schedule
// (algo/tree_schedules.h), one object per CTA bound to one tree of one channel: send to and receive from the
// parent, and from and to up to two children. Roles, waits, posts and stops are DevPrims' (prims_simple.h):
// the workers move data after thread 0 has waited for every connection the step touches, the CTA's last warp
// publishes the step on each of them.
//
// reduceCopy combines at most two sources into at most two destinations, so an interior rank with two children
// reduces in two passes: child 0 (+) pre(input) into its own output (local memory, rewritten later by the
// broadcast down), then child 1 (+) that into the parent's slot. Every rank gets the root's bits, so the order
// of the children only has to be the same on every launch, which it is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/prims_simple.h"

#ifdef __CUDACC__

namespace braid {

// A tree CTA's connections: [kTreeUpSend], [kTreeUpRecv] with the parent, then child i's send and receive at
// kTreeDownSend + 2 i and kTreeDownSend + 2 i + 1 (children packed from 0). An absent link has buff == nullptr.
// The same layout, per (channel, tree), is CollLaunchArgs::treeConns.
constexpr int kTreeUpSend = 0;
constexpr int kTreeUpRecv = 1;
constexpr int kTreeDownSend = 2;

struct TreeShared {
  DevConn conn[kDevTreeConns];
  int stop;
  uint32_t stopCall;
};

template <typename T, typename Fn>
class DevTreePrims {
 public:
  // Construct after a __syncthreads that follows thread 0's load of `sh`.
  __device__ DevTreePrims(TreeShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st, int nDown)
      : sh_(sh),
        in_(in),
        out_(out),
        fn_(fn),
        st_(st),
        tid_(static_cast<int>(threadIdx.x)),
        nthreads_(static_cast<int>(blockDim.x)),
        nworkers_(static_cast<int>(blockDim.x) - 32),
        nDown_(nDown) {
    for (int k = 0; k < kDevTreeConns; ++k) step_[k] = sh->conn[k].step;
  }

  __device__ void sendUp(size_t off, size_t n) {
    const uint32_t s = 1u << kTreeUpSend;
    if (poster(s, 0, n)) return;
    if (wait(s, 0, n)) rc<RcMode<1, 1, Fn::kHasPre, false, false>>(in_ + off, nullptr, slot(kTreeUpSend), nullptr, n);
    done();
  }
  __device__ void recvReduceSendUp(size_t off, size_t n) {
    const uint32_t s = 1u << kTreeUpSend;
    if (poster(s, childRecvs(), n)) return;
    if (wait(s, childRecvs(), n)) reduceChildren<false>(off, slot(kTreeUpSend), n);
    done();
  }
  __device__ void recvReduceCopy(size_t inOff, size_t outOff, size_t n) {
    (void)outOff;  // the schedule passes the same offset for both
    if (poster(0, childRecvs(), n)) return;
    if (wait(0, childRecvs(), n)) reduceChildren<Fn::kHasPost>(inOff, out_ + inOff, n);
    done();
  }
  __device__ void sendDown(size_t off, size_t n) {
    if (poster(childSends(), 0, n)) return;
    if (wait(childSends(), 0, n)) {
      if (nDown_ == 1) {
        rc<RcMode<1, 1, false, false, false>>(out_ + off, nullptr, slot(kTreeDownSend), nullptr, n);
      } else {
        rc<RcMode<1, 2, false, false, false>>(out_ + off, nullptr, slot(kTreeDownSend), slot(kTreeDownSend + 2), n);
      }
    }
    done();
  }
  __device__ void recvCopySendDown(size_t off, size_t n) {
    const uint32_t r = 1u << kTreeUpRecv;
    if (poster(childSends(), r, n)) return;
    if (wait(childSends(), r, n)) {
      const T* src = slot(kTreeUpRecv);
      rc<RcMode<1, 2, false, false, false>>(src, nullptr, out_ + off, slot(kTreeDownSend), n);
      // Same source, other destination: no barrier between the passes.
      if (nDown_ == 2) rc<RcMode<1, 1, false, false, false>>(src, nullptr, slot(kTreeDownSend + 2), nullptr, n);
    }
    done();
  }
  __device__ void recvDown(size_t off, size_t n) {
    const uint32_t r = 1u << kTreeUpRecv;
    if (poster(0, r, n)) return;
    if (wait(0, r, n)) rc<RcMode<1, 1, false, false, false>>(slot(kTreeUpRecv), nullptr, out_ + off, nullptr, n);
    done();
  }
  // A single rank (never planned: trees run across nodes), kept so the schedule compiles for any role.
  __device__ void localReduceCopy(size_t inOff, size_t outOff, size_t n) {
    if (tid_ >= nworkers_ || sh_->stop) return;
    rc<RcMode<1, 1, Fn::kHasPre, false, Fn::kHasPost>>(in_ + inOff, nullptr, out_ + outOff, nullptr, n);
    barWorkers(nworkers_);
  }

 private:
  template <typename M>
  __device__ __forceinline__ void rc(const T* s0, const T* s1, T* d0, T* d1, size_t n) {
    reduceCopy<T, Fn, M>(fn_, tid_, nworkers_, s0, s1, d0, d1, n);
  }
  // The slot of connection k for the step being run (wait() advanced the counter past it).
  __device__ __forceinline__ T* slot(int k) { return reinterpret_cast<T*>(devSlot(sh_->conn[k], step_[k] - 1)); }
  __device__ __forceinline__ uint32_t childRecvs() const {
    return (1u << (kTreeDownSend + 1)) | (nDown_ == 2 ? 1u << (kTreeDownSend + 3) : 0u);
  }
  __device__ __forceinline__ uint32_t childSends() const {
    return (1u << kTreeDownSend) | (nDown_ == 2 ? 1u << (kTreeDownSend + 2) : 0u);
  }
  // children (+) pre(input at inOff) -> dst, post-op applied where Post. Two children: child 0's sum goes through
  // this rank's output first (see the file comment); a barrier orders its stores before the second pass, whose
  // threads may read other elements than they wrote (the two passes' alignments can differ).
  template <bool Post>
  __device__ __forceinline__ void reduceChildren(size_t inOff, T* dst, size_t n) {
    const T* c0 = slot(kTreeDownSend + 1);
    if (nDown_ == 1) {
      rc<RcMode<2, 1, false, Fn::kHasPre, Post>>(c0, in_ + inOff, dst, nullptr, n);
      return;
    }
    T* mid = out_ + inOff;
    rc<RcMode<2, 1, false, Fn::kHasPre, false>>(c0, in_ + inOff, mid, nullptr, n);
    barWorkers(nworkers_);
    rc<RcMode<2, 1, false, false, Post>>(slot(kTreeDownSend + 3), mid, dst, nullptr, n);
  }

  __device__ __forceinline__ void devStop(uint32_t call) {
    *reinterpret_cast<volatile uint32_t*>(&sh_->stopCall) = call;
    __threadfence_block();
    *reinterpret_cast<volatile int*>(&sh_->stop) = 1;
  }
  // As DevPrims::skipped: a stop set by a later call than this one leaves this step's post in place.
  __device__ __forceinline__ bool skipped(uint32_t call) const {
    if (!*reinterpret_cast<volatile int*>(&sh_->stop)) return false;
    __threadfence_block();
    return *reinterpret_cast<volatile uint32_t*>(&sh_->stopCall) <= call;
  }
  // Poster warp: meets the workers once their stores are done, then publishes the step on every connection.
  __device__ __forceinline__ bool poster(uint32_t sends, uint32_t recvs, size_t n) {
    if (tid_ < nworkers_) return false;
    const uint32_t call = calls_++;
    barSyncPost(nthreads_);
    if (tid_ == nworkers_ && !skipped(call)) {
      for (int k = 0; k < kDevTreeConns; ++k) {
        if (sends & (1u << k)) devPostSend(sh_->conn[k], static_cast<uint32_t>(n * sizeof(T)));
        if (recvs & (1u << k)) devPostRecv(sh_->conn[k]);
      }
    }
    return true;
  }
  // Workers: thread 0 waits for data on every receive and credit on every send, then all see the slots.
  __device__ __forceinline__ bool wait(uint32_t sends, uint32_t recvs, size_t n) {
    const uint32_t call = calls_++;
    if (tid_ == 0 && !sh_->stop) {
      bool ok = true;
      for (int k = 0; ok && k < kDevTreeConns; ++k)
        if (recvs & (1u << k)) ok = devWaitRecv(st_, sh_->conn[k], step_[k], static_cast<uint32_t>(n * sizeof(T)));
      for (int k = 0; ok && k < kDevTreeConns; ++k)
        if (sends & (1u << k)) ok = devWaitSend(st_, sh_->conn[k], step_[k]);
      if (!ok) devStop(call);
    }
    for (int k = 0; k < kDevTreeConns; ++k)
      if ((sends | recvs) & (1u << k)) ++step_[k];
    barWorkers(nworkers_);
    return !sh_->stop;
  }
  __device__ __forceinline__ void done() { barSyncPost(nthreads_); }

  TreeShared* sh_;
  const T* in_;
  T* out_;
  Fn fn_;
  DevStatus* st_;
  int tid_;
  int nthreads_;
  int nworkers_;
  int nDown_;
  uint64_t step_[kDevTreeConns];  // steps started on each connection (this thread's count)
  uint32_t calls_ = 0;
};

}  // namespace braid

#endif  // __CUDACC__
