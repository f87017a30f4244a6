// The LL (low-latency) protocol's wire rules, shared by every implementation (device primitives, host
// simulation and tests), so the flag and cleaning arithmetic is written once and tested on the CPU.
//
// A connection's LL buffer holds nSteps slots; a slot is an array of 16-byte lines. A line carries 8 data
// bytes as two 8-byte words {uint32 data, uint32 flag}; each word is written with one 8-byte store (single-copy
// atomic on GPUs and x86-64), so a reader that sees a word's flag equal to llFlag(step) also sees its data.
// No fence and no tail counter: the flags are the signal. The sender still waits for credits (head) before
// reusing a slot, as with SIMPLE, and the step counters are the connection's (shared with SIMPLE), so a
// slot's old lines always carry an older step's flag.
//
// The flag is only 32 bits of a 64-bit step: a line left untouched for exactly 2^32 steps (say, LL unused
// on the connection while SIMPLE ran) would look current. So each side keeps the step at which the
// connection's LL slots were last cleaned, and an LL operation whose first step on the connection is
// kLlCleanPeriod or more past it first spends nSteps steps cleaning (llNeedsClean): the sender rewrites
// every line of the slot with that step's flag (no data); the receiver waits until it sees that flag on
// every line of the slot (so it can never again read what was there before), then posts head. Both sides
// see the same operations at the same steps, so they clean at the same steps. Every line an LL step reads
// then carries a flag less than kLlCleanPeriod + nSteps + (the operation's steps) old, far from 2^32, so a
// stale line never matches. The cost is one slot's worth of lines per slot per period.
//
// Order: an operation runs the clean steps of every direction it will use before its first step, all send
// directions before any receive direction. Cleaning a direction lazily at its first call deadlocks a ring:
// each rank's first call only sends, and its first data step (slot reuse) needs a credit for a clean step
// that the peer consumes only in its second call (tests/unit/ll_protocol_test.cc, ring model).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/numeric_types.h"  // BRAID_HD

namespace braid {

constexpr size_t kLlLineBytes = 16;
constexpr size_t kLlDataPerLine = 8;
constexpr uint64_t kLlCleanPeriod = uint64_t(1) << 28;

BRAID_HD inline uint32_t llFlag(uint64_t step) { return static_cast<uint32_t>(step + 1); }

// Before an LL operation's first step `step` on a connection whose slots were last cleaned at step
// `lastClean` (0 for a new connection, whose slots start zeroed): clean now? (nSteps clean steps from
// `step`; lastClean becomes `step`.)
BRAID_HD inline bool llNeedsClean(uint64_t step, uint64_t lastClean) { return step - lastClean >= kLlCleanPeriod; }

// Lines needed for `bytes` of data, and the data bytes one slot of `slotBytes` holds.
BRAID_HD inline size_t llLines(size_t bytes) { return (bytes + kLlDataPerLine - 1) / kLlDataPerLine; }
BRAID_HD inline size_t llSlotDataBytes(size_t slotBytes) { return slotBytes / kLlLineBytes * kLlDataPerLine; }

// One 8-byte word: data in the low half, flag in the high half (little-endian: data first in memory).
BRAID_HD inline uint64_t llWord(uint32_t data, uint32_t flag) {
  return static_cast<uint64_t>(data) | (static_cast<uint64_t>(flag) << 32);
}
BRAID_HD inline uint32_t llWordData(uint64_t w) { return static_cast<uint32_t>(w); }
BRAID_HD inline uint32_t llWordFlag(uint64_t w) { return static_cast<uint32_t>(w >> 32); }

// Splits 8 data bytes (a line's payload, little-endian) into the two words' data halves and back.
BRAID_HD inline void llSplit(uint64_t payload, uint32_t* d0, uint32_t* d1) {
  *d0 = static_cast<uint32_t>(payload);
  *d1 = static_cast<uint32_t>(payload >> 32);
}
BRAID_HD inline uint64_t llJoin(uint32_t d0, uint32_t d1) {
  return static_cast<uint64_t>(d0) | (static_cast<uint64_t>(d1) << 32);
}

}  // namespace braid
