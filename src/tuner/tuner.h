// The tuner: for one call, picks (algorithm, protocol, channels, threads, chunk size) by minimising a cost
// model kept as data (tuner_model.def), within what NCCL_ALGO / NCCL_PROTO allow and what the channel,
// thread and buffer parameters bound. Pure CPU code (no CUDA), so every decision is testable without a GPU.
// Also parses NCCL_ALGO / NCCL_PROTO, including '^' exclusion and the per-collective "allreduce:ring;..."
// form, and estimates a group's time for ncclGroupSimulateEnd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algo/op_desc.h"
#include "algo/p2p_plan.h"  // P2pCtaBudget
#include "core/param.h"            // foldBounds
#include "nccl.h"

namespace braid {

// NCCL's algorithm names are all known so that NCCL scripts (e.g. NCCL_ALGO=^NVLS) parse; Braid runs Ring, the
// OneShot all-reduce, and the Tree all-reduce where trees are connected (host communicators; GPU communicators
// across nodes, on Simple and LL). Where an executor cannot run what NCCL_ALGO asks (TwoShot anywhere, Tree on one
// GPU node), a request for it alone falls back to Ring (warned once).
enum class Algo : int { Ring, Tree, CollNetDirect, CollNetChain, Nvls, NvlsTree, Pat, OneShot, TwoShot, kCount };
enum class Proto : int { LL, LL128, Simple, kCount };
// Where the bytes of a call travel; selects the cost model's row.
enum class TransportClass : int { P2pNvlink, P2pPcie, Shm, NetSocket, HostShm, HostSocket, kCount };

constexpr int kNumAlgos = static_cast<int>(Algo::kCount);
constexpr int kNumProtos = static_cast<int>(Proto::kCount);
constexpr int kNumTransportClasses = static_cast<int>(TransportClass::kCount);
constexpr int kNumCollTypes = static_cast<int>(CollType::Recv) + 1;
constexpr uint32_t kAllAlgosMask = (1u << kNumAlgos) - 1;
constexpr uint32_t kAllProtosMask = (1u << kNumProtos) - 1;
constexpr uint32_t bit(Algo a) { return 1u << static_cast<int>(a); }
constexpr uint32_t bit(Proto p) { return 1u << static_cast<int>(p); }
// The algorithms Braid can execute at all (the executor narrows this further per request).
constexpr uint32_t kBraidAlgosMask = bit(Algo::Ring) | bit(Algo::Tree) | bit(Algo::OneShot) | bit(Algo::TwoShot);
// SIMPLE's FIFO of NCCL_BUFFSIZE bytes is cut in this many pipeline steps (as NCCL_STEPS).
constexpr int kStepsPerBuffer = 8;
constexpr int kTunerMaxChannels = 64;

const char* algoName(Algo a);
const char* protoName(Proto p);
const char* transportClassName(TransportClass t);

// The allowed set per collective, as parsed from NCCL_ALGO or NCCL_PROTO. `overridden` is false when the
// variable was unset or empty (then every mask is "all").
struct SelectionMask {
  uint32_t mask[kNumCollTypes];
  bool overridden = false;
};

// Parses `value` of variable `var` ("NCCL_ALGO" or "NCCL_PROTO"; it names the variable in error messages).
// Syntax: "[^]name,name" for every collective, or ";"-separated segments, each either such a list (the
// default, at most one) or "collective:[^]name,name" for one collective (broadcast, reduce, allgather,
// reducescatter, allreduce, sendrecv, send, recv, alltoall, gather, scatter). Names are case-insensitive.
// Unknown names, empty lists or segments, unknown collectives, repeated defaults or a list that leaves
// nothing allowed fail with ncclInvalidArgument and a recorded message naming the offending token.
ncclResult_t parseAlgoList(const char* var, const std::string& value, SelectionMask* out);
ncclResult_t parseProtoList(const char* var, const std::string& value, SelectionMask* out);

// Everything the environment says about tuning, read once per communicator (or per simulate call).
struct TunerConfig {
  SelectionMask algos;
  SelectionMask protos;
  int minChannels = -1;  // NCCL_MIN_NCHANNELS (or NCCL_MIN_CTAS); -1: unset
  int maxChannels = -1;  // NCCL_MAX_NCHANNELS (or NCCL_MAX_CTAS); -1: unset
  int nThreads = -1;     // NCCL_NTHREADS; -1: per-protocol default
  int64_t buffSize = 4 << 20;  // NCCL_BUFFSIZE: SIMPLE's FIFO bytes per connection
  int pipelineSteps = 0;       // BRAID_PIPELINE_STEPS: least FIFO steps per channel share (GPU Simple); 0: auto
  bool oneShotSplit = true;    // BRAID_ONESHOT_SPLIT: the 2-rank one-shot on Simple in sending and receiving CTAs
  // The CTAs one launch may use, where the user bounded them: the smallest of NCCL_MAX_NCHANNELS, NCCL_MAX_CTAS
  // and (device comms) config.maxCTAs; -1: unbounded. One CTA per channel everywhere but the split one-shot,
  // which takes two, so it runs only where twice its channels fit (oneShotSplitFits).
  int maxCtas = -1;
  // NCCL_MAX_P2P_NCHANNELS: the CTAs one point-to-point launch may use besides maxCtas (NCCL's p2p kernels heed
  // only this one: NVIDIA/nccl#1598, #2421); -1: unset. p2pMaxCtas folds the two.
  int maxP2pCtas = -1;
  TunerConfig();         // everything allowed, nothing set
};
// The CTA bound of point-to-point launches: the smaller of maxCtas and maxP2pCtas where both are set; -1: none.
inline int p2pMaxCtas(const TunerConfig& c) { return static_cast<int>(foldBounds(c.maxCtas, c.maxP2pCtas)); }
// Reads NCCL_ALGO, NCCL_PROTO, NCCL_{MIN,MAX}_NCHANNELS (+ _CTAS aliases), NCCL_NTHREADS, NCCL_BUFFSIZE.
// Bad override strings fail (see parse*List); out-of-range numbers warn and fall back to defaults.
ncclResult_t loadTunerConfig(TunerConfig* out);

// One call to tune. `bytes` is NCCL's nBytes: the full buffer of all-reduce/broadcast/reduce, the gathered
// total (count x size x nranks) for all-gather/reduce-scatter/all-to-all/gather/scatter, the message of
// send/recv (opBytes() computes it from an OpDesc).
struct TuneRequest {
  CollType coll = CollType::AllReduce;
  size_t bytes = 0;
  int nranks = 2;
  TransportClass transport = TransportClass::P2pNvlink;
  int smVersion = 90;        // LL128 needs NVLink P2P on sm_90 or later (whole 128-byte stores)
  uint32_t algosAvailable = kBraidAlgosMask;  // what the executor implements for this comm
  uint32_t protosAvailable = kAllProtosMask;
  int connectedChannels = 0;  // channels the comm has set up; 0: no limit beyond the model
  int maxThreads = 512;       // the kernel's launch bound (kDevMaxThreads in src/device/dev_work.h)
  int nNodes = 1;             // nodes the ranks span (PeerInfo::hostHash): the tree's depth
  // Across nodes on GPU communicators: the class of the tree's hops inside a node (P2pNvlink or Shm), and of the
  // ring's; `transport` is then the network's, which the ring's slowest hop sets (each hop is priced by its own).
  TransportClass intraTransport = TransportClass::P2pNvlink;
  TransportClass ringIntraTransport = TransportClass::P2pNvlink;
};

// Why a decision departs from what the user asked; also logged.
enum TuneFlags : uint32_t {
  kTuneLl128Refused = 1u << 0,   // LL128 allowed/forced but the path does not guarantee whole 128 B stores
  kTuneProtoFallback = 1u << 1,  // no allowed protocol usable here: fell back to the usable ones
  kTuneAlgoFallback = 1u << 2,   // no allowed algorithm applies here: fell back to the applicable ones
};

struct TuneDecision {
  Algo algo = Algo::Ring;
  Proto proto = Proto::Simple;
  int nChannels = 1;
  int nThreads = 512;     // per CTA on devices; 1 (one CPU thread per channel) on host communicators
  size_t chunkBytes = 0;  // data bytes per pipeline step and channel
  double predictedUs = 0;
  uint32_t flags = 0;     // TuneFlags
};

// Whether the cost row of (transport, protocol) is fitted to measurements (tuner_model.def): executors take
// the tuner's channel counts only from such rows.
bool modelRowMeasured(TransportClass t, Proto p);
// Predicted time of one fixed choice (no search, no env); +inf when the choice cannot run on this path.
double predictUs(const TuneRequest& req, Algo algo, Proto proto, int nChannels, size_t chunkBytes);
// The cheapest allowed choice. Never fails: when overrides allow nothing usable, falls back (flags say so).
// Logs the decision under NCCL_DEBUG_SUBSYS=TUNING.
TuneDecision tune(const TuneRequest& req, const TunerConfig& cfg);

// The FIFO step cap of a GPU Simple collective (0: the connection's step, NCCL_BUFFSIZE / kStepsPerBuffer).
// pipelineSteps >= 1 (BRAID_PIPELINE_STEPS): each channel's share in at least that many steps of >= 16 KiB.
// 0 (auto): a segment (what a channel moves per ring step) of one to two connection steps on a 2-rank NVLink
// ring is cut into two steps, so the receiver reduces or copies one while the next crosses the link (4-9%
// faster at 32-64 MB on 2xH200; smaller segments lose more to the ~1.5 us of each extra step: docs/TUNING.md,
// "FIFO sizes and steps"); elsewhere unmeasured, so unchanged.
// With oneShotSplit (BRAID_ONESHOT_SPLIT, default on), the 2-rank NVLink one-shot all-reduce with a channel
// share of kSplitMinShareBytes or more runs in four steps, and the executor runs it split (a sending and a
// receiving CTA per channel: kDevAllReduceOneShotSplit): 5-9% faster than one CTA per channel at 8-64 MB on
// 2xH200. Four steps without the split lose, and the split in one step gains nothing at 2-8 MB, so below
// kSplitMinShareBytes the one-shot runs unsplit in one step (docs/TUNING.md, "The one-shot and split one-shot
// all-reduce").
constexpr size_t kSplitMinShareBytes = size_t(128) << 10;
// Whether the split one-shot may run on nChannels channels: switched on, and 2 x nChannels CTAs within
// cfg.maxCtas. Users bound CTAs to leave SMs to compute that overlaps the collective (NCCL's maxCTAs), so the
// split never doubles past it (its 128 CTAs slow an overlapped stream of compute kernels by 9-10% where NCCL's 24
// slow it by 5-6%: docs/TUNING.md, "CTA policy"). simpleStepCap and the executor both ask.
inline bool oneShotSplitFits(const TunerConfig& cfg, int nChannels) {
  return cfg.oneShotSplit && (cfg.maxCtas <= 0 || 2 * static_cast<int64_t>(nChannels) <= cfg.maxCtas);
}
uint32_t simpleStepCap(CollType coll, bool oneShot, size_t bytes, int nranks, int nChannels, TransportClass t,
                       const TunerConfig& cfg);
// Whether the 2-rank one-shot all-reduce of `count` elements of `esize` bytes on nChannels runs split: it may
// (oneShotSplitFits), and each channel's share takes two or more of Simple's steps (stepCap, simpleStepCap's
// for the one-shot, or the connection's step of connStepBytes) and fewer than the FIFO's nSteps. The executor
// runs it unsplit otherwise. Every input is agreed (the FIFO's geometry follows rank 0's NCCL_BUFFSIZE), so all
// ranks answer alike.
bool oneShotSplitRuns(const TunerConfig& cfg, size_t count, size_t esize, int nChannels, uint32_t stepCap,
                      uint32_t connStepBytes, uint32_t nSteps);
// Where the model picked the 2-rank one-shot all-reduce on Simple over NVLink P2P, the one-shot would run
// unsplit (oneShotSplitRuns false) and every rank launches its ring collectives in thread-block clusters:
// whether the clustered ring runs instead, from the measured ranges in tuner_model.def
// (BRAID_TUNER_CLUSTERED_RING; never below kClusterMinBytes, where the ring launches plainly). clusterThree:
// every rank launches it in clusters of 3 on 24-32 channels (TuningFacts::clusterThree, agreed).
bool clusteredRingOverUnsplitOneShot(size_t bytes, int nChannels, bool clusterThree);

size_t opBytes(const OpDesc& op, int nranks);
TuneRequest makeTuneRequest(const OpDesc& op, int nranks, TransportClass transport);
// The request of an executor that runs only Ring/Simple (the host executor) on at most maxCh channels.
TuneRequest ringSimpleRequest(const OpDesc& op, int nranks, TransportClass transport, int maxCh, int maxThreads);

// An executor's previous channel decision: training loops repeat the same calls.
struct ChannelMemo {
  CollType coll = CollType::Send;
  size_t bytes = 0;
  int maxCh = 0;
  int nch = 0;
};
// The channel count (1..maxCh) the tuner picks for `op` run as Ring/Simple (what the executors run today) on
// `transport`. A repeat of the memo's (collective, bytes, maxCh) reuses its answer unless TUNING decisions
// are logged. A pure function of the op and the configuration, so every rank cuts the op the same way.
int tunedRingChannels(const OpDesc& op, int nranks, TransportClass transport, int maxCh, int maxThreads,
                      const TunerConfig& cfg, ChannelMemo* memo);
// One op of a group as ncclGroupSimulateEnd prices it: its communicator, whether it is a p2p op (isP2pColl),
// and the model's time for it.
struct TimedOp {
  const void* comm;
  bool p2p;
  double us;
};
// A group's time, in microseconds. A communicator runs its collectives one launch after another and its p2p
// ops side by side in one launch after them, so its time is the collectives' sum plus the slowest p2p op; the
// group's communicators run side by side, so the slowest one sets the group's.
double groupTimeUs(const std::vector<TimedOp>& ops);

// What a GPU communicator's p2p cut depends on (agreed at init, gpu_state.h).
struct P2pCutFacts {
  P2pCtaBudget cut;             // the ring's channels per transfer and the copy CTAs (p2pCtaBudget)
  size_t channelBytes = 65536;  // BRAID_P2P_CHANNEL_BYTES
  size_t llThreshold = 0;       // NCCL_P2P_LL_THRESHOLD: shares up to this run LL where the path has LL slots
  bool llSlots = false;         // the path's connections have LL slots (P2P, SHM; NET only when LL is forced)
  size_t balanceMinShare = 0;  // BRAID_P2P_BALANCE_BYTES (p2pBalanced; used where the path has a balanced row); 0: none
  int peerChannels = 1;        // a collective's cap per transfer at n > 2 (p2pPeerChannels)
  int ringNext = -1;           // the ring neighbours in the agreed order (ring_order.h); -1: rank order
  int ringPrev = -1;
  int peerConnChannels = 1;    // the connections of a peer that is no ring neighbour, on the path (p2pChannelsOn)
};
// The cost model's time of one GPU point-to-point op on `rank` as planP2p cuts it (p2p_plan.h): each transfer
// over p2pTransferChannels channels (the ring's for the neighbour, the peer's connections for others), each share
// LL or SIMPLE by its size (a balanced transfer by tuner_model.def's BRAID_TUNER_P2P_BALANCED row, where its
// path has one), a send to or receive from the rank itself as a local copy (BRAID_TUNER_LOCAL_COPY); an op's
// transfers to several peers run side by side, so the slowest sets it.
double predictP2pUs(const OpDesc& op, int nranks, int rank, TransportClass transport, const P2pCutFacts& facts);

}  // namespace braid
