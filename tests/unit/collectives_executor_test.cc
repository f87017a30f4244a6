// The host executor over an in-memory ConnProvider (ranks as threads): every ring collective x every
// datatype x every reduction (sum, prod, max, min, avg as the API resolves it, premulsum) for 1..5 ranks
// and 1..3 channels, in and out of place, with counts 0, 1, nranks-1, odd primes and several FIFO steps
// (256-byte steps, 4 slots). Outputs are poisoned first; every element is checked against a reference
// computed in double. Also the pure split functions of ring_split.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <mutex>

#include "algo/ring_schedules.h"
#include "algo/ring_split.h"
#include "runtime/tuning_agreement.h"
#include "tuner/tuner.h"
#include "collectives_test_util.h"

namespace braid {
namespace {
using namespace testing_util;

enum OpIdx { kSum, kProd, kMax, kMin, kAvg, kPreMul, kNumOps };
const char* kOpNames[] = {"sum", "prod", "max", "min", "avg", "premulsum"};

struct Case {
  CollType coll;
  ncclDataType_t dt;
  int op;
  size_t count;
  bool inPlace;
  int root;
};

std::string caseName(const Case& c) {
  char buf[160];
  snprintf(buf, sizeof(buf), "%s %s %s count=%zu %s root=%d", collName(c.coll), dtypeName(c.dt), kOpNames[c.op],
           c.count, c.inPlace ? "in-place" : "out-of-place", c.root);
  return buf;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Inputs chosen so every partial result is exactly representable in the type (fp8 e4m3 integers are
// exact to 16, e5m2 to 8; products are powers of two), so only avg needs a tolerance.
double inputValue(ncclDataType_t dt, int op, int rank, size_t idx) {
  const uint64_t h = mix((uint64_t(rank) << 40) ^ idx ^ (uint64_t(op) << 56));
  const bool sgn = isSigned(dt);
  switch (op) {
    case kProd: {
      static const double s[] = {1, -1, 2, -2};
      return sgn ? s[h % 4] : double(1 + h % 2);
    }
    case kMax:
    case kMin: return sgn ? double(int(h % 17) - 8) : double(h % 17);
    default:
      if (dt == ncclFloat8e5m2) return double(int(h % 3) - 1);
      return sgn ? double(int(h % 7) - 3) : double(h % 7);
  }
}

// Bytes for the copy collectives: arbitrary patterns (NaNs included), compared bytewise.
uint8_t inputByte(int rank, size_t byteIdx) { return uint8_t(mix((uint64_t(rank) << 44) ^ byteIdx ^ 0x1234) >> 17); }

bool isCopy(CollType c) { return c == CollType::AllGather || c == CollType::Broadcast; }

RedOpDesc resolveOp(ncclDataType_t dt, int op, int nranks) {
  RedOpDesc d;
  switch (op) {
    case kSum: d.kind = RedKind::Sum; break;
    case kProd: d.kind = RedKind::Prod; break;
    case kMax: d.kind = RedKind::Max; break;
    case kMin: d.kind = RedKind::Min; break;
    case kAvg:
      if (dtypeIsFloat(dt)) {
        d.kind = RedKind::PreMulSum;
        encodeValue(dt, 1.0 / nranks, d.scalar);
      } else {
        d.kind = RedKind::SumPostDiv;
        d.divisor = uint64_t(nranks);
      }
      break;
    case kPreMul:
      d.kind = RedKind::PreMulSum;
      encodeValue(dt, dtypeIsFloat(dt) ? 0.5 : 3.0, d.scalar);
      break;
  }
  return d;
}

// Reference reduction of element `idx` of every rank's input, and the tolerance allowed.
double reference(const Case& c, const RedOpDesc& d, int nranks, size_t idx, double* tol) {
  double acc = 0, absSum = 0;
  const bool premul = d.kind == RedKind::PreMulSum;
  const double s = premul ? decodeValue(c.dt, d.scalar) : 1.0;
  for (int r = 0; r < nranks; ++r) {
    double x = inputValue(c.dt, c.op, r, idx);
    if (premul) x *= s;
    absSum += std::fabs(x);
    if (r == 0) {
      acc = x;
      continue;
    }
    switch (c.op) {
      case kProd: acc *= x; break;
      case kMax: acc = std::max(acc, x); break;
      case kMin: acc = std::min(acc, x); break;
      default: acc += x; break;
    }
  }
  if (d.kind == RedKind::SumPostDiv) acc = std::trunc(acc / double(d.divisor));
  *tol = (c.op == kAvg && dtypeIsFloat(c.dt)) ? 4.0 * nranks * unitRoundoff(c.dt) * std::max(absSum, 1.0) : 0.0;
  return acc;
}

struct Failures {
  std::mutex mu;
  std::vector<std::string> msgs;
  int total = 0;
  void add(const std::string& m) {
    std::lock_guard<std::mutex> lk(mu);
    if (msgs.size() < 20) msgs.push_back(m);
    ++total;
  }
};

// Runs one case on one rank and checks its output.
void runCase(const Case& c, int rank, int n, HostExecutor& ex, Failures* fails) {
  const size_t es = dtypeSize(c.dt);
  const size_t count = c.count;
  size_t sendCount = count, recvCount = count;
  if (c.coll == CollType::AllGather) recvCount = count * n;
  if (c.coll == CollType::ReduceScatter) sendCount = count * n;
  const RedOpDesc red = resolveOp(c.dt, c.op, n);

  auto fillInput = [&](uint8_t* dst, int r, size_t elems) {
    if (isCopy(c.coll)) {
      for (size_t b = 0; b < elems * es; ++b) dst[b] = inputByte(r, b);
    } else {
      for (size_t i = 0; i < elems; ++i) encodeValue(c.dt, inputValue(c.dt, c.op, r, i), dst + i * es);
    }
  };

  std::vector<uint8_t> sendBuf(std::max<size_t>(sendCount * es, 1), 0);
  std::vector<uint8_t> recvBuf(std::max<size_t>(recvCount * es, 1), 0xA5);
  OpDesc op;
  op.coll = c.coll;
  op.dtype = c.dt;
  op.count = count;
  op.op = red;
  op.root = c.root;
  if (!c.inPlace) {
    fillInput(sendBuf.data(), rank, sendCount);
    op.sendbuff = sendBuf.data();
    op.recvbuff = recvBuf.data();
  } else if (c.coll == CollType::AllGather) {
    fillInput(recvBuf.data() + rank * count * es, rank, count);
    op.recvbuff = recvBuf.data();
    op.sendbuff = recvBuf.data() + rank * count * es;
  } else if (c.coll == CollType::ReduceScatter) {
    fillInput(sendBuf.data(), rank, sendCount);
    op.sendbuff = sendBuf.data();
    op.recvbuff = sendBuf.data() + rank * count * es;
  } else {
    fillInput(sendBuf.data(), rank, sendCount);
    op.sendbuff = sendBuf.data();
    op.recvbuff = sendBuf.data();
  }

  ncclResult_t res = ex.run({op});
  if (res != ncclSuccess) {
    fails->add("rank " + std::to_string(rank) + ": " + caseName(c) + ": run failed: " + pendingError());
    clearPendingError();
    return;
  }
  const uint8_t* out = static_cast<const uint8_t*>(op.recvbuff);
  int bad = 0;
  auto complain = [&](size_t i, const std::string& what) {
    if (bad++ == 0) fails->add("rank " + std::to_string(rank) + ": " + caseName(c) + ": element " + std::to_string(i) + ": " + what);
  };
  auto checkBytes = [&](size_t outElem, int srcRank, size_t srcElem) {
    for (size_t b = 0; b < es; ++b) {
      const uint8_t want = inputByte(srcRank, srcElem * es + b);
      if (out[outElem * es + b] != want) {
        complain(outElem, "byte mismatch: got " + std::to_string(out[outElem * es + b]) + " want " + std::to_string(want));
        return;
      }
    }
  };
  auto checkReduced = [&](size_t outElem, size_t srcElem) {
    double tol;
    const double want = reference(c, red, n, srcElem, &tol);
    const double got = decodeValue(c.dt, out + outElem * es);
    if (!(std::fabs(got - want) <= tol))
      complain(outElem, "got " + std::to_string(got) + " want " + std::to_string(want) + " tol " + std::to_string(tol));
  };
  switch (c.coll) {
    case CollType::AllReduce:
      for (size_t i = 0; i < count; ++i) checkReduced(i, i);
      break;
    case CollType::ReduceScatter:
      for (size_t i = 0; i < count; ++i) checkReduced(i, rank * count + i);
      break;
    case CollType::Reduce:
      if (rank == c.root) {
        for (size_t i = 0; i < count; ++i) checkReduced(i, i);
      } else if (!c.inPlace) {
        for (size_t b = 0; b < count * es; ++b)
          if (out[b] != 0xA5) { complain(b / es, "non-root output was written"); break; }
      }
      break;
    case CollType::Broadcast:
      for (size_t i = 0; i < count; ++i) checkBytes(i, c.root, i);
      break;
    case CollType::AllGather:
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) checkBytes(r * count + i, r, i);
      break;
    default: break;
  }
}

// Counts: 0, 1, nranks-1, odd primes, and 1031/4099 (many 256-byte FIFO steps). The largest count, whose
// cost is dominated by thread hand-offs on small test machines, runs for one type per width (and fp8
// e4m3) with every op on one channel, and with sum only on more channels.
std::vector<Case> buildCases(int n, int nch) {
  std::vector<size_t> counts = {0, 1, 7, 13, 1031, 4099};
  if (n > 2) counts.push_back(size_t(n - 1));
  std::vector<Case> cases;
  const CollType colls[] = {CollType::AllReduce, CollType::Broadcast, CollType::Reduce, CollType::AllGather,
                            CollType::ReduceScatter};
  for (CollType coll : colls)
    for (ncclDataType_t dt : kAllTypes)
      for (int op = 0; op < kNumOps; ++op) {
        if (isCopy(coll) && op != kSum) continue;
        for (size_t count : counts) {
          if (count == 4099) {
            const bool bigType = dt == ncclInt8 || dt == ncclFloat16 || dt == ncclFloat32 || dt == ncclFloat64 ||
                                 dt == ncclFloat8e4m3;
            if (!bigType || (nch > 1 && op != kSum)) continue;
          }
          for (int inPlace = 0; inPlace < 2; ++inPlace)
            cases.push_back(Case{coll, dt, op, count, inPlace != 0, int((count + size_t(coll)) % n)});
        }
      }
  return cases;
}

void runMatrix(int n, int nch, const std::vector<int>& ringOrder = {}) {
  MemWorld world(n, nch, 256, 4);
  world.setRingOrder(ringOrder);
  const std::vector<Case> cases = buildCases(n, nch);
  Failures fails;
  runRanks(&world, nch, 30, [&](int rank, HostExecutor& ex, MemProvider&) {
    for (const Case& c : cases) runCase(c, rank, n, ex, &fails);
  });
  for (const std::string& m : fails.msgs) ADD_FAILURE() << m;
  EXPECT_EQ(fails.total, 0) << "of " << cases.size() << " cases x " << n << " ranks";
}

class CollMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(CollMatrix, EveryCollectiveTypeAndOp) {
  const int n = std::get<0>(GetParam());
  const int nch = std::get<1>(GetParam());
  runMatrix(n, nch);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollMatrix,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5), ::testing::Values(1, 2, 3)),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& i) {
                           return "n" + std::to_string(std::get<0>(i.param)) + "_ch" + std::to_string(std::get<1>(i.param));
                         });

// Rings in an order other than rank order (BRAID_RING_ORDER, ring_order.h): every collective must still place
// each rank's block by its rank (all-gather, reduce-scatter) and chain from / to the root wherever it sits.
TEST(CollRingOrder, FourRanksEveryCollective) {
  runMatrix(4, 1, {0, 2, 1, 3});
  runMatrix(4, 2, {3, 1, 0, 2});
}

TEST(CollRingOrder, FiveRanksEveryCollective) {
  runMatrix(5, 1, {2, 0, 3, 1, 4});
  runMatrix(5, 3, {2, 0, 3, 1, 4});
}

TEST(CollRingOrder, ThreeRanksReversed) { runMatrix(3, 2, {2, 1, 0}); }

TEST(RingSplit, ChannelRangesCoverCountInOrder) {
  for (size_t count : {0, 1, 2, 3, 63, 64, 65, 1000, 4097}) {
    for (int nch = 1; nch <= 5; ++nch) {
      for (size_t align : {1, 4, 64}) {
        size_t next = 0;
        for (int c = 0; c < nch; ++c) {
          ElemRange r = channelRange(count, nch, c, align);
          EXPECT_EQ(r.offset, std::min(next, count));
          if (r.count) EXPECT_EQ(r.offset % align, 0u);
          next = r.offset + r.count;
        }
        EXPECT_EQ(next, count) << count << " " << nch << " " << align;
      }
    }
  }
}

TEST(RingSplit, SegmentsCoverLoopAndFitChunk) {
  for (int n = 1; n <= 8; ++n) {
    for (size_t chunk : {1, 16, 64, 256}) {
      const size_t align = alignElemsFor(chunk, 4);
      for (size_t len = 1; len <= n * chunk; len += 7) {
        const size_t seg = ringSegmentElems(len, n, align);
        EXPECT_LE(seg, chunk);
        size_t next = 0;
        for (int i = 0; i < n; ++i) {
          ElemRange s = ringSegment(len, seg, i);
          EXPECT_EQ(s.offset, std::min(next, len));
          next = s.offset + s.count;
        }
        EXPECT_EQ(next, len);
      }
    }
  }
}

// The two-shot over every peer (one_shot_peers.cuh), cut as its kernel cuts it: channel shares, regions of
// nranks LL slots' data, parts of whole 8-byte words. Every element is owned exactly once, every part fits its
// slot and starts on a word, and a channel's share starts on nranks cache lines.
TEST(RingSplit, TwoShotCutCoversEveryElementOnce) {
  for (size_t esize : {size_t(2), size_t(4)}) {
    const size_t perWord = 8 / esize;
    for (size_t stepElems : {size_t(32), size_t(16384)}) {  // a tiny slot, and the 32 KiB of P2P's LL slot in floats
      for (int n = 3; n <= 8; ++n) {
        for (size_t count : {size_t(1), size_t(7), size_t(1031), size_t(16387), size_t(262139), size_t(300007)}) {
          for (int nch : {1, 3, 10}) {
            std::vector<uint8_t> seen(count, 0);
            size_t next = 0;
            for (int c = 0; c < nch; ++c) {
              const ElemRange r = twoShotChannelRange(count, nch, c, n, stepElems, esize);
              EXPECT_EQ(r.offset, std::min(next, count));
              if (r.count) EXPECT_EQ(r.offset * esize % (64 * n), 0u) << count << " " << nch << " " << c;
              next = r.offset + r.count;
              const size_t region = stepElems * n;
              for (size_t done = 0; done < r.count; done += region) {
                const size_t m = std::min(region, r.count - done);
                const size_t q = ringSegmentElems(m, n, perWord);
                ASSERT_LE(q, stepElems) << count << " n=" << n;
                ASSERT_EQ(q % perWord, 0u);
                for (int p = 0; p < n; ++p) {
                  const ElemRange part = ringSegment(m, q, p);
                  for (size_t i = 0; i < part.count; ++i) ++seen[r.offset + done + part.offset + i];
                }
              }
            }
            EXPECT_EQ(next, count);
            for (size_t i = 0; i < count; ++i)
              ASSERT_EQ(seen[i], 1u) << "element " << i << " of " << count << ", n=" << n << ", " << nch << " channels";
          }
        }
      }
    }
  }
}

// Device op widths: one channel per 64 KiB, at least one, at most the comm's.
TEST(RingSplit, ChannelsForBytes) {
  EXPECT_EQ(channelsForBytes(0, 64), 1);
  EXPECT_EQ(channelsForBytes(1, 64), 1);
  EXPECT_EQ(channelsForBytes(64 << 10, 64), 1);
  EXPECT_EQ(channelsForBytes((64 << 10) + 1, 64), 2);
  EXPECT_EQ(channelsForBytes(size_t(4) << 20, 64), 64);
  EXPECT_EQ(channelsForBytes(size_t(1) << 30, 64), 64);
  EXPECT_EQ(channelsForBytes(size_t(1) << 30, 7), 7);
  EXPECT_EQ(channelsForBytes(size_t(1) << 30, 0), 1);
}

// The one-shot all-reduce schedule that 2-rank GPU comms pick for small and mid sizes (ringAllReduceOneShot),
// run by the host executor where NCCL_ALGO forces it: every type and op, counts up to many FIFO steps, in
// and out of place, on 1 and 3 channels.
// The split one-shot's step count (the executor's FIFO-fit check) is the busiest channel's, cut exactly as
// the kernel cuts: checked against every channel's own count over sizes, types, channels and step caps.
TEST(RingSplit, OneShotChannelStepsIsTheBusiestChannels) {
  for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}})
    for (int nch : {1, 3, 48, 64})
      for (uint32_t cap : {0u, 4096u, 32768u, 131072u, 1u << 20})
        for (uint32_t connStep : {4096u, 524288u})
          for (size_t bytes : {size_t{0}, size_t{64}, (size_t{8} << 20) - 64, size_t{8} << 20, (size_t{8} << 20) + 12,
                               size_t{64} << 20, (size_t{200} << 20) + 7}) {
            const size_t count = bytes / es;
            const uint32_t step = cap != 0 && cap < connStep ? cap : connStep;
            const size_t chunk = chunkElemsFor(step, es);
            size_t most = 0;
            for (int c = 0; c < nch; ++c)
              most = std::max(most, divUp(channelRange(count, nch, c, alignElemsFor(chunk, es)).count, chunk));
            EXPECT_EQ(oneShotChannelSteps(count, es, nch, cap, connStep), most)
                << count << " x " << es << " on " << nch << " channels, cap " << cap << ", step " << connStep;
          }
  // 8 MB on 64 channels in 32 KiB steps: four per channel, as simpleStepCap intends.
  EXPECT_EQ(oneShotChannelSteps((size_t{8} << 20) / 4, 4, 64, 32768, 524288), 4u);
}

TEST(CollOneShot, TwoRanksEveryTypeAndOp) {
  TunerConfig cfg;
  ASSERT_EQ(parseAlgoList("NCCL_ALGO", "allreduce:OneShot", &cfg.algos), ncclSuccess);
  for (int nch : {1, 3}) {
    SCOPED_TRACE("channels " + std::to_string(nch));
    std::vector<Case> cases;
    for (const Case& c : buildCases(2, nch))
      if (c.coll == CollType::AllReduce) cases.push_back(c);
    ASSERT_GT(cases.size(), 100u);
    MemWorld world(2, nch, 256, 4);
    Failures fails;
    runRanks(&world, nch, 30, [&](int rank, HostExecutor& ex, MemProvider&) {
      ex.setTuning(cfg);
      for (const Case& c : cases) runCase(c, rank, 2, ex, &fails);
    });
    for (const std::string& m : fails.msgs) ADD_FAILURE() << m;
    EXPECT_EQ(fails.total, 0) << "of " << cases.size() << " cases";
  }
}

// The one-shot schedule's steps: per chunk, send this rank's input and reduce the peer's into the output (one
// hop); with more than 2 ranks it is the ring all-reduce.
struct RecordingPrims {
  std::vector<std::string> log;
  void note(const char* what, size_t a, size_t b, size_t n) {
    log.push_back(std::string(what) + " " + std::to_string(a) + " " + std::to_string(b) + " " + std::to_string(n));
  }
  void send(size_t in, size_t n) { note("send", in, in, n); }
  void recv(size_t out, size_t n) { note("recv", out, out, n); }
  void recvReduceSend(size_t in, size_t n) { note("recvReduceSend", in, in, n); }
  void recvReduceCopySend(size_t in, size_t out, size_t n, bool) { note("recvReduceCopySend", in, out, n); }
  void recvReduceCopy(size_t in, size_t out, size_t n, bool) { note("recvReduceCopy", in, out, n); }
  void recvCopySend(size_t out, size_t n) { note("recvCopySend", out, out, n); }
  void copySend(size_t in, size_t out, size_t n) { note("copySend", in, out, n); }
  void localReduceCopy(size_t in, size_t out, size_t n) { note("localReduceCopy", in, out, n); }
};

TEST(CollOneShot, ScheduleIsOneHopPerChunk) {
  RingArgs a;
  a.pos = 1;
  a.nranks = 2;
  a.count = 100;
  a.ch = ElemRange{40, 10};
  a.chunkElems = 4;
  a.alignElems = 1;
  RecordingPrims p;
  ringAllReduceOneShot(p, a);
  const std::vector<std::string> want = {"send 40 40 4", "recvReduceCopy 40 40 4", "send 44 44 4",
                                         "recvReduceCopy 44 44 4", "send 48 48 2", "recvReduceCopy 48 48 2"};
  EXPECT_EQ(p.log, want);
  // Three ranks: the ring all-reduce (2 (n-1) steps per loop), not the one-shot.
  a.nranks = 3;
  RecordingPrims ring, oneShot;
  ringAllReduce(ring, a);
  ringAllReduceOneShot(oneShot, a);
  EXPECT_EQ(oneShot.log, ring.log);
  EXPECT_EQ(ring.log.front().rfind("send", 0), 0u);
  EXPECT_NE(ring.log, want);
}

// Which reductions the one-shot may run: those whose bits do not depend on each rank's operand order.
TEST(CollOneShot, OnlyOrderIndependentReductions) {
  for (ncclDataType_t t : {ncclFloat32, ncclFloat16, ncclBfloat16, ncclFloat64, ncclInt32, ncclUint8}) {
    EXPECT_TRUE(oneShotExact(RedKind::Sum, t));
    EXPECT_TRUE(oneShotExact(RedKind::Prod, t));
  }
  for (RedKind k : {RedKind::Max, RedKind::Min, RedKind::PreMulSum}) {
    EXPECT_FALSE(oneShotExact(k, ncclFloat32));
    EXPECT_FALSE(oneShotExact(k, ncclBfloat16));
    EXPECT_TRUE(oneShotExact(k, ncclInt64));
  }
  EXPECT_TRUE(oneShotExact(RedKind::SumPostDiv, ncclInt32));
}

}  // namespace
}  // namespace braid
