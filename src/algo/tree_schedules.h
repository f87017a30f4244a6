// The double binary tree all-reduce schedule (docs/DESIGN.md §2, "Trees"), a template over a tree Primitives type
// so host and device executors can run the same steps. A channel's range is cut in two halves, one per tree
// (tree_topology.h); each half is reduced up its tree to the root and broadcast back down, in FIFO-step chunks.
//
// TreePrims is bound to one tree's connections (parent, children) and the op's buffers; offsets are element
// offsets. Each call is one FIFO step on every connection it touches:
//   sendUp(in, n)                 pre(input) -> parent                                   (leaf, going up)
//   recvReduceSendUp(in, n)       children (+) pre(input) -> parent                      (interior, going up)
//   recvReduceCopy(in, out, n)    post(children (+) pre(input)) -> output                (root, going up)
//   sendDown(out, n)              output -> children                                     (root, going down)
//   recvCopySendDown(out, n)      parent -> output and children                          (interior, going down)
//   recvDown(out, n)              parent -> output                                       (leaf, going down)
//   localReduceCopy(in, out, n)   post(pre(input)) -> output                             (a single rank)
// Every rank's result is the root's bits, so any reduction gives all ranks the same output.
//
// Order and progress: iteration i runs chunk i up both trees, then chunk i - lag down both. Ranks may then wait
// on each other only for an earlier chunk, or for the same chunk one hop nearer its source (towards the root going
// up, towards it going down), so no wait closes a cycle for any lag and any FIFO depth; the lag lets chunks
// already sent up travel while a rank would otherwise wait for the first one to come back down.
// In-place safety: a chunk's input is read (going up) before its output is written (root going up, or going down).
#pragma once

#include <cstddef>

#include "algo/ring_split.h"

namespace braid {

struct TreeRole {
  bool hasParent = false;
  int nChildren = 0;
};

struct TreeArgs {
  ElemRange half[2] = {{0, 0}, {0, 0}};  // each tree's share of this channel's range
  TreeRole role[2];
  size_t chunkElems = 1;  // at most one FIFO step
  size_t lag = 1;         // chunks a rank sends up before its first one down
};

// Splits a channel's range between the trees: the first half (rounded up to alignElems) to tree 0.
BRAID_HD inline void treeHalves(ElemRange ch, size_t alignElems, ElemRange half[2]) {
  const size_t first = minSize(roundUp(divUp(ch.count, 2), alignElems == 0 ? 1 : alignElems), ch.count);
  half[0] = ElemRange{ch.offset, first};
  half[1] = ElemRange{ch.offset + first, ch.count - first};
}

template <typename Prims>
BRAID_HD void treeUpStep(Prims& p, const TreeRole& r, size_t off, size_t n) {
  if (!r.hasParent) {
    if (r.nChildren == 0) {
      p.localReduceCopy(off, off, n);
    } else {
      p.recvReduceCopy(off, off, n);
    }
  } else if (r.nChildren == 0) {
    p.sendUp(off, n);
  } else {
    p.recvReduceSendUp(off, n);
  }
}

template <typename Prims>
BRAID_HD void treeDownStep(Prims& p, const TreeRole& r, size_t off, size_t n) {
  if (!r.hasParent) {
    if (r.nChildren > 0) p.sendDown(off, n);
  } else if (r.nChildren == 0) {
    p.recvDown(off, n);
  } else {
    p.recvCopySendDown(off, n);
  }
}

// Chunks a rank sends up a tree before its first one comes down, for a FIFO of nSteps steps: half the FIFO, so the
// chunks on their way up keep the links busy while the first one makes its round trip, and credit remains for the
// ones behind them.
BRAID_HD inline size_t treeLagFor(uint32_t nSteps) { return nSteps > 2 ? nSteps / 2 : 1; }

// One tree's share alone (device kernels run each tree of a channel in a CTA of its own): the same steps and
// lag as treeAllReduce gives that tree.
template <typename Prims>
BRAID_HD void treeAllReduceOne(Prims& p, const TreeRole& r, ElemRange half, size_t chunkElems, size_t lag) {
  const size_t chunk = chunkElems == 0 ? 1 : chunkElems;
  const size_t nChunks = divUp(half.count, chunk);
  for (size_t i = 0; i < nChunks + lag; ++i) {
    if (i < nChunks) treeUpStep(p, r, half.offset + i * chunk, minSize(chunk, half.count - i * chunk));
    if (i < lag || i - lag >= nChunks) continue;
    const size_t o = (i - lag) * chunk;
    treeDownStep(p, r, half.offset + o, minSize(chunk, half.count - o));
  }
}

// prims[t] runs tree t's steps.
template <typename Prims>
BRAID_HD void treeAllReduce(Prims* prims, const TreeArgs& a) {
  const size_t chunk = a.chunkElems == 0 ? 1 : a.chunkElems;
  size_t nChunks[2];
  size_t most = 0;
  for (int t = 0; t < 2; ++t) {
    nChunks[t] = divUp(a.half[t].count, chunk);
    if (nChunks[t] > most) most = nChunks[t];
  }
  for (size_t i = 0; i < most + a.lag; ++i) {
    for (int t = 0; t < 2; ++t) {
      if (i >= nChunks[t]) continue;
      const size_t o = i * chunk;
      treeUpStep(prims[t], a.role[t], a.half[t].offset + o, minSize(chunk, a.half[t].count - o));
    }
    if (i < a.lag) continue;
    const size_t j = i - a.lag;
    for (int t = 0; t < 2; ++t) {
      if (j >= nChunks[t]) continue;
      const size_t o = j * chunk;
      treeDownStep(prims[t], a.role[t], a.half[t].offset + o, minSize(chunk, a.half[t].count - o));
    }
  }
}

}  // namespace braid
