// DevPrimsLL<T, Fn>: the LL-protocol device Primitives (wire rules: algo/ll_protocol.h), with the same
// calls as DevPrims so the ring schedules run on them unchanged. Every thread of the CTA moves data; a step
// carries at most llSlotDataBytes(llSlotBytes) bytes as 16-byte lines of two flagged 8-byte words, written
// with one vector store and polled by the receiving thread until both flags are the step's. No tail, no
// fence: after a step's lines are read, a barrier and thread 0's head store hand the slot back. (Over NET
// the sender also publishes tail after a barrier and a fence, for the proxy that ships the lines.) Sends wait
// for head credits as in SIMPLE. The step counters are the connection's (shared with SIMPLE). At its first
// step, an operation first runs nSteps clean steps per direction it uses when llNeedsClean says so (both
// sides decide at the same step; begin()). Long waits check abort, a dead peer and the timeout
// (devPollMustStop, DevWaitClock).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/ll_protocol.h"
#include "device/prims_simple.h"

#ifdef __CUDACC__

namespace braid {

__device__ __forceinline__ void llStoreLine(char* line, uint64_t payload, uint32_t flag) {
  uint32_t d0, d1;
  llSplit(payload, &d0, &d1);
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(line), "r"(d0), "r"(flag), "r"(d1), "r"(flag)
               : "memory");
}
// One load of a line, without looking at it: a thread issues several before it needs any (llLineReady).
struct LlLine {
  uint32_t d0, f0, d1, f1;
};
__device__ __forceinline__ LlLine llLoadLine(const char* line) {
  LlLine l;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(l.d0), "=r"(l.f0), "=r"(l.d1), "=r"(l.f1)
               : "l"(line)
               : "memory");
  return l;
}
__device__ __forceinline__ bool llLineReady(const LlLine& l, uint32_t flag, uint64_t* payload) {
  if (l.f0 != flag || l.f1 != flag) return false;
  *payload = llJoin(l.d0, l.d1);
  return true;
}
// One poll of a line: true (and the payload) when both words carry `flag`.
__device__ __forceinline__ bool llTryLoadLine(const char* line, uint32_t flag, uint64_t* payload) {
  uint32_t d0, f0, d1, f1;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
               : "l"(line)
               : "memory");
  if (f0 != flag || f1 != flag) return false;
  *payload = llJoin(d0, d1);
  return true;
}

// Every 1024 polls of an LL/LL128 wait (the caller's thread; for a warp-wide wait one lane): true, with the
// CTA marked stopped and the error recorded, when the wait must end. `lastTry` polls once more before a
// broken host connection or a protocol mismatch is declared (data may have landed before the flag). With
// `step` (the receive step waited for; ~0: unchecked), a SIMPLE step the peer published at or past it means
// the peer did not send this step as LL: different counts across the p2p LL threshold (a matching LL step
// is visible before any later SIMPLE publish, whose fence orders it). Every thread of an LL CTA may poll, so
// these checks (tail, then the host-mapped words: DevWaitClock) run in one of them per kDevHostPollNs: the
// first whose clock is due claims the CTA's turn.
template <typename LastTry>
__device__ __forceinline__ bool devPollMustStop(PrimsShared* sh, DevStatus* st, int peer, DevWaitClock* clock,
                                                LastTry lastTry, uint64_t step = ~0ull) {
  if (*reinterpret_cast<volatile int*>(&sh->stop)) return true;
  bool timedOut = false;
  const bool hostDue = clock->tick(sh->recv.timeoutNs, &timedOut);
  // The mismatch check reads tail (host memory over SHM and NET) and the others host words: one thread of
  // the CTA per interval (a timed-out wait goes on at once).
  if (!timedOut && (!hostDue || !devClaimHostPoll(sh, *clock))) return false;
  uint32_t code = 0, want = 0;
  // tail with acquire: the lastTry poll after it must not be served before it. Over NET the proxy publishes
  // tail for LL steps too, after their lines, so with a volatile load the poll could still see the old line
  // and report a false mismatch (suspected in the stalled 16 MB LL all-reduce over sockets).
  if (step != ~0ull && sh->recv.tail && ldAcquireSys(sh->recv.tail) > step) {
    if (lastTry()) return false;
    code = kDevSizeMismatch;
    want = kDevLlStepMark;
  } else if (timedOut) {
    code = kDevTimeout;  // a stuck peer, or one that planned this op differently
  } else {
    const DevHostWords h = devReadHostWords(st);
    if (h.error) {  // an earlier kernel of this communicator failed (see devSpin)
      sh->stop = 1;
      return true;
    }
    if (sh->recv.errorFlag && ldVolatile32(sh->recv.errorFlag)) {  // host connection broken (SHM peer abort)
      if (lastTry()) return false;
      code = kDevConnBroken;
    } else if (h.abort) {
      code = kDevAborted;
    } else if (h.deadPeer == static_cast<uint32_t>(peer + 1)) {  // the peer process died
      code = kDevPeerGone;
    } else {
      return false;
    }
  }
  devSetError(st, code, peer, 0, want);
  sh->stop = 1;
  return true;
}

// What the LL and LL128 primitives share: DevPrims' calls (so the ring schedules run on them unchanged),
// each one step of Derived::run over the op's 8-byte words, and the per-word element operations.
template <typename Derived, typename T, typename Fn>
class DevWordPrims {
 protected:
  static_assert(sizeof(T) <= 8 && 8 % sizeof(T) == 0, "8-byte words hold whole elements");
  static constexpr int kPerLine = 8 / sizeof(T);
  union Line {
    uint64_t u;
    T e[kPerLine];
  };
  __device__ DevWordPrims(PrimsShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st)
      : sh_(sh), in_(in), out_(out), fn_(fn), st_(st), tid_(threadIdx.x), nthreads_(blockDim.x),
        sendStep_(sh->send.step), recvStep_(sh->recv.step) {}

 public:
  // The steps each connection ended at (thread 0 writes them back after the kernel's last barrier).
  __device__ uint64_t sendStep() const { return sendStep_; }
  __device__ uint64_t recvStep() const { return recvStep_; }
  __device__ void setBuffers(const T* in, T* out) {
    in_ = in;
    out_ = out;
  }
  // Each call is one step of Derived::run<Recv, Send, Own>(n, own, combine, out, outN): own(i) is this rank's
  // word i (its input, pre-op applied), loaded before the received word is awaited so both latencies
  // overlap; combine(received, own) is the word stored to `out` (if any) and sent.
  __device__ void send(size_t inOff, size_t n) {
    self().template run<false, true, true>(n, ownPre(inOff, n), keepOwn(), nullptr, 0);
  }
  __device__ void recv(size_t outOff, size_t n) {
    self().template run<true, false, false>(n, noOwn(), keepReceived(), out_ + outOff, n);
  }
  __device__ void recvReduceSend(size_t inOff, size_t n) {
    self().template run<true, true, true>(n, ownPre(inOff, n), reduceWith(false), nullptr, 0);
  }
  __device__ void recvReduceCopySend(size_t inOff, size_t outOff, size_t n, bool postOp) {
    self().template run<true, true, true>(n, ownPre(inOff, n), reduceWith(postOp), out_ + outOff, n);
  }
  __device__ void recvReduceCopy(size_t inOff, size_t outOff, size_t n, bool postOp) {
    self().template run<true, false, true>(n, ownPre(inOff, n), reduceWith(postOp), out_ + outOff, n);
  }
  __device__ void recvCopySend(size_t outOff, size_t n) {
    self().template run<true, true, false>(n, noOwn(), keepReceived(), out_ + outOff, n);
  }
  __device__ void copySend(size_t inOff, size_t outOff, size_t n) {
    T* out = (in_ + inOff == out_ + outOff) ? nullptr : out_ + outOff;
    const T* in = in_ + inOff;
    self().template run<false, true, true>(n, [this, in, n](size_t i) { return load(in, n, i); }, keepOwn(), out, n);
  }
  __device__ void localReduceCopy(size_t inOff, size_t outOff, size_t n) {  // one rank: no connection
    if (sh_->stop) return;
    for (size_t i = tid_; i < n; i += nthreads_) {
      T v = in_[inOff + i];
      if (Fn::kHasPre) v = fn_.pre(v);
      if (Fn::kHasPost) v = fn_.post(v);
      out_[outOff + i] = v;
    }
    __syncthreads();
  }

 protected:
  __device__ Derived& self() { return *static_cast<Derived*>(this); }
  // The own/combine pairs of the calls above.
  __device__ auto ownPre(size_t inOff, size_t n) const {
    const T* in = in_ + inOff;
    return [this, in, n](size_t i) { return pre(load(in, n, i)); };
  }
  static __device__ auto noOwn() {
    return [](size_t) { return uint64_t{0}; };
  }
  static __device__ auto keepOwn() {
    return [](uint64_t, uint64_t own) { return own; };
  }
  static __device__ auto keepReceived() {
    return [](uint64_t r, uint64_t) { return r; };
  }
  __device__ auto reduceWith(bool postOp) const {
    return [this, postOp](uint64_t r, uint64_t own) { return reduce(r, own, postOp); };
  }
  // Thread 0: waits for a free send slot at sendStep_ (head credits, as in SIMPLE).
  __device__ __forceinline__ void waitCredit() {
    if (tid_ == 0 && !sh_->stop && !devWaitSend(st_, sh_->send, sendStep_)) sh_->stop = 1;
  }
  // Word i of n elements at p: whole 8-byte loads where aligned and complete, element by element otherwise. Bytes
  // (the copy kernels: kPerLine 8) assemble a partial word by shifts at unrolled, constant positions: through a Line
  // indexed by a runtime count, the Line lived in local memory and every word, whole ones too, went through an
  // 8-byte stack frame. Wider elements keep the Line: unrolled, their kernels spilled (2-byte ones: 168 bytes). The
  // bytes move as raw bits, whatever T is (a 1-byte float type would convert by value through a cast).
  __device__ __forceinline__ uint64_t load(const T* p, size_t n, size_t i) const {
    const size_t first = i * kPerLine;
    const bool whole = first + kPerLine <= n && (reinterpret_cast<uintptr_t>(p + first) & 7) == 0;
    if constexpr (sizeof(T) == 1) {
      if (whole) return *reinterpret_cast<const uint64_t*>(p + first);
      uint64_t v = 0;
#pragma unroll
      for (int k = 0; k < kPerLine; ++k)
        if (first + k < n) v |= static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(p)[first + k]) << (8 * k);
      return v;
    } else {
      Line l;
      l.u = 0;
      if (whole) {
        l.u = *reinterpret_cast<const uint64_t*>(p + first);
      } else {
        for (int k = 0; k < kPerLine && first + k < n; ++k) l.e[k] = p[first + k];
      }
      return l.u;
    }
  }
  __device__ __forceinline__ void store(T* p, size_t n, size_t i, uint64_t v) const {
    const size_t first = i * kPerLine;
    const bool whole = first + kPerLine <= n && (reinterpret_cast<uintptr_t>(p + first) & 7) == 0;
    if constexpr (sizeof(T) == 1) {
      if (whole) {
        *reinterpret_cast<uint64_t*>(p + first) = v;
        return;
      }
#pragma unroll
      for (int k = 0; k < kPerLine; ++k)
        if (first + k < n) reinterpret_cast<uint8_t*>(p)[first + k] = static_cast<uint8_t>(v >> (8 * k));
    } else {
      Line l;
      l.u = v;
      if (whole) {
        *reinterpret_cast<uint64_t*>(p + first) = l.u;
      } else {
        for (int k = 0; k < kPerLine && first + k < n; ++k) p[first + k] = l.e[k];
      }
    }
  }
  __device__ __forceinline__ uint64_t pre(uint64_t v) const {
    if (!Fn::kHasPre) return v;
    Line l;
    l.u = v;
#pragma unroll
    for (int k = 0; k < kPerLine; ++k) l.e[k] = fn_.pre(l.e[k]);
    return l.u;
  }
  // fn(received, own) per element, post-op on request.
  __device__ __forceinline__ uint64_t reduce(uint64_t r, uint64_t own, bool postOp) const {
    if constexpr (kPackedSum<T, Fn>) return packedSum64<T>(r, own);  // FuncSum: no post-op
    Line a, b;
    a.u = r;
    b.u = own;
#pragma unroll
    for (int k = 0; k < kPerLine; ++k) {
      T v = fn_(a.e[k], b.e[k]);
      if (Fn::kHasPost && postOp) v = fn_.post(v);
      a.e[k] = v;
    }
    return a.u;
  }

  PrimsShared* sh_;
  const T* in_;
  T* out_;
  Fn fn_;
  DevStatus* st_;
  int tid_;
  int nthreads_;
  uint64_t sendStep_;  // next step of each connection (this CTA's count; written back by the kernel)
  uint64_t recvStep_;
};

// The members of DevWordPrims a derived primitive uses (dependent base: named explicitly).
#define BRAID_WORD_PRIMS_MEMBERS(Derived)          \
  using Base = DevWordPrims<Derived<T, Fn>, T, Fn>; \
  friend Base;                                      \
  using Base::nthreads_;                            \
  using Base::recvStep_;                            \
  using Base::sendStep_;                            \
  using Base::sh_;                                  \
  using Base::st_;                                  \
  using Base::store;                                \
  using Base::tid_;                                 \
  using Base::waitCredit

template <typename T, typename Fn>
class DevPrimsLL : public DevWordPrims<DevPrimsLL<T, Fn>, T, Fn> {
  BRAID_WORD_PRIMS_MEMBERS(DevPrimsLL);

 public:
  __device__ DevPrimsLL(PrimsShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st)
      : Base(sh, in, out, fn, st), sendClean_(sh->send.llLastClean), recvClean_(sh->recv.llLastClean) {}
  // Before the operation's first step: the clean steps of the directions it will use, when due (both sides
  // of a connection decide at the same step), every send direction's before any receive direction's. Cleaning
  // lazily, at each direction's first call, deadlocks a ring: every rank's first call only sends, and its
  // first data step needs a credit for a clean step the peer consumes only in its second call.
  __device__ void begin(bool willSend, bool willRecv) {
    if (willSend) cleanSteps<false, true>();
    if (willRecv) cleanSteps<true, false>();
  }
  __device__ uint64_t sendLastClean() const { return sendClean_; }
  __device__ uint64_t recvLastClean() const { return recvClean_; }

 private:
  __device__ __forceinline__ char* slot(const DevConn& c, uint64_t step) const {
    return c.llBuff + fifoSlot(step, c.nSteps) * static_cast<size_t>(c.llSlotBytes);
  }
  // Polls a line until it carries `flag`; on abort marks the CTA stopped and returns false.
  __device__ __forceinline__ bool poll(const char* line, uint32_t flag, int peer, uint64_t* payload) {
    int spins = 0;
    DevWaitClock clock;
    while (!llTryLoadLine(line, flag, payload)) {
      if (++spins == 1024) {
        spins = 0;
        if (devPollMustStop(sh_, st_, peer, &clock, [&] { return llTryLoadLine(line, flag, payload); }, recvStep_))
          return false;
      }
    }
    return true;
  }
  // All threads, after the lines of a send step on a NET connection (kDevConnNetLl): thread 0 publishes tail,
  // so the proxy ships the step once every line is written (conn_info.h). P2P and SHM receivers poll the
  // lines themselves and need no tail.
  __device__ __forceinline__ void publishNet(uint64_t step) {
    __syncthreads();
    if (tid_ == 0 && !sh_->stop) {
      fenceSys();
      stRelaxedSys(sh_->send.tail, step + 1);
    }
  }
  // All threads: after the reads of a receive step, thread 0 hands the slot back.
  __device__ __forceinline__ void postRecv() {
    __syncthreads();
    if (tid_ == 0 && !sh_->stop) stRelaxedSys(sh_->recv.head, recvStep_ + 1);
  }
  // The clean steps of one direction, when due (see begin()).
  template <bool Recv, bool Send>
  __device__ void cleanSteps() {
    if (Send) {
      if (llNeedsClean(sendStep_, sendClean_)) {
        sendClean_ = sendStep_;
        const bool net = (sh_->send.flags & kDevConnNetLl) != 0;
        for (uint32_t k = 0; k < sh_->send.nSteps; ++k, ++sendStep_) {
          waitCredit();
          __syncthreads();
          if (sh_->stop) continue;
          char* s = slot(sh_->send, sendStep_);
          if (net && tid_ == 0)  // the proxy ships the whole slot
            stVolatile32(sh_->send.sizes + fifoSlot(sendStep_, sh_->send.nSteps),
                         static_cast<int32_t>(llSlotDataBytes(sh_->send.llSlotBytes) | kDevLlStepMark));
          for (size_t l = tid_; l < sh_->send.llSlotBytes / kLlLineBytes; l += nthreads_)
            llStoreLine(s + l * kLlLineBytes, 0, llFlag(sendStep_));
          if (net) publishNet(sendStep_);
        }
      }
    }
    if (Recv) {
      if (llNeedsClean(recvStep_, recvClean_)) {
        recvClean_ = recvStep_;
        for (uint32_t k = 0; k < sh_->recv.nSteps; ++k, ++recvStep_) {
          if (!sh_->stop) {
            const char* s = slot(sh_->recv, recvStep_);
            uint64_t ignored;
            for (size_t l = tid_; l < sh_->recv.llSlotBytes / kLlLineBytes; l += nthreads_)
              if (!poll(s + l * kLlLineBytes, llFlag(recvStep_), sh_->recv.peer, &ignored)) break;
          }
          postRecv();
        }
      }
    }
  }

  // One step: combine(received line, own(i)) for each line i of n elements; written to `out` (if any) and
  // sent. Each thread takes lines tid, tid + nthreads, ... in batches of kUnroll: it issues the batch's own
  // loads and then its polls before looking at any (the data has usually arrived, so one memory latency
  // covers the batch), then computes and stores. One load per line at a time left a channel latency-bound
  // at ~4.7 GB/s.
  static constexpr int kUnroll = 4;
  template <bool Recv, bool Send, bool Own, typename OwnFn, typename Combine>
  __device__ void run(size_t n, OwnFn own, Combine combine, T* out, size_t outN) {
    if (Send) waitCredit();
    __syncthreads();
    if (!sh_->stop) {
      // After the credit: the receiver no longer reads this slot's size for an older step (kDevLlStepMark).
      if (Send && tid_ == 0 && sh_->send.sizes)
        stVolatile32(sh_->send.sizes + fifoSlot(sendStep_, sh_->send.nSteps),
                     static_cast<int32_t>(n * sizeof(T) | kDevLlStepMark));
      const size_t lines = llLines(n * sizeof(T));
      const char* rs = Recv ? slot(sh_->recv, recvStep_) : nullptr;
      char* ss = Send ? slot(sh_->send, sendStep_) : nullptr;
      const uint32_t rflag = llFlag(recvStep_), sflag = llFlag(sendStep_);
      const size_t stride = static_cast<size_t>(nthreads_);
      bool stopped = false;
      for (size_t i0 = tid_; i0 < lines && !stopped; i0 += stride * kUnroll) {
        uint64_t r[kUnroll] = {}, o[kUnroll] = {};
        if (Own) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u)
            if (i0 + u * stride < lines) o[u] = own(i0 + u * stride);
        }
        if (Recv) {
          LlLine got[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u)
            if (i0 + u * stride < lines) got[u] = llLoadLine(rs + (i0 + u * stride) * kLlLineBytes);
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const size_t i = i0 + u * stride;
            if (i < lines && !stopped && !llLineReady(got[u], rflag, &r[u]) &&
                !poll(rs + i * kLlLineBytes, rflag, sh_->recv.peer, &r[u]))
              stopped = true;
          }
          if (stopped) break;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const size_t i = i0 + u * stride;
          if (i >= lines) break;
          const uint64_t v = combine(r[u], o[u]);
          if (out) store(out, outN, i, v);
          if (Send) llStoreLine(ss + i * kLlLineBytes, v, sflag);
        }
      }
    }
    if (Send && (sh_->send.flags & kDevConnNetLl)) publishNet(sendStep_);
    if (Recv) postRecv();
    if (Recv) ++recvStep_;
    if (Send) ++sendStep_;
  }

  uint64_t sendClean_;  // last cleaning step per connection (written back with the steps)
  uint64_t recvClean_;
};

// All threads, before an operation over several links (the one-shot over peers, the LL tree), after the barrier
// that loaded them: each link's clean steps where due (DevPrimsLL::begin), every link's send direction before any
// receive direction, the counters back into the link. Links without a send FIFO (buff null: a tree's missing
// child or parent) are skipped. Whether any is due is read from the shared links, so a launch with none due (all
// but one in 2^28 steps) passes no barrier here; each clean costs two per link and direction.
template <typename T, typename Fn>
__device__ void devLlCleanLinks(PrimsShared* links, int n, const T* in, T* out, const Fn& fn, DevStatus* st) {
  bool due = false;
  for (int j = 0; j < n; ++j)
    if (links[j].send.buff && (llNeedsClean(links[j].send.step, links[j].send.llLastClean) ||
                               llNeedsClean(links[j].recv.step, links[j].recv.llLastClean)))
      due = true;
  if (!due) return;
  for (int dir = 0; dir < 2; ++dir) {
    for (int j = 0; j < n; ++j) {
      if (!links[j].send.buff) continue;
      DevPrimsLL<T, Fn> p(&links[j], in, out, fn, st);
      p.begin(dir == 0, dir == 1);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (dir == 0)
          links[j].send.step = p.sendStep(), links[j].send.llLastClean = p.sendLastClean();
        else
          links[j].recv.step = p.recvStep(), links[j].recv.llLastClean = p.recvLastClean();
      }
      __syncthreads();
    }
  }
}

}  // namespace braid

#endif  // __CUDACC__
