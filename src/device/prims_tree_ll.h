// DevTreePrimsLL<T, Fn>: the LL-protocol device primitives of the tree all-reduce schedule (algo/tree_schedules.h),
// one object per CTA bound to one tree of one channel, with DevTreePrims' calls (prims_tree.h). Each link (parent,
// up to two children) is a PrimsShared holding that peer's send and receive connection, as the one-shot over every
// peer holds its peers (one_shot_peers.cuh), so the LL waits and checks (devPollMustStop) and the clean steps
// (DevPrimsLL::begin) serve it unchanged.
//
// A call is one LL step on every link it touches: thread 0 takes the credit of every send (and marks the step LL in
// its sizes word for a SIMPLE receiver or a NET proxy), then every thread takes lines i, i + nthreads, ...: it loads
// its own word, waits for the line of each receive, combines, stores to the output and writes the line to each
// send. Over NET a send step is published with tail after a barrier and a fence (the proxy ships it, conn_info.h);
// receives are handed back with head after a barrier. Whether to go on is decided CTA-wide after each step
// (__syncthreads_or), so no thread leaves the schedule while others wait at its barriers.
//
// Children are reduced in the order DevTreePrims reduces them: child 0 (+) pre(input), then child 1 (+) that; every
// rank ends with the root's bits, so the order only has to be the same on every launch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/ll_protocol.h"
#include "device/prims_ll.h"

#ifdef __CUDACC__

namespace braid {

// The links of a tree CTA: the parent, then the children packed from 1.
constexpr int kTreeLinks = 3;
constexpr int kTreeParentLink = 0;

template <typename T, typename Fn>
class DevTreePrimsLL : public DevWordPrims<DevTreePrimsLL<T, Fn>, T, Fn> {
  using Base = DevWordPrims<DevTreePrimsLL<T, Fn>, T, Fn>;
  friend Base;
  using Base::in_;
  using Base::load;
  using Base::nthreads_;
  using Base::out_;
  using Base::pre;
  using Base::reduce;
  using Base::st_;
  using Base::store;
  using Base::tid_;

 public:
  // links[kTreeParentLink] is the parent's (send.buff null: none), links[1 ..] the children's (nDown of them).
  // Construct after a __syncthreads that follows the links' load (and their clean steps).
  __device__ DevTreePrimsLL(PrimsShared* links, int nDown, const T* in, T* out, const Fn& fn, DevStatus* st)
      : Base(links, in, out, fn, st), links_(links), nDown_(nDown) {
    for (int j = 0; j < kTreeLinks; ++j) {
      sStep_[j] = links[j].send.step;
      rStep_[j] = links[j].recv.step;
    }
  }

  __device__ void sendUp(size_t off, size_t n) { step<kOwnInput, false, false>(0, kParent, in_ + off, nullptr, n); }
  __device__ void recvReduceSendUp(size_t off, size_t n) {
    step<kOwnInput, false, false>(children(), kParent, in_ + off, nullptr, n);
  }
  __device__ void recvReduceCopy(size_t inOff, size_t outOff, size_t n) {
    step<kOwnInput, Fn::kHasPost, true>(children(), 0, in_ + inOff, out_ + outOff, n);
  }
  __device__ void sendDown(size_t off, size_t n) {
    step<kOwnOutput, false, false>(0, children(), out_ + off, nullptr, n);
  }
  __device__ void recvCopySendDown(size_t off, size_t n) {
    step<kOwnNone, false, true>(kParent, children(), nullptr, out_ + off, n);
  }
  __device__ void recvDown(size_t off, size_t n) { step<kOwnNone, false, true>(kParent, 0, nullptr, out_ + off, n); }
  // A single rank (never planned: trees run across nodes), kept so the schedule compiles for any role.
  __device__ void localReduceCopy(size_t inOff, size_t outOff, size_t n) { Base::localReduceCopy(inOff, outOff, n); }

  // All threads, after the schedule: each link's step counters back to its PrimsShared (thread 0).
  __device__ void saveSteps() {
    __syncthreads();
    if (tid_ == 0)
      for (int j = 0; j < kTreeLinks; ++j) {
        links_[j].send.step = sStep_[j];
        links_[j].recv.step = rStep_[j];
      }
  }

 private:
  static constexpr int kOwnNone = 0;    // the word is what arrives
  static constexpr int kOwnInput = 1;   // pre(input), the received words reduced into it
  static constexpr int kOwnOutput = 2;  // the output (the root's result going down)
  static constexpr uint32_t kParent = 1u << kTreeParentLink;
  __device__ __forceinline__ uint32_t children() const { return nDown_ == 2 ? 6u : 2u; }

  __device__ __forceinline__ static char* slot(const DevConn& c, uint64_t step) {
    return c.llBuff + fifoSlot(step, c.nSteps) * static_cast<size_t>(c.llSlotBytes);
  }
  __device__ __forceinline__ bool stopped() const {
    for (int j = 0; j < kTreeLinks; ++j)
      if (*reinterpret_cast<volatile const int*>(&links_[j].stop)) return true;
    return false;
  }
  __device__ __forceinline__ bool poll(int j, const char* line, uint32_t flag, uint64_t* payload) {
    int spins = 0;
    DevWaitClock clock;
    while (!llTryLoadLine(line, flag, payload)) {
      if (++spins == 1024) {
        spins = 0;
        if (devPollMustStop(
                &links_[j], st_, links_[j].recv.peer, &clock, [&] { return llTryLoadLine(line, flag, payload); },
                rStep_[j]))
          return false;
      }
    }
    return true;
  }

  // One step: receives on the links of `recvs`, sends on those of `sends` (bit j: link j), n elements.
  template <int Own, bool Post, bool Out>
  __device__ void step(uint32_t recvs, uint32_t sends, const T* src, T* dst, size_t n) {
    if (dead_) return;
    if (tid_ == 0) {
      for (int j = 0; j < kTreeLinks; ++j) {
        if (!(sends & (1u << j))) continue;
        DevConn& c = links_[j].send;
        if (!devWaitSend(st_, c, sStep_[j])) {
          links_[j].stop = 1;
          break;
        }
        // After the credit: the receiver reads this slot's size for this step only (kDevLlStepMark).
        if (c.sizes)
          stVolatile32(c.sizes + fifoSlot(sStep_[j], c.nSteps), static_cast<int32_t>(n * sizeof(T) | kDevLlStepMark));
      }
    }
    __syncthreads();
    if (!stopped()) lines<Own, Post, Out>(recvs, sends, src, dst, n);
    bool net = false;
    for (int j = 0; j < kTreeLinks; ++j)
      if ((sends & (1u << j)) && (links_[j].send.flags & kDevConnNetLl)) net = true;
    if (net) {
      // Every line written before the proxy may ship the step.
      __syncthreads();
      if (tid_ == 0 && !stopped()) {
        fenceSys();
        for (int j = 0; j < kTreeLinks; ++j)
          if ((sends & (1u << j)) && (links_[j].send.flags & kDevConnNetLl))
            stRelaxedSys(links_[j].send.tail, sStep_[j] + 1);
      }
    }
    dead_ = __syncthreads_or(stopped());
    if (!dead_ && tid_ == 0)
      for (int j = 0; j < kTreeLinks; ++j)
        if (recvs & (1u << j)) stRelaxedSys(links_[j].recv.head, rStep_[j] + 1);
    for (int j = 0; j < kTreeLinks; ++j) {
      if (recvs & (1u << j)) ++rStep_[j];
      if (sends & (1u << j)) ++sStep_[j];
    }
  }

  // The lines of one step. A thread issues its loads of every receive's line before it waits on any.
  template <int Own, bool Post, bool Out>
  __device__ __forceinline__ void lines(uint32_t recvs, uint32_t sends, const T* src, T* dst, size_t n) {
    const size_t count = llLines(n * sizeof(T));
    for (size_t i = tid_; i < count; i += nthreads_) {
      uint64_t v = 0;
      if (Own == kOwnInput) v = pre(load(src, n, i));
      if (Own == kOwnOutput) v = load(src, n, i);
      LlLine got[kTreeLinks];
#pragma unroll
      for (int j = 0; j < kTreeLinks; ++j)
        if (recvs & (1u << j)) got[j] = llLoadLine(slot(links_[j].recv, rStep_[j]) + i * kLlLineBytes);
      const int last = (recvs & 4u) ? 2 : (recvs & 2u) ? 1 : 0;
#pragma unroll
      for (int j = 0; j < kTreeLinks; ++j) {
        if (!(recvs & (1u << j))) continue;
        const uint32_t flag = llFlag(rStep_[j]);
        uint64_t w;
        if (!llLineReady(got[j], flag, &w) && !poll(j, slot(links_[j].recv, rStep_[j]) + i * kLlLineBytes, flag, &w))
          return;
        v = Own == kOwnInput ? reduce(w, v, Post && j == last) : w;
      }
      if (Out) store(dst, n, i, v);
#pragma unroll
      for (int j = 0; j < kTreeLinks; ++j)
        if (sends & (1u << j)) llStoreLine(slot(links_[j].send, sStep_[j]) + i * kLlLineBytes, v, llFlag(sStep_[j]));
    }
  }

  PrimsShared* links_;
  int nDown_;
  bool dead_ = false;  // a wait failed on some link: the remaining steps are skipped (CTA-wide)
  uint64_t sStep_[kTreeLinks];
  uint64_t rStep_[kTreeLinks];
};

}  // namespace braid

#endif  // __CUDACC__
