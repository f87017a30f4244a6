// The point-to-point plan across whole communicators (src/algo/p2p_plan.h): for n = 2 to 16 ranks, every rank's
// plan input built as GpuExecutor::launchP2p builds it (the ring neighbours on the ring's connections, every other
// peer on its own p2pPeerChannels connections, a rank's own share a local copy, a collective's transfers capped at
// p2pPeerChannels at n > 2, the CTA budget of p2pCtaBudget), for all-to-all, gather, scatter and random send/recv
// groups, unbounded and under CTA bounds; then peers over SHM and sockets, forced peer channels and groups mixing
// an all-to-all with sends and receives. Checked for every rank's plan and every pair of ranks:
//   1. every byte of every transfer and local copy is in exactly one block (a balanced transfer's blocks carry the
//      whole transfer, one on each of its channels);
//   2. on every connection channel the sender's blocks equal its receiver's, in order;
//   3. channels within their connections, the plan within the executor's launch (and refused one CTA or block
//      short, with the counts), no empty CTA, paired CTAs the ring's send and receive only;
//   4. every rank finishes in a model of the whole communicator where a send block completes only together with
//      its receive block (a rendezvous: no FIFO room at all), CTAs resident a few at a time in launch order;
// and p2pPeerChannels as documented. The checkers return their problems rather than fail, so the self-tests at
// the end show each can fail on a plan broken on purpose; the last test sizes collectives to one launch.
// (Two ranks in detail: p2p_plan_test.cc, p2p_plan_progress_test.cc.)
// The model and checkers: p2p_plan_peers_model.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <string>
#include <vector>

#include "p2p_plan_peers_model.h"

namespace braid {
namespace {

// Check 5: p2pPeerChannels as p2p_plan.h documents it.
TEST(P2pPlanPeers, PeerChannelsAsDocumented) {
  EXPECT_EQ(p2pPeerChannels(3, 64, -1, 0), 16);
  EXPECT_EQ(p2pPeerChannels(4, 64, -1, 0), 10);
  EXPECT_EQ(p2pPeerChannels(8, 64, -1, 0), 4);
  EXPECT_EQ(p2pPeerChannels(16, 64, -1, 0), 2);
  EXPECT_EQ(p2pPeerChannels(48, 64, -1, 0), 2);
  EXPECT_EQ(p2pPeerChannels(64, 64, -1, 0), 1);  // 2 a peer would pass one launch's 192 CTAs
  for (int n = 2; n <= 16; ++n) {
    const int others = n > 2 ? n - 1 : 1;
    const int fit = std::max(1, (kP2pLaunchCtas - 1) / (2 * others));  // every peer both ways and a copy CTA
    for (int nch : {1, 2, 3, 8, 32, 64}) {
      const int dflt = std::min(nch, std::max(2, std::min(16, 32 / others)));
      EXPECT_EQ(p2pPeerChannels(n, nch, -1, 0), dflt) << n << " ranks, " << nch << " channels";
      EXPECT_EQ(p2pPeerChannels(n, nch, 0, 0), dflt) << n << " ranks, " << nch << " channels, bound 0 (none)";
      for (int bound : {1, 2, 4, 8, 20, 24, 64, 192}) {
        const int v = p2pPeerChannels(n, nch, bound, 0);
        EXPECT_GE(v, 1);
        EXPECT_LE(v, std::max(1, bound / (2 * (n - 1)))) << n << " ranks, bound " << bound;
        EXPECT_LE(v, dflt) << n << " ranks, bound " << bound;
      }
      for (int forced : {1, 2, 3, 5, 16, 17, 40, 64}) {
        EXPECT_EQ(p2pPeerChannels(n, nch, -1, forced), std::min({forced, nch, fit})) << n << " ranks, forced " << forced;
        for (int bound : {8, 24, 192})
          EXPECT_EQ(p2pPeerChannels(n, nch, bound, forced),
                    std::max(1, std::min({forced, nch, fit, std::max(1, bound / (2 * (n - 1)))})))
              << n << " ranks, forced " << forced << ", bound " << bound;
      }
    }
  }
}

// Checks 1-4 on every communicator size, collective and budget. The sweep: all-to-all at five sizes, gather and
// scatter from the first and the last rank at two sizes, and random send/recv groups, under no bound and bounds
// of 8, 20 and 24 (pairing or not), on 32 and 64 ring channels, LL up to 16 KiB or off, balancing from 1 MiB or
// off.
TEST(P2pPlanPeers, EveryRankOfEveryCommunicatorFinishes) {
  const size_t kMiB = size_t(1) << 20;
  struct Budget {
    int bound;
    bool canPair;
  };
  const Budget budgets[] = {{-1, true}, {8, true}, {8, false}, {20, true}, {20, false}, {24, true}, {24, false}};
  std::mt19937_64 rng(20261128);
  Sweep sw;
  for (int n = 2; n <= 16; ++n) {
    for (int nch : {32, 64}) {
      for (const Budget& bud : budgets) {
        for (size_t ll : {size_t(16384), size_t(0)}) {
          for (size_t bal : {size_t(0), kMiB}) {
            CommSetup s;
            s.n = n;
            s.nChannels = nch;
            s.bound = bud.bound;
            s.canPair = bud.canPair;
            s.llThreshold = ll;
            s.balanceMinShare = bal;
            std::vector<std::pair<std::string, Group>> groups;
            for (size_t bytes : {size_t(8), size_t(1024), 100 * size_t(1024), 3 * kMiB + 13, 64 * kMiB})
              groups.push_back({"all-to-all of " + std::to_string(bytes), allToAll(n, bytes)});
            for (int root : {0, n - 1}) {
              for (size_t bytes : {size_t(40000), 24 * kMiB + 7}) {
                groups.push_back({"gather of " + std::to_string(bytes) + " to " + std::to_string(root),
                                  rooted(n, OpKind::Gather, root, bytes)});
                groups.push_back({"scatter of " + std::to_string(bytes) + " from " + std::to_string(root),
                                  rooted(n, OpKind::Scatter, root, bytes)});
              }
            }
            for (int k = 0; k < 2; ++k) {
              const uint64_t seed = rng();
              std::mt19937_64 g(seed);
              groups.push_back({"random send/recv group, seed " + std::to_string(seed), randomGroup(n, g)});
            }
            for (const auto& [what, group] : groups) sw.run(s, what, group);
          }
        }
      }
    }
  }
  EXPECT_EQ(sw.failed, 0) << "of " << sw.cases << " groups";
}

// Peers over SHM (at most 4 connections) and sockets (1, no LL), BRAID_P2P_PEER_CHANNELS forced from 1 to past
// the ring's channels, and groups mixing an all-to-all with random sends and receives (the all-to-all posted
// first on every rank, so each pair's order is the same on both ends).
TEST(P2pPlanPeers, MixedTransportsForcedPeersAndMixedGroups) {
  const size_t kMiB = size_t(1) << 20;
  std::mt19937_64 rng(7);
  Sweep sw;
  for (int n : {3, 4, 5, 8, 11, 16}) {
    for (int forced : {0, 1, 3}) {
      for (bool mixed : {false, true}) {
        for (auto [bound, canPair] : {std::pair<int, bool>{-1, true}, {8, false}, {20, true}, {24, true}}) {
          CommSetup s;
          s.n = n;
          s.nChannels = 32;
          s.bound = bound;
          s.canPair = canPair;
          s.balanceMinShare = kMiB;
          s.forcedPeerChannels = forced;
          s.mixedTransports = mixed;
          sw.run(s, "all-to-all of 3 MiB + 13", allToAll(n, 3 * kMiB + 13));
          sw.run(s, "all-to-all of 64 MiB", allToAll(n, 64 * kMiB));
          sw.run(s, "gather of 24 MiB + 7 to the last", rooted(n, OpKind::Gather, n - 1, 24 * kMiB + 7));
          sw.run(s, "scatter of 100 KiB from 0", rooted(n, OpKind::Scatter, 0, 100 * 1024));
          const uint64_t seed = rng();
          std::mt19937_64 g(seed);
          sw.run(s, "random send/recv group, seed " + std::to_string(seed), randomGroup(n, g));
          // An all-to-all, then a random group, in one group.
          const size_t bytes = size_t(1) << (rng() % 27);
          Group mix = randomGroup(n, g);
          const Group a2a = allToAll(n, bytes);
          for (int r = 0; r < n; ++r) {
            Op op = a2a[r][0];
            op.sendbuf = fakeBuf(100000 + 2 * r), op.recvbuf = fakeBuf(100001 + 2 * r);  // past randomGroup's
            mix[r].insert(mix[r].begin(), op);
          }
          sw.run(s, "all-to-all of " + std::to_string(bytes) + " and random group, seed " + std::to_string(seed), mix);
        }
      }
    }
  }
  EXPECT_EQ(sw.failed, 0) << "of " << sw.cases << " groups";
}

// The checks fail where they should: each on a plan broken on purpose (or, for the progress model, on a launch
// that does hang).
struct Broken {
  CommSetup s;
  std::vector<RankPlan> ranks;
  Broken(int n, const Group& g, size_t balance = size_t(1) << 20) {
    s.n = n;
    s.balanceMinShare = balance;
    ranks = planAll(s, g);
    for (const RankPlan& rp : ranks) EXPECT_TRUE(rp.ok) << rp.why;
    EXPECT_TRUE(checkGroup(s, ranks, kResidencies).empty()) << "intact";
  }
  // The first block of rank r's plan on a connection that is (not) the ring's and sends (or receives).
  P2pPlanBlock* find(int r, bool ring, bool isSend, bool balanced = false, bool ll = false) {
    for (P2pPlanBlock& b : ranks[r].plan.all)
      if (b.conn >= 0 && ranks[r].in.conns[b.conn].ring == ring && b.isSend == isSend && (b.balParts > 0) == balanced &&
          b.ll == ll)
        return &b;
    ADD_FAILURE() << "no such block";
    static P2pPlanBlock none{};
    return &none;
  }
  std::string problems() { return checkGroup(s, ranks, kResidencies).str(); }
};

TEST(P2pPlanPeers, ChecksCatchBrokenPlans) {
  const size_t kMiB = size_t(1) << 20;
  {  // 1: a share a byte short
    Broken b(4, allToAll(4, 3 * kMiB + 13));
    b.find(2, false, false)->bytes -= 1;
    Problems pr;
    checkCoverage(2, b.ranks[2], &pr);
    EXPECT_NE(pr.str().find("cover it"), std::string::npos) << pr.str();
  }
  {  // 1: a balanced transfer missing a channel (its block moved onto another)
    Broken b(2, allToAll(2, 64 * kMiB));
    P2pPlanBlock* x = b.find(0, true, true, true);
    ASSERT_GT(x->balParts, 1);
    x->channel = 1;
    Problems pr;
    checkCoverage(0, b.ranks[0], &pr);
    EXPECT_NE(pr.str().find("balanced over"), std::string::npos) << pr.str();
  }
  {  // 2: a receiver's share without LL where its sender's has it
    Broken b(5, allToAll(5, 100 * 1024));
    b.find(3, false, false, false, true)->ll = false;
    Problems pr;
    checkMatching(collect(b.ranks), &pr);
    EXPECT_NE(pr.str().find("ll 1, balanced 0; received"), std::string::npos) << pr.str();
  }
  {  // 2: a receiver cutting a collective's transfer from its ring neighbour over all the ring's channels, its
     // sender over the peers' p2pPeerChannels (6 at 6 ranks)
    CommSetup s;
    s.n = 6;
    std::vector<RankPlan> ranks = planAll(s, allToAll(6, 3 * kMiB + 13));
    ASSERT_TRUE(!ranks[4].in.conns[7].isSend && ranks[4].in.conns[7].ring && ranks[4].connPeer[7] == 3);
    for (P2pXfer& x : ranks[4].in.conns[7].xs) x.maxChannels = 0;
    ranks[4].ok = planP2p(ranks[4].in, &ranks[4].plan, &ranks[4].why);
    Problems pr;
    checkMatching(collect(ranks), &pr);
    EXPECT_NE(pr.str().find("3 -> 4 ring channel 0 block 0"), std::string::npos) << pr.str();
    EXPECT_EQ(pr.count, 6u + 19u) << pr.str();  // channels 0-5 differ, 6-24 only received
  }
  {  // 3: a block past its peer's connections
    Broken b(4, allToAll(4, 3 * kMiB + 13));
    b.ranks[1].in.conns[b.find(1, false, true)->conn].channels = 1;
    EXPECT_NE(b.problems().find("on channel 1 of a p2p connection of 1 channels"), std::string::npos) << b.problems();
  }
  {  // 3: an empty CTA
    Broken b(3, allToAll(3, 1024));
    b.ranks[0].plan.ctas.push_back(P2pPlanCta{false, b.ranks[0].plan.blocks, 0, 0});
    EXPECT_NE(b.problems().find("empty"), std::string::npos) << b.problems();
  }
  {  // 3: a paired CTA on a peer's own connection
    std::mt19937_64 rng(3);
    Broken b(4, randomGroup(4, rng));
    bool broke = false;
    for (P2pPlanCta& c : b.ranks[1].plan.ctas)
      if (!broke && !c.copy && c.count >= 2 && !b.ranks[1].in.conns[b.ranks[1].plan.all[c.first].conn].ring)
        c.split = 1, broke = true;
    ASSERT_TRUE(broke);
    EXPECT_NE(b.problems().find("not the ring's"), std::string::npos) << b.problems();
  }
  {  // 3: a plan past the launch
    Broken b(8, allToAll(8, 64 * kMiB));
    b.ranks[5].in.maxCtas = 10;
    EXPECT_NE(b.problems().find("more than the launch's 10"), std::string::npos) << b.problems();
  }
  {  // 4: one resident CTA a rank, both ranks sending first: the model hangs (so would the GPUs)
    Broken b(2, allToAll(2, 3 * kMiB + 13));
    std::string stuck;
    EXPECT_FALSE(runComm(collect(b.ranks), 1, &stuck));
    EXPECT_NE(stuck.find("rank 0 waits at send to 1 ring channel 0"), std::string::npos) << stuck;
  }
  {  // 4: a rank running its CTAs in reverse order, with 2 resident (all resident: it finishes)
    Broken b(4, allToAll(4, 3 * kMiB + 13));
    std::reverse(b.ranks[2].plan.ctas.begin(), b.ranks[2].plan.ctas.end());
    std::string stuck;
    EXPECT_FALSE(runComm(collect(b.ranks), 2, &stuck));
    EXPECT_TRUE(runComm(collect(b.ranks), INT_MAX, &stuck));
  }
}

// A single collective always fits one launch (kMaxP2pCtas = 192), whatever BRAID_P2P_PEER_CHANNELS forces (1 to
// 64) and from 49 ranks on, where the floor of 2 channels a peer would not: launchP2p would refuse it ("split the
// group", which a collective cannot be), and where the ranks' counts differ (a gather's root and the others, peers
// on different transports) some ranks would refuse while the rest launch and wait for them.
TEST(P2pPlanPeers, EveryCollectiveFitsOneLaunchWhateverThePeerChannels) {
  const size_t kMiB = size_t(1) << 20;
  struct Case {
    int n, forced;
    bool mixed;
    OpKind kind;
    size_t bytes;
  } cases[] = {
      {8, 16, false, OpKind::AllToAll, kMiB},          // 2 x 7 peers x 16 channels: 224 CTAs on every rank
      {16, 16, false, OpKind::Gather, 24 * kMiB + 7},  // the root: 15 x 16 = 240 CTAs; the others launch
      {8, 64, true, OpKind::AllToAll, 64 * kMiB},      // peers over SHM get 4 channels, over sockets 1: ranks 2, 5 fit
      {64, 0, false, OpKind::AllToAll, 20000},         // the default: 2 x 63 x 2 = 252 CTAs
      {97, 0, false, OpKind::Gather, 64 * 1024},       // the default: the root 96 x 2 and a copy CTA
  };
  for (const Case& c : cases) {
    CommSetup s;
    s.n = c.n;
    s.nChannels = 32;
    s.forcedPeerChannels = c.forced;
    s.mixedTransports = c.mixed;
    const Group g = c.kind == OpKind::AllToAll ? allToAll(c.n, c.bytes) : rooted(c.n, c.kind, c.n - 1, c.bytes);
    const std::vector<RankPlan> ranks = planAll(s, g);
    const Problems agreed = checkGroup(s, ranks, {INT_MAX}, true, true);
    EXPECT_TRUE(agreed.empty()) << s.str() << ": the ranks disagree:" << agreed.str();
    const Problems fits = checkGroup(s, ranks, {INT_MAX});
    EXPECT_TRUE(fits.empty()) << s.str() << ":" << fits.str();
  }
}

}  // namespace
}  // namespace braid
