// Faults: a rank that never arrives at init, a rank killed in the middle of an all-reduce loop (over shared
// memory, over sockets, and over sockets that carry both directions), a rank stopped (SIGSTOP) between
// all-reduces, ncclCommAbort on healthy comms and while a peer waits. Every survivor must get an error naming the
// dead rank within the timeout; nothing may hang; abort returns promptly.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

// Expects exactly the listed ranks to have ended as described, and every other rank to have passed.
void expectSurvivorsPassed(const mp::RunResult& r, int deadRank, bool deadBySigkill) {
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks) {
    if (rr.timedOut) ok = false;
    if (rr.rank == deadRank) {
      if (deadBySigkill ? rr.termSignal != SIGKILL : !(rr.exited && rr.exitCode == 1)) ok = false;
    } else if (!rr.exited || rr.exitCode != 0) {
      ok = false;
    }
  }
  if (!ok)
    ADD_FAILURE() << r.describe();
  else if (getenv("MP_VERBOSE"))
    std::cout << r.describe();
}

// (a) Rank 2 of 4 exits before init. Every other rank's init fails within the bootstrap timeout and the
// message names rank 2.
TEST(Fault, RankMissingAtInit) {
  mp::Options o;
  o.idSource = mp::IdSource::kRank0;  // the root lives in rank 0 and reads BRAID_BOOTSTRAP_TIMEOUT there
  o.timeoutSec = 45;
  o.env = {{"BRAID_BOOTSTRAP_TIMEOUT", "3"}};
  const int dead = 2;
  auto r = mp::runRanks(4, o, [&](mp::RankCtx& ctx) {
    if (ctx.rank == dead) _exit(1);
    ncclComm_t comm = nullptr;
    mp::setStatus("init with rank %d missing", dead);
    double t0 = mp::nowSec();
    ncclResult_t res = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    double dt = mp::nowSec() - t0;
    std::string msg = mp::lastError(nullptr);
    mp::note("init -> %s after %.1f s: %s", ncclGetErrorString(res), dt, msg.c_str());
    EXPECT_NE(res, ncclSuccess) << "init must fail when rank " << dead << " never arrives";
    EXPECT_LT(dt, 10.0) << "BRAID_BOOTSTRAP_TIMEOUT=3";
    EXPECT_TRUE(mp::mentionsRank(msg, dead)) << "the message should name rank " << dead << ": " << msg;
    if (res == ncclSuccess && comm) ncclCommAbort(comm);
  });
  expectSurvivorsPassed(r, dead, false);
}

struct KillShared {
  std::atomic<double> killTime;
};

// The ranks a "... is gone" / "... are gone" message names as gone (its cause), before any "also exited"
// part that lists survivors which exited after their own error.
std::vector<int> ranksNamedGone(const std::string& msg) {
  std::vector<int> out;
  const size_t end = msg.find(" gone");
  if (end == std::string::npos) return out;
  for (size_t at = msg.find("rank "); at != std::string::npos && at < end; at = msg.find("rank ", at + 5)) {
    int r = -1;
    if (sscanf(msg.c_str() + at, "rank %d (pid", &r) == 1 && msg.compare(at, 5, "rank ") == 0 &&
        msg.find(" (pid", at) < msg.find(',', at))
      out.push_back(r);
  }
  return out;
}

// (b) One rank raises SIGKILL at a random point inside a large all-reduce loop. twoWay: over sockets, each pair's
// connections on a tag share one TCP connection (BRAID_NET_SOCKET_TWO_WAY=1), so the kill resets a socket that both
// directions use; the logs must show a connection shared.
void killDuringAllReduce(int nranks, int victim, bool sockets, int timeoutEnv, double maxDetect, bool strictMessage,
                         bool twoWay = false) {
  auto* sh = (KillShared*)mp::sharedAlloc(sizeof(KillShared));
  ASSERT_NE(sh, nullptr);
  mp::Options o;
  o.timeoutSec = 90;
  o.env = {{"BRAID_TIMEOUT", std::to_string(timeoutEnv)}, {"NCCL_BUFFSIZE", "262144"}};
  if (sockets) o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  mp::LogDir logs;
  if (twoWay) {
    ASSERT_TRUE(logs.ok());
    o.env.insert(o.env.end(),
                 {{"BRAID_NET_SOCKET_TWO_WAY", "1"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT"}});
    o.childSetup = [&logs](int rank) { setenv("NCCL_DEBUG_FILE", logs.path(rank).c_str(), 1); };
  }
  auto r = mp::runRanks(nranks, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    const size_t count = 1 << 20;
    std::vector<float> in(count, 1.0f), out(count);
    ncclResult_t res = ncclSuccess;
    double tErr = 0;
    int iter = 0;
    double tEnd = mp::nowSec() + 45;
    for (; mp::nowSec() < tEnd; iter++) {
      if (ctx.rank == victim && iter == 3) {
        std::thread([sh] {
          usleep(20000);  // somewhere inside the next all-reduces
          sh->killTime.store(mp::nowSec());
          raise(SIGKILL);
        }).detach();
      }
      mp::setStatus("all-reduce iteration %d", iter);
      res = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      if (res != ncclSuccess) {
        tErr = mp::nowSec();
        break;
      }
      if (iter < 3) ASSERT_EQ(out[count - 1], (float)ctx.nranks);
    }
    ASSERT_NE(ctx.rank, victim) << "the victim should be dead by now";
    ASSERT_NE(res, ncclSuccess) << "no error after " << iter << " all-reduces with rank " << victim << " dead";
    double killed = sh->killTime.load();
    ASSERT_GT(killed, 0) << "the victim never recorded its death";
    double detect = tErr - killed;
    std::string msg = mp::lastError(comm);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    mp::note("rank %d: %s after %.2f s (iteration %d), async=%s: %s", ctx.rank, ncclGetErrorString(res), detect, iter,
             ncclGetErrorString(async), msg.c_str());
    EXPECT_LE(detect, maxDetect) << "the survivor took too long to notice the dead rank";
    EXPECT_EQ(res, ncclRemoteError) << "a dead peer is ncclRemoteError (docs/DESIGN.md §2): " << msg;
    if (strictMessage) {
      EXPECT_TRUE(mp::mentionsRank(msg, victim)) << "the message should name rank " << victim << ": " << msg;
    } else {
      EXPECT_TRUE(mp::containsCI(msg, "rank")) << "the message should name a rank: " << msg;
    }
    // Survivors abort and exit right after their own error: none of them is named as a cause.
    for (int r : ranksNamedGone(msg))
      EXPECT_EQ(r, victim) << "rank " << r << " exited after its own error, yet is named as gone: " << msg;
    mp::setStatus("ncclCommAbort after the fault");
    double t0 = mp::nowSec();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(mp::nowSec() - t0, 2.0) << "ncclCommAbort must return promptly";
  });
  expectSurvivorsPassed(r, victim, true);
  if (twoWay) EXPECT_GT(logs.count(nranks, "over the connection from it"), 0) << "no connection ran both ways";
}

TEST(Fault, RankKilledDuringAllReduce_3ranks_shm) { killDuringAllReduce(3, 1, false, 20, 15, true); }
TEST(Fault, RankKilledDuringAllReduce_3ranks_socket) { killDuringAllReduce(3, 1, true, 20, 15, true); }
// Two ranks over one TCP connection a tag: the kill resets it under the survivor's send and receive at once.
TEST(Fault, RankKilledDuringAllReduce_2ranks_socketTwoWay) { killDuringAllReduce(2, 1, true, 20, 15, true, true); }
// With 4 ranks, rank 0 is not a ring neighbour of rank 2; the neighbours fail first, abort and exit, and
// rank 0 must still name rank 2 (not them) as the rank that is gone.
TEST(Fault, RankKilledDuringAllReduce_4ranks_shm) { killDuringAllReduce(4, 2, false, 8, 8 + 6, true); }
TEST(Fault, RankKilledDuringAllReduce_4ranks_socket) { killDuringAllReduce(4, 2, true, 8, 8 + 6, true); }

// (c) Rank 2 of 4 stops itself (SIGSTOP) before its 6th all-reduce; it stays alive, so no liveness check fires.
// Each survivor's call times out (BRAID_TIMEOUT=3) with ncclRemoteError, and its message must name rank 2 as
// not having reached the operation, with each rank's last operation, whichever neighbour it waited on (or
// whichever survivor had already failed and exited: errors cascade around the ring).
// Whether the rank list just before msg[end] ("rank 2 ", "ranks 0,2 ", "ranks 2-3 ") holds rank r.
bool rankListBefore(const std::string& msg, size_t end, int r) {
  const size_t at = msg.rfind("rank", end);
  if (at == std::string::npos) return false;
  size_t i = msg.find(' ', at);
  if (i == std::string::npos || i >= end) return false;
  std::string list = msg.substr(i + 1, end - i - 1);
  for (size_t pos = 0; pos < list.size();) {
    size_t comma = list.find(',', pos);
    const std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int lo = -1, hi = -1;
    if (sscanf(item.c_str(), "%d-%d", &lo, &hi) == 2 ? lo <= r && r <= hi : lo == r) return true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return false;
}

void stalledRankIsNamed(bool sockets) {
  const int nranks = 4, stalled = 2, stallAt = 5;  // iterations 0-4 are batches #1-#5
  mp::Options o;
  o.timeoutSec = 60;
  o.killStopped = true;
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_TIMEOUT", "3"}};
  if (sockets) o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  auto r = mp::runRanks(nranks, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    const size_t count = 4096;
    std::vector<float> in(count, 1.0f), out(count);
    ncclResult_t res = ncclSuccess;
    int iter = 0;
    for (; iter <= stallAt; iter++) {
      if (ctx.rank == stalled && iter == stallAt) {
        mp::setStatus("stopped before all-reduce %d", iter);
        raise(SIGSTOP);
        _exit(3);  // never continued: the harness kills it
      }
      mp::setStatus("all-reduce iteration %d", iter);
      std::fill(out.begin(), out.end(), -1.0f);
      res = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      if (res != ncclSuccess) break;
      ASSERT_EQ(out[0], (float)nranks);
      ASSERT_EQ(out[count - 1], (float)nranks);
    }
    std::string msg = mp::lastError(comm);
    mp::note("rank %d: %s at iteration %d: %s", ctx.rank, ncclGetErrorString(res), iter, msg.c_str());
    EXPECT_EQ(res, ncclRemoteError) << msg;
    EXPECT_NE(msg.find("rank 2: #5 AllReduce done"), std::string::npos) << "rank 2's last operation: " << msg;
    EXPECT_NE(msg.find("rank 2 (pid"), std::string::npos) << "rank 2 should be reported stopped: " << msg;
    if (sockets && iter == stallAt - 1) {
      // Over sockets rank 2's last sends of #5 may sit in its stopped proxy thread: a survivor downstream is then
      // still in #5 itself, and rank 2 is named as stopped rather than as behind.
      mp::note("rank %d failed in #5 (rank 2's last sends were held back)", ctx.rank);
    } else {
      EXPECT_EQ(iter, stallAt);
      // "rank 2 did not reach ...", or "ranks 2-3 ..." where a downstream rank failed in #5 (over sockets).
      const size_t notReached = msg.find("did not reach this rank's operation #6 AllReduce");
      EXPECT_NE(notReached, std::string::npos) << "the message should say who did not reach the operation: " << msg;
      EXPECT_TRUE(notReached != std::string::npos && rankListBefore(msg, notReached, 2))
          << "the message should name the stalled rank 2 as not having reached the operation: " << msg;
      // Every survivor is in #6, or has already failed it (ranks in the same state are listed together).
      EXPECT_NE(msg.find(": #6 AllReduce "), std::string::npos) << "the survivors' last operation: " << msg;
    }
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks) {
    if (rr.timedOut) ok = false;
    if (rr.rank == stalled ? !(rr.stopped && rr.termSignal == SIGKILL) : !(rr.exited && rr.exitCode == 0)) ok = false;
  }
  if (!ok)
    ADD_FAILURE() << r.describe();
  else if (getenv("MP_VERBOSE"))
    std::cout << r.describe();
}

TEST(Fault, StalledRankIsNamed_4ranks_shm) { stalledRankIsNamed(false); }
TEST(Fault, StalledRankIsNamed_4ranks_socket) { stalledRankIsNamed(true); }

// (b2) A rank dies after init; another rank then sends to it for the first time, so its bootstrap must connect
// to a listener that is gone. The refused connect is recognised as the dead rank within seconds, not retried
// for the whole BRAID_TIMEOUT.
TEST(Fault, FirstSendToADeadRankFailsFast) {
  struct Shared {
    std::atomic<int> ready;
    std::atomic<int> done;
  };
  auto* sh = static_cast<Shared*>(mp::sharedAlloc(sizeof(Shared)));
  ASSERT_NE(sh, nullptr);
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "40"}};
  const int dead = 2;
  auto r = mp::runRanks(4, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    sh->ready.fetch_add(1);
    while (sh->ready.load() < 4) usleep(1000);
    if (ctx.rank == dead) _exit(1);
    if (ctx.rank == 0) {
      usleep(100 * 1000);  // rank 2 is gone by now
      std::vector<float> buf(1000, 1.f);
      mp::setStatus("first send to dead rank %d", dead);
      const double t0 = mp::nowSec();
      ncclResult_t res = ncclSend(buf.data(), buf.size(), ncclFloat32, dead, comm, nullptr);
      const double took = mp::nowSec() - t0;
      std::string msg = mp::lastError(comm);
      mp::note("send to dead rank -> %s after %.2f s: %s", ncclGetErrorString(res), took, msg.c_str());
      EXPECT_EQ(res, ncclRemoteError) << msg;
      EXPECT_LT(took, 10.0) << "BRAID_TIMEOUT=40: the dead rank must be recognised, not waited for";
      EXPECT_TRUE(mp::mentionsRank(msg, dead)) << msg;
      sh->done.store(1);
    }
    while (sh->done.load() == 0) usleep(1000);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  expectSurvivorsPassed(r, dead, false);
}

// (c) Abort on a healthy comm returns promptly, also right after traffic.
TEST(Fault, AbortHealthyCommIsPrompt) {
  mp::Options o;
  o.timeoutSec = 40;
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::Case c;
    c.coll = mp::Coll::kAllReduce;
    c.count = 100000;
    EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
    mp::setStatus("ncclCommAbort");
    double t0 = mp::nowSec();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(mp::nowSec() - t0, 2.0) << "ncclCommAbort on a healthy comm";
  });
  mp::expectAllPassed(r);
}

// Rank 1 aborts while rank 0 waits in an all-reduce that rank 1 never joins; rank 1 stays alive. Rank 0
// must get an error (the peer closed its connections, or the timeout), not hang.
TEST(Fault, AbortWhilePeerWaits) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "10"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    std::vector<int32_t> in(100000, 1), out(100000, 0);
    MP_NCCL_ASSERT_COMM(ncclAllReduce(in.data(), out.data(), in.size(), ncclInt32, ncclSum, comm, nullptr), comm);
    if (ctx.rank == 1) {
      usleep(300000);
      double t0 = mp::nowSec();
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      EXPECT_LT(mp::nowSec() - t0, 2.0);
      sleep(3);  // stay alive: the peer must not rely on process death
      return;
    }
    double t0 = mp::nowSec();
    mp::setStatus("all-reduce the peer never joins");
    ncclResult_t res = ncclAllReduce(in.data(), out.data(), in.size(), ncclInt32, ncclSum, comm, nullptr);
    double dt = mp::nowSec() - t0;
    std::string msg = mp::lastError(comm);
    mp::note("waiting rank: %s after %.1f s: %s", ncclGetErrorString(res), dt, msg.c_str());
    EXPECT_NE(res, ncclSuccess);
    EXPECT_LT(dt, 10 + 6.0) << "BRAID_TIMEOUT=10 bounds the wait";
    t0 = mp::nowSec();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(mp::nowSec() - t0, 2.0);
  });
  mp::expectAllPassed(r);
}


// A watchdog thread aborts the communicator while the main thread is blocked inside a host collective that
// the peer never joins: the collective returns an error promptly, the abort returns promptly, and the
// communicator is freed only after the collective has left it (no crash, no hang).
TEST(Fault, AbortFromAnotherThreadWhileCollectiveBlocks) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "30"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    if (ctx.rank == 1) {
      sleep(4);  // never joins the collective; stays alive so only the abort can end rank 0's wait
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      return;
    }
    std::vector<float> in(1 << 20, 1.f), out(1 << 20, 0.f);
    std::atomic<double> abortSec{-1};
    std::thread watchdog([&] {
      usleep(500000);
      double t0 = mp::nowSec();
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      abortSec = mp::nowSec() - t0;
    });
    double t0 = mp::nowSec();
    ncclResult_t res = ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr);
    double dt = mp::nowSec() - t0;
    watchdog.join();
    EXPECT_NE(res, ncclSuccess);
    EXPECT_LT(dt, 3.0) << "the abort must end the blocked collective";
    EXPECT_GE(abortSec.load(), 0.0);
    EXPECT_LT(abortSec.load(), 3.0);
    mp::note("blocked all-reduce returned %s after %.2f s; abort took %.3f s", ncclGetErrorString(res), dt,
             abortSec.load());
  });
  mp::expectAllPassed(r);
}

}  // namespace
