// Bootstrap authentication and listener limits, from the outside: a job whose id was made from
// NCCL_COMM_ID without BRAID_JOB_SECRET says at init that it is unauthenticated, and a flood of idle
// connections to a rank's bootstrap listener neither breaks that rank's next operations nor makes it call
// a live peer gone. (A forged hello to the root of an ncclGetUniqueId id is tested in bootstrap_test.cc,
// which can speak the wire format.)
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

int freeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (sockaddr*)&a, sizeof a) != 0 || getsockname(fd, (sockaddr*)&a, &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool allReduceChecked(ncclComm_t comm, const mp::RankCtx& ctx) {
  Case c;
  c.coll = Coll::kAllReduce;
  c.dt = ncclInt32;
  c.count = 4099;
  return mp::runCase(comm, ctx.rank, ctx.nranks, c);
}

// Runs a 2-rank job whose ranks each make the id from NCCL_COMM_ID (as braidrun's programs do), with or
// without BRAID_JOB_SECRET, and returns what each rank's INFO log says about authentication.
void commIdJob(bool withSecret) {
  int port = freeLoopbackPort();
  ASSERT_GT(port, 0);
  char dir[] = "/tmp/braid_auth_logXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string logPattern = std::string(dir) + "/rank.%p.log";
  mp::Options o;
  o.idSource = mp::IdSource::kNone;
  o.env = {{"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(port)},
           {"NCCL_DEBUG", "INFO"},
           {"NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP"},
           {"NCCL_DEBUG_FILE", logPattern},
           {"BRAID_HOST_COMM", "1"},
           {"BRAID_BOOTSTRAP_TIMEOUT", "30"}};
  if (withSecret) o.env.push_back({"BRAID_JOB_SECRET", "mp-auth-test"});
  o.childSetup = [withSecret](int) {
    if (!withSecret) unsetenv("BRAID_JOB_SECRET");
  };
  auto r = mp::runRanks(2, o, [&](mp::RankCtx& ctx) {
    ncclUniqueId id;
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    ncclComm_t comm = nullptr;
    MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, id, ctx.rank));
    EXPECT_TRUE(allReduceChecked(comm, ctx));
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
    std::string path = std::string(dir) + "/rank." + std::to_string(getpid()) + ".log";
    std::string log = readFile(path);
    bool says = log.find("unauthenticated") != std::string::npos;
    if (withSecret)
      EXPECT_FALSE(says) << "a job with BRAID_JOB_SECRET was called unauthenticated:\n" << log;
    else
      EXPECT_TRUE(says) << "rank " << ctx.rank << " did not say at init that the job is unauthenticated; its log ("
                        << path << "):\n"
                        << log;
  });
  mp::expectAllPassed(r);
  (void)!system((std::string("rm -rf ") + dir).c_str());
}

TEST(BootstrapAuth, CommIdWithoutJobSecretSaysUnauthenticated) { commIdJob(false); }
TEST(BootstrapAuth, CommIdWithJobSecretIsNotCalledUnauthenticated) { commIdJob(true); }

// What rank 0 publishes for rank 1: the addresses of its listening TCP sockets (the bootstrap listener;
// the root runs in the parent), found through the descriptors of the process.
struct FloodShared {
  int nAddrs;
  sockaddr_storage addrs[8];
  socklen_t lens[8];
  int connected;  // idle connections rank 1 holds open
};

void publishListeners(FloodShared* sh) {
  for (int fd = 0; fd < 4096 && sh->nAddrs < 8; ++fd) {
    int acc = 0, type = 0;
    socklen_t l = sizeof acc;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l) != 0 || !acc) continue;
    l = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd, (sockaddr*)&ss, &len) != 0) continue;
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) continue;
    sh->addrs[sh->nAddrs] = ss;
    sh->lens[sh->nAddrs] = len;
    ++sh->nAddrs;
  }
}

// Opens idle connections (nonblocking connect, bounded) until `want` succeeded or connects stop working.
std::vector<int> flood(const sockaddr_storage& ss, socklen_t len, int want) {
  std::vector<int> fds;
  int failsInARow = 0;
  while ((int)fds.size() < want && failsInARow < 10) {
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) break;
    int rc = connect(fd, (const sockaddr*)&ss, len);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t el = sizeof err;
      if (poll(&p, 1, 200) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0) rc = 0;
    }
    if (rc == 0) {
      fds.push_back(fd);
      failsInARow = 0;
    } else {
      close(fd);
      ++failsInARow;
    }
  }
  return fds;
}

// 1,100 idle connections to rank 0's bootstrap listener, with rank 0 limited to 256 descriptors: before
// its listener capped unauthenticated connections, rank 0 took them all until accept failed with EMFILE,
// then its split failed with "Too many open files" and its liveness check called rank 1 gone.
TEST(BootstrapAuth, IdleConnectionFloodOnARankListenerDoesNotDisturbIt) {
  auto* sh = static_cast<FloodShared*>(mp::sharedAlloc(sizeof(FloodShared)));
  ASSERT_NE(sh, nullptr);
  mp::Options o;
  o.timeoutSec = 120;
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_BOOTSTRAP_TIMEOUT", "30"}, {"BRAID_TIMEOUT", "60"}};
  o.childSetup = [](int rank) {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rank == 0)
      rl.rlim_cur = 256;  // deterministic: the flood outnumbers the descriptors rank 0 may hold
    else
      rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;  // the flooder needs more than 1,100
    setrlimit(RLIMIT_NOFILE, &rl);
  };
  auto r = mp::runRanks(2, o, [sh](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    if (ctx.rank == 0) publishListeners(sh);
    EXPECT_TRUE(allReduceChecked(comm, ctx));  // also orders the publication before rank 1 reads it
    std::vector<int> held;
    if (ctx.rank == 1) {
      mp::setStatus("flooding rank 0's %d listener(s)", sh->nAddrs);
      ASSERT_GT(sh->nAddrs, 0) << "rank 0 has no listening socket to flood";
      for (int i = 0; i < sh->nAddrs; ++i) {
        auto fds = flood(sh->addrs[i], sh->lens[i], 1100);
        held.insert(held.end(), fds.begin(), fds.end());
      }
      sh->connected = (int)held.size();
      mp::note("rank 1 holds %zu idle connections to rank 0's %d listener(s)", held.size(), sh->nAddrs);
    }
    EXPECT_TRUE(allReduceChecked(comm, ctx));
    mp::setStatus("split after the flood");
    ncclComm_t sub = nullptr;
    ncclResult_t res = ncclCommSplit(comm, 0, ctx.rank, &sub, nullptr);
    std::string msg = mp::lastError(comm);
    EXPECT_EQ(res, ncclSuccess) << "split after the flood: " << msg;
    EXPECT_EQ(msg.find("gone"), std::string::npos) << "a live peer was reported gone: " << msg;
    if (res == ncclSuccess) {
      EXPECT_TRUE(allReduceChecked(sub, ctx));
      MP_NCCL_ASSERT(ncclCommDestroy(sub));
    }
    EXPECT_TRUE(allReduceChecked(comm, ctx));
    for (int fd : held) close(fd);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
  EXPECT_GE(sh->connected, 1000) << "the flood should have opened more than 1,000 connections";
}

}  // namespace
