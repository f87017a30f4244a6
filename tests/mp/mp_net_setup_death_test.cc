// A rank that dies during the socket connection setup of a communicator (NCCL_SHM_DISABLE=1), after the
// connection handles went over the bootstrap: its neighbours wait in a socket accept or retry a refused connect.
// Every survivor's call must fail within about a second with ncclRemoteError naming the dead rank, not after
// BRAID_BOOTSTRAP_TIMEOUT. The victim SIGKILLs itself as a chosen NET connect begins
// (BRAID_TEST_NET_KILL_AT_CONNECT).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

#include "mp/common/harness.h"
#include "nccl.h"

namespace {

constexpr int kBootstrapTimeoutSec = 20;  // the old behaviour: survivors waited this long
constexpr double kDetectWithinSec = 5;   // a second or so, with room for a loaded 2-core machine

mp::Options socketOptions(int victim, int killAtConnect) {
  mp::Options o;
  o.timeoutSec = 3 * kBootstrapTimeoutSec;
  o.env = {{"BRAID_HOST_COMM", "1"},
           {"NCCL_SHM_DISABLE", "1"},
           {"BRAID_HOST_NCHANNELS", "1"},
           {"BRAID_BOOTSTRAP_TIMEOUT", std::to_string(kBootstrapTimeoutSec)}};
  o.childSetup = [victim, killAtConnect](int rank) {
    if (rank == victim) setenv("BRAID_TEST_NET_KILL_AT_CONNECT", std::to_string(killAtConnect).c_str(), 1);
  };
  return o;
}

void expectNamedAtOnce(ncclResult_t res, const std::string& msg, double took, int victim) {
  EXPECT_EQ(res, ncclRemoteError) << msg;
  EXPECT_NE(msg.find("rank " + std::to_string(victim) + " (pid"), std::string::npos)
      << "does not name the dead rank: " << msg;
  EXPECT_NE(msg.find("gone"), std::string::npos) << msg;
  EXPECT_LT(took, kDetectWithinSec) << msg;
}

void expectVictimKilledOthersPassed(const mp::RunResult& r, int victim) {
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks) {
    if (rr.timedOut) ok = false;
    if (rr.rank == victim ? rr.termSignal != SIGKILL : !(rr.exited && rr.exitCode == 0)) ok = false;
  }
  EXPECT_TRUE(ok) << r.describe();
  if (ok && getenv("MP_VERBOSE")) std::cout << r.describe();
}

TEST(NetSetupDeath, RankKilledInInitSocketSetupIsNamedAtOnce) {
  const int nranks = 4, victim = 1;
  // Its first connect: the send side to rank 2; rank 0 may be connecting to it, rank 2 waits in accept.
  auto r = mp::runRanks(nranks, socketOptions(victim, 1), [&](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    mp::setStatus("init over sockets; rank %d dies as its first NET connect begins", victim);
    const auto t0 = std::chrono::steady_clock::now();
    const ncclResult_t res = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_NE(ctx.rank, victim) << "the victim should have died in init";
    const std::string msg = mp::lastError(nullptr);
    mp::note("rank %d: init -> %s after %.2f s: %s", ctx.rank, ncclGetErrorString(res), took, msg.c_str());
    expectNamedAtOnce(res, msg, took, victim);
    if (res == ncclSuccess && comm) ncclCommAbort(comm);
  });
  expectVictimKilledOthersPassed(r, victim);
}

TEST(NetSetupDeath, RankKilledInSplitSocketSetupIsNamedAtOnce) {
  const int nranks = 3, victim = 2;
  // Init connects one ring channel (a send and a recv side); the third connect is the split's first.
  auto r = mp::runRanks(nranks, socketOptions(victim, 3), [&](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    ncclComm_t child = nullptr;
    mp::setStatus("split over sockets; rank %d dies as the split's first NET connect begins", victim);
    const auto t0 = std::chrono::steady_clock::now();
    const ncclResult_t res = ncclCommSplit(comm, 0, ctx.rank, &child, nullptr);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_NE(ctx.rank, victim) << "the victim should have died in the split";
    const std::string msg = mp::lastError(comm);
    mp::note("rank %d: split -> %s after %.2f s: %s", ctx.rank, ncclGetErrorString(res), took, msg.c_str());
    expectNamedAtOnce(res, msg, took, victim);
    if (res == ncclSuccess && child) ncclCommAbort(child);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  expectVictimKilledOthersPassed(r, victim);
}

}  // namespace
