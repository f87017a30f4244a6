// A rank that dies while a split or shrink creates the new communicator (after the new bootstrap started): the
// survivors' call must fail within about a second with ncclRemoteError naming the dead rank, not after the
// bootstrap timeout with "never connected to the root". The victim SIGKILLs itself as its second bootstrap
// begins (BRAID_TEST_KILL_AT_BOOTSTRAP=2; the first is the parent's init).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "mp/common/harness.h"
#include "nccl.h"

namespace {

constexpr int kBootstrapTimeoutSec = 20;  // the old behaviour: survivors waited this long
constexpr double kDetectWithinSec = 5;   // a second or so, with room for a loaded 2-core machine

void runWithVictim(int nranks, int victim, const std::function<ncclResult_t(ncclComm_t, int, ncclComm_t*)>& derive,
                   const char* what) {
  mp::Options o;
  o.timeoutSec = 3 * kBootstrapTimeoutSec;
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_BOOTSTRAP_TIMEOUT", std::to_string(kBootstrapTimeoutSec)}};
  o.childSetup = [&](int rank) {
    if (rank == victim) setenv("BRAID_TEST_KILL_AT_BOOTSTRAP", "2", 1);
  };
  auto r = mp::runRanks(nranks, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    ncclComm_t child = nullptr;
    mp::setStatus("%s; rank %d dies as its bootstrap begins", what, victim);
    const auto t0 = std::chrono::steady_clock::now();
    const ncclResult_t res = derive(comm, ctx.rank, &child);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_NE(ctx.rank, victim) << "the victim should have died in the " << what;
    const std::string msg = mp::lastError(comm);
    mp::note("rank %d: %s -> %s after %.2f s: %s", ctx.rank, what, ncclGetErrorString(res), took, msg.c_str());
    EXPECT_EQ(res, ncclRemoteError) << msg;
    EXPECT_NE(msg.find("rank " + std::to_string(victim)), std::string::npos) << "does not name the dead rank: " << msg;
    EXPECT_LT(took, kDetectWithinSec) << msg;
    if (res == ncclSuccess && child) ncclCommAbort(child);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks) {
    if (rr.timedOut) ok = false;
    if (rr.rank == victim ? rr.termSignal != SIGKILL : !(rr.exited && rr.exitCode == 0)) ok = false;
  }
  EXPECT_TRUE(ok) << r.describe();
}

TEST(SplitDeath, RankKilledInSplitBootstrapIsNamedAtOnce) {
  runWithVictim(3, 1, [](ncclComm_t comm, int rank, ncclComm_t* child) {
    return ncclCommSplit(comm, 0, rank, child, nullptr);
  }, "split");
}

TEST(SplitDeath, RankKilledInShrinkBootstrapIsNamedAtOnce) {
  // Nobody is excluded; rank 2 dies while the ranks create the shrunk communicator.
  runWithVictim(4, 2, [](ncclComm_t comm, int, ncclComm_t* child) {
    return ncclCommShrink(comm, nullptr, 0, child, nullptr, NCCL_SHRINK_DEFAULT);
  }, "shrink");
}

}  // namespace
