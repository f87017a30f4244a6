// NCCL network plugins (src/transport/net/net_plugin*.cc) against the tests' strict plugin
// (tests/net_plugin/test_net_plugin.cc, one library per table version): each of ncclNetPlugin_v8, _v9 and _v10 loads;
// a missing library, "none", a plugin whose init fails and a list fall through as NCCL's search does; messages of
// every size carry their flags and every byte, in order, while the plugin refuses requests past its limit and
// connects only on a later call; a receiver checks who connected; a sender closing after its last message loses
// none of it; a clean end leaves no request outstanding; a peer that goes away is ncclRemoteError naming it; a
// connection never made times out; memory outside the registrations is refused. Then the NET transport and its
// progress engine run steps over the plugin (NCCL_NET=BraidTest), every byte checked.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "transport/conn_info.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_plugin.h"
#include "transport_test_util.h"

namespace braid {
namespace {

using testutil::EnvVar;

std::string pluginPath(int version) {
  return std::string(BRAID_TEST_NET_PLUGIN_DIR) + "/libnccl-net-braidtest-v" + std::to_string(version) + ".so";
}

TEST(NetPlugin, EachTableVersionLoads) {
  for (int v : {8, 9, 10}) {
    const NetPluginStatus st = loadNetPlugin(pluginPath(v));
    ASSERT_NE(st.net, nullptr) << "v" << v << ": " << st.why;
    EXPECT_TRUE(st.asked);
    EXPECT_EQ(st.net->version, v);
    EXPECT_EQ(st.net->name, "BraidTest");
    ASSERT_EQ(st.net->devices.size(), 1u);
    EXPECT_EQ(st.net->devices[0].name, "braidtest0");
    // v9 and v10 bound a message's size; NVIDIA NCCL refuses a device outside 1 .. NCCL_MAX_NET_SIZE_BYTES (1 TiB).
    if (v >= 9) {
      EXPECT_GT(st.net->devices[0].maxP2pBytes, 0u) << "v" << v;
      EXPECT_LE(st.net->devices[0].maxP2pBytes, size_t{1} << 40) << "v" << v;
    }
  }
  EnvVar devs("BRAID_TEST_NET_DEVICES", "3");
  const NetPluginStatus st = loadNetPlugin(pluginPath(9));
  ASSERT_NE(st.net, nullptr) << st.why;
  EXPECT_EQ(st.net->devices.size(), 3u);
}

TEST(NetPlugin, SearchFallsThroughAsNcclDoes) {
  NetPluginStatus st = loadNetPlugin("none");
  EXPECT_EQ(st.net, nullptr);
  EXPECT_FALSE(st.asked);
  st = loadNetPlugin("/nonexistent/libnccl-net-x.so");
  EXPECT_EQ(st.net, nullptr);
  EXPECT_TRUE(st.asked);
  EXPECT_NE(st.why.find("/nonexistent/libnccl-net-x.so"), std::string::npos) << st.why;
  // A bare name is also tried as libnccl-net-NAME.so.
  st = loadNetPlugin("nosuchplugin");
  EXPECT_EQ(st.net, nullptr);
  EXPECT_NE(st.why.find("libnccl-net-nosuchplugin.so"), std::string::npos) << st.why;
  // The first that serves wins: a missing library, then a real one.
  st = loadNetPlugin("/nonexistent/a.so," + pluginPath(8));
  ASSERT_NE(st.net, nullptr) << st.why;
  EXPECT_EQ(st.net->version, 8);
  {
    EnvVar fail("BRAID_TEST_NET_FAIL_INIT", "1");
    st = loadNetPlugin(pluginPath(10));
    EXPECT_EQ(st.net, nullptr);
    EXPECT_NE(st.why.find("init failed"), std::string::npos) << st.why;
  }
  {
    EnvVar none("BRAID_TEST_NET_DEVICES", "0");
    st = loadNetPlugin(pluginPath(9));
    EXPECT_EQ(st.net, nullptr);
    EXPECT_NE(st.why.find("no device"), std::string::npos) << st.why;
  }
}

// A connection's FIFO steps: the receives the engine keeps posted ahead, and the byes of a clean end.
constexpr uint32_t kSteps = 8;

// A connection over the plugin, made as the NET transport makes it, driven by hand from one thread.
struct Link {
  std::unique_ptr<NetBackend> backend;
  std::unique_ptr<NetListenComm> listen;
  std::unique_ptr<NetSendComm> send;
  std::unique_ptr<NetRecvComm> recv;
  std::vector<char> sbuf, rbuf;

  Link(const PluginNet* net, size_t bytes, NetConnIdent ident, NetConnIdent expect, double timeoutSec = 20)
      : backend(makeNetPluginBackend(net)), sbuf(bytes), rbuf(bytes) {
    NetSetupParams p;
    p.timeoutSec = timeoutSec;
    p.nSteps = kSteps;
    p.peer = 1;
    NetHandle h;
    EXPECT_EQ(backend->listenFor(p, &h, &listen), ncclSuccess) << pendingError();
    p.peer = 0;
    EXPECT_EQ(backend->connect(h, ident, p, &send), ncclSuccess) << pendingError();
    p.peer = 1;
    EXPECT_EQ(listen->accept(expect, p, &recv), ncclSuccess) << pendingError();
    listen->close();  // the receive comm keeps what it still needs to accept
    EXPECT_EQ(send->registerBuffer(sbuf.data(), bytes), ncclSuccess) << pendingError();
    EXPECT_EQ(recv->registerBuffer(rbuf.data(), bytes), ncclSuccess) << pendingError();
  }
};

constexpr NetConnIdent kIdent{0, 1, 7, 0};

// Sends `sizes` (message i from sbuf at offset i * stride) with flags i * 3 + 1 and receives them into rbuf, every
// byte checked, polling as the engine does (advance() while needsPolling, a null request posted again later).
void exchange(Link& l, const std::vector<size_t>& sizes, size_t stride) {
  const size_t n = sizes.size();
  for (size_t i = 0; i < l.sbuf.size(); ++i) l.sbuf[i] = static_cast<char>((i * 131 + 7) & 0xff);
  std::memset(l.rbuf.data(), 0x5a, l.rbuf.size());
  std::vector<NetRequest*> sreq(n, nullptr), rreq(n, nullptr);
  size_t sPosted = 0, rPosted = 0, sDone = 0, rDone = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sDone < n || rDone < n) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "sent " << sDone << ", received " << rDone << " of " << n;
    if (l.send->needsPolling()) ASSERT_EQ(l.send->advance(), ncclSuccess) << pendingError();
    if (l.recv->needsPolling()) ASSERT_EQ(l.recv->advance(), ncclSuccess) << pendingError();
    if (sPosted < n && sPosted < sDone + 16) {
      NetRequest* r = nullptr;
      ASSERT_EQ(l.send->isend(l.sbuf.data() + sPosted * stride, sizes[sPosted], static_cast<uint32_t>(sPosted * 3 + 1),
                              &r),
                ncclSuccess)
          << pendingError();
      if (r) sreq[sPosted++] = r;
    }
    if (rPosted < n && rPosted < rDone + 16) {
      NetRequest* r = nullptr;
      ASSERT_EQ(l.recv->irecv(l.rbuf.data() + rPosted * stride, stride, &r), ncclSuccess) << pendingError();
      if (r) rreq[rPosted++] = r;
    }
    if (sDone < sPosted) {
      bool done = false;
      size_t size = 0;
      ASSERT_EQ(l.send->test(sreq[sDone], &done, &size, nullptr), ncclSuccess) << pendingError();
      if (done) {
        EXPECT_EQ(size, sizes[sDone]);
        ++sDone;
      }
    }
    if (rDone < rPosted) {
      bool done = false;
      size_t size = 0;
      uint32_t flags = 0;
      ASSERT_EQ(l.recv->test(rreq[rDone], &done, &size, &flags), ncclSuccess) << pendingError();
      if (done) {
        ASSERT_EQ(size, sizes[rDone]) << "message " << rDone;
        EXPECT_EQ(flags, rDone * 3 + 1) << "message " << rDone;
        const char* got = l.rbuf.data() + rDone * stride;
        const char* want = l.sbuf.data() + rDone * stride;
        for (size_t b = 0; b < stride; ++b) {
          const char expect = b < size ? want[b] : static_cast<char>(0x5a);
          ASSERT_EQ(got[b], expect) << "message " << rDone << " byte " << b;
        }
        ++rDone;
      }
    }
  }
  EXPECT_FALSE(l.send->needsPolling());
}

TEST(NetPlugin, MessagesCarrySizesFlagsAndBytesInOrder) {
  for (int v : {8, 9, 10}) {
    SCOPED_TRACE("ncclNetPlugin_v" + std::to_string(v));
    const NetPluginStatus st = loadNetPlugin(pluginPath(v));
    ASSERT_NE(st.net, nullptr) << st.why;
    const size_t stride = 64 << 10;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < 40; ++i) sizes.push_back(i % 5 == 0 ? 0 : (i * 7919) % stride + 1);
    sizes.push_back(stride);
    Link l(st.net, stride * sizes.size(), kIdent, kIdent);
    exchange(l, sizes, stride);
    l.send->close();
    l.recv->close();
  }
}

TEST(NetPlugin, ReceiverChecksWhoConnected) {
  const NetPluginStatus st = loadNetPlugin(pluginPath(10));
  ASSERT_NE(st.net, nullptr) << st.why;
  NetConnIdent other = kIdent;
  other.tag = 8;
  Link l(st.net, 4096, kIdent, other);
  NetRequest *s = nullptr, *r = nullptr;
  ncclResult_t res = ncclSuccess;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (res == ncclSuccess && std::chrono::steady_clock::now() < deadline) {
    if (!s) ASSERT_EQ(l.send->isend(l.sbuf.data(), 16, 0, &s), ncclSuccess);
    if (!r) ASSERT_EQ(l.recv->irecv(l.rbuf.data(), 16, &r), ncclSuccess);
    bool done = false;
    size_t size = 0;
    if (s) ASSERT_EQ(l.send->test(s, &done, &size, nullptr), ncclSuccess);
    if (done) s = nullptr;
    if (r) res = l.recv->test(r, &done, &size, nullptr);
  }
  EXPECT_EQ(res, ncclInternalError);
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("presents rank 0 -> 1 tag 7"), std::string::npos) << msg;
  clearPendingError();
}

// Receives are posted ahead of what a sender sends: a sender that sends its last messages and closes (its rank ended
// the communicator first) must lose none of them. The receive comm gets every message whole, and only the receive
// past the last fails, worded as the peer closing.
TEST(NetPlugin, SenderClosingAfterItsLastMessageLosesNothing) {
  const NetPluginStatus st = loadNetPlugin(pluginPath(10));
  ASSERT_NE(st.net, nullptr) << st.why;
  constexpr size_t kMsgs = 6, kStride = 8192;
  Link l(st.net, kMsgs * 2 * kStride, kIdent, kIdent);
  exchange(l, {10, 20}, kStride);  // connected and working
  for (size_t i = 0; i < l.sbuf.size(); ++i) l.sbuf[i] = static_cast<char>(i * 7 + 3);
  std::memset(l.rbuf.data(), 0x5a, l.rbuf.size());
  std::vector<NetRequest*> sreq, rreq;
  for (size_t i = 0; i < 2 * kMsgs; ++i) {  // twice as many receives as messages, as the engine posts ahead
    NetRequest* r = nullptr;
    ASSERT_EQ(l.recv->irecv(l.rbuf.data() + i * kStride, kStride, &r), ncclSuccess) << pendingError();
    ASSERT_NE(r, nullptr);
    rreq.push_back(r);
  }
  for (size_t i = 0; i < kMsgs; ++i) {
    NetRequest* r = nullptr;
    while (!r) ASSERT_EQ(l.send->isend(l.sbuf.data() + i * kStride, 1000 + i, 0, &r), ncclSuccess) << pendingError();
    sreq.push_back(r);
  }
  for (NetRequest* r : sreq) {
    bool done = false;
    size_t size = 0;
    while (!done) ASSERT_EQ(l.send->test(r, &done, &size, nullptr), ncclSuccess) << pendingError();
  }
  l.send->close();  // every message is out: the sender ends
  clearPendingError();
  for (size_t i = 0; i < kMsgs; ++i) {
    bool done = false;
    size_t size = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done && std::chrono::steady_clock::now() < deadline)
      ASSERT_EQ(l.recv->test(rreq[i], &done, &size, nullptr), ncclSuccess) << "message " << i << ": " << pendingError();
    ASSERT_TRUE(done) << "message " << i;
    ASSERT_EQ(size, 1000 + i);
    for (size_t b = 0; b < size; ++b) ASSERT_EQ(l.rbuf[i * kStride + b], l.sbuf[i * kStride + b]) << i << ":" << b;
  }
  bool done = false;
  size_t size = 0;
  ncclResult_t res = ncclSuccess;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (res == ncclSuccess && !done && std::chrono::steady_clock::now() < deadline)
    res = l.recv->test(rreq[kMsgs], &done, &size, nullptr);
  EXPECT_EQ(res, ncclRemoteError);
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("rank 1 closed the connection"), std::string::npos) << msg;
  clearPendingError();
}

// A clean end: with the engine's receives posted ahead (kSteps), both sides end their connection before closing,
// and the strict plugin (BRAID_TEST_NET_STRICT_CLOSE) then closes both with no request outstanding. Without the
// clean end it refuses the receive comm's close.
TEST(NetPlugin, CleanEndLeavesNothingOutstanding) {
  EnvVar strict("BRAID_TEST_NET_STRICT_CLOSE", "1");
  for (bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "clean end" : "closed at once");
    const NetPluginStatus st = loadNetPlugin(pluginPath(10));
    ASSERT_NE(st.net, nullptr) << st.why;
    Link l(st.net, 64 << 10, kIdent, kIdent);
    exchange(l, {100, 0, 5000}, 8192);
    std::vector<NetRequest*> ahead;  // as the engine leaves them: kSteps receives beyond the last message
    for (uint32_t i = 0; i < kSteps; ++i) {
      NetRequest* r = nullptr;
      ASSERT_EQ(l.recv->irecv(l.rbuf.data() + i * 8192, 8192, &r), ncclSuccess) << pendingError();
      ASSERT_NE(r, nullptr);
    }
    const uint64_t refusedBefore = netPluginRefusedCloses();
    if (clean) {
      l.send->startClose();
      l.recv->startClose();
      bool sent = false, received = false;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!(sent && received) && std::chrono::steady_clock::now() < deadline) {
        if (l.send->needsPolling()) ASSERT_EQ(l.send->advance(), ncclSuccess) << pendingError();
        if (l.recv->needsPolling()) ASSERT_EQ(l.recv->advance(), ncclSuccess) << pendingError();
        sent = sent || l.send->closeSettled();
        received = received || l.recv->closeSettled();
      }
      ASSERT_TRUE(sent && received) << "sent " << sent << ", received " << received;
    }
    l.send->close();
    l.recv->close();
    EXPECT_EQ(netPluginRefusedCloses() - refusedBefore, clean ? 0u : 1u);  // the receive comm, posted ahead
  }
}

TEST(NetPlugin, PeerGoneIsRemoteErrorNamingIt) {
  const NetPluginStatus st = loadNetPlugin(pluginPath(9));
  ASSERT_NE(st.net, nullptr) << st.why;
  Link l(st.net, 1 << 20, kIdent, kIdent);
  exchange(l, {100, 200}, 4096);  // connected and working
  l.send->close();
  clearPendingError();
  NetRequest* r = nullptr;
  ncclResult_t res = l.recv->irecv(l.rbuf.data(), 4096, &r);  // the post itself may find the connection gone
  ASSERT_TRUE(res != ncclSuccess || r != nullptr);
  bool done = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (res == ncclSuccess && !done && std::chrono::steady_clock::now() < deadline) {
    size_t size = 0;
    res = l.recv->test(r, &done, &size, nullptr);
  }
  EXPECT_EQ(res, ncclRemoteError);
  // Between messages: worded as a close, which the engine takes as the connection's end, not the communicator's.
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("rank 1 closed the connection"), std::string::npos) << msg;
  clearPendingError();
}

TEST(NetPlugin, ConnectionNeverMadeTimesOut) {
  const NetPluginStatus st = loadNetPlugin(pluginPath(10));
  ASSERT_NE(st.net, nullptr) << st.why;
  std::unique_ptr<NetBackend> backend = makeNetPluginBackend(st.net);
  clearPendingError();
  NetSetupParams p;
  p.timeoutSec = 0.3;
  p.peer = 3;
  NetHandle h;
  std::unique_ptr<NetListenComm> listen;
  ASSERT_EQ(backend->listenFor(p, &h, &listen), ncclSuccess);
  std::unique_ptr<NetRecvComm> recv;
  ASSERT_EQ(listen->accept(kIdent, p, &recv), ncclSuccess);  // nobody connects
  ncclResult_t res = ncclSuccess;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (res == ncclSuccess && std::chrono::steady_clock::now() < deadline) {
    EXPECT_TRUE(recv->needsPolling());
    res = recv->advance();
  }
  EXPECT_EQ(res, ncclRemoteError);
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("from rank 3 was not made"), std::string::npos) << msg;
  clearPendingError();
}

TEST(NetPlugin, MemoryOutsideRegistrationsIsRefused) {
  const NetPluginStatus st = loadNetPlugin(pluginPath(8));
  ASSERT_NE(st.net, nullptr) << st.why;
  Link l(st.net, 4096, kIdent, kIdent);
  std::vector<char> stray(64);
  NetRequest* s = nullptr;
  ncclResult_t res = l.send->isend(stray.data(), stray.size(), 0, &s);
  for (int i = 0; i < 1000 && res == ncclSuccess; ++i) res = l.send->advance();
  EXPECT_EQ(res, ncclInternalError);
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("outside the registered memory"), std::string::npos) << msg;
  clearPendingError();
}

// The NET transport's own path: selectNetBackend takes the plugin (NCCL_NET names it) and the progress engine moves
// FIFO steps over it, each side as an executor runs it.
TEST(NetPlugin, TransportStepsOverThePlugin) {
  const NetPluginStatus st = loadNetPlugin(pluginPath(10));
  ASSERT_NE(st.net, nullptr) << st.why;
  NetBackend* chosen = nullptr;
  {
    // netPlugin() reads NCCL_NET_PLUGIN once per process: this test's process sets it before anything asks.
    EnvVar plugin("NCCL_NET_PLUGIN", pluginPath(10).c_str());
    EnvVar net("NCCL_NET", "BraidTest");
    ASSERT_EQ(selectNetBackend(&chosen), ncclSuccess) << pendingError();
    ASSERT_STREQ(chosen->name(), "BraidTest");
    testutil::TestRank a(0), b(1);
    Connector sc, rc;
    testutil::connectPair(netTransport(), a, b, 0, 1 << 20, &sc, &rc);
    if (HasFatalFailure()) return;
    EXPECT_EQ(testutil::pump(sc.info, rc.info, 11, 300), "");
  }
}

}  // namespace
}  // namespace braid
