// The plan of one collective on a GPU communicator: every decision its launch needs (kernel schedule,
// protocol, channels, grid, clusters, FIFO step cap), made here once, so the launch only fills arguments. A
// pure function of the call and the configuration every rank agreed on at init (plus this rank's launch
// settings, which change no FIFO step), so every rank cuts and runs the op the same way. CPU code: unit-tested
// without a GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "algo/op_desc.h"
#include "device/dev_work.h"
#include "tuner/tuner.h"
#include "tuner/tuner_plugin.h"

namespace braid {

// What the planner decides from, fixed at init.
struct CollPlanFacts {
  int rank = 0;
  int nranks = 1;
  int nChannels = 1;                                     // connected ring channels
  TunerConfig tuning;                                    // agreed (tuning_agreement.h)
  TransportClass transport = TransportClass::P2pNvlink;  // the ring's class, agreed
  bool tunerOn = true;                                   // BRAID_DEVICE_TUNER, agreed
  bool llPath = false;                                   // every ring connection of every rank has LL slots, agreed
  bool ll128Path = false;     // every rank's ring is NVLink P2P with LL128 slots on sm_90+, agreed
  bool clusterRing = false;   // every rank's ring launches in thread-block clusters, agreed
  bool clusterThree = false;  // ... in clusters of 3 on 24-32 channels, agreed
  // The one-shot of more than two ranks (kDevAllReduceOneShotPeers): all-reduces up to this many bytes (0: never;
  // every peer of every rank over P2P or SHM), on at most oneShotPeerChannels channels; agreed.
  size_t oneShotPeersBytes = 0;
  int oneShotPeerChannels = 1;
  // The two-shot over the same connections (kDevAllReduceTwoShotPeers): all-reduces past oneShotPeersBytes up to
  // this many bytes (0: never); both schedules take one channel per peersChannelBytes; agreed.
  size_t twoShotPeersBytes = 0;
  size_t peersChannelBytes = 4096;
  // The double binary tree across nodes: channels with tree connections (0: none, e.g. one node) and the nodes
  // the ranks span; agreed.
  int treeChannels = 0;
  int nNodes = 1;
  bool treeLlPath = false;  // every tree connection of every rank has LL slots: the tree may run on LL
  TransportClass treeIntra = TransportClass::P2pNvlink;  // the class of the tree's hops inside a node
  TransportClass ringIntra = TransportClass::P2pNvlink;  // the class of the ring's hops inside a node
  // This rank's launch settings (launch_attrs.h): they shape the grid, not the FIFO steps.
  int cluster = 0;  // clusterSetting, 0: none
  bool clusterUserSet = false;
  bool clusterThreeFits = false;
  // Threads a CTA: the communicator's (NCCL_NTHREADS or kDevThreads), and whether NCCL_NTHREADS left the planner
  // free to launch small one-shots on fewer (oneShotPeersThreads).
  int threads = kDevThreads;
  bool threadsAuto = true;
  // Channel 0's send connection: the FIFO the split one-shot's steps are counted on.
  uint32_t ringStepBytes = 0;
  uint32_t ringSteps = 0;
  // The tuner plugin every rank asks (tuner_plugin.h; null: none), owned by the DeviceState.
  TunerPluginComm* tunerPlugin = nullptr;
};

struct CollPlan {
  int32_t devColl = kDevAllReduce;  // the kernel's schedule (DevColl), the split one-shot included
  Proto proto = Proto::Simple;
  int nChannels = 1;
  int nCta = 1;             // the grid: channels (twice that for the split one-shot), in whole clusters
  int cluster = 0;          // thread-block cluster size, 0: a plain launch
  uint32_t stepCap = 0;     // Simple: FIFO step bytes at most (0: the connection's)
  bool splitGuard = false;  // the split one-shot in place: the guard words order each read before its overwrite
  double predictedUs = 0;   // the cost model's time of the plan (ncclGroupSimulateEnd)
  int nThreads = 0;         // threads a CTA; 0: the communicator's
  ncclResult_t error = ncclSuccess;  // the tuner plugin's failure (recorded): the collective fails with it
};

// Threads a CTA of the one-shot over every peer: the fewest of maxThreads, maxThreads / 2, ... (not under
// kOneShotPeersMinThreads) that still give each thread at most one LL line of the channel's share. Every thread
// of a CTA meets at each of the kernel's barriers, so a few lines on 512 threads pay for 512: on 4xH200 an 8 B to
// 512 B all-reduce took 9.8-9.9 us on 512 threads and 7.7-7.8 on 128 (stream and CUDA graph alike), while 4 KB
// (512 lines) took 10.2-10.3 on 512 and 12.4-12.5 on 128 (docs/TUNING.md, "The one-shot and two-shot of more than
// two ranks").
constexpr int kOneShotPeersMinThreads = 128;
int oneShotPeersThreads(size_t bytes, int nChannels, int maxThreads);

class CollPlanner {
 public:
  explicit CollPlanner(const CollPlanFacts& facts) : f_(facts) {}
  // The plan of `op` (count > 0). lowLatency: bit(Proto::LL) / bit(Proto::LL128) where this build has that
  // protocol's kernel for the op.
  CollPlan plan(const OpDesc& op, uint32_t lowLatency);
  // The driver refused thread-block clusters: plan plain launches from now on.
  void clustersOff() {
    f_.cluster = 0;
    memo_.valid = false;
  }
  const CollPlanFacts& facts() const { return f_; }

 private:
  // The part of the plan that depends on the call's sizes only (memoised).
  CollPlan planSizes(const OpDesc& op, uint32_t lowLatency, bool* splitRuns);
  // The tree all-reduce's plan, where decision d (the tuner's, or NCCL_ALGO's with the tuner off) chose Tree; asked:
  // the protocols NCCL_PROTO allows for all-reduce; treeLl: the tree may run on LL.
  CollPlan planTree(const OpDesc& op, const TuneRequest& req, const TuneDecision& d, uint32_t asked, bool treeLl);
  // The tuner's request for op over the algorithms and protocols offered.
  TuneRequest tuneRequest(const OpDesc& op, uint32_t algos, uint32_t protos) const;
  // The tuner plugin's pick for op (f_.tunerPlugin), among the algorithm families (NCCL's Ring, Braid's one-shots
  // counted in it, and Tree) and protocols offered, each priced by Braid's model; false where it picks nothing.
  struct PluginPick {
    uint32_t algos = 0;  // the family picked, as Algo bits
    Proto proto = Proto::Simple;
    int nChannels = 0;   // the plugin's channel count (0: the model's)
    ncclResult_t error = ncclSuccess;  // the plugin's call failed
  };
  bool askPlugin(const OpDesc& op, uint32_t algos, uint32_t protos, bool treeLl, PluginPick* pick);

  CollPlanFacts f_;
  bool llWarned_ = false;
  bool treeProtoSaid_ = false;
  bool ll128Warned_ = false;
  int pluginChannels_ = 0;  // the plan being made: the tuner plugin's channel count (0: none set)
  // The previous call's plan: training loops repeat the same calls, and a search costs ~1 us.
  struct Memo {
    bool valid = false;
    CollType coll = CollType::AllReduce;
    size_t bytes = 0;
    size_t esize = 0;
    uint32_t lowLatency = 0;
    bool exact = false;
    bool splitRuns = false;
    CollPlan plan;
  } memo_;
};

}  // namespace braid
