// The NET progress engine (NetProxy): one thread per communicator for many connections, blocked in epoll
// without a timeout when idle and woken by whoever posts work, a connection removed while others run, a stop
// while the thread is blocked, and a peer that dies while it is idle. Real sockets over loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "transport/conn_failure.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_proxy.h"
#include "transport/net/proxy_affinity.h"
#include "transport_test_util.h"

namespace braid {
namespace {

using testutil::connectPair;
using testutil::EnvVar;
using testutil::pump;
using testutil::TestRank;

// Threads of this process named `name`, with their scheduler state letter.
std::vector<char> threadsNamed(const std::string& name) {
  std::vector<char> out;
  for (const std::string& state : testutil::threadStatus(name, "State:")) out.push_back(state.empty() ? '?' : state[0]);
  return out;
}

// The engines' threads.
std::vector<char> engineThreads() { return threadsNamed("braid-netproxy"); }

// Stands in for a GPU executor: Busy while the test says work is in flight.
struct FakePoster {
  std::atomic<bool> busy{false};
  std::function<NetWork()> probe() {
    return [this] { return busy.load() ? NetWork::Busy : NetWork::Idle; };
  }
};

// Waits (bounded) until pred() holds; the bound only keeps a broken build from hanging the suite.
template <typename Pred>
bool eventually(Pred pred, double sec = 20) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(sec);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(NetEngine, ManyConnectionsOneThreadPerRank) {
  ASSERT_TRUE(engineThreads().empty());
  TestRank a(0), b(1);
  constexpr int kConns = 8;
  Connector s[kConns], r[kConns];
  for (int ch = 0; ch < kConns; ++ch) {
    if (ch % 2 == 0) {
      connectPair(netTransport(), a, b, ch, 256 << 10, &s[ch], &r[ch]);
    } else {
      connectPair(netTransport(), b, a, ch, 256 << 10, &s[ch], &r[ch]);
    }
  }
  ASSERT_TRUE(a.ctx.proxy && b.ctx.proxy);
  EXPECT_EQ(a.ctx.proxy->connections(), kConns);
  EXPECT_EQ(b.ctx.proxy->connections(), kConns);
  // Each thread names itself as it starts.
  EXPECT_TRUE(eventually([] { return engineThreads().size() == 2u; })) << "one engine thread per rank";
  std::string err[kConns];
  std::vector<std::thread> ts;
  for (int ch = 0; ch < kConns; ++ch)
    ts.emplace_back([&, ch] { err[ch] = pump(s[ch].info, r[ch].info, 40 + ch, 200); });
  for (auto& t : ts) t.join();
  for (int ch = 0; ch < kConns; ++ch) EXPECT_EQ(err[ch], "") << "connection " << ch;
  EXPECT_EQ(engineThreads().size(), 2u);
}

// With a probe that says nothing is in flight, an idle engine blocks in epoll_wait without a timeout: it stays
// asleep while nothing happens, a posted step wakes it (wakeSleeping), and a probe that says Busy keeps it
// polling the FIFOs, where a step published without any wake still moves.
TEST(NetEngine, BlocksWhenIdleAndWakesForPostedWork) {
  TestRank a(0), b(1);
  FakePoster pa, pb;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &s, &r);
  a.ctx.proxy->setWorkProbe(pa.probe());
  b.ctx.proxy->setWorkProbe(pb.probe());
  NetProxy& pxa = *a.ctx.proxy;
  NetProxy& pxb = *b.ctx.proxy;
  ASSERT_TRUE(eventually([&] { return pxa.blockedWaits() > 0 && pxb.blockedWaits() > 0; }));
  // Idle: both threads sleep (state S) and are not napping in a loop.
  const uint64_t wa = pxa.blockedWaits(), wb = pxb.blockedWaits();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(pxa.blockedWaits(), wa);
  EXPECT_EQ(pxb.blockedWaits(), wb);
  for (char st : engineThreads()) EXPECT_EQ(st, 'S');

  // Posters that say so after publishing (the sender's step, the receiver's freed slot): one step a round, each
  // moved by a woken engine, which blocks again after it.
  ConnInfo in = s.info, out = r.info;
  for (int round = 0; round < 5; ++round) {
    const uint64_t before = pxa.blockedWaits();
    EXPECT_EQ(testutil::sendSteps(in, 7 + round, 1), "");
    pxa.wakeSleeping();
    EXPECT_EQ(testutil::recvSteps(out, 7 + round, 1), "");
    pxb.wakeSleeping();
    in.step = out.step = static_cast<uint64_t>(round) + 1;
    ASSERT_TRUE(eventually([&] { return pxa.blockedWaits() > before; })) << "the engine blocks again, round " << round;
  }

  // In flight on both sides: the engines poll, so steps published without any wake move (as a GPU kernel's do).
  pa.busy = true;
  pb.busy = true;
  pxa.wakeSleeping();
  pxb.wakeSleeping();
  const uint64_t polling = pxa.blockedWaits();
  EXPECT_EQ(pump(in, out, 9, 300), "");
  pa.busy = false;
  pb.busy = false;
  pxa.wakeSleeping();  // the probe changed its answer
  ASSERT_TRUE(eventually([&] { return pxa.blockedWaits() > polling; })) << "blocks again once the work is done";
  a.ctx.proxy->setWorkProbe(nullptr);
  b.ctx.proxy->setWorkProbe(nullptr);
}

// A connection removed (its connectors destroyed) while others carry data: the others finish, every byte checked.
TEST(NetEngine, ConnectionRemovedWhileOthersRun) {
  TestRank a(0), b(1);
  constexpr int kConns = 4;
  Connector s[kConns], r[kConns];
  for (int ch = 0; ch < kConns; ++ch) connectPair(netTransport(), a, b, ch, 128 << 10, &s[ch], &r[ch]);
  ASSERT_EQ(a.ctx.proxy->connections(), kConns);
  std::string err[kConns];
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int ch = 1; ch < kConns; ++ch)
    ts.emplace_back([&, ch] {
      while (!go.load()) std::this_thread::yield();
      err[ch] = pump(s[ch].info, r[ch].info, 60 + ch, 400);
    });
  go = true;
  EXPECT_EQ(pump(s[0].info, r[0].info, 60, 50), "");
  s[0].res.reset();  // NetResources' destructor removes it from the engine
  r[0].res.reset();
  EXPECT_EQ(a.ctx.proxy->connections(), kConns - 1);
  EXPECT_EQ(b.ctx.proxy->connections(), kConns - 1);
  for (auto& t : ts) t.join();
  for (int ch = 1; ch < kConns; ++ch) EXPECT_EQ(err[ch], "") << "connection " << ch;
}

// stop() (what abort does) while the thread is blocked in epoll: it returns, and the thread is gone.
TEST(NetEngine, StopWhileBlockedInEpoll) {
  TestRank a(0), b(1);
  FakePoster pa, pb;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &s, &r);
  EXPECT_EQ(pump(s.info, r.info, 3, 20), "");  // no probe yet: the engines nap, so unannounced steps move
  a.ctx.proxy->setWorkProbe(pa.probe());
  b.ctx.proxy->setWorkProbe(pb.probe());
  ASSERT_TRUE(eventually([&] { return a.ctx.proxy->blockedWaits() > 0; }));
  ASSERT_TRUE(eventually([] { return engineThreads().size() == 2u; }));
  a.ctx.proxy->stop();
  EXPECT_EQ(engineThreads().size(), 1u);
  b.ctx.proxy->stop();
  EXPECT_TRUE(engineThreads().empty());
  a.ctx.proxy->setWorkProbe(nullptr);
  b.ctx.proxy->setWorkProbe(nullptr);
}

// A peer that goes away while this rank's engine is blocked with nothing to do: the send socket's hang-up wakes
// it, and the connection fails naming the peer.
TEST(NetEngine, PeerGoneWhileBlockedIsNoticed) {
  TestRank a(0), b(1);
  FakePoster pa;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &s, &r);
  EXPECT_EQ(pump(s.info, r.info, 5, 20), "");  // no probe yet: the engines nap, so unannounced steps move
  a.ctx.proxy->setWorkProbe(pa.probe());
  ASSERT_TRUE(eventually([&] { return a.ctx.proxy->blockedWaits() > 0; }));
  const uint64_t before = a.ctx.proxy->blockedWaits();
  r.res.reset();  // the receiving side closes its sockets, as a dying process's kernel does
  ASSERT_TRUE(testutil::waitFlag(s.info.errorFlag, 20)) << "the blocked engine saw the hang-up";
  EXPECT_GE(a.ctx.proxy->blockedWaits(), before);
  ncclResult_t code = ncclSuccess;
  const std::string why = connFailure(s.info.errorFlag, &code);
  EXPECT_EQ(code, ncclRemoteError);
  EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  a.ctx.proxy->setWorkProbe(nullptr);
}

// Bulk helpers (GPU communicators): full steps move on each connection's helper thread while the engine posts
// and completes them, and the small and empty steps between them move on the engine; every byte checked, with
// one and with several sockets per connection, both directions at once.
TEST(NetEngine, BulkHelpersMoveLargeStepsEveryByteChecked) {
  for (const char* socks : {"1", "3"}) {
    EnvVar n("BRAID_NSOCKS_PERPEER", socks);
    TestRank a(0), b(1);
    a.ctx.proxyBulkBytes = b.ctx.proxyBulkBytes = 64 << 10;
    constexpr int kConns = 4;
    Connector s[kConns], r[kConns];
    for (int ch = 0; ch < kConns; ++ch) {
      if (ch % 2 == 0) {
        connectPair(netTransport(), a, b, ch, 4 << 20, &s[ch], &r[ch]);
      } else {
        connectPair(netTransport(), b, a, ch, 4 << 20, &s[ch], &r[ch]);
      }
    }
    ASSERT_GE(s[0].info.stepBytes, 64u << 10) << "full steps are bulk messages";
    std::string err[kConns];
    std::vector<std::thread> ts;
    for (int ch = 0; ch < kConns; ++ch)
      ts.emplace_back([&, ch] { err[ch] = pump(s[ch].info, r[ch].info, 80 + ch, 120); });
    for (auto& t : ts) t.join();
    for (int ch = 0; ch < kConns; ++ch) EXPECT_EQ(err[ch], "") << socks << " sockets, connection " << ch;
    EXPECT_GE(threadsNamed("braid-netio").size(), 2u) << "helpers ran";
    EXPECT_EQ(engineThreads().size(), 2u);
  }
  EXPECT_TRUE(threadsNamed("braid-netio").empty()) << "helpers end with their connections";
}

// A peer that goes away while a helper moves a large step: the connection fails naming the peer, nothing hangs.
TEST(NetEngine, BulkHelperSeesThePeerGo) {
  TestRank a(0), b(1);
  a.ctx.proxyBulkBytes = b.ctx.proxyBulkBytes = 64 << 10;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 4 << 20, &s, &r);
  // The receiver never consumes: full steps back up in the sockets, the helper waiting for room.
  EXPECT_NE(testutil::sendSteps(s.info, 5, 400, 1), "") << "the sender backs up";
  r.res.reset();
  ASSERT_TRUE(testutil::waitFlag(s.info.errorFlag, 20));
  ncclResult_t code = ncclSuccess;
  const std::string why = connFailure(s.info.errorFlag, &code);
  EXPECT_EQ(code, ncclRemoteError);
  EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
}

// BRAID_PROXY_CPUS naming the first n CPUs this thread may use (the engine runs at most one thread per CPU of its
// placement); "" where it may use fewer.
std::string firstCpus(size_t n) {
  const CpuList mine = threadCpus();
  if (mine.size() < n) return "";
  return formatCpuList(CpuList(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(n)));
}

// Several progress threads (BRAID_NET_PROXY_THREADS of GPU communicators): connections are dealt over them by
// channel, with T threads a send on thread channel % T and a receive on (channel + T/2) % T, and every byte of
// every connection arrives as sent. T is 3, or 2 where this process may use only 2 CPUs.
TEST(NetEngine, ChannelsDealtOverThreadsEveryByteChecked) {
  const int threads = !firstCpus(3).empty() ? 3 : 2;
  const std::string cpus = firstCpus(static_cast<size_t>(threads));
  if (cpus.empty()) GTEST_SKIP() << "one CPU: the engine would run one thread";
  EnvVar place("BRAID_PROXY_CPUS", cpus.c_str());
  TestRank a(0), b(1);
  a.ctx.proxyThreads = b.ctx.proxyThreads = threads;
  constexpr int kChannels = 5;  // more channels than threads: some threads carry several
  Connector s[2 * kChannels], r[2 * kChannels];
  for (int ch = 0; ch < kChannels; ++ch) {
    connectPair(netTransport(), a, b, ch, 256 << 10, &s[2 * ch], &r[2 * ch]);
    connectPair(netTransport(), b, a, ch, 256 << 10, &s[2 * ch + 1], &r[2 * ch + 1]);
  }
  ASSERT_EQ(a.ctx.proxy->threads(), threads);
  std::vector<int> want(static_cast<size_t>(threads), 0);
  for (int ch = 0; ch < kChannels; ++ch) {
    want[static_cast<size_t>(ch % threads)]++;                  // the rank's send
    want[static_cast<size_t>((ch + threads / 2) % threads)]++;  // its receive
  }
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(a.ctx.proxy->connectionsOn(t), want[static_cast<size_t>(t)]) << "thread " << t;
    EXPECT_EQ(b.ctx.proxy->connectionsOn(t), want[static_cast<size_t>(t)]) << "thread " << t;
  }
  EXPECT_TRUE(eventually([&] { return engineThreads().size() == 2u * threads; })) << threads << " threads per rank";
  std::string err[2 * kChannels];
  std::vector<std::thread> ts;
  for (int i = 0; i < 2 * kChannels; ++i)
    ts.emplace_back([&, i] { err[i] = pump(s[i].info, r[i].info, 60 + i, 300); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 2 * kChannels; ++i) EXPECT_EQ(err[i], "") << "connection " << i;
  // A removed connection leaves the others on its threads running: channel T's a->b connection has the threads of
  // channel 0's (a's thread 0, b's thread T/2).
  s[0].res.reset();
  r[0].res.reset();
  EXPECT_EQ(a.ctx.proxy->connectionsOn(0), want[0] - 1);
  EXPECT_EQ(b.ctx.proxy->connectionsOn(threads / 2), want[static_cast<size_t>(threads / 2)] - 1);
  ConnInfo sn = s[2 * threads].info, rn = r[2 * threads].info;
  sn.step = rn.step = 300;
  EXPECT_EQ(pump(sn, rn, 99, 50), "");
}

// Point-to-point connections share one tag whatever the peer: the engine deals them by tag and peer, so the
// connections to (and from) different peers run on different threads.
TEST(NetEngine, PeerConnectionsDealtByPeer) {
  const std::string cpus = firstCpus(2);
  if (cpus.empty()) GTEST_SKIP() << "one CPU: the engine would run one thread";
  EnvVar place("BRAID_PROXY_CPUS", cpus.c_str());
  // Rank 0 twice: one engine that only sends, one that only receives. b and c could not tell the two apart, so each
  // direction keeps its own connection.
  EnvVar oneWay("BRAID_NET_SOCKET_TWO_WAY", "0");
  TestRank sender(0), receiver(0), b(1), c(2);
  sender.ctx.proxyThreads = receiver.ctx.proxyThreads = 2;
  Connector s[4], r[4];
  connectPair(netTransport(), sender, b, p2pConnChannel(0), 64 << 10, &s[0], &r[0]);
  connectPair(netTransport(), sender, c, p2pConnChannel(0), 64 << 10, &s[1], &r[1]);
  connectPair(netTransport(), b, receiver, p2pConnChannel(0), 64 << 10, &s[2], &r[2]);
  connectPair(netTransport(), c, receiver, p2pConnChannel(0), 64 << 10, &s[3], &r[3]);
  for (TestRank* t : {&sender, &receiver}) {
    ASSERT_EQ(t->ctx.proxy->threads(), 2);
    EXPECT_EQ(t->ctx.proxy->connectionsOn(0), 1) << (t == &sender ? "sends" : "receives");
    EXPECT_EQ(t->ctx.proxy->connectionsOn(1), 1) << (t == &sender ? "sends" : "receives");
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pump(s[i].info, r[i].info, 21 + i, 40), "") << "connection " << i;
}

// No more progress threads than CPUs they may run on (BRAID_PROXY_CPUS naming one): polling threads beyond that
// would only take turns on it.
TEST(NetEngine, NoMoreThreadsThanCpus) {
  EnvVar place("BRAID_PROXY_CPUS", firstCpus(1).c_str());
  TestRank a(0), b(1);
  a.ctx.proxyThreads = b.ctx.proxyThreads = 4;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &s, &r);
  EXPECT_EQ(a.ctx.proxy->threads(), 1);
  EXPECT_EQ(pump(s.info, r.info, 3, 50), "");
}

// With BRAID_PROXY_CPUS=inherit the threads keep the rank's binding: a rank bound to one CPU gets one thread.
TEST(NetEngine, InheritedBindingOfOneCpuGivesOneThread) {
  const CpuList mine = threadCpus();
  ASSERT_FALSE(mine.empty());
  EnvVar place("BRAID_PROXY_CPUS", "inherit");
  ASSERT_TRUE(pinThisThread({mine.front()}));
  TestRank a(0), b(1);
  a.ctx.proxyThreads = b.ctx.proxyThreads = 4;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &s, &r);
  EXPECT_EQ(a.ctx.proxy->threads(), 1);
  ASSERT_TRUE(pinThisThread(mine));  // the suite's other tests run on every CPU again
  EXPECT_EQ(pump(s.info, r.info, 4, 50), "");
}

// A connection failing on one progress thread fails the communicator's connections on the others, naming the
// peer: no executor waits on a healthy-looking connection until its timeout.
// The other thread is blocked in epoll without a timeout (its probe says nothing is in flight), so only the
// failing thread's wake reaches it.
TEST(NetEngine, FailureOnOneThreadFailsConnectionsOnTheOthers) {
  const std::string cpus = firstCpus(2);
  if (cpus.empty()) GTEST_SKIP() << "one CPU: the engine would run one thread";
  EnvVar place("BRAID_PROXY_CPUS", cpus.c_str());
  TestRank a(0), b(1);
  a.ctx.proxyThreads = b.ctx.proxyThreads = 2;
  FakePoster pa;
  pa.busy = true;
  Connector s0, r0, s1, r1;
  connectPair(netTransport(), a, b, 0, 4 << 20, &s0, &r0);  // a's thread 0
  connectPair(netTransport(), a, b, 1, 4 << 20, &s1, &r1);  // a's thread 1
  ASSERT_EQ(a.ctx.proxy->threads(), 2);
  a.ctx.proxy->setWorkProbe(pa.probe());
  EXPECT_EQ(pump(s1.info, r1.info, 7, 20), "");
  // Channel 0's receiver never consumes: steps back up unread in its socket, and closing it then resets the
  // connection (a failure, not a clean end).
  EXPECT_NE(testutil::sendSteps(s0.info, 5, 400, 1), "") << "the sender backs up";
  pa.busy = false;  // both of a's threads block
  ASSERT_TRUE(eventually([&] {
    const uint64_t before[2] = {a.ctx.proxy->blockedWaitsOn(0), a.ctx.proxy->blockedWaitsOn(1)};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int t = 0; t < 2; ++t)
      if (before[t] == 0 || a.ctx.proxy->blockedWaitsOn(t) != before[t]) return false;
    return true;
  })) << "each of a's threads blocked";
  r0.res.reset();
  ASSERT_TRUE(testutil::waitFlag(s0.info.errorFlag, 20));
  ASSERT_TRUE(testutil::waitFlag(s1.info.errorFlag, 20)) << "channel 1's sender, on the blocked thread, fails too";
  ncclResult_t code = ncclSuccess;
  const std::string why = connFailure(s1.info.errorFlag, &code);
  EXPECT_EQ(code, ncclRemoteError);
  EXPECT_NE(why.find("connection with rank 1 failed"), std::string::npos) << why;
  a.ctx.proxy->setWorkProbe(nullptr);
}

}  // namespace
}  // namespace braid
