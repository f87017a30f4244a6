// Bad arguments: each call returns the documented code, ncclGetLastError names the argument, nothing is
// enqueued, and the communicator keeps working afterwards. Also ids that are not ids, and an id whose root
// is unreachable (an error within the bootstrap timeout, not a hang).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

struct BadCall {
  std::string what;
  std::function<ncclResult_t()> call;
  ncclResult_t expect;
  std::string mention;  // the message must contain this (case-insensitive); "" = any non-empty message
  bool useComm;         // read ncclGetLastError(comm) rather than ncclGetLastError(NULL)
};

void expectBad(const BadCall& b, ncclComm_t comm) {
  ncclResult_t res = b.call();
  EXPECT_EQ(res, b.expect) << b.what << " returned " << ncclGetErrorString(res);
  const char* m = ncclGetLastError(b.useComm ? comm : nullptr);
  std::string msg = m ? m : "";
  EXPECT_FALSE(msg.empty()) << b.what << ": ncclGetLastError is empty";
  if (!b.mention.empty()) {
    EXPECT_TRUE(mp::containsCI(msg, b.mention))
        << b.what << ": the message should name '" << b.mention << "', got: " << msg;
  }
  if (getenv("MP_VERBOSE")) mp::note("%s -> %s: %s", b.what.c_str(), ncclGetErrorString(res), msg.c_str());
}

void checkAllReduceWorks(ncclComm_t comm, const mp::RankCtx& ctx, uint64_t seed) {
  Case c;
  c.coll = Coll::kAllReduce;
  c.dt = ncclFloat32;
  c.count = 1234;
  c.seed = seed;
  EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c)) << "the comm must still work after bad calls";
}

TEST(BadInput, ArgumentsAreRejectedAndCommStillWorks) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "30"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    const int n = ctx.nranks;
    // Init-time errors first, on a spare id of this rank's own: they must not start anything.
    ncclUniqueId spare;
    MP_NCCL_ASSERT(ncclGetUniqueId(&spare));
    ncclComm_t none = nullptr;
    ncclUniqueId junk;
    for (size_t i = 0; i < sizeof junk.internal; i++) junk.internal[i] = (char)(i * 37 + 11);
    ncclConfig_t badMagic = NCCL_CONFIG_INITIALIZER;
    badMagic.magic = 0x12345678;
    std::vector<BadCall> init = {
        {"InitRankConfig(wrong config magic)", [&] { return ncclCommInitRankConfig(&none, 2, spare, 0, &badMagic); },
         ncclInvalidArgument, "magic", false},
        {"InitRank(nranks=0)", [&] { return ncclCommInitRank(&none, 0, spare, 0); }, ncclInvalidArgument, "nranks",
         false},
        {"InitRank(rank=nranks)", [&] { return ncclCommInitRank(&none, 2, spare, 2); }, ncclInvalidArgument, "rank",
         false},
        {"InitRank(nranks=-1)", [&] { return ncclCommInitRank(&none, -1, spare, 0); }, ncclInvalidArgument, "nranks",
         false},
        {"InitRank(rank=-1)", [&] { return ncclCommInitRank(&none, 2, spare, -1); }, ncclInvalidArgument, "rank",
         false},
        {"InitRank(id of random bytes)", [&] { return ncclCommInitRank(&none, 2, junk, 0); }, ncclInvalidArgument, "id",
         false},
        {"InitRank(comm pointer NULL)", [&] { return ncclCommInitRank(nullptr, 2, spare, 0); }, ncclInvalidArgument,
         "comm", false},
    };
    mp::setStatus("bad init calls");
    for (auto& b : init) expectBad(b, nullptr);

    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    checkAllReduceWorks(comm, ctx, 1);

    std::vector<float> s(64, 1.f), d(64 * n, 0.f);
    void* sb = s.data();
    void* rb = d.data();
    ncclRedOp_t freed;
    float two = 2.f;
    MP_NCCL_ASSERT_COMM(ncclRedOpCreatePreMulSum(&freed, &two, ncclFloat32, ncclScalarHostImmediate, comm), comm);
    MP_NCCL_ASSERT_COMM(ncclRedOpDestroy(freed, comm), comm);
    const ncclResult_t IA = ncclInvalidArgument;
    std::vector<BadCall> calls = {
        {"AllReduce(sendbuff NULL)", [&] { return ncclAllReduce(nullptr, rb, 10, ncclFloat32, ncclSum, comm, 0); }, IA,
         "sendbuff", true},
        {"AllReduce(datatype 12)", [&] { return ncclAllReduce(sb, rb, 10, (ncclDataType_t)12, ncclSum, comm, 0); }, IA,
         "datatype", true},
        {"AllReduce(recvbuff NULL)", [&] { return ncclAllReduce(sb, nullptr, 10, ncclFloat32, ncclSum, comm, 0); }, IA,
         "recvbuff", true},
        {"AllReduce(datatype -1)", [&] { return ncclAllReduce(sb, rb, 10, (ncclDataType_t)-1, ncclSum, comm, 0); }, IA,
         "datatype", true},
        {"AllReduce(op 5 = ncclNumOps, never created)",
         [&] { return ncclAllReduce(sb, rb, 10, ncclFloat32, ncclNumOps, comm, 0); }, IA, "op", true},
        {"Reduce(root = nranks)", [&] { return ncclReduce(sb, rb, 10, ncclFloat32, ncclSum, n, comm, 0); }, IA, "root",
         true},
        {"AllReduce(op 1000)", [&] { return ncclAllReduce(sb, rb, 10, ncclFloat32, (ncclRedOp_t)1000, comm, 0); }, IA,
         "op", true},
        {"Broadcast(root -1)", [&] { return ncclBroadcast(sb, rb, 10, ncclFloat32, -1, comm, 0); }, IA, "root", true},
        {"Send(peer = nranks)", [&] { return ncclSend(sb, 10, ncclFloat32, n, comm, 0); }, IA, "peer", true},
        {"AllReduce(destroyed PreMulSum op)", [&] { return ncclAllReduce(sb, rb, 10, ncclFloat32, freed, comm, 0); },
         IA, "op", true},
        {"Recv(peer -1)", [&] { return ncclRecv(rb, 10, ncclFloat32, -1, comm, 0); }, IA, "peer", true},
        {"Gather(root = nranks)", [&] { return ncclGather(sb, rb, 10, ncclFloat32, n, comm, 0); }, IA, "root", true},
        {"ReduceScatter(sendbuff NULL)",
         [&] { return ncclReduceScatter(nullptr, rb, 10, ncclFloat32, ncclSum, comm, 0); }, IA, "sendbuff", true},
        {"Scatter(root -1)", [&] { return ncclScatter(sb, rb, 10, ncclFloat32, -1, comm, 0); }, IA, "root", true},
        {"AllGather(recvbuff NULL)", [&] { return ncclAllGather(sb, nullptr, 10, ncclFloat32, comm, 0); }, IA,
         "recvbuff", true},
        {"Bcast(datatype 12)", [&] { return ncclBcast(rb, 10, (ncclDataType_t)12, 0, comm, 0); }, IA, "datatype", true},
        {"AlltoAll(sendbuff NULL)", [&] { return ncclAlltoAll(nullptr, rb, 10, ncclFloat32, comm, 0); }, IA, "sendbuff",
         true},
        {"AllReduce(comm NULL)", [&] { return ncclAllReduce(sb, rb, 10, ncclFloat32, ncclSum, nullptr, 0); }, IA,
         "comm", false},
        {"Send(datatype 12)", [&] { return ncclSend(sb, 10, (ncclDataType_t)12, 0, comm, 0); }, IA, "datatype", true},
        {"CommCount(comm NULL)",
         [&] {
           int c;
           return ncclCommCount(nullptr, &c);
         },
         IA, "comm", false},
        {"RedOpCreatePreMulSum(datatype 12)",
         [&] {
           ncclRedOp_t op;
           return ncclRedOpCreatePreMulSum(&op, &two, (ncclDataType_t)12, ncclScalarHostImmediate, comm);
         },
         IA, "datatype", true},
        {"GroupEnd without GroupStart", [&] { return ncclGroupEnd(); }, ncclInvalidUsage, "", false},
    };
    mp::setStatus("bad collective calls");
    for (auto& b : calls) expectBad(b, comm);
    ncclResult_t st = ncclInternalError;
    MP_NCCL_ASSERT(ncclCommGetAsyncError(comm, &st));
    EXPECT_EQ(st, ncclSuccess) << "argument errors are not asynchronous comm errors";
    EXPECT_EQ(s, std::vector<float>(64, 1.f)) << "a rejected call touched the send buffer";
    EXPECT_EQ(d, std::vector<float>(64 * n, 0.f)) << "a rejected call touched the recv buffer";

    mp::setStatus("after the bad calls");
    checkAllReduceWorks(comm, ctx, 2);
    // count 0 makes NULL buffers legal.
    MP_NCCL_ASSERT_COMM(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, nullptr), comm);
    MP_NCCL_ASSERT_COMM(ncclBroadcast(nullptr, nullptr, 0, ncclInt8, 0, comm, nullptr), comm);
    checkAllReduceWorks(comm, ctx, 3);
    // An empty collective is dropped where it is called: rank 0 alone issues every kind (a p2p-built one like
    // all-to-all must not wait for its peer's matching step), inside and outside a group, and the next
    // all-reduce must still pair up and be right.
    if (ctx.rank == 0) {
      mp::setStatus("empty collectives on rank 0 only");
      MP_NCCL_ASSERT_COMM(ncclAlltoAll(nullptr, nullptr, 0, ncclFloat32, comm, nullptr), comm);
      MP_NCCL_ASSERT_COMM(ncclGather(nullptr, nullptr, 0, ncclFloat32, 1, comm, nullptr), comm);
      MP_NCCL_ASSERT_COMM(ncclScatter(nullptr, nullptr, 0, ncclFloat32, 0, comm, nullptr), comm);
      MP_NCCL_ASSERT(ncclGroupStart());
      MP_NCCL_ASSERT_COMM(ncclAllGather(nullptr, nullptr, 0, ncclInt32, comm, nullptr), comm);
      MP_NCCL_ASSERT_COMM(ncclReduceScatter(nullptr, nullptr, 0, ncclInt32, ncclMax, comm, nullptr), comm);
      MP_NCCL_ASSERT_COMM(ncclReduce(nullptr, nullptr, 0, ncclInt32, ncclMin, 1, comm, nullptr), comm);
      MP_NCCL_ASSERT_COMM(ncclAlltoAll(nullptr, nullptr, 0, ncclInt32, comm, nullptr), comm);
      MP_NCCL_ASSERT(ncclGroupEnd());
    }
    // A 0-byte send/receive pair is kept (a synchronisation between the two ranks) and completes.
    mp::setStatus("0-byte send/recv pair");
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT_COMM(ncclSend(nullptr, 0, ncclFloat32, 1 - ctx.rank, comm, nullptr), comm);
    MP_NCCL_ASSERT_COMM(ncclRecv(nullptr, 0, ncclFloat32, 1 - ctx.rank, comm, nullptr), comm);
    MP_NCCL_ASSERT(ncclGroupEnd());
    checkAllReduceWorks(comm, ctx, 4);
    // Dropped or not, an empty collective still checks the communicator's state.
    MP_NCCL_ASSERT(ncclCommFinalize(comm));
    EXPECT_EQ(ncclAlltoAll(nullptr, nullptr, 0, ncclFloat32, comm, nullptr), ncclInvalidUsage)
        << "an empty collective on a finalized communicator";
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// An id with our layout whose root address has nobody listening: init fails within the bootstrap timeout.
TEST(BadInput, UnreachableRootFailsWithinTimeout) {
  mp::Options o;
  o.idSource = mp::IdSource::kNone;
  o.timeoutSec = 40;
  o.env = {{"BRAID_BOOTSTRAP_TIMEOUT", "3"}};
  auto r = mp::runRanks(1, o, [](mp::RankCtx&) {
    ncclUniqueId id;
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    mp::UniqueIdLayout lay;
    std::memcpy(&lay, id.internal, sizeof lay);
    sockaddr_storage ss;
    std::memset(&ss, 0, sizeof ss);
    ASSERT_LE(lay.addrLen, sizeof lay.addr);
    std::memcpy(&ss, lay.addr, lay.addrLen);
    // Port 1 on the same address: nothing listens there.
    if (ss.ss_family == AF_INET)
      ((sockaddr_in*)&ss)->sin_port = htons(1);
    else if (ss.ss_family == AF_INET6)
      ((sockaddr_in6*)&ss)->sin6_port = htons(1);
    else
      FAIL() << "unexpected address family " << ss.ss_family << " in the unique id";
    std::memcpy(lay.addr, &ss, lay.addrLen);
    std::memcpy(id.internal, &lay, sizeof lay);
    ncclComm_t comm = nullptr;
    double t0 = mp::nowSec();
    mp::setStatus("init against a dead root address");
    ncclResult_t res = ncclCommInitRank(&comm, 2, id, 1);
    double dt = mp::nowSec() - t0;
    EXPECT_NE(res, ncclSuccess);
    EXPECT_LT(dt, 15.0) << "BRAID_BOOTSTRAP_TIMEOUT=3 bounds the wait";
    std::string msg = mp::lastError(nullptr);
    EXPECT_FALSE(msg.empty());
    mp::note("unreachable root: %s after %.1f s: %s", ncclGetErrorString(res), dt, msg.c_str());
  });
  mp::expectAllPassed(r);
}

}  // namespace

// Malformed NCCL_PROTO / NCCL_ALGO are rejected at init on every rank, promptly, with a message naming the
// variable and the bad token; a valid override initialises normally.
void expectOverrideRejected(const char* var, const char* value, const char* token) {
  mp::Options o;
  o.timeoutSec = 30;
  o.env = {{var, value}, {"BRAID_BOOTSTRAP_TIMEOUT", "5"}};
  auto r = mp::runRanks(2, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    double t0 = mp::nowSec();
    ncclResult_t res = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    EXPECT_EQ(res, ncclInvalidArgument);
    EXPECT_EQ(comm, nullptr);
    EXPECT_LT(mp::nowSec() - t0, 3.0) << "rejected before waiting on other ranks";
    std::string msg = mp::lastError(nullptr);
    EXPECT_NE(msg.find(var), std::string::npos) << msg;
    EXPECT_NE(msg.find(token), std::string::npos) << msg;
  });
  mp::expectAllPassed(r);
}

TEST(BadInput, MalformedProtoOverrideRejected) { expectOverrideRejected("NCCL_PROTO", "LL,Bogus", "Bogus"); }
TEST(BadInput, MalformedAlgoOverrideRejected) {
  expectOverrideRejected("NCCL_ALGO", "allreduce:ring;nosuchcoll:tree", "nosuchcoll");
}

TEST(BadInput, NetSettingsOutOfRangeRejected) {
  expectOverrideRejected("BRAID_NET_PROXY_THREADS", "0", "1 to 16");
  expectOverrideRejected("BRAID_NET_PROXY_THREADS", "17", "=17");
  expectOverrideRejected("BRAID_NET_SOCKET_TWO_WAY", "3", "0 to 2");
}

TEST(BadInput, IbSettingsOutOfRangeRejected) {
  expectOverrideRejected("NCCL_IB_SL", "16", "0 to 15");
  expectOverrideRejected("NCCL_IB_TC", "256", "0 to 255");
  expectOverrideRejected("NCCL_IB_PKEY", "-1", "0 to 65535");
  expectOverrideRejected("NCCL_IB_ADDR_RANGE", "10.0.0.0/40", "10.0.0.0/40");
  expectOverrideRejected("NCCL_IB_ROCE_VERSION_NUM", "3", "=3");
}

// Ranks that pick different network backends (here one loads a plugin, the other does not) fail with
// ncclInvalidUsage naming both, promptly, instead of handing a plugin another backend's connection handle.
TEST(BadInput, NetBackendsDifferingAcrossRanksAreRefused) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"NCCL_SHM_DISABLE", "1"}, {"BRAID_BOOTSTRAP_TIMEOUT", "20"}, {"BRAID_TIMEOUT", "20"}};
  o.childSetup = [](int rank) {
    setenv("NCCL_NET_PLUGIN", rank == 0 ? BRAID_TEST_NET_PLUGIN_DIR "/libnccl-net-braidtest-v10.so" : "none", 1);
  };
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    const double t0 = mp::nowSec();
    ncclComm_t comm = nullptr;
    ncclResult_t res = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    if (res == ncclSuccess) {  // a communicator may connect its network at its first collective
      std::vector<float> buf(1024, 1.0f);
      res = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
    }
    const std::string msg = mp::lastError(comm);
    mp::note("rank %d: %s after %.1f s: %s", ctx.rank, ncclGetErrorString(res), mp::nowSec() - t0, msg.c_str());
    EXPECT_NE(res, ncclSuccess);
    EXPECT_LT(mp::nowSec() - t0, 15.0) << "refused before any timeout";
    // Each rank refuses the other's handle, or learns that the other failed first.
    if (res == ncclInvalidUsage) {
      EXPECT_NE(msg.find("BraidTest"), std::string::npos) << msg;
      EXPECT_NE(msg.find("Socket"), std::string::npos) << msg;
    }
    if (comm) ncclCommAbort(comm);
  });
  mp::expectAllPassed(r);
}

TEST(BadInput, ValidOverridesInitialise) {
  mp::Options o;
  o.env = {{"NCCL_PROTO", "^LL128"}, {"NCCL_ALGO", "allreduce:ring;broadcast:ring"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank));
    checkAllReduceWorks(comm, ctx, 1);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}
