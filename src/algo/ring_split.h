// How an operation is cut up: per-channel contiguous sub-ranges, chunks of at most one FIFO step, and the
// per-rank segments of one ring all-reduce loop. Pure functions of the op's shape, shared by the schedules
// (host and device), the host executor, tests and the tuner; every rank computes the same cuts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/numeric_types.h"  // BRAID_HD

namespace braid {

struct ElemRange {
  size_t offset;
  size_t count;
};

BRAID_HD inline size_t divUp(size_t a, size_t b) { return (a + b - 1) / b; }
BRAID_HD inline size_t roundUp(size_t a, size_t b) { return divUp(a, b) * b; }
BRAID_HD inline size_t minSize(size_t a, size_t b) { return a < b ? a : b; }

// Channel `channel` of `nChannels` gets a contiguous [offset, offset+count) of `count` elements. Sub-range
// starts are multiples of `alignElems` (keeps vector loops and memcpy aligned); trailing channels may get
// nothing when count is small.
BRAID_HD inline ElemRange channelRange(size_t count, int nChannels, int channel, size_t alignElems) {
  if (nChannels <= 1) return ElemRange{0, count};
  if (alignElems == 0) alignElems = 1;
  const size_t per = roundUp(divUp(count, static_cast<size_t>(nChannels)), alignElems);
  const size_t off = minSize(per * static_cast<size_t>(channel), count);
  return ElemRange{off, minSize(per, count - off)};
}

// Channels for a device op of `bytes`: one per `perChannel` bytes (64 KiB: below that a collective's channel
// costs launch width and buys no bandwidth), at least one, at most nChannels.
inline int channelsForBytes(size_t bytes, int nChannels, size_t perChannel = size_t(64) << 10) {
  const size_t want = divUp(bytes, perChannel < 1 ? 1 : perChannel);
  const size_t cap = nChannels < 1 ? 1 : static_cast<size_t>(nChannels);
  return static_cast<int>(want < 1 ? 1 : (want < cap ? want : cap));
}

// One ring all-reduce loop covers `len` <= nranks * chunkElems elements, cut into nranks segments of
// `seg` elements (the last ones shorter or empty). `alignElems` must divide chunkElems so seg <= chunkElems.
BRAID_HD inline size_t ringSegmentElems(size_t len, int nranks, size_t alignElems) {
  if (alignElems == 0) alignElems = 1;
  return roundUp(divUp(len, static_cast<size_t>(nranks)), alignElems);
}
BRAID_HD inline ElemRange ringSegment(size_t len, size_t seg, int index) {
  const size_t off = minSize(seg * static_cast<size_t>(index), len);
  return ElemRange{off, minSize(seg, len - off)};
}

// Elements per chunk for a FIFO step of `stepBytes` (at least 1), and an alignment that divides it.
BRAID_HD inline size_t chunkElemsFor(uint32_t stepBytes, size_t elemSize) {
  const size_t c = stepBytes / elemSize;
  return c == 0 ? 1 : c;
}
BRAID_HD inline size_t alignElemsFor(size_t chunkElems, size_t elemSize);

// FIFO steps of the busiest channel of a one-shot all-reduce of `count` elements of `elemSize` bytes on
// `nChannels` channels, cut as the kernel cuts it (collKernel: steps of connStepBytes, or of stepCap where that
// is smaller; channelRange's aligned shares, channel 0 the largest). The executor splits the one-shot only
// where this is at least 2 and below the connection's nSteps, so no sending CTA waits for FIFO space.
inline size_t oneShotChannelSteps(size_t count, size_t elemSize, int nChannels, uint32_t stepCap,
                                  uint32_t connStepBytes) {
  const uint32_t step = stepCap != 0 && stepCap < connStepBytes ? stepCap : connStepBytes;
  const size_t chunk = chunkElemsFor(step, elemSize);
  const size_t share = channelRange(count, nChannels, 0, alignElemsFor(chunk, elemSize)).count;
  return divUp(share, chunk);
}

BRAID_HD inline size_t alignElemsFor(size_t chunkElems, size_t elemSize) {
  size_t a = 64 / elemSize;  // one cache line
  if (a == 0) a = 1;
  return (chunkElems % a == 0) ? a : 1;
}

// The two-shot all-reduce over every peer (one_shot_peers.cuh): channel `channel`'s share of `count` elements.
// Each channel walks its share in regions of nranks * stepElems (one LL slot's data per part), and cuts a region
// into nranks parts with ringSegmentElems at whole 8-byte words; shares are aligned to nranks cache lines.
BRAID_HD inline ElemRange twoShotChannelRange(size_t count, int nChannels, int channel, int nranks, size_t stepElems,
                                              size_t elemSize) {
  return channelRange(count, nChannels, channel, alignElemsFor(stepElems, elemSize) * static_cast<size_t>(nranks));
}

}  // namespace braid
