// The tuner: NCCL_ALGO / NCCL_PROTO parsing, the cost model (rows in tuner_model.def, algorithm shapes
// here), and the search for the cheapest allowed (algorithm, protocol, channels) of one call.
#include "tuner/tuner.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <limits>

#include "algo/p2p_plan.h"
#include "algo/ring_split.h"
#include "algo/tree_topology.h"
#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "tuner/launch_attrs.h"

namespace braid {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------------------
// Names

const char* const kAlgoNames[kNumAlgos] = {"Ring", "Tree",     "CollNetDirect", "CollNetChain", "NVLS",
                                           "NVLSTree", "PAT", "OneShot",       "TwoShot"};
const char* const kProtoNames[kNumProtos] = {"LL", "LL128", "Simple"};
const char* const kTransportNames[kNumTransportClasses] = {"P2P-NVLink", "P2P-PCIe",  "SHM",
                                                           "NET-socket", "host-SHM", "host-socket"};

// Collective names as NCCL spells them in per-collective overrides (plus Braid's other operations).
struct CollName {
  const char* name;
  uint32_t colls;  // bit per CollType
};
constexpr uint32_t collBit(CollType c) { return 1u << static_cast<int>(c); }
const CollName kCollNames[] = {
    {"broadcast", collBit(CollType::Broadcast)},
    {"reduce", collBit(CollType::Reduce)},
    {"allgather", collBit(CollType::AllGather)},
    {"reducescatter", collBit(CollType::ReduceScatter)},
    {"allreduce", collBit(CollType::AllReduce)},
    {"sendrecv", collBit(CollType::Send) | collBit(CollType::Recv)},
    {"send", collBit(CollType::Send)},
    {"recv", collBit(CollType::Recv)},
    {"alltoall", collBit(CollType::AllToAll)},
    {"gather", collBit(CollType::Gather)},
    {"scatter", collBit(CollType::Scatter)},
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

bool equalsNoCase(const std::string& a, const char* b) {
  size_t n = std::char_traits<char>::length(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

// One "[^]a,b,c" list against a name table. `what` is "algorithm" or "protocol" for messages.
ncclResult_t parseNameList(const char* var, const std::string& whole, const std::string& listIn,
                           const char* const* names, int count, const char* what, uint32_t* mask) {
  std::string list = trim(listIn);
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list = trim(list.substr(1));
  if (list.empty())
    return recordError(ncclInvalidArgument, "%s=\"%s\": empty %s list in \"%s\"", var, whole.c_str(), what,
                       listIn.c_str());
  uint32_t named = 0;
  for (const std::string& raw : split(list, ',')) {
    std::string tok = trim(raw);
    if (tok.empty())
      return recordError(ncclInvalidArgument, "%s=\"%s\": empty %s name in \"%s\"", var, whole.c_str(), what,
                         listIn.c_str());
    int found = -1;
    for (int i = 0; i < count && found < 0; ++i)
      if (equalsNoCase(tok, names[i])) found = i;
    if (found < 0) {
      std::string known;
      for (int i = 0; i < count; ++i) known += std::string(i ? ", " : "") + names[i];
      return recordError(ncclInvalidArgument, "%s=\"%s\": unknown %s \"%s\" (known: %s)", var, whole.c_str(), what,
                         tok.c_str(), known.c_str());
    }
    named |= 1u << found;
  }
  uint32_t all = (1u << count) - 1;
  *mask = exclude ? (all & ~named) : named;
  if (*mask == 0)
    return recordError(ncclInvalidArgument, "%s=\"%s\": \"%s\" excludes every %s", var, whole.c_str(),
                       listIn.c_str(), what);
  return ncclSuccess;
}

ncclResult_t parseSelection(const char* var, const std::string& value, const char* const* names, int count,
                            const char* what, SelectionMask* out) {
  SelectionMask result;
  uint32_t all = (1u << count) - 1;
  for (uint32_t& m : result.mask) m = all;
  result.overridden = false;
  std::string v = trim(value);
  if (v.empty()) {
    *out = result;
    return ncclSuccess;
  }
  // The default list first (wherever it appears), then the per-collective segments on top of it.
  bool haveDefault = false;
  uint32_t perColl[kNumCollTypes];
  uint32_t setColls = 0;
  uint32_t defaultMask = all;
  for (const std::string& rawSeg : split(v, ';')) {
    std::string seg = trim(rawSeg);
    if (seg.empty())
      return recordError(ncclInvalidArgument, "%s=\"%s\": empty segment between ';'", var, value.c_str());
    size_t colon = seg.find(':');
    if (colon == std::string::npos) {
      if (haveDefault)
        return recordError(ncclInvalidArgument, "%s=\"%s\": more than one default list (\"%s\")", var,
                           value.c_str(), seg.c_str());
      haveDefault = true;
      BRAID_CHECK(parseNameList(var, value, seg, names, count, what, &defaultMask));
      continue;
    }
    std::string coll = trim(seg.substr(0, colon));
    const CollName* cn = nullptr;
    for (const CollName& c : kCollNames)
      if (equalsNoCase(coll, c.name)) cn = &c;
    if (!cn)
      return recordError(ncclInvalidArgument,
                         "%s=\"%s\": unknown collective \"%s\" (known: broadcast, reduce, allgather, reducescatter, "
                         "allreduce, sendrecv, send, recv, alltoall, gather, scatter)",
                         var, value.c_str(), coll.c_str());
    uint32_t m = 0;
    BRAID_CHECK(parseNameList(var, value, seg.substr(colon + 1), names, count, what, &m));
    for (int c = 0; c < kNumCollTypes; ++c)
      if (cn->colls & (1u << c)) {
        perColl[c] = m;
        setColls |= 1u << c;
      }
  }
  for (int c = 0; c < kNumCollTypes; ++c) result.mask[c] = (setColls & (1u << c)) ? perColl[c] : defaultMask;
  result.overridden = true;
  *out = result;
  return ncclSuccess;
}

// ---------------------------------------------------------------------------------------------------------
// The model's rows

struct ModelRow {
  double baseUs, stepUs, chunkUs, perChannelUs, bwPerChGBs, capGBs;
  int maxChannels;
  size_t chunkBytes;
  bool measured;
};

// tuner_model.def's BRAID_TUNER_P2P_BALANCED rows; capGBs 0: none for that transport.
struct P2pBalancedRow {
  double fillUs, ctaGBs, pairedCtaGBs, capGBs;
};

// tuner_model.def's BRAID_TUNER_RECV_TAIL rows; ctaGBs 0: no tail.
struct RecvTailRow {
  double ctaGBs = 0, capUs = 0;
};

// tuner_model.def's BRAID_TUNER_LOCAL_COPY row.
struct LocalCopyRow {
  double fillUs = 0, ctaGBs = 0, capGBs = 0;
};

// tuner_model.def's BRAID_TUNER_TREE rows: the share of a ring channel's bandwidth a tree channel reaches.
struct TreeRow {
  double eff = 0.5;        // where no row says otherwise
  double stepScale = 1.0;  // a tree hop's latency over the ring's (stepUs)
  bool measured = false;
};

// tuner_model.def's BRAID_TUNER_TREE_NET rows (GPU trees across nodes); fillGBs 0: no row for that protocol.
struct TreeNetRow {
  double netScale = 1.0, intraScale = 1.0, eff = 1.0, fillGBs = 0;
  bool measured = false;
};

struct ModelTable {
  ModelRow rows[kNumTransportClasses][kNumProtos] = {};
  TreeRow tree[kNumTransportClasses] = {};
  TreeNetRow treeNet[kNumProtos] = {};
  RecvTailRow recvTail[kNumTransportClasses][kNumProtos] = {};
  P2pBalancedRow balanced[kNumTransportClasses] = {};
  LocalCopyRow localCopy;
  ModelTable() {
#define BRAID_TUNER_ROW(T, P, base, step, chunkUs, perCh, bwCh, cap, maxCh, chunkB, meas) \
  rows[static_cast<int>(TransportClass::T)][static_cast<int>(Proto::P)] =              \
      ModelRow{base, step, chunkUs, perCh, bwCh, cap, maxCh, static_cast<size_t>(chunkB), meas};
#define BRAID_TUNER_CLUSTERED_RING(minCh, three, from, to)
#define BRAID_TUNER_P2P_BALANCED(T, fill, cta, pairedCta, cap) \
  balanced[static_cast<int>(TransportClass::T)] = P2pBalancedRow{fill, cta, pairedCta, cap};
#define BRAID_TUNER_LOCAL_COPY(fill, cta, cap) localCopy = LocalCopyRow{fill, cta, cap};
#define BRAID_TUNER_RECV_TAIL(T, P, ctaGBs, capUs) \
  recvTail[static_cast<int>(TransportClass::T)][static_cast<int>(Proto::P)] = RecvTailRow{ctaGBs, capUs};
#define BRAID_TUNER_TREE(T, eff, stepScale, meas) \
  tree[static_cast<int>(TransportClass::T)] = TreeRow{eff, stepScale, meas};
#define BRAID_TUNER_TREE_NET(P, netScale, intraScale, eff, fill, meas) \
  treeNet[static_cast<int>(Proto::P)] = TreeNetRow{netScale, intraScale, eff, fill, meas};
#include "tuner/tuner_model.def"
#undef BRAID_TUNER_TREE_NET
#undef BRAID_TUNER_TREE
#undef BRAID_TUNER_RECV_TAIL
#undef BRAID_TUNER_LOCAL_COPY
#undef BRAID_TUNER_P2P_BALANCED
#undef BRAID_TUNER_CLUSTERED_RING
#undef BRAID_TUNER_ROW
  }
};

const ModelTable& modelTable() {
  static const ModelTable table;
  return table;
}

const ModelRow& row(TransportClass t, Proto p) { return modelTable().rows[static_cast<int>(t)][static_cast<int>(p)]; }

// tuner_model.def's BRAID_TUNER_CLUSTERED_RING rows, in order.
struct ClusteredRingRange {
  int minChannels;
  bool three;                 // only where every rank's ring launches in clusters of 3
  size_t fromBytes, toBytes;  // toBytes 0: no end
};
constexpr ClusteredRingRange kClusteredRingRanges[] = {
#define BRAID_TUNER_ROW(...)
#define BRAID_TUNER_P2P_BALANCED(...)
#define BRAID_TUNER_LOCAL_COPY(...)
#define BRAID_TUNER_RECV_TAIL(...)
#define BRAID_TUNER_TREE(...)
#define BRAID_TUNER_TREE_NET(...)
#define BRAID_TUNER_CLUSTERED_RING(minCh, three, from, to) ClusteredRingRange{minCh, three, from, to},
#include "tuner/tuner_model.def"
#undef BRAID_TUNER_TREE_NET
#undef BRAID_TUNER_TREE
#undef BRAID_TUNER_CLUSTERED_RING
#undef BRAID_TUNER_RECV_TAIL
#undef BRAID_TUNER_LOCAL_COPY
#undef BRAID_TUNER_P2P_BALANCED
#undef BRAID_TUNER_ROW
};

bool isHost(TransportClass t) { return t == TransportClass::HostShm || t == TransportClass::HostSocket; }
bool isP2p(TransportClass t) { return t == TransportClass::P2pNvlink || t == TransportClass::P2pPcie; }
// LL128 relies on a warp's 128-byte store arriving whole, which only NVLink on sm_90+ guarantees.
bool ll128Safe(const TuneRequest& r) { return r.transport == TransportClass::P2pNvlink && r.smVersion >= 90; }

// ---------------------------------------------------------------------------------------------------------
// Algorithm shapes: bytes each rank moves over its busiest link, latency steps, bandwidth efficiency.

struct Shape {
  double wireBytes = 0;
  int steps = 0;
  double stepScale = 1.0;  // each step's latency in the row's stepUs
  double eff = 1.0;
  // GPU trees and rings across nodes: the hops inside a node, each at intraStepUs; the tree's hops that pass a
  // channel's first chunk on at fillGBs (BRAID_TUNER_TREE_NET; 0: no such term).
  int intraSteps = 0;
  double intraStepUs = 0;
  int fillHops = 0;
  double fillGBs = 0;
  // GPU paths over the network: each channel beyond the first that carries data (activeChannels of cutBytes: a
  // small op leaves the last channels empty) costs perChannelUs at each of channelSteps steps, not once per call.
  int channelSteps = 1;
  double cutBytes = -1;  // the bytes channelRange cuts; < 0: every channel counts
  bool ok = false;
};

// Channels of n that carry data of `cutBytes` (an all-gather's or reduce-scatter's op is one rank's part), cut as
// channelRange cuts: shares of ceil(bytes / n) rounded up to 64 bytes, the last ones short or empty.
double activeChannels(double cutBytes, double n) {
  if (cutBytes < 0) return n;
  const double share = std::ceil(std::ceil(cutBytes / n) / 64.0) * 64.0;
  return share > 0 ? std::max(1.0, std::min(n, std::ceil(cutBytes / share))) : 1.0;
}

// One GPU per node: a network step's latency over what it is with several (fitted with the NetSocket rows).
constexpr double kNetSoloLatencyLoad = 1.25;

// One GPU per node, ring or tree: each rank's proxy carries both directions, which doubles its bytes and its
// channels' costs and lengthens a step.
void netSoloLoad(Shape* s) {
  s->stepScale *= kNetSoloLatencyLoad;
  s->eff /= 2;
  s->channelSteps *= 2;
}

// A GPU ring over the network (tuner_model.def, NetSocket): the ring crosses each node's boundary once, so the
// slowest rank's data crosses the network `nodes` times in each lap of up to n steps it makes, and its other steps
// run inside a node at the intra row's stepUs. One GPU per node: netSoloLoad. Broadcast and reduce pipeline from one
// call to the next: a call costs one rank's busiest link, one network step. Each channel that carries data adds
// perChannelUs at every network step (the proxy's socket calls for it: tuner_model.def).
void netRingShape(CollType c, int n, int nNodes, double S, Proto p, TransportClass intra, Shape* s) {
  const int nodes = nNodes >= 2 ? std::min(nNodes, n) : n;  // NET inside one node: every hop crosses
  const bool chain = c == CollType::Broadcast || c == CollType::Reduce;
  const bool solo = n <= nodes && !chain;
  const int net = chain ? 1 : std::min(s->steps, nodes * ((s->steps + n - 1) / n));
  s->intraSteps = chain ? 0 : s->steps - net;
  s->intraStepUs = s->intraSteps > 0 ? row(intra, p).stepUs : 0.0;
  s->steps = net;
  s->channelSteps = net;
  if (solo) netSoloLoad(s);
  const bool perRank = c == CollType::AllGather || c == CollType::ReduceScatter;
  s->cutBytes = perRank ? S / n : S;
}

// intra, ringIntra: the classes of the tree's and of the ring's hops inside a node (across nodes).
Shape shapeOf(Algo a, CollType c, int n, size_t bytes, TransportClass t, Proto p, int nNodes,
              TransportClass intra = TransportClass::P2pNvlink, TransportClass ringIntra = TransportClass::P2pNvlink) {
  Shape s;
  double S = static_cast<double>(bytes);
  double frac = n > 1 ? static_cast<double>(n - 1) / n : 0.0;
  if (isP2pColl(c)) {
    if (a != Algo::Ring) return s;
    s.ok = true;
    bool single = c == CollType::Send || c == CollType::Recv;
    s.wireBytes = single ? S : frac * S;
    s.steps = 1;
    return s;
  }
  switch (a) {
    case Algo::Ring:
      s.ok = true;
      if (c == CollType::AllReduce) {
        s.wireBytes = 2 * frac * S;
        s.steps = 2 * (n - 1);
      } else if (c == CollType::AllGather || c == CollType::ReduceScatter) {
        s.wireBytes = frac * S;
        s.steps = n - 1;
      } else {  // broadcast, reduce: pipelined along the ring
        s.wireBytes = n > 1 ? S : 0;
        s.steps = n - 1;
      }
      if (t == TransportClass::NetSocket && n > 1) netRingShape(c, n, nNodes, S, p, ringIntra, &s);
      return s;
    case Algo::Tree: {
      // Reduce up and broadcast down the double binary tree (tree_topology.h): a binary tree over the nodes, a
      // chain inside each, so its latency grows with log2(nodes) where the ring's grows with the ranks. The
      // same workers reduce and forward, so a channel reaches a share of a ring channel's bandwidth
      // (BRAID_TUNER_TREE; 0.5 where no row says), and a hop may cost more than a ring's.
      if (c != CollType::AllReduce || n < 2) return s;
      s.ok = true;
      const int nodes = std::max(1, std::min(nNodes, n));
      const int perNode = (n + nodes - 1) / nodes;
      const TreeNetRow& g = modelTable().treeNet[static_cast<int>(p)];
      if (!isHost(t) && nodes >= 2 && g.fillGBs > 0) {
        // A GPU communicator across nodes: `t` is the network's class (the ring's slowest hop), the chains inside
        // the nodes run on `intra`; each hop priced by what it crosses (tuner_model.def, BRAID_TUNER_TREE_NET).
        int net = 0, chain = 0;
        treeHops(nodes, perNode, &net, &chain);
        s.wireBytes = nodes >= 3 ? 2 * S : S;
        s.steps = 2 * net;
        s.stepScale = g.netScale;
        s.eff = g.eff;
        s.intraSteps = 2 * chain;
        s.intraStepUs = row(intra, p).stepUs * g.intraScale;
        s.fillHops = 2 * (net + chain);
        s.fillGBs = g.fillGBs;
        s.channelSteps = s.steps;
        s.cutBytes = S;
        if (perNode == 1) netSoloLoad(&s);
        return s;
      }
      s.wireBytes = S;
      s.steps = 2 * treeDepthBound(nodes, perNode);
      s.eff = modelTable().tree[static_cast<int>(t)].eff;
      s.stepScale = modelTable().tree[static_cast<int>(t)].stepScale;
      return s;
    }
    case Algo::OneShot:
    case Algo::TwoShot:
      // Direct all-reduce: needs every peer reachable by P2P. Braid's 2-rank one-shot runs on the ring's
      // primitives, so on any protocol; more ranks (peer-mapped staging buffers, not run yet) would run their
      // own flag protocol (LL-style lines or SIMPLE barriers), not LL128.
      if (c != CollType::AllReduce || !isP2p(t) || n < 2 || (p == Proto::LL128 && (n != 2 || a != Algo::OneShot)))
        return s;
      s.ok = true;
      if (a == Algo::OneShot) {  // every rank gets all peers' full buffers, reduces locally
        s.wireBytes = (n - 1) * S;
        s.steps = 1;
        // 2 ranks: Braid's one-shot pushes through the ring's FIFOs with the ring's primitives, the same bytes
        // as the ring in one hop. More ranks (not run by Braid yet): remote loads, estimated less efficient.
        s.eff = n == 2 ? 1.0 : 0.8;
      } else {        // direct reduce-scatter, then direct all-gather
        s.wireBytes = 2 * frac * S;
        s.steps = 2;
        s.eff = 0.9;
      }
      return s;
    default:  // CollNet, NVLS, PAT: known names, never run by Braid
      return s;
  }
}

uint32_t applicableAlgos(const TuneRequest& r) {
  uint32_t m = 0;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (shapeOf(static_cast<Algo>(a), r.coll, r.nranks, 0, r.transport, static_cast<Proto>(p), r.nNodes).ok)
        m |= 1u << a;
  return m & (isP2pColl(r.coll) ? bit(Algo::Ring) : r.algosAvailable);
}

size_t chunkFor(const TuneRequest& r, Proto p, int64_t buffSize) {
  const ModelRow& m = row(r.transport, p);
  if (m.chunkBytes) return m.chunkBytes;
  // SIMPLE: NCCL_BUFFSIZE split in kStepsPerBuffer steps; a floor keeps the step count sane for tiny buffers.
  return std::max<size_t>(4096, static_cast<size_t>(buffSize) / kStepsPerBuffer);
}

int threadsFor(const TuneRequest& r, Proto p, const TunerConfig& cfg, int maxThreads) {
  if (isHost(r.transport)) return 1;
  int t = cfg.nThreads > 0 ? cfg.nThreads : (p == Proto::LL128 ? 640 : 512);
  return std::max(64, std::min(t, maxThreads)) / 32 * 32;
}

// Warn once per (reason, transport class) so a forced, refused protocol is said once, not on every call.
std::atomic<uint32_t> gWarned{0};
bool firstWarning(uint32_t reasonBit, TransportClass t) {
  uint32_t b = 1u << (static_cast<int>(t) * 4 + __builtin_ctz(reasonBit));
  return !(gWarned.fetch_or(b) & b);
}

struct Best {
  double us = kInf;
  Algo algo = Algo::Ring;
  Proto proto = Proto::Simple;
  int nChannels = 1;
  size_t chunk = 0;
};

// The channel count minimising perChannelUs*channelSteps*n + W/(n*bwPerCh*eff):
// n* = sqrt(W / (bwPerCh*eff*perChannelUs*channelSteps)),
// checked with the full formula at the bounds and the integers around n*.
void searchPair(const TuneRequest& r, Algo a, Proto p, int lo, int hi, size_t chunk, Best* best) {
  const ModelRow& m = row(r.transport, p);
  Shape s = shapeOf(a, r.coll, r.nranks, r.bytes, r.transport, p, r.nNodes, r.intraTransport, r.ringIntraTransport);
  if (!s.ok || m.bwPerChGBs <= 0) return;
  int cands[4] = {lo, hi, lo, hi};
  if (m.perChannelUs > 0 && s.wireBytes > 0) {
    double nStar = std::sqrt(s.wireBytes / 1e3 / (m.bwPerChGBs * s.eff * m.perChannelUs * s.channelSteps));
    double f = std::floor(std::min(nStar, static_cast<double>(hi)));
    cands[2] = std::max(lo, std::min(hi, static_cast<int>(f)));
    cands[3] = std::max(lo, std::min(hi, static_cast<int>(f) + 1));
  }
  for (int n : cands) {
    double us = predictUs(r, a, p, n, chunk);
    // A tie (channels that would carry no data) goes to fewer channels.
    const bool fewer = us == best->us && a == best->algo && p == best->proto && n < best->nChannels;
    if (us < best->us || fewer) *best = Best{us, a, p, n, chunk};
  }
}

void searchAll(const TuneRequest& r, uint32_t algos, uint32_t protos, const int lo[], const int hi[],
               const size_t chunk[], Best* best) {
  for (int p = 0; p < kNumProtos; ++p) {
    if (!(protos & (1u << p))) continue;
    for (int a = 0; a < kNumAlgos; ++a)
      if (algos & (1u << a)) searchPair(r, static_cast<Algo>(a), static_cast<Proto>(p), lo[p], hi[p], chunk[p], best);
  }
}

}  // namespace

const char* algoName(Algo a) { return a < Algo::kCount ? kAlgoNames[static_cast<int>(a)] : "?"; }
const char* protoName(Proto p) { return p < Proto::kCount ? kProtoNames[static_cast<int>(p)] : "?"; }
const char* transportClassName(TransportClass t) {
  return t < TransportClass::kCount ? kTransportNames[static_cast<int>(t)] : "?";
}

ncclResult_t parseAlgoList(const char* var, const std::string& value, SelectionMask* out) {
  return parseSelection(var, value, kAlgoNames, kNumAlgos, "algorithm", out);
}
ncclResult_t parseProtoList(const char* var, const std::string& value, SelectionMask* out) {
  return parseSelection(var, value, kProtoNames, kNumProtos, "protocol", out);
}

TunerConfig::TunerConfig() {
  for (uint32_t& m : algos.mask) m = kAllAlgosMask;
  for (uint32_t& m : protos.mask) m = kAllProtosMask;
}

ncclResult_t loadTunerConfig(TunerConfig* out) {
  TunerConfig cfg;
  BRAID_CHECK(parseAlgoList("NCCL_ALGO", params::Algo(), &cfg.algos));
  BRAID_CHECK(parseProtoList("NCCL_PROTO", params::Proto(), &cfg.protos));
  // Same precedence as gpu_comm.cc's channel setup: the larger minimum, the explicit maximum first.
  int64_t lo = std::max<int64_t>(params::MinNChannels(), params::MinCtas());
  int64_t hi = envMaxChannels();
  cfg.minChannels = lo > 0 ? static_cast<int>(std::min<int64_t>(lo, kTunerMaxChannels)) : -1;
  cfg.maxChannels = hi > 0 ? static_cast<int>(std::min<int64_t>(hi, kTunerMaxChannels)) : -1;
  int64_t t = params::NThreads();
  cfg.nThreads = t > 0 ? static_cast<int>(std::min<int64_t>(t, 1024)) : -1;
  cfg.buffSize = buffSizeBytes(false);  // this rank's; a communicator's tuner takes the agreed FIFO size instead
  int64_t ps = params::PipelineSteps();
  if (ps < 0 || ps > 64) {
    BRAID_WARN("BRAID_PIPELINE_STEPS=%lld is outside [0, 64]; using 0 (auto)", static_cast<long long>(ps));
    ps = 0;
  }
  cfg.pipelineSteps = static_cast<int>(ps);
  cfg.oneShotSplit = params::OneShotSplit() != 0;
  cfg.maxCtas = hi > 0 ? static_cast<int>(std::min<int64_t>(hi, 1 << 20)) : -1;
  const int64_t p2p = params::MaxP2pNChannels();
  cfg.maxP2pCtas = p2p > 0 ? static_cast<int>(std::min<int64_t>(p2p, 1 << 20)) : -1;
  *out = cfg;
  return ncclSuccess;
}

bool modelRowMeasured(TransportClass t, Proto p) {
  return t < TransportClass::kCount && p < Proto::kCount && row(t, p).measured && row(t, p).bwPerChGBs > 0;
}

double predictUs(const TuneRequest& r, Algo algo, Proto proto, int nChannels, size_t chunkBytes) {
  if (algo >= Algo::kCount || proto >= Proto::kCount || nChannels < 1) return kInf;
  if (proto == Proto::LL128 && !ll128Safe(r)) return kInf;
  const ModelRow& m = row(r.transport, proto);
  if (m.bwPerChGBs <= 0) return kInf;
  Shape s = shapeOf(algo, r.coll, r.nranks, r.bytes, r.transport, proto, r.nNodes, r.intraTransport,
                    r.ringIntraTransport);
  if (!s.ok) return kInf;
  double n = nChannels;
  // Channels that carry data (all, but on the network's shapes; Shape::cutBytes).
  const double active = activeChannels(s.cutBytes, n);
  // GB/s = bytes per ns, so bytes / (GB/s) / 1e3 is microseconds.
  double bwUs = s.wireBytes / (active * m.bwPerChGBs * s.eff) / 1e3 + s.wireBytes / (m.capGBs * s.eff) / 1e3;
  double perChannel = s.wireBytes / n;
  double chunks = chunkBytes ? std::ceil(perChannel / static_cast<double>(chunkBytes)) : 1.0;
  chunks = std::max(1.0, chunks);
  // baseUs covers the first channel; each further one adds its launch/scheduling cost, on the network's shapes at
  // each network step (Shape::channelSteps).
  // The last step's reduction or copy at the receiver after it lands (BRAID_TUNER_RECV_TAIL): the ring collectives.
  const RecvTailRow& rt = modelTable().recvTail[static_cast<int>(r.transport)][static_cast<int>(proto)];
  const double tail = !isP2pColl(r.coll) && rt.ctaGBs > 0 ? std::min(rt.capUs, perChannel / rt.ctaGBs / 1e3) : 0.0;
  // A GPU tree's hops each pass a channel's first chunk (half its share: one per tree) on before the next starts.
  double fill = 0;
  if (s.fillGBs > 0) {
    const double half = static_cast<double>(r.bytes) / (2 * active);
    fill = s.fillHops * (chunkBytes ? std::min(half, static_cast<double>(chunkBytes)) : half) / s.fillGBs / 1e3;
  }
  return m.baseUs + m.perChannelUs * (active - 1) * s.channelSteps + s.steps * m.stepUs * s.stepScale +
         s.intraSteps * s.intraStepUs +
         chunks * m.chunkUs + bwUs + tail + fill;
}

TuneDecision tune(const TuneRequest& r, const TunerConfig& cfg) {
  TuneDecision d;
  const int c = static_cast<int>(r.coll);
  // Protocols this path can run at all.
  uint32_t usableP = r.protosAvailable;
  for (int p = 0; p < kNumProtos; ++p)
    if (row(r.transport, static_cast<Proto>(p)).bwPerChGBs <= 0) usableP &= ~(1u << p);
  uint32_t askedP = cfg.protos.mask[c];
  if (!ll128Safe(r) && (usableP & bit(Proto::LL128))) usableP &= ~bit(Proto::LL128);
  if (cfg.protos.overridden && (askedP & bit(Proto::LL128)) && !ll128Safe(r)) {
    if ((askedP & usableP) == 0) {
      // LL128 was forced: refuse it loudly (once per path) and fall back below.
      d.flags |= kTuneLl128Refused;
      if (firstWarning(kTuneLl128Refused, r.transport))
        BRAID_WARN("NCCL_PROTO forces LL128 but %s%s does not guarantee whole 128-byte stores: LL128 refused",
                   transportClassName(r.transport), r.transport == TransportClass::P2pNvlink ? " before sm_90" : "");
    } else {
      BRAID_INFO(kSubTuning, "NCCL_PROTO allows LL128, not used on %s (128-byte stores not guaranteed whole)",
                 transportClassName(r.transport));
    }
  }
  if (usableP == 0) usableP = bit(Proto::Simple);  // every executor runs SIMPLE
  uint32_t allowedP = askedP & usableP;
  if (allowedP == 0) {
    d.flags |= kTuneProtoFallback;
    allowedP = usableP;
  }
  uint32_t applicableA = applicableAlgos(r);
  if (applicableA == 0) applicableA = bit(Algo::Ring);
  uint32_t allowedA = isP2pColl(r.coll) ? applicableA : (cfg.algos.mask[c] & applicableA);
  if (allowedA == 0) {
    d.flags |= kTuneAlgoFallback;
    allowedA = applicableA;
  }

  // Channel bounds per protocol: env bounds within what the comm connected; the model's preference inside.
  int hard = r.connectedChannels > 0 ? std::min(r.connectedChannels, kTunerMaxChannels) : kTunerMaxChannels;
  if (cfg.maxChannels > 0) hard = std::min(hard, cfg.maxChannels);
  int lo[kNumProtos], hi[kNumProtos];
  size_t chunk[kNumProtos];
  for (int p = 0; p < kNumProtos; ++p) {
    const ModelRow& m = row(r.transport, static_cast<Proto>(p));
    lo[p] = std::max(1, std::min(cfg.minChannels > 0 ? cfg.minChannels : 1, hard));
    hi[p] = std::max(lo[p], std::min(hard, std::max(1, m.maxChannels)));
    chunk[p] = chunkFor(r, static_cast<Proto>(p), cfg.buffSize);
  }

  Best best;
  searchAll(r, allowedA, allowedP, lo, hi, chunk, &best);
  // Allowed algorithms and protocols may not combine (e.g. OneShot with only LL128 on 4+ ranks): relax one,
  // then both.
  if (best.us == kInf) {
    searchAll(r, allowedA, usableP, lo, hi, chunk, &best);
    if (best.us < kInf) d.flags |= kTuneProtoFallback;
  }
  if (best.us == kInf) {
    searchAll(r, applicableA, allowedP, lo, hi, chunk, &best);
    if (best.us < kInf) d.flags |= kTuneAlgoFallback;
  }
  if (best.us == kInf) {
    searchAll(r, applicableA, usableP, lo, hi, chunk, &best);
    d.flags |= kTuneAlgoFallback | kTuneProtoFallback;
  }
  if (best.us == kInf) best = Best{predictUs(r, Algo::Ring, Proto::Simple, lo[2], chunk[2]), Algo::Ring,
                                   Proto::Simple, lo[2], chunk[2]};
  if ((d.flags & (kTuneProtoFallback | kTuneAlgoFallback)) && !(d.flags & kTuneLl128Refused) &&
      firstWarning(d.flags & kTuneProtoFallback ? kTuneProtoFallback : kTuneAlgoFallback, r.transport))
    BRAID_WARN("NCCL_ALGO/NCCL_PROTO leave nothing usable for %s on %s: using %s/%s instead", collName(r.coll),
               transportClassName(r.transport), algoName(best.algo), protoName(best.proto));

  d.algo = best.algo;
  d.proto = best.proto;
  d.nChannels = best.nChannels;
  d.chunkBytes = best.chunk;
  d.predictedUs = best.us;
  d.nThreads = threadsFor(r, best.proto, cfg, r.maxThreads);
  BRAID_INFO(kSubTuning, "%s %zu bytes, %d ranks, %s: %s/%s, %d channels x %d threads, chunk %zu, predicted %.2f us%s",
             collName(r.coll), r.bytes, r.nranks, transportClassName(r.transport), algoName(d.algo),
             protoName(d.proto), d.nChannels, d.nThreads, d.chunkBytes, d.predictedUs,
             d.flags ? " (override not fully honoured)" : "");
  return d;
}

bool oneShotSplitRuns(const TunerConfig& cfg, size_t count, size_t esize, int nChannels, uint32_t stepCap,
                      uint32_t connStepBytes, uint32_t nSteps) {
  if (!oneShotSplitFits(cfg, nChannels) || connStepBytes == 0) return false;
  const size_t steps = oneShotChannelSteps(count, esize, nChannels, stepCap, connStepBytes);
  return steps >= 2 && steps < nSteps;
}

bool clusteredRingOverUnsplitOneShot(size_t bytes, int nChannels, bool clusterThree) {
  if (bytes < kClusterMinBytes) return false;
  for (const ClusteredRingRange& r : kClusteredRingRanges)
    if (nChannels >= r.minChannels && (clusterThree || !r.three))
      return bytes >= r.fromBytes && (r.toBytes == 0 || bytes < r.toBytes);
  return false;
}

uint32_t simpleStepCap(CollType coll, bool oneShot, size_t bytes, int nranks, int nChannels, TransportClass t,
                       const TunerConfig& cfg) {
  const size_t connStep = static_cast<size_t>(cfg.buffSize) / kStepsPerBuffer;
  const size_t ch = static_cast<size_t>(std::max(1, nChannels));
  size_t cap = 0;
  if (cfg.pipelineSteps >= 1) {
    // 4 KiB multiples keep every step 64-byte aligned; 16 KiB at least keeps the per-step overhead bounded.
    const size_t steps = static_cast<size_t>(cfg.pipelineSteps);
    if (steps == 1) return 0;
    cap = ((bytes + ch - 1) / ch + steps - 1) / steps;
    cap = std::max<size_t>(size_t(16) << 10, (cap + 4095) & ~size_t(4095));
  } else {
    if (nranks != 2 || t != TransportClass::P2pNvlink) return 0;
    if (coll == CollType::AllReduce && oneShot && oneShotSplitFits(cfg, nChannels) && bytes / ch >= kSplitMinShareBytes) {
      // The split one-shot: four steps, the receiving CTA reducing one while the next crosses.
      cap = ((bytes / ch + 3) / 4 + 4095) & ~size_t(4095);
      return cap < connStep ? static_cast<uint32_t>(cap) : 0;
    }
    size_t segment = 0;  // per channel and ring step
    switch (coll) {
      case CollType::AllReduce: segment = oneShot ? bytes / ch : bytes / ch / 2; break;
      case CollType::AllGather:
      case CollType::ReduceScatter: segment = bytes / 2 / ch; break;
      default: return 0;  // broadcast and reduce measured no faster (docs/TUNING.md, "FIFO sizes and steps")
    }
    if (segment < connStep || segment >= 2 * connStep) return 0;
    cap = ((segment + 1) / 2 + 4095) & ~size_t(4095);
  }
  return cap < connStep ? static_cast<uint32_t>(cap) : 0;
}

size_t opBytes(const OpDesc& op, int nranks) {
  size_t b = op.count * dtypeSize(op.dtype);
  switch (op.coll) {
    case CollType::AllGather:
    case CollType::ReduceScatter:
    case CollType::AllToAll:
    case CollType::Gather:
    case CollType::Scatter:
      return b * static_cast<size_t>(std::max(1, nranks));
    default:
      return b;
  }
}

TuneRequest makeTuneRequest(const OpDesc& op, int nranks, TransportClass transport) {
  TuneRequest r;
  r.coll = op.coll;
  r.bytes = opBytes(op, nranks);
  r.nranks = nranks;
  r.transport = transport;
  return r;
}

TuneRequest ringSimpleRequest(const OpDesc& op, int nranks, TransportClass transport, int maxCh, int maxThreads) {
  TuneRequest req = makeTuneRequest(op, nranks, transport);
  req.algosAvailable = bit(Algo::Ring);
  req.protosAvailable = bit(Proto::Simple);
  req.connectedChannels = maxCh;
  req.maxThreads = maxThreads;
  return req;
}

int tunedRingChannels(const OpDesc& op, int nranks, TransportClass transport, int maxCh, int maxThreads,
                      const TunerConfig& cfg, ChannelMemo* memo) {
  const size_t bytes = opBytes(op, nranks);
  if (!logEnabled(LogLevel::Info, kSubTuning) && memo->coll == op.coll && memo->bytes == bytes && memo->maxCh == maxCh)
    return memo->nch;
  const TuneDecision d = tune(ringSimpleRequest(op, nranks, transport, maxCh, maxThreads), cfg);
  *memo = ChannelMemo{op.coll, bytes, maxCh, std::max(1, std::min(d.nChannels, maxCh))};
  return memo->nch;
}

double predictP2pUs(const OpDesc& op, int nranks, int rank, TransportClass transport, const P2pCutFacts& facts) {
  const size_t bytes = op.count * dtypeSize(op.dtype);
  if (bytes == 0 || !isP2pColl(op.coll)) return 0;
  const int n = std::max(1, nranks);
  const int next = facts.ringNext >= 0 ? facts.ringNext : (rank + 1) % n;
  const int prev = facts.ringPrev >= 0 ? facts.ringPrev : (rank - 1 + n) % n;
  // One transfer of `bytes`: over the ring's channels (the neighbour, or the rank itself) or one connection.
  const bool oneWay = isOneWayColl(op.coll);
  const P2pCtaBudget& cut = facts.cut;
  const int over = p2pCutChannels(oneWay, cut.nChannels, cut.oneWayChannels);
  const bool coll = n > 2 && op.coll != CollType::Send && op.coll != CollType::Recv;
  auto transfer = [&](bool ring) {
    int cap = ring ? 0 : std::max(1, facts.peerConnChannels);
    if (coll) cap = cap > 0 ? std::min(cap, facts.peerChannels) : facts.peerChannels;
    const int nch = p2pTransferChannels(bytes, over, cap, cut.llChannels, facts.channelBytes, facts.llThreshold);
    // LL as planP2p decides it for the transfer's full shares (the last, shorter one may differ).
    const bool ll =
        facts.llSlots && p2pShareBytes(bytes, nch) <= facts.llThreshold && row(transport, Proto::LL).bwPerChGBs > 0;
    TuneRequest r;
    r.coll = CollType::Send;
    r.bytes = bytes;
    r.nranks = n;
    r.transport = transport;
    const double simple = predictUs(r, Algo::Ring, ll ? Proto::LL : Proto::Simple, nch, 0);
    // Where balancing is on and the path has a measured row (tuner_model.def): balanced transfers take that row's
    // fit; the other SIMPLE ring transfers the Simple row (fitted to reduce-copy collectives, 23-40% high for ~8 MB
    // copies on 11-12 channels) bounded by it, so the estimate does not drop where balancing starts (it did by up
    // to 19% at BRAID_P2P_BALANCE_BYTES, and more for larger values). A paired budget pairs a send with the receive
    // on its channel where the group has both; a lone send is estimated at the paired rate too (the op alone cannot
    // tell).
    const P2pBalancedRow& bal = modelTable().balanced[static_cast<int>(transport)];
    if (ll || bal.capGBs <= 0 || facts.balanceMinShare == 0) return simple;
    const double perCta = cut.pair && !oneWay ? bal.pairedCtaGBs : bal.ctaGBs;
    const double balanced = bal.fillUs + static_cast<double>(bytes) / std::min(nch * perCta, bal.capGBs) / 1e3;
    return p2pBalanced(bytes, nch, facts.balanceMinShare) ? balanced : std::min(simple, balanced);
  };
  // Transfers to or from every other rank, side by side: the ring neighbour's on the ring's channels, the others'
  // (3+ ranks) on their own connections.
  auto fanOut = [&] { return n > 2 ? std::max(transfer(true), transfer(false)) : transfer(true); };
  // A send to or receive from the rank itself: a local copy on the launch's copy CTAs (planP2p), not the link. (A group
  // with nothing else runs it on the copy engine instead, at about the same rate.) The root's own share of a gather or
  // scatter and all-to-all's run beside the transfers and end first, so those estimates leave them out.
  auto localCopy = [&] {
    const LocalCopyRow& c = modelTable().localCopy;
    const double ctas = p2pCopyCtas(bytes, cut.maxCopyCtas);
    return c.fillUs + static_cast<double>(bytes) / std::min(ctas * c.ctaGBs, c.capGBs) / 1e3;
  };
  switch (op.coll) {
    case CollType::Send:
      return op.peer == rank ? localCopy() : transfer(op.peer == next);
    case CollType::Recv:
      return op.peer == rank ? localCopy() : transfer(op.peer == prev);
    case CollType::AllToAll: return fanOut();
    case CollType::Gather: return rank == op.root ? fanOut() : transfer(op.root == next);
    case CollType::Scatter: return rank == op.root ? fanOut() : transfer(op.root == prev);
    default: return 0;
  }
}

double groupTimeUs(const std::vector<TimedOp>& ops) {
  std::vector<std::pair<const void*, std::pair<double, double>>> perComm;  // collectives' sum, slowest p2p op
  for (const TimedOp& op : ops) {
    auto it = std::find_if(perComm.begin(), perComm.end(), [&](const auto& e) { return e.first == op.comm; });
    if (it == perComm.end()) it = perComm.insert(perComm.end(), {op.comm, {0.0, 0.0}});
    auto& [collUs, p2pUs] = it->second;
    if (op.p2p) p2pUs = std::max(p2pUs, op.us);
    else collUs += op.us;
  }
  double us = 0;
  for (const auto& e : perComm) us = std::max(us, e.second.first + e.second.second);
  return us;
}

}  // namespace braid
