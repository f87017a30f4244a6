// Bootstrap from the outside: connections to the root that do not prove the id's key (garbage, a wrong
// secret, silence, an immediate close) while an init is under way must not disturb it; ranks in two
// network namespaces joined by a veth pair bootstrap and run collectives over sockets (root only).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

constexpr uint64_t kBraidIdMagic = 0x4272616964496432ull;  // "BraidId2" (src/core/bootstrap.h)

bool idAddress(const ncclUniqueId& id, sockaddr_storage* ss, socklen_t* len, std::string* why) {
  mp::UniqueIdLayout lay;
  std::memcpy(&lay, id.internal, sizeof lay);
  if (lay.magic != kBraidIdMagic) {
    *why = "unique id magic is not BraidId2 (layout changed?)";
    return false;
  }
  if (lay.addrLen != sizeof(sockaddr_in) && lay.addrLen != sizeof(sockaddr_in6)) {
    *why = "unique id addrLen " + std::to_string(lay.addrLen);
    return false;
  }
  std::memset(ss, 0, sizeof *ss);
  std::memcpy(ss, lay.addr, lay.addrLen);
  *len = lay.addrLen;
  return true;
}

std::string addrString(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) inet_ntop(AF_INET, &((const sockaddr_in&)ss).sin_addr, buf, sizeof buf);
  if (ss.ss_family == AF_INET6) inet_ntop(AF_INET6, &((const sockaddr_in6&)ss).sin6_addr, buf, sizeof buf);
  return buf;
}

int connectTo(const sockaddr_storage& ss, socklen_t len) {
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (const sockaddr*)&ss, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void simpleCollectives(ncclComm_t comm, const mp::RankCtx& ctx) {
  Case c;
  c.coll = Coll::kAllReduce;
  c.dt = ncclFloat32;
  c.count = 100003;
  EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
  c.coll = Coll::kAllGather;
  c.dt = ncclInt32;
  c.count = 1001;
  EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
  c.coll = Coll::kSendRecvRing;
  c.dt = ncclUint8;
  c.count = 65537;
  EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
}

// NCCL_SOCKET_FAMILY=AF_INET6 on loopback: the bootstrap root (rank 0 makes the id, so its address is
// IPv6), the ranks' listeners and the socket transport all run over ::1. Skips where lo has no ::1.
TEST(Bootstrap, Ipv6OnlyOverLoopback) {
  if (system("grep -q ' lo$' /proc/net/if_inet6 2>/dev/null") != 0) GTEST_SKIP() << "loopback has no IPv6 address";
  mp::Options o;
  o.idSource = mp::IdSource::kRank0;
  o.env = {{"NCCL_SOCKET_FAMILY", "AF_INET6"}, {"NCCL_SOCKET_IFNAME", "=lo"}, {"NCCL_SHM_DISABLE", "1"},
           {"BRAID_HOST_COMM", "1"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank));
    simpleCollectives(comm, ctx);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

TEST(Bootstrap, WrongSecretConnectionsDoNotBreakInit) {
  std::vector<int> held;  // connections kept open until the ranks are done
  std::string hookError;
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_BOOTSTRAP_TIMEOUT", "20"}};
  o.parentHook = [&](const ncclUniqueId& id) {
    sockaddr_storage ss;
    socklen_t len;
    if (!idAddress(id, &ss, &len, &hookError)) return;
    // 1. Garbage bytes.
    int g = connectTo(ss, len);
    if (g < 0) {
      hookError = std::string("cannot connect to the root at ") + addrString(ss) + ": " + strerror(errno);
      return;
    }
    std::vector<unsigned char> junk(4096);
    for (size_t i = 0; i < junk.size(); i++) junk[i] = (unsigned char)(i * 131 + 7);
    (void)!write(g, junk.data(), junk.size());
    held.push_back(g);
    // 2. Something shaped like a frame that carries the id magic but a wrong secret.
    int w = connectTo(ss, len);
    if (w >= 0) {
      uint64_t hdr[8] = {kBraidIdMagic, 0x0123456789abcdefull, 0, 1, 64, 0, 0, 0};
      (void)!write(w, hdr, sizeof hdr);
      held.push_back(w);
    }
    // 3. A silent connection (a root that waits on it would stall everyone).
    int s = connectTo(ss, len);
    if (s >= 0) held.push_back(s);
    // 4. Connect and close at once.
    int c = connectTo(ss, len);
    if (c >= 0) close(c);
    // 5. A huge length prefix.
    int h = connectTo(ss, len);
    if (h >= 0) {
      uint64_t big[2] = {~0ull, ~0ull};
      (void)!write(h, big, sizeof big);
      held.push_back(h);
    }
  };
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    if (ctx.rank == 1) usleep(1000000);  // the others are already inside init when the junk arrives
    ncclComm_t comm;
    double t0 = mp::nowSec();
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::note("init took %.2f s", mp::nowSec() - t0);
    simpleCollectives(comm, ctx);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  for (int fd : held) close(fd);
  EXPECT_TRUE(hookError.empty()) << hookError;
  EXPECT_GE(held.size(), 3u) << "the test could not open its junk connections";
  mp::expectAllPassed(r);
}

// A rank holding an id with the right root address but another secret (an id of another job, or a stale
// one) is refused with ncclInvalidArgument at once; the real init of everyone, that rank included, then
// succeeds.
TEST(Bootstrap, IdOfAnotherRootIsRejected) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_BOOTSTRAP_TIMEOUT", "20"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    if (ctx.rank == 1) {
      ncclUniqueId other = ctx.id;
      mp::UniqueIdLayout lay;
      std::memcpy(&lay, other.internal, sizeof lay);
      lay.key[0] ^= 0x55;
      std::memcpy(other.internal, &lay, sizeof lay);
      ncclComm_t bad = nullptr;
      mp::setStatus("init with another root's id");
      double t0 = mp::nowSec();
      ncclResult_t res = ncclCommInitRank(&bad, ctx.nranks, other, ctx.rank);
      double dt = mp::nowSec() - t0;
      std::string msg = mp::lastError(nullptr);
      mp::note("wrong-secret id: %s after %.2f s: %s", ncclGetErrorString(res), dt, msg.c_str());
      EXPECT_EQ(res, ncclInvalidArgument) << msg;
      EXPECT_LT(dt, 5.0) << "refused at once, not after the bootstrap timeout";
      EXPECT_TRUE(mp::containsCI(msg, "id")) << msg;
    }
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    simpleCollectives(comm, ctx);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// The process serving the bootstrap root dies after the other ranks sent their hellos: they must say that the
// root cannot be reached and may have died, not blame a wrong key, and fail well before the bootstrap timeout.
TEST(Bootstrap, DeadRootIsNotReportedAsAWrongKey) {
  mp::Options o;
  o.idSource = mp::IdSource::kRank0;  // the root thread lives in rank 0's process
  o.timeoutSec = 60;
  o.env = {{"BRAID_BOOTSTRAP_TIMEOUT", "20"}};
  const int root = 0;
  auto r = mp::runRanks(3, o, [&](mp::RankCtx& ctx) {
    if (ctx.rank == root) {
      mp::setStatus("serving the root; dies before joining");
      usleep(1500 * 1000);  // the others connect and send their hellos meanwhile
      raise(SIGKILL);
    }
    ncclComm_t comm = nullptr;
    mp::setStatus("init while the root's process dies");
    double t0 = mp::nowSec();
    ncclResult_t res = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    double dt = mp::nowSec() - t0;
    std::string msg = mp::lastError(nullptr);
    mp::note("init -> %s after %.2f s: %s", ncclGetErrorString(res), dt, msg.c_str());
    EXPECT_EQ(res, ncclRemoteError) << msg;
    EXPECT_TRUE(mp::containsCI(msg, "cannot reach the bootstrap root")) << msg;
    EXPECT_TRUE(mp::containsCI(msg, "may have died")) << msg;
    EXPECT_FALSE(mp::containsCI(msg, "key")) << "a dead root is not a wrong key: " << msg;
    EXPECT_LT(dt, 10.0) << msg;
    if (res == ncclSuccess && comm) ncclCommAbort(comm);
  });
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks) {
    if (rr.timedOut) ok = false;
    if (rr.rank == root ? rr.termSignal != SIGKILL : !(rr.exited && rr.exitCode == 0)) ok = false;
  }
  EXPECT_TRUE(ok) << r.describe();
  if (ok && getenv("MP_VERBOSE")) std::cout << r.describe();
}

// ---- network namespaces ----

int sh(const std::string& cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

struct NetnsPair {
  std::string a, b, why;
  bool ok = false;
  NetnsPair() {
    std::string suffix = std::to_string(getpid());
    a = "braidmpA" + suffix;
    b = "braidmpB" + suffix;
    if (geteuid() != 0) {
      why = "not running as root";
      return;
    }
    if (sh("ip -V") != 0) {
      why = "the ip tool (iproute2) is not available";
      return;
    }
    if (sh("ip netns add " + a) != 0 || sh("ip netns add " + b) != 0) {
      why = "ip netns add failed (no CAP_SYS_ADMIN or no netns support)";
      return;
    }
    const std::vector<std::string> cmds = {
        "ip link add vbr0 netns " + a + " type veth peer name vbr1 netns " + b,
        "ip -n " + a + " addr add 10.77.0.1/24 dev vbr0",
        "ip -n " + b + " addr add 10.77.0.2/24 dev vbr1",
        "ip -n " + a + " link set vbr0 up",
        "ip -n " + b + " link set vbr1 up",
        "ip -n " + a + " link set lo up",
        "ip -n " + b + " link set lo up",
    };
    for (auto& c : cmds) {
      if (sh(c) != 0) {
        why = "setup step failed: " + c;
        return;
      }
    }
    ok = true;
  }
  ~NetnsPair() {
    sh("ip netns del " + a);  // deleting a namespace removes its veth end, and with it the pair
    sh("ip netns del " + b);
  }
};

TEST(Bootstrap, TwoNetworkNamespacesOverVeth) {
  NetnsPair ns;
  if (!ns.ok) GTEST_SKIP() << "network namespace test skipped: " << ns.why;
  // The veth link needs a moment to come up (carrier).
  for (int i = 0; i < 50; i++) {
    if (sh("ip -n " + ns.a + " -o link show vbr0 | grep -q LOWER_UP") == 0 &&
        sh("ip -n " + ns.b + " -o link show vbr1 | grep -q LOWER_UP") == 0)
      break;
    usleep(100000);
  }
  mp::Options o;
  o.idSource = mp::IdSource::kRank0;  // the id (and root) must be made inside rank 0's namespace
  o.timeoutSec = 90;
  o.env = {{"NCCL_SOCKET_IFNAME", "vbr"},
           {"NCCL_SHM_DISABLE", "1"},
           {"BRAID_BOOTSTRAP_TIMEOUT", "30"},
           {"BRAID_TIMEOUT", "30"}};
  std::string nsA = ns.a, nsB = ns.b;
  o.childSetup = [nsA, nsB](int rank) {
    std::string path = "/var/run/netns/" + (rank == 0 ? nsA : nsB);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << "open " << path << ": " << strerror(errno);
    ASSERT_EQ(setns(fd, CLONE_NEWNET), 0) << "setns: " << strerror(errno);
    close(fd);
    ASSERT_NE(if_nametoindex(rank == 0 ? "vbr0" : "vbr1"), 0u) << "veth end not visible after setns";
  };
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    sockaddr_storage ss;
    socklen_t len;
    std::string why;
    ASSERT_TRUE(idAddress(ctx.id, &ss, &len, &why)) << why;
    EXPECT_EQ(addrString(ss), "10.77.0.1") << "NCCL_SOCKET_IFNAME=vbr: the root listens on rank 0's veth";
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    simpleCollectives(comm, ctx);
    Case c;
    c.coll = Coll::kAllReduce;
    c.dt = ncclBfloat16;
    c.opKind = ncclAvg;
    c.count = 300001;
    EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

}  // namespace
