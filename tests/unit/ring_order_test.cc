// BRAID_RING_ORDER's parsing (src/runtime/ring_order.h): a permutation of 0..n-1, else ncclInvalidArgument
// whose message names the variable. Its agreement over the bootstrap runs in tests/mp/mp_collectives_test.cc
// (CollectivesRingOrder), where rank 0's order must hold for ranks that set another or a malformed one.
#include <gtest/gtest.h>

#include <algorithm>
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

// Several rings, '|' between them: each a permutation, duplicates run once, at most kMaxRingOrders.
TEST(RingOrder, SeveralRingsParse) {
  std::vector<std::vector<int>> orders;
  ASSERT_EQ(parseRingOrders("0,1,2,3|0,2,1,3", 4, &orders), ncclSuccess) << pendingError();
  EXPECT_EQ(orders, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {0, 2, 1, 3}}));
  ASSERT_EQ(parseRingOrders("2,1,0 | 0,1,2|2,1,0", 3, &orders), ncclSuccess) << pendingError();
  EXPECT_EQ(orders, (std::vector<std::vector<int>>{{2, 1, 0}, {0, 1, 2}}));
  ASSERT_EQ(parseRingOrders("", 3, &orders), ncclSuccess);
  EXPECT_EQ(orders, (std::vector<std::vector<int>>{{0, 1, 2}}));
  ASSERT_EQ(parseRingOrders("1,0", 2, &orders), ncclSuccess);
  EXPECT_EQ(orders, (std::vector<std::vector<int>>{{1, 0}}));
}

TEST(RingOrder, SeveralRingsRejectAnyBadRing) {
  auto rejectedAll = [](const std::string& text, int n, const char* why) {
    clearPendingError();
    std::vector<std::vector<int>> orders;
    EXPECT_EQ(parseRingOrders(text, n, &orders), ncclInvalidArgument) << text;
    EXPECT_NE(pendingError().find("BRAID_RING_ORDER"), std::string::npos) << pendingError();
    EXPECT_NE(pendingError().find(why), std::string::npos) << text << ": " << pendingError();
    clearPendingError();
  };
  rejectedAll("0,1,2|0,1,1", 3, "twice");
  rejectedAll("0,1,2||2,1,0", 3, "ring 1 is empty");
  rejectedAll("0,1,2|", 3, "ring 1 is empty");
  rejectedAll("|0,1,2", 3, "ring 0 is empty");
  rejectedAll("0,1,2|0,1", 3, "names 2 ranks");
  // 24 distinct permutations of 4 ranks: more rings than a communicator runs.
  std::string many;
  std::vector<int> perm = {0, 1, 2, 3};
  int k = 0;
  do {
    many += (k++ ? "|" : "") + std::to_string(perm[0]) + "," + std::to_string(perm[1]) + "," + std::to_string(perm[2]) +
            "," + std::to_string(perm[3]);
  } while (std::next_permutation(perm.begin(), perm.end()));
  rejectedAll(many, 4, "24 distinct rings, at most 16");
}

// Channel c runs ring c % nRings: its neighbours come from that ring.
TEST(RingOrder, NeighboursPerChannelFollowTheirRing) {
  ncclComm comm;
  comm.nranks = 4;
  comm.rank = 2;
  comm.ringOrders = {{0, 1, 2, 3}, {0, 2, 1, 3}, {3, 2, 1, 0}};
  comm.ringPositions = {2, 1, 1};
  EXPECT_EQ(ringCount(&comm), 3);
  const int next[] = {3, 1, 1, 3, 1, 1};
  const int prev[] = {1, 0, 3, 1, 0, 3};
  for (int c = 0; c < 6; ++c) {
    EXPECT_EQ(ringNextRank(&comm, c), next[c]) << "channel " << c;
    EXPECT_EQ(ringPrevRank(&comm, c), prev[c]) << "channel " << c;
  }
  ncclComm none;
  none.nranks = 3;
  none.rank = 0;
  EXPECT_EQ(ringCount(&none), 1);
  EXPECT_EQ(ringNextRank(&none, 5), 1);
  EXPECT_EQ(ringPrevRank(&none, 5), 2);
}

// The default with several searched rings per host: ring k takes each host's k-th ring (a host with fewer repeats
// its own), rings that come out the same run once.
TEST(RingOrder, DefaultRingsFollowEachHostsSearchedRings) {
  const uint64_t a = 0xa, b = 0xb;
  // One host, two searched rings (a cube-mesh's two cycles, say).
  EXPECT_EQ(defaultRingOrders({a, a, a, a}, {{0, 0}, {1, 3}, {2, 2}, {3, 1}}),
            (std::vector<std::vector<int>>{{0, 1, 2, 3}, {0, 3, 2, 1}}));
  // Host b has one ring (repeated), host a two.
  EXPECT_EQ(defaultRingOrders({a, b, a, b}, {{0, 1}, {1}, {1, 0}, {0}}),
            (std::vector<std::vector<int>>{{0, 2, 3, 1}, {2, 0, 3, 1}}));
  // Two searched rings that are the same: one ring. Nothing known: rank order.
  EXPECT_EQ(defaultRingOrders({a, a, a}, {{0, 0}, {1, 1}, {2, 2}}), (std::vector<std::vector<int>>{{0, 1, 2}}));
  EXPECT_EQ(defaultRingOrders({a, a, a}, {{}, {}, {}}), (std::vector<std::vector<int>>{{0, 1, 2}}));
  EXPECT_EQ(defaultRingOrders({a, b}, {}), (std::vector<std::vector<int>>{{0, 1}}));
}

// Without BRAID_RING_ORDER: each host's ranks together (so a ring crosses each host boundary once each way), hosts
// by their lowest rank, a host's ranks in its searched ring's order where every one of them has a distinct place.
TEST(RingOrder, DefaultKeepsHostsTogetherInTheirLowestRanksOrder) {
  const uint64_t a = 0xa, b = 0xb, c = 0xc;
  EXPECT_EQ(defaultRingOrder({a, a, a, a}, {-1, -1, -1, -1}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(defaultRingOrder({a, b, a, b}, {-1, -1, -1, -1}), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(defaultRingOrder({b, a, c, a, b, c}, {}), (std::vector<int>{0, 4, 1, 3, 2, 5}));
  EXPECT_EQ(defaultRingOrder({a}, {-1}), (std::vector<int>{0}));
}

TEST(RingOrder, DefaultFollowsEachHostsSearchedRing) {
  const uint64_t a = 0xa, b = 0xb;
  // One host whose search put rank 2 second (NVLink pairs 0-2 and 1-3, say).
  EXPECT_EQ(defaultRingOrder({a, a, a, a}, {0, 2, 1, 3}), (std::vector<int>{0, 2, 1, 3}));
  // Two hosts, each with its own places (relative to that host's ranks).
  EXPECT_EQ(defaultRingOrder({a, b, a, b, a, b}, {0, 1, 2, 0, 1, 2}), (std::vector<int>{0, 4, 2, 3, 1, 5}));
  // A host with a rank lacking a place, or two ranks on one place, stays in rank order; the other host does not.
  EXPECT_EQ(defaultRingOrder({a, a, a, b, b, b}, {2, -1, 0, 2, 1, 0}), (std::vector<int>{0, 1, 2, 5, 4, 3}));
  EXPECT_EQ(defaultRingOrder({a, a, a, b, b, b}, {1, 1, 0, 2, 1, 0}), (std::vector<int>{0, 1, 2, 5, 4, 3}));
}

TEST(RingOrder, DefaultIsAPermutationForManyHosts) {
  for (int n : {1, 2, 7, 64, 257}) {
    std::vector<uint64_t> hostOf;
    std::vector<int> pos;
    for (int r = 0; r < n; ++r) {
      hostOf.push_back(static_cast<uint64_t>((r * 7) % 5));
      pos.push_back((n - r) % 9);  // places repeat within a host: rank order there
    }
    std::vector<int> order = defaultRingOrder(hostOf, pos);
    ASSERT_EQ(static_cast<int>(order.size()), n);
    std::vector<bool> seen(static_cast<size_t>(n), false);
    for (int r : order) {
      ASSERT_TRUE(r >= 0 && r < n && !seen[static_cast<size_t>(r)]) << "n " << n << " rank " << r;
      seen[static_cast<size_t>(r)] = true;
    }
    // Each host's ranks are contiguous.
    for (int p = 1; p < n; ++p)
      for (int q = p + 1; q < n; ++q)
        if (hostOf[order[q]] == hostOf[order[p - 1]] && hostOf[order[p]] != hostOf[order[p - 1]])
          ADD_FAILURE() << "n " << n << ": host " << hostOf[order[p - 1]] << " is split at position " << p;
  }
}

// Rings of n ranks for the table tests: rank order, then positions 1 and 2 swapped, then the reverse (at 3 ranks
// the last two are one cycle, as only two exist).
std::vector<std::vector<int>> someRings(int n, int count) {
  std::vector<std::vector<int>> rings;
  std::vector<int> order(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) order[static_cast<size_t>(p)] = p;
  rings.push_back(order);
  std::vector<int> swapped = order;
  std::swap(swapped[1], swapped[2]);
  if (count > 1) rings.push_back(swapped);
  std::vector<int> reversed(order.rbegin(), order.rend());
  if (count > 2) rings.push_back(reversed);
  return rings;
}

// The kernels' tables (CollLaunchArgs::ringTables) for 2 and 3 rings at 3..8 ranks: each ring's position -> rank
// and rank -> position, and a channel that reads its ring's table (channel % nRings) finds the same neighbours the
// ring connections were made for (ringNextRank / ringPrevRank).
TEST(RingOrder, DeviceTablesGiveEachChannelItsRing) {
  for (int n = 3; n <= 8; ++n) {
    for (int count = 2; count <= 3; ++count) {
      const std::vector<std::vector<int>> rings = someRings(n, count);
      const std::vector<int32_t> t = ringTablesFor(rings);
      ASSERT_EQ(t.size(), static_cast<size_t>(2 * n * count));
      for (int k = 0; k < count; ++k)
        for (int p = 0; p < n; ++p) {
          const int r = rings[static_cast<size_t>(k)][static_cast<size_t>(p)];
          EXPECT_EQ(t[static_cast<size_t>(2 * n * k + p)], r) << "n " << n << " ring " << k << " position " << p;
          EXPECT_EQ(t[static_cast<size_t>(2 * n * k + n + r)], p) << "n " << n << " ring " << k << " rank " << r;
        }
      for (int rank = 0; rank < n; ++rank) {
        ncclComm comm;
        comm.nranks = n;
        comm.rank = rank;
        comm.ringOrders = rings;
        for (const std::vector<int>& o : rings)
          comm.ringPositions.push_back(static_cast<int>(std::find(o.begin(), o.end(), rank) - o.begin()));
        for (int c = 0; c < 7; ++c) {
          const int32_t* ring = t.data() + static_cast<size_t>(c % count) * 2 * n;  // as the kernel picks it
          const int pos = ring[n + rank];
          EXPECT_EQ(ring[(pos + 1) % n], ringNextRank(&comm, c)) << "n " << n << " rank " << rank << " channel " << c;
          EXPECT_EQ(ring[(pos + n - 1) % n], ringPrevRank(&comm, c))
              << "n " << n << " rank " << rank << " channel " << c;
        }
      }
    }
  }
}

// Which ring channels reach a peer (ringChannelsWith, the p2p planner's P2pPlanConn::ringChannels): every channel
// sends to exactly one peer and receives from exactly one, the one its ring names, and a's send list for b is b's
// receive list for a (both ends cut a transfer over the same channels).
TEST(RingOrder, RingChannelsOfAPeerMatchOnBothEnds) {
  for (int n = 3; n <= 8; ++n) {
    for (int count = 1; count <= 3; ++count) {
      const std::vector<std::vector<int>> rings = someRings(n, count);
      for (int nChannels : {1, 2, 5, 64}) {
        for (int a = 0; a < n; ++a) {
          std::vector<int> sendsOn(static_cast<size_t>(nChannels), 0), recvsOn(static_cast<size_t>(nChannels), 0);
          EXPECT_TRUE(ringChannelsWith(rings, a, a, true, nChannels).empty());
          for (int b = 0; b < n; ++b) {
            const std::vector<int> send = ringChannelsWith(rings, a, b, true, nChannels);
            EXPECT_EQ(send, ringChannelsWith(rings, b, a, false, nChannels)) << "n " << n << " " << a << "->" << b;
            EXPECT_TRUE(std::is_sorted(send.begin(), send.end()));
            for (int c : send) {
              const std::vector<int>& o = rings[static_cast<size_t>(c % count)];
              const int pos = static_cast<int>(std::find(o.begin(), o.end(), a) - o.begin());
              EXPECT_EQ(o[static_cast<size_t>((pos + 1) % n)], b) << "channel " << c;
              ++sendsOn[static_cast<size_t>(c)];
            }
            for (int c : ringChannelsWith(rings, a, b, false, nChannels)) ++recvsOn[static_cast<size_t>(c)];
          }
          for (int c = 0; c < nChannels; ++c) {
            EXPECT_EQ(sendsOn[static_cast<size_t>(c)], 1) << "n " << n << " rank " << a << " channel " << c;
            EXPECT_EQ(recvsOn[static_cast<size_t>(c)], 1) << "n " << n << " rank " << a << " channel " << c;
          }
        }
      }
    }
  }
  // One ring: the two neighbours get every channel.
  const std::vector<std::vector<int>> one = {{0, 2, 1, 3}};
  EXPECT_EQ(ringChannelsWith(one, 2, 1, true, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ringChannelsWith(one, 2, 0, false, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(ringChannelsWith(one, 2, 3, true, 3).empty());
}

}  // namespace
}  // namespace braid
