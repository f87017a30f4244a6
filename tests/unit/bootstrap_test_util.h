// Helpers for the bootstrap tests: ranks as threads of this process (what a communicator would hold for its
// bootstrap), created concurrently from one id; fresh ids and their root address; and the client side of the
// root protocol for tests that speak it by hand.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/env_guard.h"
#include "core/bootstrap.h"
#include "core/bootstrap_internal.h"
#include "core/result.h"
#include "core/socket.h"

namespace braid {
namespace bootstrap_test {

using Clock = std::chrono::steady_clock;
inline double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

inline std::unique_ptr<TestRank> makeRank(int rank, int nranks, double timeoutSec = 30) {
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

inline void createRank(TestRank& r, const ncclUniqueId& id) {
  clearPendingError();
  auto t0 = Clock::now();
  r.createRes = Bootstrap::create(id, r.rank, r.nranks, r.self, &r.ctx, &r.boot);
  r.createSec = secondsSince(t0);
  r.createErr = pendingError();
  if (r.createRes == ncclSuccess) r.ctx.peers = &r.boot->peers();
}

// Creates `ranks` concurrently (one thread each), then runs `body` on each in its thread.
inline void runRanks(std::vector<std::unique_ptr<TestRank>>& ranks, std::function<ncclUniqueId(TestRank&)> idFor,
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

inline std::vector<std::unique_ptr<TestRank>> makeRanks(int n, double timeoutSec = 30) {
  std::vector<std::unique_ptr<TestRank>> v;
  for (int r = 0; r < n; ++r) v.push_back(makeRank(r, n, timeoutSec));
  return v;
}

inline ncclUniqueId freshId() {
  ncclUniqueId id;
  clearPendingError();
  EXPECT_EQ(bootstrapCreateRootId(&id), ncclSuccess) << pendingError();
  return id;
}

inline SockAddr rootAddrOf(const ncclUniqueId& id) {
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

inline uint16_t freePort() {
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
inline HandHello makeHello(const uint8_t* key, uint64_t rootNonce, int rank, int nranks, const SockAddr& listen) {
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
inline uint64_t readChallenge(Socket& s, uint64_t magic) {
  AuthChallenge ch{};
  EXPECT_EQ(s.recvAll(&ch, sizeof(ch), 5, nullptr, "challenge"), ncclSuccess) << pendingError();
  EXPECT_EQ(ch.magic, magic);
  return ch.nonce;
}

}  // namespace bootstrap_test
}  // namespace braid
