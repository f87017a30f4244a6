// Two-way socket connections (BRAID_NET_SOCKET_TWO_WAY): where a rank has connections to a peer on one tag in both
// directions, they share one TCP connection, whichever way round and in whichever order they were made, with every
// byte checked both ways at once (point-to-point connections only over a connection made earlier); at 1 only host
// communicators' (executor-driven) engines share, at 0 (the default) none does; an engine drives both directions of
// one connection on one thread, also over several sockets with bulk helpers; the accepting side follows whatever its
// own setting; a peer that goes away fails both directions.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "core/result.h"
#include "transport/net/proxy_affinity.h"
#include "transport/conn_failure.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_proxy.h"
#include "transport_test_util.h"

namespace braid {
namespace {

using testutil::connectPair;
using testutil::EnvVar;
using testutil::TestRank;

// This process's open sockets (both ends of a loopback connection count).
int openSockets() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[64] = {};
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 && std::strncmp(target, "socket:", 7) == 0) ++n;
    }
    closedir(d);
  }
  return n;
}

// Steps on two connections at once (s1 to r1 and s2 to r2), every byte checked: "" or what went wrong.
std::string pumpBoth(const ConnInfo& s1, const ConnInfo& r1, const ConnInfo& s2, const ConnInfo& r2, uint32_t seed,
                     uint64_t steps) {
  std::string second;
  std::thread t([&] { second = testutil::pump(s2, r2, seed + 1, steps); });
  const std::string first = testutil::pump(s1, r1, seed, steps);
  t.join();
  return first.empty() ? second : "first connection: " + first;
}

// Rank 0's connections to and from rank 1: `first` connects first (0: rank 0's send, 1: rank 1's), each direction
// on its tag; `made` is how many sockets that opened.
struct BothWays {
  TestRank a{0}, b{1};
  Connector abS, abR, baS, baR;
  int made = 0;

  explicit BothWays(int first = 0, int abTag = 0, int baTag = 0, bool host = false, int threads = 1) {
    a.ctx.proxyExecutorDriven = b.ctx.proxyExecutorDriven = host;
    a.ctx.proxyThreads = b.ctx.proxyThreads = threads;
    const int before = openSockets();
    for (int i = 0; i < 2; ++i) {
      if ((i == 0) == (first == 0)) {
        connectPair(netTransport(), a, b, abTag, 64 << 10, &abS, &abR);
      } else {
        connectPair(netTransport(), b, a, baTag, 64 << 10, &baS, &baR);
      }
    }
    made = openSockets() - before;
  }

  // Steps both ways at once, every byte checked: "" or what went wrong.
  std::string pump() { return pumpBoth(abS.info, abR.info, baS.info, baR.info, 70, 300); }
};

// Rank 0 connects to rank 1 first, then rank 1 to rank 0: rank 1 sends over its receive connection.
TEST(NetTwoWay, TheSecondDirectionRidesTheFirstConnection) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  BothWays c(0, 3, 3);
  EXPECT_EQ(c.made, 2) << "one connection: one socket at each end";
  EXPECT_EQ(c.pump(), "");
}

// The other order: the lower rank sends over the connection the higher one made.
TEST(NetTwoWay, TheLowerRankAnswersOverTheHigherOnesConnection) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  BothWays c(1);
  EXPECT_EQ(c.made, 2);
  EXPECT_EQ(c.pump(), "");
}

// Both directions in one batch on `tag`, each rank on its own thread in ConnectionManager's order (set up, exchange
// handles, connect the sends, then accept), then steps both ways at once: the sockets that opened, and *err.
int batchBothWays(int tag, std::string* err) {
  TestRank r0(0), r1(1);
  TestRank* ranks[2] = {&r0, &r1};
  Connector send[2], recv[2];  // rank i's send to and receive from the other
  std::promise<ConnectHandle> sendHandle[2], recvHandle[2];
  const int before = openSockets();
  auto side = [&](int me) {
    const int peer = 1 - me;
    send[me].ctx = recv[me].ctx = &ranks[me]->ctx;
    ConnectHandle hs, hr;
    ASSERT_EQ(netTransport()->setup(Direction::Recv, ranks[me]->info, ranks[peer]->info, tag, 64 << 10, &recv[me], &hr),
              ncclSuccess)
        << pendingError();
    ASSERT_EQ(netTransport()->setup(Direction::Send, ranks[me]->info, ranks[peer]->info, tag, 64 << 10, &send[me], &hs),
              ncclSuccess)
        << pendingError();
    sendHandle[me].set_value(hs);
    recvHandle[me].set_value(hr);
    const ConnectHandle peerRecv = recvHandle[peer].get_future().get();
    const ConnectHandle peerSend = sendHandle[peer].get_future().get();
    ASSERT_EQ(netTransport()->connect(Direction::Send, peerRecv, &send[me]), ncclSuccess) << pendingError();
    ASSERT_EQ(netTransport()->connect(Direction::Recv, peerSend, &recv[me]), ncclSuccess) << pendingError();
  };
  std::thread t(side, 1);
  side(0);
  t.join();
  const int made = openSockets() - before;
  if (!(send[0].connected && recv[0].connected && send[1].connected && recv[1].connected)) {
    *err = "not connected";
    return made;
  }
  *err = pumpBoth(send[0].info, recv[1].info, send[1].info, recv[0].info, 72, 300);
  return made;
}

// A ring channel's batch: the higher rank takes the lower one's connection before its accept.
TEST(NetTwoWay, OneBatchOfBothDirections) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  std::string err;
  EXPECT_EQ(batchBothWays(5, &err), 2);
  EXPECT_EQ(err, "");
}

// Point-to-point connections never wait for the peer's connection during setup (two ranks' groups need not match):
// one batch of both directions keeps a connection each way.
TEST(NetTwoWay, PointToPointBatchKeepsAConnectionEachWay) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  std::string err;
  EXPECT_EQ(batchBothWays(p2pConnChannel(0), &err), 4);
  EXPECT_EQ(err, "");
}

TEST(NetTwoWay, OffGivesAConnectionEachWay) {
  EnvVar off("BRAID_NET_SOCKET_TWO_WAY", "0");
  BothWays c;
  EXPECT_EQ(c.made, 4);
  EXPECT_EQ(c.pump(), "");
}

// At 1, engines whose executors drive the connections (host communicators) share; the others (GPU communicators: a
// send and a receive thread per socket would contend for it) keep a connection each way, as every engine does by
// default.
TEST(NetTwoWay, OneSharesOnHostCommunicatorsOnly) {
  for (const char* setting : {static_cast<const char*>(nullptr), "1"}) {
    EnvVar twoWay("BRAID_NET_SOCKET_TWO_WAY", setting);
    const std::string which = setting ? setting : "unset";
    EXPECT_EQ(BothWays(0, 0, 0, false).made, 4) << "GPU communicators, " << which;
    EXPECT_EQ(BothWays(0, 0, 0, true).made, setting ? 2 : 4) << "host communicators, " << which;
  }
}

// An engine of several threads drives both directions of a two-way connection on one thread, the one its first comm
// took (they would contend for the socket), where a connection each way has its send and its receive on different
// threads.
TEST(NetTwoWay, BothDirectionsOfOneConnectionOnOneThread) {
  const CpuList mine = threadCpus();
  if (mine.size() < 2) GTEST_SKIP() << "one CPU: the engine would run one thread";
  EnvVar place("BRAID_PROXY_CPUS", formatCpuList(CpuList(mine.begin(), mine.begin() + 2)).c_str());
  for (const char* setting : {"2", "0"}) {
    EnvVar twoWay("BRAID_NET_SOCKET_TWO_WAY", setting);
    BothWays c(0, 0, 0, false, 2);
    ASSERT_EQ(c.a.ctx.proxy->threads(), 2);
    const bool shared = setting[0] == '2';
    for (TestRank* r : {&c.a, &c.b}) {
      const int on0 = r->ctx.proxy->connectionsOn(0), on1 = r->ctx.proxy->connectionsOn(1);
      EXPECT_EQ(on0 + on1, 2) << "rank " << r->info.rank << ", " << setting;
      EXPECT_EQ(std::max(on0, on1), shared ? 2 : 1) << "rank " << r->info.rank << ", " << setting;
    }
    EXPECT_EQ(c.pump(), "") << setting;
  }
}

// An accept watches this rank's connection to the peer for the peer's word that it answers over it. Where the peer
// connected the usual way and then closed its end of that connection (as an abort does), the accept takes the
// listener's connection instead of failing on the closed one.
TEST(NetTwoWay, AcceptTakesTheListenerWhereThePeerClosedTheOtherWay) {
  TestRank a(0), b(1);
  Connector baS;
  auto baR = std::make_unique<Connector>();
  connectPair(netTransport(), b, a, 4, 64 << 10, &baS, baR.get());  // b's send to a: the socket b's accept watches
  Connector abS, abR;
  abS.ctx = &a.ctx;
  abR.ctx = &b.ctx;
  ConnectHandle hs, hr;
  ASSERT_EQ(netTransport()->setup(Direction::Recv, b.info, a.info, 4, 64 << 10, &abR, &hr), ncclSuccess);
  ASSERT_EQ(netTransport()->setup(Direction::Send, a.info, b.info, 4, 64 << 10, &abS, &hs), ncclSuccess);
  ASSERT_EQ(netTransport()->connect(Direction::Send, hr, &abS), ncclSuccess) << pendingError();
  baR.reset();  // a closes its end of b's connection
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // b's socket has seen the end
  EXPECT_EQ(netTransport()->connect(Direction::Recv, hs, &abR), ncclSuccess) << pendingError();
}

// Several sockets per connection (BRAID_NSOCKS_PERPEER) and bulk helpers: a two-way connection carries steps of up
// to 256 KiB both ways, split over its sockets and moved by both comms' helpers, every byte checked.
TEST(NetTwoWay, SeveralSocketsAndBulkHelpers) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  EnvVar socks("BRAID_NSOCKS_PERPEER", "3");
  TestRank a(0), b(1);
  a.ctx.proxyBulkBytes = b.ctx.proxyBulkBytes = 64 << 10;
  const int before = openSockets();
  Connector abS, abR, baS, baR;
  connectPair(netTransport(), a, b, 0, 2 << 20, &abS, &abR);
  connectPair(netTransport(), b, a, 0, 2 << 20, &baS, &baR);
  EXPECT_EQ(openSockets() - before, 6) << "one connection of 3 sockets";
  ASSERT_GE(abS.info.stepBytes, 128u << 10) << "steps large enough to be split";
  EXPECT_EQ(pumpBoth(abS.info, abR.info, baS.info, baR.info, 76, 120), "");
}

// The rank that would open the second connection decides; the other follows, whatever its own setting.
TEST(NetTwoWay, TheAcceptingSideFollowsWhateverItsSetting) {
  TestRank a(0), b(1);
  const int before = openSockets();
  Connector abS, abR, baS, baR;
  connectPair(netTransport(), a, b, 0, 64 << 10, &abS, &abR);
  baS.ctx = &b.ctx;
  baR.ctx = &a.ctx;
  ConnectHandle hs, hr;
  ASSERT_EQ(netTransport()->setup(Direction::Recv, a.info, b.info, 0, 64 << 10, &baR, &hr), ncclSuccess);
  ASSERT_EQ(netTransport()->setup(Direction::Send, b.info, a.info, 0, 64 << 10, &baS, &hs), ncclSuccess);
  {
    EnvVar on("BRAID_NET_SOCKET_TWO_WAY", "2");
    ASSERT_EQ(netTransport()->connect(Direction::Send, hr, &baS), ncclSuccess) << pendingError();
  }
  {
    EnvVar off("BRAID_NET_SOCKET_TWO_WAY", "0");
    ASSERT_EQ(netTransport()->connect(Direction::Recv, hs, &baR), ncclSuccess) << pendingError();
  }
  EXPECT_EQ(openSockets() - before, 2);
  EXPECT_EQ(pumpBoth(abS.info, abR.info, baS.info, baR.info, 78, 300), "");
}

// Connections on other tags keep their own TCP connections.
TEST(NetTwoWay, OnlyTheSameTagShares) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  BothWays c(0, 1, 2);
  EXPECT_EQ(c.made, 4);
  EXPECT_EQ(c.pump(), "");
}

// The peer closing both of its comms (as a dying process does) fails both of this rank's directions, naming it.
TEST(NetTwoWay, PeerGoneFailsBothDirections) {
  EnvVar every("BRAID_NET_SOCKET_TWO_WAY", "2");
  TestRank a(0), b(1);
  Connector abS, baR;
  auto abR = std::make_unique<Connector>();
  auto baS = std::make_unique<Connector>();
  connectPair(netTransport(), a, b, 0, 64 << 10, &abS, abR.get());
  connectPair(netTransport(), b, a, 0, 64 << 10, baS.get(), &baR);
  ASSERT_EQ(pumpBoth(abS.info, abR->info, baS->info, baR.info, 74, 300), "");
  abR.reset();
  baS.reset();
  b.ctx.proxy.reset();
  EXPECT_TRUE(testutil::waitFlag(abS.info.errorFlag, 5)) << "the send to the gone peer";
  EXPECT_TRUE(testutil::waitFlag(baR.info.errorFlag, 5)) << "the receive from the gone peer";
  for (const uint32_t* flag : {abS.info.errorFlag, baR.info.errorFlag}) {
    ncclResult_t code = ncclSuccess;
    const std::string why = connFailure(flag, &code);
    EXPECT_EQ(code, ncclRemoteError) << why;
    EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace braid
