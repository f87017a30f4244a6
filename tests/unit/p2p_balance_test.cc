// Balanced p2p transfers (src/algo/p2p_plan.h: p2pBalanced): which transfers run balanced, that both sides
// of a connection decide it alike whatever else either side grouped, that every channel of a balanced transfer gets
// the whole transfer, and how the sending side gives out its claim slots (kP2pMaxBalanced; past them, a fixed deal).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "algo/p2p_plan.h"
#include "device/dev_work.h"

namespace braid {
namespace {

char* fakeBuf(size_t i) { return reinterpret_cast<char*>(uintptr_t(1) << 40) + i * (size_t(1) << 32); }

constexpr size_t kMiB = size_t(1) << 20;

P2pPlanConn ring(bool isSend, int nChannels, const std::vector<size_t>& sizes, size_t bufBase, bool p2p = true) {
  P2pPlanConn c;
  c.ring = true;
  c.isSend = isSend;
  c.ll.assign(nChannels, 1);
  c.bal.assign(nChannels, p2p ? 1 : 0);
  for (size_t i = 0; i < sizes.size(); ++i) c.xs.push_back(P2pXfer{fakeBuf(bufBase + i), sizes[i]});
  return c;
}

P2pPlanInput input(int nChannels, size_t minShare = kMiB) {
  P2pPlanInput in;
  in.nChannels = nChannels;
  in.llThreshold = 16384;
  in.balanceMinShare = minShare;
  in.maxCtas = 192;
  in.maxBlocks = 1 << 16;
  return in;
}

P2pPlanLaunch plan(const P2pPlanInput& in) {
  P2pPlanLaunch l;
  std::string why;
  EXPECT_TRUE(planP2p(in, &l, &why)) << why;
  return l;
}

// The blocks of transfer `x` (by its buffer), channel -> block.
std::map<int, P2pPlanBlock> blocksOf(const P2pPlanLaunch& l, const P2pXfer& x) {
  std::map<int, P2pPlanBlock> out;
  for (const P2pPlanBlock& b : l.all)
    if (b.conn >= 0 && b.buf >= x.buf && b.buf <= x.buf + x.bytes) EXPECT_TRUE(out.emplace(b.channel, b).second);
  return out;
}

TEST(P2pBalance, EveryChannelOfABalancedTransferGetsAllOfIt) {
  P2pPlanInput in = input(16);
  in.conns.push_back(ring(true, 16, {(size_t(64) << 20) + 5}, 0));
  const P2pXfer& x = in.conns[0].xs[0];
  const int parts = p2pRingChannels(x.bytes, 16, 0, in.channelBytes, in.llThreshold);
  ASSERT_EQ(parts, 16);
  const auto bs = blocksOf(plan(in), x);
  ASSERT_EQ(static_cast<int>(bs.size()), parts);
  for (const auto& [c, b] : bs) {
    EXPECT_EQ(b.buf, x.buf) << "channel " << c;
    EXPECT_EQ(b.bytes, x.bytes);
    EXPECT_EQ(b.balParts, parts);
    EXPECT_EQ(b.balSlot, 0) << "the launch's first balanced send claims from slot 0";
    EXPECT_FALSE(b.ll);
  }
}

// Each condition of p2pBalanced alone keeps a transfer on fixed shares, which then cover it exactly.
TEST(P2pBalance, OnlyLargeSimpleTransfersOverGpuP2pChannels) {
  struct Case {
    const char* what;
    size_t bytes;
    size_t minShare;
    bool p2p;
    int notP2pChannel;  // >= 0: only this channel's connection is not GPU P2P
    size_t llThreshold;
    bool balanced;
    int channels = 16;
  };
  const Case cases[] = {
      {"large, P2P", 64 * kMiB, kMiB, true, -1, 16384, true},
      {"shares of exactly minShare", 16 * kMiB, kMiB, true, -1, 16384, true},
      {"balancing off (0)", 64 * kMiB, 0, true, -1, 16384, false},
      {"shares below minShare", 16 * kMiB - 4096, kMiB, true, -1, 16384, false},
      {"SHM or NET ring", 64 * kMiB, kMiB, false, -1, 16384, false},
      {"one channel not P2P", 64 * kMiB, kMiB, true, 3, 16384, false},
      {"shares run LL (threshold past them)", 64 * kMiB, kMiB, true, -1, 8 * kMiB, false},
      {"one channel (parts 1)", 64 * kMiB, kMiB, true, -1, 16384, false, 1},
      {"2 TiB (chunk indices past 29 bits)", size_t(1) << 41, kMiB, true, -1, 16384, false},
  };
  for (const Case& k : cases) {
    P2pPlanInput in = input(k.channels, k.minShare);
    in.llThreshold = k.llThreshold;
    in.conns.push_back(ring(false, k.channels, {k.bytes}, 0, k.p2p));
    if (k.notP2pChannel >= 0) in.conns[0].bal[k.notP2pChannel] = 0;
    const P2pXfer& x = in.conns[0].xs[0];
    const auto bs = blocksOf(plan(in), x);
    size_t covered = 0;
    for (const auto& [c, b] : bs) {
      EXPECT_EQ(b.balParts > 0, k.balanced) << k.what;
      EXPECT_EQ(b.balSlot, -1) << k.what << ": receives never claim";
      covered += b.balParts > 0 ? 0 : b.bytes;
    }
    if (!k.balanced) EXPECT_EQ(covered, x.bytes) << k.what;
  }
}

// The send side claims from kP2pMaxBalanced slots, in order, then deals the rest fixed (slot -1): the receive side,
// which never needs a slot, marks the same transfers balanced.
TEST(P2pBalance, SlotsRunOutWithoutChangingWhatIsBalanced) {
  std::vector<size_t> sizes;
  for (int i = 0; i < kP2pMaxBalanced * 3 / 2 + 9; ++i) sizes.push_back(i % 3 == 2 ? 4096 : 8 * kMiB + 64 * i);
  P2pPlanInput s = input(4), r = input(4);
  s.conns.push_back(ring(true, 4, sizes, 0));
  r.conns.push_back(ring(false, 4, sizes, 0));
  const P2pPlanLaunch ls = plan(s), lr = plan(r);
  int next = 0, unslotted = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    const auto bs = blocksOf(ls, s.conns[0].xs[t]), br = blocksOf(lr, r.conns[0].xs[t]);
    ASSERT_EQ(bs.size(), br.size());
    const bool balanced = sizes[t] > 4096;
    for (const auto& [c, b] : bs) {
      EXPECT_EQ(b.balParts > 0, balanced) << t;
      EXPECT_EQ(br.at(c).balParts, b.balParts) << t;
      if (balanced) EXPECT_EQ(b.balSlot, next < kP2pMaxBalanced ? next : -1) << t;
    }
    if (balanced) unslotted += next++ >= kP2pMaxBalanced;
  }
  EXPECT_GT(unslotted, 0) << "the list must run past the slots";
}

// Both sides mark the same transfers balanced, with the same channel count, however each side groups them (one
// launch against several, other transfers beside them, under a bound).
TEST(P2pBalance, BothSidesAgreeWhateverTheGrouping) {
  const size_t pool[] = {4096, kMiB, 2 * kMiB + 3, 8 * kMiB, 33 * kMiB + 64, 200 * kMiB};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int nChannels = trial % 2 ? 32 : 12;
    const int count = 1 + static_cast<int>(rng() % 90);
    std::vector<size_t> sizes;
    for (int i = 0; i < count; ++i) sizes.push_back(pool[rng() % (sizeof(pool) / sizeof(pool[0]))]);
    using Seq = std::vector<std::pair<int, size_t>>;  // per transfer in order: (balParts or -channels, bytes)
    auto record = [&](const P2pPlanInput& in, const P2pPlanLaunch& l, Seq* seq) {
      for (const P2pXfer& x : in.conns[0].xs) {
        const auto bs = blocksOf(l, x);
        const int parts = bs.begin()->second.balParts;
        for (const auto& [c, b] : bs) EXPECT_EQ(b.balParts, parts);
        seq->push_back({parts > 0 ? parts : -static_cast<int>(bs.size()), x.bytes});
      }
    };
    Seq sent, received;
    {
      P2pPlanInput in = input(nChannels);
      in.conns.push_back(ring(true, nChannels, sizes, 0));
      in.conns.push_back(ring(false, nChannels, {16 * kMiB}, 500));  // traffic the other way beside it
      record(in, plan(in), &sent);
    }
    for (size_t at = 0; at < sizes.size();) {
      const size_t take = 1 + rng() % (sizes.size() - at);
      P2pPlanInput in = input(nChannels);
      in.conns.push_back(
          ring(false, nChannels, std::vector<size_t>(sizes.begin() + at, sizes.begin() + at + take), at));
      record(in, plan(in), &received);
      at += take;
    }
    ASSERT_EQ(sent, received) << "trial " << trial;
  }
}

// The closing step's fold (dev_work.h: devBalFold) stays off the marks' bits and tells apart what a mismatch of the
// two sides gives: sizes that are neighbours, multiples of the type sizes, or whose 29-bit pieces XOR alike (4 GiB
// against 6 GiB + 4), and chunks that differ (the sides derive theirs each; a larger sender chunk would otherwise
// land every chunk at the wrong offset unreported).
TEST(P2pBalance, CloseFoldTellsDifferingSizesAndChunksApart) {
  const size_t base[] = {kMiB, 64 * kMiB + 5, size_t(3) << 30, size_t(4) << 30};
  const size_t chunks[] = {64 * 1024, 128 * 1024, 256 * 1024, 512 * 1024, 1024 * 1024, 4 * kMiB};
  for (size_t b : base) {
    for (size_t c : chunks) {
      EXPECT_EQ(devBalFold(b, c) & ~kDevBalIndexMask, 0u);
      for (size_t other : {b + 1, b - 1, b + 4096, 2 * b, 4 * b, b / 2, b + (size_t(1) << 29)})
        EXPECT_NE(devBalFold(b, c), devBalFold(other, c)) << b << " against " << other << ", chunk " << c;
      for (size_t d : chunks)
        if (d != c) EXPECT_NE(devBalFold(b, c), devBalFold(b, d)) << b << ": chunk " << c << " against " << d;
    }
  }
  EXPECT_NE(devBalFold(size_t(4) << 30, 256 * 1024), devBalFold((size_t(6) << 30) + 4, 256 * 1024));
}

// A close word never equals a receiving CTA's stop word (the close marks with every index bit set, prims_simple.h's
// recvChunk): the fold stays below kDevBalIndexMask. These sizes folded to it exactly in 256 KiB chunks, before the
// fold took its remainder instead of its low bits; and no fold of a million sizes and chunks reaches it.
TEST(P2pBalance, CloseFoldIsNeverTheStopWord) {
  for (size_t b : {size_t(5472764716), size_t(5897940536), size_t(8273713256)})
    EXPECT_LT(devBalFold(b, 256 * 1024), kDevBalIndexMask) << b;
  uint32_t most = 0;
  for (size_t b = 1; b < (size_t(1) << 20); ++b) {
    const size_t bytes = b * 4099 + (b >> 3);
    for (size_t c : {size_t(256) << 10, size_t(512) << 10}) most = std::max(most, devBalFold(bytes, c));
  }
  EXPECT_LT(most, kDevBalIndexMask);
  EXPECT_GT(most, kDevBalIndexMask / 2) << "the fold spreads over the index bits";
}

}  // namespace
}  // namespace braid
