// CollPlanner: the plan of a collective on a GPU communicator (coll_plan.h). With the tuner on, its cost model
// picks (algorithm, protocol, channels) among what this communicator can run; channel counts come from it only
// where its row is fitted to measurements (elsewhere 64 KiB per channel, as with the tuner off). With
// BRAID_DEVICE_TUNER=0: Ring/Simple unless NCCL_ALGO / NCCL_PROTO force OneShot / LL / LL128.
#include "runtime/gpu/coll_plan.h"

#include <algorithm>
#include <string>

#include "algo/ll_protocol.h"
#include "algo/ring_split.h"
#include "core/log.h"
#include "tuner/launch_attrs.h"

namespace braid {
namespace {

int32_t devCollCode(CollType c) {
  switch (c) {
    case CollType::AllReduce:
      return kDevAllReduce;
    case CollType::Broadcast:
      return kDevBroadcast;
    case CollType::Reduce:
      return kDevReduce;
    case CollType::AllGather:
      return kDevAllGather;
    default:
      return kDevReduceScatter;
  }
}

}  // namespace

CollPlan CollPlanner::planSizes(const OpDesc& op, uint32_t lowLatency, bool* splitRuns) {
  const size_t bytes = opBytes(op, f_.nranks);
  const size_t esize = dtypeSize(op.dtype);
  CollPlan plan;
  *splitRuns = false;
  plan.devColl = devCollCode(op.coll);
  plan.nChannels = channelsForBytes(bytes, f_.nChannels);
  plan.nCta = plan.nChannels;
  if (f_.nranks == 1) return plan;
  const TunerConfig& cfg = f_.tuning;
  const int c = static_cast<int>(op.coll);
  const uint32_t asked = cfg.protos.mask[c];
  const bool llForced = (asked & bit(Proto::LL)) && !(asked & bit(Proto::Simple));
  const bool ll128Forced = (asked & bit(Proto::LL128)) && !(asked & bit(Proto::Simple)) && !(asked & bit(Proto::LL));
  // The tuner offers a low-latency protocol where its row for this path is measured (LL: P2P NVLink, SHM;
  // LL128: P2P NVLink), elsewhere only when NCCL_PROTO forces it; LL only where every ring connection has LL
  // slots, LL128 only where every rank's ring is NVLink P2P on sm_90+, whatever NCCL_PROTO says.
  const bool llOffered =
      (lowLatency & bit(Proto::LL)) && f_.llPath && (llForced || modelRowMeasured(f_.transport, Proto::LL));
  const bool ll128Offered = (lowLatency & bit(Proto::LL128)) && f_.ll128Path && (asked & bit(Proto::LL128)) &&
                            (ll128Forced || modelRowMeasured(f_.transport, Proto::LL128));
  uint32_t protos = bit(Proto::Simple) | (llOffered ? bit(Proto::LL) : 0u) | (ll128Offered ? bit(Proto::LL128) : 0u);
  // The one-shot schedule exists for 2 ranks (ring_schedules.h), where the ring's neighbour is the peer, and
  // runs only reductions that give both ranks the same bits in it (oneShotExact).
  const bool oneShot = op.coll == CollType::AllReduce && f_.nranks == 2 && oneShotExact(op.op.kind, op.dtype);
  // The tree all-reduce runs where the trees are connected (across nodes, NCCL_ALGO allowing it), on SIMPLE, and on
  // LL where LL is offered, every tree connection has LL slots and this build has the op's LL kernel.
  const bool tree = op.coll == CollType::AllReduce && f_.treeChannels > 0;
  const bool treeLl = tree && f_.treeLlPath && (protos & bit(Proto::LL));
  uint32_t algos = bit(Algo::Ring) | (oneShot ? bit(Algo::OneShot) : 0u) | (tree ? bit(Algo::Tree) : 0u);
  // A tuner plugin (tuner_plugin.h), with the tuner on, picks first: what follows chooses within its pick.
  PluginPick pick;
  const bool plugged = f_.tunerOn && f_.tunerPlugin && askPlugin(op, algos, protos, treeLl, &pick);
  pluginChannels_ = pick.nChannels;  // also where the plugin left the table as it was
  if (pick.error != ncclSuccess) {
    plan.error = pick.error;
    return plan;
  }
  if (plugged) {
    algos &= pick.algos;
    protos &= bit(pick.proto);
  }
  if (ll128Forced && !ll128Offered && !ll128Warned_) {
    ll128Warned_ = true;
    BRAID_WARN("rank %d: NCCL_PROTO asks for LL128 but %s: %s %s runs on %s", f_.rank,
               !f_.ll128Path ? "not every rank's ring is NVLink P2P on sm_90+ (128-byte stores may not arrive whole)"
                             : "this build has no LL128 kernel for it",
               collName(op.coll), dtypeName(op.dtype), llOffered ? "LL or Simple" : "Simple");
  }
  if (llForced && !(protos & bit(Proto::LL)) && !llWarned_) {
    llWarned_ = true;
    BRAID_WARN("rank %d: NCCL_PROTO asks for LL but %s: %s %s runs on Simple", f_.rank,
               f_.llPath ? "this build has no LL kernel for it"
                         : "not every ring connection has LL slots (NET needs steps of at least 64 KiB)",
               collName(op.coll), dtypeName(op.dtype));
  }
  // The split one-shot (simpleStepCap): where the busiest channel's share takes two or more FIFO steps (one
  // gains nothing) and fewer than the FIFO holds, no sending CTA waits for a receiving one and the launch needs
  // no two of its CTAs resident at once. Counted on the connection's own FIFO, the one the kernel waits on.
  auto splitFits = [&](int nChannels) {
    const uint32_t cap = simpleStepCap(op.coll, true, bytes, f_.nranks, nChannels, f_.transport, cfg);
    return f_.transport == TransportClass::P2pNvlink &&
           oneShotSplitRuns(cfg, op.count, esize, nChannels, cap, f_.ringStepBytes, f_.ringSteps);
  };
  // The one-shot and two-shot of more than two ranks (one_shot_peers.cuh): small and mid all-reduces where every
  // peer is reached over P2P or SHM and this build has the LL kernel. Size rules (BRAID_ONESHOT_PEERS_BYTES, then
  // BRAID_TWOSHOT_PEERS_BYTES), as the cost model has no rows for them yet; NCCL_ALGO without OneShot / TwoShot
  // or NCCL_PROTO without LL keep the ring; with the tuner off (BRAID_DEVICE_TUNER=0) they run only where
  // NCCL_ALGO leaves the ring out.
  const bool peersAllowed = op.coll == CollType::AllReduce && f_.nranks > 2 &&
                            (!plugged || ((pick.algos & bit(Algo::Ring)) && pick.proto == Proto::LL)) &&
                            (f_.tunerOn || !(cfg.algos.mask[c] & bit(Algo::Ring))) && (lowLatency & bit(Proto::LL)) &&
                            (asked & bit(Proto::LL));
  const bool onePeers = peersAllowed && f_.oneShotPeersBytes > 0 && bytes <= f_.oneShotPeersBytes &&
                        (cfg.algos.mask[c] & bit(Algo::OneShot));
  const bool twoPeers = peersAllowed && !onePeers && bytes <= f_.twoShotPeersBytes &&
                        (cfg.algos.mask[c] & bit(Algo::TwoShot));
  if (onePeers || twoPeers) {
    plan.devColl = onePeers ? kDevAllReduceOneShotPeers : kDevAllReduceTwoShotPeers;
    plan.proto = Proto::LL;
    // One channel per BRAID_PEERS_CHANNEL_BYTES up to the peers' channels, so each CTA's threads hold a few lines.
    plan.nChannels = plan.nCta = channelsForBytes(bytes, f_.oneShotPeerChannels, f_.peersChannelBytes);
    if (pluginChannels_ > 0) plan.nChannels = plan.nCta = std::min(pluginChannels_, f_.oneShotPeerChannels);
    if (onePeers && f_.threadsAuto) plan.nThreads = oneShotPeersThreads(bytes, plan.nChannels, f_.threads);
    plan.predictedUs = predictUs(makeTuneRequest(op, f_.nranks, f_.transport), onePeers ? Algo::OneShot : Algo::TwoShot,
                                 Proto::LL, plan.nChannels, 0);
    return plan;
  }
  if (f_.tunerOn) {
    const TuneRequest req = tuneRequest(op, algos, protos);
    TuneDecision d = tune(req, cfg);
    // A tree on a protocol it cannot run here (LL128; LL without LL slots on every tree connection) the model
    // preferred is weighed as Simple against the best of the rest (where NCCL_ALGO allows any).
    const uint32_t rest = algos & cfg.algos.mask[c] & ~bit(Algo::Tree);
    const bool treeRuns = d.proto == Proto::Simple || (d.proto == Proto::LL && treeLl);
    if (d.algo == Algo::Tree && !treeRuns && rest != 0 && (asked & bit(Proto::Simple))) {
      TuneRequest noTree = req;
      noTree.algosAvailable = rest;
      const TuneDecision other = tune(noTree, cfg);
      if (other.predictedUs < predictUs(req, Algo::Tree, Proto::Simple, d.nChannels, 0)) d = other;
    }
    if (d.algo == Algo::Tree) return planTree(op, req, d, asked, treeLl);
    plan.proto = (protos & bit(d.proto)) ? d.proto : Proto::Simple;
    if (d.algo == Algo::OneShot) plan.devColl = kDevAllReduceOneShot;
    if (modelRowMeasured(f_.transport, d.proto)) plan.nChannels = std::max(1, std::min(d.nChannels, f_.nChannels));
    if (pluginChannels_ > 0) plan.nChannels = std::min(pluginChannels_, f_.nChannels);
    plan.predictedUs =
        d.nChannels == plan.nChannels ? d.predictedUs : predictUs(req, d.algo, d.proto, plan.nChannels, d.chunkBytes);
    // The model cannot tell the unsplit one-shot from the clustered ring (its rows are fitted to plain
    // launches); where the one-shot would run unsplit and every rank's ring is clustered, the measured ranges
    // decide (tuner_model.def). Agreed inputs only: both ranks must run the same schedule.
    if (plan.devColl == kDevAllReduceOneShot && plan.proto == Proto::Simple && f_.clusterRing &&
        f_.transport == TransportClass::P2pNvlink && (cfg.algos.mask[c] & bit(Algo::Ring)) &&
        !splitFits(plan.nChannels) && clusteredRingOverUnsplitOneShot(bytes, plan.nChannels, f_.clusterThree)) {
      plan.devColl = devCollCode(op.coll);
      plan.predictedUs = predictUs(req, Algo::Ring, Proto::Simple, plan.nChannels, d.chunkBytes);
      BRAID_INFO(kSubTuning,
                 "AllReduce %zu bytes on %d channels: the clustered ring instead of the unsplit one-shot "
                 "(measured, tuner_model.def), predicted %.2f us",
                 bytes, plan.nChannels, plan.predictedUs);
    }
  } else {
    plan.proto = llForced && (protos & bit(Proto::LL))         ? Proto::LL
                 : ll128Forced && (protos & bit(Proto::LL128)) ? Proto::LL128
                                                               : Proto::Simple;
    // With the tuner off, the tree where it is connected and NCCL_ALGO allows it but not the ring.
    if ((algos & bit(Algo::Tree)) && (cfg.algos.mask[c] & bit(Algo::Tree)) && !(cfg.algos.mask[c] & bit(Algo::Ring))) {
      TuneRequest req = makeTuneRequest(op, f_.nranks, f_.transport);
      req.nNodes = f_.nNodes;
      req.intraTransport = f_.treeIntra;
      req.ringIntraTransport = f_.ringIntra;
      TuneDecision d;
      d.algo = Algo::Tree;
      d.proto = plan.proto;
      d.nChannels = plan.nChannels;
      return planTree(op, req, d, asked, treeLl);
    }
    // OneShot runs on SIMPLE, LL or LL128 (the 2-rank schedule uses the ring's primitives).
    if ((algos & bit(Algo::OneShot)) && (cfg.algos.mask[c] & bit(Algo::OneShot)) &&
        !(cfg.algos.mask[c] & bit(Algo::Ring)))
      plan.devColl = kDevAllReduceOneShot;
    const TuneRequest req = makeTuneRequest(op, f_.nranks, f_.transport);
    plan.predictedUs = predictUs(req, plan.devColl == kDevAllReduceOneShot ? Algo::OneShot : Algo::Ring, plan.proto,
                                 plan.nChannels, 0);
  }
  const bool isOneShot = plan.devColl == kDevAllReduceOneShot;
  if (plan.proto == Proto::Simple)
    plan.stepCap = simpleStepCap(op.coll, isOneShot, bytes, f_.nranks, plan.nChannels, f_.transport, cfg);
  *splitRuns = isOneShot && plan.proto == Proto::Simple && splitFits(plan.nChannels);
  plan.nCta = plan.nChannels;
  // Clusters where they were measured to pay: the ring schedules on Simple over NVLink (collCluster). A ring
  // through SHM, sockets or PCIe P2P launches plainly.
  const bool ringOnNvlinkSimple =
      plan.proto == Proto::Simple && !isOneShot && f_.transport == TransportClass::P2pNvlink;
  const bool twoWay =
      op.coll == CollType::AllGather || op.coll == CollType::ReduceScatter || op.coll == CollType::AllReduce;
  const int size = clusterForLaunch(f_.cluster, f_.clusterUserSet, f_.clusterThreeFits, plan.nChannels, twoWay);
  plan.cluster = collCluster(size, ringOnNvlinkSimple, bytes);
  plan.nCta = clusteredGrid(plan.nCta, plan.cluster);
  return plan;
}

TuneRequest CollPlanner::tuneRequest(const OpDesc& op, uint32_t algos, uint32_t protos) const {
  TuneRequest req = makeTuneRequest(op, f_.nranks, f_.transport);
  req.algosAvailable = algos;
  req.protosAvailable = protos;
  req.connectedChannels = f_.nChannels;
  req.maxThreads = kDevMaxThreads;
  req.nNodes = f_.nNodes;
  req.intraTransport = f_.treeIntra;
  req.ringIntraTransport = f_.ringIntra;
  return req;
}

// The table a tuner plugin sees is NCCL's: rows Tree and Ring (Braid's one-shots are its ways to run a Ring-row
// choice), columns LL, LL128, Simple, each entry the model's time for the best plan within it, -1 where Braid cannot
// run it (the tree on LL128, or on LL without LL slots) or NCCL_ALGO / NCCL_PROTO leave it out.
bool CollPlanner::askPlugin(const OpDesc& op, uint32_t algos, uint32_t protos, bool treeLl, PluginPick* pick) {
  int func;
  switch (op.coll) {
    case CollType::AllReduce: func = tunerabi::kFuncAllReduce; break;
    case CollType::Broadcast: func = tunerabi::kFuncBroadcast; break;
    case CollType::Reduce: func = tunerabi::kFuncReduce; break;
    case CollType::AllGather: func = tunerabi::kFuncAllGather; break;
    case CollType::ReduceScatter: func = tunerabi::kFuncReduceScatter; break;
    default: return false;
  }
  const TunerConfig& cfg = f_.tuning;
  const int c = static_cast<int>(op.coll);
  const uint32_t family[2] = {bit(Algo::Tree), bit(Algo::Ring) | bit(Algo::OneShot)};  // by NCCL_ALGO_TREE, _RING
  float costs[tunerabi::kNumAlgos][tunerabi::kNumProtos];
  for (auto& row : costs)
    for (float& x : row) x = tunerabi::kIgnore;
  for (int a = 0; a < 2; ++a) {
    const uint32_t fam = family[a] & algos & cfg.algos.mask[c];
    const uint32_t ps = protos & cfg.protos.mask[c] &
                        (a == tunerabi::kAlgoTree ? bit(Proto::Simple) | (treeLl ? bit(Proto::LL) : 0u) : ~0u);
    for (int p = 0; fam && p < kNumProtos; ++p) {
      const Proto proto = static_cast<Proto>(p);  // Braid's Proto order is NCCL_PROTO_*'s
      if (!(ps & bit(proto))) continue;
      const TuneDecision d = tune(tuneRequest(op, fam, bit(proto)), cfg);
      if ((fam & bit(d.algo)) && d.proto == proto) costs[a][p] = static_cast<float>(d.predictedUs);
    }
  }
  int a = -1, p = -1, nc = 0;
  pick->error = f_.tunerPlugin->choose(func, opBytes(op, f_.nranks), 1, costs, &a, &p, &nc);
  pick->nChannels = nc;
  if (pick->error != ncclSuccess || a < 0 || a > 1) return false;
  pick->algos = family[a];
  pick->proto = static_cast<Proto>(p);
  BRAID_INFO(kSubTuning, "%s %zu bytes: tuner plugin %s picks %s/%s%s", collName(op.coll), opBytes(op, f_.nranks),
             f_.tunerPlugin->lib().name.c_str(), a == tunerabi::kAlgoTree ? "Tree" : "Ring", protoName(pick->proto),
             nc > 0 ? (" on " + std::to_string(nc) + " channels").c_str() : "");
  return true;
}

CollPlan CollPlanner::planTree(const OpDesc& op, const TuneRequest& req, const TuneDecision& d, uint32_t asked,
                               bool treeLl) {
  const size_t bytes = opBytes(op, f_.nranks);
  CollPlan plan;
  plan.devColl = kDevAllReduceTree;
  // The tree runs on SIMPLE, and on LL where treeLl says it can: a decision on another protocol runs the tree on
  // SIMPLE where NCCL_PROTO allows it, and the ring on the decided protocol where it does not.
  const bool ll = d.proto == Proto::LL && treeLl;
  plan.proto = ll ? Proto::LL : Proto::Simple;
  if (d.proto != Proto::Simple && !ll && !(asked & bit(Proto::Simple))) {
    if (!treeProtoSaid_) {
      treeProtoSaid_ = true;
      BRAID_INFO(kSubTuning,
                 "rank %d: the tree all-reduce cannot run on %s here and NCCL_PROTO leaves Simple out: "
                 "all-reduce runs on the ring",
                 f_.rank, protoName(d.proto));
    }
    plan.devColl = kDevAllReduce;
    plan.proto = d.proto;
    plan.nChannels = plan.nCta = channelsForBytes(bytes, f_.nChannels);
    if (pluginChannels_ > 0) plan.nChannels = plan.nCta = std::min(pluginChannels_, f_.nChannels);
    plan.predictedUs = predictUs(req, Algo::Ring, d.proto, plan.nChannels, 0);
    return plan;
  }
  if (d.proto != plan.proto && !treeProtoSaid_) {
    treeProtoSaid_ = true;
    BRAID_INFO(kSubTuning, "rank %d: the tree all-reduce runs on Simple%s: %s asked for %s", f_.rank,
               d.proto == Proto::LL ? " (a tree connection has no LL slots, or no LL kernel)" : " or LL",
               f_.tunerOn ? "the tuner" : "NCCL_PROTO", protoName(d.proto));
  }
  // Channels as the ring's (the model's where its row is measured, else 64 KiB per channel), within the trees'.
  const bool modelChannels = modelRowMeasured(f_.transport, plan.proto) && d.proto == plan.proto;
  const int nch = modelChannels ? d.nChannels : channelsForBytes(bytes, f_.nChannels);
  plan.nChannels = std::max(1, std::min(pluginChannels_ > 0 ? pluginChannels_ : nch, f_.treeChannels));
  plan.nCta = 2 * plan.nChannels;
  plan.predictedUs = predictUs(req, Algo::Tree, plan.proto, plan.nChannels, d.proto == plan.proto ? d.chunkBytes : 0);
  return plan;
}

int oneShotPeersThreads(size_t bytes, int nChannels, int maxThreads) {
  const size_t ch = static_cast<size_t>(std::max(1, nChannels));
  const size_t lines = llLines((bytes + ch - 1) / ch);
  int nt = maxThreads;
  while (nt / 2 >= kOneShotPeersMinThreads && lines <= static_cast<size_t>(nt / 2)) nt /= 2;
  return nt;
}

CollPlan CollPlanner::plan(const OpDesc& op, uint32_t lowLatency) {
  const size_t bytes = opBytes(op, f_.nranks);
  const size_t esize = dtypeSize(op.dtype);
  const bool exact = oneShotExact(op.op.kind, op.dtype);
  const bool logging = logEnabled(LogLevel::Info, kSubTuning);
  if (logging || !memo_.valid || memo_.coll != op.coll || memo_.bytes != bytes || memo_.esize != esize ||
      memo_.lowLatency != lowLatency || memo_.exact != exact) {
    bool splitRuns = false;
    const CollPlan p = planSizes(op, lowLatency, &splitRuns);
    if (p.error != ncclSuccess) {  // a failed tuner plugin: the next call asks again
      memo_.valid = false;
      return p;
    }
    memo_ = Memo{true, op.coll, bytes, esize, lowLatency, exact, splitRuns, p};
    // Which cluster size a launch got is a per-launch fact, not an init one: said under TUNING only.
    if (p.cluster > 0 && logging)
      BRAID_INFO(kSubTuning, "%s %zu bytes on %d channels: launched in thread-block clusters of %d", collName(op.coll),
                 bytes, p.nChannels, p.cluster);
  }
  CollPlan plan = memo_.plan;
  if (memo_.splitRuns) {
    // In place, the guard words keep each receiving CTA from overwriting input its sending CTA has yet to read;
    // buffers that overlap otherwise (not valid NCCL usage) run unsplit. A local choice: the FIFO steps are the
    // same either way.
    const char* in = static_cast<const char*>(op.sendbuff);
    const char* out = static_cast<const char*>(op.recvbuff);
    const size_t n = op.count * esize;
    if (in == out || in + n <= out || out + n <= in) {
      plan.devColl = kDevAllReduceOneShotSplit;
      plan.nCta = 2 * plan.nChannels;
      plan.splitGuard = in == out;
    }
  }
  return plan;
}

}  // namespace braid
