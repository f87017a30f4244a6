// Groups on host communicators: several collectives plus sends/receives of different sizes issued between
// one ncclGroupStart/End (also nested), results checked after ncclGroupEnd; empty and count-0 groups.
#include <gtest/gtest.h>

#include <unistd.h>

#include <memory>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/dtypes.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

std::vector<Case> mixedCases(int n, uint64_t seed, size_t scale) {
  const int last = n - 1;
  auto mk = [&](Coll cl, ncclDataType_t dt, int op, size_t count, int root, bool inPlace) {
    Case c;
    c.coll = cl;
    c.dt = dt;
    c.opKind = op;
    c.count = count;
    c.root = root;
    c.inPlace = inPlace;
    c.seed = seed++;
    return c;
  };
  return {
      mk(Coll::kAllReduce, ncclFloat32, ncclSum, 1001 * scale, 0, false),
      mk(Coll::kAllGather, ncclInt32, -1, 37 * scale, 0, false),
      mk(Coll::kSendRecvAllPairs, ncclFloat32, -1, 17 * scale, 0, false),
      mk(Coll::kBroadcast, ncclUint8, -1, 4096 * scale, last, false),
      mk(Coll::kReduceScatter, ncclFloat16, ncclAvg, 100 * scale, 0, false),
      mk(Coll::kReduce, ncclBfloat16, ncclMax, 513 * scale, 0, false),
      mk(Coll::kSendRecvRing, ncclFloat64, -1, 2049 * scale, 0, false),
      mk(Coll::kAlltoAll, ncclInt64, -1, 33 * scale, 0, false),
      mk(Coll::kAllReduce, ncclInt8, mp::kOpPreMulDev, 77 * scale, 0, true),
      mk(Coll::kGather, ncclFloat8e5m2, -1, 50 * scale, last, false),
      mk(Coll::kScatter, ncclFloat8e4m3, -1, 51 * scale, 0, false),
      mk(Coll::kAllGather, ncclUint64, -1, 5 * scale, 0, true),
      mk(Coll::kReduce, ncclUint32, mp::kOpPreMulImm, 3 * scale, last, true),
      mk(Coll::kBcast, ncclFloat32, -1, 0, last, false),
      mk(Coll::kAllReduce, ncclFloat32, ncclMin, 0, 0, false),
      mk(Coll::kAllReduce, ncclFloat32, ncclProd, 100000, 0, false),
  };
}

// Issues all cases inside one group (the second half inside a nested group), then checks them all.
void runMixedGroup(ncclComm_t comm, const mp::RankCtx& ctx, const std::vector<Case>& cases) {
  std::vector<std::unique_ptr<mp::CaseRun>> runs;
  for (auto& c : cases) {
    runs.emplace_back(new mp::CaseRun(c, ctx.rank, ctx.nranks));
    runs.back()->prepare();
  }
  mp::setStatus("mixed group: issuing %zu ops", runs.size());
  MP_NCCL_ASSERT(ncclGroupStart());
  size_t half = runs.size() / 2;
  for (size_t i = 0; i < runs.size(); i++) {
    if (i == half) MP_NCCL_ASSERT(ncclGroupStart());
    ASSERT_EQ(runs[i]->issue(comm, true), ncclSuccess);
  }
  MP_NCCL_ASSERT(ncclGroupEnd());  // nested: nothing has to run yet
  mp::setStatus("mixed group: ncclGroupEnd");
  MP_NCCL_ASSERT_COMM(ncclGroupEnd(), comm);
  for (auto& r : runs) r->check();
  for (auto& r : runs) r->release(comm);
}

void groupBody(mp::RankCtx& ctx) {
  ncclComm_t comm;
  mp::initComm(ctx, &comm);
  if (testing::Test::HasFatalFailure()) return;
  mp::setReportBudget(30);
  // A group of count-0 operations is fine.
  MP_NCCL_ASSERT(ncclGroupStart());
  MP_NCCL_ASSERT(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, nullptr));
  MP_NCCL_ASSERT(ncclSend(nullptr, 0, ncclInt8, (ctx.rank + 1) % ctx.nranks, comm, nullptr));
  MP_NCCL_ASSERT(ncclRecv(nullptr, 0, ncclInt8, (ctx.rank + ctx.nranks - 1) % ctx.nranks, comm, nullptr));
  MP_NCCL_ASSERT_COMM(ncclGroupEnd(), comm);
  for (int iter = 0; iter < 3; iter++) {
    runMixedGroup(comm, ctx, mixedCases(ctx.nranks, 100 + iter * 50, iter == 2 ? 20 : 1));
    if (testing::Test::HasFatalFailure()) return;
  }
  // The comm still runs plain collectives after groups.
  Case c;
  c.coll = Coll::kAllReduce;
  c.dt = ncclInt32;
  c.count = 999;
  ASSERT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
  mp::reportSuppressed();
  MP_NCCL_ASSERT_COMM(ncclCommDestroy(comm), nullptr);
}

// Empty groups (nothing issued between Start and End, also nested) succeed and leave the comm usable.
TEST(Group, EmptyGroup) {
  mp::Options o;
  o.timeoutSec = 30;
  mp::expectAllPassed(mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    mp::setStatus("empty group");
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclGroupEnd());
    mp::setStatus("empty nested group");
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclGroupEnd());
    MP_NCCL_ASSERT(ncclGroupEnd());
    Case c;
    c.coll = Coll::kAllReduce;
    c.count = 10;
    EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  }));
}

// A rank whose last operation is a send may destroy its comm and exit as soon as the send has completed;
// the receiver must still get all of the data (it is in flight or in the FIFO, not lost with the sender).
void peerExitsAfterLastSend(bool sockets, size_t bytes, int recvDelayUs) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"NCCL_BUFFSIZE", "65536"}, {"BRAID_TIMEOUT", "20"}};
  if (sockets) o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  mp::expectAllPassed(mp::runRanks(2, o, [=](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    std::vector<uint8_t> buf(bytes);
    if (ctx.rank == 1) {
      for (size_t i = 0; i < bytes; i++) buf[i] = (uint8_t)(i * 7 + 3);
      mp::setStatus("send, then destroy and exit");
      MP_NCCL_ASSERT_COMM(ncclSend(buf.data(), bytes, ncclUint8, 0, comm, nullptr), comm);
      MP_NCCL_ASSERT(ncclCommDestroy(comm));
      return;
    }
    usleep(recvDelayUs);
    mp::setStatus("recv from a peer that may be gone");
    MP_NCCL_ASSERT_COMM(ncclRecv(buf.data(), bytes, ncclUint8, 1, comm, nullptr), comm);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += buf[i] != (uint8_t)(i * 7 + 3);
    EXPECT_EQ(bad, 0u) << "bytes wrong of " << bytes;
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  }));
}

TEST(P2p, PeerExitsRightAfterLastSend_large_shm) { peerExitsAfterLastSend(false, 4 << 20, 200000); }
TEST(P2p, PeerExitsRightAfterLastSend_large_socket) { peerExitsAfterLastSend(true, 4 << 20, 200000); }
TEST(P2p, PeerExitsRightAfterLastSend_small_shm) { peerExitsAfterLastSend(false, 1000, 500000); }
TEST(P2p, PeerExitsRightAfterLastSend_small_socket) { peerExitsAfterLastSend(true, 1000, 500000); }

TEST(Group, MixedCollectivesAndP2p_3ranks_shm) {
  mp::Options o;
  o.env = {{"BRAID_HOST_NCHANNELS", "2"}, {"NCCL_BUFFSIZE", "65536"}, {"BRAID_TIMEOUT", "60"}};
  o.timeoutSec = 120;
  mp::expectAllPassed(mp::runRanks(3, o, groupBody));
}

TEST(Group, MixedCollectivesAndP2p_4ranks_socket) {
  mp::Options o;
  o.env = {{"NCCL_SHM_DISABLE", "1"}, {"NCCL_BUFFSIZE", "65536"}, {"BRAID_TIMEOUT", "60"}};
  o.timeoutSec = 120;
  mp::expectAllPassed(mp::runRanks(4, o, groupBody));
}

TEST(Group, MixedCollectivesAndP2p_1rank) {
  mp::Options o;
  o.timeoutSec = 60;
  mp::expectAllPassed(mp::runRanks(1, o, groupBody));
}

}  // namespace
