// The point-to-point plan of GPU communicators (src/algo/p2p_plan.h): every byte of every transfer
// in exactly one block; each CTA on one connection, direction and channel; each connection direction and
// channel sees the same sequence of shares on both sides however either side grouped its transfers; local copies
// first; batches past the launch's limits refused with a reason. (Whether two ranks' launches finish for any
// grouping: p2p_plan_progress_test.cc.)
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <random>
#include <tuple>
#include <vector>

#include "algo/p2p_plan.h"
#include "algo/ring_split.h"
#include "p2p_plan_fixtures.h"

namespace braid {
namespace {

using namespace p2p_plan_fixtures;

// Checks the limits and CTA shape of a plan; returns its blocks in order.
std::vector<P2pPlanBlock> checkPlan(const P2pPlanInput& in, const P2pPlanLaunch& l) {
  std::vector<P2pPlanBlock> all;
  EXPECT_LE(static_cast<int>(l.ctas.size()), in.maxCtas);
  EXPECT_LE(l.blocks, in.maxBlocks);
  int blocks = 0;
  bool seenTransfer = false;
  std::set<std::tuple<int, bool, int>> ctaKeys;  // (conn, isSend, channel): one CTA (or paired half) each
  for (const P2pPlanCta& cta : l.ctas) {
    EXPECT_FALSE(l.blocksOf(cta).empty());
    if (cta.copy) EXPECT_FALSE(seenTransfer) << "copy CTAs come first";
    seenTransfer = seenTransfer || !cta.copy;
    EXPECT_TRUE(cta.split == 0 || ((in.pairRing || in.pairWithin > 0) && !cta.copy && cta.split < cta.count)) << cta.split;
    // A paired CTA: the ring send's blocks, then the ring receive's on the same channel, all SIMPLE (the
    // kernel's warp groups take each half's connection and direction from its first block).
    const P2pPlanBlock* begin = l.all.data() + cta.first;
    const P2pPlanBlock* halves[2][2] = {{begin, begin + (cta.split > 0 ? cta.split : cta.count)},
                                        {begin + cta.split, begin + cta.count}};
    for (int h = 0; h < (cta.split > 0 ? 2 : 1); ++h) {
      const P2pPlanBlock& b0 = *halves[h][0];
      if (!cta.copy) EXPECT_TRUE(ctaKeys.insert({b0.conn, b0.isSend, b0.channel}).second) << "one CTA per connection and channel";
      if (cta.split > 0) {
        EXPECT_TRUE(in.conns[b0.conn].ring);
        EXPECT_EQ(b0.isSend, h == 0);
        EXPECT_EQ(b0.channel, begin->channel);
      }
      for (const P2pPlanBlock* b = halves[h][0]; b != halves[h][1]; ++b) {
        EXPECT_EQ(b->conn < 0, cta.copy);
        EXPECT_EQ(b->conn, b0.conn);
        EXPECT_EQ(b->isSend, b0.isSend);
        EXPECT_EQ(b->channel, b0.channel);
        if (cta.split > 0) EXPECT_FALSE(b->ll) << "LL blocks take a whole CTA";
      }
    }
    for (const P2pPlanBlock& b : l.blocksOf(cta)) all.push_back(b);
    EXPECT_EQ(cta.first, blocks) << "CTAs' blocks are contiguous, in CTA order";
    blocks += static_cast<int>(l.blocksOf(cta).size());
  }
  EXPECT_EQ(blocks, l.blocks);
  EXPECT_EQ(static_cast<size_t>(blocks), l.all.size());
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
  in.conns.push_back(ringConn(true, 64, {size_t(16) << 20}, 0));
  in.conns.push_back(ringConn(false, 64, {size_t(16) << 20}, 10));
  P2pPlanLaunch plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  ASSERT_EQ(plan.ctas.size(), 128u);
  EXPECT_EQ(plan.blocks, 128);
  // Channel by channel: send c, then receive c.
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(plan.blocksOf(plan.ctas[i]).front().isSend, i % 2 == 0);
    EXPECT_EQ(plan.blocksOf(plan.ctas[i]).front().channel, i / 2);
  }
  checkCoverage(in, checkPlan(in, plan));
}

// NCCL_P2P_LL_THRESHOLD applies to each share, and shares of transfers above 1 MiB are ~114 KiB and up: with a
// 128 KiB threshold, 1 MiB + 1 (9 shares of ~114 KB) and 4 MiB (32 of 128 KiB) run LL, 4 MiB + 64 KiB (32
// of 130 KiB) SIMPLE.
TEST(P2pPlan, WidenedSharesFollowTheLlThreshold) {
  P2pPlanInput in = input(64);
  in.llThreshold = 128 << 10;
  const size_t k = 1024, m = k * k;
  in.conns.push_back(ringConn(true, 64, {m + 1, 4 * m, 4 * m + 64 * k}, 0));
  P2pPlanLaunch plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  std::vector<P2pPlanBlock> blocks = checkPlan(in, plan);
  std::map<size_t, std::pair<int, int>> perXfer;  // transfer index -> (shares, LL shares)
  for (const P2pPlanBlock& b : blocks) {
    EXPECT_EQ(b.ll, b.bytes > 0 && b.bytes <= in.llThreshold) << b.bytes;
    for (size_t t = 0; t < in.conns[0].xs.size(); ++t) {
      const P2pXfer& x = in.conns[0].xs[t];
      if (b.buf >= x.buf && b.buf < x.buf + x.bytes) ++perXfer[t].first, perXfer[t].second += b.ll;
    }
  }
  EXPECT_EQ(perXfer[0], std::make_pair(17, 17));
  EXPECT_EQ(perXfer[1], std::make_pair(32, 32));
  EXPECT_EQ(perXfer[2], std::make_pair(32, 0));
  checkCoverage(in, blocks);
}

// BRAID_P2P_CHANNEL_BYTES (agreed at init): a finer cut gives mid-size transfers more channels, and with
// the LL threshold their shares run LL.
TEST(P2pPlan, ChannelBytesSetTheCut) {
  P2pPlanInput in = input(64);
  in.channelBytes = 16384;
  in.conns.push_back(ringConn(true, 64, {size_t(128) << 10, 16384, 16385, size_t(4) << 20, size_t(64) << 20}, 0));
  P2pPlanLaunch plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  std::vector<P2pPlanBlock> blocks = checkPlan(in, plan);
  std::map<size_t, int> sharesOf;  // transfer index -> shares
  for (const P2pPlanBlock& b : blocks) {
    for (size_t t = 0; t < in.conns[0].xs.size(); ++t) {
      const P2pXfer& x = in.conns[0].xs[t];
      if (b.buf >= x.buf && b.buf <= x.buf + x.bytes) ++sharesOf[t];
    }
    EXPECT_EQ(b.ll, b.bytes > 0 && b.bytes <= 16384) << b.bytes;
  }
  EXPECT_EQ(sharesOf[0], 16);  // 128 KiB (up to 16 units): 16 shares of u/2 = 8 KiB, all LL
  EXPECT_EQ(sharesOf[1], 8);   // 16384 (up to 2 units): shares of u/8 = 2 KiB on 8 channels
  EXPECT_EQ(sharesOf[2], 8);   // 16385: 8 shares still (2112 bytes, the last 1601)
  EXPECT_EQ(sharesOf[3], 32);  // 32 channels of 128 KiB (the 16 KiB unit widens at 8 and 32 channels)
  EXPECT_EQ(sharesOf[4], 64);  // capped at the comm's channels
  EXPECT_EQ(static_cast<int>(plan.ctas.size()), 64);
  checkCoverage(in, blocks);
}

// A pipeline step on 2 ranks: two 64 MB sends and two receives to the one neighbour: 256 blocks, more than 192,
// within one launch's kMaxP2pBlocks (640).
TEST(P2pPlan, SeveralLargeTransfersFitOneLaunch) {
  P2pPlanInput in = input(64);
  in.maxBlocks = 640;
  in.conns.push_back(ringConn(true, 64, {size_t(64) << 20, size_t(64) << 20}, 0));
  in.conns.push_back(ringConn(false, 64, {size_t(64) << 20, size_t(64) << 20}, 10));
  P2pPlanLaunch plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  EXPECT_EQ(plan.ctas.size(), 128u);
  EXPECT_EQ(plan.blocks, 256);
  checkCoverage(in, checkPlan(in, plan));
}

// The two sides of a connection cut each transfer alike however they group: the sender posts everything
// in one group, the receiver in random smaller groups. Per channel, the sequence of (offset in transfer,
// bytes, LL) must be identical, or shares would land in the wrong places or the protocols disagree. Under a
// CTA bound (every third trial: 8 channels, LL-sized transfers on 4) the sender pairs its channels with
// receives of its own and the receiver does not: pairing is this rank's choice and must not change the cut.
TEST(P2pPlan, BothSidesCutAlikeWhateverTheGrouping) {
  const size_t pool[] = {0, 1, 3, 16384, 16385, 64 << 10, (64 << 10) + 1, (512 << 10) + 5, (size_t(1) << 20) + 3,
                         size_t(8) << 20, (size_t(64) << 20) + 64};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const bool bounded = trial % 3 == 2;
    const int nChannels = bounded ? 8 : trial % 3 == 0 ? 16 : 64;
    const int count = 1 + static_cast<int>(rng() % 10);  // up to 10 x 64 channels: the 640 blocks
    std::vector<size_t> sizes, back;
    for (int i = 0; i < count; ++i) sizes.push_back(pool[rng() % (sizeof(pool) / sizeof(pool[0]))]);
    for (int i = 0; i < count; ++i) back.push_back(pool[rng() % (sizeof(pool) / sizeof(pool[0]))]);
    auto bound = [&](P2pPlanInput* in) {
      if (bounded) in->llChannels = 4;
    };
    using Seq = std::map<int, std::vector<std::tuple<size_t, size_t, size_t, bool>>>;  // channel -> (xfer, off, bytes, ll)
    auto record = [&](const P2pPlanInput& in, const P2pPlanLaunch& plan, size_t firstXfer, Seq* seq) {
      for (const P2pPlanBlock& b : checkPlan(in, plan)) {
        if (b.conn != 0) continue;  // the sender's own receives (bounded trials)
        const auto& xs = in.conns[b.conn].xs;
        size_t t = 0;
        while (!(b.buf >= xs[t].buf && b.buf <= xs[t].buf + xs[t].bytes)) ++t;
        (*seq)[b.channel].push_back({firstXfer + t, static_cast<size_t>(b.buf - xs[t].buf), b.bytes, b.ll});
      }
    };
    Seq sent, received;
    {
      P2pPlanInput in = input(nChannels);
      bound(&in);
      in.pairRing = bounded;
      in.conns.push_back(ringConn(true, nChannels, sizes, 0));
      if (bounded) in.conns.push_back(ringConn(false, nChannels, back, 200));
      P2pPlanLaunch plan;
      std::string why;
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      record(in, plan, 0, &sent);
    }
    for (size_t at = 0; at < sizes.size();) {
      const size_t take = 1 + rng() % (sizes.size() - at);
      std::vector<size_t> part(sizes.begin() + at, sizes.begin() + at + take);
      P2pPlanInput in = input(nChannels);
      bound(&in);
      in.conns.push_back(ringConn(false, nChannels, part, 100 + at));
      P2pPlanLaunch plan;
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
  in.llThreshold = 65536;
  // 16384: two 8 KiB shares, LL on channel 0, SIMPLE on channel 1 (no LL slots there). 100000: eight shares
  // of ~12.5 KB, LL but on channel 1. 448 KiB + 5: 15 shares of ~30 KiB, as 100000. 200000: eight ~25 KB
  // shares, as 100000. 3 MiB: 24 shares of 128 KiB, SIMPLE (above the threshold). 0: one empty block, SIMPLE.
  in.conns.push_back(ringConn(true, 64, {16384, 100000, (448 << 10) + 5, 200000, size_t(3) << 20, 0}, 0));
  in.conns[0].ll[1] = 0;
  P2pPlanLaunch plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  std::vector<P2pPlanBlock> blocks = checkPlan(in, plan);
  int llBlocks = 0, onChannel1 = 0;
  for (const P2pPlanBlock& b : blocks) {
    EXPECT_EQ(b.ll, b.bytes > 0 && b.bytes <= 65536 && b.channel != 1) << b.bytes << " on channel " << b.channel;
    llBlocks += b.ll;
    onChannel1 += b.channel == 1 && b.bytes > 0 && b.bytes <= 65536;
  }
  EXPECT_EQ(onChannel1, 4);  // shares small enough for LL on the channel without LL slots
  EXPECT_EQ(llBlocks, 1 + 7 + 14 + 7);
  EXPECT_EQ(static_cast<int>(blocks.size()), 2 + 8 + 15 + 8 + 24 + 1);
  checkCoverage(in, blocks);
}

// All-to-all over 7 ranks: 6 sends and 6 receives (2 on the ring), the own share as a local copy.
TEST(P2pPlan, LocalCopiesGoFirstOrTheBatchIsRefused) {
  P2pPlanInput in = input(64);
  const size_t bytes = size_t(4) << 20;
  const size_t ringBytes = size_t(16) << 20;  // 64 channels
  in.conns.push_back(ringConn(true, 64, {ringBytes}, 0));
  in.conns.push_back(ringConn(false, 64, {ringBytes}, 1));
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
  P2pPlanLaunch plan;
  std::string why;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  ASSERT_TRUE(plan.ctas.front().copy);
  auto copyCtas = [&] {
    int k = 0;
    for (const P2pPlanCta& c : plan.ctas) k += c.copy;
    return k;
  };
  EXPECT_EQ(copyCtas(), 16);  // 4 MiB / 256 KiB
  checkCoverage(in, checkPlan(in, plan));

  // Room for a few copy CTAs: fewer, larger shares.
  in.maxCtas = 138 + 3;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  EXPECT_EQ(copyCtas(), 3);
  checkCoverage(in, checkPlan(in, plan));

  // BRAID_P2P_COPY_CTAS bounds them whatever the room.
  in.maxCtas = 192;
  in.maxCopyCtas = 4;
  ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
  EXPECT_EQ(copyCtas(), 4);
  checkCoverage(in, checkPlan(in, plan));
  in.maxCopyCtas = 32;

  // No room: refused, naming the need.
  in.maxCtas = 138;
  EXPECT_FALSE(planP2p(in, &plan, &why));
  EXPECT_NE(why.find("139 CTAs with its local copies"), std::string::npos) << why;
}

// A CTA bound (config.maxCTAs, CTAPolicy, NCCL_MAX_CTAS) holds for a 2-rank send/recv launch (up to
// kP2pPairMaxCtas the ring on all of it, each channel's send and receive paired in one CTA, LL-sized transfers
// on half of it, a CTA per direction; above, everything on half, a CTA per direction) and local copies add at
// most half of it; with no bound, the comm's channels and copies.
TEST(P2pPlan, CtaBoundHoldsForTheRingAndCopies) {
  EXPECT_EQ(p2pCtaBudget(64, 32, -1, true).nChannels, 64);
  EXPECT_EQ(p2pCtaBudget(64, 32, -1, true).llChannels, 64);
  EXPECT_EQ(p2pCtaBudget(64, 32, -1, true).maxCopyCtas, 32);
  EXPECT_FALSE(p2pCtaBudget(64, 32, -1, true).pair);
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, true).nChannels, 12);  // above kP2pPairMaxCtas: half, a CTA per direction
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, true).llChannels, 12);
  EXPECT_FALSE(p2pCtaBudget(64, 32, 24, true).pair);
  EXPECT_EQ(p2pCtaBudget(64, 32, 21, true).nChannels, 10);
  EXPECT_FALSE(p2pCtaBudget(64, 32, 21, true).pair);
  EXPECT_EQ(p2pCtaBudget(64, 32, 20, true).nChannels, 20);  // up to it: all of it, paired
  EXPECT_EQ(p2pCtaBudget(64, 32, 20, true).llChannels, 10);
  EXPECT_TRUE(p2pCtaBudget(64, 32, 20, true).pair);
  EXPECT_EQ(p2pCtaBudget(64, 32, 17, true).nChannels, 17);
  EXPECT_TRUE(p2pCtaBudget(64, 32, 17, true).pair);
  EXPECT_EQ(p2pCtaBudget(64, 32, 16, true).nChannels, 16);
  EXPECT_EQ(p2pCtaBudget(64, 32, 16, true).llChannels, 8);
  EXPECT_TRUE(p2pCtaBudget(64, 32, 16, true).pair);
  EXPECT_EQ(p2pCtaBudget(64, 32, 8, true).nChannels, 8);
  EXPECT_EQ(p2pCtaBudget(64, 32, 8, true).llChannels, 4);
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, true).maxCopyCtas, 12);
  EXPECT_EQ(p2pCtaBudget(8, 32, 128, true).nChannels, 8);   // never more than the comm has
  EXPECT_EQ(p2pCtaBudget(8, 32, 128, true).llChannels, 8);
  EXPECT_EQ(p2pCtaBudget(4, 32, 16, true).nChannels, 4);
  EXPECT_EQ(p2pCtaBudget(4, 32, 16, true).llChannels, 4);
  EXPECT_EQ(p2pCtaBudget(64, 2, 128, true).maxCopyCtas, 2);  // nor more copy CTAs than asked
  EXPECT_EQ(p2pCtaBudget(64, 32, 1, true).llChannels, 1);    // a bound below 2 cannot hold; one channel
  // A rank whose threads cannot pair (agreed: every rank then) keeps half the bound, a CTA per direction.
  EXPECT_EQ(p2pCtaBudget(64, 32, 8, false).nChannels, 4);
  EXPECT_EQ(p2pCtaBudget(64, 32, 8, false).llChannels, 4);
  EXPECT_FALSE(p2pCtaBudget(64, 32, 8, false).pair);
  // A gather's or scatter's transfers: the whole bound above kP2pPairMaxCtas too, pairing only to fit.
  EXPECT_EQ(p2pCtaBudget(64, 32, 21, true).oneWayChannels, 21);
  EXPECT_EQ(p2pCtaBudget(64, 32, 21, true).pairWithin, 21);
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, true).oneWayChannels, 24);
  EXPECT_EQ(p2pCtaBudget(64, 32, 28, true).oneWayChannels, 28);
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, true).pairWithin, 24);
  EXPECT_EQ(p2pCtaBudget(64, 32, 32, true).oneWayChannels, 32);
  EXPECT_EQ(p2pCtaBudget(64, 32, 32, true).pairWithin, 32);
  EXPECT_EQ(p2pCtaBudget(64, 32, 16, true).oneWayChannels, 16);
  EXPECT_EQ(p2pCtaBudget(64, 32, 16, true).pairWithin, 0);  // pairs every channel anyway
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, false).oneWayChannels, 12);
  EXPECT_EQ(p2pCtaBudget(64, 32, 24, false).pairWithin, 0);
  EXPECT_EQ(p2pCtaBudget(64, 32, -1, true).oneWayChannels, 64);
  EXPECT_EQ(p2pCtaBudget(16, 32, 128, true).oneWayChannels, 16);
  for (int t : {64, 96, 160, 224}) EXPECT_FALSE(p2pCanPair(t)) << t;
  for (int t : {128, 192, 256, 512}) EXPECT_TRUE(p2pCanPair(t)) << t;
  const size_t big = size_t(64) << 20;
  for (int bound : {8, 16, 24, 64, 100}) {
    for (bool canPair : {true, false}) {
      SCOPED_TRACE(canPair ? "can pair" : "cannot pair");
      const P2pCtaBudget b = p2pCtaBudget(64, 32, bound, canPair);
      P2pPlanInput in = input(b.nChannels);
      applyBudget(b, &in);
      in.conns.push_back(ringConn(true, 64, {big}, 0));
      in.conns.push_back(ringConn(false, 64, {big}, 10));
      P2pPlanLaunch plan;
      std::string why;
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      EXPECT_LE(static_cast<int>(plan.ctas.size()), bound) << bound;
      checkCoverage(in, checkPlan(in, plan));
      // A gather's send (the whole bound's channels) beside a receive the other way, and the gather alone.
      in.conns[0].xs[0].oneWay = true;
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      EXPECT_LE(static_cast<int>(plan.ctas.size()), bound) << bound;
      checkCoverage(in, checkPlan(in, plan));
      in.conns.pop_back();
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      EXPECT_EQ(static_cast<int>(plan.ctas.size()), canPair ? std::min(bound, 64) : bound / 2) << bound;
      in.conns.push_back(ringConn(false, 64, {big}, 10));
      in.copies.push_back(P2pXfer{fakeBuf(50), big, fakeBuf(51)});  // all-to-all's own share
      ASSERT_TRUE(planP2p(in, &plan, &why)) << why;
      EXPECT_LE(static_cast<int>(plan.ctas.size()), bound + bound / 2) << bound;
      checkCoverage(in, checkPlan(in, plan));
    }
  }
}

// Under a bound of 8 (p2pCtaBudget: 8 channels, LL-sized transfers on 4): send/recv of 256 MB pairs each
// channel's send and receive in one CTA, the send first; a one-way transfer (a gather's sender) takes all 8
// channels on CTAs of its own; transfers whose shares on 8 channels run LL (64 KB: 8 KiB shares) are cut over
// 4, a CTA per direction, and a channel where either side has an LL block is not paired.
TEST(P2pPlan, PairedRingChannelsUnderABound) {
  const P2pCtaBudget b = p2pCtaBudget(64, 32, 8, true);
  auto plan = [&](const std::vector<size_t>& sends, const std::vector<size_t>& recvs, P2pPlanLaunch* l) {
    P2pPlanInput in = input(b.nChannels);
    in.llChannels = b.llChannels;
    in.pairRing = true;
    if (!sends.empty()) in.conns.push_back(ringConn(true, 64, sends, 0));
    if (!recvs.empty()) in.conns.push_back(ringConn(false, 64, recvs, 10));
    std::string why;
    EXPECT_TRUE(planP2p(in, l, &why)) << why;
    checkCoverage(in, checkPlan(in, *l));
  };
  const size_t big = size_t(256) << 20;
  P2pPlanLaunch l;
  plan({big}, {big}, &l);
  ASSERT_EQ(l.ctas.size(), 8u);
  for (int c = 0; c < 8; ++c) {
    const P2pPlanCta& cta = l.ctas[c];
    ASSERT_EQ(cta.count, 2);
    EXPECT_EQ(cta.split, 1);
    EXPECT_TRUE(l.all[cta.first].isSend);
    EXPECT_FALSE(l.all[cta.first + 1].isSend);
    EXPECT_EQ(l.all[cta.first].channel, c);
    EXPECT_EQ(l.all[cta.first + 1].channel, c);
    EXPECT_EQ(l.all[cta.first].bytes, big / 8);
  }
  plan({big}, {}, &l);  // one way: 8 CTAs, none paired
  ASSERT_EQ(l.ctas.size(), 8u);
  for (const P2pPlanCta& cta : l.ctas) EXPECT_EQ(cta.split, 0);
  plan({}, {size_t(1) << 20, big}, &l);  // receives only, in order per channel
  ASSERT_EQ(l.ctas.size(), 8u);
  for (const P2pPlanCta& cta : l.ctas) EXPECT_EQ(cta.count, 2);
  plan({64 << 10}, {64 << 10}, &l);  // LL-sized: 4 channels of 16 KiB, a CTA per direction
  ASSERT_EQ(l.ctas.size(), 8u);
  for (const P2pPlanCta& cta : l.ctas) {
    EXPECT_EQ(cta.split, 0);
    EXPECT_TRUE(l.all[cta.first].ll);
    EXPECT_EQ(l.all[cta.first].bytes, size_t(16) << 10);
  }
  // 64 KB on 4 channels beside 256 MB on 8: channels 0-3 hold an LL block each way and stay apart (two CTAs
  // each), channels 4-7 pair.
  plan({64 << 10, big}, {64 << 10, big}, &l);
  EXPECT_EQ(l.ctas.size(), 4u * 2 + 4);
  int pairedCtas = 0;
  for (const P2pPlanCta& cta : l.ctas) pairedCtas += cta.split > 0 && l.all[cta.first].channel >= 4;
  EXPECT_EQ(pairedCtas, 4);
  // Unbounded, nothing pairs (the executor sets pairRing only under a bound) and the cut is p2pChannelsForBytes'.
  EXPECT_EQ(p2pRingChannels(big, 64, 64, 65536, 16384), p2pChannelsForBytes(big, 64, 65536));
  EXPECT_EQ(p2pRingChannels(64 << 10, 8, 4, 65536, 16384), 4);
  EXPECT_EQ(p2pRingChannels(64 << 10, 8, 4, 65536, 4096), 8);  // 8 KiB shares above a 4 KiB threshold
  EXPECT_EQ(p2pRingChannels(1 << 20, 8, 4, 65536, 16384), 8);  // 128 KiB shares: SIMPLE, the whole bound
}

// Under a bound of 32 (above kP2pPairMaxCtas): a gather's or scatter's ring transfer is cut over all 32
// channels on both ranks alike (the sender's and the receiver's shares match); a send/recv stays on 16 a
// direction; a group holding a gather's 32-channel send and a 16-channel receive pairs its 16 lowest channels
// and so takes 32 CTAs, not 48; LL-sized one-way transfers keep the cut over half. Under 24 and 28 alike, at any
// size.
TEST(P2pPlan, OneWayTransfersTakeTheWholeBound) {
  auto plan = [&](int bound, std::vector<P2pPlanConn> conns, P2pPlanLaunch* l) {
    const P2pCtaBudget b = p2pCtaBudget(64, 32, bound, true);
    P2pPlanInput in = input(b.nChannels);
    applyBudget(b, &in);
    in.conns = std::move(conns);
    std::string why;
    EXPECT_TRUE(planP2p(in, l, &why)) << why;
    checkCoverage(in, checkPlan(in, *l));
  };
  auto oneWay = [](P2pPlanConn c) {
    for (P2pXfer& x : c.xs) x.oneWay = true;
    return c;
  };
  auto shares = [](const P2pPlanLaunch& l) {
    std::vector<std::tuple<int, size_t, size_t, bool>> v;  // channel, offset, bytes, ll
    for (const P2pPlanBlock& blk : l.all) v.emplace_back(blk.channel, blk.buf - fakeBuf(0), blk.bytes, blk.ll);
    std::sort(v.begin(), v.end());
    return v;
  };
  const size_t big = size_t(128) << 20;
  P2pPlanLaunch sender, receiver;
  plan(32, {oneWay(ringConn(true, 64, {big}, 0))}, &sender);
  plan(32, {oneWay(ringConn(false, 64, {big}, 0))}, &receiver);
  ASSERT_EQ(sender.ctas.size(), 32u);
  ASSERT_EQ(receiver.ctas.size(), 32u);
  for (const P2pPlanCta& cta : sender.ctas) EXPECT_EQ(cta.split, 0);
  EXPECT_EQ(shares(sender), shares(receiver));
  plan(32, {ringConn(true, 64, {big}, 0)}, &sender);  // a send of send/recv: half
  EXPECT_EQ(sender.ctas.size(), 16u);
  plan(32, {oneWay(ringConn(true, 64, {big}, 0)), ringConn(false, 64, {big}, 10)}, &sender);
  ASSERT_EQ(sender.ctas.size(), 32u);
  int paired = 0;
  for (const P2pPlanCta& cta : sender.ctas) {
    if (cta.split == 0) continue;
    ++paired;
    EXPECT_LT(sender.all[cta.first].channel, 16);
  }
  EXPECT_EQ(paired, 16);
  // 64 KB: LL-sized shares, so the cut over half the bound that a send/recv of it gets (8 KiB on 8 channels).
  plan(32, {oneWay(ringConn(true, 64, {64 << 10}, 0))}, &sender);
  EXPECT_EQ(sender.ctas.size(), static_cast<size_t>(p2pRingChannels(64 << 10, 16, 16, 65536, 16384)));
  for (const P2pPlanBlock& blk : sender.all) EXPECT_TRUE(blk.ll);
  // Under 24 and 28: 8 MiB, 8 MiB + 64 and 128 MiB on all the bound's channels, both ends alike.
  for (int bound : {24, 28}) {
    for (size_t n : {size_t(8) << 20, (size_t(8) << 20) + 64, big}) {
      plan(bound, {oneWay(ringConn(true, 64, {n}, 0))}, &sender);
      plan(bound, {oneWay(ringConn(false, 64, {n}, 0))}, &receiver);
      EXPECT_EQ(sender.ctas.size(), static_cast<size_t>(bound)) << bound << " " << n;
      EXPECT_EQ(shares(sender), shares(receiver)) << bound << " " << n;
    }
  }
}

// How many channels a ring transfer takes (p2pChannelsForBytes), unit u: up to 2u shares of u/8 on at most 8
// channels; up to 16u shares of u/2 on 8 to 32; above, one per u up to 32, then shares of 2u up to 32 channels,
// then shares of 4u (at least 256 KiB) up to the comm's channels; inside that last rule the count holds at each
// widening until the larger shares catch up; from 16u to 16u + 1 it drops (32 to 17).
TEST(P2pPlan, ChannelSharesWidenAtEightAndThirtyTwo) {
  const size_t k = 1024, m = k * k;
  struct Case {
    size_t bytes;
    int nChannels;
    size_t unit;
    int want;
  } cases[] = {
      {0, 64, 64 * k, 1},           {1, 64, 64 * k, 1},           {8 * k, 64, 64 * k, 1},
      {8 * k + 1, 64, 64 * k, 2},   {32 * k, 64, 64 * k, 4},      {64 * k, 64, 64 * k, 8},
      {128 * k, 64, 64 * k, 8},     {128 * k + 1, 64, 64 * k, 8}, {256 * k, 64, 64 * k, 8},
      {256 * k + 1, 64, 64 * k, 9}, {512 * k, 64, 64 * k, 16},    {1 * m, 64, 64 * k, 32},
      {1 * m + 1, 64, 64 * k, 17},  {2 * m, 64, 64 * k, 32},      {2 * m + 1, 64, 64 * k, 17},
      {4 * m, 64, 64 * k, 32},      {4 * m + 1, 64, 64 * k, 32},  {8 * m, 64, 64 * k, 32},
      {8 * m + 1, 64, 64 * k, 33},  {16 * m, 64, 64 * k, 64},     {size_t(1) << 30, 64, 64 * k, 64},
      {4 * m, 16, 64 * k, 16},      {64 * k, 4, 64 * k, 4},       {4 * m, 64, 16 * k, 32},
      {16 * m, 64, 16 * k, 64},     {4 * m, 64, 512 * k, 16},     {8 * m, 64, 512 * k, 32},
      {24 * m, 64, 512 * k, 24},    {64 * m, 64, 512 * k, 32},    {128 * m, 64, 512 * k, 64},
      {1 * m, 64, 0, 32},           {16 * m, 0, 64 * k, 1},
  };
  for (const Case& c : cases)
    EXPECT_EQ(p2pChannelsForBytes(c.bytes, c.nChannels, c.unit), c.want)
        << c.bytes << " bytes, " << c.nChannels << " channels, " << c.unit << " per channel";
}

// Each SIMPLE share's FIFO steps (BRAID_P2P_PIECES, dev_kernels.cu): up to `pieces` steps of at least 128 KiB
// (whole 4 KiB), never above the connection's step; a share under 256 KiB, or pieces 1, keeps the connection's
// step (one step up to its size).
TEST(P2pPlan, SimpleSharesCutIntoPieces) {
  const size_t kStep = 512 << 10;
  auto steps = [&](size_t bytes, uint32_t pieces, size_t connStep) {
    const size_t s = p2pSimpleStepBytes(connStep, bytes, pieces);
    EXPECT_EQ(s % 4096, 0u) << bytes;
    EXPECT_LE(s, connStep) << bytes;
    return bytes == 0 ? size_t{0} : (bytes + s - 1) / s;
  };
  for (size_t b : {size_t{1}, size_t{64} << 10, (size_t{256} << 10) - 1}) EXPECT_EQ(steps(b, 4, kStep), 1u) << b;
  EXPECT_EQ(p2pSimpleStepBytes(kStep, 200 << 10, 4), kStep);
  EXPECT_EQ(steps(size_t{256} << 10, 4, kStep), 2u);
  EXPECT_EQ(steps(size_t{384} << 10, 4, kStep), 3u);
  EXPECT_EQ(steps(size_t{512} << 10, 4, kStep), 4u);
  EXPECT_EQ(p2pSimpleStepBytes(kStep, size_t{1} << 20, 4), size_t{256} << 10);
  EXPECT_EQ(steps(size_t{1} << 20, 4, kStep), 4u);
  EXPECT_EQ(steps(size_t{2} << 20, 4, kStep), 4u);   // 512 KiB pieces: the connection's step
  EXPECT_EQ(steps(size_t{4} << 20, 4, kStep), 8u);   // capped at the connection's step
  EXPECT_EQ(steps((size_t{1} << 20) + 5, 4, kStep), 4u);  // 4 KiB-rounded pieces cover an odd size
  for (size_t b : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20}) {
    EXPECT_EQ(p2pSimpleStepBytes(kStep, b, 1), kStep) << b;            // pieces 1: the connection's step
    EXPECT_EQ(p2pSimpleStepBytes(64 << 10, b, 4), size_t{64} << 10) << b;  // small NCCL_BUFFSIZE steps
  }
}

// A balanced transfer's chunks (dev_kernels.cu): its share's step, whole 4 KiB, and at most 256 KiB on a paired
// budget or over kP2pBalancedCapMinParts channels or more; a smaller connection step (NCCL_BUFFSIZE) still bounds
// it, and below 2 TiB the chunk indices fit sizes[]' 29 bits.
TEST(P2pPlan, BalancedChunksAreCappedOnPairedOrWideLaunches) {
  const size_t k = 1024, m = k * k;
  EXPECT_EQ(kP2pBalancedChunkBytes, 256 * k);
  const uint32_t paired = p2pBalancedCapParts(true), unpaired = p2pBalancedCapParts(false);
  EXPECT_EQ(paired, 0u);
  EXPECT_EQ(unpaired, 16u);
  for (size_t connStep : {512 * k, 2 * m, 256 * k}) {
    for (size_t share : {1 * m, 4 * m, 30 * m + 4096 + 64, 1024 * m}) {
      const size_t step = p2pSimpleStepBytes(connStep, share, 4);
      for (int parts : {2, 11, 12, 15}) {
        EXPECT_EQ(p2pBalancedChunkBytes(connStep, share, 4, parts, paired), 256 * k) << connStep << " " << share;
        EXPECT_EQ(p2pBalancedChunkBytes(connStep, share, 1, parts, paired), 256 * k) << connStep << " " << share;
        EXPECT_EQ(p2pBalancedChunkBytes(connStep, share, 4, parts, unpaired), step) << connStep << " " << share;
      }
      for (int parts : {kP2pBalancedCapMinParts, 24, 64})
        EXPECT_EQ(p2pBalancedChunkBytes(connStep, share, 4, parts, unpaired), 256 * k) << connStep << " " << share;
    }
  }
  EXPECT_EQ(p2pBalancedChunkBytes(512 * k, 4 * m, 4, 12, unpaired), 512 * k);  // the uncapped step stays whole
  for (size_t connStep : {128 * k, 64 * k}) EXPECT_EQ(p2pBalancedChunkBytes(connStep, 8 * m, 4, 64, 0), connStep);
  const size_t justUnder2TiB = (size_t(1) << 41) - 1;
  ASSERT_TRUE(p2pBalanced(justUnder2TiB, 2, 1 * m));
  EXPECT_LE((justUnder2TiB + 4095) / 4096, size_t(1) << 29);  // indices 0 .. 2^29 - 1 at the smallest step
  EXPECT_EQ(p2pBalancedChunkBytes(4096, justUnder2TiB, 4, 2, 0), 4096u);
}

// The executor reuses one launch across calls: a plan into a used launch equals a fresh one, whatever the
// earlier plan held (more CTAs, copies, or a refusal).
TEST(P2pPlan, ReusedLaunchEqualsAFreshOne) {
  auto same = [](const P2pPlanLaunch& a, const P2pPlanLaunch& b) {
    if (a.blocks != b.blocks || a.ctas.size() != b.ctas.size() || a.all.size() != b.all.size()) return false;
    for (size_t i = 0; i < a.ctas.size(); ++i)
      if (a.ctas[i].copy != b.ctas[i].copy || a.ctas[i].first != b.ctas[i].first ||
          a.ctas[i].count != b.ctas[i].count)
        return false;
    for (size_t i = 0; i < a.all.size(); ++i) {
      const P2pPlanBlock &x = a.all[i], &y = b.all[i];
      if (x.conn != y.conn || x.channel != y.channel || x.buf != y.buf || x.src != y.src || x.bytes != y.bytes ||
          x.isSend != y.isSend || x.ll != y.ll)
        return false;
    }
    return true;
  };
  P2pPlanInput big = input(64);
  big.conns.push_back(ringConn(true, 64, {size_t(16) << 20, 100}, 0));
  big.conns.push_back(ringConn(false, 64, {size_t(4) << 20}, 10));
  big.copies.push_back(P2pXfer{fakeBuf(40), size_t(1) << 20, fakeBuf(41)});
  P2pPlanInput small = input(64);
  small.conns.push_back(ringConn(true, 64, {8}, 20));
  small.conns.push_back(ringConn(false, 64, {8}, 30));
  P2pPlanInput tooBig = input(64);
  for (int i = 0; i < 4; ++i) tooBig.conns.push_back(ringConn(true, 64, {size_t(64) << 20}, 50 + i));
  std::string why;
  P2pPlanLaunch reused, freshSmall, freshBig;
  ASSERT_TRUE(planP2p(small, &freshSmall, &why)) << why;
  ASSERT_TRUE(planP2p(big, &freshBig, &why)) << why;
  EXPECT_EQ(freshSmall.ctas.size(), 2u);
  EXPECT_EQ(freshSmall.blocks, 2);
  ASSERT_TRUE(planP2p(big, &reused, &why)) << why;
  ASSERT_TRUE(planP2p(small, &reused, &why)) << why;
  EXPECT_TRUE(same(reused, freshSmall));
  EXPECT_FALSE(planP2p(tooBig, &reused, &why));
  ASSERT_TRUE(planP2p(big, &reused, &why)) << why;
  EXPECT_TRUE(same(reused, freshBig));
  checkCoverage(big, checkPlan(big, reused));
}

TEST(P2pPlan, PastTheLaunchIsRefusedWithTheCounts) {
  P2pPlanInput in = input(64);
  in.maxBlocks = 640;
  P2pPlanConn c;
  c.isSend = true;
  c.ll = {1};
  for (int i = 0; i < 700; ++i) c.xs.push_back(P2pXfer{fakeBuf(i), 1000});
  in.conns.push_back(c);
  P2pPlanLaunch plan;
  std::string why;
  EXPECT_FALSE(planP2p(in, &plan, &why));
  EXPECT_NE(why.find("700 blocks"), std::string::npos) << why;
  EXPECT_NE(why.find("640"), std::string::npos) << why;

  // 200 peers each way off the ring: one CTA each, past 192.
  in.conns.clear();
  for (int p = 0; p < 200; ++p) {
    c.xs.assign(1, P2pXfer{fakeBuf(p), 1000});
    in.conns.push_back(c);
  }
  EXPECT_FALSE(planP2p(in, &plan, &why));
  EXPECT_NE(why.find("200 CTAs"), std::string::npos) << why;
}

}  // namespace
}  // namespace braid
