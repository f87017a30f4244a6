// Every collective x datatype x op on host communicators of 1..5 forked ranks, over shared memory and over
// sockets (NCCL_SHM_DISABLE=1): out-of-place and in-place, roots 0 and last, counts 0, 1, 7, nranks-1,
// 1001 and one spanning many FIFO steps, with outputs poisoned and guard regions checked. One forked job
// per (nranks, transport); the ranks walk the same list of cases in lockstep.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "mp/common/coll_cases.h"
#include "mp/common/coll_check.h"
#include "mp/common/dtypes.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::buildCases;
using mp::Case;
using mp::Coll;

struct JobParam {
  int nranks;
  bool sockets;
};

void PrintTo(const JobParam& p, std::ostream* os) {
  *os << p.nranks << " ranks over " << (p.sockets ? "sockets" : "shared memory");
}

std::string paramName(const testing::TestParamInfo<JobParam>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + (info.param.sockets ? "socket" : "shm");
}

class Collectives : public testing::TestWithParam<JobParam> {};

// Per-job environment: vary channels and FIFO sizes across jobs so several configurations are covered.
mp::Options jobOptions(const JobParam& p) {
  mp::Options o;
  o.timeoutSec = 240;
  o.env.push_back({"BRAID_TIMEOUT", "60"});
  if (p.sockets) o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  switch (p.nranks * 2 + (p.sockets ? 1 : 0)) {
    case 4:
      o.env.push_back({"BRAID_HOST_NCHANNELS", "2"});
      break;  // 2 shm
    case 5:
      o.env.push_back({"NCCL_BUFFSIZE", "65536"});
      break;  // 2 sock
    case 6:
      o.env.insert(o.env.end(), {{"BRAID_HOST_NCHANNELS", "3"}, {"NCCL_BUFFSIZE", "65536"}});
      break;  // 3 shm
    case 7:
      o.env.push_back({"BRAID_HOST_NCHANNELS", "2"});
      break;  // 3 sock
    case 8:
      o.env.push_back({"NCCL_BUFFSIZE", "65536"});
      break;  // 4 shm
    case 9:
      o.env.insert(o.env.end(), {{"BRAID_HOST_NCHANNELS", "2"}, {"NCCL_BUFFSIZE", "65536"}});
      break;  // 4 sock
    case 10:
      o.env.insert(o.env.end(), {{"BRAID_HOST_NCHANNELS", "2"}, {"NCCL_BUFFSIZE", "65536"}});
      break;  // 5 shm
    case 11:
      o.env.push_back({"NCCL_BUFFSIZE", "65536"});
      break;  // 5 sock
    default:
      break;
  }
  return o;
}

// Runs every case of buildCases on `comm` (see mp::runCases).
bool runAllCases(ncclComm_t comm, const mp::RankCtx& ctx) { return mp::runCases(comm, ctx, buildCases(ctx.nranks)); }

// A rank's whole body in the jobs below: a communicator, every case of buildCases on it, its destruction.
void everyCase(mp::RankCtx& ctx) {
  ncclComm_t comm;
  mp::initComm(ctx, &comm);
  if (testing::Test::HasFatalFailure()) return;
  mp::setReportBudget(25);
  if (!runAllCases(comm, ctx)) return;
  mp::reportSuppressed();
  MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
}

TEST_P(Collectives, EveryCollectiveTypeOpCount) {
  const JobParam p = GetParam();
  mp::Options o = jobOptions(p);
  auto r = mp::runRanks(p.nranks, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    int count = -1, me = -1, dev = 0;
    EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
    EXPECT_EQ(count, ctx.nranks);
    EXPECT_EQ(ncclCommUserRank(comm, &me), ncclSuccess);
    EXPECT_EQ(me, ctx.rank);
    EXPECT_EQ(ncclCommCuDevice(comm, &dev), ncclSuccess);
    EXPECT_EQ(dev, -1) << "host communicators report device -1";
    mp::setReportBudget(25);
    const double t0 = mp::nowSec();
    if (!runAllCases(comm, ctx)) return;
    mp::note("%zu cases in %.1f s", buildCases(ctx.nranks).size(), mp::nowSec() - t0);
    mp::reportSuppressed();
    mp::setStatus("ncclCommDestroy");
    MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
  });
  mp::expectAllPassed(r);
}

// Rings in another order than rank order (BRAID_RING_ORDER, src/runtime/ring_order.h): every collective, every
// element checked, over real processes and transports. Rank 0's order holds for all: the other ranks set a
// different (valid) one, which only earns them a warning.
// channels > 0: that many channels on every collective (BRAID_HOST_NCHANNELS and NCCL_MIN_NCHANNELS), so each of
// several rings carries part of every one.
void runOrdered(const JobParam& p, const char* order, const char* othersOrder, int channels = 0) {
  mp::Options o = jobOptions(p);
  if (channels > 0) {
    o.env.push_back({"BRAID_HOST_NCHANNELS", std::to_string(channels)});
    o.env.push_back({"NCCL_MIN_NCHANNELS", std::to_string(channels)});
  }
  o.childSetup = [order, othersOrder](int rank) { setenv("BRAID_RING_ORDER", rank == 0 ? order : othersOrder, 1); };
  auto r = mp::runRanks(p.nranks, o, everyCase);
  mp::expectAllPassed(r);
}

TEST(CollectivesRingOrder, FourRanksShm) { runOrdered(JobParam{4, false}, "0,2,1,3", "0,2,1,3"); }
TEST(CollectivesRingOrder, FiveRanksSockets) { runOrdered(JobParam{5, true}, "2,0,3,1,4", "4,3,2,1,0"); }
// A ring per channel (channel c on ring c % nRings): each channel's connections go to its own ring's neighbours and
// its schedule walks that ring, so a channel on the wrong ring would mix data or wait forever.
TEST(CollectivesRingOrder, FourRanksShmTwoRings) {
  runOrdered(JobParam{4, false}, "0,1,2,3|0,2,1,3", "0,1,2,3|0,2,1,3", 3);
}
TEST(CollectivesRingOrder, FourRanksSocketsThreeRings) {
  runOrdered(JobParam{4, true}, "0,1,2,3|3,1,0,2|0,3,2,1", "0,1,2,3", 4);
}
TEST(CollectivesRingOrder, ThreeRanksShmTwoRingsEachWay) { runOrdered(JobParam{3, false}, "0,1,2|2,1,0", "", 2); }

// NCCL_HOSTID splits one machine into nodes: ranks 0 and 2 on one, 1 and 3 on the other. Each node's ranks are kept
// together in the ring (0,2,1,3: two crossings, not four), the nodes talk over sockets though SHM is allowed, and
// every collective checks out. The log (NCCL_DEBUG_FILE) shows the order and the transports.
TEST(CollectivesHosts, NodesByHostIdKeepTheirRanksTogether) {
  mp::LogDir logs;
  ASSERT_TRUE(logs.ok());
  mp::Options o = jobOptions(JobParam{4, false});
  o.env.push_back({"NCCL_DEBUG", "INFO"});
  o.env.push_back({"NCCL_DEBUG_SUBSYS", "INIT"});
  o.childSetup = [&logs](int rank) {
    setenv("NCCL_HOSTID", rank % 2 == 0 ? "node-even" : "node-odd", 1);
    setenv("NCCL_DEBUG_FILE", logs.path(rank).c_str(), 1);
  };
  auto r = mp::runRanks(4, o, everyCase);
  mp::expectAllPassed(r);
  const std::string log0 = logs.read(0);
  EXPECT_NE(log0.find("rings run in the order 0,2,1,3"), std::string::npos) << log0;
  // Rank 0 sends to rank 2 (its node) and receives from rank 3 (the other node).
  EXPECT_NE(log0.find("send to 2 via SHM, recv from 3 via NET"), std::string::npos) << log0;
  const std::string log2 = logs.read(2);
  EXPECT_NE(log2.find("send to 1 via NET, recv from 0 via SHM"), std::string::npos) << log2;
  // As in the net bed: no connection closed with requests outstanding (a strict network plugin says so).
  EXPECT_EQ(logs.count(4, "request(s) outstanding"), 0) << "a connection closed with requests outstanding";
}

// BRAID_NET_SOCKET_TWO_WAY set differently in each process: the rank that shares a connection announces it on the
// socket, and the other follows whatever its own setting. Every collective checks out over sockets, for both orders of
// the settings. Where the higher rank shares (its ring connection from rank 0, taken before its accept), the logs must
// show it; the other order shares only connections made later (point-to-point), which nothing here requires.
void runMixedTwoWay(const char* rank0, const char* rank1, bool mustShare) {
  mp::LogDir logs;
  ASSERT_TRUE(logs.ok());
  mp::Options o = jobOptions(JobParam{2, true});
  o.env.insert(o.env.end(), {{"BRAID_HOST_COMM", "1"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT"}});
  o.childSetup = [&logs, rank0, rank1](int rank) {
    setenv("BRAID_NET_SOCKET_TWO_WAY", rank == 0 ? rank0 : rank1, 1);
    setenv("NCCL_DEBUG_FILE", logs.path(rank).c_str(), 1);
  };
  auto r = mp::runRanks(2, o, everyCase);
  mp::expectAllPassed(r);
  if (mustShare)
    EXPECT_GT(logs.count(2, "over the connection from it"), 0)
        << "rank 1 should have run its ring sends over rank 0's connection";
}

TEST(CollectivesTwoWay, MixedSettings_LowerRankOff) { runMixedTwoWay("0", "1", true); }
TEST(CollectivesTwoWay, MixedSettings_HigherRankOff) { runMixedTwoWay("2", "0", false); }

// A malformed order on rank 0 fails init on every rank, naming the variable (the others would otherwise wait
// for a ring rank 0 never builds).
TEST(CollectivesRingOrder, MalformedOrderFailsInitEverywhere) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env.push_back({"BRAID_TIMEOUT", "20"});
  o.env.push_back({"BRAID_RING_ORDER", "0,1,1"});
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank), ncclInvalidArgument);
    if (ctx.rank == 0) EXPECT_TRUE(mp::containsCI(mp::lastError(nullptr), "BRAID_RING_ORDER")) << mp::lastError(nullptr);
  });
  mp::expectAllPassed(r);
}

// ---- the harness checks itself (no library calls) ----

TEST(Harness, FloatConverters) {
  // Every finite code survives decode -> encode; known values; ties round to even.
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = mp::halfToFloat((uint16_t)h);
    if (!std::isnan(f)) ASSERT_EQ(mp::floatToHalf(f), h) << std::hex << h;
    float b = mp::bf16ToFloat((uint16_t)h);
    if (!std::isnan(b)) ASSERT_EQ(mp::floatToBf16(b), h) << std::hex << h;
  }
  for (uint32_t c = 0; c < 256; c++) {
    for (bool e4 : {true, false}) {
      double v = mp::fp8ToDouble((uint8_t)c, e4);
      if (std::isnan(v)) continue;
      ASSERT_EQ(mp::doubleToFp8(v, e4), c) << (e4 ? "e4m3 " : "e5m2 ") << std::hex << c;
    }
  }
  EXPECT_EQ(mp::floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(mp::floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(mp::floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even
  EXPECT_EQ(mp::floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(mp::floatToHalf(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(mp::floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(mp::floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie -> even
  EXPECT_EQ(mp::doubleToFp8(448, true), 0x7E);
  EXPECT_EQ(mp::doubleToFp8(1.0, true), 0x38);
  EXPECT_EQ(mp::doubleToFp8(1.0625, true), 0x38);  // tie between 1 and 1.125 -> even
  EXPECT_EQ(mp::doubleToFp8(1.1875, true), 0x3A);  // tie between 1.125 and 1.25 -> even
  EXPECT_EQ(mp::doubleToFp8(1000, true), 0x7E);    // saturates (no inf in e4m3)
  EXPECT_EQ(mp::doubleToFp8(57344, false), 0x7B);
  EXPECT_EQ(mp::doubleToFp8(1.0, false), 0x3C);
  EXPECT_EQ(mp::doubleToFp8(-2.0, false), 0xC0);
  EXPECT_EQ(mp::fp8ToDouble(0x01, true), std::ldexp(1.0, -9));
  EXPECT_EQ(mp::fp8ToDouble(0x01, false), std::ldexp(1.0, -16));
}

// Every case of the suite, filled with the reference result, passes the checker; and the checker catches a
// wrong element, an unwritten element, guard damage on both sides and a modified send buffer.
TEST(Harness, CheckerAcceptsReferenceAndCatchesDamage) {
  using C = mp::CaseRun::Corruption;
  mp::setReportBudget(1 << 30);
  int caught = 0;
  for (int n : {1, 2, 3, 5}) {
    std::vector<Case> cases = buildCases(n);
    for (int rank = 0; rank < n; rank++) {
      for (size_t k = 0; k < cases.size(); k++) {
        const Case& c = cases[k];
        if (c.count > 5000 || (k + rank) % 5 != 0) continue;  // a fifth of the small cases per rank
        mp::CaseRun good(c, rank, n);
        good.prepare();
        good.simulate();
        ASSERT_TRUE(good.check()) << "reference result rejected: " << mp::caseName(c, n) << " rank " << rank;
        for (C m : {C::kOneElement, C::kUnwritten, C::kGuardBefore, C::kGuardAfter, C::kSendBuffer}) {
          mp::CaseRun bad(c, rank, n);
          bad.prepare();
          bad.simulate();
          if (!bad.corrupt(m)) continue;
          testing::TestPartResultArray res;
          bool ok;
          {
            testing::ScopedFakeTestPartResultReporter rep(
                testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &res);
            ok = bad.check();
          }
          ASSERT_FALSE(ok) << "damage " << (int)m << " not caught: " << mp::caseName(c, n) << " rank " << rank;
          ASSERT_GT(res.size(), 0) << "damage " << (int)m << " caught silently";
          caught++;
        }
      }
    }
  }
  EXPECT_GT(caught, 1000);
}

INSTANTIATE_TEST_SUITE_P(Jobs, Collectives,
                         testing::Values(JobParam{1, false}, JobParam{2, false}, JobParam{2, true}, JobParam{3, false},
                                         JobParam{3, true}, JobParam{4, false}, JobParam{4, true}, JobParam{5, false},
                                         JobParam{5, true}),
                         paramName);

}  // namespace
