// Several nodes on one machine (tests/mp/common/netbed.h): each node a network and UTS namespace with its own
// host name, joined through a bridge. Host communicators of 2-4 nodes x 1-2 ranks run every collective and
// datatype, with the algorithm as chosen and forced; the INFO log must show SHM inside a node, sockets between
// nodes, the peers' host names, and rings that cross each node boundary once. A node's link pulled (ip link
// set down) inside an all-reduce loop fails every rank with ncclRemoteError naming a peer. Root only: without
// namespaces every test skips with the reason.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mp/common/coll_cases.h"
#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "mp/common/netbed.h"
#include "nccl.h"

namespace {

// Ranks are dealt to nodes round-robin, so the nodes' ranks are not contiguous and a ring in rank order would
// cross node boundaries at every hop: the library has to reorder it.
int nodeOf(int rank, int nodes) { return rank % nodes; }

// What the logs of all ranks say about the job's wiring; adds failures for whatever disagrees with the bed.
void checkWiring(const mp::LogDir& logs, const mp::NetBed& bed, int nranks) {
  const int nodes = bed.nodes();
  const std::regex peerRe(R"(rank (\d+) <-> rank (\d+) \(([^,]+), pid \d+\): via (\w+))");
  const std::regex ringRe(
      R"(ring channels \d+\.\.\d+ connected \(send to (\d+) via (\w+), recv from (\d+) via (\w+)\))");
  std::vector<int> next(nranks, -1), prev(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    const std::string log = logs.read(r);
    int peers = 0, rings = 0;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), peerRe); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      if (std::stoi(m[1]) != r) continue;
      const int q = std::stoi(m[2]);
      ++peers;
      const bool sameNode = nodeOf(q, nodes) == nodeOf(r, nodes);
      EXPECT_EQ(m[3].str(), bed.hostName(nodeOf(q, nodes))) << "rank " << r << " sees rank " << q << "'s host name";
      EXPECT_EQ(m[4].str(), sameNode ? "SHM" : "NET") << "rank " << r << " -> rank " << q << ": " << m[0];
    }
    EXPECT_GT(peers, 0) << "rank " << r << " logged no transport choice:\n" << log;
    // Run with NCCL_NET=IB (ctest's IbEmulated.NetBedOverIb), the network between nodes must be the IB backend,
    // not sockets after a warning.
    const char* net = getenv("NCCL_NET");
    if (net && std::string(net) == "IB" && nodes > 1) {
      EXPECT_NE(log.find("NET/IB: using "), std::string::npos) << "rank " << r << " did not use IB:\n" << log;
      EXPECT_EQ(log.find("not usable"), std::string::npos) << "rank " << r << ":\n" << log;
    }
    for (auto it = std::sregex_iterator(log.begin(), log.end(), ringRe); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      const int to = std::stoi(m[1]), from = std::stoi(m[3]);
      ++rings;
      if (rings == 1) {
        next[r] = to;
        prev[r] = from;
      }
      EXPECT_EQ(to, next[r]) << "every channel's ring has the same order";
      EXPECT_EQ(m[2].str(), nodeOf(to, nodes) == nodeOf(r, nodes) ? "SHM" : "NET") << m[0];
      EXPECT_EQ(m[4].str(), nodeOf(from, nodes) == nodeOf(r, nodes) ? "SHM" : "NET") << m[0];
    }
    EXPECT_GT(rings, 0) << "rank " << r << " logged no ring:\n" << log;
  }
  // The ring is one cycle through every rank, and it changes node exactly once per node: each node's ranks
  // sit together, so each boundary is crossed once.
  int at = 0, steps = 0, crossings = 0;
  std::string order;
  do {
    ASSERT_GE(next[at], 0) << "rank " << at << " has no ring successor";
    EXPECT_EQ(prev[next[at]], at) << "rank " << next[at] << " receives from " << prev[next[at]] << ", not " << at;
    crossings += nodeOf(at, nodes) != nodeOf(next[at], nodes);
    order += std::to_string(at) + (next[at] == 0 ? "" : ",");
    at = next[at];
  } while (at != 0 && ++steps <= nranks);
  EXPECT_EQ(steps + 1, nranks) << "the ring " << order << " is not one cycle through all ranks";
  EXPECT_EQ(crossings, nodes > 1 ? nodes : 0)
      << "ring order " << order << " crosses node boundaries " << crossings << " times for " << nodes << " nodes";
}

// ---- collectives across nodes ----

// The algorithms each job is run with: "" leaves the choice to the library; the others are forced with
// NCCL_ALGO (Tree: all-reduce on the double binary tree, the other collectives on the ring).
const char* const kAlgos[] = {"", "Ring", "Tree"};

struct BedJob {
  int nodes;
  int perNode;
  const char* algo;
  bool shaped;     // tc netem delay and rate on every link
  bool fullCases;  // buildCases (thousands of cases) rather than buildShortCases
  bool twoWay;     // BRAID_NET_SOCKET_TWO_WAY=1: a pair's connections on a tag share one TCP connection
};

void PrintTo(const BedJob& j, std::ostream* os) {
  *os << j.nodes << " nodes x " << j.perNode << " ranks, algorithm " << (*j.algo ? j.algo : "as chosen")
      << (j.shaped ? ", netem" : "") << (j.fullCases ? ", full case list" : "") << (j.twoWay ? ", two-way" : "");
}

std::string jobName(const testing::TestParamInfo<BedJob>& info) {
  const BedJob& j = info.param;
  return std::to_string(j.nodes) + "x" + std::to_string(j.perNode) + "_" + (*j.algo ? j.algo : "Chosen") +
         (j.shaped ? "_netem" : "") + (j.fullCases ? "_full" : "") + (j.twoWay ? "_twoway" : "");
}

std::vector<BedJob> bedJobs() {
  std::vector<BedJob> jobs;
  for (const char* algo : kAlgos) {
    jobs.push_back({2, 1, algo, false, true, false});
    jobs.push_back({2, 2, algo, false, true, false});
    jobs.push_back({3, 1, algo, false, true, false});
  }
  jobs.push_back({4, 1, "", false, false, false});
  jobs.push_back({4, 1, "", true, false, false});
  // Two-way connections: the ring of two ranks, the trees' links and point-to-point pairs share theirs.
  jobs.push_back({2, 1, "", false, false, true});
  jobs.push_back({2, 2, "", false, true, true});
  jobs.push_back({3, 1, "Tree", false, false, true});
  return jobs;
}

class NetBedCollectives : public testing::TestWithParam<BedJob> {};

TEST_P(NetBedCollectives, EveryCollectiveAndTypeAcrossNodes) {
  const BedJob job = GetParam();
  const int nranks = job.nodes * job.perNode;
  mp::NetBed bed(job.nodes, job.shaped ? mp::LinkShape{"1ms", "1gbit"} : mp::LinkShape{});
  if (!bed.ok()) GTEST_SKIP() << "multi-node test bed unavailable: " << bed.why();
  mp::LogDir logs;
  ASSERT_TRUE(logs.ok());
  mp::Options o;
  o.idSource = mp::IdSource::kRank0;  // the root must listen inside node 0, where the other nodes can reach it
  o.timeoutSec = 240;
  o.env = {{"BRAID_HOST_COMM", "1"},     {"BRAID_TIMEOUT", "60"},       {"BRAID_BOOTSTRAP_TIMEOUT", "30"},
           {"NCCL_DEBUG", "INFO"},       {"NCCL_DEBUG_SUBSYS", "INIT"}, {"NCCL_BUFFSIZE", "65536"},
           {"BRAID_HOST_NCHANNELS", "2"}};
  if (*job.algo) o.env.push_back({"NCCL_ALGO", job.algo});
  if (job.twoWay) o.env.push_back({"BRAID_NET_SOCKET_TWO_WAY", "1"});
  const int nodes = job.nodes;
  o.childSetup = [&bed, &logs, nodes](int rank) {
    setenv("NCCL_DEBUG_FILE", logs.path(rank).c_str(), 1);
    std::string why;
    ASSERT_TRUE(bed.enter(nodeOf(rank, nodes), &why)) << why;
  };
  const bool full = job.fullCases;
  auto r = mp::runRanks(nranks, o, [full](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::setReportBudget(25);
    const std::vector<mp::Case> cases = full ? mp::buildCases(ctx.nranks) : mp::buildShortCases(ctx.nranks);
    const double t0 = mp::nowSec();
    if (!mp::runCases(comm, ctx, cases)) return;
    mp::note("%zu cases in %.1f s", cases.size(), mp::nowSec() - t0);
    mp::reportSuppressed();
    MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
  });
  mp::expectAllPassed(r);
  if (r.allPassed()) checkWiring(logs, bed, nranks);
  // A network plugin that refuses to close a connection with requests outstanding says so (the tests' plugin with
  // BRAID_TEST_NET_STRICT_CLOSE): communicators that end cleanly leave none.
  EXPECT_EQ(logs.count(nranks, "request(s) outstanding"), 0) << "a connection closed with requests outstanding";
  if (r.allPassed() && job.twoWay) {  // some send ran over the connection from its peer (logged at INIT)
    EXPECT_GT(logs.count(nranks, "over the connection from it"), 0) << "no connection ran both ways";
  }
}

INSTANTIATE_TEST_SUITE_P(Jobs, NetBedCollectives, testing::ValuesIn(bedJobs()), jobName);

// ---- a link pulled in the middle of a collective ----

struct LinkDownShared {
  std::atomic<int> iterations[8];
};

// The peer ranks a message names ("rank 3", "ranks 1,3", "ranks 2-3"), other than `self`.
std::set<int> peersNamed(const std::string& msg, int self, int nranks) {
  std::set<int> out;
  const std::regex re(R"(ranks? ([0-9][0-9,\-]*))");
  for (auto it = std::sregex_iterator(msg.begin(), msg.end(), re); it != std::sregex_iterator(); ++it) {
    std::stringstream list((*it)[1].str());
    for (std::string item; std::getline(list, item, ',');) {
      int lo = -1, hi = -1;
      const int got = sscanf(item.c_str(), "%d-%d", &lo, &hi);
      if (got < 1) continue;
      if (got < 2) hi = lo;
      for (int q = lo; q <= hi && q < nranks; ++q)
        if (q >= 0 && q != self) out.insert(q);
    }
  }
  return out;
}

// Node `down`'s link is taken down at the bridge once every rank has finished a few all-reduces. Packets are
// then lost without any reset, so only the library's own timeout (BRAID_TIMEOUT) or a peer's broken
// connection can end the waits: every rank must return ncclRemoteError naming a peer, and abort promptly.
void linkDownInsideAllReduce(int nodes, int perNode, int down, bool twoWay = false) {
  const int nranks = nodes * perNode;
  const int timeoutSec = 10;
  ASSERT_LE(nranks, 8);
  mp::NetBed bed(nodes);
  if (!bed.ok()) GTEST_SKIP() << "multi-node test bed unavailable: " << bed.why();
  auto* sh = static_cast<LinkDownShared*>(mp::sharedAlloc(sizeof(LinkDownShared)));
  ASSERT_NE(sh, nullptr);
  for (auto& i : sh->iterations) i.store(0);
  auto* downAt = static_cast<std::atomic<double>*>(mp::sharedAlloc(sizeof(std::atomic<double>)));
  downAt->store(0);
  mp::Options o;
  o.idSource = mp::IdSource::kRank0;
  o.timeoutSec = 120;
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_TIMEOUT", std::to_string(timeoutSec)}, {"BRAID_BOOTSTRAP_TIMEOUT", "30"}};
  if (twoWay) o.env.push_back({"BRAID_NET_SOCKET_TWO_WAY", "1"});
  o.childSetup = [&bed, nodes](int rank) {
    std::string why;
    ASSERT_TRUE(bed.enter(nodeOf(rank, nodes), &why)) << why;
  };
  std::thread puller;
  std::string pullError;
  o.parentHook = [&](const ncclUniqueId&) {
    puller = std::thread([&] {
      const double until = mp::nowSec() + 60;
      auto allStarted = [&] {
        for (int r = 0; r < nranks; ++r)
          if (sh->iterations[r].load() < 3) return false;
        return true;
      };
      while (!allStarted() && mp::nowSec() < until) usleep(5000);
      if (!allStarted()) {
        pullError = "the ranks did not reach their third all-reduce within 60 s";
        return;
      }
      usleep(20000);  // somewhere inside the next all-reduces
      downAt->store(mp::nowSec());
      if (!bed.setLinkUp(down, false, &pullError)) downAt->store(0);
    });
  };
  auto r = mp::runRanks(nranks, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    const size_t count = 1 << 18;
    std::vector<float> in(count, 1.0f), out(count);
    ncclResult_t res = ncclSuccess;
    int iter = 0;
    const double tEnd = mp::nowSec() + 80;
    for (; mp::nowSec() < tEnd; ++iter) {
      mp::setStatus("all-reduce iteration %d", iter);
      res = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      if (res != ncclSuccess) break;
      if (iter < 3) ASSERT_EQ(out[count - 1], static_cast<float>(ctx.nranks));
      sh->iterations[ctx.rank].store(iter + 1);
    }
    const double tErr = mp::nowSec(), pulled = downAt->load();
    const std::string msg = mp::lastError(comm);
    mp::note("rank %d (node %d): %s after %.2f s, iteration %d: %s", ctx.rank, nodeOf(ctx.rank, nodes),
             ncclGetErrorString(res), pulled > 0 ? tErr - pulled : -1.0, iter, msg.c_str());
    ASSERT_GT(pulled, 0) << "the link was never taken down";
    EXPECT_EQ(res, ncclRemoteError) << "a lost link is ncclRemoteError: " << msg;
    // Twice the timeout: a rank may first wait out a neighbour that is itself waiting out the pulled node.
    EXPECT_LE(tErr - pulled, 2.0 * timeoutSec + 10) << "BRAID_TIMEOUT=" << timeoutSec << ": " << msg;
    EXPECT_FALSE(peersNamed(msg, ctx.rank, ctx.nranks).empty()) << "the message should name a peer rank: " << msg;
    mp::setStatus("ncclCommAbort after the lost link");
    const double t0 = mp::nowSec();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(mp::nowSec() - t0, 5.0) << "ncclCommAbort must return promptly";
  });
  if (puller.joinable()) puller.join();
  EXPECT_TRUE(pullError.empty()) << pullError;
  mp::expectAllPassed(r);
}

TEST(NetBedFault, LinkDownInsideAllReduce_3x1) { linkDownInsideAllReduce(3, 1, 1); }
TEST(NetBedFault, LinkDownInsideAllReduce_2x2) { linkDownInsideAllReduce(2, 2, 1); }
TEST(NetBedFault, LinkDownInsideAllReduce_2x2_TwoWay) { linkDownInsideAllReduce(2, 2, 1, true); }

// ---- the bed itself ----

// errno of a TCP connect to addr's port 9 (nothing listens there): ECONNREFUSED when the host answered,
// ETIMEDOUT/EHOSTUNREACH/ENETUNREACH when it cannot be reached. Bounded by a 5 s send timeout.
int connectErrno(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(9);
  inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  int err = rc == 0 ? 0 : errno;
  close(fd);
  return err;
}

// Each node sees only its own link and address and has its own host name; the nodes reach each other through
// the bridge; the destructor removes every namespace and host-name file.
TEST(NetBed, NodesAreSeparateHostsAndTeardownRemovesThem) {
  std::vector<std::string> names;
  {
    mp::NetBed bed(3);
    if (!bed.ok()) GTEST_SKIP() << "multi-node test bed unavailable: " << bed.why();
    for (int k = 0; k < 3; ++k) names.push_back(bed.netnsName(k));
    names.push_back(bed.bridgeNetns());
    mp::Options o;
    o.idSource = mp::IdSource::kNone;
    o.childSetup = [&bed](int rank) {
      std::string why;
      ASSERT_TRUE(bed.enter(rank, &why)) << why;
    };
    auto r = mp::runRanks(3, o, [&bed](mp::RankCtx& ctx) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      EXPECT_EQ(std::string(host), bed.hostName(ctx.rank));
      std::string out;
      EXPECT_EQ(mp::shellStatus("ip -o -4 addr show", &out), 0) << out;
      EXPECT_NE(out.find(bed.address(ctx.rank) + "/24"), std::string::npos) << out;
      for (int k = 0; k < 3; ++k) {
        if (k != ctx.rank) EXPECT_EQ(out.find(bed.address(k) + "/"), std::string::npos) << out;
      }
      const int other = (ctx.rank + 1) % 3;
      EXPECT_EQ(connectErrno(bed.address(other)), ECONNREFUSED)
          << "node " << ctx.rank << " should reach node " << other << " (which refuses the closed port)";
    });
    mp::expectAllPassed(r);
  }
  std::string list;
  ASSERT_EQ(mp::shellStatus("ip netns list", &list), 0) << list;
  for (const std::string& n : names) EXPECT_EQ(list.find(n), std::string::npos) << n << " left behind: " << list;
  std::string uts;
  mp::shellStatus("ls /run/braid-netbed", &uts);
  for (const std::string& n : names) EXPECT_EQ(uts.find(n), std::string::npos) << n << " left behind: " << uts;
}

}  // namespace
