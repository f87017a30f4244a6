// The tuner on the CPU: NCCL_ALGO / NCCL_PROTO parsing (every form, every bad form), decisions over a grid of
// sizes x ranks x transport classes, overrides and bounds honoured, LL128 refused off NVLink, group estimates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/param.h"
#include "core/result.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

constexpr int kAR = static_cast<int>(CollType::AllReduce);
constexpr int kBC = static_cast<int>(CollType::Broadcast);
constexpr int kAG = static_cast<int>(CollType::AllGather);
constexpr int kSend = static_cast<int>(CollType::Send);
constexpr int kRecv = static_cast<int>(CollType::Recv);

// ------------------------------------------------------------------------------------------------ parsing

TEST(TunerParse, EmptyMeansEverything) {
  SelectionMask m;
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "", &m), ncclSuccess);
  EXPECT_FALSE(m.overridden);
  for (uint32_t x : m.mask) EXPECT_EQ(x, kAllProtosMask);
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "  ", &m), ncclSuccess);
  for (uint32_t x : m.mask) EXPECT_EQ(x, kAllAlgosMask);
}

TEST(TunerParse, ListsCaseInsensitive) {
  SelectionMask m;
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "ll, SIMPLE", &m), ncclSuccess);
  EXPECT_TRUE(m.overridden);
  for (uint32_t x : m.mask) EXPECT_EQ(x, bit(Proto::LL) | bit(Proto::Simple));
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "Ll128", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kAR], bit(Proto::LL128));
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "RING,tree,oneshot,TwoShot", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kAR], bit(Algo::Ring) | bit(Algo::Tree) | bit(Algo::OneShot) | bit(Algo::TwoShot));
  // NCCL's own names parse (scripts written for NCCL keep working) even though Braid never runs them.
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "^NVLS,nvlstree,CollNetDirect,collnetchain,PAT", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kAR], kBraidAlgosMask);
}

TEST(TunerParse, Exclusion) {
  SelectionMask m;
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "^LL128", &m), ncclSuccess);
  for (uint32_t x : m.mask) EXPECT_EQ(x, bit(Proto::LL) | bit(Proto::Simple));
  ASSERT_EQ(parseProtoList("NCCL_PROTO", " ^ ll , ll128 ", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kBC], bit(Proto::Simple));
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "^tree", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kAR], kAllAlgosMask & ~bit(Algo::Tree));
}

TEST(TunerParse, PerCollective) {
  SelectionMask m;
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "allreduce:tree,ring;broadcast:ring", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kAR], bit(Algo::Tree) | bit(Algo::Ring));
  EXPECT_EQ(m.mask[kBC], bit(Algo::Ring));
  EXPECT_EQ(m.mask[kAG], kAllAlgosMask);  // not named: unrestricted
  // A default list plus per-collective overrides, in either order; collective names case-insensitive.
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "AllReduce:^ring;ring", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kAR], kAllAlgosMask & ~bit(Algo::Ring));
  EXPECT_EQ(m.mask[kAG], bit(Algo::Ring));
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "simple;sendrecv:LL;allgather:^simple", &m), ncclSuccess);
  EXPECT_EQ(m.mask[kSend], bit(Proto::LL));
  EXPECT_EQ(m.mask[kRecv], bit(Proto::LL));
  EXPECT_EQ(m.mask[kAG], bit(Proto::LL) | bit(Proto::LL128));
  EXPECT_EQ(m.mask[kAR], bit(Proto::Simple));
  for (const char* coll : {"broadcast", "reduce", "allgather", "reducescatter", "allreduce", "sendrecv", "send",
                           "recv", "alltoall", "gather", "scatter"}) {
    EXPECT_EQ(parseProtoList("NCCL_PROTO", std::string(coll) + ":simple", &m), ncclSuccess) << coll;
  }
}

struct BadCase {
  const char* var;
  const char* value;
  const char* token;  // must appear in the message
};

TEST(TunerParse, BadStringsRejectedWithTheToken) {
  const BadCase cases[] = {
      {"NCCL_PROTO", "LL,Fast", "\"Fast\""},
      {"NCCL_PROTO", "^", "empty protocol list"},
      {"NCCL_PROTO", "LL,", "empty protocol name"},
      {"NCCL_PROTO", "LL,,Simple", "empty protocol name"},
      {"NCCL_PROTO", "^LL,LL128,Simple", "excludes every protocol"},
      {"NCCL_PROTO", "allreduce:", "empty protocol list"},
      {"NCCL_PROTO", "allreduce:^simple,LL,ll128", "excludes every protocol"},
      {"NCCL_PROTO", "allreduce:LL;;broadcast:LL", "empty segment"},
      {"NCCL_PROTO", "LL;Simple", "more than one default"},
      {"NCCL_ALGO", "allreduce:ring;allreduse:tree", "\"allreduse\""},
      {"NCCL_ALGO", ":ring", "unknown collective \"\""},
      {"NCCL_ALGO", "Ring,Star", "\"Star\""},
      {"NCCL_ALGO", "broadcast:LL", "\"LL\""},
      {"NCCL_ALGO", "^ring,tree,collnetdirect,collnetchain,nvls,nvlstree,pat,oneshot,twoshot", "excludes every"},
  };
  for (const BadCase& c : cases) {
    clearPendingError();
    SelectionMask m;
    ncclResult_t r = std::string(c.var) == "NCCL_ALGO" ? parseAlgoList(c.var, c.value, &m)
                                                       : parseProtoList(c.var, c.value, &m);
    EXPECT_EQ(r, ncclInvalidArgument) << c.value;
    const std::string& msg = pendingError();
    EXPECT_NE(msg.find(c.var), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.token), std::string::npos) << "value " << c.value << ": " << msg;
  }
  clearPendingError();
}

TEST(TunerParse, LoadFromEnvironment) {
  setenv("NCCL_PROTO", "allreduce:ll", 1);
  setenv("NCCL_ALGO", "^tree", 1);
  setenv("NCCL_MIN_NCHANNELS", "4", 1);
  setenv("NCCL_MAX_NCHANNELS", "8", 1);
  setenv("NCCL_NTHREADS", "256", 1);
  setenv("NCCL_BUFFSIZE", "16777216", 1);
  setenv("BRAID_PIPELINE_STEPS", "4", 1);
  setenv("BRAID_ONESHOT_SPLIT", "0", 1);
  TunerConfig cfg;
  EXPECT_TRUE(cfg.oneShotSplit);  // the default
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_FALSE(cfg.oneShotSplit);
  EXPECT_EQ(cfg.protos.mask[kAR], bit(Proto::LL));
  EXPECT_EQ(cfg.protos.mask[kBC], kAllProtosMask);
  EXPECT_EQ(cfg.algos.mask[kAR], kAllAlgosMask & ~bit(Algo::Tree));
  EXPECT_EQ(cfg.minChannels, 4);
  EXPECT_EQ(cfg.maxChannels, 8);
  EXPECT_EQ(cfg.maxCtas, 8);  // NCCL_MAX_NCHANNELS bounds CTAs too
  setenv("NCCL_MAX_CTAS", "6", 1);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxCtas, 6);      // the smaller of the two
  EXPECT_EQ(cfg.maxChannels, 6);  // for channels too (NCCL applies both)
  setenv("NCCL_MAX_CTAS", "12", 1);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxChannels, 8);
  EXPECT_EQ(cfg.maxCtas, 8);
  unsetenv("NCCL_MAX_NCHANNELS");
  setenv("NCCL_MAX_CTAS", "24", 1);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxChannels, 24);
  EXPECT_EQ(cfg.maxCtas, 24);
  setenv("NCCL_MAX_NCHANNELS", "8", 1);
  unsetenv("NCCL_MAX_CTAS");
  // NCCL_MAX_P2P_NCHANNELS: a bound of its own (point-to-point launches only); p2pMaxCtas takes the smaller.
  unsetenv("NCCL_MAX_P2P_NCHANNELS");
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxP2pCtas, -1);
  setenv("NCCL_MAX_P2P_NCHANNELS", "4", 1);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxP2pCtas, 4);
  EXPECT_EQ(cfg.maxCtas, 8);  // collectives keep theirs
  EXPECT_EQ(cfg.maxChannels, 8);
  EXPECT_EQ(p2pMaxCtas(cfg), 4);
  setenv("NCCL_MAX_P2P_NCHANNELS", "32", 1);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(p2pMaxCtas(cfg), 8);
  setenv("NCCL_MAX_P2P_NCHANNELS", "0", 1);  // not a bound
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxP2pCtas, -1);
  EXPECT_EQ(p2pMaxCtas(cfg), 8);
  unsetenv("NCCL_MAX_NCHANNELS");
  setenv("NCCL_MAX_P2P_NCHANNELS", "12", 1);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.maxCtas, -1);
  EXPECT_EQ(p2pMaxCtas(cfg), 12);
  unsetenv("NCCL_MAX_P2P_NCHANNELS");
  setenv("NCCL_MAX_NCHANNELS", "8", 1);
  EXPECT_EQ(cfg.nThreads, 256);
  EXPECT_EQ(cfg.buffSize, 16 << 20);
  EXPECT_EQ(cfg.pipelineSteps, 4);
  setenv("BRAID_PIPELINE_STEPS", "65", 1);  // out of range: warned, 0 (auto)
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_EQ(cfg.pipelineSteps, 0);
  setenv("NCCL_PROTO", "LL,bogus", 1);
  clearPendingError();
  EXPECT_EQ(loadTunerConfig(&cfg), ncclInvalidArgument);
  EXPECT_NE(pendingError().find("bogus"), std::string::npos);
  clearPendingError();
  for (const char* v : {"BRAID_ONESHOT_SPLIT", "NCCL_PROTO", "NCCL_ALGO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS",
                        "NCCL_BUFFSIZE", "BRAID_PIPELINE_STEPS"})
    unsetenv(v);
  ASSERT_EQ(loadTunerConfig(&cfg), ncclSuccess);
  EXPECT_FALSE(cfg.protos.overridden);
  EXPECT_EQ(cfg.minChannels, -1);
  EXPECT_EQ(cfg.maxCtas, -1);
  EXPECT_EQ(cfg.buffSize, 4 << 20);
}

// ---------------------------------------------------------------------------------------------- decisions

const TransportClass kAllClasses[] = {TransportClass::P2pNvlink, TransportClass::P2pPcie,
                                      TransportClass::Shm,       TransportClass::NetSocket,
                                      TransportClass::HostShm,   TransportClass::HostSocket};
const CollType kColls[] = {CollType::AllReduce, CollType::Broadcast, CollType::Reduce, CollType::AllGather,
                           CollType::ReduceScatter, CollType::AllToAll, CollType::Send};

std::vector<size_t> sizes() {
  std::vector<size_t> s;
  for (size_t b = 8; b <= (size_t{4} << 30); b *= 4) s.push_back(b);
  return s;
}

TuneRequest req(CollType c, size_t bytes, int n, TransportClass t) {
  TuneRequest r;
  r.coll = c;
  r.bytes = bytes;
  r.nranks = n;
  r.transport = t;
  return r;
}

bool isHostClass(TransportClass t) { return t == TransportClass::HostShm || t == TransportClass::HostSocket; }

TEST(TunerDecide, GridMonotoneAndSane) {
  TunerConfig cfg;
  for (TransportClass t : kAllClasses)
    for (CollType c : kColls)
      for (int n : {2, 4, 8}) {
        double prev = 0;
        for (size_t b : sizes()) {
          TuneDecision d = tune(req(c, b, n, t), cfg);
          SCOPED_TRACE(std::string(collName(c)) + " on " + transportClassName(t) + " n=" + std::to_string(n) +
                       " bytes=" + std::to_string(b));
          EXPECT_GT(d.predictedUs, 0);
          EXPECT_GE(d.predictedUs, prev);  // more bytes never predicted faster
          prev = d.predictedUs;
          EXPECT_EQ(d.flags, 0u);
          EXPECT_GE(d.nChannels, 1);
          EXPECT_LE(d.nChannels, kTunerMaxChannels);
          EXPECT_GT(d.chunkBytes, 0u);
          if (t != TransportClass::P2pNvlink) EXPECT_NE(d.proto, Proto::LL128);
          if (isHostClass(t)) {
            EXPECT_EQ(d.proto, Proto::Simple);
            EXPECT_EQ(d.nThreads, 1);
          }
          if (c != CollType::AllReduce) EXPECT_EQ(d.algo, Algo::Ring);
          if (d.algo == Algo::OneShot || d.algo == Algo::TwoShot)
            EXPECT_TRUE(t == TransportClass::P2pNvlink || t == TransportClass::P2pPcie);
        }
        // Small calls pick a low-latency protocol where one exists; large ones pick Simple (or LL128 on NVLink).
        TuneDecision small = tune(req(c, 8, n, t), cfg);
        TuneDecision large = tune(req(c, size_t{4} << 30, n, t), cfg);
        if (!isHostClass(t)) {
          EXPECT_EQ(small.proto, Proto::LL) << collName(c) << " " << transportClassName(t) << " n=" << n;
          EXPECT_LE(small.nChannels, 2);
        }
        if (t == TransportClass::P2pNvlink)
          EXPECT_TRUE(large.proto == Proto::Simple || large.proto == Proto::LL128);
        else
          EXPECT_EQ(large.proto, Proto::Simple);
        EXPECT_GT(large.nChannels, small.nChannels) << collName(c) << " " << transportClassName(t);
      }
}

TEST(TunerDecide, CalibratedAgainstMeasurements) {
  // Braid on 2xH200 (tuner_model.def; docs/TUNING.md, "P2pNvlink Simple and LL"): ring all-reduce 8 B on one
  // channel 11.8 us with Simple and 6.1 us with LL; 2 GB busbw 313.0 GB/s at 32 channels and 351.8 at 64 (Simple).
  TuneRequest r = req(CollType::AllReduce, 8, 2, TransportClass::P2pNvlink);
  EXPECT_NEAR(predictUs(r, Algo::Ring, Proto::Simple, 1, 512 << 10), 11.8, 1.5);
  EXPECT_NEAR(predictUs(r, Algo::Ring, Proto::LL, 1, 32768), 6.1, 1.5);
  // Mid sizes: LL at 512 KB on 64 channels 9.3 us, Simple at 8 MB on 64 channels 39.3 us (within 20%).
  r.bytes = 512 << 10;
  EXPECT_NEAR(predictUs(r, Algo::Ring, Proto::LL, 64, 32768), 9.3, 1.9);
  r.bytes = 8 << 20;
  EXPECT_NEAR(predictUs(r, Algo::Ring, Proto::Simple, 64, 512 << 10), 39.3, 7.9);
  r.bytes = size_t{1} << 31;
  const double bw32 = r.bytes / predictUs(r, Algo::Ring, Proto::Simple, 32, 512 << 10) / 1e3;  // n=2: busbw == algbw
  const double bw64 = r.bytes / predictUs(r, Algo::Ring, Proto::Simple, 64, 512 << 10) / 1e3;
  EXPECT_NEAR(bw32, 313.0, 25.0);  // within 8%
  EXPECT_NEAR(bw64, 351.8, 28.0);
  EXPECT_GT(bw64, bw32);
  // Host path, 2 ranks, 1 channel: 8 B 0.46 us.
  r = req(CollType::AllReduce, 8, 2, TransportClass::HostShm);
  EXPECT_NEAR(predictUs(r, Algo::Ring, Proto::Simple, 1, 512 << 10), 0.46, 0.2);
  // The tuner's own 8 B pick on NVLink stays within the small-message target (<= 7 us on a stream).
  EXPECT_LT(tune(req(CollType::AllReduce, 8, 2, TransportClass::P2pNvlink), TunerConfig()).predictedUs, 7.0);
}

// Braid's 2-rank one-shot runs on the ring's primitives, so LL128 can carry it; TwoShot and one-shot on more
// ranks (peer-mapped staging, their own flag protocol) cannot, and NCCL_ALGO=OneShot + NCCL_PROTO=LL128 on
// 2 ranks is then taken as asked instead of falling back.
TEST(TunerDecide, OneShotTakesLl128OnTwoRanksOnly) {
  TuneRequest r = req(CollType::AllReduce, 512 << 10, 2, TransportClass::P2pNvlink);
  EXPECT_TRUE(std::isfinite(predictUs(r, Algo::OneShot, Proto::LL128, 64, 122880)));
  EXPECT_FALSE(std::isfinite(predictUs(r, Algo::TwoShot, Proto::LL128, 64, 122880)));
  r.nranks = 4;
  EXPECT_FALSE(std::isfinite(predictUs(r, Algo::OneShot, Proto::LL128, 64, 122880)));
  EXPECT_TRUE(std::isfinite(predictUs(r, Algo::OneShot, Proto::LL, 64, 32768)));
  TunerConfig cfg;
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "oneshot", &cfg.algos), ncclSuccess);
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "LL128", &cfg.protos), ncclSuccess);
  r.nranks = 2;
  r.algosAvailable = bit(Algo::Ring) | bit(Algo::OneShot);
  r.protosAvailable = bit(Proto::Simple) | bit(Proto::LL) | bit(Proto::LL128);
  r.connectedChannels = 64;
  const TuneDecision d = tune(r, cfg);
  EXPECT_EQ(d.algo, Algo::OneShot);
  EXPECT_EQ(d.proto, Proto::LL128);
  EXPECT_EQ(d.flags, 0u);
}

// The same executor on sm_90 NVLink, with LL128 kernels (float sums, copies): LL128 takes over from LL at ~136 KB
// on the wire, so from ~136 KB for all-reduce (one-shot), broadcast and reduce and from ~272 KB for all-gather and
// reduce-scatter (tuner_model.def: LL's cap; LL128 measured 0.5-1.5 us faster there than LL, docs/TUNING.md);
// LL keeps the small sizes, where the two measured level, and Simple the large ones, from ~3.5 MB on the wire
// (all-reduce, broadcast, reduce from ~3.5 MB, all-gather and reduce-scatter from ~7 MB).
TEST(TunerDecide, TwoRankNvlinkLl128Choices) {
  TunerConfig cfg;
  auto pick = [&](CollType c, size_t bytes) {
    TuneRequest r = req(c, bytes, 2, TransportClass::P2pNvlink);
    r.algosAvailable = bit(Algo::Ring) | (c == CollType::AllReduce ? bit(Algo::OneShot) : 0u);
    r.protosAvailable = bit(Proto::Simple) | bit(Proto::LL) | bit(Proto::LL128);
    r.connectedChannels = 64;
    return tune(r, cfg);
  };
  for (CollType c : {CollType::AllReduce, CollType::AllGather, CollType::ReduceScatter, CollType::Broadcast,
                     CollType::Reduce}) {
    for (size_t b : {size_t{8}, size_t{4096}, size_t{32} << 10})
      EXPECT_EQ(pick(c, b).proto, Proto::LL) << collName(c) << " " << b;
    EXPECT_EQ(pick(c, size_t{32} << 20).proto, Proto::Simple) << collName(c);
  }
  // The crossover: LL at 128 KB on the wire, LL128 at 192 KB (all-gather and reduce-scatter put half their size on
  // the wire).
  for (CollType c : {CollType::AllReduce, CollType::Broadcast, CollType::Reduce}) {
    EXPECT_EQ(pick(c, 128 << 10).proto, Proto::LL) << collName(c);
    EXPECT_EQ(pick(c, 192 << 10).proto, Proto::LL128) << collName(c);
    EXPECT_EQ(pick(c, 384 << 10).proto, Proto::LL128) << collName(c);
  }
  for (CollType c : {CollType::AllGather, CollType::ReduceScatter}) {
    EXPECT_EQ(pick(c, 256 << 10).proto, Proto::LL) << collName(c);
    EXPECT_EQ(pick(c, 512 << 10).proto, Proto::LL128) << collName(c);
    EXPECT_EQ(pick(c, 768 << 10).proto, Proto::LL128) << collName(c);
  }
  const TuneDecision ar = pick(CollType::AllReduce, 512 << 10);
  EXPECT_EQ(ar.algo, Algo::OneShot);
  EXPECT_EQ(ar.proto, Proto::LL128);
  EXPECT_GE(ar.nChannels, 48);
  EXPECT_EQ(pick(CollType::Broadcast, 512 << 10).proto, Proto::LL128);
  EXPECT_EQ(pick(CollType::Reduce, 512 << 10).proto, Proto::LL128);
  EXPECT_EQ(pick(CollType::AllGather, 2 << 20).proto, Proto::LL128);
  EXPECT_EQ(pick(CollType::ReduceScatter, 2 << 20).proto, Proto::LL128);
  // Ring collectives keep LL128 to ~3.5 MB on the wire (BRAID_TUNER_RECV_TAIL: Simple's last step reduced or copied
  // after it lands; reductions and copies on LL128 measured 0.7-1.9 us ahead there, docs/TUNING.md, "Protocol
  // handovers"): all-reduce, reduce and broadcast to ~3.5 MB, reduce-scatter and all-gather (half the bytes on the
  // wire) to ~7 MB.
  const size_t mb = size_t{1} << 20;
  for (CollType c : {CollType::AllReduce, CollType::Reduce, CollType::Broadcast}) {
    EXPECT_EQ(pick(c, 2 * mb).proto, Proto::LL128) << collName(c);
    EXPECT_EQ(pick(c, 3 * mb).proto, Proto::LL128) << collName(c);
    EXPECT_EQ(pick(c, 4 * mb).proto, Proto::Simple) << collName(c);
  }
  for (CollType c : {CollType::ReduceScatter, CollType::AllGather}) {
    EXPECT_EQ(pick(c, 6 * mb).proto, Proto::LL128) << collName(c);
    EXPECT_EQ(pick(c, 8 * mb).proto, Proto::Simple) << collName(c);
  }
  // One tail for reductions and copies: their Simple predictions match at 8 B and at 64 MB.
  TuneRequest small = req(CollType::Reduce, 8, 2, TransportClass::P2pNvlink);
  TuneRequest copy = req(CollType::Broadcast, 8, 2, TransportClass::P2pNvlink);
  EXPECT_NEAR(predictUs(small, Algo::Ring, Proto::Simple, 1, 0), predictUs(copy, Algo::Ring, Proto::Simple, 1, 0),
              0.01);
  small.bytes = copy.bytes = 64 * mb;
  EXPECT_NEAR(predictUs(small, Algo::Ring, Proto::Simple, 64, 0), predictUs(copy, Algo::Ring, Proto::Simple, 64, 0),
              0.01);
  EXPECT_DOUBLE_EQ(predictUs(small, Algo::Ring, Proto::LL128, 64, 0), predictUs(copy, Algo::Ring, Proto::LL128, 64, 0));
  // NCCL_PROTO=^LL128 takes it away again: LL at 512 KB.
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "^LL128", &cfg.protos), ncclSuccess);
  EXPECT_EQ(pick(CollType::AllReduce, 512 << 10).proto, Proto::LL);
}

// What the GPU executor of a 2-rank NVLink comm offers (Ring and OneShot; LL and Simple): one-shot LL for
// small all-reduces, Simple with every channel for large ones. The model hands all-reduce from LL to Simple at
// ~776 KB on 64 channels; the 2xH200 full tables (LL / Simple forced) had 512 KB 8.56 / 8.95 us and 1 MB 12.93 /
// 11.07 (docs/TUNING.md, "Protocol handovers").
TEST(TunerDecide, TwoRankNvlinkExecutorChoices) {
  TunerConfig cfg;
  auto pick = [&](CollType c, size_t bytes) {
    TuneRequest r = req(c, bytes, 2, TransportClass::P2pNvlink);
    r.algosAvailable = bit(Algo::Ring) | (c == CollType::AllReduce ? bit(Algo::OneShot) : 0u);
    r.protosAvailable = bit(Proto::Simple) | bit(Proto::LL);
    r.connectedChannels = 64;
    return tune(r, cfg);
  };
  for (size_t b : {size_t{8}, size_t{4096}, size_t{64} << 10, size_t{512} << 10}) {
    const TuneDecision d = pick(CollType::AllReduce, b);
    EXPECT_EQ(d.algo, Algo::OneShot) << b;
    EXPECT_EQ(d.proto, Proto::LL) << b;
  }
  for (size_t b : {size_t{8} << 20, size_t{256} << 20, size_t{2} << 30}) {
    const TuneDecision d = pick(CollType::AllReduce, b);
    EXPECT_EQ(d.proto, Proto::Simple) << b;
    EXPECT_EQ(d.nChannels, 64) << b;
  }
  for (CollType c : {CollType::AllGather, CollType::ReduceScatter, CollType::Broadcast, CollType::Reduce}) {
    EXPECT_EQ(pick(c, 4096).proto, Proto::LL) << collName(c);
    EXPECT_EQ(pick(c, 4096).algo, Algo::Ring) << collName(c);
    EXPECT_EQ(pick(c, size_t{64} << 20).proto, Proto::Simple) << collName(c);
  }
  // NCCL_ALGO=ring keeps the ring; NCCL_PROTO=Simple keeps SIMPLE at 8 B.
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "ring", &cfg.algos), ncclSuccess);
  EXPECT_EQ(pick(CollType::AllReduce, 8).algo, Algo::Ring);
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "simple", &cfg.protos), ncclSuccess);
  EXPECT_EQ(pick(CollType::AllReduce, 8).proto, Proto::Simple);
  EXPECT_TRUE(modelRowMeasured(TransportClass::P2pNvlink, Proto::Simple));
  EXPECT_TRUE(modelRowMeasured(TransportClass::P2pNvlink, Proto::LL));
  EXPECT_TRUE(modelRowMeasured(TransportClass::P2pNvlink, Proto::LL128));
  EXPECT_FALSE(modelRowMeasured(TransportClass::P2pPcie, Proto::LL128));
  EXPECT_FALSE(modelRowMeasured(TransportClass::Shm, Proto::Simple));
}

TEST(TunerDecide, ShmAndSocketExecutorChoices) {
  // What the device executor offers on SHM (LL + Simple, ring only) and on sockets (Simple): LL where it
  // measured 2x faster (8 B-256 KB: 10-26 us against Simple's 20-36), Simple for bulk; socket rings on at
  // most 4 channels.
  TunerConfig cfg;
  EXPECT_TRUE(modelRowMeasured(TransportClass::Shm, Proto::LL));
  EXPECT_FALSE(modelRowMeasured(TransportClass::Shm, Proto::Simple));
  // A 2-rank ring all-reduce on `t` offering LL and Simple, as the device executor asks.
  auto ringLlOrSimple = [&](TransportClass t, size_t b, int connected) {
    TuneRequest r = req(CollType::AllReduce, b, 2, t);
    r.algosAvailable = bit(Algo::Ring);
    r.protosAvailable = bit(Proto::LL) | bit(Proto::Simple);
    r.connectedChannels = connected;
    return tune(r, cfg);
  };
  auto shm = [&](size_t b) { return ringLlOrSimple(TransportClass::Shm, b, 64); };
  for (size_t b : {size_t{8}, size_t{4096}, size_t{32768}, size_t{256} << 10}) EXPECT_EQ(shm(b).proto, Proto::LL) << b;
  for (size_t b : {size_t{16} << 20, size_t{1} << 30}) EXPECT_EQ(shm(b).proto, Proto::Simple) << b;
  EXPECT_LT(shm(8).predictedUs, 12.0);
  TuneRequest r = req(CollType::AllReduce, size_t{1} << 30, 2, TransportClass::NetSocket);
  r.protosAvailable = bit(Proto::Simple);
  r.connectedChannels = 64;
  const TuneDecision d = tune(r, cfg);
  EXPECT_LE(d.nChannels, 4);
  EXPECT_GT(d.nChannels, 1);
  // Sockets with LL slots (GPU comms; 2 ranks, every hop a socket, as 2 nodes of 1 GPU on 4xH200): LL where it
  // measured faster (8 B-4 KB: 30-37 us on one channel against Simple's 42-49), on one channel (4 KB: 37.1 us
  // against 94.9 on 4: an LL channel costs ~5.6 us a step), Simple from 32 KB (52.5 on 4 channels against LL's 82.9
  // at best).
  EXPECT_TRUE(modelRowMeasured(TransportClass::NetSocket, Proto::LL));
  EXPECT_TRUE(modelRowMeasured(TransportClass::NetSocket, Proto::Simple));
  auto sock = [&](size_t b) { return ringLlOrSimple(TransportClass::NetSocket, b, 4); };
  for (size_t b : {size_t{8}, size_t{512}, size_t{4096}}) EXPECT_EQ(sock(b).proto, Proto::LL) << b;
  EXPECT_EQ(sock(4096).nChannels, 1);
  for (size_t b : {size_t{32} << 10, size_t{2} << 20, size_t{16} << 20}) EXPECT_EQ(sock(b).proto, Proto::Simple) << b;
  EXPECT_GT(sock(size_t{2} << 20).nChannels, 1);
  EXPECT_NEAR(sock(8).predictedUs, 29.7, 4.0);
}

TEST(TunerDecide, ForcedProtocolsAndAlgorithmsHonoured) {
  TunerConfig cfg;
  for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple}) {
    ASSERT_EQ(parseProtoList("NCCL_PROTO", protoName(p), &cfg.protos), ncclSuccess);
    for (size_t b : {size_t{8}, size_t{1} << 20, size_t{1} << 30}) {
      TuneDecision d = tune(req(CollType::AllReduce, b, 4, TransportClass::P2pNvlink), cfg);
      EXPECT_EQ(d.proto, p) << b;
      EXPECT_EQ(d.flags, 0u);
    }
  }
  cfg = TunerConfig();
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "allreduce:tree", &cfg.algos), ncclSuccess);
  EXPECT_EQ(tune(req(CollType::AllReduce, size_t{1} << 30, 8, TransportClass::P2pNvlink), cfg).algo, Algo::Tree);
  // Tree does not apply to all-gather: the per-collective form leaves it alone.
  EXPECT_EQ(tune(req(CollType::AllGather, 1 << 20, 8, TransportClass::P2pNvlink), cfg).flags, 0u);
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "ring", &cfg.algos), ncclSuccess);
  for (size_t b : sizes())
    EXPECT_EQ(tune(req(CollType::AllReduce, b, 8, TransportClass::P2pNvlink), cfg).algo, Algo::Ring);
  // A global NCCL_ALGO=Tree leaves all-gather nothing applicable: falls back to Ring and says so.
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "tree", &cfg.algos), ncclSuccess);
  TuneDecision d = tune(req(CollType::AllGather, 1 << 20, 8, TransportClass::P2pNvlink), cfg);
  EXPECT_EQ(d.algo, Algo::Ring);
  EXPECT_TRUE(d.flags & kTuneAlgoFallback);
  // Direct algorithms need P2P: forced on SHM they fall back.
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "oneshot", &cfg.algos), ncclSuccess);
  EXPECT_EQ(tune(req(CollType::AllReduce, 64, 2, TransportClass::P2pNvlink), cfg).algo, Algo::OneShot);
  d = tune(req(CollType::AllReduce, 64, 2, TransportClass::Shm), cfg);
  EXPECT_NE(d.algo, Algo::OneShot);
  EXPECT_TRUE(d.flags & kTuneAlgoFallback);
  // The executor's capabilities bound the choice (today's device path: Ring + SIMPLE only).
  cfg = TunerConfig();
  TuneRequest r = req(CollType::AllReduce, 8, 2, TransportClass::P2pNvlink);
  r.algosAvailable = bit(Algo::Ring);
  r.protosAvailable = bit(Proto::Simple);
  d = tune(r, cfg);
  EXPECT_EQ(d.algo, Algo::Ring);
  EXPECT_EQ(d.proto, Proto::Simple);
  EXPECT_EQ(d.flags, 0u);
}

TEST(TunerDecide, Ll128RefusedOffNvlink) {
  TunerConfig cfg;
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "LL128", &cfg.protos), ncclSuccess);
  for (TransportClass t : kAllClasses) {
    for (size_t b : {size_t{8}, size_t{1} << 30}) {
      TuneDecision d = tune(req(CollType::AllReduce, b, 2, t), cfg);
      if (t == TransportClass::P2pNvlink) {
        EXPECT_EQ(d.proto, Proto::LL128);
        EXPECT_EQ(d.flags, 0u);
      } else {
        EXPECT_NE(d.proto, Proto::LL128) << transportClassName(t);
        EXPECT_TRUE(d.flags & kTuneLl128Refused) << transportClassName(t);
      }
    }
  }
  // NVLink before Hopper: refused too.
  TuneRequest r = req(CollType::AllReduce, 1 << 20, 2, TransportClass::P2pNvlink);
  r.smVersion = 80;
  EXPECT_NE(tune(r, cfg).proto, Proto::LL128);
  EXPECT_EQ(predictUs(r, Algo::Ring, Proto::LL128, 8, 1 << 19), std::numeric_limits<double>::infinity());
  // Allowed (not forced) LL128 off NVLink: silently not chosen, no refusal flag.
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "LL128,Simple", &cfg.protos), ncclSuccess);
  TuneDecision d = tune(req(CollType::AllReduce, size_t{1} << 30, 2, TransportClass::P2pPcie), cfg);
  EXPECT_EQ(d.proto, Proto::Simple);
  EXPECT_EQ(d.flags, 0u);
}

TEST(TunerDecide, ChannelBoundsThreadsAndBuffSize) {
  TunerConfig cfg;
  cfg.minChannels = 6;
  cfg.maxChannels = 10;
  for (TransportClass t : kAllClasses)
    for (size_t b : sizes()) {
      TuneDecision d = tune(req(CollType::AllReduce, b, 4, t), cfg);
      EXPECT_GE(d.nChannels, 6);
      EXPECT_LE(d.nChannels, 10);
    }
  // Bounds inside what the comm connected; a minimum above the model's preference is still honoured.
  cfg = TunerConfig();
  cfg.minChannels = 48;
  TuneRequest r = req(CollType::AllReduce, 8, 2, TransportClass::P2pNvlink);
  EXPECT_EQ(tune(r, cfg).nChannels, 48);
  r.connectedChannels = 32;
  EXPECT_EQ(tune(r, cfg).nChannels, 32);
  cfg = TunerConfig();
  r.bytes = size_t{1} << 30;
  r.connectedChannels = 16;
  EXPECT_EQ(tune(r, cfg).nChannels, 16);
  // Threads: per-protocol default, NCCL_NTHREADS within the kernel's bound.
  r = req(CollType::AllReduce, size_t{1} << 30, 2, TransportClass::P2pNvlink);
  EXPECT_EQ(tune(r, cfg).nThreads, 512);
  cfg.nThreads = 256;
  EXPECT_EQ(tune(r, cfg).nThreads, 256);
  cfg.nThreads = 1000;
  EXPECT_EQ(tune(r, cfg).nThreads, 512);
  cfg.nThreads = 100;
  EXPECT_EQ(tune(r, cfg).nThreads, 96);
  // NCCL_BUFFSIZE sets SIMPLE's chunk; a bigger one predicts a (slightly) faster large call.
  cfg = TunerConfig();
  ASSERT_EQ(parseProtoList("NCCL_PROTO", "simple", &cfg.protos), ncclSuccess);
  TuneDecision d4 = tune(r, cfg);
  EXPECT_EQ(d4.chunkBytes, size_t{4 << 20} / kStepsPerBuffer);
  cfg.buffSize = 16 << 20;
  TuneDecision d16 = tune(r, cfg);
  EXPECT_EQ(d16.chunkBytes, size_t{16 << 20} / kStepsPerBuffer);
  EXPECT_LT(d16.predictedUs, d4.predictedUs);
}

TEST(TunerDecide, ModestNvlinkExpectations) {
  // On 2xH200 the model should prefer more channels as size grows and never go below 1 GB/s-ish silliness.
  TunerConfig cfg;
  TuneDecision mid = tune(req(CollType::AllReduce, 2 << 20, 2, TransportClass::P2pNvlink), cfg);
  TuneDecision big = tune(req(CollType::AllReduce, size_t{1} << 30, 2, TransportClass::P2pNvlink), cfg);
  EXPECT_LE(mid.nChannels, big.nChannels);
  EXPECT_EQ(big.nChannels, 64);  // the row's maximum: 64 measured faster than 32 at 512 MB and 2 GB
  EXPECT_GT((size_t{1} << 30) / big.predictedUs / 1e3, 330.0);
}

// ------------------------------------------------------------------------------------------- group estimate

// The Simple step cap: auto cuts 2-rank NVLink segments of one to two connection steps in two; an explicit
// BRAID_PIPELINE_STEPS keeps its meaning on every path. (Without the split one-shot: TunerStepCap.SplitOneShot.)
TEST(TunerStepCap, AutoSplitsOneToTwoStepSegmentsOnTwoRankNvlink) {
  TunerConfig cfg;  // NCCL_BUFFSIZE 4 MiB: 512 KiB connection steps
  cfg.buffSize = 4 << 20;
  cfg.pipelineSteps = 0;
  cfg.oneShotSplit = false;
  const auto nv = TransportClass::P2pNvlink;
  const size_t MB = size_t(1) << 20;
  // All-reduce one-shot, 64 channels: 32 MB is a 512 KiB segment per channel, 48 MB 768 KiB: two steps.
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 256u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 48 * MB, 2, 64, nv, cfg), 384u << 10);
  // Below one step (8, 16 MB) and from two steps (64 MB) on: the connection's step.
  for (size_t b : {8 * MB, 16 * MB, 64 * MB, 256 * MB})
    EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, b, 2, 64, nv, cfg), 0u) << b;
  // The ring all-reduce moves half a share per step; all-gather and reduce-scatter a rank's block per channel.
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, false, 32 * MB, 2, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, false, 64 * MB, 2, 64, nv, cfg), 256u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllGather, false, 64 * MB, 2, 64, nv, cfg), 256u << 10);
  EXPECT_EQ(simpleStepCap(CollType::ReduceScatter, false, 64 * MB, 2, 64, nv, cfg), 256u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllGather, false, 32 * MB, 2, 64, nv, cfg), 0u);
  // Fewer channels: larger segments.
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 16 * MB, 2, 32, nv, cfg), 256u << 10);
  // Unmeasured: broadcast/reduce, 4 ranks, other paths.
  EXPECT_EQ(simpleStepCap(CollType::Broadcast, false, 32 * MB, 2, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::Reduce, false, 32 * MB, 2, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, false, 128 * MB, 4, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, TransportClass::Shm, cfg), 0u);
  // Larger NCCL_BUFFSIZE: larger connection steps, the same rule.
  cfg.buffSize = 8 << 20;
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 64 * MB, 2, 64, nv, cfg), 512u << 10);
  // Explicit steps: each share in at least that many steps of >= 16 KiB, below the connection's step only.
  cfg.buffSize = 4 << 20;
  cfg.pipelineSteps = 1;
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 0u);
  cfg.pipelineSteps = 4;
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 128u << 10);
  EXPECT_EQ(simpleStepCap(CollType::Broadcast, false, 8 * MB, 4, 64, TransportClass::Shm, cfg), 32u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, false, 64, 2, 64, nv, cfg), 16u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, false, 512 * MB, 2, 64, nv, cfg), 0u);
}

// With the split one-shot (the default), a 2-rank NVLink one-shot all-reduce whose channel share is 128 KiB
// or more goes in four steps; below, and everything else, as without it.
TEST(TunerStepCap, SplitOneShotRunsFourStepsFrom128KiBShares) {
  TunerConfig cfg;
  cfg.buffSize = 4 << 20;
  ASSERT_TRUE(cfg.oneShotSplit);
  const auto nv = TransportClass::P2pNvlink;
  const size_t MB = size_t(1) << 20;
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 8 * MB, 2, 64, nv, cfg), 32u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 16 * MB, 2, 64, nv, cfg), 64u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 128u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 64 * MB, 2, 64, nv, cfg), 256u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 8 * MB + 4, 2, 64, nv, cfg), 32u << 10);  // 4 KiB multiples
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 8 * MB - 64, 2, 64, nv, cfg), 0u);      // share < 128 KiB
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 4 * MB, 2, 32, nv, cfg), 32u << 10);     // 32 channels
  // Shares of 2 MiB and more: four steps of the connection's 512 KiB or more, the connection's step.
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 128 * MB, 2, 64, nv, cfg), 0u);
  // Not the one-shot, not 2 ranks, not NVLink, or explicit steps: unchanged.
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, false, 32 * MB, 2, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, TransportClass::Shm, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 4, 64, nv, cfg), 0u);
  cfg.pipelineSteps = 1;
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 0u);
}

// A bound on CTAs (NCCL_MAX_CTAS, NCCL_MAX_NCHANNELS, config.maxCTAs) keeps the split, which runs two CTAs
// per channel, within it: where twice the channels do not fit, the one-shot runs unsplit with its own steps.
TEST(TunerStepCap, SplitOneShotStaysWithinTheCtaBound) {
  TunerConfig cfg;
  cfg.buffSize = 4 << 20;
  const auto nv = TransportClass::P2pNvlink;
  const size_t MB = size_t(1) << 20;
  EXPECT_TRUE(oneShotSplitFits(cfg, 64));  // unbounded
  cfg.maxCtas = 64;
  EXPECT_FALSE(oneShotSplitFits(cfg, 64));
  EXPECT_FALSE(oneShotSplitFits(cfg, 33));
  EXPECT_TRUE(oneShotSplitFits(cfg, 32));
  // 64 channels within 64 CTAs: unsplit, so 8 MB (128 KiB shares) in one step and 32 MB in two, as without
  // the split; 32 channels: split, four steps of a quarter share.
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 8 * MB, 2, 64, nv, cfg), 0u);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 32 * MB, 2, 64, nv, cfg), 256u << 10);
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 8 * MB, 2, 32, nv, cfg), 64u << 10);
  cfg.maxCtas = 128;
  EXPECT_TRUE(oneShotSplitFits(cfg, 64));
  EXPECT_EQ(simpleStepCap(CollType::AllReduce, true, 8 * MB, 2, 64, nv, cfg), 32u << 10);
  cfg.oneShotSplit = false;
  EXPECT_FALSE(oneShotSplitFits(cfg, 1));
}

// Where the split one-shot runs (the executor's rule, agreed inputs only): 4 MiB FIFOs of eight 512 KiB steps,
// 64 channels, float sums. Up to 128 MiB each channel's share takes 2-7 steps (simpleStepCap's four, or the
// connection's own); from 256 MiB it fills the FIFO (8 steps) and the one-shot runs unsplit; under a bound of
// 64 CTAs never split; one step (below kSplitMinShareBytes a share) is unsplit too.
TEST(TunerStepCap, SplitRunsWhereSharesTakeTwoToSevenSteps) {
  TunerConfig cfg;
  cfg.buffSize = 4 << 20;
  const auto nv = TransportClass::P2pNvlink;
  const size_t MB = size_t(1) << 20;
  const uint32_t step = 512 << 10, nSteps = 8;
  auto runs = [&](size_t bytes, int nch) {
    const uint32_t cap = simpleStepCap(CollType::AllReduce, true, bytes, 2, nch, nv, cfg);
    return oneShotSplitRuns(cfg, bytes / 4, 4, nch, cap, step, nSteps);
  };
  EXPECT_FALSE(runs(4 * MB, 64));  // 64 KiB shares: one step
  for (size_t mb : {8, 16, 32, 64, 128}) EXPECT_TRUE(runs(mb * MB, 64)) << mb;
  EXPECT_FALSE(runs(256 * MB, 64));
  EXPECT_FALSE(runs(512 * MB, 64));
  EXPECT_TRUE(runs(64 * MB, 32));
  EXPECT_FALSE(runs(256 * MB, 32));  // 8 MiB shares: 16 steps
  cfg.maxCtas = 64;
  EXPECT_FALSE(runs(16 * MB, 64));
  EXPECT_TRUE(runs(16 * MB, 32));
  cfg.maxCtas = -1;
  EXPECT_FALSE(oneShotSplitRuns(cfg, 16 * MB / 4, 4, 64, 0, 0, nSteps));  // no FIFO step known
  cfg.oneShotSplit = false;
  EXPECT_FALSE(runs(16 * MB, 64));
}

// The measured ranges where the clustered ring replaces the unsplit one-shot (tuner_model.def): 8 channels and
// up from 16 MiB on; fewer channels never, nor anything below kClusterMinBytes (no clusters there).
TEST(TunerClusteredRing, MeasuredRangesOnly) {
  const size_t MB = size_t(1) << 20;
  for (int nch : {64, 48, 32, 31, 24, 16, 8}) {
    EXPECT_FALSE(clusteredRingOverUnsplitOneShot(8 * MB, nch, true)) << nch;
    EXPECT_FALSE(clusteredRingOverUnsplitOneShot(16 * MB - 1, nch, true)) << nch;
    for (size_t mb : {16, 32, 128, 256, 512, 4096})
      EXPECT_TRUE(clusteredRingOverUnsplitOneShot(mb * MB, nch, true)) << nch;
  }
  for (int nch : {7, 4, 1}) EXPECT_FALSE(clusteredRingOverUnsplitOneShot(64 * MB, nch, true)) << nch;
}

// On 24-31 channels in clusters of 4 (a rank whose size the user set, or where 3 did not fit) the unsplit
// one-shot beat the ring from 128 MiB (2xH100, 24 channels, 128 / 256 / 512 MB: 469.75 / 920.45 / 1789.45 us
// against 486.80 / 934.10 / 1846.15); below that, and on 32 channels and up or 8-23, the ring still runs.
TEST(TunerClusteredRing, ClustersOfFourKeepTheOneShotFrom128MiBOn24To31Channels) {
  const size_t MB = size_t(1) << 20;
  for (int nch : {24, 28, 31}) {
    for (size_t mb : {16, 32, 64, 127}) EXPECT_TRUE(clusteredRingOverUnsplitOneShot(mb * MB, nch, false)) << nch;
    EXPECT_TRUE(clusteredRingOverUnsplitOneShot(128 * MB - 1, nch, false)) << nch;
    for (size_t mb : {128, 256, 512, 4096})
      EXPECT_FALSE(clusteredRingOverUnsplitOneShot(mb * MB, nch, false)) << nch << " " << mb;
  }
  for (int nch : {64, 32, 23, 16, 8})
    for (size_t mb : {16, 128, 512}) EXPECT_TRUE(clusteredRingOverUnsplitOneShot(mb * MB, nch, false)) << nch;
  EXPECT_FALSE(clusteredRingOverUnsplitOneShot(8 * MB, 24, false));
}

TEST(TunerStepCap, ConfigMaxCtasFoldsIntoTheEnvironmentsBound) {
  EXPECT_EQ(foldBounds(-1, -1), -1);  // neither: unbounded
  EXPECT_EQ(foldBounds(64, -1), 64);  // NCCL_MAX_CTAS alone
  EXPECT_EQ(foldBounds(-1, 40), 40);  // config.maxCTAs alone
  EXPECT_EQ(foldBounds(64, 40), 40);  // both: the smaller
  EXPECT_EQ(foldBounds(24, 40), 24);
  EXPECT_EQ(foldBounds(24, 0), 24);   // 0 is not a bound
}

TEST(TunerGroup, EstimateGrowsWithBytes) {
  TunerConfig cfg;
  for (TransportClass t : {TransportClass::P2pNvlink, TransportClass::HostShm}) {
    OpDesc op;
    op.coll = CollType::AllReduce;
    op.dtype = ncclFloat32;
    double prev = 0;
    for (size_t count : {size_t{2}, size_t{1} << 10, size_t{1} << 20, size_t{1} << 28}) {
      op.count = count;
      const int comm = 0;  // stands for one communicator
      std::vector<TimedOp> ops{TimedOp{&comm, false, tune(makeTuneRequest(op, 2, t), cfg).predictedUs}};
      double one = groupTimeUs(ops);
      EXPECT_GT(one, prev);
      prev = one;
      ops.push_back(ops[0]);
      EXPECT_NEAR(groupTimeUs(ops), 2 * one, 1e-9);
    }
  }
  EXPECT_EQ(groupTimeUs({}), 0.0);
  OpDesc ag;
  ag.coll = CollType::AllGather;
  ag.count = 100;
  ag.dtype = ncclFloat64;
  EXPECT_EQ(opBytes(ag, 4), 3200u);
}

// A communicator's collectives add up and its p2p ops count as the slowest; communicators run side by side.
TEST(TunerGroup, TimeAddsCollectivesTakesSlowestP2pAndSlowestComm) {
  const int a = 0, b = 0;
  EXPECT_DOUBLE_EQ(groupTimeUs({{&a, false, 3}, {&a, false, 4}}), 7);
  EXPECT_DOUBLE_EQ(groupTimeUs({{&a, true, 3}, {&a, true, 5}, {&a, true, 2}}), 5);
  EXPECT_DOUBLE_EQ(groupTimeUs({{&a, true, 3}, {&a, false, 4}, {&a, true, 5}}), 9);
  EXPECT_DOUBLE_EQ(groupTimeUs({{&a, false, 4}, {&b, false, 6}, {&a, true, 1}}), 6);
  EXPECT_DOUBLE_EQ(groupTimeUs({{&a, false, 4}, {&b, false, 2}, {&a, true, 3}}), 7);
}

}  // namespace
}  // namespace braid
