// Tests of the braidrun launcher as a black box: exit statuses, killing the other ranks when one fails,
// the --prefix line forwarding, the environment each rank gets, --timeout and signal forwarding. The ranks
// are /bin/sh -c snippets. BRAIDRUN (set by ctest) points at the binary; without it the tests skip.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sched.h>

#include <set>

namespace {

using Clock = std::chrono::steady_clock;

struct RunResult {
  int exitCode = -1;   // exit status, or 128+signal if braidrun itself died by a signal
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

// A running braidrun whose stdout+stderr go to one pipe.
class BraidrunProcess {
 public:
  BraidrunProcess(const std::vector<std::string>& args, const std::map<std::string, const char*>& env) {
    const char* bin = std::getenv("BRAIDRUN");
    int fds[2];
    if (::pipe(fds) != 0) std::abort();
    start_ = Clock::now();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      for (const auto& [name, value] : env) {
        if (value) {
          ::setenv(name.c_str(), value, 1);
        } else {
          ::unsetenv(name.c_str());
        }
      }
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(bin));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(bin, argv.data());
      _exit(126);
    }
    ::close(fds[1]);
    readFd_ = fds[0];
  }
  ~BraidrunProcess() {
    if (readFd_ >= 0) ::close(readFd_);
  }
  BraidrunProcess(const BraidrunProcess&) = delete;
  BraidrunProcess& operator=(const BraidrunProcess&) = delete;

  pid_t pid() const { return pid_; }

  RunResult wait() {
    RunResult r;
    char buf[4096];
    ssize_t n;
    // EOF arrives once braidrun and every rank (which share its output without --prefix) are gone.
    while ((n = ::read(readFd_, buf, sizeof(buf))) != 0) {
      if (n > 0) r.output.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
  }

 private:
  pid_t pid_ = -1;
  int readFd_ = -1;
  Clock::time_point start_;
};

RunResult runBraidrun(const std::vector<std::string>& args, const std::map<std::string, const char*>& env = {}) {
  BraidrunProcess p(args, env);
  return p.wait();
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class BraidrunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("BRAIDRUN");
    if (!bin || ::access(bin, X_OK) != 0) GTEST_SKIP() << "BRAIDRUN does not name an executable braidrun";
  }
};

TEST_F(BraidrunTest, AllRanksSucceed) {
  RunResult r = runBraidrun({"-n", "4", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(BraidrunTest, SingleRankWithoutDoubleDash) {
  RunResult r = runBraidrun({"-n", "1", "/bin/sh", "-c", "echo hi"});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "hi\n");
}

TEST_F(BraidrunTest, RankCountSpellings) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-n3", "echo", "x"}, {"-np", "3", "echo", "x"}, {"--nranks=3", "--", "echo", "x"}}) {
    RunResult r = runBraidrun(args);
    EXPECT_EQ(r.exitCode, 0) << args[0] << ": " << r.output;
    EXPECT_EQ(r.output, "x\nx\nx\n") << args[0];
  }
}

TEST_F(BraidrunTest, OneFailingRankKillsTheOthersPromptly) {
  RunResult r = runBraidrun(
      {"-n", "4", "--", "/bin/sh", "-c", "if [ \"$BRAID_RANK\" = 2 ]; then sleep 0.2; exit 3; fi; sleep 30"});
  EXPECT_EQ(r.exitCode, 3) << r.output;
  EXPECT_LT(r.seconds, 5.0) << r.output;
  EXPECT_NE(r.output.find("braidrun: rank 2 exited with status 3"), std::string::npos) << r.output;
}

TEST_F(BraidrunTest, RankKilledBySignal) {
  RunResult r =
      runBraidrun({"-n", "3", "--", "/bin/sh", "-c", "if [ \"$BRAID_RANK\" = 1 ]; then kill -9 $$; fi; sleep 30"});
  EXPECT_EQ(r.exitCode, 128 + 9) << r.output;
  EXPECT_LT(r.seconds, 5.0) << r.output;
  EXPECT_NE(r.output.find("braidrun: rank 1 killed by signal 9"), std::string::npos) << r.output;
}

TEST_F(BraidrunTest, RanksIgnoringSigtermAreKilledAfterGrace) {
  // Rank 0 fails only after a pause, so the other rank has set its trap by the time SIGTERM comes.
  RunResult r = runBraidrun({"-n", "2", "--", "/bin/sh", "-c",
                             "trap '' TERM; if [ \"$BRAID_RANK\" = 0 ]; then sleep 0.3; exit 4; fi; sleep 30"});
  EXPECT_EQ(r.exitCode, 4) << r.output;
  EXPECT_GE(r.seconds, 1.5) << r.output;  // the SIGTERM grace period
  EXPECT_LT(r.seconds, 6.0) << r.output;
}

TEST_F(BraidrunTest, PrefixForwardsWholeLines) {
  // Each rank writes half a line, pauses (so the other ranks' output lands in between), then finishes it.
  RunResult r = runBraidrun({"--prefix", "-n", "3", "--", "/bin/sh", "-c",
                             "printf 'out-%s-' $BRAID_RANK; sleep 0.2; echo end; echo err-$BRAID_RANK >&2; "
                             "printf 'tail-%s' $BRAID_RANK"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::set<std::string> got;
  for (const std::string& l : lines(r.output)) got.insert(l);
  for (int rank = 0; rank < 3; ++rank) {
    std::string p = "[" + std::to_string(rank) + "] ";
    EXPECT_TRUE(got.count(p + "out-" + std::to_string(rank) + "-end")) << r.output;
    EXPECT_TRUE(got.count(p + "err-" + std::to_string(rank))) << r.output;
    EXPECT_TRUE(got.count(p + "tail-" + std::to_string(rank))) << r.output;  // unterminated last line
  }
  EXPECT_EQ(got.size(), 9u) << r.output;
}

TEST_F(BraidrunTest, PrefixShortFlagAndBigOutput) {
  // 20000 lines per rank: more than a pipe holds, so forwarding must keep up while the ranks run.
  RunResult r = runBraidrun({"-p", "-n", "2", "--", "/bin/sh", "-c", "seq 1 20000"});
  ASSERT_EQ(r.exitCode, 0) << r.output.substr(0, 2000);
  std::vector<std::string> all = lines(r.output);
  EXPECT_EQ(all.size(), 40000u);
  std::regex lineRe(R"(\[[01]\] [0-9]+)");
  for (const std::string& l : all) ASSERT_TRUE(std::regex_match(l, lineRe)) << l;
  EXPECT_EQ(std::count(all.begin(), all.end(), "[1] 20000"), 1);
}

TEST_F(BraidrunTest, EachRankGetsItsEnvironment) {
  const int n = 4;
  RunResult r = runBraidrun(
      {"-p", "-n", std::to_string(n), "--", "/bin/sh", "-c",
       "echo \"$BRAID_RANK $BRAID_NRANKS $BRAID_LOCAL_RANK $BRAID_LOCAL_NRANKS $NCCL_COMM_ID $BRAID_JOB_SECRET "
       "${BRAID_HOST_COMM-unset}\""},
      {{"BRAID_HOST_COMM", nullptr}, {"NCCL_COMM_ID", "10.9.9.9:1"}});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::regex re(R"(\[(\d+)\] (\d+) (\d+) (\d+) (\d+) 127\.0\.0\.1:(\d+) ([0-9a-f]{16}) unset)");
  std::set<int> ranks;
  std::set<std::string> ports, secrets;
  for (const std::string& l : lines(r.output)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, re)) << "unexpected line: " << l;
    EXPECT_EQ(m[1], m[2]);  // the prefix names the rank
    EXPECT_EQ(std::stoi(m[3]), n);
    EXPECT_EQ(m[2], m[4]);  // local rank = rank on one host
    EXPECT_EQ(std::stoi(m[5]), n);
    int port = std::stoi(m[6]);
    EXPECT_GT(port, 0);
    EXPECT_LT(port, 65536);
    ranks.insert(std::stoi(m[2]));
    ports.insert(m[6]);
    secrets.insert(m[7]);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(ports.size(), 1u);  // one job, one bootstrap root
  EXPECT_EQ(secrets.size(), 1u);
}

TEST_F(BraidrunTest, HostCommPassesThroughOnlyWhenSet) {
  RunResult r =
      runBraidrun({"-n", "2", "--", "/bin/sh", "-c", "echo ${BRAID_HOST_COMM-unset}"}, {{"BRAID_HOST_COMM", "1"}});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "1\n1\n");
}

TEST_F(BraidrunTest, TimeoutKillsAllAndExits124) {
  RunResult r = runBraidrun({"--timeout", "1", "-n", "2", "--", "/bin/sh", "-c", "sleep 30"});
  EXPECT_EQ(r.exitCode, 124) << r.output;
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 5.0) << r.output;
}

TEST_F(BraidrunTest, ForwardsSigterm) {
  BraidrunProcess p({"-n", "3", "--", "/bin/sh", "-c", "echo started; sleep 30"}, {});
  ::usleep(300 * 1000);
  ::kill(p.pid(), SIGTERM);
  RunResult r = p.wait();
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.output;
  EXPECT_LT(r.seconds, 5.0) << r.output;
}

TEST_F(BraidrunTest, MissingProgramExits127) {
  RunResult r = runBraidrun({"-n", "2", "--", "/nonexistent/braid-no-such-program"});
  EXPECT_EQ(r.exitCode, 127) << r.output;
  EXPECT_NE(r.output.find("cannot execute"), std::string::npos) << r.output;
}

TEST_F(BraidrunTest, BadFlagsPrintUsageAndExit2) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus", "-n", "2", "true"},
                                             {"-n", "0", "true"},
                                             {"-n", "abc", "true"},
                                             {"-n"},
                                             {"-n", "2"},
                                             {"--timeout", "-1", "-n", "2", "true"},
                                             {"--timeout", "1e10", "-n", "2", "true"},
                                             {"--bind", "socket", "-n", "2", "true"},
                                             {"--nodes", "3", "-n", "2", "true"},
                                             {"--nodes", "0", "-n", "2", "true"},
                                             {"--nodes=two", "-n", "2", "true"},
                                             {"--netns", "-n", "2", "true"},
                                             {"--netns=1", "--nodes", "2", "-n", "2", "true"},
                                             {"true"}}) {
    RunResult r = runBraidrun(args);
    EXPECT_EQ(r.exitCode, 2) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("usage: braidrun"), std::string::npos) << r.output;
  }
}

// A rank reading a terminal stops on SIGTTIN (ranks lead their own process groups): braidrun must say so and
// end the job at once, not hang until the timeout. Run under script(1) to have a terminal.
TEST_F(BraidrunTest, RankReadingTheTerminalFailsWithAMessage) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1) to make a terminal";
  const std::string cmd = "(sleep 1; echo hi) | script -qec \"" + std::string(std::getenv("BRAIDRUN")) +
                          " --timeout 30 -n 1 -- sh -c 'read x; echo got \\$x'\" /dev/null 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  FILE* f = ::popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), f)) out += buf;
  const int status = ::pclose(f);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 20.0) << "--timeout 30: the stopped rank must end the job at once\n" << out;
  EXPECT_NE(out.find("stopped on SIGTTIN"), std::string::npos) << out;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status << "\n" << out;
}

// --nodes K: contiguous blocks of ranks per node (rank r on node r*K/N), each node its own NCCL_HOSTID (the
// user's own value is replaced), local rank and size counted within the node.
TEST_F(BraidrunTest, NodesSplitRanksByHostId) {
  RunResult r = runBraidrun({"-p", "-n", "5", "--nodes", "2", "--", "/bin/sh", "-c",
                             "echo \"$BRAID_RANK $BRAID_NRANKS $NCCL_HOSTID $BRAID_LOCAL_RANK $BRAID_LOCAL_NRANKS\""},
                            {{"NCCL_HOSTID", "users-own"}});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::set<std::string> got;
  for (const std::string& l : lines(r.output)) got.insert(l);
  const std::set<std::string> want = {"[0] 0 5 braidrun-node0 0 3", "[1] 1 5 braidrun-node0 1 3",
                                      "[2] 2 5 braidrun-node0 2 3", "[3] 3 5 braidrun-node1 0 2",
                                      "[4] 4 5 braidrun-node1 1 2"};
  EXPECT_EQ(got, want) << r.output;
  // One node per rank, and without --nodes no NCCL_HOSTID is set.
  RunResult each = runBraidrun({"-p", "-n", "3", "--nodes=3", "--", "/bin/sh", "-c",
                                "echo \"$NCCL_HOSTID $BRAID_LOCAL_RANK $BRAID_LOCAL_NRANKS\""});
  ASSERT_EQ(each.exitCode, 0) << each.output;
  got.clear();
  for (const std::string& l : lines(each.output)) got.insert(l);
  EXPECT_EQ(got, (std::set<std::string>{"[0] braidrun-node0 0 1", "[1] braidrun-node1 0 1", "[2] braidrun-node2 0 1"}))
      << each.output;
  RunResult none =
      runBraidrun({"-n", "2", "--", "/bin/sh", "-c", "echo ${NCCL_HOSTID-unset}"}, {{"NCCL_HOSTID", nullptr}});
  EXPECT_EQ(none.output, "unset\nunset\n");
}

// braid_smoke (a host all-reduce, checked element by element) as 2 nodes x 2 ranks: the library must see two
// hosts, with SHM inside each and sockets between them.
std::string smokePath() {
  std::string bin = std::getenv("BRAIDRUN");
  return bin.substr(0, bin.rfind('/') + 1) + "braid_smoke";
}

TEST_F(BraidrunTest, NodesRunAJobOverSharedMemoryAndSockets) {
  if (::access(smokePath().c_str(), X_OK) != 0) GTEST_SKIP() << "no braid_smoke next to braidrun";
  RunResult r = runBraidrun({"--timeout", "120", "-n", "4", "--nodes", "2", "--", smokePath()},
                            {{"BRAID_HOST_COMM", "1"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT"},
                             {"NCCL_DEBUG_FILE", nullptr}, {"NCCL_HOSTID", nullptr}});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Ranks 0,1 on node 0 and 2,3 on node 1.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(rank 0 <-> rank 1 \([^)]*\): via SHM)"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(rank 1 <-> rank 2 \([^)]*\): via NET)"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(rank 3 <-> rank 0 \([^)]*\): via NET)"))) << r.output;
}

// --netns (root only): each node a network and UTS namespace of its own (a user's NCCL_HOSTID, which would make
// them one host again, is dropped); the job's root address is node 0's.
TEST_F(BraidrunTest, NetnsNodesHaveTheirOwnHostNameAndAddress) {
  RunResult r = runBraidrun({"-p", "-n", "4", "--nodes", "2", "--netns", "--", "/bin/sh", "-c",
                             "echo \"$BRAID_RANK $(hostname) $NCCL_COMM_ID ${NCCL_HOSTID-unset} $BRAID_LOCAL_RANK\"; "
                             "ip -o -4 addr show dev bed0 | awk '{print \"addr\", $4}'"},
                            {{"NCCL_HOSTID", "users-own"}});
  if (r.exitCode == 1 && r.output.find("cannot make the nodes' namespaces") != std::string::npos)
    GTEST_SKIP() << r.output;
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::set<std::string> got;
  std::string port;
  std::regex re(R"(\[(\d)\] (\d) (\S+) 10\.91\.0\.1:(\d+) unset (\d))");
  for (const std::string& l : lines(r.output)) {
    std::smatch m;
    if (std::regex_match(l, m, re)) {
      got.insert(m[1].str() + " " + m[3].str() + " " + m[5].str());
      port = m[4];
    } else {
      got.insert(l);
    }
  }
  const std::set<std::string> want = {"0 braid-node0 0",       "1 braid-node0 1",       "2 braid-node1 0",
                                      "3 braid-node1 1",       "[0] addr 10.91.0.1/24", "[1] addr 10.91.0.1/24",
                                      "[2] addr 10.91.0.2/24", "[3] addr 10.91.0.2/24"};
  EXPECT_EQ(got, want) << r.output;
  if (::access(smokePath().c_str(), X_OK) != 0) return;
  RunResult job = runBraidrun({"--timeout", "120", "-n", "4", "--nodes", "2", "--netns", "--", smokePath()},
                              {{"BRAID_HOST_COMM", "1"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT"},
                               {"NCCL_DEBUG_FILE", nullptr}, {"NCCL_HOSTID", nullptr},
                               {"NCCL_SOCKET_IFNAME", nullptr}});
  ASSERT_EQ(job.exitCode, 0) << job.output;
  EXPECT_TRUE(std::regex_search(job.output, std::regex(R"(rank 0 <-> rank 1 \(braid-node0, [^)]*\): via SHM)")))
      << job.output;
  EXPECT_TRUE(std::regex_search(job.output, std::regex(R"(rank 1 <-> rank 2 \(braid-node1, [^)]*\): via NET)")))
      << job.output;
}

TEST_F(BraidrunTest, HelpExits0) {
  RunResult r = runBraidrun({"-h"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.output.rfind("usage: braidrun", 0), 0u) << r.output;
}

}  // namespace

namespace {
// The CPUs of a /proc Cpus_allowed_list value ("0-3,8").
std::set<int> cpuList(const std::string& text) {
  std::set<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    int a = std::stoi(part.substr(0, dash)), b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
    for (int c = a; c <= b; ++c) out.insert(c);
  }
  return out;
}
}  // namespace

// Default binding gives each rank its own equal slice of the CPUs when the job fits (one CPU each when ranks
// equal CPUs); a lone rank keeps them all; --bind none and oversubscribed jobs leave placement to the kernel.
TEST_F(BraidrunTest, BindsRanksToDistinctCpusWhenTheyFit) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  const int cpus = CPU_COUNT(&mine);
  const std::string show = "grep Cpus_allowed_list /proc/self/status | cut -f2";
  if (cpus >= 2) {
    RunResult r = runBraidrun({"-n", "2", "--prefix", "--", "/bin/sh", "-c", show});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::vector<std::set<int>> sets;
    for (const std::string& l : lines(r.output)) {
      sets.push_back(cpuList(l.substr(l.find("] ") + 2)));
      EXPECT_EQ(static_cast<int>(sets.back().size()), cpus / 2) << "a rank's slice: " << l;
    }
    ASSERT_EQ(sets.size(), 2u) << r.output;
    for (int c : sets[0]) EXPECT_EQ(sets[1].count(c), 0u) << "CPU " << c << " in both slices: " << r.output;
  }
  RunResult lone = runBraidrun({"-n", "1", "--", "/bin/sh", "-c", show});
  ASSERT_EQ(lone.exitCode, 0) << lone.output;
  EXPECT_EQ(static_cast<int>(cpuList(lines(lone.output).at(0)).size()), cpus) << "a lone rank keeps every CPU";
  RunResult none = runBraidrun({"-n", "2", "--bind", "none", "--", "/bin/sh", "-c", show});
  ASSERT_EQ(none.exitCode, 0) << none.output;
  RunResult self = runBraidrun({"-n", "1", "--bind", "none", "--", "/bin/sh", "-c", show});
  for (const std::string& l : lines(none.output)) EXPECT_EQ(l, lines(self.output).at(0)) << none.output;
  RunResult over = runBraidrun({"-n", std::to_string(cpus + 1), "--", "/bin/sh", "-c", show});
  ASSERT_EQ(over.exitCode, 0) << over.output;
  for (const std::string& l : lines(over.output)) EXPECT_EQ(l, lines(self.output).at(0)) << over.output;
}
