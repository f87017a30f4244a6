// The point-to-point plan's progress (src/algo/p2p_plan.h): a model of two ranks running their groups as
// launches, CTAs resident a few at a time, finishes for any grouping on either side, unbounded and under a CTA
// bound. Split from p2p_plan_test.cc, which checks the plans themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "algo/p2p_plan.h"
#include "p2p_plan_fixtures.h"

namespace braid {
namespace {

using namespace p2p_plan_fixtures;

// A model of two ranks running their groups as launches on one stream each: a send share waits while its
// channel's FIFO is full, a receive while it is empty. At most `resident` CTAs of a launch run at once, in
// launch order, a finished one making room for the next (a GPU with fewer SMs than the launch has CTAs, or
// one shared with other work). Whatever the two ranks group, every launch must finish.
struct SimBlock {
  bool send;
  int channel;
  size_t bytes;
};
// A CTA runs one list of blocks in order, or a paired CTA two lists side by side (its warp groups).
struct SimCta {
  std::vector<SimBlock> blocks[2];
  size_t at[2] = {0, 0}, done[2] = {0, 0};
  bool finished() const { return at[0] == blocks[0].size() && at[1] == blocks[1].size(); }
};
using SimLaunch = std::vector<SimCta>;

// bounded: under a CTA bound (p2pCtaBudget: the ring on all nChannels paired, LL-sized transfers on half).
SimLaunch simLaunch(const std::vector<size_t>& sends, const std::vector<size_t>& recvs, int nChannels,
                    bool bounded = false) {
  P2pPlanInput in = input(nChannels);
  if (bounded) in.llChannels = std::max(1, nChannels / 2), in.pairRing = true;
  if (!sends.empty()) in.conns.push_back(ringConn(true, nChannels, sends, 0));
  if (!recvs.empty()) in.conns.push_back(ringConn(false, nChannels, recvs, 100));
  P2pPlanLaunch plan;
  std::string why;
  EXPECT_TRUE(planP2p(in, &plan, &why)) << why;
  SimLaunch l;
  for (const P2pPlanCta& c : plan.ctas) {
    SimCta cta;
    int i = 0;
    for (const P2pPlanBlock& b : plan.blocksOf(c))
      cta.blocks[c.split > 0 && i++ >= c.split].push_back({b.isSend, b.channel, b.bytes});
    l.push_back(cta);
  }
  return l;
}

// Runs both ranks' launches; false when nothing can move (a deadlock).
bool simRun(std::vector<SimLaunch> ranks[2], size_t fifoBytes, size_t resident = 1u << 30) {
  std::map<std::pair<int, int>, size_t> inFlight;  // (sending rank, channel) -> bytes in the FIFO
  size_t cur[2] = {0, 0};
  for (;;) {
    bool moved = false;
    for (int r = 0; r < 2; ++r) {
      if (cur[r] == ranks[r].size()) continue;
      SimLaunch& l = ranks[r][cur[r]];
      size_t running = 0, finished = 0;
      for (SimCta& c : l) {
        if (c.finished()) {
          ++finished;
          continue;
        }
        if (running++ == resident) break;  // launched in order; not yet on an SM
        for (int g = 0; g < 2; ++g) {
          while (c.at[g] < c.blocks[g].size()) {
            const SimBlock& b = c.blocks[g][c.at[g]];
            size_t& f = inFlight[{b.send ? r : 1 - r, b.channel}];
            const size_t n = std::min(b.bytes - c.done[g], b.send ? fifoBytes - f : f);
            if (n == 0 && c.done[g] < b.bytes) break;
            f = b.send ? f + n : f - n;
            c.done[g] += n;
            if (c.done[g] == b.bytes) c.at[g]++, c.done[g] = 0;
            moved = true;
          }
        }
      }
      if (finished == l.size()) cur[r]++, moved = true;
    }
    if (cur[0] == ranks[0].size() && cur[1] == ranks[1].size()) return true;
    if (!moved) return false;
  }
}

TEST(P2pPlan, AnyGroupingOnEitherSideFinishes) {
  const size_t gb = size_t(1) << 30, fifo = size_t(4) << 20;
  {
    // The model does find deadlocks: both ranks send 64 MB over one channel before receiving, in separate
    // launches, through a 4 MiB FIFO (a program that hangs with NCCL too).
    std::vector<SimLaunch> ranks[2];
    for (int r = 0; r < 2; ++r) {
      ranks[r].push_back(simLaunch({size_t(64) << 20}, {}, 1));
      ranks[r].push_back(simLaunch({}, {size_t(64) << 20}, 1));
    }
    EXPECT_FALSE(simRun(ranks, fifo));
  }
  // 1 GB each way on 64 channels (16 MiB per channel share, 4 MiB FIFOs) with as few as 2 resident CTAs.
  for (size_t resident : {2, 3, 40, 64, 132}) {
    std::vector<SimLaunch> ranks[2];
    for (int r = 0; r < 2; ++r) ranks[r].push_back(simLaunch({gb}, {gb}, 64));
    EXPECT_TRUE(simRun(ranks, fifo, resident)) << resident << " resident CTAs";
  }
  // Random pairs, grouped at random: rank 0 posts send i and receive i in the same group. Rank 1 groups its
  // pairs at random too, or keeps rank 0's groups but may split one into a receive-only and a send-only group
  // (either order: rank 0 runs both directions at once). Splitting a pair across other windows would be a
  // program that hangs with NCCL as well. Random residency from 2 CTAs up.
  const size_t pool[] = {5, 16384, (size_t(1) << 20) + 3, size_t(8) << 20, size_t(64) << 20};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t k = 1 + rng() % 6;
    std::vector<size_t> a, b;  // rank 0 sends a[i] and receives b[i]
    for (size_t i = 0; i < k; ++i) a.push_back(pool[rng() % 5]), b.push_back(pool[rng() % 5]);
    std::vector<SimLaunch> ranks[2];
    std::vector<std::pair<size_t, size_t>> windows;
    for (size_t at = 0; at < k;) {
      const size_t take = 1 + rng() % (k - at);
      windows.push_back({at, take});
      ranks[0].push_back(
          simLaunch({a.begin() + at, a.begin() + at + take}, {b.begin() + at, b.begin() + at + take}, 64));
      at += take;
    }
    const bool sameWindows = rng() % 2;
    if (!sameWindows) {
      windows.clear();
      for (size_t at = 0; at < k;) {
        const size_t take = 1 + rng() % (k - at);
        windows.push_back({at, take});
        at += take;
      }
    }
    for (auto [at, take] : windows) {
      std::vector<size_t> out(b.begin() + at, b.begin() + at + take), in(a.begin() + at, a.begin() + at + take);
      switch (sameWindows ? rng() % 3 : 0) {
        case 0:
          ranks[1].push_back(simLaunch(out, in, 64));
          break;
        case 1:
          ranks[1].push_back(simLaunch({}, in, 64)), ranks[1].push_back(simLaunch(out, {}, 64));
          break;
        default:
          ranks[1].push_back(simLaunch(out, {}, 64)), ranks[1].push_back(simLaunch({}, in, 64));
          break;
      }
    }
    // Groups that differ between the ranks finish when every CTA of a launch is resident (as NCCL needs
    // too: its p2p CTAs each run both directions of a channel, and it launches fewer than the SMs). With
    // fewer resident, only identical groups are safe: then each resident CTA's peer is resident as well.
    const size_t resident = 2 + rng() % 131;
    std::vector<SimLaunch> few[2] = {ranks[0], ranks[1]};
    EXPECT_TRUE(simRun(ranks, fifo)) << "trial " << trial << ": " << k << " pairs, all CTAs resident";
    if (sameWindows && ranks[1].size() == ranks[0].size())
      EXPECT_TRUE(simRun(few, fifo, resident))
          << "trial " << trial << ": " << k << " pairs, " << resident << " resident";
  }
}

// Under a bound (8 or 20 channels, paired; channels holding an LL block keep a send and a receive CTA, channel by
// channel): random pairs grouped alike on both ranks finish with every CTA resident and with as few as 2.
TEST(P2pPlan, AnyGroupingUnderABoundFinishes) {
  const size_t fifo = size_t(16) << 20;
  const size_t pool[] = {5, 16384, 65536, (size_t(1) << 20) + 3, size_t(8) << 20, size_t(256) << 20};
  std::mt19937 rng(13);
  // Paired over the whole bound: 8, and 20 (kP2pPairMaxCtas, the largest bound that pairs).
  for (int nch : {8, kP2pPairMaxCtas}) {
    for (int trial = 0; trial < 200; ++trial) {
      const size_t k = 1 + rng() % 5;
      std::vector<size_t> a, b;
      for (size_t i = 0; i < k; ++i) a.push_back(pool[rng() % 6]), b.push_back(pool[rng() % 6]);
      std::vector<SimLaunch> ranks[2];
      for (size_t at = 0; at < k;) {
        const size_t take = 1 + rng() % (k - at);
        ranks[0].push_back(
            simLaunch({a.begin() + at, a.begin() + at + take}, {b.begin() + at, b.begin() + at + take}, nch, true));
        ranks[1].push_back(
            simLaunch({b.begin() + at, b.begin() + at + take}, {a.begin() + at, a.begin() + at + take}, nch, true));
        at += take;
      }
      std::vector<SimLaunch> few[2] = {ranks[0], ranks[1]};
      EXPECT_TRUE(simRun(ranks, fifo)) << nch << " channels, trial " << trial;
      EXPECT_TRUE(simRun(few, fifo, 2 + rng() % 8)) << nch << " channels, trial " << trial << ", few resident";
    }
  }
}

}  // namespace
}  // namespace braid
