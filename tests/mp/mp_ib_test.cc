// The IB verbs backend between real processes, over the emulated verbs provider (tests/ib_emu: queue pairs as
// shared-memory rings, memory regions with keys, bounds and access checks): every collective on host communicators
// of 2, 3 and 4 ranks with the network forced (NCCL_NET=IB, no SHM), on InfiniBand and RoCE ports and with several
// queue pairs per connection, and on two NCCL_HOSTID hosts (SHM inside, IB between); the choice between IB and
// sockets; and faults injected in the middle of a transfer (a lost write that runs out of retries, a write with a
// wrong rkey, a port that goes down, a rank killed) or between collectives (a rank gone), each of which must end
// every rank's collective with an error naming the peer, within the timeout. Each rank's log (NCCL_DEBUG_FILE)
// shows that the IB backend carried the connections, and the backend's own message naming the device, port and peer.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

#ifdef BRAID_VERBS_EMU_PATH

namespace {

using mp::Case;
using mp::Coll;

std::string logPattern(const std::string& tag) {
  return "/tmp/braid_ib_" + tag + "_" + std::to_string(getpid()) + "_%p.log";
}

// The log of the process `pid` written under logPattern(tag), or "".
std::string readLog(const std::string& tag, int pid) {
  std::string path = logPattern(tag);
  path.replace(path.find("%p"), 2, std::to_string(pid));
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  f.close();
  unlink(path.c_str());
  return ss.str();
}

mp::Options ibOptions(const std::string& tag) {
  mp::Options o;
  o.timeoutSec = 240;
  o.env = {{"BRAID_TEST_VERBS_PROVIDER", BRAID_VERBS_EMU_PATH},
           {"NCCL_NET", "IB"},
           {"NCCL_SHM_DISABLE", "1"},
           {"BRAID_HOST_COMM", "1"},
           {"BRAID_TIMEOUT", "60"},
           {"NCCL_DEBUG", "INFO"},
           {"NCCL_DEBUG_SUBSYS", "NET,INIT"},
           {"NCCL_DEBUG_FILE", logPattern(tag)}};
  return o;
}

// Every collective, datatypes of 1, 2, 4 and 8 bytes, several reductions, in and out of place, both roots, counts
// from 0 to many FIFO steps.
std::vector<Case> ibCases(int n) {
  std::vector<Case> cases;
  uint64_t seed = 7000;
  const int last = n - 1;
  const Coll colls[] = {Coll::kAllReduce,    Coll::kBroadcast,        Coll::kBcast,
                        Coll::kReduce,       Coll::kAllGather,        Coll::kReduceScatter,
                        Coll::kAlltoAll,     Coll::kGather,           Coll::kScatter,
                        Coll::kSendRecvRing, Coll::kSendRecvAllPairs, Coll::kSendRecvPairs};
  const ncclDataType_t types[] = {ncclFloat32, ncclInt8, ncclBfloat16, ncclInt64, ncclFloat64};
  const int ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, mp::kOpPreMulImm};
  int k = 0;
  for (Coll cl : colls) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{70000}}) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !mp::collHasInPlace(cl)) continue;
        Case c;
        c.coll = cl;
        c.count = count;
        c.inPlace = inPlace;
        c.dt = types[k % 5];
        c.opKind = mp::collHasOp(cl) ? ops[k % 6] : ncclSum;
        if (c.opKind == ncclProd && c.dt == ncclFloat64) c.opKind = ncclSum;
        c.root = mp::collHasRoot(cl) && (k % 2) ? last : 0;
        c.misalign = k % 3 == 1 ? 1 : 0;
        c.seed = seed++;
        cases.push_back(c);
        k++;
      }
    }
  }
  return cases;
}

struct Job {
  int nranks;
  const char* devices;  // BRAID_VERBS_EMU_DEVICES
  int qps;              // NCCL_IB_QPS_PER_CONNECTION
  const char* buffSize;
  int channels;
};

void PrintTo(const Job& j, std::ostream* os) {
  *os << j.nranks << " ranks on " << j.devices << ", " << j.qps << " QP(s)";
}

class IbCollectives : public testing::TestWithParam<Job> {};

TEST_P(IbCollectives, EveryCollective) {
  const Job j = GetParam();
  const std::string tag = "coll" + std::to_string(j.nranks) + "_" + std::to_string(j.qps);
  mp::Options o = ibOptions(tag);
  o.env.push_back({"BRAID_VERBS_EMU_DEVICES", j.devices});
  o.env.push_back({"NCCL_IB_QPS_PER_CONNECTION", std::to_string(j.qps)});
  o.env.push_back({"NCCL_BUFFSIZE", j.buffSize});
  o.env.push_back({"BRAID_HOST_NCHANNELS", std::to_string(j.channels)});
  std::vector<int> pids(j.nranks, 0);
  int* shPids = static_cast<int*>(mp::sharedAlloc(sizeof(int) * 8));
  auto r = mp::runRanks(j.nranks, o, [&](mp::RankCtx& ctx) {
    shPids[ctx.rank] = getpid();
    ncclResetDebugInit();  // the parent's logging, set up by an earlier job's ncclGetUniqueId, came along the fork
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::setReportBudget(25);
    const std::vector<Case> cases = ibCases(ctx.nranks);
    for (size_t i = 0; i < cases.size(); i++) {
      mp::setStatus("case %zu of %zu: %s", i, cases.size(), mp::caseName(cases[i], ctx.nranks).c_str());
      if (!mp::runCase(comm, ctx.rank, ctx.nranks, cases[i])) {
        ADD_FAILURE() << "stopping after case " << i << " (an NCCL call failed)";
        ncclCommAbort(comm);
        return;
      }
    }
    mp::reportSuppressed();
    MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
  });
  mp::expectAllPassed(r);
  for (int rank = 0; rank < j.nranks; rank++) {
    const std::string log = readLog(tag, shPids[rank]);
    EXPECT_NE(log.find("NET/IB: sending to rank"), std::string::npos) << "rank " << rank << " log:\n" << log;
    EXPECT_NE(log.find("NET/IB: receiving from rank"), std::string::npos) << "rank " << rank;
    EXPECT_EQ(log.find("using sockets"), std::string::npos) << "rank " << rank << " fell back:\n" << log;
    const std::string want = std::string(j.devices).find("roce") != std::string::npos ? "RoCE" : "InfiniBand";
    EXPECT_NE(log.find(want), std::string::npos) << "rank " << rank << " log:\n" << log;
    if (want == "RoCE") {
      EXPECT_NE(log.find("RoCE v2, index 3"), std::string::npos) << "the IPv4-mapped RoCE v2 GID: " << log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jobs, IbCollectives,
                         testing::Values(Job{2, "emu_0:ib", 1, "65536", 1}, Job{2, "mlx5_0:roce", 4, "4194304", 2},
                                         Job{3, "emu_0:ib", 2, "1048576", 2}, Job{4, "emu_0:ib", 1, "65536", 1},
                                         Job{4, "mlx5_0:roce", 3, "2097152", 1}),
                         [](const testing::TestParamInfo<Job>& i) {
                           return std::to_string(i.param.nranks) + "ranks_" +
                                  (std::string(i.param.devices).find("roce") != std::string::npos ? "roce" : "ib") +
                                  "_" + std::to_string(i.param.qps) + "qp";
                         });

// NCCL_HOSTID splits the machine into two hosts of two ranks (0 and 2, 1 and 3): inside a host the ranks use shared
// memory, between hosts the IB backend, and every collective checks out.
TEST(IbHosts, TwoHostsOfTwoRanksOverIbBetweenThem) {
  const std::string tag = "hosts";
  mp::Options o = ibOptions(tag);
  for (auto& kv : o.env) {
    if (kv.first == "NCCL_SHM_DISABLE") kv.second = "";  // SHM inside each host
  }
  o.env.push_back({"NCCL_IB_QPS_PER_CONNECTION", "2"});
  o.childSetup = [](int rank) { setenv("NCCL_HOSTID", rank % 2 == 0 ? "node-even" : "node-odd", 1); };
  int* shPids = static_cast<int*>(mp::sharedAlloc(sizeof(int) * 8));
  auto r = mp::runRanks(4, o, [&](mp::RankCtx& ctx) {
    shPids[ctx.rank] = getpid();
    ncclResetDebugInit();
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::setReportBudget(25);
    const std::vector<Case> cases = ibCases(ctx.nranks);
    for (size_t i = 0; i < cases.size(); i++) {
      if (!mp::runCase(comm, ctx.rank, ctx.nranks, cases[i])) {
        ADD_FAILURE() << "stopping after case " << i << " (an NCCL call failed)";
        ncclCommAbort(comm);
        return;
      }
    }
    mp::reportSuppressed();
    MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
  });
  mp::expectAllPassed(r);
  for (int rank = 0; rank < 4; rank++) {
    const std::string log = readLog(tag, shPids[rank]);
    EXPECT_NE(log.find("via SHM"), std::string::npos) << "rank " << rank << ":\n" << log;
    EXPECT_NE(log.find("NET/IB: sending to rank"), std::string::npos) << "rank " << rank << ":\n" << log;
    EXPECT_NE(log.find("NET/IB: receiving from rank"), std::string::npos) << "rank " << rank << ":\n" << log;
  }
}

// Which backend carries the network: IB where it is usable unless NCCL_NET or NCCL_IB_DISABLE say otherwise, sockets
// where it is not (said at INFO, or with a warning where NCCL_NET=IB asked for it). Either way the collective works.
struct Choice {
  const char* name;
  std::vector<std::pair<std::string, std::string>> env;
  bool ib;           // the IB backend carries the connections
  const char* says;  // in each rank's log
};

class IbSelection : public testing::TestWithParam<Choice> {};

TEST_P(IbSelection, PicksTheBackend) {
  const Choice& c = GetParam();
  const std::string tag = std::string("sel_") + c.name;
  mp::Options o = ibOptions(tag);
  o.timeoutSec = 60;
  for (auto& kv : o.env) {
    if (kv.first == "NCCL_NET") kv.second = "";  // unset unless the choice sets it
  }
  o.env.push_back({"NCCL_DEBUG", "INFO"});
  for (const auto& kv : c.env) o.env.push_back(kv);
  int* shPids = static_cast<int*>(mp::sharedAlloc(sizeof(int) * 8));
  auto r = mp::runRanks(2, o, [&](mp::RankCtx& ctx) {
    shPids[ctx.rank] = getpid();
    ncclResetDebugInit();
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    Case k;
    k.coll = Coll::kAllReduce;
    k.count = 100000;
    k.seed = 99;
    EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, k));
    MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
  });
  mp::expectAllPassed(r);
  for (int rank = 0; rank < 2; rank++) {
    const std::string log = readLog(tag, shPids[rank]);
    EXPECT_EQ(log.find("NET/IB: sending to rank") != std::string::npos, c.ib) << "rank " << rank << ":\n" << log;
    EXPECT_NE(log.find(c.says), std::string::npos) << "rank " << rank << ":\n" << log;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Choices, IbSelection,
    testing::Values(
        Choice{"unset", {}, true, "NET/IB: using emu_0:1"},
        Choice{"disabled", {{"NCCL_IB_DISABLE", "1"}}, false, "not usable (NCCL_IB_DISABLE=1); using sockets"},
        Choice{"socket", {{"NCCL_NET", "Socket"}}, false, "via NET"},
        Choice{"no_library",
               {{"BRAID_TEST_VERBS_PROVIDER", "/nonexistent/libverbs.so"}},
               false,
               "INFO NET: the IB verbs backend is not usable (cannot load the verbs provider"},
        Choice{"ib_asked_no_library",
               {{"BRAID_TEST_VERBS_PROVIDER", "/nonexistent/libverbs.so"}, {"NCCL_NET", "IB"}},
               false,
               "WARN NCCL_NET=IB: the IB verbs backend is not usable"},
        Choice{
            "port_down", {{"BRAID_VERBS_EMU_DEVICES", "emu_0:ib:down"}, {"NCCL_NET", "IB"}}, false, "no active port"}),
    [](const testing::TestParamInfo<Choice>& i) { return std::string(i.param.name); });

// A fault on rank `victim`'s emulated device at its `at`-th RDMA write with data, inside a loop of large
// all-reduces: every rank's all-reduce fails (none hangs), the victim's and its peers' within the timeout.
struct FaultCase {
  const char* fault;        // BRAID_VERBS_EMU_FAULT on the victim
  const char* victimWants;  // in the victim's error and log (the backend's own message); a killed victim has none
  ncclResult_t victimCode;
  int nranks;
};

void runFault(const FaultCase& f) {
  const int victim = 1;
  const std::string tag = std::string("fault_") + f.fault;
  mp::Options o = ibOptions(tag.substr(0, tag.find(':')));
  o.timeoutSec = 120;
  o.env.push_back({"NCCL_BUFFSIZE", "262144"});
  o.env.push_back({"BRAID_TIMEOUT", "30"});
  o.env.push_back({"NCCL_IB_TIMEOUT", "10"});  // 4 ms a try, 8 tries
  o.env.push_back({"NCCL_IB_RETRY_CNT", "7"});
  o.childSetup = [&](int rank) {
    if (rank == victim) setenv("BRAID_VERBS_EMU_FAULT", f.fault, 1);
  };
  const bool kill = std::string(f.fault).rfind("kill", 0) == 0;
  int* shPids = static_cast<int*>(mp::sharedAlloc(sizeof(int) * 8));
  auto r = mp::runRanks(f.nranks, o, [&](mp::RankCtx& ctx) {
    shPids[ctx.rank] = getpid();
    ncclResetDebugInit();
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    const size_t count = 1 << 20;
    std::vector<float> in(count, 1.0f), out(count);
    ncclResult_t res = ncclSuccess;
    int iter = 0;
    const double t0 = mp::nowSec();
    for (; iter < 200 && res == ncclSuccess; iter++) {
      mp::setStatus("all-reduce %d", iter);
      res = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      if (res == ncclSuccess) ASSERT_EQ(out[count / 2], static_cast<float>(ctx.nranks)) << "iteration " << iter;
    }
    const std::string msg = mp::lastError(comm);
    mp::note("rank %d: %s after %d all-reduces, %.2f s: %s", ctx.rank, ncclGetErrorString(res), iter, mp::nowSec() - t0,
             msg.c_str());
    EXPECT_NE(res, ncclSuccess) << "the fault " << f.fault << " on rank " << victim << " went unnoticed";
    EXPECT_TRUE(res == ncclRemoteError || res == ncclSystemError) << ncclGetErrorString(res) << ": " << msg;
    EXPECT_TRUE(mp::containsCI(msg, "rank")) << msg;
    if (ctx.rank == victim) {
      // The error the application gets is the backend's: what failed, on which device and port, with whom.
      EXPECT_NE(msg.find(f.victimWants), std::string::npos) << msg;
      EXPECT_NE(msg.find("NET/IB: emu_0:1, "), std::string::npos) << msg;
      EXPECT_EQ(res, f.victimCode) << msg;
    }
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  for (const auto& rr : r.ranks) {
    if (kill && rr.rank == victim) {
      EXPECT_EQ(rr.termSignal, SIGKILL) << r.describe();
      continue;
    }
    EXPECT_TRUE(rr.exited && rr.exitCode == 0 && !rr.timedOut) << r.describe();
  }
  std::string victimLog;
  for (int rank = 0; rank < f.nranks; rank++) {
    const std::string log = readLog(tag.substr(0, tag.find(':')), shPids[rank]);
    if (rank == victim) victimLog = log;
    EXPECT_NE(log.find("NET/IB: sending to rank"), std::string::npos) << "rank " << rank << " log:\n" << log;
    if (rank == victim && !kill) {
      // The victim's backend said which device, port and peer failed. The others may hear of the failure first from
      // their liveness checks (the ranks that failed exit), before their own connections report it.
      EXPECT_NE(log.find("NET/IB: emu_0:1, "), std::string::npos) << "rank " << rank << " log:\n" << log;
    }
  }
  if (*f.victimWants) EXPECT_NE(victimLog.find(f.victimWants), std::string::npos) << victimLog;
  if (testing::Test::HasFailure() || getenv("MP_VERBOSE")) std::cout << r.describe() << "victim log:\n" << victimLog;
}

// A rank that vanishes between collectives, with nothing in flight on its connections: the next collective of every
// other rank fails with ncclRemoteError naming it (its setup sockets closed with it), within the timeout.
TEST(IbFault, RankGoneBetweenCollectives) {
  const int victim = 1;
  mp::Options o = ibOptions("idle");
  o.timeoutSec = 120;
  o.env.push_back({"BRAID_TIMEOUT", "30"});
  int* shPids = static_cast<int*>(mp::sharedAlloc(sizeof(int) * 8));
  auto r = mp::runRanks(3, o, [&](mp::RankCtx& ctx) {
    shPids[ctx.rank] = getpid();
    ncclResetDebugInit();
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    std::vector<float> in(1 << 18, 2.0f), out(1 << 18);
    for (int iter = 0; iter < 3; iter++) {
      MP_NCCL_ASSERT_COMM(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr), comm);
      ASSERT_EQ(out[in.size() - 1], 2.0f * ctx.nranks);
    }
    if (ctx.rank == victim) raise(SIGKILL);
    usleep(100000);  // the victim is gone before the next collective starts
    const double t0 = mp::nowSec();
    const ncclResult_t res = ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr);
    const std::string msg = mp::lastError(comm);
    mp::note("rank %d: %s after %.2f s: %s", ctx.rank, ncclGetErrorString(res), mp::nowSec() - t0, msg.c_str());
    EXPECT_EQ(res, ncclRemoteError) << msg;
    EXPECT_LT(mp::nowSec() - t0, 20.0) << "BRAID_TIMEOUT=30: the dead rank must be recognised, not waited for";
    EXPECT_TRUE(mp::mentionsRank(msg, victim)) << msg;
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
  for (const auto& rr : r.ranks) {
    if (rr.rank == victim) {
      EXPECT_EQ(rr.termSignal, SIGKILL) << r.describe();
    } else {
      EXPECT_TRUE(rr.exited && rr.exitCode == 0 && !rr.timedOut) << r.describe();
    }
  }
  for (int rank = 0; rank < 3; rank++) {
    const std::string log = readLog("idle", shPids[rank]);
    if (rank != victim) EXPECT_NE(log.find("NET/IB: sending to rank"), std::string::npos) << log;
  }
}

TEST(IbFault, LostWriteRunsOutOfRetries) {
  runFault({"drop:40", "transport retry counter exceeded", ncclRemoteError, 2});
}
TEST(IbFault, WrongRkeyIsRemoteAccessError) { runFault({"rkey:40", "remote access error", ncclRemoteError, 3}); }
TEST(IbFault, PortDown) { runFault({"port:40", "the port went down", ncclSystemError, 2}); }
TEST(IbFault, RankKilledMidTransfer) { runFault({"kill:40", "", ncclRemoteError, 3}); }

}  // namespace

#else

TEST(IbEmulated, NotBuilt) { GTEST_SKIP() << "built without infiniband/verbs.h: no emulated verbs provider"; }

#endif  // BRAID_VERBS_EMU_PATH
