// Bootstrap: unique ids and wire framing, then ranks as threads of this process: create, tagged send/recv
// out of order, allGather/barrier/broadcast for 1..5 ranks, several comms at once, a bogus connection to
// the root during an init, missing ranks at the timeout, a root nobody can reach, bad nranks/duplicate
// ranks, abort of a pending recv, a peer whose connection drops, and NCCL_COMM_ID mode.
#include "core/bootstrap.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/env_guard.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap_internal.h"
#include "core/log.h"
#include "core/result.h"
#include "core/socket.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using braid_test::EnvGuard;

// One rank as a thread: what a communicator would hold for its bootstrap.
struct TestRank {
  int rank = -1;
  int nranks = 0;
  std::atomic<uint32_t> abortFlag{0};
  PeerInfo self{};
  WaitContext ctx;
  std::unique_ptr<Bootstrap> boot;
  ncclResult_t createRes = ncclInternalError;
  std::string createErr;
  double createSec = 0;
};

std::unique_ptr<TestRank> makeRank(int rank, int nranks, double timeoutSec = 30) {
  auto r = std::make_unique<TestRank>();
  r->rank = rank;
  r->nranks = nranks;
  fillLocalPeerInfo(&r->self);
  r->self.rank = rank;
  r->self.cudaDev = -1;
  r->self.busId = -1;
  r->self.isHost = 1;
  r->ctx.abortFlag = &r->abortFlag;
  r->ctx.timeoutSec = timeoutSec;
  r->ctx.self = &r->self;
  r->ctx.commName = "bootstrap_test";
  return r;
}

void createRank(TestRank& r, const ncclUniqueId& id) {
  clearPendingError();
  auto t0 = Clock::now();
  r.createRes = Bootstrap::create(id, r.rank, r.nranks, r.self, &r.ctx, &r.boot);
  r.createSec = secondsSince(t0);
  r.createErr = pendingError();
  if (r.createRes == ncclSuccess) r.ctx.peers = &r.boot->peers();
}

// Creates `ranks` concurrently (one thread each), then runs `body` on each in its thread.
void runRanks(std::vector<std::unique_ptr<TestRank>>& ranks, std::function<ncclUniqueId(TestRank&)> idFor,
              std::function<void(TestRank&)> body) {
  std::vector<std::thread> threads;
  for (auto& r : ranks) {
    TestRank* p = r.get();
    threads.emplace_back([p, &idFor, &body] {
      createRank(*p, idFor(*p));
      if (p->createRes == ncclSuccess && body) body(*p);
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<std::unique_ptr<TestRank>> makeRanks(int n, double timeoutSec = 30) {
  std::vector<std::unique_ptr<TestRank>> v;
  for (int r = 0; r < n; ++r) v.push_back(makeRank(r, n, timeoutSec));
  return v;
}

ncclUniqueId freshId() {
  ncclUniqueId id;
  clearPendingError();
  EXPECT_EQ(bootstrapCreateRootId(&id), ncclSuccess) << pendingError();
  return id;
}

SockAddr rootAddrOf(const ncclUniqueId& id) {
  UniqueIdData d;
  EXPECT_EQ(bootstrapParseId(id, &d), ncclSuccess);
  WireAddr w;
  memset(&w, 0, sizeof(w));
  memcpy(w.bytes, d.addr, sizeof(w.bytes));
  w.len = d.addrLen;
  SockAddr a;
  EXPECT_TRUE(fromWireAddr(w, &a));
  return a;
}

uint16_t freePort() {
  Socket s;
  SockAddr a;
  memset(&a, 0, sizeof(a));
  a.sin.sin_family = AF_INET;
  a.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(s.listen(&a), ncclSuccess);
  return ntohs(a.sin.sin_port);
}

// The client side of the root protocol, for tests that speak it by hand: reads the root's challenge and
// sends a hello as `rank` of `nranks`, proved with `key` (the id's, or a wrong one).
struct HandHello {
  RootFrameHeader hdr;
  HelloPayload hello;
};
HandHello makeHello(const uint8_t* key, uint64_t rootNonce, int rank, int nranks, const SockAddr& listen) {
  HandHello f;
  memset(&f, 0, sizeof(f));
  f.hdr = RootFrameHeader{kRootFrameMagic, 0, kRootHello, rank, sizeof(HelloPayload)};
  f.hello.nranks = nranks;
  f.hello.nonce = bootstrapNonce();
  f.hello.listenAddr = toWireAddr(listen);
  fillLocalPeerInfo(&f.hello.info);
  f.hello.info.rank = rank;
  f.hdr.mac = rootFrameMac(key, kAuthRootHello, rootNonce, f.hello.nonce, f.hdr, &f.hello, sizeof(f.hello));
  return f;
}
uint64_t readChallenge(Socket& s, uint64_t magic) {
  AuthChallenge ch{};
  EXPECT_EQ(s.recvAll(&ch, sizeof(ch), 5, nullptr, "challenge"), ncclSuccess) << pendingError();
  EXPECT_EQ(ch.magic, magic);
  return ch.nonce;
}

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

// ---- failures during init ----

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
// port at once. Before, the aborted init's root kept the port (and would have answered rank 1 with an error)
// until the bootstrap timeout, 15 s here.
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

}  // namespace
}  // namespace braid

namespace braid {
namespace {
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
