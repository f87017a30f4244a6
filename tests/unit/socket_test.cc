// Socket layer: address parsing/printing, NCCL_SOCKET_IFNAME matching and interface choice, and the
// blocking operations (connect retry, deadlines, abort flag, partial transfers, closed peers, no SIGPIPE).
#include "core/socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "common/env_guard.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

SockAddr loopback4() {
  SockAddr a;
  memset(&a, 0, sizeof(a));
  a.sin.sin_family = AF_INET;
  a.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A port nobody listens on right now.
uint16_t freePort() {
  Socket s;
  SockAddr a = loopback4();
  EXPECT_EQ(s.listen(&a), ncclSuccess);
  return ntohs(a.sin.sin_port);
}

// A connected pair over loopback.
void connectedPair(Socket* client, Socket* server) {
  Socket listener;
  SockAddr a = loopback4();
  ASSERT_EQ(listener.listen(&a), ncclSuccess);
  ASSERT_EQ(client->connect(a, 5, nullptr), ncclSuccess);
  ASSERT_EQ(listener.accept(server, 5, nullptr), ncclSuccess);
}

using braid_test::EnvGuard;

TEST(SocketAddr, ParseAndPrintIpv4) {
  clearPendingError();
  SockAddr a;
  ASSERT_EQ(parseSockAddr("127.0.0.1:4242", &a), ncclSuccess);
  EXPECT_EQ(a.sa.sa_family, AF_INET);
  EXPECT_EQ(ntohs(a.sin.sin_port), 4242);
  EXPECT_EQ(sockAddrLen(a), sizeof(sockaddr_in));
  EXPECT_EQ(sockAddrToString(a), "127.0.0.1:4242");
}

TEST(SocketAddr, ParseAndPrintIpv6) {
  clearPendingError();
  SockAddr a;
  ASSERT_EQ(parseSockAddr("[::1]:80", &a), ncclSuccess);
  EXPECT_EQ(a.sa.sa_family, AF_INET6);
  EXPECT_EQ(ntohs(a.sin6.sin6_port), 80);
  EXPECT_EQ(sockAddrLen(a), sizeof(sockaddr_in6));
  EXPECT_EQ(sockAddrToString(a), "[::1]:80");
  // A bare IPv6 address: the last group is the port.
  ASSERT_EQ(parseSockAddr("fe80::1:1234", &a), ncclSuccess);
  EXPECT_EQ(ntohs(a.sin6.sin6_port), 1234);
}

TEST(SocketAddr, ParseHostName) {
  clearPendingError();
  SockAddr a;
  ASSERT_EQ(parseSockAddr("localhost:5000", &a), ncclSuccess);
  EXPECT_EQ(ntohs(a.sa.sa_family == AF_INET ? a.sin.sin_port : a.sin6.sin6_port), 5000);
}

TEST(SocketAddr, RejectsMalformed) {
  SockAddr a;
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:12x", "[::1", "[::1]80", ":80",
                          "no.such.host.invalid:80"}) {
    clearPendingError();
    EXPECT_EQ(parseSockAddr(bad, &a), ncclInvalidArgument) << bad;
    EXPECT_FALSE(pendingError().empty()) << bad;
  }
  clearPendingError();
}

TEST(SocketIfname, PrefixExcludeExact) {
  EXPECT_TRUE(matchIfName("eth0", "eth"));
  EXPECT_TRUE(matchIfName("eth0", "ib,eth"));
  EXPECT_FALSE(matchIfName("enp3s0", "ib,eth"));
  EXPECT_FALSE(matchIfName("eth0", "^eth"));
  EXPECT_TRUE(matchIfName("ib0", "^eth,docker"));
  EXPECT_FALSE(matchIfName("docker0", "^eth,docker"));
  EXPECT_TRUE(matchIfName("eth0", "=eth0"));
  EXPECT_FALSE(matchIfName("eth01", "=eth0"));
  EXPECT_FALSE(matchIfName("eth0", "=eth"));
  EXPECT_FALSE(matchIfName("eth0", "^=eth0"));
  EXPECT_TRUE(matchIfName("eth01", "^=eth0"));
  EXPECT_TRUE(matchIfName("lo", "=ib0,lo"));
  EXPECT_FALSE(matchIfName("lo", ""));
  EXPECT_TRUE(matchIfName("lo", "^"));
}

TEST(SocketIfname, LoopbackAndNoMatch) {
  {
    EnvGuard env("NCCL_SOCKET_IFNAME", "=lo");
    clearPendingError();
    SockAddr a;
    std::string name;
    ASSERT_EQ(findInterfaceAddr(&a, &name), ncclSuccess) << pendingError();
    EXPECT_EQ(name, "lo");
    EXPECT_EQ(a.sa.sa_family, AF_INET);
    EXPECT_EQ(sockAddrToString(a), "127.0.0.1:0");
  }
  {
    EnvGuard env("NCCL_SOCKET_IFNAME", "=braidnosuchif0");
    clearPendingError();
    SockAddr a;
    EXPECT_EQ(findInterfaceAddr(&a, nullptr), ncclInvalidArgument);
    EXPECT_NE(pendingError().find("NCCL_SOCKET_IFNAME="
                                  "=braidnosuchif0"),
              std::string::npos)
        << pendingError();
  }
  {
    EnvGuard env("NCCL_SOCKET_IFNAME", nullptr);
    clearPendingError();
    SockAddr a;
    std::string name;
    ASSERT_EQ(findInterfaceAddr(&a, &name), ncclSuccess) << pendingError();
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name.rfind("docker", 0), 0u) << name;
  }
  clearPendingError();
}

// Every matching interface, once each, the first being findInterfaceAddr's pick (the socket backend chooses among
// them by the GPU's topology).
TEST(SocketIfname, EveryMatchingInterfaceOnceFirstAsPicked) {
  {
    EnvGuard env("NCCL_SOCKET_IFNAME", "^=braidnosuchif0");  // every interface
    clearPendingError();
    std::vector<SockIf> all;
    ASSERT_EQ(findInterfaces(&all), ncclSuccess) << pendingError();
    ASSERT_FALSE(all.empty());
    bool lo = false;
    for (size_t i = 0; i < all.size(); ++i) {
      lo = lo || all[i].name == "lo";
      for (size_t j = 0; j < i; ++j) EXPECT_NE(all[i].name, all[j].name);
    }
    EXPECT_TRUE(lo);
    SockAddr a;
    std::string name;
    ASSERT_EQ(findInterfaceAddr(&a, &name), ncclSuccess) << pendingError();
    EXPECT_EQ(name, all[0].name);
    EXPECT_EQ(sockAddrToString(a), sockAddrToString(all[0].addr));
  }
  {
    EnvGuard env("NCCL_SOCKET_IFNAME", "=lo");
    std::vector<SockIf> all;
    ASSERT_EQ(findInterfaces(&all), ncclSuccess) << pendingError();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].name, "lo");
    EXPECT_EQ(sockAddrToString(all[0].addr), "127.0.0.1:0");
  }
  {
    EnvGuard env("NCCL_SOCKET_IFNAME", "=braidnosuchif0");
    std::vector<SockIf> all;
    EXPECT_EQ(findInterfaces(&all), ncclInvalidArgument);
    EXPECT_NE(pendingError().find("=braidnosuchif0"), std::string::npos) << pendingError();
    clearPendingError();
  }
}

TEST(SocketFamily, PicksTheAskedFamily) {
  {
    EnvGuard ifn("NCCL_SOCKET_IFNAME", "=lo");
    EnvGuard fam("NCCL_SOCKET_FAMILY", "AF_INET");
    clearPendingError();
    SockAddr a;
    ASSERT_EQ(findInterfaceAddr(&a, nullptr), ncclSuccess) << pendingError();
    EXPECT_EQ(a.sa.sa_family, AF_INET);
  }
  {
    EnvGuard ifn("NCCL_SOCKET_IFNAME", "=lo");
    EnvGuard fam("NCCL_SOCKET_FAMILY", "AF_INET6");
    clearPendingError();
    SockAddr a;
    ncclResult_t r = findInterfaceAddr(&a, nullptr);
    if (r == ncclSuccess) {
      EXPECT_EQ(a.sa.sa_family, AF_INET6);
      EXPECT_EQ(sockAddrToString(a).rfind("[::1]", 0), 0u) << sockAddrToString(a);
    } else {  // a loopback without ::1 (IPv6 disabled): the message names both settings
      EXPECT_EQ(r, ncclInvalidArgument);
      EXPECT_NE(pendingError().find("NCCL_SOCKET_FAMILY=AF_INET6"), std::string::npos) << pendingError();
    }
  }
  {
    EnvGuard fam("NCCL_SOCKET_FAMILY", "AF_UNIX");
    clearPendingError();
    SockAddr a;
    EXPECT_EQ(findInterfaceAddr(&a, nullptr), ncclInvalidArgument);
    EXPECT_NE(pendingError().find("NCCL_SOCKET_FAMILY=AF_UNIX"), std::string::npos) << pendingError();
  }
  clearPendingError();
}

TEST(Socket, ListenConnectTransferIpv4) {
  clearPendingError();
  Socket client, server;
  connectedPair(&client, &server);
  // Bigger than socket buffers: forces partial writes and reads.
  std::vector<uint32_t> out(4 << 20), in(out.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 2654435761u);
  ncclResult_t sendRes = ncclInternalError;
  std::thread t([&] { sendRes = client.sendAll(out.data(), out.size() * 4, 10, nullptr, "test server"); });
  EXPECT_EQ(server.recvAll(in.data(), in.size() * 4, 10, nullptr, "test client"), ncclSuccess);
  t.join();
  EXPECT_EQ(sendRes, ncclSuccess);
  EXPECT_EQ(in, out);
}

TEST(Socket, ListenConnectTransferIpv6) {
  clearPendingError();
  Socket listener;
  SockAddr a;
  ASSERT_EQ(parseSockAddr("[::1]:0", &a), ncclSuccess);
  if (listener.listen(&a) != ncclSuccess) {
    clearPendingError();
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  EXPECT_NE(ntohs(a.sin6.sin6_port), 0);
  Socket client, server;
  ASSERT_EQ(client.connect(a, 5, nullptr), ncclSuccess);
  ASSERT_EQ(listener.accept(&server, 5, nullptr), ncclSuccess);
  const char msg[] = "hello over v6";
  char buf[sizeof(msg)] = {};
  ASSERT_EQ(client.sendAll(msg, sizeof(msg), 5, nullptr, "server"), ncclSuccess);
  ASSERT_EQ(server.recvAll(buf, sizeof(buf), 5, nullptr, "client"), ncclSuccess);
  EXPECT_STREQ(buf, msg);
}

TEST(Socket, ConnectRetriesUntilListenerAppears) {
  clearPendingError();
  uint16_t port = freePort();
  SockAddr a = loopback4();
  a.sin.sin_port = htons(port);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Socket l;
    SockAddr la = a;
    ASSERT_EQ(l.listen(&la), ncclSuccess);
    Socket s;
    ASSERT_EQ(l.accept(&s, 5, nullptr), ncclSuccess);
  });
  Socket c;
  EXPECT_EQ(c.connect(a, 5, nullptr), ncclSuccess) << pendingError();
  late.join();
}

TEST(Socket, ConnectTimesOutNamingAddress) {
  clearPendingError();
  SockAddr a = loopback4();
  a.sin.sin_port = htons(freePort());
  Socket c;
  auto t0 = Clock::now();
  EXPECT_EQ(c.connect(a, 0.5, nullptr), ncclRemoteError);
  double took = secondsSince(t0);
  EXPECT_GE(took, 0.4);
  EXPECT_LT(took, 3.0);
  EXPECT_NE(pendingError().find(sockAddrToString(a)), std::string::npos) << pendingError();
  clearPendingError();
}

TEST(Socket, AcceptTimesOut) {
  clearPendingError();
  Socket l, s;
  SockAddr a = loopback4();
  ASSERT_EQ(l.listen(&a), ncclSuccess);
  EXPECT_EQ(l.accept(&s, 0.2, nullptr), ncclRemoteError);
  clearPendingError();
}

TEST(Socket, AbortFlagEndsPendingReceive) {
  clearPendingError();
  Socket client, server;
  connectedPair(&client, &server);
  std::atomic<uint32_t> abortFlag{0};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abortFlag.store(1);
  });
  char buf[8];
  auto t0 = Clock::now();
  EXPECT_NE(server.recvAll(buf, sizeof(buf), -1, &abortFlag, "client"), ncclSuccess);
  EXPECT_LT(secondsSince(t0), 2.0);
  t.join();
  EXPECT_NE(pendingError().find("abort"), std::string::npos) << pendingError();
  clearPendingError();
}

TEST(Socket, ClosedPeerIsRemoteErrorNotSigpipe) {
  clearPendingError();
  Socket client, server;
  connectedPair(&client, &server);
  client.close();
  char buf[4];
  EXPECT_EQ(server.recvAll(buf, sizeof(buf), 5, nullptr, "the test client"), ncclRemoteError);
  EXPECT_NE(pendingError().find("connection closed by the test client"), std::string::npos) << pendingError();
  clearPendingError();
  // Writing to a closed connection: an error value, never SIGPIPE (which would kill this test binary).
  std::vector<char> big(1 << 20, 'x');
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < 64 && r == ncclSuccess; ++i)
    r = server.sendAll(big.data(), big.size(), 5, nullptr, "the test client");
  EXPECT_EQ(r, ncclRemoteError);
  clearPendingError();
}

TEST(Socket, RecvTimesOut) {
  clearPendingError();
  Socket client, server;
  connectedPair(&client, &server);
  char buf[4];
  auto t0 = Clock::now();
  EXPECT_EQ(server.recvAll(buf, sizeof(buf), 0.2, nullptr, "client"), ncclRemoteError);
  EXPECT_LT(secondsSince(t0), 2.0);
  clearPendingError();
}

TEST(Socket, MoveTransfersOwnership) {
  Socket a, b;
  connectedPair(&a, &b);
  int fd = a.fd();
  Socket c(std::move(a));
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(c.fd(), fd);
  Socket d;
  d = std::move(c);
  EXPECT_EQ(d.fd(), fd);
  d.close();
  d.close();  // idempotent
  EXPECT_FALSE(d.valid());
}

}  // namespace
}  // namespace braid
