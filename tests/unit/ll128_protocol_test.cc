// The LL128 wire layout (algo/ll128_protocol.h) exercised by a host model of the warp that moves it:
// 32 "lanes" per group store their 16 bytes where the device primitives would, a receiver model checks each
// line's flag and unpacks the data words. Every data word of every size travels exactly once and in order,
// every line of a used group carries the step's flag in word 15, and a slot still holding an older step's
// lines (or a line whose flag lags) is refused: the checks can fail.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "algo/ll128_protocol.h"

namespace braid {
namespace {

// Sender model: what the warps of one step store into the slot (words of 8 bytes).
void packStep(const std::vector<uint8_t>& data, uint64_t step, std::vector<uint64_t>* slot) {
  const size_t words = ll128Words(data.size());
  const size_t groups = ll128Groups(data.size());
  auto word = [&](size_t d) {
    uint64_t v = 0;
    const size_t off = d * 8;
    std::memcpy(&v, data.data() + off, std::min<size_t>(8, data.size() - off));
    return v;
  };
  for (size_t g = 0; g < groups; ++g) {
    for (int lane = 0; lane < 32; ++lane) {
      const size_t first = ll128LaneFirstWord(g, lane);
      const uint64_t v0 = first < words ? word(first) : 0;
      const uint64_t v1 = ll128LaneHoldsFlag(lane) ? ll128Flag(step) : (first + 1 < words ? word(first + 1) : 0);
      const size_t at = ll128LaneOffset(g, lane) / 8;
      ASSERT_LT(at + 1, slot->size());
      (*slot)[at] = v0;
      (*slot)[at + 1] = v1;
    }
  }
}

// Receiver model: false when any line of a used group lacks the step's flag; else the unpacked bytes.
bool unpackStep(const std::vector<uint64_t>& slot, uint64_t step, size_t bytes, std::vector<uint8_t>* out) {
  const size_t words = ll128Words(bytes);
  out->assign(bytes, 0);
  for (size_t g = 0; g < ll128Groups(bytes); ++g) {
    for (int lane = 0; lane < 32; ++lane) {
      const size_t at = ll128LaneOffset(g, lane) / 8;
      if (ll128LaneHoldsFlag(lane) && slot[at + 1] != ll128Flag(step)) return false;
    }
    for (int lane = 0; lane < 32; ++lane) {
      const size_t at = ll128LaneOffset(g, lane) / 8;
      const size_t first = ll128LaneFirstWord(g, lane);
      for (int k = 0; k < 2; ++k) {
        const size_t d = first + k;
        if ((k == 1 && ll128LaneHoldsFlag(lane)) || d >= words) continue;
        const size_t off = d * 8;
        std::memcpy(out->data() + off, &slot[at + k], std::min<size_t>(8, bytes - off));
      }
    }
  }
  return true;
}

TEST(Ll128Protocol, LayoutConstants) {
  EXPECT_EQ(kLl128GroupBytes, 512u);
  EXPECT_EQ(kLl128GroupDataWords, 60u);
  EXPECT_EQ(ll128SlotDataBytes(128 << 10), 122880u);  // 1024 lines x 120 bytes
  EXPECT_EQ(ll128SlotDataBytes(512), 480u);
  EXPECT_EQ(ll128Groups(0), 0u);
  EXPECT_EQ(ll128Groups(1), 1u);
  EXPECT_EQ(ll128Groups(480), 1u);
  EXPECT_EQ(ll128Groups(481), 2u);
  EXPECT_EQ(ll128Flag(0), 1u);  // zeroed slots never match step 0
  EXPECT_EQ(ll128Flag(uint64_t{1} << 32), (uint64_t{1} << 32) + 1);  // no 32-bit wrap
}

TEST(Ll128Protocol, LanesCoverEveryWordOnceAndFlagsEveryLine) {
  // One group: 60 data words, 4 flags, each 16-byte lane slot used once, lanes in address order.
  std::vector<int> seen(kLl128GroupDataWords, 0);
  int flags = 0;
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(ll128LaneOffset(0, lane), static_cast<size_t>(lane) * 16);
    const size_t first = ll128LaneFirstWord(0, lane);
    ASSERT_LT(first, seen.size());
    seen[first]++;
    if (ll128LaneHoldsFlag(lane)) {
      ++flags;
      // The flag is the last word of its line: lane 7 of each 8 covers bytes 112-127 of the line.
      EXPECT_EQ((ll128LaneOffset(0, lane) + 8) % kLl128LineBytes, kLl128LineBytes - 8);
    } else {
      ASSERT_LT(first + 1, seen.size());
      seen[first + 1]++;
    }
  }
  EXPECT_EQ(flags, 4);
  for (size_t d = 0; d < seen.size(); ++d) EXPECT_EQ(seen[d], 1) << "data word " << d;
  // Consecutive groups continue the numbering.
  EXPECT_EQ(ll128LaneFirstWord(3, 0), 180u);
  EXPECT_EQ(ll128LaneOffset(3, 31), 3 * 512u + 496u);
}

TEST(Ll128Protocol, EverySizeRoundTripsThroughTheSlot) {
  const size_t slotBytes = 8 << 10;  // 16 groups
  std::mt19937 rng(7);
  std::vector<uint64_t> slot(slotBytes / 8);
  uint64_t step = 1000;
  for (size_t bytes = 1; bytes <= ll128SlotDataBytes(slotBytes); bytes += (bytes < 1100 ? 1 : 97), ++step) {
    std::vector<uint8_t> data(bytes);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    for (auto& w : slot) w = 0xdeadbeefcafef00dull;  // poison: unused words must not leak into the output
    packStep(data, step, &slot);
    std::vector<uint8_t> got;
    ASSERT_TRUE(unpackStep(slot, step, bytes, &got)) << bytes;
    ASSERT_EQ(got, data) << bytes << " bytes";
  }
}

TEST(Ll128Protocol, StaleOrLaggingLinesAreRefused) {
  std::vector<uint64_t> slot(4096 / 8, 0);
  std::vector<uint8_t> data(1000, 0x5a), got;
  // A fresh (zeroed) slot: no step's flag.
  EXPECT_FALSE(unpackStep(slot, 0, data.size(), &got));
  // The slot as the previous use (8 steps earlier) left it: refused at the current step.
  packStep(data, 42, &slot);
  EXPECT_TRUE(unpackStep(slot, 42, data.size(), &got));
  EXPECT_FALSE(unpackStep(slot, 50, data.size(), &got));
  // One line of the new step not yet arrived (its flag still the old step's): refused.
  packStep(data, 50, &slot);
  slot[ll128LaneOffset(1, 15) / 8 + 1] = ll128Flag(42);
  EXPECT_FALSE(unpackStep(slot, 50, data.size(), &got));
  slot[ll128LaneOffset(1, 15) / 8 + 1] = ll128Flag(50);
  EXPECT_TRUE(unpackStep(slot, 50, data.size(), &got));
  EXPECT_EQ(got, data);
}

}  // namespace
}  // namespace braid
