// The tuner's estimates of GPU point-to-point ops (predictP2pUs) on the CPU: they follow planP2p's cut (channels,
// LL or SIMPLE, one connection for non-neighbours), and balanced transfers over NVLink P2P take their own row,
// checked against the send/recv and gather times it was fitted to.
#include <gtest/gtest.h>

#include "algo/p2p_plan.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

// A point-to-point op of `bytes` bytes with that peer (send/recv) or root (gather/scatter).
OpDesc p2pOp(CollType c, size_t bytes, int peerOrRoot) {
  OpDesc o;
  o.coll = c;
  o.dtype = ncclUint8;
  o.count = bytes;
  o.peer = o.root = peerOrRoot;
  return o;
}

// predictP2pUs follows planP2p's cut: the ring neighbour's transfer over p2pChannelsForBytes channels, another
// peer's over one connection, LL where the full share is small enough and the path has LL slots.
TEST(TunerP2p, EstimateFollowsTheCut) {
  const TransportClass t = TransportClass::P2pNvlink;
  P2pCutFacts f;
  f.cut.nChannels = 64;
  f.channelBytes = 65536;
  f.llThreshold = 16384;
  f.llSlots = true;
  const auto op = p2pOp;
  auto fixed = [&](size_t bytes, Proto p, int nch) {
    TuneRequest r;
    r.coll = CollType::Send;
    r.bytes = bytes;
    r.nranks = 2;
    r.transport = t;
    return predictUs(r, Algo::Ring, p, nch, 0);
  };
  const size_t k = 1024, m = k * k;
  // 2 ranks: the peer is the neighbour both ways.
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 8 * k, 1), 2, 0, t, f), fixed(8 * k, Proto::LL, 1));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Recv, 100 * k, 1), 2, 0, t, f), fixed(100 * k, Proto::LL, 8));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 1 * m, 1), 2, 0, t, f), fixed(1 * m, Proto::Simple, 32));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 2 * m, 1), 2, 0, t, f), fixed(2 * m, Proto::Simple, 32));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 4 * m, 1), 2, 0, t, f), fixed(4 * m, Proto::Simple, 32));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 64 * m, 1), 2, 0, t, f), fixed(64 * m, Proto::Simple, 64));
  // Measured on 2xH200 (docs/TUNING.md, "The cut"): send/recv 4 MB 23-24 us, 64 MB 200 us. An estimate on one
  // channel says several times that.
  const double us4m = predictP2pUs(op(CollType::Send, 4 * m, 1), 2, 0, t, f);
  EXPECT_GT(us4m, 10.0);
  EXPECT_LT(us4m, 60.0);
  EXPECT_LT(3 * us4m, fixed(4 * m, Proto::Simple, 1));
  // Without LL slots (or threshold 0) small shares go SIMPLE.
  P2pCutFacts noLl = f;
  noLl.llSlots = false;
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 8 * k, 1), 2, 0, t, noLl), fixed(8 * k, Proto::Simple, 1));
  // Doubling sizes never get cheaper.
  double prev = 0;
  for (size_t b = 8; b <= (size_t(1) << 30); b *= 2) {
    const double us = predictP2pUs(op(CollType::Send, b, 1), 2, 0, t, f);
    EXPECT_GE(us, prev) << b;
    prev = us;
  }
  // 4 ranks, rank 0: next 1, prev 3, peers on 10 channels (p2pPeerChannels). A send to 2 (not the neighbour)
  // takes its 10 connections; the neighbour's 4 MB the 32 channels its size asks for.
  P2pCutFacts p4 = f;
  p4.peerChannels = p4.peerConnChannels = 10;
  const double toNext = predictP2pUs(op(CollType::Send, 4 * m, 1), 4, 0, t, p4);
  const double toFar = predictP2pUs(op(CollType::Send, 4 * m, 2), 4, 0, t, p4);
  EXPECT_DOUBLE_EQ(toNext, fixed(4 * m, Proto::Simple, 32));
  EXPECT_DOUBLE_EQ(toFar, fixed(4 * m, Proto::Simple, 10));
  EXPECT_LT(toNext, toFar);
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Recv, 4 * m, 3), 4, 0, t, p4), toNext);
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Recv, 4 * m, 1), 4, 0, t, p4), toFar);
  // One connection per peer: a far send on one channel.
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 4 * m, 2), 4, 0, t, f), fixed(4 * m, Proto::Simple, 1));
  // All-to-all (count per peer), gather and scatter at 3+ ranks: every peer's transfer on the peers' 10 channels,
  // the ring neighbour's too, so every rank's estimate is a far transfer's.
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::AllToAll, 4 * m, 0), 4, 0, t, p4), toFar);
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::AllToAll, 4 * m, 0), 2, 0, t, p4),
                   predictP2pUs(op(CollType::Send, 4 * m, 1), 2, 0, t, p4));
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Gather, 4 * m, 0), 4, r, t, p4), toFar) << r;
    EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Scatter, 4 * m, 0), 4, r, t, p4), toFar) << r;
  }
  // Under a bound of 24 (p2pCtaBudget): a send/recv's transfer on 12 channels, a gather's or scatter's on 24.
  P2pCutFacts b24 = f;
  b24.cut.nChannels = b24.cut.llChannels = 12;
  b24.cut.oneWayChannels = 24;
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 64 * m, 1), 2, 0, t, b24), fixed(64 * m, Proto::Simple, 12));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Gather, 64 * m, 0), 2, 1, t, b24), fixed(64 * m, Proto::Simple, 24));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Scatter, 64 * m, 0), 2, 0, t, b24), fixed(64 * m, Proto::Simple, 24));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Gather, 8 * k, 0), 2, 1, t, b24), fixed(8 * k, Proto::LL, 1));
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Gather, 8 * m, 0), 2, 1, t, b24), fixed(8 * m, Proto::Simple, 24));
  // Nothing to move, or not a p2p op: 0.
  EXPECT_EQ(predictP2pUs(op(CollType::Send, 0, 1), 2, 0, t, f), 0.0);
  EXPECT_EQ(predictP2pUs(op(CollType::AllReduce, 4 * m, 0), 2, 0, t, f), 0.0);
  // Sockets: finite and positive (SIMPLE unless LL is forced onto NET).
  const double sock = predictP2pUs(op(CollType::Send, 4 * m, 1), 2, 0, TransportClass::NetSocket, noLl);
  EXPECT_GT(sock, us4m);
  EXPECT_LT(sock, 1e9);
}

// Balanced transfers (BRAID_P2P_BALANCE_BYTES) over NVLink P2P take tuner_model.def's BRAID_TUNER_P2P_BALANCED row:
// within 10% of every point it was fitted to (2xH100, docs/TUNING.md), where the Simple row says 1.5-2x.
TEST(TunerP2p, BalancedEstimateNearMeasured) {
  const TransportClass t = TransportClass::P2pNvlink;
  const size_t m = size_t(1) << 20;
  auto facts = [](int bound) {
    P2pCutFacts f;
    f.cut = p2pCtaBudget(64, 4, bound, true);
    f.channelBytes = 65536;
    f.llThreshold = 16384;
    f.llSlots = true;
    f.balanceMinShare = m;
    return f;
  };
  // Rank 1 of 2 with peer or root 0, the ring neighbour (a peer of 1 would be a send to self, a local copy).
  auto op = [](CollType c, size_t bytes) { return p2pOp(c, bytes, 0); };
  struct Point {
    int bound;  // NCCL_MAX_CTAS (0: none)
    CollType coll;
    size_t mb;  // a transfer's size (a gather's: each peer's)
    double us;
  };
  const Point points[] = {
      {0, CollType::Send, 64, 208},     {0, CollType::Send, 128, 385},   {0, CollType::Send, 512, 1474},
      {17, CollType::Send, 32, 125},    {17, CollType::Send, 128, 450},  {17, CollType::Recv, 512, 1670},
      {20, CollType::Send, 32, 125},    {20, CollType::Send, 128, 425},  {20, CollType::Recv, 512, 1560},
      {22, CollType::Send, 32, 127.4},  {22, CollType::Send, 128, 413},  {22, CollType::Send, 512, 1543},
      {24, CollType::Send, 32, 123.5},  {24, CollType::Send, 128, 400},  {24, CollType::Send, 512, 1498},
      {32, CollType::Send, 128, 385.5}, {32, CollType::Send, 512, 1472}, {24, CollType::Gather, 64, 195.5},
      {24, CollType::Gather, 256, 732},
  };
  for (const Point& p : points) {
    const P2pCutFacts f = facts(p.bound);
    // Rank 1 of 2: a gather's sender to root 0, a send's or receive's peer is the ring neighbour.
    const double us = predictP2pUs(op(p.coll, p.mb * m), 2, 1, t, f);
    EXPECT_NEAR(us, p.us, 0.10 * p.us) << "bound " << p.bound << ", " << p.mb << " MB";
  }
  // The Simple row's estimate, which these replace (no balancing): 512 MB on 12 channels at ~2x.
  P2pCutFacts plain = facts(24);
  plain.balanceMinShare = 0;
  EXPECT_GT(predictP2pUs(op(CollType::Send, 512 * m), 2, 1, t, plain), 1.8 * 1498);
  // Paired CTAs run a channel's two directions on half a CTA each: slower a channel than a gather's whole CTAs.
  const P2pCutFacts b17 = facts(17);  // 17 paired channels stay under the cap; 20 reach it
  EXPECT_GT(predictP2pUs(op(CollType::Send, 128 * m), 2, 1, t, b17),
            predictP2pUs(op(CollType::Gather, 128 * m), 2, 1, t, b17));
  // Below the balance threshold (shares under 1 MiB): the Simple row, bounded by the balanced fit (8 MB on 12
  // channels: 55.2 us from the Simple row, 44.9 measured), so paired 17 keeps the Simple row's 46.4 (45.7 measured).
  const P2pCutFacts b24 = facts(24);
  EXPECT_LT(predictP2pUs(op(CollType::Send, 8 * m), 2, 1, t, b24),
            predictP2pUs(op(CollType::Send, 8 * m), 2, 1, t, plain));
  P2pCutFacts plain17 = b17;
  plain17.balanceMinShare = 0;
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 8 * m), 2, 1, t, b17),
                   predictP2pUs(op(CollType::Send, 8 * m), 2, 1, t, plain17));
  // A transport without a row (PCIe) keeps the Simple row.
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, 512 * m), 2, 1, TransportClass::P2pPcie, b24),
                   predictP2pUs(op(CollType::Send, 512 * m), 2, 1, TransportClass::P2pPcie, plain));
  // Where balancing starts the estimate does not drop: 16 KiB steps from 512 KiB to 96 MiB, every bound's cut and
  // two thresholds, never more than 6% below the size before (the Simple row's own cut changes: 5.6% at most). The
  // balanced fit alone dropped 18-19% at 1 MiB shares on 11-12 channels and 44% at 4 MiB.
  for (int bound : {0, 8, 10, 16, 17, 20, 22, 24}) {
    for (size_t minShare : {m, 4 * m}) {
      P2pCutFacts f = facts(bound);
      f.balanceMinShare = minShare;
      for (CollType c : {CollType::Send, CollType::Gather}) {
        double prev = 0;
        for (size_t b = 512 << 10; b <= 96 * m; b += 16 << 10) {
          const double us = predictP2pUs(op(c, b), 2, 1, t, f);
          ASSERT_GE(us, 0.94 * prev) << "bound " << bound << ", threshold " << minShare << ", " << b << " bytes";
          prev = us;
        }
      }
    }
  }
  // Doubling sizes never get cheaper, balanced or not, bounded or not.
  for (int bound : {0, 17, 24}) {
    double prev = 0;
    for (size_t b = 8; b <= (size_t(1) << 30); b *= 2) {
      const double us = predictP2pUs(op(CollType::Send, b), 2, 1, t, facts(bound));
      EXPECT_GE(us, prev) << bound << " " << b;
      prev = us;
    }
  }
}

// A send to or receive from the rank itself is a local copy on the launch's copy CTAs (BRAID_TUNER_LOCAL_COPY), not a
// transfer over the link: checked against the 2xH200 points it was fitted to (a 4 MiB share on one CTA 90 us; a
// 32 MiB copy on 3 CTAs, all-to-all's own share under a bound of 24, 247 us), fewer CTAs for small copies, the copy
// CTAs of the bound, and far below the ring estimate of the same bytes.
TEST(TunerP2p, SendToSelfIsALocalCopy) {
  const TransportClass t = TransportClass::P2pNvlink;
  auto facts = [](int copyCtas) {
    P2pCutFacts f;
    f.cut = p2pCtaBudget(64, copyCtas, -1, true);
    f.channelBytes = 65536;
    f.balanceMinShare = size_t(1) << 20;
    return f;
  };
  const auto op = p2pOp;
  const size_t m = size_t(1) << 20;
  EXPECT_NEAR(predictP2pUs(op(CollType::Send, 4 * m, 1), 2, 1, t, facts(1)), 90.0, 9.0);
  EXPECT_NEAR(predictP2pUs(op(CollType::Recv, 32 * m, 0), 2, 0, t, facts(3)), 247.0, 25.0);
  // 512 KiB takes 2 copy CTAs of 32, so it costs what 2 CTAs do.
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Send, m / 2, 1), 2, 1, t, facts(32)),
                   predictP2pUs(op(CollType::Send, m / 2, 1), 2, 1, t, facts(2)));
  EXPECT_LT(predictP2pUs(op(CollType::Send, 64 * m, 1), 2, 1, t, facts(32)),
            predictP2pUs(op(CollType::Send, 64 * m, 1), 2, 1, t, facts(8)));
  // 256 MiB on 32 CTAs (~1490 GB/s) against the ring transfer of the same bytes to the peer (~370 GB/s).
  const double self = predictP2pUs(op(CollType::Send, 256 * m, 1), 2, 1, t, facts(32));
  const double peer = predictP2pUs(op(CollType::Send, 256 * m, 0), 2, 1, t, facts(32));
  EXPECT_NEAR(self, 2.88 + 256.0 * m / (32 * 46.6) / 1e3, 1.0);
  EXPECT_GT(peer, 3 * self);
  // One rank: every op is to itself.
  EXPECT_DOUBLE_EQ(predictP2pUs(op(CollType::Recv, 64 * m, 0), 1, 0, t, facts(32)),
                   predictP2pUs(op(CollType::Send, 64 * m, 1), 2, 1, t, facts(32)));
}

}  // namespace
}  // namespace braid
