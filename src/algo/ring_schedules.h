// The ring schedules (docs/DESIGN.md §2), written once as templates over a Primitives type so the host
// executor (CPU primitives over host FIFOs) and the device executor (warp primitives) run the same steps.
//
// A Primitives object is bound to one channel's ring (send to the next position, receive from the previous) and to the op's
// input and output buffers; offsets below are element offsets into those buffers. Each call is one FIFO
// step on every connection it touches, so both sides of a connection make the same sequence of calls:
//   send(in, n)                          input (pre-op applied when the op has one) -> next
//   recv(out, n)                         prev -> output
//   recvReduceSend(in, n)                prev (+) pre(input) -> next
//   recvReduceCopySend(in, out, n, post) prev (+) pre(input) -> output and next (post-op applied if asked)
//   recvReduceCopy(in, out, n, post)     prev (+) pre(input) -> output
//   recvCopySend(out, n)                 prev -> output and next
//   copySend(in, out, n)                 input -> output (skipped when they are the same memory) and next
//   localReduceCopy(in, out, n)          post(pre(input)) -> output (the single-rank case)
// In-place safety: within one loop iteration every input element is read before any output element of
// that iteration is written, and iterations touch disjoint element ranges.
#pragma once

#include <cstddef>

#include "algo/ring_split.h"

namespace braid {

// Rings run in an order agreed at init (runtime/ring_order.h): position p holds rank order[p]. The schedules
// walk positions; a block that belongs to a rank (all-gather's output, reduce-scatter's input) is placed by the
// rank at the position it came from, so the result is the same whatever the order.
struct RingArgs {
  int pos = 0;                  // this rank's ring position (sends to pos+1, receives from pos-1)
  int nranks = 1;
  int rootPos = 0;              // Broadcast/Reduce: the root's ring position
  const int* order = nullptr;   // position -> rank; nullptr: rank order (device memory in kernels)
  size_t count = 0;        // AllReduce/Broadcast/Reduce: total; AllGather/ReduceScatter: per rank
  ElemRange ch{0, 0};      // this channel's share of `count` (per rank block for AllGather/ReduceScatter)
  size_t chunkElems = 1;   // at most one FIFO step
  size_t alignElems = 1;   // divides chunkElems
};

BRAID_HD inline int ringMod(int x, int n) { return ((x % n) + n) % n; }
// The rank at ring position p.
BRAID_HD inline int ringRankAt(const RingArgs& a, int p) { return a.order ? a.order[p] : p; }

// Reduce-scatter phase then all-gather phase, NCCL's ring all-reduce.
template <typename Prims>
BRAID_HD void ringAllReduce(Prims& prims, const RingArgs& a) {
  const int n = a.nranks;
  if (a.ch.count == 0) return;
  if (n == 1) {
    prims.localReduceCopy(a.ch.offset, a.ch.offset, a.ch.count);
    return;
  }
  const size_t loopElems = static_cast<size_t>(n) * a.chunkElems;
  for (size_t base = 0; base < a.ch.count; base += loopElems) {
    const size_t len = minSize(loopElems, a.ch.count - base);
    const size_t seg = ringSegmentElems(len, n, a.alignElems);
    const size_t start = a.ch.offset + base;
    ElemRange s;

    // Segments are indexed by position: every rank ends with every segment, so none needs its owner's rank.
    s = ringSegment(len, seg, ringMod(a.pos - 1, n));
    prims.send(start + s.offset, s.count);
    for (int j = 2; j < n; ++j) {
      s = ringSegment(len, seg, ringMod(a.pos - j, n));
      prims.recvReduceSend(start + s.offset, s.count);
    }
    // This rank's segment is now complete: finalise it (post-op) and start circulating it.
    s = ringSegment(len, seg, a.pos);
    prims.recvReduceCopySend(start + s.offset, start + s.offset, s.count, true);
    for (int j = 1; j < n - 1; ++j) {
      s = ringSegment(len, seg, ringMod(a.pos - j, n));
      prims.recvCopySend(start + s.offset, s.count);
    }
    s = ringSegment(len, seg, ringMod(a.pos + 1, n));
    prims.recv(start + s.offset, s.count);
  }
}

// One-shot all-reduce of a 2-rank ring (next == prev == the peer): each step sends this rank's input chunk
// and reduces the peer's into the output, so every chunk is one hop instead of the ring's two (reduce-scatter
// then all-gather), with the same bytes on the wire (the whole buffer each way). Each rank computes
// peer (+) pre(own) in its own order, so only reductions whose bits do not depend on it may run here
// (oneShotExact in op_desc.h: not float max/min, not float pre-multiplied sums). 2 ranks only:
// with more, ranks would reduce in different orders and inputs would need forwarding.
// doSend / doRecv: the directions this caller runs (both, or one each in the split form, kDevAllReduceOneShotSplit).
template <typename Prims>
BRAID_HD void ringAllReduceOneShot(Prims& prims, const RingArgs& a, bool doSend = true, bool doRecv = true) {
  if (a.nranks != 2) {
    ringAllReduce(prims, a);
    return;
  }
  for (size_t o = 0; o < a.ch.count; o += a.chunkElems) {
    const size_t len = minSize(a.chunkElems, a.ch.count - o);
    const size_t off = a.ch.offset + o;
    if (doSend) prims.send(off, len);
    if (doRecv) prims.recvReduceCopy(off, off, len, true);
  }
}

// Output block r (r * count) receives rank r's input; in place when input == output + rank * count.
template <typename Prims>
BRAID_HD void ringAllGather(Prims& prims, const RingArgs& a) {
  const int n = a.nranks;
  for (size_t o = 0; o < a.ch.count; o += a.chunkElems) {
    const size_t len = minSize(a.chunkElems, a.ch.count - o);
    const size_t inOff = a.ch.offset + o;
    auto outOff = [&](int r) { return static_cast<size_t>(r) * a.count + a.ch.offset + o; };
    if (n == 1) {
      prims.localReduceCopy(inOff, outOff(0), len);
      continue;
    }
    // The block received j steps after this rank's left the position j before it: its owner's rank places it.
    prims.copySend(inOff, outOff(ringRankAt(a, a.pos)), len);
    for (int j = 1; j < n - 1; ++j) prims.recvCopySend(outOff(ringRankAt(a, ringMod(a.pos - j, n))), len);
    prims.recv(outOff(ringRankAt(a, ringMod(a.pos + 1, n))), len);
  }
}

// Input block r (r * count) is reduced over ranks into rank r's output; in place when
// output == input + rank * count (that block is read and written element by element, in the last step).
template <typename Prims>
BRAID_HD void ringReduceScatter(Prims& prims, const RingArgs& a) {
  const int n = a.nranks;
  for (size_t o = 0; o < a.ch.count; o += a.chunkElems) {
    const size_t len = minSize(a.chunkElems, a.ch.count - o);
    auto inOff = [&](int r) { return static_cast<size_t>(r) * a.count + a.ch.offset + o; };
    const size_t outOff = a.ch.offset + o;
    if (n == 1) {
      prims.localReduceCopy(inOff(0), outOff, len);
      continue;
    }
    // The partial sum sent from position p ends at position p (n - 1 hops later): block order[p].
    prims.send(inOff(ringRankAt(a, ringMod(a.pos - 1, n))), len);
    for (int j = 2; j < n; ++j) prims.recvReduceSend(inOff(ringRankAt(a, ringMod(a.pos - j, n))), len);
    prims.recvReduceCopy(inOff(ringRankAt(a, a.pos)), outOff, len, true);
  }
}

// Chain from the root along the ring: root copySend, middle recvCopySend, the rank before the root recv.
template <typename Prims>
BRAID_HD void ringBroadcast(Prims& prims, const RingArgs& a) {
  const int n = a.nranks;
  const int pos = ringMod(a.pos - a.rootPos, n);  // 0 = root, n-1 = last
  for (size_t o = 0; o < a.ch.count; o += a.chunkElems) {
    const size_t len = minSize(a.chunkElems, a.ch.count - o);
    const size_t off = a.ch.offset + o;
    if (n == 1) {
      prims.localReduceCopy(off, off, len);
    } else if (pos == 0) {
      prims.copySend(off, off, len);
    } else if (pos == n - 1) {
      prims.recv(off, len);
    } else {
      prims.recvCopySend(off, len);
    }
  }
}

// Chain ending at the root: the rank after the root sends, the middle ones add theirs, the root
// finalises into its output. Only the root's output is written.
template <typename Prims>
BRAID_HD void ringReduce(Prims& prims, const RingArgs& a) {
  const int n = a.nranks;
  const int pos = ringMod(a.pos - a.rootPos - 1, n);  // 0 = first (after the root), n-1 = root
  for (size_t o = 0; o < a.ch.count; o += a.chunkElems) {
    const size_t len = minSize(a.chunkElems, a.ch.count - o);
    const size_t off = a.ch.offset + o;
    if (n == 1) {
      prims.localReduceCopy(off, off, len);
    } else if (pos == 0) {
      prims.send(off, len);
    } else if (pos == n - 1) {
      prims.recvReduceCopy(off, off, len, true);
    } else {
      prims.recvReduceSend(off, len);
    }
  }
}

}  // namespace braid
