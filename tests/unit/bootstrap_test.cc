// Bootstrap: unique ids and wire framing, then ranks as threads of this process: create, tagged send/recv
// out of order, allGather/barrier/broadcast for 1..5 ranks, several comms at once, bogus connections to the
// root or to a rank's listener during an init, abort of a pending recv, and a peer whose connection drops.
// Failures during init and the authentication of hellos are bootstrap_init_test.cc's.
#include "core/bootstrap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap_internal.h"
#include "core/log.h"
#include "core/result.h"
#include "core/socket.h"
#include "bootstrap_test_util.h"

namespace braid {
namespace {

using namespace bootstrap_test;

// ---- ids and framing ----

TEST(BootstrapId, RoundTripAndMagic) {
  ncclUniqueId id = freshId();
  UniqueIdData d;
  ASSERT_EQ(bootstrapParseId(id, &d), ncclSuccess);
  EXPECT_EQ(d.magic, kUniqueIdMagic);
  const uint8_t zeroKey[kBootstrapKeyBytes] = {};
  EXPECT_NE(memcmp(d.key, zeroKey, sizeof(zeroKey)), 0);
  EXPECT_EQ(d.flags, 0u);
  SockAddr a = rootAddrOf(id);
  EXPECT_NE(a.sa.sa_family == AF_INET ? a.sin.sin_port : a.sin6.sin6_port, 0);
  // Two ids: different keys, different roots.
  ncclUniqueId id2 = freshId();
  UniqueIdData d2;
  ASSERT_EQ(bootstrapParseId(id2, &d2), ncclSuccess);
  EXPECT_NE(memcmp(d.key, d2.key, sizeof(d.key)), 0);
  EXPECT_NE(bootstrapCommHash(d), bootstrapCommHash(d2));

  ncclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  clearPendingError();
  EXPECT_EQ(bootstrapParseId(zero, &d), ncclInvalidArgument);
  EXPECT_NE(pendingError().find("magic"), std::string::npos) << pendingError();
  ncclUniqueId junk = id;
  junk.internal[0] ^= 0x5a;
  clearPendingError();
  EXPECT_EQ(bootstrapParseId(junk, &d), ncclInvalidArgument);
  // Good magic, bad address length.
  ncclUniqueId badAddr = id;
  UniqueIdData bd;
  memcpy(&bd, badAddr.internal, sizeof(bd));
  bd.addrLen = 3;
  memcpy(badAddr.internal, &bd, sizeof(bd));
  clearPendingError();
  EXPECT_EQ(bootstrapParseId(badAddr, &d), ncclInvalidArgument);
  clearPendingError();

  // Create refuses a bad id and bad rank/nranks before touching the network.
  auto r = makeRank(0, 1);
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::create(zero, 0, 1, r->self, &r->ctx, &b), ncclInvalidArgument);
  clearPendingError();
  EXPECT_EQ(Bootstrap::create(id, 2, 2, r->self, &r->ctx, &b), ncclInvalidArgument);
  clearPendingError();
  EXPECT_EQ(Bootstrap::create(id, 0, 0, r->self, &r->ctx, &b), ncclInvalidArgument);
  clearPendingError();
  // Serve the roots so their threads exit now instead of at the timeout.
  for (const ncclUniqueId* i : {&id, &id2}) {
    auto one = makeRanks(1);
    runRanks(
        one, [i](TestRank&) { return *i; }, nullptr);
    EXPECT_EQ(one[0]->createRes, ncclSuccess) << one[0]->createErr;
  }
}

TEST(BootstrapId, WireFormat) {
  SockAddr a4, a6, back;
  ASSERT_EQ(parseSockAddr("10.1.2.3:4242", &a4), ncclSuccess);
  ASSERT_EQ(parseSockAddr("[2001:db8::7]:99", &a6), ncclSuccess);
  for (const SockAddr* a : {&a4, &a6}) {
    WireAddr w = toWireAddr(*a);
    ASSERT_TRUE(fromWireAddr(w, &back));
    EXPECT_TRUE(sameSockAddr(*a, back));
    EXPECT_EQ(sockAddrToString(*a), sockAddrToString(back));
  }
  WireAddr bad;
  memset(&bad, 0, sizeof(bad));
  EXPECT_FALSE(fromWireAddr(bad, &back));
  bad.len = 200;
  EXPECT_FALSE(fromWireAddr(bad, &back));
  EXPECT_FALSE(sameSockAddr(a4, a6));

  // NCCL_COMM_ID keys: deterministic, different per job secret and per address, the same for two spellings
  // of one address.
  auto key = [](const char* commId, const char* job) {
    std::string k(kBootstrapKeyBytes, '\0');
    SockAddr a;
    EXPECT_EQ(parseSockAddr(commId, &a), ncclSuccess) << commId;
    commIdKey(a, job, reinterpret_cast<uint8_t*>(&k[0]));
    return k;
  };
  EXPECT_EQ(key("127.0.0.1:5000", "job"), key("127.0.0.1:5000", "job"));
  EXPECT_NE(key("127.0.0.1:5000", "job"), key("127.0.0.1:5000", "job2"));
  EXPECT_NE(key("127.0.0.1:5000", ""), key("127.0.0.1:5001", ""));
  EXPECT_NE(key("127.0.0.1:5000", ""), std::string(kBootstrapKeyBytes, '\0'));
  EXPECT_EQ(key("[::1]:5000", "job"), key("[0:0:0:0:0:0:0:1]:5000", "job"));
  // A proof depends on its purpose and on both nonces.
  uint8_t k16[kBootstrapKeyBytes];
  for (int i = 0; i < 16; ++i) k16[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(bootstrapMac(k16, kAuthPeerHello, 1, 2, "x", 1), bootstrapMac(k16, kAuthPeerHello, 1, 2, "x", 1));
  EXPECT_NE(bootstrapMac(k16, kAuthPeerHello, 1, 2, "x", 1), bootstrapMac(k16, kAuthPeerAck, 1, 2, "x", 1));
  EXPECT_NE(bootstrapMac(k16, kAuthPeerHello, 1, 2, "x", 1), bootstrapMac(k16, kAuthPeerHello, 1, 3, "x", 1));

  EXPECT_EQ(sizeof(UniqueIdData) <= NCCL_UNIQUE_ID_BYTES, true);
  EXPECT_EQ(sizeof(RootFrameHeader), 32u);
  EXPECT_EQ(sizeof(MsgHeader), 16u);
}

// ---- messaging ----

void exerciseRank(TestRank& r) {
  Bootstrap& b = *r.boot;
  const int n = b.nranks(), me = b.rank();
  EXPECT_EQ(me, r.rank);
  ASSERT_EQ(static_cast<int>(b.peers().size()), n);
  for (int p = 0; p < n; ++p) {
    EXPECT_EQ(b.peers()[p].rank, p);
    EXPECT_EQ(b.peers()[p].pid, r.self.pid);
  }
  // Tags 1..3 to every peer (self included), received in the order 3, 1, 2; plus two messages on one
  // tag that must arrive in order.
  for (int p = 0; p < n; ++p) {
    for (int tag = 1; tag <= 3; ++tag) {
      int v = me * 10000 + p * 100 + tag;
      ASSERT_EQ(b.send(p, tag, &v, sizeof(v)), ncclSuccess) << pendingError();
    }
    for (int k = 0; k < 2; ++k) {
      int v = 1000000 + k;
      ASSERT_EQ(b.send(p, 7, &v, sizeof(v)), ncclSuccess) << pendingError();
    }
  }
  for (int p = n - 1; p >= 0; --p) {
    for (int tag : {3, 1, 2}) {
      int v = -1;
      ASSERT_EQ(b.recv(p, tag, &v, sizeof(v)), ncclSuccess) << pendingError();
      EXPECT_EQ(v, p * 10000 + me * 100 + tag);
    }
    for (int k = 0; k < 2; ++k) {
      int v = -1;
      ASSERT_EQ(b.recv(p, 7, &v, sizeof(v)), ncclSuccess) << pendingError();
      EXPECT_EQ(v, 1000000 + k);
    }
  }
  // A large message and an empty one around the ring.
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<uint64_t> big(300000), got(big.size());
  for (size_t i = 0; i < big.size(); ++i) big[i] = me * 1000003ull + i;
  ASSERT_EQ(b.send(next, 9, big.data(), big.size() * 8), ncclSuccess) << pendingError();
  ASSERT_EQ(b.send(next, 10, nullptr, 0), ncclSuccess) << pendingError();
  ASSERT_EQ(b.recv(prev, 10, nullptr, 0), ncclSuccess) << pendingError();
  ASSERT_EQ(b.recv(prev, 9, got.data(), got.size() * 8), ncclSuccess) << pendingError();
  for (size_t i = 0; i < got.size(); i += 9973) EXPECT_EQ(got[i], prev * 1000003ull + i);

  // allGather twice (the second checks queues stay in step), barrier, broadcast from every root.
  for (int round = 0; round < 2; ++round) {
    std::vector<int64_t> slots(n * 3, -1);
    for (int k = 0; k < 3; ++k) slots[me * 3 + k] = round * 1000 + me * 10 + k;
    ASSERT_EQ(b.allGather(slots.data(), 3 * sizeof(int64_t)), ncclSuccess) << pendingError();
    for (int p = 0; p < n; ++p)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(slots[p * 3 + k], round * 1000 + p * 10 + k);
  }
  ASSERT_EQ(b.barrier(), ncclSuccess) << pendingError();
  for (int root = 0; root < n; ++root) {
    char buf[100];
    memset(buf, me == root ? 'a' + root : 0, sizeof(buf));
    ASSERT_EQ(b.broadcast(buf, sizeof(buf), root), ncclSuccess) << pendingError();
    for (char c : buf) ASSERT_EQ(c, 'a' + root);
  }
  ASSERT_EQ(b.barrier(), ncclSuccess) << pendingError();

  // Wrong size: an error naming both sizes.
  int v = 5;
  ASSERT_EQ(b.send(next, 11, &v, sizeof(v)), ncclSuccess);
  int64_t wide;
  clearPendingError();
  EXPECT_EQ(b.recv(prev, 11, &wide, sizeof(wide)), ncclInternalError);
  EXPECT_NE(pendingError().find("4 bytes"), std::string::npos) << pendingError();
  EXPECT_NE(pendingError().find("expected 8"), std::string::npos) << pendingError();
  clearPendingError();
  EXPECT_EQ(b.send(n, 1, &v, sizeof(v)), ncclInvalidArgument);
  clearPendingError();
  // Everyone is done receiving before anyone closes.
  ASSERT_EQ(b.barrier(), ncclSuccess) << pendingError();
  b.close();
  b.close();
  EXPECT_EQ(b.send(next, 1, &v, sizeof(v)), ncclInvalidUsage);
  clearPendingError();
}

TEST(BootstrapComm, RanksOneToFive) {
  for (int n = 1; n <= 5; ++n) {
    SCOPED_TRACE("nranks " + std::to_string(n));
    ncclUniqueId id = freshId();
    auto ranks = makeRanks(n);
    runRanks(
        ranks, [&](TestRank&) { return id; }, exerciseRank);
    for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << "rank " << r->rank << ": " << r->createErr;
  }
}

TEST(BootstrapComm, SeveralCommsAtOnce) {
  // Two communicators of 3 ranks, all six ranks in flight together; one more is created by ncclGetUniqueId.
  ncclUniqueId a = freshId(), b;
  clearPendingError();
  ASSERT_EQ(bootstrapGetUniqueId(&b), ncclSuccess) << pendingError();
  std::vector<std::unique_ptr<TestRank>> ranks;
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < 3; ++r) ranks.push_back(makeRank(r, 3));
  runRanks(
      ranks, [&](TestRank& r) { return ranks[0].get() == &r || ranks[1].get() == &r || ranks[2].get() == &r ? a : b; },
      exerciseRank);
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
}

TEST(BootstrapComm, BogusConnectionsToRootDoNotDisturbInit) {
  ncclUniqueId id = freshId();
  UniqueIdData d;
  ASSERT_EQ(bootstrapParseId(id, &d), ncclSuccess);
  SockAddr root = rootAddrOf(id);
  // A wrong key, a bad magic, garbage, and a connection that never says anything.
  Socket wrongSecret, badMagic, garbage, silent;
  ASSERT_EQ(wrongSecret.connect(root, 5, nullptr), ncclSuccess);
  ASSERT_EQ(badMagic.connect(root, 5, nullptr), ncclSuccess);
  ASSERT_EQ(garbage.connect(root, 5, nullptr), ncclSuccess);
  ASSERT_EQ(silent.connect(root, 5, nullptr), ncclSuccess);
  uint8_t wrongKey[kBootstrapKeyBytes];
  memcpy(wrongKey, d.key, sizeof(wrongKey));
  wrongKey[0] ^= 1;
  SockAddr nowhere;
  ASSERT_EQ(parseSockAddr("127.0.0.1:9", &nowhere), ncclSuccess);
  HandHello f = makeHello(wrongKey, readChallenge(wrongSecret, kRootFrameMagic), 0, 3, nowhere);
  ASSERT_EQ(wrongSecret.sendAll(&f, sizeof(f), 5, nullptr, "root"), ncclSuccess);
  RootFrameHeader h = f.hdr;
  h.magic ^= 1;
  readChallenge(badMagic, kRootFrameMagic);
  ASSERT_EQ(badMagic.sendAll(&h, sizeof(h), 5, nullptr, "root"), ncclSuccess);
  char junk[7] = "abcdef";
  ASSERT_EQ(garbage.sendAll(junk, sizeof(junk), 5, nullptr, "root"), ncclSuccess);

  auto ranks = makeRanks(3);
  runRanks(
      ranks, [&](TestRank&) { return id; },
      [](TestRank& r) {
        std::vector<int> all(r.nranks);
        all[r.rank] = r.rank + 1;
        EXPECT_EQ(r.boot->allGather(all.data(), sizeof(int)), ncclSuccess) << pendingError();
        for (int p = 0; p < r.nranks; ++p) EXPECT_EQ(all[p], p + 1);
        EXPECT_EQ(r.boot->barrier(), ncclSuccess);
      });
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
  // The wrong-key hello got an error frame without a proof (never the table), then EOF; the bad magic
  // only EOF.
  char c;
  clearPendingError();
  RootFrameHeader reply{};
  ASSERT_EQ(wrongSecret.recvAll(&reply, sizeof(reply), 5, nullptr, "root"), ncclSuccess);
  EXPECT_EQ(reply.type, kRootError);
  EXPECT_EQ(reply.mac, 0u);
  std::vector<char> rest(reply.size);
  ASSERT_EQ(wrongSecret.recvAll(rest.data(), rest.size(), 5, nullptr, "root"), ncclSuccess);
  EXPECT_EQ(wrongSecret.recvAll(&c, 1, 5, nullptr, "root"), ncclRemoteError);
  clearPendingError();
  EXPECT_EQ(badMagic.recvAll(&c, 1, 5, nullptr, "root"), ncclRemoteError);
  clearPendingError();
}

// A flood of bad connections to the root: every one is dropped, and the log gets a few lines (the first ones,
// then at most one a second saying how many were held back), not one per connection.
TEST(BootstrapComm, FloodOfBadConnectionsLogsAFewLines) {
  char path[] = "/tmp/braid_flood_log_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  int lines = 0;
  {
    braid_test::EnvGuard debug("NCCL_DEBUG", "WARN"), file("NCCL_DEBUG_FILE", path);
    resetLogging();
    ncclUniqueId id = freshId();
    SockAddr root = rootAddrOf(id);
    constexpr int kFlood = 300;
    for (int i = 0; i < kFlood; ++i) {
      Socket s;
      ASSERT_EQ(s.connect(root, 5, nullptr), ncclSuccess);
      readChallenge(s, kRootFrameMagic);
      RootFrameHeader h{};
      h.magic = kRootFrameMagic ^ 1;
      ASSERT_EQ(s.sendAll(&h, sizeof(h), 5, nullptr, "root"), ncclSuccess);
      char c;
      EXPECT_EQ(s.recvAll(&c, 1, 5, nullptr, "root"), ncclRemoteError);  // dropped
      clearPendingError();
    }
    auto ranks = makeRanks(2);
    runRanks(ranks, [&](TestRank&) { return id; }, [](TestRank& r) { EXPECT_EQ(r.boot->barrier(), ncclSuccess); });
    for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
  }
  resetLogging();
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) lines += line.find("bootstrap root") != std::string::npos;
  unlink(path);
  EXPECT_GE(lines, 1) << "the drops are still reported";
  EXPECT_LE(lines, DropWarnings::kBurst + 3) << "one flood, " << lines << " warning lines";
}

TEST(BootstrapComm, BogusConnectionToRankListenerIsDropped) {
  // The rank listeners' addresses travel only in the table; a test can learn them by joining as a fake
  // rank 1 of 2 through the root protocol.
  ncclUniqueId id = freshId();
  UniqueIdData d;
  ASSERT_EQ(bootstrapParseId(id, &d), ncclSuccess);
  auto r0 = makeRank(0, 2);
  std::thread t([&] { createRank(*r0, id); });
  Socket root;
  ASSERT_EQ(root.connect(rootAddrOf(id), 5, nullptr), ncclSuccess);
  Socket fakeListener;
  SockAddr la;
  ASSERT_EQ(parseSockAddr("127.0.0.1:0", &la), ncclSuccess);
  ASSERT_EQ(fakeListener.listen(&la), ncclSuccess);
  HandHello f = makeHello(d.key, readChallenge(root, kRootFrameMagic), 1, 2, la);
  ASSERT_EQ(root.sendAll(&f, sizeof(f), 5, nullptr, "root"), ncclSuccess);
  RootFrameHeader h;
  ASSERT_EQ(root.recvAll(&h, sizeof(h), 10, nullptr, "root"), ncclSuccess);
  ASSERT_EQ(h.type, kRootTable);
  std::vector<TableEntry> table(2);
  ASSERT_EQ(root.recvAll(table.data(), sizeof(TableEntry) * 2, 5, nullptr, "root"), ncclSuccess);
  t.join();
  ASSERT_EQ(r0->createRes, ncclSuccess) << r0->createErr;
  SockAddr rank0Addr;
  ASSERT_TRUE(fromWireAddr(table[0].listenAddr, &rank0Addr));

  // No proof of the key: dropped (EOF, no acknowledgement), and rank 0 does not take it as rank 1 going away.
  Socket bogus;
  ASSERT_EQ(bogus.connect(rank0Addr, 5, nullptr), ncclSuccess);
  uint64_t nonce = readChallenge(bogus, kPeerFrameMagic);
  PeerPreamble pre{kPeerFrameMagic, 0, 1, 0, 77};
  pre.mac = peerHelloMac(d.key, nonce, pre) + 1;
  ASSERT_EQ(bogus.sendAll(&pre, sizeof(pre), 5, nullptr, "rank 0"), ncclSuccess);
  char c;
  clearPendingError();
  EXPECT_EQ(bogus.recvAll(&c, 1, 5, nullptr, "rank 0"), ncclRemoteError);
  clearPendingError();
  // The right proof as rank 1: rank 0 proves itself back, and a message goes through.
  Socket good;
  ASSERT_EQ(good.connect(rank0Addr, 5, nullptr), ncclSuccess);
  nonce = readChallenge(good, kPeerFrameMagic);
  pre.mac = peerHelloMac(d.key, nonce, pre);
  int v = 42;
  MsgHeader mh{1, 5, sizeof(v)};
  ASSERT_EQ(good.sendAll(&pre, sizeof(pre), 5, nullptr, "rank 0"), ncclSuccess);
  PeerAck ack{};
  ASSERT_EQ(good.recvAll(&ack, sizeof(ack), 5, nullptr, "rank 0"), ncclSuccess);
  EXPECT_EQ(ack.mac, peerAckMac(d.key, nonce, pre));
  ASSERT_EQ(good.sendAll(&mh, sizeof(mh), 5, nullptr, "rank 0"), ncclSuccess);
  ASSERT_EQ(good.sendAll(&v, sizeof(v), 5, nullptr, "rank 0"), ncclSuccess);
  int got = 0;
  ASSERT_EQ(r0->boot->recv(1, 5, &got, sizeof(got)), ncclSuccess) << pendingError();
  EXPECT_EQ(got, 42);
  // Now rank 1's connection drops while rank 0 waits for more: prompt ncclRemoteError naming rank 1.
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    good.close();
  });
  clearPendingError();
  auto t0 = Clock::now();
  EXPECT_EQ(r0->boot->recv(1, 6, &got, sizeof(got)), ncclRemoteError);
  EXPECT_LT(secondsSince(t0), 3.0);
  EXPECT_NE(pendingError().find("rank 1"), std::string::npos) << pendingError();
  clearPendingError();
  closer.join();
}

TEST(BootstrapComm, AbortEndsPendingRecv) {
  ncclUniqueId id = freshId();
  auto ranks = makeRanks(2);
  runRanks(
      ranks, [&](TestRank&) { return id; },
      [](TestRank& r) {
        if (r.rank == 0) {
          std::thread aborter([&r] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            r.abortFlag.store(1);
          });
          int v;
          auto t0 = Clock::now();
          clearPendingError();
          EXPECT_NE(r.boot->recv(1, 123, &v, sizeof(v)), ncclSuccess);
          EXPECT_LT(secondsSince(t0), 2.0);
          EXPECT_NE(pendingError().find("abort"), std::string::npos) << pendingError();
          aborter.join();
        }
      });
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
}

TEST(BootstrapComm, CloseEndsPendingRecvAndPeerCloseIsNoticed) {
  ncclUniqueId id = freshId();
  auto ranks = makeRanks(2);
  runRanks(
      ranks, [&](TestRank&) { return id; },
      [](TestRank& r) {
        int v = 1;
        if (r.rank == 1) {
          // Connect, then go away: rank 0 must not wait for its timeout.
          EXPECT_EQ(r.boot->send(0, 1, &v, sizeof(v)), ncclSuccess);
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          r.boot->close();
          return;
        }
        EXPECT_EQ(r.boot->recv(1, 1, &v, sizeof(v)), ncclSuccess);
        auto t0 = Clock::now();
        clearPendingError();
        EXPECT_EQ(r.boot->recv(1, 2, &v, sizeof(v)), ncclRemoteError);
        EXPECT_LT(secondsSince(t0), 3.0);
        EXPECT_NE(pendingError().find("rank 1"), std::string::npos) << pendingError();
        clearPendingError();
      });
  for (auto& r : ranks) EXPECT_EQ(r->createRes, ncclSuccess) << r->createErr;
}

}  // namespace
}  // namespace braid
