// The double binary tree all-reduce on host communicators (src/algo/tree_schedules.h): forked ranks split into
// simulated nodes by NCCL_HOSTID, every datatype x reduction, out of place and in place, counts from 1 to many FIFO
// steps, outputs poisoned and every element checked (mp/common/coll_check.h). Trees forced with
// NCCL_ALGO=allreduce:tree (the log shows they were connected and chosen), on 2-4 nodes of 1-2 ranks and on one
// node, where the trees are chains; and unforced across a few nodes, where the tuner keeps the ring.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/dtypes.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

struct TreeJob {
  int nodes;
  int perNode;
  bool interleaved;  // node = rank % nodes (the ring order regroups them); else rank / perNode
  int channels;
};

void PrintTo(const TreeJob& j, std::ostream* os) {
  *os << j.nodes << " nodes x " << j.perNode << (j.interleaved ? " interleaved" : "") << ", " << j.channels
      << " channel(s)";
}

std::string jobName(const testing::TestParamInfo<TreeJob>& info) {
  const TreeJob& j = info.param;
  return std::to_string(j.nodes) + "nodes_" + std::to_string(j.perNode) + "per" + (j.interleaved ? "_inter" : "") +
         "_" + std::to_string(j.channels) + "ch";
}

// Every datatype x reduction, out of place and in place, at counts of one element, an odd count within one FIFO step,
// and one spanning many steps of the jobs' 64 KiB FIFOs (8 KiB steps) on both trees. The harness's inputs keep fp8
// e4m3 sums exact (-3..3, doubled by premulsum) and int8 averages' sums in range (-20..20) for at most 5 ranks:
// beyond that those cases are left out.
std::vector<Case> treeCases(int nranks) {
  std::vector<Case> cases;
  uint64_t seed = 4300;
  int idx = 0;
  for (size_t count : {size_t{1}, size_t{1001}, size_t{40000}}) {
    for (int dt = 0; dt < mp::kNumTypes; ++dt) {
      for (int op = 0; op < mp::kNumOpKinds; ++op) {
        const bool additive = op == ncclSum || op == mp::kOpPreMulImm || op == mp::kOpPreMulImm + 1;
        if (nranks > 5 && ((dt == ncclFloat8e4m3 && additive) || (dt == ncclInt8 && op == ncclAvg))) continue;
        for (bool inPlace : {false, true}) {
          Case c;
          c.coll = Coll::kAllReduce;
          c.dt = static_cast<ncclDataType_t>(dt);
          c.opKind = op;
          c.count = count;
          c.inPlace = inPlace;
          c.misalign = (idx++ % 3 == 1) ? 1 : 0;
          c.seed = seed++;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `cases` on nodes x perNode ranks with `env`; returns rank 0's log (NCCL_DEBUG=INFO, INIT and TUNING).
// rankEnv, if set, runs in each child after NCCL_HOSTID is set (per-rank environment).
std::string runJob(const TreeJob& j, const std::vector<std::pair<std::string, std::string>>& env,
                   const std::vector<Case>& cases, std::function<void(int)> rankEnv = nullptr) {
  char dir[] = "/tmp/braid_tree_XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return "";
  }
  const std::string logPrefix = std::string(dir) + "/log.";
  const int n = j.nodes * j.perNode;
  mp::Options o;
  o.timeoutSec = 240;
  o.env = env;
  o.env.push_back({"BRAID_TIMEOUT", "60"});
  o.env.push_back({"NCCL_BUFFSIZE", "65536"});
  o.env.push_back({"BRAID_HOST_NCHANNELS", std::to_string(j.channels)});
  o.env.push_back({"NCCL_DEBUG", "INFO"});
  o.env.push_back({"NCCL_DEBUG_SUBSYS", "INIT,TUNING"});
  o.childSetup = [j, logPrefix, rankEnv](int rank) {
    const int node = j.interleaved ? rank % j.nodes : rank / j.perNode;
    setenv("NCCL_HOSTID", ("tree-node-" + std::to_string(node)).c_str(), 1);
    setenv("NCCL_DEBUG_FILE", (logPrefix + std::to_string(rank)).c_str(), 1);
    if (rankEnv) rankEnv(rank);
  };
  auto r = mp::runRanks(n, o, [&cases](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::setReportBudget(25);
    for (size_t i = 0; i < cases.size(); ++i) {
      if (!mp::runCase(comm, ctx.rank, ctx.nranks, cases[i])) {
        ADD_FAILURE() << "stopping after case " << i << " of " << cases.size() << " (an NCCL call failed)";
        ncclCommAbort(comm);
        mp::reportSuppressed();
        return;
      }
    }
    mp::reportSuppressed();
    MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
  });
  mp::expectAllPassed(r);
  const std::string log0 = readFile(logPrefix + "0");
  for (int rank = 0; rank < n; ++rank) std::remove((logPrefix + std::to_string(rank)).c_str());
  rmdir(dir);
  return log0;
}

// The algorithms of the all-reduce decisions in a TUNING log ("AllReduce 4 bytes, 2 ranks, HostSocket: Tree/Simple,
// ..."), each named once, in order of first appearance.
std::string allReduceAlgos(const std::string& log) {
  std::string seen;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(" AllReduce ");
    if (at == std::string::npos || line.find(" bytes, ", at) == std::string::npos) continue;
    const size_t colon = line.find(": ", at);
    const size_t slash = line.find('/', colon);
    if (colon == std::string::npos || slash == std::string::npos) continue;
    const std::string algo = line.substr(colon + 2, slash - colon - 2);
    if (("," + seen + ",").find("," + algo + ",") == std::string::npos) seen += (seen.empty() ? "" : ",") + algo;
  }
  return seen;
}

// The algorithm of the decision for an all-reduce of `bytes` in a TUNING log; empty if none.
std::string algoFor(const std::string& log, size_t bytes) {
  const size_t at = log.find(" AllReduce " + std::to_string(bytes) + " bytes, ");
  if (at == std::string::npos) return "";
  const size_t colon = log.find(": ", at);
  const size_t slash = log.find('/', colon);
  return colon == std::string::npos || slash == std::string::npos ? "" : log.substr(colon + 2, slash - colon - 2);
}

class TreeAllReduce : public testing::TestWithParam<TreeJob> {};

// NCCL_ALGO=allreduce:tree: every all-reduce runs on the trees, connected at init; the other collectives keep the
// ring (a reduce and an all-gather ride along to show the two sets of connections do not mix).
TEST_P(TreeAllReduce, ForcedEveryTypeOpAndForm) {
  const TreeJob j = GetParam();
  std::vector<Case> cases = treeCases(j.nodes * j.perNode);
  Case reduce;
  reduce.coll = Coll::kReduce;
  reduce.count = 3001;
  reduce.seed = 99;
  cases.insert(cases.begin() + static_cast<long>(cases.size() / 2), reduce);
  Case gather;
  gather.coll = Coll::kAllGather;
  gather.count = 777;
  gather.seed = 98;
  cases.push_back(gather);
  const std::string log = runJob(j, {{"NCCL_ALGO", "allreduce:tree"}}, cases);
  EXPECT_NE(log.find("tree channels 0.." + std::to_string(j.channels - 1) + " connected"), std::string::npos) << log;
  EXPECT_EQ(allReduceAlgos(log), "Tree") << log;
}

INSTANTIATE_TEST_SUITE_P(Nodes, TreeAllReduce,
                         testing::Values(TreeJob{2, 1, false, 1}, TreeJob{2, 2, true, 2}, TreeJob{3, 1, false, 2},
                                         TreeJob{3, 2, false, 1}, TreeJob{4, 1, false, 1}, TreeJob{4, 2, true, 1},
                                         TreeJob{1, 3, false, 2}),
                         jobName);

// Without NCCL_ALGO, across 4 nodes of 2 ranks: the trees are connected, and the tuner keeps both a small and a
// large all-reduce on the ring (over sockets a tree hop measured several ring hops, so trees win only across many
// more nodes: tuner_tree_test); both give correct results.
TEST(TreeTuning, FewNodesConnectTreesAndKeepTheRing) {
  std::vector<Case> cases;
  uint64_t seed = 700;
  for (size_t count : {size_t{8}, size_t{1} << 20}) {
    Case c;
    c.coll = Coll::kAllReduce;
    c.dt = ncclFloat32;
    c.opKind = ncclSum;
    c.count = count;
    c.seed = seed++;
    cases.push_back(c);
  }
  const std::string log = runJob(TreeJob{4, 2, false, 1}, {}, cases);
  EXPECT_NE(log.find("tree channels 0..0 connected"), std::string::npos) << log;
  EXPECT_EQ(algoFor(log, 32), "Ring") << log;
  EXPECT_EQ(algoFor(log, size_t{4} << 20), "Ring") << log;
}

// One node and no NCCL_ALGO: no tree connections (the ring outruns a chain).
TEST(TreeTuning, OneNodeConnectsNoTrees) {
  Case c;
  c.coll = Coll::kAllReduce;
  c.count = 1001;
  c.seed = 5;
  const std::string log = runJob(TreeJob{1, 3, false, 1}, {}, {c});
  EXPECT_NE(log.find("host communicator ready"), std::string::npos) << log;
  EXPECT_EQ(log.find("tree channels"), std::string::npos) << log;
}

// NCCL_ALGO set on one rank only: the ranks agree on what every rank allows, so all of them connect the trees and run
// every all-reduce on them (a rank running the ring against peers on the trees would hang or mix data).
TEST(TreeTuning, ForcedOnOneRankIsAgreedByAll) {
  std::vector<Case> cases;
  uint64_t seed = 900;
  for (size_t count : {size_t{3}, size_t{50001}}) {
    for (int dt : {static_cast<int>(ncclFloat16), static_cast<int>(ncclInt32)}) {
      Case c;
      c.coll = Coll::kAllReduce;
      c.dt = static_cast<ncclDataType_t>(dt);
      c.opKind = ncclSum;
      c.count = count;
      c.seed = seed++;
      cases.push_back(c);
    }
  }
  const std::string log = runJob(TreeJob{1, 3, false, 1}, {}, cases, [](int rank) {
    if (rank == 1) setenv("NCCL_ALGO", "allreduce:tree", 1);
  });
  EXPECT_NE(log.find("tree channels 0..0 connected"), std::string::npos) << log;
  EXPECT_EQ(allReduceAlgos(log), "Tree") << log;
}

}  // namespace
