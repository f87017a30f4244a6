// fifoSlot (algo/fifo_slot.h), the FIFO slot of a step in the kernels and the host primitives: equal to
// step % nSteps for every count the transports accept (1 to 256, powers of two or not), at steps on both sides of
// the 32-bit boundary (where the mask drops the high word) and at the top of the 64-bit range.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "algo/fifo_slot.h"

namespace braid {
namespace {

TEST(FifoSlot, IsTheRemainderForEveryCountAndStep) {
  std::vector<uint64_t> steps;
  for (uint64_t base : {uint64_t(0), uint64_t(1) << 32, (uint64_t(1) << 32) * 3 + 5, ~uint64_t(0) - 600})
    for (uint64_t d = 0; d < 600; ++d) steps.push_back(base + d);
  for (uint64_t s : {(uint64_t(1) << 32) - 1, (uint64_t(1) << 33) + 7, uint64_t(1) << 63, ~uint64_t(0)})
    steps.push_back(s);
  for (uint32_t n = 1; n <= 256; ++n)
    for (uint64_t s : steps)
      ASSERT_EQ(fifoSlot(s, n), static_cast<uint32_t>(s % n)) << "step " << s << ", " << n << " steps";
}

TEST(FifoSlot, WalksEverySlotInTurn) {
  for (uint32_t n : {1u, 3u, 8u, 12u, 256u}) {
    std::vector<int> seen(n, 0);
    const uint64_t first = (uint64_t(1) << 32) - 2 * n;  // crosses the 32-bit boundary
    for (uint64_t s = first; s < first + 4 * n; ++s) {
      const uint32_t slot = fifoSlot(s, n);
      ASSERT_LT(slot, n);
      ASSERT_EQ(slot, fifoSlot(s - 1, n) + 1 == n ? 0u : fifoSlot(s - 1, n) + 1) << "step " << s;
      ++seen[slot];
    }
    for (uint32_t k = 0; k < n; ++k) EXPECT_EQ(seen[k], 4) << "slot " << k << " of " << n;
  }
}

}  // namespace
}  // namespace braid
