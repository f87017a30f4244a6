// The point-to-point plan of GPU communicators (src/collectives/p2p_plan.h): every byte of every transfer
// in exactly one block; each connection direction and channel sees the same sequence of shares on both
// sides however either side grouped its transfers; launches within the CTA/block limits, holding whole
// channels in ascending order; local copies first; bad batches refused with a reason.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "collectives/p2p_plan.h"
#include "collectives/ring_split.h"

namespace braid {
namespace {

// Fake buffers: distinct, far-apart base addresses (never dereferenced).
char* fakeBuf(size_t i) { return reinterpret_cast<char*>(uintptr_t(1) << 40) + i * (size_t(1) << 32); }

P2pPlanConn ringConn(bool isSend, int nChannels, const std::vector<size_t>& sizes, size_t bufBase, bool ll = true) {
  P2pPlanConn c;
  c.ring = true;
  c.isSend = isSend;
  c.ll.assign(nChannels, ll ? 1 : 0);
  for (size_t i = 0; i < sizes.size(); ++i) c.xs.push_back(P2pXfer{fakeBuf(bufBase + i), sizes[i]});
  return c;
}

P2pPlanInput input(int nChannels) {
  P2pPlanInput in;
  in.nChannels = nChannels;
  in.llThreshold = 16384;
  return in;
}

// Checks the limits, CTA shape and channel order of a plan; returns every block of it in launch order.
std::vector<P2pPlanBlock> checkPlan(const P2pPlanInput& in, const std::vector<P2pPlanLaunch>& plan) {
  std::vector<P2pPlanBlock> all;
  int lastChannel = -1;
  for (const P2pPlanLaunch& l : plan) {
    EXPECT_LE(static_cast<int>(l.ctas.size()), in.maxCtas);
    EXPECT_LE(l.blocks, in.maxBlocks);
    int blocks = 0;
    bool seenTransfer = false;
    int minCh = 1 << 30, maxCh = -1;
    for (const P2pPlanCta& cta : l.ctas) {
      EXPECT_FALSE(cta.blocks.empty());
      if (cta.copy) EXPECT_FALSE(seenTransfer) << "copy CTAs come first";
      seenTransfer = seenTransfer || !cta.copy;
      for (const P2pPlanBlock& b : cta.blocks) {
        EXPECT_EQ(b.conn < 0, cta.copy);
        EXPECT_EQ(b.channel, cta.blocks.front().channel) << "a CTA stays on one channel";
        if (!cta.copy) {
          minCh = std::min(minCh, b.channel);
          maxCh = std::max(maxCh, b.channel);
        }
        all.push_back(b);
      }
      blocks += static_cast<int>(cta.blocks.size());
    }
    EXPECT_EQ(blocks, l.blocks);
    if (maxCh >= 0) {
      EXPECT_GT(minCh, lastChannel) << "launches hold whole channels in ascending order";
      lastChannel = maxCh;
    }
  }
  return all;
}

// Every byte of every transfer and copy is in exactly one block, in order per (connection, channel).
void checkCoverage(const P2pPlanInput& in, const std::vector<P2pPlanBlock>& blocks) {
  std::map<const char*, std::vector<std::pair<size_t, size_t>>> seen;  // transfer base -> (offset, bytes)
  auto baseOf = [&](const P2pPlanBlock& b) -> std::pair<const P2pXfer*, size_t> {
    auto find = [&](const std::vector<P2pXfer>& xs) -> const P2pXfer* {
      for (const P2pXfer& x : xs)
        if (b.buf >= x.buf && b.buf <= x.buf + x.bytes) return &x;
      return nullptr;
    };
    const P2pXfer* x = b.conn < 0 ? find(in.copies) : find(in.conns[b.conn].xs);
    return {x, x ? static_cast<size_t>(b.buf - x->buf) : 0};
  };
  for (const P2pPlanBlock& b : blocks) {
    auto [x, off] = baseOf(b);
    ASSERT_NE(x, nullptr);
    if (b.conn < 0) EXPECT_EQ(b.src, x->src + off);
    EXPECT_EQ(off % 64, 0u) << "shares start 64-byte aligned";
    if (b.bytes) seen[x->buf].push_back({off, b.bytes});
  }
  auto covered = [&](const P2pXfer& x) {
    auto v = seen[x.buf];
    std::sort(v.begin(), v.end());
    size_t at = 0;
    for (auto& [off, len] : v) {
      EXPECT_EQ(off, at) << "gap or overlap in a transfer of " << x.bytes;
      at = off + len;
    }
    EXPECT_EQ(at, x.bytes);
  };
  for (const P2pPlanConn& c : in.conns)
    for (const P2pXfer& x : c.xs) covered(x);
  for (const P2pXfer& x : in.copies)
    if (x.bytes && x.buf != x.src) covered(x);
}

TEST(P2pPlan, OneSendOneRecvOnTheRing) {
  P2pPlanInput in = input(64);
  in.conns.push_back(ringConn(true, 64, {size_t(8) << 20}, 0));
  in.conns.push_back(ringConn(false, 64, {size_t(8) << 20}, 10));
  std::vector<P2pPlanLaunch> plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].ctas.size(), 128u);
  EXPECT_EQ(plan[0].blocks, 128);
  checkCoverage(in, checkPlan(in, plan));
}

// A pipeline step on 2 ranks: two 64 MB sends and two receives to the one neighbour took 256 blocks of
// one launch (refused); now two launches of whole channels.
TEST(P2pPlan, SeveralLargeTransfersSplitIntoLaunchesOfWholeChannels) {
  P2pPlanInput in = input(64);
  in.conns.push_back(ringConn(true, 64, {size_t(64) << 20, size_t(64) << 20}, 0));
  in.conns.push_back(ringConn(false, 64, {size_t(64) << 20, size_t(64) << 20}, 10));
  std::vector<P2pPlanLaunch> plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].blocks, 192);  // channels 0-47: send and receive CTAs of 2 blocks each
  EXPECT_EQ(plan[1].blocks, 64);
  checkCoverage(in, checkPlan(in, plan));
}

// The two sides of a connection cut each transfer alike however they group: the sender posts everything
// in one group, the receiver in random smaller groups. Per channel, the sequence of (offset in transfer,
// bytes, LL) must be identical, or shares would land in the wrong places or the protocols disagree.
TEST(P2pPlan, BothSidesCutAlikeWhateverTheGrouping) {
  const size_t pool[] = {0, 1, 3, 16384, 16385, 64 << 10, (64 << 10) + 1, (512 << 10) + 5, (size_t(1) << 20) + 3,
                         size_t(8) << 20, (size_t(64) << 20) + 64};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int nChannels = trial % 3 == 0 ? 16 : 64;
    const int count = 1 + static_cast<int>(rng() % 12);
    std::vector<size_t> sizes;
    for (int i = 0; i < count; ++i) sizes.push_back(pool[rng() % (sizeof(pool) / sizeof(pool[0]))]);
    using Seq = std::map<int, std::vector<std::tuple<size_t, size_t, size_t, bool>>>;  // channel -> (xfer, off, bytes, ll)
    auto record = [&](const P2pPlanInput& in, const std::vector<P2pPlanLaunch>& plan, size_t firstXfer, Seq* seq) {
      for (const P2pPlanBlock& b : checkPlan(in, plan)) {
        const auto& xs = in.conns[b.conn].xs;
        size_t t = 0;
        while (!(b.buf >= xs[t].buf && b.buf <= xs[t].buf + xs[t].bytes)) ++t;
        (*seq)[b.channel].push_back({firstXfer + t, static_cast<size_t>(b.buf - xs[t].buf), b.bytes, b.ll});
      }
    };
    Seq sent, received;
    {
      P2pPlanInput in = input(nChannels);
      in.conns.push_back(ringConn(true, nChannels, sizes, 0));
      std::vector<P2pPlanLaunch> plan;
      std::string why;
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      record(in, plan, 0, &sent);
    }
    for (size_t at = 0; at < sizes.size();) {
      const size_t take = 1 + rng() % (sizes.size() - at);
      std::vector<size_t> part(sizes.begin() + at, sizes.begin() + at + take);
      P2pPlanInput in = input(nChannels);
      in.conns.push_back(ringConn(false, nChannels, part, 100 + at));
      std::vector<P2pPlanLaunch> plan;
      std::string why;
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      record(in, plan, at, &received);
      at += take;
    }
    ASSERT_EQ(sent, received) << "trial " << trial;
  }
}

// LL where the share is small enough and the channel's connection has LL slots; SIMPLE otherwise.
TEST(P2pPlan, ProtocolFollowsEachShareAndTheConnection) {
  P2pPlanInput in = input(64);
  in.conns.push_back(ringConn(true, 64, {16384, 16385, (512 << 10) + 5, 0}, 0));
  in.conns[0].ll[1] = 0;  // channel 1 without LL slots
  std::vector<P2pPlanLaunch> plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  std::vector<P2pPlanBlock> blocks = checkPlan(in, plan);
  int llBlocks = 0;
  for (const P2pPlanBlock& b : blocks) {
    EXPECT_EQ(b.ll, b.bytes > 0 && b.bytes <= 16384 && b.channel != 1) << b.bytes << " on channel " << b.channel;
    llBlocks += b.ll;
  }
  EXPECT_EQ(llBlocks, 1);  // the 16384-byte transfer (one channel); 512 KiB + 5 cuts ~58 KiB shares
  EXPECT_EQ(static_cast<int>(blocks.size()), 1 + 1 + channelsForBytes((512 << 10) + 5, 64) + 1);
}

// All-to-all over 8 ranks: 7 sends and 7 receives (2 on the ring), the own share as a local copy.
TEST(P2pPlan, LocalCopiesRideInTheFirstLaunchOrAheadOfIt) {
  P2pPlanInput in = input(64);
  const size_t bytes = size_t(4) << 20;
  in.conns.push_back(ringConn(true, 64, {bytes}, 0));
  in.conns.push_back(ringConn(false, 64, {bytes}, 1));
  for (int p = 0; p < 5; ++p) {
    for (bool isSend : {true, false}) {
      P2pPlanConn c;
      c.isSend = isSend;
      c.ll = {1};
      c.xs.push_back(P2pXfer{fakeBuf(10 + p * 2 + isSend), bytes});
      in.conns.push_back(c);
    }
  }
  in.copies.push_back(P2pXfer{fakeBuf(50), bytes, fakeBuf(51)});
  in.copies.push_back(P2pXfer{fakeBuf(52), 100, fakeBuf(52)});  // in place: nothing to copy
  std::vector<P2pPlanLaunch> plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_TRUE(plan[0].ctas.front().copy);
  int copyCtas = 0;
  for (const P2pPlanCta& c : plan[0].ctas) copyCtas += c.copy;
  EXPECT_EQ(copyCtas, 16);  // 4 MiB / 256 KiB
  checkCoverage(in, checkPlan(in, plan));

  // A first launch with no room left: the copies get a launch of their own, ahead.
  in.maxCtas = 128 + 10;
  in.maxBlocks = 128 + 10;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  ASSERT_GE(plan.size(), 2u);
  for (const P2pPlanCta& c : plan[0].ctas) EXPECT_TRUE(c.copy);
  checkCoverage(in, checkPlan(in, plan));
}

TEST(P2pPlan, OneChannelPastALaunchIsRefusedWithTheCounts) {
  P2pPlanInput in = input(64);
  P2pPlanConn c;
  c.isSend = true;
  c.ll = {1};
  for (int i = 0; i < 200; ++i) c.xs.push_back(P2pXfer{fakeBuf(i), 1000});
  in.conns.push_back(c);
  std::vector<P2pPlanLaunch> plan;
  std::string why;
  EXPECT_FALSE(planP2p(in, &plan, &why));
  EXPECT_NE(why.find("200 transfers"), std::string::npos) << why;
  EXPECT_NE(why.find("192"), std::string::npos) << why;
}

}  // namespace
}  // namespace braid
