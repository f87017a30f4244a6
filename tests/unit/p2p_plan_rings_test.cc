// The point-to-point plan where a GPU communicator runs several rings (src/algo/p2p_plan.h, P2pPlanConn::ringChannels,
// with ring_order.h's ringChannelsWith as the executor builds them): a transfer to a peer runs over ring connections
// only on the channels whose ring has that peer as neighbour, else over the peer's own connections; every byte is in
// exactly one block; and both ends of every transfer see the same blocks on the same connection and channel.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algo/p2p_plan.h"
#include "p2p_plan_fixtures.h"
#include "runtime/ring_order.h"

namespace braid {
namespace {

using namespace p2p_plan_fixtures;

constexpr int kPeerChannels = 4;  // each peer's own connections (p2pPeerChannels at these sizes)

// Bytes rank a sends rank b: distinct for every pair, from under an LL share to several MiB.
size_t bytesOf(int a, int b, int n) {
  static const size_t sizes[] = {8, 4096, 70000, size_t(1) << 20, (size_t(5) << 20) + 64, 333333};
  return sizes[static_cast<size_t>(a * n + b) % (sizeof(sizes) / sizeof(sizes[0]))] + static_cast<size_t>(a + b);
}
// A fake buffer per (sender, receiver): both ends' blocks of one transfer compare by offset.
char* bufOf(int a, int b, int n) { return fakeBuf(static_cast<size_t>(a * n + b)); }

// What one rank's plan says about one transfer, block by block: (connection kind ring?, the connection's channel,
// offset, bytes, LL).
using BlockKey = std::tuple<bool, int, size_t, size_t, bool>;

struct RankPlan {
  P2pPlanInput in;
  P2pPlanLaunch launch;
  std::vector<int> peerOf;  // per connection of `in`
};

// Rank `me`'s all-to-all over `rings` as the executor builds its input (gpu_executor.cc: launchP2p).
RankPlan planRank(const std::vector<std::vector<int>>& rings, int n, int me, int nChannels) {
  RankPlan r;
  r.in = input(nChannels);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (bool send : {true, false}) {
      P2pPlanConn c;
      c.isSend = send;
      const std::vector<int> chans = ringChannelsWith(rings, me, p, send, nChannels);
      c.ring = !chans.empty();
      if (c.ring && static_cast<int>(chans.size()) != nChannels) c.ringChannels = chans;
      c.channels = c.ring ? static_cast<int>(chans.size()) : kPeerChannels;
      c.ll.assign(static_cast<size_t>(c.channels), 1);
      c.bal.assign(static_cast<size_t>(c.channels), 1);
      c.xs.push_back(P2pXfer{send ? bufOf(me, p, n) : bufOf(p, me, n), send ? bytesOf(me, p, n) : bytesOf(p, me, n)});
      r.in.conns.push_back(c);
      r.peerOf.push_back(p);
    }
  }
  r.in.balanceMinShare = size_t(1) << 20;  // the largest transfers run balanced where their shares reach it
  std::string why;
  EXPECT_TRUE(planP2p(r.in, &r.launch, &why)) << why;
  return r;
}

// The blocks of the transfer from `a` to `b` as rank `me` (a or b) planned them.
std::vector<BlockKey> blocksOf(const RankPlan& r, int me, int a, int b) {
  std::vector<BlockKey> keys;
  const bool send = me == a;
  const int peer = send ? b : a;
  for (const P2pPlanBlock& blk : r.launch.all) {
    if (blk.conn < 0 || blk.isSend != send || r.peerOf[static_cast<size_t>(blk.conn)] != peer) continue;
    const P2pPlanConn& c = r.in.conns[static_cast<size_t>(blk.conn)];
    const int ch = c.ring ? p2pRingChannelOf(c, blk.channel) : blk.channel;
    keys.emplace_back(c.ring, ch, static_cast<size_t>(blk.buf - c.xs[0].buf), blk.bytes, blk.ll);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<std::vector<int>> ringsOf(const std::string& text, int n) {
  std::vector<std::vector<int>> rings;
  EXPECT_EQ(parseRingOrders(text, n, &rings), ncclSuccess) << text;
  return rings;
}

void checkRings(const std::string& text, int n, int nChannels) {
  SCOPED_TRACE("BRAID_RING_ORDER=" + text + ", " + std::to_string(nChannels) + " channels");
  const std::vector<std::vector<int>> rings = ringsOf(text, n);
  std::vector<RankPlan> plans;
  for (int r = 0; r < n; ++r) plans.push_back(planRank(rings, n, r, nChannels));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const std::vector<BlockKey> mine = blocksOf(plans[static_cast<size_t>(a)], a, a, b);
      EXPECT_EQ(mine, blocksOf(plans[static_cast<size_t>(b)], b, a, b)) << a << " -> " << b << ": the ends differ";
      // Every byte once, in shares that tile the transfer.
      size_t at = 0;
      std::vector<BlockKey> byOffset = mine;
      std::sort(byOffset.begin(), byOffset.end(),
                [](const BlockKey& x, const BlockKey& y) { return std::get<2>(x) < std::get<2>(y); });
      bool balanced = false;
      for (const P2pPlanBlock& blk : plans[static_cast<size_t>(a)].launch.all)
        balanced = balanced || (blk.conn >= 0 && blk.balParts > 0 && blk.isSend &&
                                plans[static_cast<size_t>(a)].peerOf[static_cast<size_t>(blk.conn)] == b);
      if (!balanced) {
        for (const BlockKey& k : byOffset) {
          EXPECT_EQ(std::get<2>(k), at) << a << " -> " << b << ": gap or overlap";
          at = std::get<2>(k) + std::get<3>(k);
        }
        EXPECT_EQ(at, bytesOf(a, b, n)) << a << " -> " << b;
      }
      // Ring connections only where the channel's ring has the peer as neighbour; the others' own connections
      // exactly where no channel's ring does.
      const bool anyRing = !ringChannelsWith(rings, a, b, true, nChannels).empty();
      std::map<int, int> channels;
      for (const BlockKey& k : mine) {
        EXPECT_EQ(std::get<0>(k), anyRing) << a << " -> " << b;
        ++channels[std::get<1>(k)];
        if (!std::get<0>(k)) continue;
        const std::vector<int>& o = rings[static_cast<size_t>(std::get<1>(k)) % rings.size()];
        const int pos = static_cast<int>(std::find(o.begin(), o.end(), a) - o.begin());
        EXPECT_EQ(o[static_cast<size_t>((pos + 1) % n)], b)
            << "channel " << std::get<1>(k) << " is not on " << a << " -> " << b;
      }
      for (auto& [ch, blocks] : channels) EXPECT_EQ(blocks, 1) << a << " -> " << b << " channel " << ch;
    }
  }
}

// Two and three rings at 3 and 4 ranks (the GPU tests' orders), and more ranks, over channel counts that do and do
// not divide among the rings.
TEST(P2pPlanRings, EachPeerOnItsRingsChannelsAlikeOnBothEnds) {
  for (int nChannels : {1, 3, 8, 64}) {
    checkRings("0,1,2|0,2,1", 3, nChannels);
    checkRings("0,1,2,3|0,2,1,3", 4, nChannels);
    checkRings("0,1,2,3|0,2,1,3|0,3,2,1", 4, nChannels);
    checkRings("0,1,2,3,4,5,6,7|0,2,4,6,1,3,5,7|7,6,5,4,3,2,1,0", 8, nChannels);
    checkRings("0,3,1,4,2|0,1,2,3,4", 5, nChannels);
  }
}

// One ring: the neighbours' transfers run on every ring channel, share c on channel c, as with no ring lists at all.
TEST(P2pPlanRings, OneRingKeepsEveryChannel) {
  const std::vector<std::vector<int>> one = {{0, 1, 2, 3}};
  EXPECT_EQ(ringChannelsWith(one, 1, 2, true, 64).size(), 64u);
  const RankPlan r = planRank(one, 4, 1, 64);
  int ring = 0;
  for (const P2pPlanConn& c : r.in.conns) {
    EXPECT_TRUE(c.ringChannels.empty());
    ring += c.ring;
  }
  EXPECT_EQ(ring, 2);  // the send to 2 and the receive from 0
  P2pPlanInput in = input(64);
  in.conns.push_back(ringConn(true, 64, {size_t(16) << 20}, 0));
  P2pPlanLaunch l;
  std::string why;
  ASSERT_TRUE(planP2p(in, &l, &why)) << why;
  ASSERT_EQ(l.blocks, 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(p2pRingChannelOf(in.conns[0], l.all[static_cast<size_t>(i)].channel), i);
  checkRings("0,1,2,3", 4, 64);
}

// Two ring connections of one direction (several rings give a rank two next neighbours) never pair in one CTA, and
// two whose channels differ neither; the same channels do.
TEST(P2pPlanRings, PairsOnlyOnTheSameRingChannels) {
  P2pPlanInput in = input(8);
  in.pairRing = true;
  P2pPlanConn send = ringConn(true, 4, {size_t(4) << 20}, 0, false);
  P2pPlanConn recv = ringConn(false, 4, {size_t(4) << 20}, 10, false);
  send.ringChannels = {0, 2, 4, 6};
  recv.ringChannels = {0, 2, 4, 6};
  send.channels = recv.channels = 4;
  in.conns = {send, recv};
  P2pPlanLaunch l;
  std::string why;
  ASSERT_TRUE(planP2p(in, &l, &why)) << why;
  int paired = 0;
  for (const P2pPlanCta& c : l.ctas) paired += c.split > 0;
  EXPECT_EQ(paired, 4);
  in.conns[1].ringChannels = {1, 3, 5, 7};
  ASSERT_TRUE(planP2p(in, &l, &why)) << why;
  for (const P2pPlanCta& c : l.ctas) EXPECT_EQ(c.split, 0);
  in.conns[1].ringChannels = {0, 2, 4, 6};
  P2pPlanConn other = ringConn(true, 4, {size_t(4) << 20}, 20, false);
  other.ringChannels = {1, 3, 5, 7};
  other.channels = 4;
  in.conns.push_back(other);
  ASSERT_TRUE(planP2p(in, &l, &why)) << why;
  for (const P2pPlanCta& c : l.ctas) EXPECT_EQ(c.split, 0);
}

}  // namespace
}  // namespace braid
