// The tuning agreement (tuning_agreement.h) between real communicators: three ranks as threads of this process
// (host communicators over the real bootstrap), each offering a different environment; every rank must come
// out with the same configuration: the protocols and algorithms all allow, the largest minimum channel count,
// rank 0's sizes, step settings and split switch, the smallest CTA bound any rank set, the GPU facts ANDed
// (paths) or maxed (transport class).
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "collectives/tuning_agreement.h"
#include "core/comm.h"
#include "nccl.h"

namespace braid {
namespace {

struct Offered {
  TunerConfig cfg;
  TuningFacts facts;
};

Offered offerOf(int rank) {
  Offered o;
  o.cfg.minChannels = rank == 2 ? 6 : 2;
  o.cfg.buffSize = (rank == 0 ? 8 : 4) << 20;
  o.cfg.pipelineSteps = rank == 0 ? 3 : 0;
  o.cfg.oneShotSplit = rank != 0;  // rank 0 says no: everyone must run unsplit (the step cap depends on it)
  o.cfg.maxCtas = rank == 0 ? -1 : (rank == 1 ? 96 : 40);  // the smallest bound any rank set: 40
  // Rank 1 forbids LL128 for all-reduce; rank 2 allows only Ring for broadcast.
  if (rank == 1) o.cfg.protos.mask[static_cast<int>(CollType::AllReduce)] &= ~bit(Proto::LL128);
  if (rank == 2) o.cfg.algos.mask[static_cast<int>(CollType::Broadcast)] = bit(Algo::Ring);
  o.facts.llPath = rank == 1 ? 0 : 1;
  o.facts.ll128Path = 1;
  o.facts.transport = rank == 2 ? static_cast<int32_t>(TransportClass::HostShm) : 0;
  o.facts.tunerOn = rank == 0 ? 1 : 0;
  o.facts.p2pLlThreshold = 1000u * static_cast<uint32_t>(rank + 1);
  o.facts.p2pChannelBytes = 16384u << rank;
  o.facts.p2pPieces = 2u + static_cast<uint32_t>(rank);
  return o;
}

TEST(TuningAgreement, EveryRankGetsTheSameConfiguration) {
  setenv("BRAID_HOST_COMM", "1", 1);  // host communicators even where GPUs exist: only the bootstrap matters
  constexpr int kRanks = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<TunerConfig> got(kRanks);
  std::vector<TuningFacts> facts(kRanks);
  std::vector<ncclResult_t> res(kRanks, ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      if ((res[r] = ncclCommInitRank(&comm, kRanks, id, r)) != ncclSuccess) return;
      const Offered o = offerOf(r);
      res[r] = agreeTuning(comm, o.cfg, o.facts, &got[r], &facts[r]);
      ncclCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  unsetenv("BRAID_HOST_COMM");
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(res[r], ncclSuccess) << "rank " << r;
    const TunerConfig& c = got[r];
    EXPECT_EQ(c.minChannels, 6) << r;
    EXPECT_EQ(c.buffSize, 8 << 20) << r;
    EXPECT_EQ(c.pipelineSteps, 3) << r;
    EXPECT_FALSE(c.oneShotSplit) << r;
    EXPECT_EQ(c.maxCtas, 40) << r;
    EXPECT_EQ(c.protos.mask[static_cast<int>(CollType::AllReduce)], kAllProtosMask & ~bit(Proto::LL128)) << r;
    EXPECT_EQ(c.algos.mask[static_cast<int>(CollType::Broadcast)], bit(Algo::Ring)) << r;
    EXPECT_TRUE(c.protos.overridden && c.algos.overridden) << r;
    const TuningFacts& f = facts[r];
    EXPECT_EQ(f.llPath, 0u) << r;
    EXPECT_EQ(f.ll128Path, 1u) << r;
    EXPECT_EQ(f.transport, static_cast<int32_t>(TransportClass::HostShm)) << r;
    EXPECT_EQ(f.tunerOn, 1) << r;
    EXPECT_EQ(f.p2pLlThreshold, 1000u) << r;
    EXPECT_EQ(f.p2pChannelBytes, 16384u) << r;
    EXPECT_EQ(f.p2pPieces, 2u) << r;
  }
}

}  // namespace
}  // namespace braid
