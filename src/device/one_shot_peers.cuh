// The all-reduce of more than two ranks over every peer's LL slots (one_shot_peers.cuh), two schedules:
// - one-shot (kDevAllReduceOneShotPeers): every rank writes its input straight into every peer's LL slots and
//   reduces what every peer wrote into its own: one hop where the ring takes 2 (n - 1), each rank sending n - 1
//   copies of its input. Every rank reduces the n inputs in rank order, so every rank stores the same bits.
// - two-shot (kDevAllReduceTwoShotPeers): each step's region is cut into n parts; rank r owns part r. Every rank
//   writes part p of its input to rank p, reduces the n copies of its own part (rank order), and writes the
//   result to every peer: two hops, each rank sending 2 (n - 1) / n of the buffer. Every rank stores the owner's
//   bits, so any reduction agrees everywhere.
// Channel c of the launch uses, per peer, the connection pair CollLaunchArgs::peerConns lists for it: the ring's
// for the neighbours' directions, the collective's own peer connections for the others (made at init: gpu_comm.cc,
// connectOneShotPeers). Included by dev_kernels.cu, which instantiates it next to the LL collective kernels.
#pragma once

#include "algo/ll_protocol.h"
#include "algo/ring_split.h"
#include "device/coll_kernel.cuh"
#include "device/dev_probe.h"
#include "device/dev_work.h"
#include "device/prims_ll.h"

#ifdef __CUDACC__

namespace braid {

// One CTA's share of the one-shot: steps of one LL slot to and from every peer.
template <typename T, typename Fn>
class DevOneShotPeersLL : public DevWordPrims<DevOneShotPeersLL<T, Fn>, T, Fn> {
  using Base = DevWordPrims<DevOneShotPeersLL<T, Fn>, T, Fn>;
  friend Base;
  using typename Base::Line;
  using Base::fn_;
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
  // sh: the peers' connection pairs, in rank order without this rank (`self` ranks below it).
  __device__ DevOneShotPeersLL(PrimsShared* sh, int nPeers, int self, const T* in, T* out, const Fn& fn,
                               DevStatus* st)
      : Base(sh, in, out, fn, st), peers_(sh), nPeers_(nPeers), self_(self) {}

  // Elements [off, off + count) of the op, in steps of stepElems (one LL slot).
  __device__ void run(size_t off, size_t count, size_t stepElems) {
    uint64_t sStep[kDevMaxOneShotPeers], rStep[kDevMaxOneShotPeers];
    loadSteps(sStep, rStep);
    // Whether to go on is decided CTA-wide at each step's end (__syncthreads_or), so no warp leaves the loop while
    // others wait at its barriers.
    for (size_t done = 0; done < count; done += stepElems) {
      const size_t n = minSize(stepElems, count - done);
      takeCredits(sStep, 1, static_cast<int32_t>(n * sizeof(T)));
      BRAID_PROBE(3);
      __syncthreads();
      BRAID_PROBE(4);
      if (!stopped()) step(in_ + off + done, out_ + off + done, n, sStep, rStep);
      const bool stop = __syncthreads_or(stopped());
      BRAID_PROBE(7);
      if (stop) break;
      postHeads(rStep, 1);
      BRAID_PROBE(8);
#pragma unroll
      for (int j = 0; j < kDevMaxOneShotPeers; ++j) ++sStep[j], ++rStep[j];
    }
    saveSteps(sStep, rStep);
  }

  // The two-shot: elements [off, off + count) in regions of up to n * stepElems, each taking two steps of every
  // connection (the reduce-scatter's, then the all-gather's); credits for both are taken before either starts.
  __device__ void runTwoShot(size_t off, size_t count, size_t stepElems) {
    uint64_t sStep[kDevMaxOneShotPeers], rStep[kDevMaxOneShotPeers];
    loadSteps(sStep, rStep);
    const int nranks = nPeers_ + 1;
    const size_t region = stepElems * nranks;
    for (size_t done = 0; done < count; done += region) {
      const size_t m = minSize(region, count - done);
      // Parts of whole 8-byte words, so no word straddles two owners (the last ones may be short or empty): cut
      // as the ring all-reduce cuts its segments.
      const size_t q = ringSegmentElems(m, nranks, Base::kPerLine);
      takeCredits(sStep, 2, static_cast<int32_t>(q * sizeof(T)));
      __syncthreads();
      if (!stopped()) twoStep(in_ + off + done, out_ + off + done, m, q, sStep, rStep);
      const bool stop = __syncthreads_or(stopped());
      if (stop) break;
      postHeads(rStep, 2);
#pragma unroll
      for (int j = 0; j < kDevMaxOneShotPeers; ++j) sStep[j] += 2, rStep[j] += 2;
    }
    saveSteps(sStep, rStep);
  }

  // Any peer's wait ended the CTA's work (abort, timeout, a dead peer, an earlier error).
  __device__ bool stopped() const {
    for (int j = 0; j < nPeers_; ++j)
      if (*reinterpret_cast<volatile const int*>(&peers_[j].stop)) return true;
    return false;
  }

 private:
  // Thread j (below nPeers) takes the credits of the next `steps` steps of peer j's send connection and then marks
  // them with their byte count (after the credit: the receiver reads a slot's size for its step only,
  // kDevLlStepMark); a wait that fails stops the CTA. One thread per peer: a credit that needs a read of head (a
  // system-scope acquire, ~0.75 us) costs one read's time, not one per peer.
  __device__ __forceinline__ void takeCredits(const uint64_t* sStep, int steps, int32_t bytes) {
    if (tid_ >= nPeers_) return;
    const int j = tid_;
    uint64_t step = 0;
#pragma unroll
    for (int k = 0; k < kDevMaxOneShotPeers; ++k)
      if (k == j) step = sStep[k];  // a constant index: sStep stays in registers
    DevConn& c = peers_[j].send;
    if (!devWaitSend(st_, c, step + steps - 1)) {
      peers_[j].stop = 1;
      return;
    }
    if (c.sizes)
      for (int k = 0; k < steps; ++k)
        stVolatile32(c.sizes + fifoSlot(step + k, c.nSteps), static_cast<int32_t>(bytes | kDevLlStepMark));
  }
  // Thread j (below nPeers), after the CTA's reads of a region: peer j's receive slots handed back up to rStep + steps.
  __device__ __forceinline__ void postHeads(const uint64_t* rStep, int steps) {
#pragma unroll
    for (int k = 0; k < kDevMaxOneShotPeers; ++k)
      if (k == tid_ && k < nPeers_) stRelaxedSys(peers_[k].recv.head, rStep[k] + steps);
  }
  __device__ __forceinline__ static char* slot(const DevConn& c, uint64_t step) {
    return c.llBuff + fifoSlot(step, c.nSteps) * static_cast<size_t>(c.llSlotBytes);
  }
  __device__ __forceinline__ bool poll(int j, const char* line, uint32_t flag, uint64_t step, uint64_t* payload) {
    int spins = 0;
    DevWaitClock clock;
    while (!llTryLoadLine(line, flag, payload)) {
      if (++spins == 1024) {
        spins = 0;
        if (devPollMustStop(&peers_[j], st_, peers_[j].recv.peer, &clock,
                            [&] { return llTryLoadLine(line, flag, payload); }, step))
          return false;
      }
    }
    return true;
  }
  __device__ __forceinline__ void loadSteps(uint64_t* sStep, uint64_t* rStep) const {
#pragma unroll
    for (int j = 0; j < kDevMaxOneShotPeers; ++j) {
      sStep[j] = j < nPeers_ ? peers_[j].send.step : 0;
      rStep[j] = j < nPeers_ ? peers_[j].recv.step : 0;
    }
  }
  __device__ void saveSteps(const uint64_t* sStep, const uint64_t* rStep) {
    __syncthreads();
    if (tid_ == 0) {
      for (int j = 0; j < nPeers_; ++j) {
        peers_[j].send.step = sStep[j];
        peers_[j].recv.step = rStep[j];
      }
    }
  }
  __device__ __forceinline__ int peerRank(int j) const { return j < self_ ? j : j + 1; }
  // Elements of part p of a region of m elements cut in parts of q.
  __device__ __forceinline__ static size_t partCount(size_t m, size_t q, int p) { return ringSegment(m, q, p).count; }
  // One region of the two-shot: each thread takes words i of every part. It first sends word i of part p to rank
  // p for all its i, then reduces the peers' words of its own part with its own in rank order, storing and sending
  // each result to every peer, then stores the peers' results. Each pass issues all its stores before it waits,
  // so a thread pays the hop's latency once a pass rather than once a word, and no rank's wait waits on another's.
  __device__ void twoStep(const T* src, T* dst, size_t m, size_t q, const uint64_t* sStep, const uint64_t* rStep) {
    const size_t lines = llLines(q * sizeof(T));
    const size_t mine = partCount(m, q, self_);
    for (size_t i = tid_; i < lines; i += nthreads_) {
#pragma unroll
      for (int j = 0; j < kDevMaxOneShotPeers; ++j) {
        if (j >= nPeers_) break;
        const int p = peerRank(j);
        const uint64_t w = pre(load(src + p * q, partCount(m, q, p), i));
        llStoreLine(slot(peers_[j].send, sStep[j]) + i * kLlLineBytes, w, llFlag(sStep[j]));
      }
    }
    for (size_t i = tid_; i < lines; i += nthreads_) {
      const uint64_t own = pre(load(src + self_ * q, mine, i));
      uint64_t word[kDevMaxOneShotPeers];
      if (!awaitLines(rStep, 0, i, word)) return;
      const uint64_t acc = combine(own, word);
      store(dst + self_ * q, mine, i, acc);
#pragma unroll
      for (int j = 0; j < kDevMaxOneShotPeers; ++j)
        if (j < nPeers_) llStoreLine(slot(peers_[j].send, sStep[j] + 1) + i * kLlLineBytes, acc, llFlag(sStep[j] + 1));
    }
    for (size_t i = tid_; i < lines; i += nthreads_) {
      uint64_t word[kDevMaxOneShotPeers];
      if (!awaitLines(rStep, 1, i, word)) return;
#pragma unroll
      for (int j = 0; j < kDevMaxOneShotPeers; ++j) {
        if (j >= nPeers_) break;
        const int p = peerRank(j);
        store(dst + p * q, partCount(m, q, p), i, word[j]);
      }
    }
  }
  // Line i of every peer's slot at rStep[j] + ahead, into word[j]: all loads issued before any wait. False once the
  // CTA must stop.
  __device__ __forceinline__ bool awaitLines(const uint64_t* rStep, int ahead, size_t i, uint64_t* word) {
    LlLine got[kDevMaxOneShotPeers];
#pragma unroll
    for (int j = 0; j < kDevMaxOneShotPeers; ++j)
      if (j < nPeers_) got[j] = llLoadLine(slot(peers_[j].recv, rStep[j] + ahead) + i * kLlLineBytes);
#pragma unroll
    for (int j = 0; j < kDevMaxOneShotPeers; ++j) {
      if (j >= nPeers_) break;
      const uint64_t step = rStep[j] + ahead;
      const uint32_t flag = llFlag(step);
      if (!llLineReady(got[j], flag, &word[j]) &&
          !poll(j, slot(peers_[j].recv, step) + i * kLlLineBytes, flag, step, &word[j]))
        return false;
    }
    return true;
  }
  // The n words of one position reduced in rank order (this rank's own before peer j where j == self_), the
  // post-op applied.
  __device__ __forceinline__ uint64_t combine(uint64_t own, const uint64_t* word) const {
    uint64_t acc = 0;
    bool started = false;
#pragma unroll
    for (int j = 0; j <= kDevMaxOneShotPeers; ++j) {
      if (j == self_) acc = started ? reduce(acc, own, false) : own, started = true;
      if (j < nPeers_) acc = started ? reduce(acc, word[j], false) : word[j], started = true;
    }
    if constexpr (Fn::kHasPost) {
      Line l;
      l.u = acc;
#pragma unroll
      for (int k = 0; k < Base::kPerLine; ++k) l.e[k] = fn_.post(l.e[k]);
      acc = l.u;
    }
    return acc;
  }
  // One step: each thread sends all its lines to every peer, then reduces the peers' lines with its own in rank
  // order. All sends come before any wait: the hop's latency is paid once a step, not once a line, and no rank's
  // step waits on another's wait.
  __device__ void step(const T* src, T* dst, size_t n, const uint64_t* sStep, const uint64_t* rStep) {
    const size_t lines = llLines(n * sizeof(T));
    for (size_t i = tid_; i < lines; i += nthreads_) {
      const uint64_t own = pre(load(src, n, i));
#pragma unroll
      for (int j = 0; j < kDevMaxOneShotPeers; ++j)
        if (j < nPeers_) llStoreLine(slot(peers_[j].send, sStep[j]) + i * kLlLineBytes, own, llFlag(sStep[j]));
    }
    BRAID_PROBE(5);
    for (size_t i = tid_; i < lines; i += nthreads_) {
      const uint64_t own = pre(load(src, n, i));
      uint64_t word[kDevMaxOneShotPeers];
      if (!awaitLines(rStep, 0, i, word)) return;
      store(dst, n, i, combine(own, word));
    }
    BRAID_PROBE(6);
  }

  PrimsShared* peers_;
  int nPeers_;
  int self_;
};

template <typename T, typename Fn>
__global__ void __launch_bounds__(kDevLaunchMax, 1) oneShotPeersKernel(const CollLaunchArgs args) {
  __shared__ PrimsShared sh[kDevMaxOneShotPeers];
  BRAID_PROBE(0);
  devAwaitPreviousKernel();
  if (args.pdlTrigger) devLetNextKernelLaunch();
  const int nPeers = args.nranks - 1;
  const int ch = blockIdx.x;
  if (ch >= args.nChannels || nPeers < 1 || nPeers > kDevMaxOneShotPeers) return;
  DevConn* const* conns = args.peerConns + static_cast<size_t>(ch) * nPeers * 2;
  if (static_cast<int>(threadIdx.x) < nPeers) {
    PrimsShared& s = sh[threadIdx.x];
    s.reset();
    s.send = *conns[2 * threadIdx.x];
    s.recv = *conns[2 * threadIdx.x + 1];
  }
  __syncthreads();
  BRAID_PROBE(1);
  const Fn fn = DevMakeFn<Fn>::make(args);
  const T* in = static_cast<const T*>(args.sendbuff);
  T* out = static_cast<T*>(args.recvbuff);
  devLlCleanLinks(sh, nPeers, in, out, fn, args.status);  // LL flag-wrap cleaning where due (prims_ll.h)
  BRAID_PROBE(2);
  DevOneShotPeersLL<T, Fn> prims(sh, nPeers, args.rank, in, out, fn, args.status);
  const size_t stepElems = chunkElemsFor(static_cast<uint32_t>(llSlotDataBytes(sh[0].send.llSlotBytes)), sizeof(T));
  const bool two = args.coll == kDevAllReduceTwoShotPeers;
  const ElemRange r = two ? twoShotChannelRange(args.count, args.nChannels, ch, args.nranks, stepElems, sizeof(T))
                          : channelRange(args.count, args.nChannels, ch, alignElemsFor(stepElems, sizeof(T)));
  if (r.count != 0 && !prims.stopped()) {
    if (two) prims.runTwoShot(r.offset, r.count, stepElems);
    else prims.run(r.offset, r.count, stepElems);
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < nPeers) {
    const PrimsShared& s = sh[threadIdx.x];
    conns[2 * threadIdx.x]->step = s.send.step;
    conns[2 * threadIdx.x]->llLastClean = s.send.llLastClean;
    conns[2 * threadIdx.x]->headSeen = s.send.headSeen;
    conns[2 * threadIdx.x + 1]->step = s.recv.step;
    conns[2 * threadIdx.x + 1]->llLastClean = s.recv.llLastClean;
  }
  BRAID_PROBE(10);
  BRAID_PROBE_REPORT("oneshot", args.rank);
}

}  // namespace braid

#endif  // __CUDACC__
