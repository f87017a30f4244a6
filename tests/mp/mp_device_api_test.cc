// The host side of NCCL 2.28's device API on real ranks (host communicators): windows registered the way
// nccl-tests' -R 2 does (inside a group) serve ordinary collectives and deregister; ncclDevCommCreate is
// refused with ncclInvalidUsage and a message on every rank, inside a group too, and the comm keeps working;
// the host teams; the requirement helpers' sizes; bad arguments.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mp/common/harness.h"
#include "nccl.h"
#include "nccl_device.h"

namespace {

constexpr size_t kCount = 1000;

// recv[i] must be the sum over ranks r of (r + 1) * 1000 + i.
void expectSum(const std::vector<float>& recv, int nranks, const char* what) {
  for (size_t i = 0; i < recv.size(); i++) {
    float want = 0;
    for (int r = 0; r < nranks; r++) want += float((r + 1) * 1000 + int(i));
    ASSERT_EQ(recv[i], want) << what << ": element " << i;
  }
}

TEST(DeviceApi, WindowsServeCollectivesAndDevCommIsRefusedOnEveryRank) {
  mp::Options o;
  o.timeoutSec = 90;
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_TIMEOUT", "60"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    const int n = ctx.nranks, me = ctx.rank;
    std::vector<float> send(kCount), recv(kCount, -1.0f);
    for (size_t i = 0; i < kCount; i++) send[i] = float((me + 1) * 1000 + int(i));

    // Registered as nccl-tests does with -R 2: both buffers, inside one group.
    mp::setStatus("window register");
    ncclWindow_t sendWin = nullptr, recvWin = nullptr;
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT_COMM(
        ncclCommWindowRegister(comm, send.data(), kCount * sizeof(float), &sendWin, NCCL_WIN_COLL_SYMMETRIC), comm);
    MP_NCCL_ASSERT_COMM(ncclCommWindowRegister(comm, recv.data(), kCount * sizeof(float), &recvWin, NCCL_WIN_DEFAULT),
                        comm);
    MP_NCCL_ASSERT(ncclGroupEnd());
    ASSERT_NE(sendWin, nullptr);
    ASSERT_NE(recvWin, nullptr);
    ASSERT_NE(sendWin, recvWin);
    // A host comm's window descriptor is host memory: an LSA team of one whose copy is the buffer itself.
    EXPECT_EQ(sendWin->lsaFlatBase, reinterpret_cast<char*>(send.data()));
    EXPECT_EQ(recvWin->lsaFlatBase, reinterpret_cast<char*>(recv.data()));
    EXPECT_EQ(sendWin->lsaRank, 0);
    EXPECT_EQ(sendWin->worldRank, me);
    EXPECT_EQ(recvWin->worldRank, me);

    mp::setStatus("allreduce on window buffers");
    MP_NCCL_ASSERT_COMM(ncclAllReduce(send.data(), recv.data(), kCount, ncclFloat32, ncclSum, comm, nullptr), comm);
    expectSum(recv, n, "allreduce on registered windows");
    if (testing::Test::HasFatalFailure()) return;

    // Refused at once on every rank, inside a group as nccl-tests -D calls it; nothing waits for a peer.
    mp::setStatus("ncclDevCommCreate");
    ncclDevCommRequirements_t reqs;
    std::memset(&reqs, 0, sizeof(reqs));
    reqs.lsaBarrierCount = 16;
    ncclDevComm_t devComm;
    std::memset(&devComm, 0x5a, sizeof(devComm));
    MP_NCCL_ASSERT(ncclGroupStart());
    EXPECT_EQ(ncclDevCommCreate(comm, &reqs, &devComm), ncclInvalidUsage);
    const std::string msg = mp::lastError(comm);
    EXPECT_NE(msg.find("device-initiated communication"), std::string::npos) << msg;
    EXPECT_TRUE(mp::mentionsRank(msg, me)) << msg;
    MP_NCCL_ASSERT(ncclGroupEnd());
    EXPECT_EQ(ncclDevCommDestroy(comm, &devComm), ncclInvalidUsage);
    EXPECT_EQ(ncclDevCommCreate(comm, nullptr, &devComm), ncclInvalidArgument);
    EXPECT_EQ(ncclDevCommCreate(nullptr, &reqs, &devComm), ncclInvalidArgument);

    // The host teams: the LSA team is this rank alone, the rail team every rank.
    ncclTeam_t world = ncclTeamWorld(comm), lsa = ncclTeamLsa(comm), rail = ncclTeamRail(comm);
    EXPECT_EQ(world.nRanks, n);
    EXPECT_EQ(world.rank, me);
    EXPECT_EQ(world.stride, 1);
    EXPECT_EQ(lsa.nRanks, 1);
    EXPECT_EQ(lsa.rank, 0);
    EXPECT_EQ(rail.nRanks, n);
    EXPECT_EQ(rail.rank, me);
    EXPECT_EQ(rail.stride, 1);
    for (int q = 0; q < n; q++) EXPECT_EQ(ncclTeamRankToWorld(comm, rail, q), q);
    EXPECT_EQ(ncclTeamRankToLsa(comm, world, me), 0);
    EXPECT_EQ(ncclTeamRankToLsa(comm, lsa, 0), 0);
    EXPECT_EQ(ncclTeamWorld(nullptr).nRanks, 0);
    EXPECT_EQ(ncclTeamRankToWorld(nullptr, world, 0), -1);

    // The comm still works after the refusal; then the windows go.
    mp::setStatus("allreduce after refusal");
    std::fill(recv.begin(), recv.end(), -1.0f);
    MP_NCCL_ASSERT_COMM(ncclAllReduce(send.data(), recv.data(), kCount, ncclFloat32, ncclSum, comm, nullptr), comm);
    expectSum(recv, n, "allreduce after ncclDevCommCreate was refused");
    if (testing::Test::HasFatalFailure()) return;
    MP_NCCL_ASSERT_COMM(ncclCommWindowDeregister(comm, sendWin), comm);
    MP_NCCL_ASSERT_COMM(ncclCommWindowDeregister(comm, recvWin), comm);
    EXPECT_EQ(ncclCommWindowDeregister(comm, sendWin), ncclInvalidArgument) << "deregistered twice";
    EXPECT_NE(mp::lastError(comm).find("not a window"), std::string::npos) << mp::lastError(comm);
    EXPECT_EQ(ncclCommWindowDeregister(comm, nullptr), ncclSuccess);

    // Bad arguments are refused with a message naming them; an empty range is a NULL window.
    ncclWindow_t w = reinterpret_cast<ncclWindow_t>(0x1);
    EXPECT_EQ(ncclCommWindowRegister(comm, send.data(), sizeof(float), &w, 0x80), ncclInvalidArgument);
    EXPECT_NE(mp::lastError(comm).find("winFlags"), std::string::npos) << mp::lastError(comm);
    EXPECT_EQ(ncclCommWindowRegister(comm, nullptr, sizeof(float), &w, 0), ncclInvalidArgument);
    EXPECT_NE(mp::lastError(comm).find("buff"), std::string::npos) << mp::lastError(comm);
    EXPECT_EQ(ncclCommWindowRegister(comm, send.data(), sizeof(float), nullptr, 0), ncclInvalidArgument);
    EXPECT_EQ(ncclCommWindowRegister(comm, send.data(), 0, &w, 0), ncclSuccess);
    EXPECT_EQ(w, nullptr);

    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// A window belongs to the communicator that registered it, and goes with it.
TEST(DeviceApi, WindowOfAnotherCommIsRefused) {
  mp::Options o;
  o.timeoutSec = 90;
  o.env = {{"BRAID_HOST_COMM", "1"}, {"BRAID_TIMEOUT", "60"}};
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm, dup;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    MP_NCCL_ASSERT_COMM(ncclCommSplit(comm, 0, ctx.rank, &dup, nullptr), comm);
    std::vector<int32_t> buf(64, ctx.rank);
    ncclWindow_t w = nullptr;
    MP_NCCL_ASSERT_COMM(ncclCommWindowRegister(comm, buf.data(), buf.size() * sizeof(int32_t), &w, 0), comm);
    EXPECT_EQ(ncclCommWindowDeregister(dup, w), ncclInvalidArgument);
    EXPECT_NE(mp::lastError(dup).find("another communicator"), std::string::npos) << mp::lastError(dup);
    MP_NCCL_ASSERT_COMM(ncclCommWindowDeregister(comm, w), comm);
    // Destroying a comm frees the windows it still has: afterwards the handle is no window at all.
    ncclWindow_t left = nullptr;
    MP_NCCL_ASSERT_COMM(ncclCommWindowRegister(dup, buf.data(), buf.size() * sizeof(int32_t), &left, 0), dup);
    MP_NCCL_ASSERT(ncclCommDestroy(dup));
    EXPECT_EQ(ncclCommWindowDeregister(comm, left), ncclInvalidArgument);
    EXPECT_NE(mp::lastError(comm).find("not a window"), std::string::npos) << mp::lastError(comm);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// The requirement helpers describe the resource buffers the inline device code in nccl_device/ uses.
TEST(DeviceApi, RequirementHelpers) {
  ncclTeam_t team = {4, 1, 1};
  ncclLsaBarrierHandle_t lsa;
  ncclDevResourceRequirements_t req;
  std::memset(&req, 0x7f, sizeof(req));
  std::memset(&lsa, 0x7f, sizeof(lsa));
  ASSERT_EQ(ncclLsaBarrierCreateRequirement(team, 16, &lsa, &req), ncclSuccess);
  EXPECT_EQ(lsa.nBarriers, 16);
  EXPECT_EQ(req.bufferSize, (3u * 16 + 16u * 4) * 4);
  EXPECT_EQ(req.bufferAlign, 4u);
  EXPECT_EQ(req.outBufferHandle, &lsa.bufHandle);
  EXPECT_EQ(req.next, nullptr);
  EXPECT_EQ(req.ginSignalCount, 0);
  EXPECT_EQ(req.outGinSignalStart, nullptr);

  ncclLLA2AHandle_t a2a;
  std::memset(&req, 0x7f, sizeof(req));
  ASSERT_EQ(ncclLLA2ACreateRequirement(8, ncclLLA2ACalcSlots(32, 12), &a2a, &req), ncclSuccess);
  EXPECT_EQ(a2a.nSlots, 64u) << "32 elements of 12 bytes take two 8-byte slots each";
  EXPECT_EQ(req.bufferSize, 8u * (1 + 2 * 64) * 16);
  EXPECT_EQ(req.bufferAlign, 16u);
  EXPECT_EQ(req.outBufferHandle, &a2a.bufHandle);
  EXPECT_EQ(ncclLLA2ACalcSlots(5, 8), 5);
  EXPECT_EQ(ncclLLA2ACalcSlots(5, 9), 10);
  EXPECT_EQ(ncclLLA2ACalcSlots(5, 0), -1);

  EXPECT_EQ(ncclLsaBarrierCreateRequirement(team, -1, &lsa, &req), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("nBarriers"), std::string::npos);
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(team, 1, nullptr, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLsaBarrierCreateRequirement(ncclTeam_t{0, 0, 1}, 1, &lsa, &req), ncclInvalidArgument);
  EXPECT_EQ(ncclLLA2ACreateRequirement(1, 1, &a2a, nullptr), ncclInvalidArgument);
  ncclGinBarrierHandle_t gin;
  EXPECT_EQ(ncclGinBarrierCreateRequirement(nullptr, team, 1, &gin, &req), ncclInvalidArgument);
}

}  // namespace
