// The tuner consulted by host communicators: each collective's channel count is the tuner's choice
// (logged under NCCL_DEBUG_SUBSYS=TUNING with the predicted time), results stay exact, NCCL_MAX_NCHANNELS
// bounds the choice, and a forced protocol the host path cannot run falls back with one warning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

// A fresh directory for the ranks' debug files (NCCL_DEBUG_FILE=<dir>/tune.%p.log), removed at scope end.
struct FreshDir {
  std::string path;
  FreshDir() {
    char tmpl[] = "/tmp/braid_tuning_XXXXXX";
    const char* d = mkdtemp(tmpl);
    path = d ? d : "";
  }
  ~FreshDir() {
    if (!path.empty()) std::system(("rm -rf " + path).c_str());
  }
};

// Every line of every rank's log that contains `needle`.
std::vector<std::string> logLines(const std::string& dir, const std::string& needle) {
  std::vector<std::string> out;
  FILE* ls = popen(("ls " + dir + "/tune.*.log 2>/dev/null").c_str(), "r");
  if (!ls) return out;
  char path[512];
  while (fgets(path, sizeof(path), ls)) {
    std::string p(path);
    while (!p.empty() && (p.back() == '\n')) p.pop_back();
    std::ifstream f(p);
    std::string line;
    while (std::getline(f, line))
      if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  pclose(ls);
  return out;
}

// The channel count in a tuner line "... Ring/Simple, N channels x T threads, ...".
int channelsIn(const std::string& line) {
  const size_t at = line.find(" channels x ");
  if (at == std::string::npos) return -1;
  size_t b = line.rfind(' ', at - 1);
  return std::atoi(line.substr(b + 1, at - b - 1).c_str());
}

// Rank 0 makes the id: the gtest process must never call into Braid, or its logging setup (made from
// its own environment) would be inherited by the forked ranks and their NCCL_DEBUG* ignored.
mp::Options logOptions() {
  mp::Options o;
  o.timeoutSec = 60;
  o.idSource = mp::IdSource::kRank0;
  return o;
}

void runAllReduces(mp::RankCtx& ctx, const std::vector<size_t>& counts) {
  ncclComm_t comm = nullptr;
  MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank));
  for (size_t n : counts) {
    Case c;
    c.coll = Coll::kAllReduce;
    c.dt = ncclFloat32;
    c.opKind = ncclSum;
    c.count = n;
    EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c)) << "count " << n;
  }
  MP_NCCL_ASSERT(ncclCommDestroy(comm));
}

TEST(HostTuning, ChannelsFollowTheModelAndAreLogged) {
  FreshDir fresh;
  ASSERT_FALSE(fresh.path.empty());
  const std::string& dir = fresh.path;
  mp::Options o = logOptions();
  o.env = {{"BRAID_HOST_COMM", "1"},      {"BRAID_HOST_NCHANNELS", "4"},
           {"NCCL_DEBUG", "INFO"},        {"NCCL_DEBUG_SUBSYS", "TUNING"},
           {"NCCL_DEBUG_FILE", dir + "/tune.%p.log"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) { runAllReduces(ctx, {7, size_t(4) << 20}); });
  mp::expectAllPassed(r);
  const auto small = logLines(dir, "AllReduce 28 bytes");
  const auto large = logLines(dir, "AllReduce 16777216 bytes");
  ASSERT_EQ(small.size(), 2u) << "one tuner line per rank for the small all-reduce";
  ASSERT_EQ(large.size(), 2u) << "one tuner line per rank for the large all-reduce";
  for (const auto& l : small) {
    EXPECT_EQ(channelsIn(l), 1) << l;
    EXPECT_NE(l.find("predicted"), std::string::npos) << l;
  }
  for (const auto& l : large) {
    EXPECT_GT(channelsIn(l), 1) << l;
    EXPECT_LE(channelsIn(l), 4) << l;
  }
}

TEST(HostTuning, MaxChannelsBoundsTheChoice) {
  FreshDir fresh;
  ASSERT_FALSE(fresh.path.empty());
  const std::string& dir = fresh.path;
  mp::Options o = logOptions();
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_HOST_NCHANNELS", "4"}, {"NCCL_MAX_NCHANNELS", "2"},
           {"NCCL_DEBUG", "INFO"},   {"NCCL_DEBUG_SUBSYS", "TUNING"}, {"NCCL_DEBUG_FILE", dir + "/tune.%p.log"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) { runAllReduces(ctx, {size_t(4) << 20}); });
  mp::expectAllPassed(r);
  const auto large = logLines(dir, "AllReduce 16777216 bytes");
  ASSERT_EQ(large.size(), 2u);
  for (const auto& l : large) EXPECT_LE(channelsIn(l), 2) << l;
}

TEST(HostTuning, ForcedProtocolFallsBackWithAWarning) {
  FreshDir fresh;
  ASSERT_FALSE(fresh.path.empty());
  const std::string& dir = fresh.path;
  mp::Options o = logOptions();
  o.env = {{"BRAID_HOST_COMM", "1"}, {"NCCL_PROTO", "LL"}, {"NCCL_DEBUG", "WARN"},
           {"NCCL_DEBUG_FILE", dir + "/tune.%p.log"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) { runAllReduces(ctx, {1000, 100003}); });
  mp::expectAllPassed(r);
  const auto warns = logLines(dir, "leave nothing usable");
  EXPECT_EQ(warns.size(), 3u) << "one warning per rank";
  for (const auto& l : warns) EXPECT_NE(l.find("Simple"), std::string::npos) << l;
}

// Only rank 0 forces the one-shot all-reduce: without the init-time agreement rank 0 would run the one-shot
// schedule against rank 1's ring (mismatched steps). Agreed, both run what both allow (the ring), the
// results are right, and each rank warns that the settings differ.
TEST(HostTuning, RanksWithDifferentAlgoSettingsAgree) {
  FreshDir fresh;
  ASSERT_FALSE(fresh.path.empty());
  const std::string& dir = fresh.path;
  mp::Options o = logOptions();
  o.env = {{"BRAID_HOST_COMM", "1"}, {"NCCL_DEBUG", "WARN"}, {"NCCL_DEBUG_FILE", dir + "/tune.%p.log"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    if (ctx.rank == 0) setenv("NCCL_ALGO", "allreduce:OneShot", 1);
    runAllReduces(ctx, {1000, 100003});
  });
  mp::expectAllPassed(r);
  EXPECT_EQ(logLines(dir, "differ across ranks").size(), 2u) << "one warning per rank";
}

// ncclGroupSimulateEnd returns the cost model's estimate of the group as the communicator would plan it,
// runs nothing, and adds up the collectives of a group (one launch each).
TEST(HostTuning, GroupSimulateEndEstimatesWithoutRunning) {
  mp::Options o = logOptions();
  o.env = {{"BRAID_HOST_COMM", "1"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank));
    const size_t big = size_t(1) << 20;
    std::vector<float> in(big, 1.0f), out(big, -7.0f);
    auto simulate = [&](std::initializer_list<size_t> counts) {
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      EXPECT_EQ(ncclGroupStart(), ncclSuccess);
      for (size_t n : counts)
        EXPECT_EQ(ncclAllReduce(in.data(), out.data(), n, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
      return info.estimatedTime;
    };
    const float small = simulate({2});
    const float large = simulate({big});
    const float both = simulate({2, big});
    EXPECT_GT(small, 0.0f);
    EXPECT_GT(large, small);
    EXPECT_NEAR(both, small + large, 1e-3f * (small + large));
    size_t touched = 0;
    for (float v : out) touched += v != -7.0f;
    EXPECT_EQ(touched, 0u) << "a simulated group ran";
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// A communicator's point-to-point ops in one group run side by side in one launch (after its collectives, one
// launch each): the group's estimate is the collectives' sum plus the slowest p2p op, not the sum of all.
TEST(HostTuning, GroupSimulateEndTakesTheSlowestP2pOp) {
  mp::Options o = logOptions();
  o.env = {{"BRAID_HOST_COMM", "1"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank));
    const int peer = 1 - ctx.rank;
    const size_t small = size_t(1) << 16, big = size_t(1) << 20;
    std::vector<float> in(big, 1.0f), out(big, -7.0f);
    enum Op { kSend, kRecv, kAllReduce };
    auto simulate = [&](std::initializer_list<std::pair<Op, size_t>> ops) {
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      EXPECT_EQ(ncclGroupStart(), ncclSuccess);
      for (auto [what, n] : ops) {
        if (what == kSend) EXPECT_EQ(ncclSend(in.data(), n, ncclFloat32, peer, comm, nullptr), ncclSuccess);
        if (what == kRecv) EXPECT_EQ(ncclRecv(out.data(), n, ncclFloat32, peer, comm, nullptr), ncclSuccess);
        if (what == kAllReduce)
          EXPECT_EQ(ncclAllReduce(in.data(), out.data(), n, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
      }
      EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
      return info.estimatedTime;
    };
    const float sendBig = simulate({{kSend, big}});
    const float recvSmall = simulate({{kRecv, small}});
    const float ar = simulate({{kAllReduce, big}});
    printf("rank %d: send %zu floats %.2f us, receive %zu floats %.2f us, all-reduce %.2f us\n", ctx.rank, big, sendBig,
           small, recvSmall, ar);
    EXPECT_GT(recvSmall, 0.0f);
    EXPECT_GT(sendBig, recvSmall);
    EXPECT_NEAR(simulate({{kSend, big}, {kRecv, small}}), sendBig, 1e-3f * sendBig);
    EXPECT_NEAR(simulate({{kRecv, small}, {kSend, big}, {kRecv, small}}), sendBig, 1e-3f * sendBig);
    EXPECT_NEAR(simulate({{kAllReduce, big}, {kSend, big}, {kRecv, small}}), ar + sendBig, 1e-3f * (ar + sendBig));
    size_t touched = 0;
    for (float v : out) touched += v != -7.0f;
    EXPECT_EQ(touched, 0u) << "a simulated group ran";
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

}  // namespace
