// DevPrims<T, Fn>: the SIMPLE-protocol device Primitives the shared ring schedules (ring_schedules.h) run
// on. One object per CTA (= channel), bound to the channel's ring connections and the op's buffers.
//
// Roles inside the CTA: the first `nworkers` threads (whole warps) move data; the last warp posts. Each
// call is one FIFO step per connection it touches:
//   workers: thread 0 waits for credits (send: step < head + nSteps) and data (recv: tail > step, acquire
//            at system scope); a worker barrier hands the slots to all workers; all run reduceCopy between
//            user buffers and slots; then they meet the poster at the post barrier (bar.sync 2) and go on
//            to the next step as soon as the poster has taken the previous one.
//   poster:  meets the workers at the post barrier once their stores of that step are done, then lane 0 writes
//            sizes[slot], fences at system scope and publishes tail (send), or publishes head (receive:
//            no fence, devPostRecv says why).
// So the system-scope fence (an NVLink round trip) overlaps the next step's copy instead of stalling all
// workers, as NCCL's dedicated post threads do. (bar.arrive would let the workers run two steps ahead and
// complete a barrier without the poster.) Each worker counts steps in registers, so slot addresses never
// race with thread 0's next wait. A wait checks its clock (timeout) every few hundred polls and, once it
// has lasted kDevHostPollNs, the host-mapped abort/dead-peer/error words and a host transport's error flag
// (DevWaitClock); once stopped, later calls are no-ops (the workers still meet the poster, so nobody waits
// forever).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/fifo_slot.h"
#include "device/dev_work.h"
#include "device/op128.h"
#include "device/reduce_copy.h"

#ifdef __CUDACC__

namespace braid {

struct PrimsShared {
  DevConn send;  // .step: steps published so far (advanced by the poster)
  DevConn recv;
  int stop;      // set by thread 0; read by the workers after their barrier, by the poster after its
  unsigned long long hostPollAt;  // clock reading at the last claim of this CTA's turn to read the host words
  uint32_t bal[2];  // balanced p2p (dev_kernels.cu): the chunk claimed / the sizes word received, by step parity
  uint32_t stopCall;  // DevPrims: the call (its count) whose wait set stop; written before stop (devStop)

  // One thread, before the barrier that starts the CTA's (or p2p warp group's) primitives: nothing stopped,
  // no host-word claim yet.
  __device__ __forceinline__ void reset() {
    stop = 0;
    stopCall = 0;  // a stop set without devStop reads as "from the first call on": every later post is skipped
    hostPollAt = 0;
  }
  // ... for transfers on one connection direction (p2p): its counters on that side, the other side empty.
  __device__ __forceinline__ void loadOneWay(const DevConn& c, bool isSend) {
    reset();
    send = isSend ? c : DevConn{};
    recv = isSend ? DevConn{} : c;
  }
  // One thread, after the barrier that ends them: the counters that persist across launches, back to `c`.
  __device__ __forceinline__ void storeOneWay(DevConn* c, bool isSend) const {
    const DevConn& mine = isSend ? send : recv;
    c->step = mine.step;
    c->llLastClean = mine.llLastClean;
    c->headSeen = mine.headSeen;
  }
};

// Named barriers: 0 is __syncthreads, Bar (1) the workers' hand-off after a wait, Bar + 1 (2) workers <->
// poster; a p2p CTA that runs two warp groups at once (dev_kernels.cu) gives its upper group Bar 3 (3, 4) and
// meets each group alone on barrier 5 + group. Not the .aligned form (bar.sync): thread 0 reaches barrier Bar
// after spinning alone while its warp's other lanes are already there, which .aligned leaves undefined (it hung).
template <int Bar = 1>
__device__ __forceinline__ void barWorkers(int nworkers) {
  asm volatile("barrier.sync %0, %1;" ::"n"(Bar), "r"(nworkers) : "memory");
}
template <int Bar = 1>
__device__ __forceinline__ void barSyncPost(int nthreads) {
  asm volatile("barrier.sync %0, %1;" ::"n"(Bar + 1), "r"(nthreads) : "memory");
}

// Marks the launch failed (first error wins) so the host reports it at the next call.
__device__ __forceinline__ void devSetError(DevStatus* st, uint32_t code, int peer, uint32_t got, uint32_t want) {
  if (atomicCAS(reinterpret_cast<unsigned int*>(&st->error), 0u, code) == 0u) {
    st->errorPeer = peer;
    st->errorBytes = got;
    st->expectBytes = want;
    __threadfence_system();
  }
}

// The GPU's nanosecond clock (%globaltimer), for wait timeouts.
__device__ __forceinline__ uint64_t devNowNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// A wait reads the host-mapped words (DevStatus's flags, a host transport's error flag) once it has lasted
// this long, then once per this long; the clock and the timeout are checked every few hundred polls. Each
// such read is a PCIe round trip, and the reads of many CTAs queue behind one another: on 2xH200, with the
// flags read every 256 polls, 64 CTAs waiting on a late peer held each wait ~240 us past its data, so the
// other rank then waited in turn, and grouped send/recv at 16 MB alternated 55/295 us per launch, anti-phased
// between the ranks (docs/TUNING.md, "Device primitives"). Waits of a healthy pipeline end
// well within this. An abort, a dead peer or an earlier kernel's error is seen only by a wait that lasts
// this long (SIMPLE: within ~0.5-1 ms of waiting; LL: 1024 polls, then up to ~1-2 ms with the CTA's turn), so
// a kernel whose waits all end sooner runs to its end, as with NCCL's abort checks every 10^6 spins.
constexpr int64_t kDevHostPollNs = 500000;

// One wait's clock. A clock read of 0 or one that steps back fires nothing early (signed differences); a
// clock that stepped back by more than an interval, or stopped, still lets the host words be read: after a
// resync, or every kDevHostPollTicks ticks whatever it says (~10^6 polls for SIMPLE, as NCCL's abort check).
constexpr uint32_t kDevHostPollTicks = 4096;
struct DevWaitClock {
  uint64_t since = 0;   // the wait's first check (0 before it)
  uint64_t hostAt = 0;  // the host-mapped words are due from this time on
  uint64_t now = 0;     // the last reading
  uint32_t ticks = 0;   // ticks since the host words were last due
  bool forced = false;  // the last due came from the tick count, not the clock
  // Every few hundred polls: reads the clock; *timedOut once the wait has lasted more than timeoutNs (0:
  // never: a wait that legitimately outlasts it, a peer busy that long before it reaches the collective,
  // fails like a stuck one, hence a long default, BRAID_DEVICE_TIMEOUT). True when the host words are due.
  __device__ __forceinline__ bool tick(uint64_t timeoutNs, bool* timedOut) {
    now = devNowNs();
    *timedOut = false;
    if (since == 0) {
      since = now ? now : 1;
      hostAt = since + kDevHostPollNs;
      return false;
    }
    if (timeoutNs != 0 && static_cast<int64_t>(now - since) > static_cast<int64_t>(timeoutNs)) *timedOut = true;
    const int64_t toHost = static_cast<int64_t>(now - hostAt);
    forced = ++ticks >= kDevHostPollTicks;
    if (toHost < 0 && toHost >= -2 * kDevHostPollNs && !forced) return false;
    hostAt = now + kDevHostPollNs;
    ticks = 0;
    return true;
  }
};

// DevStatus's abort, deadPeer and error words in one 16-byte read (one PCIe round trip instead of three).
struct DevHostWords {
  uint32_t abort, deadPeer, error, errorPeer;
};
__device__ __forceinline__ DevHostWords devReadHostWords(const DevStatus* st) {
  uint32_t a, d, e, p;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(a), "=r"(d), "=r"(e), "=r"(p)
               : "l"(st)
               : "memory");
  return DevHostWords{a, d, e, p};
}

// Whether this thread takes its CTA's turn to read the host words (at most one per kDevHostPollNs; the
// kernels zero hostPollAt with stop).
// A clock's forced due (DevWaitClock) claims whatever the last claim's time says.
__device__ __forceinline__ bool devClaimHostPoll(PrimsShared* sh, const DevWaitClock& clock) {
  const unsigned long long last = *reinterpret_cast<volatile unsigned long long*>(&sh->hostPollAt);
  const int64_t since = static_cast<int64_t>(clock.now - last);
  if (last != 0 && !clock.forced && since < kDevHostPollNs && since > -kDevHostPollNs) return false;
  return atomicCAS(&sh->hostPollAt, last, static_cast<unsigned long long>(clock.now)) == last;
}

// One thread per connection (thread 0; in the one-shot over peers, one per peer): spins until ready(), checking
// the clock every few hundred polls and abort, a dead peer or an earlier failure when DevWaitClock says the host
// words are due. False when stopped.
template <typename Ready>
__device__ __forceinline__ bool devSpin(DevStatus* st, const DevConn& c, Ready ready) {
  int spins = 0;
  DevWaitClock clock;
  while (!ready()) {
    if (++spins == 256) {
      spins = 0;
      bool timedOut;
      const bool hostDue = clock.tick(c.timeoutNs, &timedOut);
      if (timedOut) {
        if (ready()) return true;
        devSetError(st, kDevTimeout, c.peer, 0, 0);
        return false;
      }
      if (!hostDue) continue;
      const DevHostWords h = devReadHostWords(st);
      // An earlier kernel of this communicator failed (its peers' step counters no longer match ours):
      // kernels queued behind it stop at their first long wait instead of each waiting out its own timeout.
      if (h.error) return false;
      if (h.abort) {
        devSetError(st, kDevAborted, c.peer, 0, 0);
        return false;
      }
      if (h.deadPeer == static_cast<uint32_t>(c.peer + 1)) {  // this wait can never end
        if (ready()) return true;
        devSetError(st, kDevPeerGone, c.peer, 0, 0);
        return false;
      }
      if (c.errorFlag && ldVolatile32(c.errorFlag)) {
        if (ready()) return true;
        devSetError(st, kDevConnBroken, c.peer, 0, 0);
        return false;
      }
    }
  }
  return true;
}

// The connection's waiting thread (thread 0; in the one-shot over peers, the peer's own): wait for a free send slot / a
// filled recv slot of `bytes` (step = the one waited for). A send reads head only when the credits it saw last are used
// up (DevConn::headSeen, which the kernels store back with step, so a launch whose steps the last read still covers
// reads nothing): that read was an acquire of this thread, which still orders the slot's reuse after the receiver's
// reads.
__device__ __forceinline__ bool devWaitSend(DevStatus* st, DevConn& c, uint64_t step) {
  if (step < c.headSeen + c.nSteps) return true;
  return devSpin(st, c, [&] {
    c.headSeen = ldAcquireSys(c.head);
    return step < c.headSeen + c.nSteps;
  });
}
__device__ __forceinline__ bool devWaitRecv(DevStatus* st, const DevConn& c, uint64_t step, uint32_t bytes) {
  if (!devSpin(st, c, [&] { return ldAcquireSys(c.tail) > step; })) return false;
  const int32_t got = *reinterpret_cast<volatile int32_t*>(c.sizes + fifoSlot(step, c.nSteps));
  if (static_cast<uint32_t>(got) != bytes) {
    devSetError(st, kDevSizeMismatch, c.peer, static_cast<uint32_t>(got), bytes);
    return false;
  }
  return true;
}
// Poster lane 0: publish one step (c.step is the poster's count of published steps).
__device__ __forceinline__ void devPostSend(DevConn& c, uint32_t bytes) {
  stVolatile32(c.sizes + fifoSlot(c.step, c.nSteps), static_cast<int32_t>(bytes));
  ++c.step;
  fenceSys();
  stRelaxedSys(c.tail, c.step);
}
// No fence before head (as NCCL's receive post): every worker's loads of the slot have returned their
// values before it reached the post barrier (each value feeds a store the worker issued before it), so the
// sender cannot overwrite a slot still being read. A fence.acq_rel.sys here would wait for the CTA's outstanding
// stores at every step and at the end of every receiving CTA: without it send/recv of 32-512 KB on 2xH200 runs
// ~1 us faster (docs/TUNING.md, "Device primitives"). A worker that kept slot data in registers across the post
// barrier would need the fence back.
__device__ __forceinline__ void devPostRecv(DevConn& c) {
  ++c.step;
  stRelaxedSys(c.head, c.step);
}
__device__ __forceinline__ char* devSlot(const DevConn& c, uint64_t step) {
  return c.buff + fifoSlot(step, c.nSteps) * static_cast<size_t>(c.stepBytes);
}

template <typename T, typename Fn, int Bar = 1>
class DevPrims {
 public:
  // Threads 0..blockDim.x-33 move data; the last warp posts (of a warp group: its last warp, second
  // constructor). Construct after `sh` holds the connections (a
  // __syncthreads later): the step counters start from them (p2p kernels build one per transfer, after a
  // barrier, so SIMPLE and LL transfers can alternate on a connection).
  __device__ DevPrims(PrimsShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st)
      : DevPrims(sh, in, out, fn, st, 0, static_cast<int>(blockDim.x)) {}
  // A warp group of the CTA: threads tidBase .. tidBase + nthreads - 1 (whole warps, at least two), on named
  // barriers Bar and Bar + 1 of their own.
  __device__ DevPrims(PrimsShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st, int tidBase, int nthreads)
      : sh_(sh), in_(in), out_(out), fn_(fn), st_(st), tid_(static_cast<int>(threadIdx.x) - tidBase),
        nthreads_(nthreads), nworkers_(nthreads - 32), sendStep_(sh->send.step), recvStep_(sh->recv.step),
        stoppedBefore_(sh->stop != 0) {}
  // P2p transfers: the next call is (or is not) the transfer's last step; its sizes[] word carries
  // kDevStepLastMark and the receiver expects it there (dev_work.h). Every thread of the CTA sets it alike.
  __device__ void setLastStep(bool last) { lastMark_ = last ? kDevStepLastMark : 0u; }
  // A balanced p2p send's step (dev_work.h: kDevStepBalMark): the chunk of `total` bytes (cut in `chunk`-byte chunks,
  // nChunks of them) that thread 0 took one step earlier, its index posted in sizes[]; once no chunk is left, the
  // empty closing step, endWord posted. Thread 0 takes the chunks: from *claim where there is one (the sending CTAs
  // of the transfer share it), else first, first + stride, ...; it takes the next one while this step waits and
  // copies (the atomic's round trip overlaps the step). The poster learns the chunk from bal[] after the post barrier,
  // so the step costs no barrier more than a send (a barrier of every thread per step would wait for the poster's
  // fence of the step before: ~5% slower on 10-12 CTAs, docs/TUNING.md, "Balanced transfers"). Returns false (every
  // thread alike) after the closing step.
  __device__ bool sendChunk(unsigned int* claim, uint32_t first, uint32_t stride, size_t chunk, size_t total,
                            uint32_t nChunks, uint32_t endWord) {
    const uint32_t k = balSteps_++;
    const int par = static_cast<int>(k & 1);
    const uint32_t call = calls_++;
    if (tid_ >= nworkers_) {
      // Poster: bal[par] was written before the workers' barrier of this step; the next write of this parity comes
      // after the next post barrier, which this thread has yet to reach.
      barSyncPost<Bar>(nthreads_);
      const uint32_t idx = sh_->bal[par];
      if (tid_ == nworkers_ && !skipped(call)) devPostSend(sh_->send, idx < nChunks ? (kDevStepBalMark | idx) : endWord);
      return idx < nChunks;
    }
    if (tid_ == 0) {
      auto take = [&](uint32_t i) { return claim ? atomicAdd(claim, 1u) : first + i * stride; };
      if (k == 0) balNext_ = take(0);
      const uint32_t idx = sh_->stop ? nChunks : balNext_;
      sh_->bal[par] = idx;
      if (idx < nChunks) balNext_ = take(k + 1);
      if (!sh_->stop && !devWaitSend(st_, sh_->send, sendStep_)) {
        devStop(call);
        sh_->bal[par] = nChunks;  // close now (the poster skips its post once stopped)
      }
    }
    ++sendStep_;
    barWorkers<Bar>(nworkers_);
    const uint32_t idx = sh_->bal[par];
    if (idx < nChunks && !sh_->stop) {
      const size_t off = static_cast<size_t>(idx) * chunk;
      rc<RcMode<1, 1, false, false, false>>(in_ + off, nullptr, sendSlot(), nullptr,
                                            chunk < total - off ? chunk : total - off);
    }
    done(true, false);
    return idx < nChunks;
  }
  // A balanced p2p receive's step: whatever chunk of `total` bytes (cut in `chunk`-byte chunks, nChunks of them)
  // the sender's CTA on this connection claimed, copied to out + its offset; or its closing step, which must carry
  // endWord. Returns false (every thread of the CTA alike) once the sender's CTA has closed, or on a stop.
  __device__ bool recvChunk(size_t chunk, size_t total, uint32_t nChunks, uint32_t endWord) {
    const int par = static_cast<int>(balSteps_++ & 1);
    const uint32_t call = calls_++;  // its poster decides from bal[par]; a stop here still skips later calls' posts
    constexpr uint32_t kStop = kDevStepBalMark | kDevStepLastMark | kDevBalIndexMask;  // never a close: fold < mask
    if (tid_ >= nworkers_) {
      // Poster: bal[par] was written before the workers reached the post barrier; the next write of this parity
      // is two steps on, after a post barrier this thread has yet to reach.
      barSyncPost<Bar>(nthreads_);
      const uint32_t w = sh_->bal[par];
      if (tid_ == nworkers_ && w != kStop) devPostRecv(sh_->recv);
      return (w & kDevStepLastMark) == 0;
    }
    if (tid_ == 0) {
      uint32_t w = kStop;
      if (!sh_->stop) {
        bool ok = devSpin(st_, sh_->recv, [&] { return ldAcquireSys(sh_->recv.tail) > recvStep_; });
        if (ok) {
          w = static_cast<uint32_t>(
              *reinterpret_cast<volatile int32_t*>(sh_->recv.sizes + fifoSlot(recvStep_, sh_->recv.nSteps)));
          const bool close = (w & kDevStepLastMark) != 0;
          const uint32_t want = close ? endWord : (kDevStepBalMark | nChunks);
          if ((w & (kDevStepBalMark | kDevLlStepMark)) != kDevStepBalMark ||
              (close ? w != endWord : (w & kDevBalIndexMask) >= nChunks)) {
            devSetError(st_, kDevSizeMismatch, sh_->recv.peer, w, want);
            ok = false;
          }
        }
        if (!ok) {
          devStop(call);
          w = kStop;
        }
      }
      sh_->bal[par] = w;
    }
    ++recvStep_;
    barWorkers<Bar>(nworkers_);
    const uint32_t w = sh_->bal[par];
    const bool data = (w & kDevStepLastMark) == 0;
    if (data) {
      const size_t off = static_cast<size_t>(w & kDevBalIndexMask) * chunk;
      rc<RcMode<1, 1, false, false, false>>(recvSlot(), nullptr, out_ + off, nullptr,
                                            chunk < total - off ? chunk : total - off);
    }
    done(false, true);
    return data;
  }
  // The split one-shot in place (kDevAllReduceOneShotSplit): the sending CTA (isSender) counts the chunks it
  // has read into *guard; the receiving CTA waits, before each chunk, until the count passes it, so it never
  // overwrites input the sender has yet to read. The poster counts right after the post barrier, when every
  // worker's loads of the step have returned (each fed a store issued before the barrier: devPostRecv's
  // argument, which rests on how the hardware completes loads, not on the PTX memory model: a relaxed store
  // does not order those loads before the receiver's writes in the model), with a relaxed store before
  // devPostSend's system fence: counting after it (a release store) would make the receiving CTA wait out that
  // fence's NVLink round trip at every chunk (~0.4-1 us at 8 MB in place: docs/TUNING.md, "The one-shot and split
  // one-shot all-reduce"). Waiting on the sending CTA of the same launch cannot deadlock: that CTA never waits on
  // a receiver (the executor splits only where a channel's share fits its FIFO).
  __device__ void setSplitGuard(uint64_t* guard, bool isSender) {
    guard_ = guard;
    guardSender_ = isSender;
  }
  // Rebinds the user buffers (p2p kernels: one object runs several transfers in order).
  __device__ void setBuffers(const T* in, T* out) {
    in_ = in;
    out_ = out;
  }

  __device__ void send(size_t inOff, size_t n) {
    if (poster(true, false, n)) return;
    if (wait(true, false, 0)) rc<RcMode<1, 1, Fn::kHasPre, false, false>>(in_ + inOff, nullptr, sendSlot(), nullptr, n);
    done(true, false);
  }
  __device__ void recv(size_t outOff, size_t n) {
    if (poster(false, true, n)) return;
    if (wait(false, true, n)) rc<RcMode<1, 1, false, false, false>>(recvSlot(), nullptr, out_ + outOff, nullptr, n);
    done(false, true);
  }
  __device__ void recvReduceSend(size_t inOff, size_t n) {
    if (poster(true, true, n)) return;
    if (wait(true, true, n)) rc<RcMode<2, 1, false, Fn::kHasPre, false>>(recvSlot(), in_ + inOff, sendSlot(), nullptr, n);
    done(true, true);
  }
  __device__ void recvReduceCopySend(size_t inOff, size_t outOff, size_t n, bool postOp) {
    if (poster(true, true, n)) return;
    if (wait(true, true, n)) {
      if (Fn::kHasPost && postOp) {
        rc<RcMode<2, 2, false, Fn::kHasPre, Fn::kHasPost>>(recvSlot(), in_ + inOff, out_ + outOff, sendSlot(), n);
      } else {
        rc<RcMode<2, 2, false, Fn::kHasPre, false>>(recvSlot(), in_ + inOff, out_ + outOff, sendSlot(), n);
      }
    }
    done(true, true);
  }
  __device__ void recvReduceCopy(size_t inOff, size_t outOff, size_t n, bool postOp) {
    if (poster(false, true, n)) return;
    if (wait(false, true, n)) {
      if (Fn::kHasPost && postOp) {
        rc<RcMode<2, 1, false, Fn::kHasPre, Fn::kHasPost>>(recvSlot(), in_ + inOff, out_ + outOff, nullptr, n);
      } else {
        rc<RcMode<2, 1, false, Fn::kHasPre, false>>(recvSlot(), in_ + inOff, out_ + outOff, nullptr, n);
      }
    }
    done(false, true);
  }
  __device__ void recvCopySend(size_t outOff, size_t n) {
    if (poster(true, true, n)) return;
    if (wait(true, true, n)) rc<RcMode<1, 2, false, false, false>>(recvSlot(), nullptr, out_ + outOff, sendSlot(), n);
    done(true, true);
  }
  __device__ void copySend(size_t inOff, size_t outOff, size_t n) {
    if (poster(true, false, n)) return;
    if (wait(true, false, 0)) {
      if (in_ + inOff == out_ + outOff) {
        rc<RcMode<1, 1, false, false, false>>(in_ + inOff, nullptr, sendSlot(), nullptr, n);
      } else {
        rc<RcMode<1, 2, false, false, false>>(in_ + inOff, nullptr, out_ + outOff, sendSlot(), n);
      }
    }
    done(true, false);
  }
  // No connection: workers only (the poster has nothing to publish).
  __device__ void localReduceCopy(size_t inOff, size_t outOff, size_t n) {
    if (tid_ >= nworkers_ || sh_->stop) return;
    if (Fn::kHasPre || Fn::kHasPost) {
      rc<RcMode<1, 1, Fn::kHasPre, false, Fn::kHasPost>>(in_ + inOff, nullptr, out_ + outOff, nullptr, n);
    } else if (in_ + inOff != out_ + outOff) {
      rc<RcMode<1, 1, false, false, false>>(in_ + inOff, nullptr, out_ + outOff, nullptr, n);
    }
    barWorkers<Bar>(nworkers_);  // a later step may read what this one wrote on other threads
  }

 private:
  template <typename M>
  __device__ __forceinline__ void rc(const T* s0, const T* s1, T* d0, T* d1, size_t n) {
    reduceCopy<T, Fn, M>(fn_, tid_, nworkers_, s0, s1, d0, d1, n);
  }
  // The slots of the step being run (wait() advanced the counters past it).
  __device__ __forceinline__ T* sendSlot() { return reinterpret_cast<T*>(devSlot(sh_->send, sendStep_ - 1)); }
  __device__ __forceinline__ const T* recvSlot() { return reinterpret_cast<const T*>(devSlot(sh_->recv, recvStep_ - 1)); }

  // Thread 0: this call's wait failed. stopCall goes first, so a poster that sees stop also sees which call set it.
  __device__ __forceinline__ void devStop(uint32_t call) {
    *reinterpret_cast<volatile uint32_t*>(&sh_->stopCall) = call;
    __threadfence_block();
    *reinterpret_cast<volatile int*>(&sh_->stop) = 1;
  }
  // Poster: whether the workers skipped this call's step. Thread 0 may already be stopping the next call while
  // this poster is between its post barrier and here; `stop` alone would then leave unpublished a step whose data
  // the workers did move, and the peer, never told of that step, would time out instead of reporting the error
  // that stopped this rank. A stop from before this object (an earlier transfer's primitives, LL's) skips all.
  __device__ __forceinline__ bool skipped(uint32_t call) const {
    if (!*reinterpret_cast<volatile int*>(&sh_->stop)) return false;
    __threadfence_block();
    return stoppedBefore_ || *reinterpret_cast<volatile uint32_t*>(&sh_->stopCall) <= call;
  }
  // Poster warp: true when this thread is in it (it then waited for the workers and published the step).
  __device__ __forceinline__ bool poster(bool sent, bool recvd, size_t n) {
    if (tid_ < nworkers_) return false;
    const uint32_t call = calls_++;
    barSyncPost<Bar>(nthreads_);
    if (tid_ == nworkers_ && !skipped(call)) {
      if (sent && guard_ && guardSender_) stRelaxedSys(guard_, ++guardCount_);
      if (sent) devPostSend(sh_->send, static_cast<uint32_t>(n * sizeof(T)) | lastMark_);
      if (recvd) devPostRecv(sh_->recv);
    }
    return true;
  }
  // Workers: thread 0 waits, then all workers see the slots; every worker advances its own counters.
  __device__ __forceinline__ bool wait(bool needSend, bool needRecv, size_t n) {
    const uint32_t call = calls_++;
    if (tid_ == 0 && !sh_->stop) {
      bool ok = true;
      if (needRecv) ok = devWaitRecv(st_, sh_->recv, recvStep_, static_cast<uint32_t>(n * sizeof(T)) | lastMark_);
      if (ok && needSend) ok = devWaitSend(st_, sh_->send, sendStep_);
      if (ok && needRecv && guard_ && !guardSender_) {
        const uint64_t want = ++guardCount_;
        ok = devSpin(st_, sh_->recv, [&] { return ldAcquireGpu(guard_) >= want; });
      }
      if (!ok) devStop(call);
    }
    if (needRecv) ++recvStep_;
    if (needSend) ++sendStep_;
    barWorkers<Bar>(nworkers_);
    return !sh_->stop;
  }
  __device__ __forceinline__ void done(bool, bool) { barSyncPost<Bar>(nthreads_); }

  PrimsShared* sh_;
  const T* in_;
  T* out_;
  Fn fn_;
  DevStatus* st_;
  int tid_;
  int nthreads_;
  int nworkers_;
  uint64_t sendStep_;  // steps started on each connection (this thread's count)
  uint64_t recvStep_;
  uint32_t lastMark_ = 0;  // kDevStepLastMark on the last step of a p2p transfer (setLastStep), else 0
  uint32_t calls_ = 0;     // calls that wait or post (this thread's count; PrimsShared::stopCall is one)
  bool stoppedBefore_;     // stop was set when this object was built (after a barrier)
  uint32_t balSteps_ = 0;  // sendChunk's / recvChunk's steps (this thread's count: the parity of PrimsShared::bal)
  uint32_t balNext_ = 0;   // sendChunk, thread 0: the chunk taken for the next step
  uint64_t* guard_ = nullptr;  // setSplitGuard
  bool guardSender_ = false;
  uint64_t guardCount_ = 0;    // the poster's (sender) or thread 0's (receiver) count of guarded chunks
};

}  // namespace braid

#endif  // __CUDACC__
