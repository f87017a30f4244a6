// Core unit tests: parameter parsing, log level/subsystem parsing and line format, error recording
// (first failure wins inside a scope), and the Waiter's abort and timeout behaviour.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/peer_info.h"
#include "core/peer_watch.h"
#include "core/result.h"
#include "core/wait.h"
#include "runtime/comm.h"

using namespace braid;

// The FIFO default where NCCL_BUFFSIZE is unset: 16 MiB on 8 channels or fewer and 8 MiB on 9-16 where every
// rank's ring neighbours are GPU P2P over NVLink, 512 KiB where a ring goes through host shared memory, else
// 4 MiB (a host comm, PCIe, sockets).
TEST(Params, FifoDefaultGrowsOnlyForFewP2pChannels) {
  const FifoPath nvl = FifoPath::kNvlink;
  for (int ch : {1, 4, 8}) EXPECT_EQ(agreedFifoBytes(ch, nvl), int64_t{16} << 20) << ch;
  for (int ch : {9, 12, 16}) EXPECT_EQ(agreedFifoBytes(ch, nvl), int64_t{8} << 20) << ch;
  for (int ch : {17, 24, 32, 64}) EXPECT_EQ(agreedFifoBytes(ch, nvl), int64_t{4} << 20) << ch;
  for (int ch = 1; ch <= 64; ++ch) {
    EXPECT_EQ(agreedFifoBytes(ch, FifoPath::kOther), int64_t{4} << 20) << ch;
    EXPECT_EQ(agreedFifoBytes(ch, FifoPath::kShm), int64_t{512} << 10) << ch;
    // Few channels take no more FIFO memory than 32 channels of the default.
    EXPECT_LE(ch * agreedFifoBytes(ch, nvl), std::max(32, ch) * kDefaultFifoBytes) << ch;
  }
}

// Rings through host shared memory run fewer channels the more ranks share the host: the node's FIFOs in host
// memory stay near 32 MiB at the default size, and never under 4 channels.
TEST(Params, ShmRingChannelsShrinkWithRanksOnTheHost) {
  EXPECT_EQ(shmRingChannels(1), 64);
  EXPECT_EQ(shmRingChannels(2), 32);
  EXPECT_EQ(shmRingChannels(4), 16);
  EXPECT_EQ(shmRingChannels(8), 8);
  EXPECT_EQ(shmRingChannels(16), 4);
  EXPECT_EQ(shmRingChannels(64), 4);
  for (int n = 1; n <= 16; ++n) EXPECT_LE(shmRingChannels(n) * n * kShmFifoBytes, int64_t{64} << 20) << n;
}

// The channel and FIFO agreement from every rank's offer (mergeChannelOffers; rank 0's first): the fewest
// channels; rank 0's NCCL_BUFFSIZE where it set one, whatever the others set; else the default for the agreed
// channels, larger only where every rank's ring is NVLink.
TEST(Params, ChannelOffersMergeAlikeOnEveryRank) {
  const int64_t MiB = int64_t{1} << 20;
  {
    const ChannelOffer all[] = {{64, -1, 1}, {8, -1, 1}};  // rank 1 bounded to 8: 8 channels, 16 MiB
    const ChannelAgreement got = mergeChannelOffers(all, 2);
    EXPECT_EQ(got.channels, 8);
    EXPECT_EQ(got.buffBytes, 16 * MiB);
    EXPECT_TRUE(got.buffDefaulted);
  }
  {
    const ChannelOffer all[] = {{8, -1, 1}, {8, 4 * MiB, 1}};  // rank 1's own setting does not hold
    const ChannelAgreement got = mergeChannelOffers(all, 2);
    EXPECT_EQ(got.buffBytes, 16 * MiB);
    EXPECT_TRUE(got.buffDefaulted);
  }
  {
    const ChannelOffer all[] = {{8, 2 * MiB, 1}, {8, -1, 1}, {8, 4 * MiB, 1}};  // rank 0's does
    const ChannelAgreement got = mergeChannelOffers(all, 3);
    EXPECT_EQ(got.buffBytes, 2 * MiB);
    EXPECT_FALSE(got.buffDefaulted);
  }
  {
    const ChannelOffer all[] = {{12, -1, 1}, {12, -1, 0}, {16, -1, 1}};  // one rank's ring is not NVLink
    const ChannelAgreement got = mergeChannelOffers(all, 3);
    EXPECT_EQ(got.channels, 12);
    EXPECT_EQ(got.buffBytes, 4 * MiB);
  }
  {
    const ChannelOffer all[] = {{16, -1, 1}, {16, -1, 2}, {16, -1, 1}};  // one rank's ring goes through SHM
    EXPECT_EQ(mergeChannelOffers(all, 3).buffBytes, MiB / 2);
  }
  {
    const ChannelOffer all[] = {{16, 2 * MiB, 2}, {16, -1, 2}};  // rank 0's NCCL_BUFFSIZE still holds
    EXPECT_EQ(mergeChannelOffers(all, 2).buffBytes, 2 * MiB);
  }
  {
    const ChannelOffer all[] = {{4, -1, 2}, {4, -1, 3}, {4, -1, 2}};  // and a network link: the default
    EXPECT_EQ(mergeChannelOffers(all, 3).buffBytes, 4 * MiB);
  }
  {
    const ChannelOffer all[] = {{16, -1, 1}, {12, -1, 1}};
    EXPECT_EQ(mergeChannelOffers(all, 2).buffBytes, 8 * MiB);
  }
  {
    const ChannelOffer one[] = {{0, -1, 0}};  // never fewer than one channel
    EXPECT_EQ(mergeChannelOffers(one, 1).channels, 1);
  }
}

TEST(Params, IntParsingAndDefaults) {
  unsetenv("NCCL_BUFFSIZE");
  EXPECT_EQ(params::BuffSize(), 4 << 20);
  setenv("NCCL_BUFFSIZE", "65536", 1);
  EXPECT_EQ(params::BuffSize(), 65536);
  setenv("NCCL_BUFFSIZE", "0x1000", 1);
  EXPECT_EQ(params::BuffSize(), 4096);
  setenv("NCCL_BUFFSIZE", "12abc", 1);  // malformed: default, with a warning
  EXPECT_EQ(params::BuffSize(), 4 << 20);
  // What the FIFOs and the tuner use: the raw value inside [64 KiB, 2 GiB], else 4 MiB.
  for (const char* v : {"0x1000", "65535", "0", "-5", "4294967296"}) {
    setenv("NCCL_BUFFSIZE", v, 1);
    EXPECT_EQ(buffSizeBytes(false), 4 << 20) << v;
  }
  for (const char* v : {"65536", "1048576", "2147483648"}) {
    setenv("NCCL_BUFFSIZE", v, 1);
    EXPECT_EQ(buffSizeBytes(false), strtoll(v, nullptr, 0)) << v;
  }
  unsetenv("NCCL_BUFFSIZE");
  EXPECT_FALSE(buffSizeSet());
  setenv("NCCL_BUFFSIZE", "", 1);
  EXPECT_FALSE(buffSizeSet());  // empty: unset, as readIntEnv reads it
  setenv("NCCL_BUFFSIZE", "4194304", 1);
  EXPECT_TRUE(buffSizeSet());  // set, even to the default: it holds as given
  unsetenv("NCCL_BUFFSIZE");
  setenv("NCCL_SOCKET_IFNAME", "^lo,docker", 1);
  EXPECT_EQ(params::SocketIfname(), "^lo,docker");
  unsetenv("NCCL_SOCKET_IFNAME");
}

TEST(Params, TableListsEveryParameterOnce) {
  int n = 0;
  const ParamDesc* t = paramTable(&n);
  ASSERT_GT(n, 20);
  std::set<std::string> envs;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(envs.insert(t[i].env).second) << "duplicate " << t[i].env;
    EXPECT_TRUE(std::string(t[i].env).rfind("NCCL_", 0) == 0 || std::string(t[i].env).rfind("BRAID_", 0) == 0);
  }
  EXPECT_TRUE(envs.count("NCCL_PROTO"));
  EXPECT_TRUE(envs.count("BRAID_BOOTSTRAP_TIMEOUT"));
}

TEST(Log, LevelAndSubsysParsing) {
  EXPECT_EQ(parseLogLevel("WARN"), LogLevel::Warn);
  EXPECT_EQ(parseLogLevel("info"), LogLevel::Info);
  EXPECT_EQ(parseLogLevel("TRACE"), LogLevel::Trace);
  EXPECT_EQ(parseLogLevel("VERSION"), LogLevel::Version);
  EXPECT_EQ(parseLogLevel("bogus"), LogLevel::None);
  EXPECT_EQ(parseSubsysMask("INIT,NET"), kSubInit | kSubNet);
  EXPECT_EQ(parseSubsysMask("^INIT"), ~static_cast<uint64_t>(kSubInit));
  EXPECT_EQ(parseSubsysMask("ALL"), static_cast<uint64_t>(kSubAll));
  EXPECT_EQ(parseSubsysMask("coll,tuning"), kSubColl | kSubTuning);
}

// A forked child reads NCCL_DEBUG_FILE again at its next line: one that set its own logs there (a test harness's
// rank, a worker given its own file), one that did not keeps writing to the parent's file after the parent's lines,
// which stay (the file is not reopened, so not truncated).
TEST(Log, ForkedChildTakesItsOwnFileOrKeepsTheParents) {
  char dir[] = "/tmp/braid_logfork_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string parentLog = std::string(dir) + "/parent", childLog = std::string(dir) + "/child";
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT", 1);
  setenv("NCCL_DEBUG_FILE", parentLog.c_str(), 1);
  resetLogging();
  BRAID_INFO(kSubInit, "parent line before fork");
  for (bool own : {true, false}) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (own) setenv("NCCL_DEBUG_FILE", childLog.c_str(), 1);
      BRAID_INFO(kSubInit, "child line %s", own ? "own" : "shared");
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  BRAID_INFO(kSubInit, "parent line after fork");
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
  unsetenv("NCCL_DEBUG_FILE");
  resetLogging();
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  const std::string parent = read(parentLog), child = read(childLog);
  unlink(parentLog.c_str());
  unlink(childLog.c_str());
  rmdir(dir);
  EXPECT_NE(child.find("child line own"), std::string::npos) << child;
  EXPECT_EQ(child.find("parent line"), std::string::npos) << child;
  EXPECT_EQ(parent.find("child line own"), std::string::npos) << parent;
  const size_t before = parent.find("parent line before fork"), shared = parent.find("child line shared"),
               after = parent.find("parent line after fork");
  EXPECT_NE(before, std::string::npos) << parent;
  EXPECT_NE(shared, std::string::npos) << parent;
  EXPECT_NE(after, std::string::npos) << parent;
  EXPECT_LT(before, shared) << parent;
  EXPECT_LT(shared, after) << parent;
}

TEST(Log, FileHasHostPidRankAndRespectsSubsys) {
  char path[] = "/tmp/braid_log_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "NET", 1);
  setenv("NCCL_DEBUG_FILE", path, 1);
  resetLogging();
  {
    RankTag tag(3);
    BRAID_INFO(kSubNet, "net line %d", 42);
    BRAID_INFO(kSubInit, "init line should be filtered");
    BRAID_WARN("warn line");
  }
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
  unsetenv("NCCL_DEBUG_FILE");
  resetLogging();
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  unlink(path);
  EXPECT_NE(text.find("net line 42"), std::string::npos) << text;
  EXPECT_EQ(text.find("init line"), std::string::npos) << text;
  EXPECT_NE(text.find("warn line"), std::string::npos) << text;
  EXPECT_NE(text.find("[rank 3] BRAID INFO"), std::string::npos) << text;
  EXPECT_NE(text.find(":" + std::to_string(getpid()) + ":"), std::string::npos) << text;
}

// Ranks of one job often share one stderr (a pipe to a launcher or a log collector). Each line must reach it
// in one write, or lines of different processes interleave mid-line: glibc 2.39 (Ubuntu) writes an fprintf to
// the unbuffered stderr 128 bytes at a time, which splits the init lines of two ranks; glibc 2.36 writes such a
// line whole, so a logger relying on fprintf passes there. This case catches the split wherever glibc splits.
namespace {
// The children and pipe ends of the case below: whatever way the case ends, the children are started (so none
// waits on `go` forever), then killed if still running, and reaped.
struct LogKids {
  int fds[2] = {-1, -1}, go[2] = {-1, -1};
  std::vector<pid_t> pids;
  void closeFd(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  ~LogKids() {
    closeFd(go[1]);
    closeFd(go[0]);
    closeFd(fds[0]);
    closeFd(fds[1]);
    for (pid_t pid : pids) {
      if (pid <= 0) continue;  // reaped already (kill(-1) would reach every process we may signal)
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};
}  // namespace

TEST(Log, LongLinesOfConcurrentProcessesNeverInterleave) {
  constexpr int kProcs = 3, kLines = 1500;
  LogKids k;
  int* fds = k.fds;
  int* go = k.go;
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(pipe(go), 0);  // the children start together, when the parent closes it
  for (int c = 0; c < kProcs; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      close(go[1]);
      char b;
      while (read(go[0], &b, 1) < 0 && errno == EINTR) {
      }
      setenv("NCCL_DEBUG", "WARN", 1);
      unsetenv("NCCL_DEBUG_FILE");
      resetLogging();
      const std::string payload(300 + 40 * c, static_cast<char>('a' + c));
      for (int k = 0; k < kLines; ++k) BRAID_WARN("child %d line %d %s end", c, k, payload.c_str());
      _exit(0);
    }
    k.pids.push_back(pid);
  }
  k.closeFd(fds[1]);
  k.closeFd(go[0]);
  k.closeFd(go[1]);
  std::string all;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, 1000);
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the children still write after 60 s";
    if (ready <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0) << strerror(errno);
    all.append(buf, static_cast<size_t>(n));
  }
  for (pid_t& pid : k.pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    pid = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  k.pids.clear();
  std::vector<int> next(kProcs, 0);
  int bad = 0;
  std::istringstream in(all);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(" BRAID WARN child ");
    int c = -1, k = -1;
    if (at == std::string::npos || sscanf(line.c_str() + at, " BRAID WARN child %d line %d", &c, &k) != 2 || c < 0 ||
        c >= kProcs) {
      if (++bad <= 3) ADD_FAILURE() << "a broken line: " << line.substr(0, 200);
      continue;
    }
    const std::string want = "child " + std::to_string(c) + " line " + std::to_string(k) + " " +
                             std::string(300 + 40 * c, static_cast<char>('a' + c)) + " end";
    if (line.compare(at + 12, std::string::npos, want) != 0 || k != next[c]) {
      if (++bad <= 3)
        ADD_FAILURE() << "child " << c << " line " << k << " (expected " << next[c]
                      << ") is not whole: " << line.substr(0, 200);
    }
    next[c] = k + 1;
  }
  EXPECT_EQ(bad, 0);
  for (int c = 0; c < kProcs; ++c) EXPECT_EQ(next[c], kLines) << "child " << c;
}

TEST(Errors, FirstFailureWinsInsideScope) {
  ErrorScope scope;
  EXPECT_EQ(recordError(ncclSystemError, "open(%s) failed", "/dev/shm/x"), ncclSystemError);
  EXPECT_EQ(recordError(ncclInternalError, "outer context"), ncclInternalError);
  EXPECT_EQ(pendingError(), "open(/dev/shm/x) failed");
  EXPECT_EQ(threadLastError(), "open(/dev/shm/x) failed");
  {
    ErrorScope inner;
    EXPECT_TRUE(pendingError().empty());
    recordError(ncclRemoteError, "inner");
    EXPECT_EQ(pendingError(), "inner");
  }
  EXPECT_EQ(pendingError(), "open(/dev/shm/x) failed");
  EXPECT_STREQ(errorString(ncclRemoteError), "remote process exited or there was a network error");
}

TEST(Wait, AbortFlagEndsWaitPromptly) {
  std::atomic<uint32_t> abortFlag{0};
  WaitContext ctx;
  ctx.abortFlag = &abortFlag;
  ctx.timeoutSec = 30;
  ErrorScope scope;
  Waiter w(&ctx, 1, "data from rank 1");
  auto start = std::chrono::steady_clock::now();
  ncclResult_t res = ncclSuccess;
  for (int i = 0; res == ncclSuccess; ++i) {
    if (i == 1000) abortFlag.store(1);
    res = w.poll();
  }
  EXPECT_NE(res, ncclSuccess);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_NE(pendingError().find("aborted"), std::string::npos) << pendingError();
}

TEST(Wait, TimeoutNamesPeerAndWhat) {
  WaitContext ctx;
  ctx.timeoutSec = 0.2;
  ErrorScope scope;
  Waiter w(&ctx, 2, "credits from rank 2");
  ncclResult_t res = ncclSuccess;
  while (res == ncclSuccess) res = w.poll();
  EXPECT_EQ(res, ncclRemoteError);
  EXPECT_NE(pendingError().find("rank 2"), std::string::npos) << pendingError();
  EXPECT_NE(pendingError().find("credits from rank 2"), std::string::npos) << pendingError();
}

// Rank 0 = this process, rank 1 = `child` on the same host: a two-rank peer table for liveness tests.
static std::vector<PeerInfo> selfAndChild(pid_t child) {
  std::vector<PeerInfo> peers(2);
  fillLocalPeerInfo(&peers[0]);
  peers[1] = peers[0];
  peers[0].rank = 0;
  peers[1].rank = 1;
  peers[1].pid = child;
  return peers;
}

TEST(Wait, DeadPeerDetectedByPid) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  usleep(100 * 1000);  // child is now a zombie (not reaped): must still count as dead
  std::vector<PeerInfo> peers = selfAndChild(child);
  const PeerInfo me = peers[0];
  EXPECT_FALSE(peerProcessAlive(me, peers[1]));
  WaitContext ctx;
  ctx.self = &peers[0];
  ctx.peers = &peers;
  ctx.timeoutSec = 30;
  ErrorScope scope;
  Waiter w(&ctx, 1, "data from rank 1");
  auto start = std::chrono::steady_clock::now();
  ncclResult_t res = ncclSuccess;
  while (res == ncclSuccess) res = w.poll();
  EXPECT_EQ(res, ncclRemoteError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_NE(pendingError().find("rank 1"), std::string::npos) << pendingError();
  int status;
  waitpid(child, &status, 0);
  EXPECT_TRUE(peerProcessAlive(me, me));
}

// Out of descriptors (EMFILE) is this process's shortage, not the peer's death: a live peer whose
// /proc/<pid>/stat cannot be opened still counts as alive. Before, the failed open read as an empty stat
// line and a live peer was reported gone (a flood of connections to a bootstrap listener caused it).
TEST(Wait, OutOfDescriptorsDoesNotMakeALivePeerGone) {
  pid_t peer = fork();
  if (peer == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(peer, 0);
  pid_t checker = fork();
  if (checker == 0) {
    // In a child, so the lowered limit and the filled table die with it.
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(3);
    while (::open("/dev/null", O_RDONLY) >= 0) {
    }
    if (errno != EMFILE) _exit(4);
    std::vector<PeerInfo> peers = selfAndChild(peer);
    WaitContext ctx;
    ctx.self = &peers[0];
    ctx.peers = &peers;
    _exit(peerProcessAlive(peers[0], peers[1]) && checkPeersAlive(&ctx) == ncclSuccess ? 0 : 1);
  }
  ASSERT_GT(checker, 0);
  int status = 0;
  ASSERT_EQ(waitpid(checker, &status, 0), checker);
  kill(peer, SIGKILL);
  waitpid(peer, nullptr, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a live peer was called gone while out of descriptors; 3/4: setup";
}

// The parser behind liveness: a process inside exit (PF_EXITING, 0x4) has already closed its sockets, so
// it counts as gone before it is a zombie; a command name with ") " in it must not shift the fields.
TEST(Wait, ProcStatExitingCountsAsGone) {
  EXPECT_FALSE(procStatSaysExiting("4242 (rank) S 1 4242 4242 0 -1 4194560 120 0 0 0"));
  EXPECT_TRUE(procStatSaysExiting("4242 (rank) R 1 4242 4242 0 -1 4194564 120 0 0 0"));
  EXPECT_TRUE(procStatSaysExiting("4242 (rank) D 1 4242 4242 0 -1 4 120 0 0 0"));
  EXPECT_TRUE(procStatSaysExiting("4242 (rank) Z 1 4242 4242 0 -1 4194560 120 0 0 0"));
  EXPECT_TRUE(procStatSaysExiting("4242 (rank) X 1 4242 4242 0 -1 0 120 0 0 0"));
  EXPECT_FALSE(procStatSaysExiting("4242 (a) R 1 (b) S 1 4242 4242 0 -1 4194560 1"));
  EXPECT_TRUE(procStatSaysExiting("4242 (a) Z (b) R 1 4242 4242 0 -1 4194564 1"));
  EXPECT_FALSE(procStatSaysExiting("4242 (truncated"));
  EXPECT_FALSE(procStatSaysExiting(""));
  // This process is alive and not exiting.
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)getpid());
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  ASSERT_FALSE(line.empty());
  EXPECT_FALSE(procStatSaysExiting(line)) << line;
}

// PeerWatch: a child process (rank 1) stays alive for a while, then exits; the watch fires once, after the
// exit and the grace, with a message naming rank 1 and its pid, and never while the child lives.
TEST(PeerWatch, FiresOnceWhenAPeerDies) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  if (child == 0) {
    close(pipefd[1]);
    char c;
    while (read(pipefd[0], &c, 1) < 0 && errno == EINTR) {
    }
    _exit(0);  // parent closed the pipe: exit
  }
  ASSERT_GT(child, 0);
  close(pipefd[0]);
  std::vector<PeerInfo> peers = selfAndChild(child);
  WaitContext ctx;
  ctx.self = &peers[0];
  ctx.peers = &peers;
  std::mutex mu;
  std::vector<std::string> messages;
  std::chrono::steady_clock::time_point firedAt{};
  {
    PeerWatch watch(&ctx, [&](int rank, const std::string& m) {
      std::lock_guard<std::mutex> lk(mu);
      EXPECT_EQ(rank, 1);
      messages.push_back(m);
      firedAt = std::chrono::steady_clock::now();
    }, std::chrono::milliseconds(20), std::chrono::milliseconds(100));
    usleep(300 * 1000);
    EXPECT_FALSE(watch.fired()) << "the peer is alive";
    const auto exitAt = std::chrono::steady_clock::now();
    close(pipefd[1]);  // the child exits (and stays a zombie: still dead to the watch)
    for (int i = 0; i < 200 && !watch.fired(); ++i) usleep(10 * 1000);
    ASSERT_TRUE(watch.fired());
    std::lock_guard<std::mutex> lk(mu);
    EXPECT_GE(firedAt - exitAt, std::chrono::milliseconds(100)) << "grace honoured";
    EXPECT_LT(firedAt - exitAt, std::chrono::seconds(2));
  }
  EXPECT_TRUE(PeerWatch::observable(&ctx));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("rank 1"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("pid " + std::to_string(child)), std::string::npos) << messages[0];
  int status;
  waitpid(child, &status, 0);
}

TEST(PeerWatch, StopsPromptlyWithLivePeers) {
  PeerInfo me{};
  fillLocalPeerInfo(&me);
  std::vector<PeerInfo> peers{me};
  WaitContext ctx;
  ctx.self = &peers[0];
  ctx.peers = &peers;
  EXPECT_FALSE(PeerWatch::observable(&ctx)) << "only ourselves";
  const auto t0 = std::chrono::steady_clock::now();
  {
    PeerWatch watch(&ctx, [](int, const std::string&) { ADD_FAILURE() << "no peer died"; },
                    std::chrono::milliseconds(10000), std::chrono::milliseconds(100));
    usleep(50 * 1000);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "the destructor wakes the thread";
}
