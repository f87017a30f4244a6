// The host side of NCCL 2.28's device API (nccl_device.h): device communicators, the teams of a host
// communicator and the requirement helpers. Braid has no device-initiated communication yet, so
// ncclDevCommCreate refuses with ncclInvalidUsage: it decides alone, on every rank at once, with no exchange
// between ranks, so no rank waits for another. Consistently with that, the LSA team (the ranks whose memory
// this rank's device code may load and store through the device API) is this rank alone, and windows
// (register_api.cc) describe just the local buffer.
#include <cstring>

#include "api/api_common.h"
#include "nccl_device.h"

namespace braid {
namespace {
// A team function cannot return an error: a bad comm yields an empty team (or rank -1) and records why, so
// ncclGetLastError explains the next failure.
bool teamComm(const ncclComm* comm, const char* fn) {
  return apiCall(fn, nullptr, [&]() { return checkComm(comm, fn); }) == ncclSuccess;
}

ncclTeam_t makeTeam(int nRanks, int rank, int stride) {
  ncclTeam_t t;
  t.nRanks = nRanks;
  t.rank = rank;
  t.stride = stride;
  return t;
}

constexpr int kLsaSize = 1;  // see the file comment
constexpr int kLsaSelf = 0;

ncclResult_t checkCount(int n, const char* arg, const char* fn) {
  if (n < 0) return recordError(ncclInvalidArgument, "%s: %s %d is negative", fn, arg, n);
  return ncclSuccess;
}

ncclResult_t checkTeam(ncclTeam_t team, const char* fn) {
  if (team.nRanks < 1 || team.rank < 0 || team.rank >= team.nRanks)
    return recordError(ncclInvalidArgument, "%s: team {nRanks %d, rank %d, stride %d} is not a team", fn, team.nRanks,
                       team.rank, team.stride);
  return ncclSuccess;
}
}  // namespace
}  // namespace braid

using namespace braid;

BRAID_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
          ncclDevComm_t* outDevComm) {
  return apiCall("ncclDevCommCreate", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclDevCommCreate"));
    BRAID_CHECK(checkPtr(reqs, "reqs", "ncclDevCommCreate"));
    BRAID_CHECK(checkPtr(outDevComm, "outDevComm", "ncclDevCommCreate"));
    return recordError(ncclInvalidUsage,
                       "ncclDevCommCreate: rank %d: Braid does not support device-initiated communication (NCCL's "
                       "device API: LSA kernels, multicast, GIN); collectives and send/recv on this communicator "
                       "work as usual",
                       comm->rank);
  });
}

BRAID_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  return apiCall("ncclDevCommDestroy", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclDevCommDestroy"));
    BRAID_CHECK(checkPtr(devComm, "devComm", "ncclDevCommDestroy"));
    return recordError(ncclInvalidUsage,
                       "ncclDevCommDestroy: rank %d: devComm %p is not a device communicator (Braid's "
                       "ncclDevCommCreate creates none)",
                       comm->rank, static_cast<const void*>(devComm));
  });
}

BRAID_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm) {
  if (!teamComm(comm, "ncclTeamWorld")) return makeTeam(0, 0, 0);
  return makeTeam(comm->nranks, comm->rank, 1);
}

BRAID_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm) {
  if (!teamComm(comm, "ncclTeamLsa")) return makeTeam(0, 0, 0);
  return makeTeam(kLsaSize, kLsaSelf, 1);
}

// The world ranks with this rank's LSA index: with LSA teams of one, every rank.
BRAID_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm) {
  if (!teamComm(comm, "ncclTeamRail")) return makeTeam(0, 0, 0);
  return makeTeam(comm->nranks / kLsaSize, comm->rank / kLsaSize, kLsaSize);
}

BRAID_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!teamComm(comm, "ncclTeamRankToWorld")) return -1;
  return comm->rank + (rank - team.rank) * team.stride;
}

BRAID_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank) {
  if (!teamComm(comm, "ncclTeamRankToLsa")) return -1;
  return kLsaSelf + (rank - team.rank) * team.stride;
}

// The layout each requirement asks for is the one the matching device code in nccl_device/ uses.
BRAID_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
          ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return apiCall("ncclLsaBarrierCreateRequirement", nullptr, [&]() -> ncclResult_t {
    static const char* fn = "ncclLsaBarrierCreateRequirement";
    BRAID_CHECK(checkTeam(team, fn));
    BRAID_CHECK(checkCount(nBarriers, "nBarriers", fn));
    BRAID_CHECK(checkPtr(outHandle, "outHandle", fn));
    BRAID_CHECK(checkPtr(outReq, "outReq", fn));
    std::memset(outReq, 0, sizeof(*outReq));
    outHandle->bufHandle = 0;
    outHandle->nBarriers = nBarriers;
    // Two saved epochs and a multicast inbox per barrier, then one unicast inbox word per barrier and rank.
    outReq->bufferSize = (3 * size_t(nBarriers) + size_t(nBarriers) * size_t(team.nRanks)) * sizeof(uint32_t);
    outReq->bufferAlign = alignof(uint32_t);
    outReq->outBufferHandle = &outHandle->bufHandle;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
          ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return apiCall("ncclGinBarrierCreateRequirement", comm, [&]() -> ncclResult_t {
    static const char* fn = "ncclGinBarrierCreateRequirement";
    BRAID_CHECK(checkComm(comm, fn));
    BRAID_CHECK(checkTeam(team, fn));
    BRAID_CHECK(checkCount(nBarriers, "nBarriers", fn));
    BRAID_CHECK(checkPtr(outHandle, "outHandle", fn));
    BRAID_CHECK(checkPtr(outReq, "outReq", fn));
    std::memset(outReq, 0, sizeof(*outReq));
    outHandle->signal0 = 0;
    outHandle->bufHandle = 0;
    // One word per barrier and GIN context, and one signal per barrier.
    outReq->bufferSize = size_t(nBarriers) * NCCL_GIN_MAX_CONTEXTS * sizeof(uint32_t);
    outReq->bufferAlign = alignof(uint32_t);
    outReq->outBufferHandle = &outHandle->bufHandle;
    outReq->ginSignalCount = nBarriers;
    outReq->outGinSignalStart = &outHandle->signal0;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
          ncclDevResourceRequirements_t* outReq) {
  return apiCall("ncclLLA2ACreateRequirement", nullptr, [&]() -> ncclResult_t {
    static const char* fn = "ncclLLA2ACreateRequirement";
    BRAID_CHECK(checkCount(nBlocks, "nBlocks", fn));
    BRAID_CHECK(checkCount(nSlots, "nSlots", fn));
    BRAID_CHECK(checkPtr(outHandle, "outHandle", fn));
    BRAID_CHECK(checkPtr(outReq, "outReq", fn));
    std::memset(outReq, 0, sizeof(*outReq));
    outHandle->bufHandle = 0;
    outHandle->nSlots = static_cast<uint32_t>(nSlots);
    // Per block: a line saving the epoch, then two banks of nSlots 16-byte lines (ll_a2a.h).
    outReq->bufferSize = size_t(nBlocks) * (1 + 2 * size_t(nSlots)) * 16;
    outReq->bufferAlign = 16;
    outReq->outBufferHandle = &outHandle->bufHandle;
    return ncclSuccess;
  });
}

BRAID_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  ncclResult_t ok = apiCall("ncclLLA2ACalcSlots", nullptr, [&]() -> ncclResult_t {
    if (maxElts < 0 || maxEltSize < 1)
      return recordError(ncclInvalidArgument, "ncclLLA2ACalcSlots: maxElts %d / maxEltSize %d out of range", maxElts,
                         maxEltSize);
    return ncclSuccess;
  });
  if (ok != ncclSuccess) return -1;
  return maxElts * ((maxEltSize + 7) / 8);  // 8 payload bytes a slot
}
