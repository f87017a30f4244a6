// The tuning agreement (tuning_agreement.h): one allGather of each rank's tuning environment at init.
#include "runtime/tuning_agreement.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/param.h"  // foldBounds
#include "core/peer_info.h"
#include "core/result.h"
#include "runtime/comm.h"

namespace braid {

namespace {
// Plain bytes on the wire (memset first, so padding is defined: tail padding at most).
struct Offer {
  uint32_t llPath;
  int32_t transport;
  int32_t tunerOn;
  int32_t minChannels;
  int32_t pipelineSteps;
  uint32_t ll128Path;
  uint32_t p2pLlThreshold;
  uint32_t p2pChannelBytes;
  uint32_t p2pPieces;
  int32_t oneShotSplit;
  int32_t maxCtas;   // -1: unbounded
  uint32_t clusterRing;  // also keeps buffSize 8-aligned without padding
  int64_t buffSize;
  uint32_t protos[kNumCollTypes];
  uint32_t algos[kNumCollTypes];
  uint32_t clusterThree;
  uint32_t p2pPair;
  uint32_t p2pBalanceBytes;
  int32_t maxP2pCtas;  // -1: unbounded
  int32_t p2pPeerChannels;
  uint32_t peersReachable;
  uint32_t peersShm;
  uint32_t oneShotPeersBytes;
  uint32_t twoShotPeersBytes;
  uint32_t peersChannelBytes;
  int32_t ringIntra;
  uint32_t tunerPlugin;
  uint32_t pad;
};
}  // namespace

uint32_t tunerPluginId(const char* name, int version) {
  const uint64_t h = fnv1a(std::string(name ? name : "") + "|v" + std::to_string(version));
  const uint32_t folded = static_cast<uint32_t>(h ^ (h >> 32));
  return folded ? folded : 1;
}

ncclResult_t agreeTuning(ncclComm_t comm, const TunerConfig& local, const TuningFacts& facts, TunerConfig* cfg,
                         TuningFacts* agreed) {
  std::vector<Offer> all(comm->nranks);
  Offer& mine = all[comm->rank];
  std::memset(&mine, 0, sizeof(mine));
  mine.llPath = facts.llPath;
  mine.ll128Path = facts.ll128Path;
  mine.transport = facts.transport;
  mine.tunerOn = facts.tunerOn;
  mine.p2pLlThreshold = facts.p2pLlThreshold;
  mine.p2pChannelBytes = facts.p2pChannelBytes;
  mine.p2pPieces = facts.p2pPieces;
  mine.p2pBalanceBytes = facts.p2pBalanceBytes;
  mine.p2pPeerChannels = facts.p2pPeerChannels;
  mine.peersReachable = facts.peersReachable;
  mine.peersShm = facts.peersShm;
  mine.oneShotPeersBytes = facts.oneShotPeersBytes;
  mine.twoShotPeersBytes = facts.twoShotPeersBytes;
  mine.peersChannelBytes = facts.peersChannelBytes;
  mine.ringIntra = facts.ringIntra;
  mine.tunerPlugin = facts.tunerPlugin;
  mine.clusterRing = facts.clusterRing;
  mine.clusterThree = facts.clusterThree;
  mine.p2pPair = facts.p2pPair;
  mine.minChannels = local.minChannels;
  mine.pipelineSteps = local.pipelineSteps;
  mine.oneShotSplit = local.oneShotSplit ? 1 : 0;
  mine.maxCtas = local.maxCtas > 0 ? local.maxCtas : -1;
  mine.maxP2pCtas = local.maxP2pCtas > 0 ? local.maxP2pCtas : -1;
  mine.buffSize = local.buffSize;
  for (int c = 0; c < kNumCollTypes; ++c) {
    mine.protos[c] = local.protos.mask[c];
    mine.algos[c] = local.algos.mask[c];
  }
  const Offer own = mine;
  BRAID_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Offer)));

  TunerConfig out = local;
  TuningFacts f;
  f.llPath = 1;
  f.ll128Path = 1;
  f.clusterRing = 1;
  f.clusterThree = 1;
  f.p2pPair = 1;
  f.transport = 0;
  f.ringIntra = 0;
  f.tunerOn = all[0].tunerOn;
  f.tunerPlugin = all[0].tunerPlugin;
  bool pluginsDiffer = false;
  f.p2pLlThreshold = all[0].p2pLlThreshold;
  f.p2pChannelBytes = all[0].p2pChannelBytes;
  f.p2pPieces = all[0].p2pPieces;
  f.p2pBalanceBytes = all[0].p2pBalanceBytes;
  f.p2pPeerChannels = all[0].p2pPeerChannels;
  f.oneShotPeersBytes = all[0].oneShotPeersBytes;
  f.twoShotPeersBytes = all[0].twoShotPeersBytes;
  f.peersChannelBytes = all[0].peersChannelBytes;
  f.peersReachable = 1;
  f.peersShm = 0;
  out.buffSize = all[0].buffSize;
  out.pipelineSteps = all[0].pipelineSteps;
  out.oneShotSplit = all[0].oneShotSplit != 0;
  out.maxCtas = -1;
  out.maxP2pCtas = -1;
  bool differ = false;
  for (int c = 0; c < kNumCollTypes; ++c) out.protos.mask[c] = out.algos.mask[c] = ~0u;
  for (const Offer& o : all) {
    f.llPath &= o.llPath;
    f.ll128Path &= o.ll128Path;
    f.clusterRing &= o.clusterRing;
    f.clusterThree &= o.clusterThree;
    f.p2pPair &= o.p2pPair;
    f.peersReachable &= o.peersReachable;
    f.peersShm |= o.peersShm;
    f.transport = std::max(f.transport, o.transport);
    f.ringIntra = std::max(f.ringIntra, o.ringIntra);
    pluginsDiffer = pluginsDiffer || o.tunerPlugin != all[0].tunerPlugin;
    out.minChannels = std::max(out.minChannels, o.minChannels);
    out.maxCtas = static_cast<int>(foldBounds(out.maxCtas, o.maxCtas));
    out.maxP2pCtas = static_cast<int>(foldBounds(out.maxP2pCtas, o.maxP2pCtas));
    differ = differ || o.minChannels != own.minChannels || o.buffSize != own.buffSize ||
             o.pipelineSteps != own.pipelineSteps || o.oneShotSplit != own.oneShotSplit || o.maxCtas != own.maxCtas ||
             o.maxP2pCtas != own.maxP2pCtas || o.tunerOn != own.tunerOn || o.p2pLlThreshold != own.p2pLlThreshold ||
             o.p2pChannelBytes != own.p2pChannelBytes || o.p2pPieces != own.p2pPieces ||
             o.p2pBalanceBytes != own.p2pBalanceBytes || o.p2pPeerChannels != own.p2pPeerChannels ||
             o.oneShotPeersBytes != own.oneShotPeersBytes || o.twoShotPeersBytes != own.twoShotPeersBytes ||
             o.peersChannelBytes != own.peersChannelBytes;
    for (int c = 0; c < kNumCollTypes; ++c) {
      out.protos.mask[c] &= o.protos[c];
      out.algos.mask[c] &= o.algos[c];
      differ = differ || o.protos[c] != own.protos[c] || o.algos[c] != own.algos[c];
    }
  }
  out.protos.overridden = out.algos.overridden = false;
  for (int c = 0; c < kNumCollTypes; ++c) {
    // Ranks that allow disjoint sets: every executor runs Ring/Simple, so that is what they agree on.
    if (out.protos.mask[c] == 0) out.protos.mask[c] = bit(Proto::Simple);
    if (out.algos.mask[c] == 0) out.algos.mask[c] = bit(Algo::Ring);
    out.protos.overridden = out.protos.overridden || out.protos.mask[c] != kAllProtosMask;
    out.algos.overridden = out.algos.overridden || out.algos.mask[c] != kAllAlgosMask;
  }
  if (differ)
    BRAID_WARN(
        "rank %d: NCCL_PROTO / NCCL_ALGO / NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS / "
        "NCCL_MAX_P2P_NCHANNELS / config.maxCTAs / NCCL_BUFFSIZE / BRAID_PIPELINE_STEPS / BRAID_ONESHOT_SPLIT / "
        "BRAID_DEVICE_TUNER / NCCL_P2P_LL_THRESHOLD / BRAID_P2P_CHANNEL_BYTES / BRAID_P2P_PIECES / "
        "BRAID_P2P_BALANCE_BYTES / BRAID_P2P_PEER_CHANNELS / BRAID_ONESHOT_PEERS_BYTES / BRAID_TWOSHOT_PEERS_BYTES / "
        "BRAID_PEERS_CHANNEL_BYTES differ across ranks; every rank uses what all allow (the largest minimum, the "
        "smallest CTA bounds, rank 0's sizes, split, tuner switch, threshold, p2p channel bytes, pieces, balance "
        "bytes, peer channels, one-shot and two-shot bytes)",
        comm->rank);
  if (pluginsDiffer) {
    f.tunerPlugin = 0;
    BRAID_WARN("rank %d: the ranks loaded different tuner plugins, or some none (NCCL_TUNER_PLUGIN, NCCL_NET_PLUGIN): "
               "no rank uses one; Braid's own cost model tunes", comm->rank);
  }
  *cfg = out;
  *agreed = f;
  return ncclSuccess;
}

}  // namespace braid
