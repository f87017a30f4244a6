// The LL128 protocol's wire rules, shared by the device primitives (prims_ll128.h) and the CPU tests that
// check the layout, so the index arithmetic is written once.
//
// A connection's LL128 buffer holds nSteps slots in the receiver's memory; a slot is an array of 128-byte
// lines of sixteen 8-byte words: words 0-14 carry data, word 15 the flag ll128Flag(step) (the full 64-bit
// step + 1, so a stale line can never match and no cleaning is needed, unlike LL's 32-bit flags). A warp
// moves four lines (a 512-byte group) per instruction: lane L holds the 16 bytes at 16 * L of the group,
// i.e. words 2k and 2k+1 of line L / 8 (k = L % 8), and lanes with k == 7 hold the flag as their second word.
// Eight lanes' 16-byte stores to one line leave the SM as one 128-byte write, which NVLink on sm_90 delivers
// whole: a reader whose warp-wide load sees the flag in a line sees all of that line's data (NCCL relies on
// the same). PCIe and host memory do not guarantee it, so LL128 runs on NVLink P2P connections only.
//
// Data word d (8 bytes of the step's data, little-endian, the last one possibly partial) lives in group
// d / 60, line (d % 60) / 15, word (d % 60) % 15. Sender and receiver of a step cut the same byte count, so
// both see the same number of groups; the last group's words past the data still travel, with every line's
// flag (their data is unused).
// Credits (head) and the step counters are the connection's, shared with SIMPLE and LL.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/numeric_types.h"  // BRAID_HD

namespace braid {

constexpr size_t kLl128LineBytes = 128;
constexpr int kLl128LineWords = 16;
constexpr int kLl128DataWords = 15;         // per line; word 15 is the flag
constexpr int kLl128GroupLines = 4;         // one warp: 32 lanes x 16 bytes
constexpr size_t kLl128GroupBytes = kLl128LineBytes * kLl128GroupLines;
constexpr size_t kLl128GroupDataWords = kLl128DataWords * kLl128GroupLines;  // 60

BRAID_HD inline uint64_t ll128Flag(uint64_t step) { return step + 1; }

// Data words (8 bytes, rounded up) and groups a step of `bytes` occupies.
BRAID_HD inline size_t ll128Words(size_t bytes) { return (bytes + 7) / 8; }
BRAID_HD inline size_t ll128Groups(size_t bytes) { return (ll128Words(bytes) + kLl128GroupDataWords - 1) / kLl128GroupDataWords; }
// Data bytes one slot of `slotBytes` holds (whole groups).
BRAID_HD inline size_t ll128SlotDataBytes(size_t slotBytes) { return slotBytes / kLl128GroupBytes * kLl128GroupDataWords * 8; }

// Lane `lane` (0-31) of the warp moving group g: the byte offset of its 16 bytes in the slot, the data word
// it carries first, and whether its second word is the line's flag (else it carries data word first + 1).
BRAID_HD inline size_t ll128LaneOffset(size_t g, int lane) { return g * kLl128GroupBytes + static_cast<size_t>(lane) * 16; }
BRAID_HD inline size_t ll128LaneFirstWord(size_t g, int lane) {
  return g * kLl128GroupDataWords + static_cast<size_t>(lane >> 3) * kLl128DataWords + 2 * static_cast<size_t>(lane & 7);
}
BRAID_HD inline bool ll128LaneHoldsFlag(int lane) { return (lane & 7) == 7; }

}  // namespace braid
