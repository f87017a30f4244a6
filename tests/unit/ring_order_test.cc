// BRAID_RING_ORDER's parsing (src/runtime/ring_order.h): a permutation of 0..n-1, else ncclInvalidArgument
// whose message names the variable. Its agreement over the bootstrap runs in tests/mp/mp_collectives_test.cc
// (CollectivesRingOrder), where rank 0's order must hold for ranks that set another or a malformed one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/result.h"
#include "runtime/comm.h"
#include "runtime/ring_order.h"

namespace braid {
namespace {

std::vector<int> parsed(const std::string& text, int n) {
  std::vector<int> order;
  EXPECT_EQ(parseRingOrder(text, n, &order), ncclSuccess) << text << ": " << pendingError();
  return order;
}

void rejected(const std::string& text, int n, const char* why) {
  clearPendingError();
  std::vector<int> order;
  EXPECT_EQ(parseRingOrder(text, n, &order), ncclInvalidArgument) << text;
  EXPECT_NE(pendingError().find("BRAID_RING_ORDER"), std::string::npos) << pendingError();
  EXPECT_NE(pendingError().find(why), std::string::npos) << pendingError();
  clearPendingError();
}

TEST(RingOrder, UnsetIsRankOrder) {
  EXPECT_EQ(parsed("", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parsed("", 1), (std::vector<int>{0}));
}

TEST(RingOrder, PermutationsParse) {
  EXPECT_EQ(parsed("0,2,1,3", 4), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(parsed("2,0,3,1,4", 5), (std::vector<int>{2, 0, 3, 1, 4}));
  EXPECT_EQ(parsed(" 1 , 0 ", 2), (std::vector<int>{1, 0}));
  EXPECT_EQ(parsed("0", 1), (std::vector<int>{0}));
}

TEST(RingOrder, MalformedOrNotAPermutationIsRejected) {
  rejected("0,1,1", 3, "twice");
  rejected("0,1,3", 3, "not in 0..2");
  rejected("-1,0,1", 3, "not in 0..2");
  rejected("0,1", 3, "names 2 ranks");
  rejected("0,1,2,3", 3, "not in 0..2");
  rejected("0,1,2,", 3, "not a rank number");
  rejected("0,,1", 3, "not a rank number");
  rejected("0,x,1", 3, "not a rank number");
  rejected("0,1.5,2", 3, "not a rank number");
  rejected("0;1;2", 3, "not a rank number");
}

// The neighbours every ring connection and p2p plan uses follow the agreed order.
TEST(RingOrder, NeighboursFollowTheOrder) {
  ncclComm comm;
  comm.nranks = 4;
  comm.rank = 2;
  EXPECT_EQ(ringNextRank(&comm), 3);  // no order agreed (yet): rank order
  EXPECT_EQ(ringPrevRank(&comm), 1);
  comm.ringOrder = {0, 2, 1, 3};
  comm.ringPos = 1;
  EXPECT_EQ(ringNextRank(&comm), 1);
  EXPECT_EQ(ringPrevRank(&comm), 0);
  comm.rank = 3;
  comm.ringPos = 3;
  EXPECT_EQ(ringNextRank(&comm), 0);
  EXPECT_EQ(ringPrevRank(&comm), 1);
}

}  // namespace
}  // namespace braid
