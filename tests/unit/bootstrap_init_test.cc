// Bootstrap failures during init, with ranks as threads of this process: missing ranks at the timeout, a root
// nobody can reach, bad nranks and duplicate ranks, a rank leaving before the table, aborted and retried
// NCCL_COMM_ID inits, NCCL_COMM_ID mode; and authentication: an id from another root, a forged hello, and a
// flood of unauthenticated connections to a rank's listener.
#include "core/bootstrap.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap_internal.h"
#include "core/result.h"
#include "core/socket.h"
#include "bootstrap_test_util.h"

namespace braid {
namespace {

using namespace bootstrap_test;

TEST(BootstrapInit, TimeoutNamesMissingRanks) {
  EnvGuard timeout("BRAID_BOOTSTRAP_TIMEOUT", "2");
  ncclUniqueId id = freshId();
  auto ranks = makeRanks(3);
  ranks.pop_back();  // rank 2 never comes
  auto t0 = Clock::now();
  runRanks(
      ranks, [&](TestRank&) { return id; }, nullptr);
  EXPECT_LT(secondsSince(t0), 8.0);
  for (auto& r : ranks) {
    EXPECT_EQ(r->createRes, ncclRemoteError);
    EXPECT_NE(r->createErr.find("rank 2 of 3 never connected to the root"), std::string::npos) << r->createErr;
    EXPECT_NE(r->createErr.find(sockAddrToString(rootAddrOf(id))), std::string::npos) << r->createErr;
  }
}

TEST(BootstrapInit, UnreachableRootIsRemoteErrorNamingIt) {
  EnvGuard timeout("BRAID_BOOTSTRAP_TIMEOUT", "1");
  std::string commId = "127.0.0.1:" + std::to_string(freePort());
  EnvGuard env("NCCL_COMM_ID", commId.c_str());
  ncclUniqueId id;
  clearPendingError();
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess) << pendingError();
  auto ranks = makeRanks(2);
  ranks.erase(ranks.begin());  // only rank 1: nobody starts the root
  runRanks(
      ranks, [&](TestRank&) { return id; }, nullptr);
  EXPECT_EQ(ranks[0]->createRes, ncclRemoteError);
  EXPECT_NE(ranks[0]->createErr.find("could not reach the root at " + commId), std::string::npos)
      << ranks[0]->createErr;
  EXPECT_LT(ranks[0]->createSec, 5.0);
}

TEST(BootstrapInit, MismatchedNranksAndDuplicateRank) {
  ncclUniqueId id = freshId();
  auto r0 = makeRank(0, 2);
  std::thread t0([&] { createRank(*r0, id); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 0 reaches the root first
  // Says nranks 3: refused with a message, the init goes on.
  auto bad = makeRank(1, 3);
  createRank(*bad, id);
  EXPECT_EQ(bad->createRes, ncclInvalidUsage);
  EXPECT_NE(bad->createErr.find("nranks=3"), std::string::npos) << bad->createErr;
  // A second rank 0: refused.
  auto dup = makeRank(0, 2);
  createRank(*dup, id);
  EXPECT_EQ(dup->createRes, ncclInvalidUsage);
  EXPECT_NE(dup->createErr.find("rank 0 joined twice"), std::string::npos) << dup->createErr;
  // The real rank 1 completes the communicator.
  auto r1 = makeRank(1, 2);
  createRank(*r1, id);
  t0.join();
  EXPECT_EQ(r0->createRes, ncclSuccess) << r0->createErr;
  EXPECT_EQ(r1->createRes, ncclSuccess) << r1->createErr;
  int v = 3;
  EXPECT_EQ(r0->boot->send(1, 1, &v, sizeof(v)), ncclSuccess);
  v = 0;
  EXPECT_EQ(r1->boot->recv(0, 1, &v, sizeof(v)), ncclSuccess);
  EXPECT_EQ(v, 3);
}

TEST(BootstrapInit, RankLeavingBeforeTableIsAwaitedAgain) {
  // A "rank 1" says hello and disconnects; the root forgets it, and the real rank 1 completes the init.
  ncclUniqueId id = freshId();
  UniqueIdData d;
  ASSERT_EQ(bootstrapParseId(id, &d), ncclSuccess);
  {
    Socket root;
    ASSERT_EQ(root.connect(rootAddrOf(id), 5, nullptr), ncclSuccess);
    SockAddr la;
    ASSERT_EQ(parseSockAddr("127.0.0.1:9", &la), ncclSuccess);
    HandHello f = makeHello(d.key, readChallenge(root, kRootFrameMagic), 1, 2, la);
    ASSERT_EQ(root.sendAll(&f, sizeof(f), 5, nullptr, "root"), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto ranks = makeRanks(2);
  runRanks(
      ranks, [&](TestRank&) { return id; }, [](TestRank& r) { EXPECT_EQ(r.boot->barrier(), ncclSuccess); });
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
}

// NCCL_COMM_ID: rank 0's init is aborted while rank 1 has not come; a retry on the same address must get the
// port at once: an aborted init's root that kept the port would answer rank 1 with an error until the bootstrap
// timeout, 15 s here.
TEST(BootstrapInit, CommIdRetryAfterAbortedInit) {
  std::string commId = "127.0.0.1:" + std::to_string(freePort());
  EnvGuard env("NCCL_COMM_ID", commId.c_str());
  EnvGuard job("BRAID_JOB_SECRET", "bootstrap-test-retry");
  EnvGuard timeout("BRAID_BOOTSTRAP_TIMEOUT", "15");
  {
    auto r0 = makeRank(0, 2);
    ncclUniqueId id;
    ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess) << pendingError();
    std::thread t([&] { createRank(*r0, id); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r0->abortFlag.store(1);
    t.join();
    EXPECT_NE(r0->createRes, ncclSuccess) << "rank 1 never came: the aborted init must fail";
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto ranks = makeRanks(2);
  runRanks(
      ranks,
      [](TestRank&) {
        ncclUniqueId id;
        EXPECT_EQ(bootstrapGetUniqueId(&id), ncclSuccess) << pendingError();
        return id;
      },
      [](TestRank& r) { EXPECT_EQ(r.boot->barrier(), ncclSuccess) << pendingError(); });
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 8.0)
      << "the retry waited for the aborted init's root";
}

TEST(BootstrapInit, CommIdMode) {
  std::string commId = "127.0.0.1:" + std::to_string(freePort());
  EnvGuard env("NCCL_COMM_ID", commId.c_str());
  EnvGuard job("BRAID_JOB_SECRET", "bootstrap-test-job");
  // Twice on the same address: the second root must bind after the first has served its init.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto ranks = makeRanks(3);
    runRanks(
        ranks,
        [](TestRank& r) {
          // Every rank derives the id itself, as with NCCL; rank 0 starts late so the others retry.
          ncclUniqueId id;
          EXPECT_EQ(bootstrapGetUniqueId(&id), ncclSuccess) << pendingError();
          if (r.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
          return id;
        },
        [](TestRank& r) {
          std::vector<int> all(r.nranks);
          all[r.rank] = 7 * r.rank;
          EXPECT_EQ(r.boot->allGather(all.data(), sizeof(int)), ncclSuccess) << pendingError();
          for (int p = 0; p < r.nranks; ++p) EXPECT_EQ(all[p], 7 * p);
          EXPECT_EQ(r.boot->barrier(), ncclSuccess);
        });
    for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
  }
  // The id holds the NCCL_COMM_ID address and the key derived with the job secret (so not unauthenticated).
  ncclUniqueId id;
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess);
  UniqueIdData d;
  ASSERT_EQ(bootstrapParseId(id, &d), ncclSuccess);
  uint8_t key[kBootstrapKeyBytes];
  SockAddr commAddr;
  ASSERT_EQ(parseSockAddr(commId.c_str(), &commAddr), ncclSuccess);
  commIdKey(commAddr, "bootstrap-test-job", key);
  EXPECT_EQ(memcmp(d.key, key, sizeof(key)), 0);
  EXPECT_EQ(d.flags & kIdUnauthenticated, 0u);
  EXPECT_EQ(sockAddrToString(rootAddrOf(id)), commId);
  // bootstrapCreateRootId ignores NCCL_COMM_ID.
  ncclUniqueId fresh = freshId();
  EXPECT_NE(sockAddrToString(rootAddrOf(fresh)), commId);
  auto one = makeRanks(1);
  runRanks(
      one, [&](TestRank&) { return fresh; }, nullptr);
  EXPECT_EQ(one[0]->createRes, ncclSuccess) << one[0]->createErr;
}

// A rank holding an id whose key belongs to another root is told so at once (ncclInvalidArgument),
// instead of timing out; the root keeps serving its own ranks.
TEST(BootstrapInit, IdFromAnotherRootIsRejectedAtOnce) {
  ncclUniqueId a = freshId();
  ncclUniqueId b = freshId();
  UniqueIdData da, db;
  ASSERT_EQ(bootstrapParseId(a, &da), ncclSuccess);
  ASSERT_EQ(bootstrapParseId(b, &db), ncclSuccess);
  ncclUniqueId forged = a;  // a's root address, b's key
  UniqueIdData df = da;
  memcpy(df.key, db.key, sizeof(df.key));
  memcpy(forged.internal, &df, sizeof(df));
  auto stray = makeRanks(1, 20);
  runRanks(stray, [&](TestRank&) { return forged; }, nullptr);
  EXPECT_EQ(stray[0]->createRes, ncclInvalidArgument);
  EXPECT_NE(stray[0]->createErr.find("does not belong"), std::string::npos) << stray[0]->createErr;
  EXPECT_LT(stray[0]->createSec, 5.0);
  auto good = makeRanks(2, 20);
  runRanks(good, [&](TestRank&) { return a; }, nullptr);
  for (auto& r : good) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
  auto goodB = makeRanks(1, 20);
  runRanks(goodB, [&](TestRank&) { return b; }, nullptr);
  EXPECT_EQ(goodB[0]->createRes, ncclSuccess) << goodB[0]->createErr;
}

// A job with an id from ncclGetUniqueId and no BRAID_JOB_SECRET: a process that knows only the root's address
// (not the id's random key) says hello as rank 1, presenting the keys it can compute (the one NCCL_COMM_ID
// mode would derive from that address, and zeros). The root refuses it without sending the table, and the
// real rank 1 still joins. Before ids carried a random key proved by a keyed hash, an id made from an
// address without a job secret let such a forger take rank 1's place and read every rank's address and pid.
TEST(BootstrapAuth, ForgedHelloWithoutTheKeyIsRefused) {
  EnvGuard noCommId("NCCL_COMM_ID", nullptr);
  EnvGuard noJob("BRAID_JOB_SECRET", nullptr);
  ncclUniqueId id;
  clearPendingError();
  ASSERT_EQ(bootstrapGetUniqueId(&id), ncclSuccess) << pendingError();
  const std::string rootAddr = sockAddrToString(rootAddrOf(id));

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The forger: only rootAddr from here on. Exit 0: refused every time; 1: got a table; 2: setup failed.
    SockAddr root;
    if (parseSockAddr(rootAddr.c_str(), &root) != ncclSuccess) _exit(2);
    uint8_t guesses[2][kBootstrapKeyBytes] = {};
    commIdKey(root, "", guesses[0]);
    SockAddr la;
    if (parseSockAddr("127.0.0.1:9", &la) != ncclSuccess) _exit(2);
    for (auto& key : guesses) {
      Socket s;
      if (s.connect(root, 5, nullptr) != ncclSuccess) _exit(2);
      AuthChallenge ch{};
      if (s.recvAll(&ch, sizeof(ch), 5, nullptr, "root") != ncclSuccess) continue;  // dropped: refused
      HandHello f = makeHello(key, ch.nonce, 1, 2, la);
      if (s.sendAll(&f, sizeof(f), 5, nullptr, "root") != ncclSuccess) continue;
      RootFrameHeader h{};
      if (s.recvAll(&h, sizeof(h), 5, nullptr, "root") != ncclSuccess) continue;
      if (h.type == kRootTable) _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 2) << "the forger could not reach the root";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a hello without the id's key got the peer table";

  auto ranks = makeRanks(2, 20);
  runRanks(
      ranks, [&](TestRank&) { return id; },
      [](TestRank& r) {
        std::vector<int> all(r.nranks);
        all[r.rank] = 10 + r.rank;
        EXPECT_EQ(r.boot->allGather(all.data(), sizeof(int)), ncclSuccess) << pendingError();
        for (int p = 0; p < r.nranks; ++p) EXPECT_EQ(all[p], 10 + p);
      });
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
}

// A flood of idle connections to a rank's listener: beyond kMaxUnauthConns they are closed at once, the
// rest after kAuthDeadlineSec, and the rank's peers still reach it.
TEST(BootstrapAuth, RankListenerCapsUnauthenticatedConnections) {
  ncclUniqueId id = freshId();
  auto ranks = makeRanks(2, 20);
  runRanks(
      ranks, [&](TestRank&) { return id; }, nullptr);
  for (auto& r : ranks) ASSERT_EQ(r->createRes, ncclSuccess) << r->createErr;
  std::vector<Socket> held(300);
  SockAddr target;
  // The table is private to Bootstrap; find a listener the way a flood would: scan the descriptors.
  bool found = false;
  for (int fd = 0; fd < 4096 && !found; ++fd) {
    int acc = 0;
    socklen_t l = sizeof(acc);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l) != 0 || !acc) continue;
    socklen_t len = sizeof(target);
    if (getsockname(fd, &target.sa, &len) == 0 && (target.sa.sa_family == AF_INET || target.sa.sa_family == AF_INET6))
      found = true;
  }
  ASSERT_TRUE(found);
  size_t challenged = 0, closedAtOnce = 0;
  for (auto& s : held) {
    ASSERT_EQ(s.connect(target, 5, nullptr), ncclSuccess) << pendingError();
    AuthChallenge ch{};
    if (s.recvAll(&ch, sizeof(ch), 5, nullptr, "listener") == ncclSuccess)
      ++challenged;
    else
      ++closedAtOnce;
    clearPendingError();
  }
  // Every listener in this process (several ranks' and maybe a root) caps at kMaxUnauthConns.
  EXPECT_LE(challenged, kMaxUnauthConns);
  EXPECT_GE(closedAtOnce, held.size() - kMaxUnauthConns);
  // The ranks still talk, while the flood is held open.
  std::vector<std::thread> ts;
  for (auto& r : ranks) {
    TestRank* p = r.get();
    ts.emplace_back([p] { EXPECT_EQ(p->boot->barrier(), ncclSuccess) << pendingError(); });
  }
  for (auto& t : ts) t.join();
  // After the deadline the held connections are closed by the listener.
  std::this_thread::sleep_for(std::chrono::duration<double>(kAuthDeadlineSec + 0.5));
  size_t stillOpen = 0;
  for (auto& s : held) {
    char c;
    if (::recv(s.fd(), &c, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) ++stillOpen;
  }
  EXPECT_EQ(stillOpen, 0u);
}

}  // namespace
}  // namespace braid
