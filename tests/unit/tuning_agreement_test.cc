// The tuning agreement (tuning_agreement.h) between real communicators: three ranks as threads of this process
// (host communicators over the real bootstrap), each offering a different environment; every rank must come
// out with the same configuration: the protocols and algorithms all allow, the largest minimum channel count,
// rank 0's sizes, step settings and split switch, the smallest CTA bound any rank set, the GPU facts ANDed
// (paths) or maxed (transport class). And the CTA bound a config sets (maxCTAs, CTAPolicy), inherited by splits.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm.h"
#include "runtime/tuning_agreement.h"
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
  o.cfg.maxP2pCtas = rank == 1 ? -1 : (rank == 0 ? 16 : 24);  // NCCL_MAX_P2P_NCHANNELS alike: 16
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
  o.facts.clusterRing = rank == 1 ? 0u : 1u;  // rank 1's ring launches plainly: nobody may count on clusters
  o.facts.clusterThree = rank == 1 ? 0u : 1u;
  return o;
}

// Runs agreeTuning on nRanks host communicators (threads of this process), each offering offer(rank); what
// every rank came out with.
struct AgreedAll {
  std::vector<TunerConfig> cfg;
  std::vector<TuningFacts> facts;
};
AgreedAll agreeAll(int nRanks, const std::function<Offered(int)>& offer) {
  setenv("BRAID_HOST_COMM", "1", 1);  // host communicators even where GPUs exist: only the bootstrap matters
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  AgreedAll got{std::vector<TunerConfig>(nRanks), std::vector<TuningFacts>(nRanks)};
  std::vector<ncclResult_t> res(nRanks, ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < nRanks; ++r)
    threads.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      if ((res[r] = ncclCommInitRank(&comm, nRanks, id, r)) != ncclSuccess) return;
      const Offered o = offer(r);
      res[r] = agreeTuning(comm, o.cfg, o.facts, &got.cfg[r], &got.facts[r]);
      ncclCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  unsetenv("BRAID_HOST_COMM");
  for (int r = 0; r < nRanks; ++r) EXPECT_EQ(res[r], ncclSuccess) << "rank " << r;
  return got;
}

TEST(TuningAgreement, EveryRankGetsTheSameConfiguration) {
  constexpr int kRanks = 3;
  const AgreedAll got = agreeAll(kRanks, offerOf);
  for (int r = 0; r < kRanks; ++r) {
    const TunerConfig& c = got.cfg[r];
    EXPECT_EQ(c.minChannels, 6) << r;
    EXPECT_EQ(c.buffSize, 8 << 20) << r;
    EXPECT_EQ(c.pipelineSteps, 3) << r;
    EXPECT_FALSE(c.oneShotSplit) << r;
    EXPECT_EQ(c.maxCtas, 40) << r;
    EXPECT_EQ(c.maxP2pCtas, 16) << r;
    EXPECT_EQ(p2pMaxCtas(c), 16) << r;
    EXPECT_EQ(c.protos.mask[static_cast<int>(CollType::AllReduce)], kAllProtosMask & ~bit(Proto::LL128)) << r;
    EXPECT_EQ(c.algos.mask[static_cast<int>(CollType::Broadcast)], bit(Algo::Ring)) << r;
    EXPECT_TRUE(c.protos.overridden && c.algos.overridden) << r;
    const TuningFacts& f = got.facts[r];
    EXPECT_EQ(f.llPath, 0u) << r;
    EXPECT_EQ(f.ll128Path, 1u) << r;
    EXPECT_EQ(f.transport, static_cast<int32_t>(TransportClass::HostShm)) << r;
    EXPECT_EQ(f.tunerOn, 1) << r;
    EXPECT_EQ(f.p2pLlThreshold, 1000u) << r;
    EXPECT_EQ(f.p2pChannelBytes, 16384u) << r;
    EXPECT_EQ(f.p2pPieces, 2u) << r;
    EXPECT_EQ(f.clusterRing, 0u) << r;
    EXPECT_EQ(f.clusterThree, 0u) << r;
  }
}

// Where every rank's ring launches in clusters, every rank learns so (the clustered ring may then replace the
// unsplit one-shot all-reduce on all of them); one plain rank turns it off for all (above).
TEST(TuningAgreement, ClusteredRingsOnlyWhereEveryRankHasThem) {
  const AgreedAll got = agreeAll(2, [](int r) {
    Offered o = offerOf(r);
    o.facts.clusterRing = 1;
    return o;
  });
  for (const TuningFacts& f : got.facts) EXPECT_EQ(f.clusterRing, 1u);
}

// P2p pairing likewise (TuningFacts::p2pPair): one rank whose NCCL_NTHREADS cannot pair keeps every rank on half
// a small CTA bound, so both sides cut p2p transfers alike and the bound holds.
TEST(TuningAgreement, P2pPairingOnlyWhereEveryRankCan) {
  for (int cannot : {-1, 0, 1}) {
    const AgreedAll got = agreeAll(2, [cannot](int r) {
      Offered o = offerOf(r);
      o.facts.p2pPair = r == cannot ? 0u : 1u;
      return o;
    });
    for (const TuningFacts& f : got.facts) EXPECT_EQ(f.p2pPair, cannot < 0 ? 1u : 0u) << cannot;
  }
}

// A tuner plugin tunes a communicator only where every rank loaded the same one (name and table version): one rank
// without it, or with another, and none does, so no two ranks plan a collective apart.
TEST(TuningAgreement, TunerPluginOnlyWhereEveryRankLoadedTheSame) {
  const uint32_t a = tunerPluginId("BraidTestTuner", 5), b = tunerPluginId("BraidTestTuner", 4);
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  for (int odd : {-1, 0, 2}) {
    for (uint32_t other : {0u, b}) {
      const AgreedAll got = agreeAll(3, [&](int r) {
        Offered o = offerOf(r);
        o.facts.tunerPlugin = r == odd ? other : a;
        return o;
      });
      for (const TuningFacts& f : got.facts) EXPECT_EQ(f.tunerPlugin, odd < 0 ? a : 0u) << odd << " " << other;
    }
  }
}

// The one-shot and two-shot of more than two ranks: every rank reaches every peer over P2P or SHM (AND), the channels follow any
// rank's SHM peer (OR), and the byte thresholds, bytes per channel and peer channels are rank 0's, so all plan it alike.
TEST(TuningAgreement, OneShotOverPeersAgreedAcrossRanks) {
  for (int odd : {-1, 0, 2}) {
    const AgreedAll got = agreeAll(3, [odd](int r) {
      Offered o = offerOf(r);
      o.facts.peersReachable = r == odd ? 0u : 1u;
      o.facts.peersShm = r == odd ? 1u : 0u;
      o.facts.oneShotPeersBytes = 1000u * static_cast<uint32_t>(r + 1);
      o.facts.twoShotPeersBytes = 7000u * static_cast<uint32_t>(r + 1);
      o.facts.peersChannelBytes = 300u + static_cast<uint32_t>(r);
      o.facts.p2pPeerChannels = 5 + r;
      return o;
    });
    for (const TuningFacts& f : got.facts) {
      EXPECT_EQ(f.peersReachable, odd < 0 ? 1u : 0u) << odd;
      EXPECT_EQ(f.peersShm, odd < 0 ? 0u : 1u) << odd;
      EXPECT_EQ(f.oneShotPeersBytes, 1000u) << odd;
      EXPECT_EQ(f.twoShotPeersBytes, 7000u) << odd;
      EXPECT_EQ(f.peersChannelBytes, 300u) << odd;
      EXPECT_EQ(f.p2pPeerChannels, 5) << odd;
    }
  }
}

// Clusters of 3 likewise: one rank in clusters of 4 (its user set the size, or 3 did not fit) turns the fact
// off for every rank, so all keep the unsplit one-shot where clusters of 4 lose (tuner_model.def).
TEST(TuningAgreement, ClustersOfThreeOnlyWhereEveryRankHasThem) {
  for (int four : {-1, 0, 1}) {
    const AgreedAll got = agreeAll(2, [four](int r) {
      Offered o = offerOf(r);
      o.facts.clusterRing = 1;
      o.facts.clusterThree = r == four ? 0u : 1u;
      return o;
    });
    for (const TuningFacts& f : got.facts) EXPECT_EQ(f.clusterThree, four < 0 ? 1u : 0u) << four;
  }
}

// config.CTAPolicy EFFICIENCY bounds the communicator's CTAs to kEfficiencyPolicyCtas (a smaller maxCTAs or
// a larger minCTAs wins; ZERO counts as EFFICIENCY), and ncclCommSplit without a config inherits the parent's
// bounds and policy, and its config.cgaClusterSize (NCCL: a NULL config inherits the parent's).
TEST(CtaPolicy, EfficiencyBoundsCtasAndSplitsInheritIt) {
  setenv("BRAID_HOST_COMM", "1", 1);
  auto initOne = [](int policy, int minCtas, int maxCtas, ncclComm_t* comm) {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return ncclInternalError;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.CTAPolicy = policy;
    if (minCtas > 0) cfg.minCTAs = minCtas;
    if (maxCtas > 0) cfg.maxCTAs = maxCtas;
    return ncclCommInitRankConfig(comm, 1, id, 0, &cfg);
  };
  struct Case {
    int policy, minCtas, maxCtas, wantMax;
  };
  // NCCL_CTA_POLICY overrides the config's policy; a value with unknown bits is ignored (with a warning).
  for (const char* env : {"1", "2"}) {
    setenv("NCCL_CTA_POLICY", env, 1);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(initOne(NCCL_CTA_POLICY_DEFAULT, -1, -1, &comm), ncclSuccess);
    EXPECT_EQ(comm->config.maxChannels, 24) << env;
    ncclCommDestroy(comm);
  }
  setenv("NCCL_CTA_POLICY", "7", 1);
  {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(initOne(NCCL_CTA_POLICY_DEFAULT, -1, -1, &comm), ncclSuccess);
    EXPECT_EQ(comm->config.maxChannels, -1);
    ncclCommDestroy(comm);
  }
  unsetenv("NCCL_CTA_POLICY");
  for (const Case& c : {Case{NCCL_CTA_POLICY_DEFAULT, -1, -1, -1}, Case{NCCL_CTA_POLICY_EFFICIENCY, -1, -1, 24},
                        Case{NCCL_CTA_POLICY_ZERO, -1, -1, 24}, Case{NCCL_CTA_POLICY_EFFICIENCY, -1, 16, 16},
                        Case{NCCL_CTA_POLICY_EFFICIENCY, -1, 40, 24}, Case{NCCL_CTA_POLICY_EFFICIENCY, 32, -1, 32},
                        Case{NCCL_CTA_POLICY_DEFAULT, -1, 40, 40}}) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(initOne(c.policy, c.minCtas, c.maxCtas, &comm), ncclSuccess) << c.policy << " " << c.maxCtas;
    EXPECT_EQ(comm->config.maxChannels, c.wantMax) << c.policy << " " << c.minCtas << " " << c.maxCtas;
    EXPECT_EQ(comm->config.ctaPolicy, c.policy);
    ncclCommDestroy(comm);
  }
  constexpr int kRanks = 2;
  // Splits without a config: under the efficiency policy, and under the default one with maxCTAs 40 (the bound
  // itself must be inherited, not only recomputed from the policy).
  for (int policy : {NCCL_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_DEFAULT}) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<int> childMax(kRanks, 0), childPolicy(kRanks, 0), childMin(kRanks, 0), childCluster(kRanks, 0);
    std::vector<std::string> childName(kRanks);
    std::vector<ncclResult_t> res(kRanks, ncclInternalError);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.CTAPolicy = policy;
        cfg.minCTAs = 2;
        cfg.commName = "dp-group";
        cfg.cgaClusterSize = 2;
        if (policy == NCCL_CTA_POLICY_DEFAULT) cfg.maxCTAs = 40;
        ncclComm_t comm = nullptr, child = nullptr;
        if ((res[r] = ncclCommInitRankConfig(&comm, kRanks, id, r, &cfg)) != ncclSuccess) return;
        if ((res[r] = ncclCommSplit(comm, 0, r, &child, nullptr)) == ncclSuccess) {
          childMax[r] = child->config.maxChannels;
          childMin[r] = child->config.minChannels;
          childPolicy[r] = child->config.ctaPolicy;
          childName[r] = child->config.name;
          childCluster[r] = child->config.cgaClusterSize;
          ncclCommDestroy(child);
        }
        ncclCommDestroy(comm);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(res[r], ncclSuccess) << "rank " << r;
      EXPECT_EQ(childMax[r], policy == NCCL_CTA_POLICY_DEFAULT ? 40 : 24) << r;
      EXPECT_EQ(childMin[r], 2) << r;
      EXPECT_EQ(childPolicy[r], policy) << r;
      EXPECT_EQ(childName[r], "dp-group") << r;
      EXPECT_EQ(childCluster[r], 2) << r;
    }
  }
  unsetenv("BRAID_HOST_COMM");
}

}  // namespace
}  // namespace braid
