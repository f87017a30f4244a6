// The communicator entry points: init (rank, config, all, scalable), finalize, destroy, abort, revoke, split,
// shrink, the async error and the queries. Each checks its arguments, then calls the runtime's lifecycle.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "api/api_common.h"
#include "core/bootstrap.h"
#include "core/param.h"
#include "runtime/comm_lifecycle.h"
#include "runtime/group.h"

using namespace braid;

namespace braid {
namespace {
// An init that fails inside a group fails the group too (its other inits would wait for this rank).
ncclResult_t noteInGroup(ncclResult_t res) {
  if (res != ncclSuccess && res != ncclInProgress && inGroup()) noteGroupError(res);
  return res;
}
}  // namespace
}  // namespace braid

BRAID_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
          ncclConfig_t* config) {
  return apiCall("ncclCommInitRankConfig", nullptr,
                 [&] { return noteInGroup(commInit(comm, nranks, commId, rank, config, "ncclCommInitRankConfig")); });
}

BRAID_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return apiCall("ncclCommInitRank", nullptr,
                 [&] { return noteInGroup(commInit(comm, nranks, commId, rank, nullptr, "ncclCommInitRank")); });
}

BRAID_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
          ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiCall("ncclCommInitRankScalable", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(commIds, "commIds", "ncclCommInitRankScalable"));
    if (nId < 1 || nId > nranks)
      return recordError(ncclInvalidArgument, "ncclCommInitRankScalable: nId %d is invalid (must be 1..nranks %d)",
                         nId, nranks);
    // One root serves any number of ranks here; the first id is the one every rank shares.
    return noteInGroup(commInit(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable"));
  });
}

BRAID_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return apiCall("ncclCommInitAll", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(comms, "comms", "ncclCommInitAll"));
    if (ndev < 1) return recordError(ncclInvalidArgument, "ncclCommInitAll: ndev %d is invalid (must be >= 1)", ndev);
    // Every entry is written (a comm or NULL) whatever happens, so the cleanup below and the caller never see
    // what the array held before.
    for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
    // Devices are checked before any rank starts: a rank that cannot start would leave the others waiting
    // for it in the bootstrap until its timeout.
    const bool devices = !params::HostComm() && gpusVisible();
    int nDevices = 0;
    if (devices && cudaGetDeviceCount(&nDevices) != cudaSuccess) {
      cudaGetLastError();
      nDevices = 0;
    }
    for (int i = 0; i < ndev; ++i) {
      const int d = devlist ? devlist[i] : i;
      if (d < 0 || (devices && d >= nDevices)) {
        if (devlist)
          return recordError(ncclInvalidArgument, "ncclCommInitAll: devlist[%d] = %d is not a device (%d visible)", i,
                             d, nDevices);
        return recordError(ncclInvalidArgument,
                           "ncclCommInitAll: ndev %d with devlist NULL needs %d devices, %d are visible", ndev, ndev,
                           nDevices);
      }
    }
    if (devlist != nullptr)
      for (int i = 0; i < ndev; ++i)
        for (int j = 0; j < i; ++j)
          if (devlist[i] == devlist[j])
            return recordError(ncclInvalidUsage, "ncclCommInitAll: devlist[%d] and devlist[%d] are both device %d", j,
                               i, devlist[i]);
    ncclUniqueId id;
    BRAID_CHECK(bootstrapCreateRootId(&id));
    std::vector<ncclResult_t> results(ndev, ncclSuccess);
    std::vector<std::string> messages(ndev);
    std::vector<std::thread> threads;
    for (int i = 0; i < ndev; ++i)
      threads.emplace_back([&, i]() {
        ErrorScope scope;
        // Rank i drives device devlist[i] (or i): the device is chosen by the thread that creates the comm.
        if (devices) {
          cudaError_t e = cudaSetDevice(devlist ? devlist[i] : i);
          if (e != cudaSuccess) {
            results[i] = recordError(ncclInvalidArgument, "ncclCommInitAll: cannot use device %d (devlist[%d]): %s",
                                     devlist ? devlist[i] : i, i, cudaGetErrorString(e));
            messages[i] = pendingError();
            return;
          }
        }
        results[i] = commInit(&comms[i], ndev, id, i, nullptr, "ncclCommInitAll");
        messages[i] = pendingError();
      });
    for (auto& t : threads) t.join();
    for (int i = 0; i < ndev; ++i)
      if (results[i] != ncclSuccess) {
        for (int j = 0; j < ndev; ++j)
          if (comms[j]) destroyComm(comms[j], true), comms[j] = nullptr;
        return recordError(results[i], "ncclCommInitAll: rank %d: %s", i, messages[i].c_str());
      }
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return apiCall("ncclCommFinalize", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommFinalize"));
    BRAID_CHECK(checkInitDone(comm, "ncclCommFinalize"));
    // Host communicators complete every operation before returning, so there is nothing left to flush.
    comm->finalized = true;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return apiCall("ncclCommDestroy", nullptr, [&]() -> ncclResult_t {
    if (comm == nullptr) return ncclSuccess;
    BRAID_CHECK(checkComm(comm, "ncclCommDestroy"));
    // Freeing it would leave the group's ncclGroupEnd with a dangling communicator.
    if (int mine = groupOpsOf(comm))
      return recordError(ncclInvalidUsage,
                         "ncclCommDestroy: %d operation(s) of this communicator are queued in an open group on this "
                         "thread (ncclGroupStart without ncclGroupEnd); end the group first, or use ncclCommAbort",
                         mine);
    if (comm->deferredInit.load())
      return recordError(ncclInvalidUsage,
                         "ncclCommDestroy: the communicator's init is queued in an open group (ncclCommInitRank inside "
                         "ncclGroupStart, no ncclGroupEnd yet); end the group first, or use ncclCommAbort");
    if (int queued = comm->groupQueued.load())
      return recordError(ncclInvalidUsage,
                         "ncclCommDestroy: %d operation(s) of this communicator are queued in another thread's open "
                         "group; end that group first",
                         queued);
    std::shared_ptr<void> windows = detachCommWindows(comm);  // freed once the comm is gone
    destroyComm(comm, false);
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return apiCall("ncclCommAbort", nullptr, [&]() -> ncclResult_t {
    if (comm == nullptr) return ncclSuccess;
    BRAID_CHECK(checkComm(comm, "ncclCommAbort"));
    // Ops of this comm in the caller's open group are dropped; that group's end then fails and runs nothing.
    char reason[160];
    snprintf(reason, sizeof(reason), "rank %d: its communicator was aborted (ncclCommAbort) while queued", comm->rank);
    if (int dropped = dropGroupOps(comm, reason))
      BRAID_INFO(kSubInit, "ncclCommAbort: dropped %d operation(s) queued in this thread's open group", dropped);
    if (dropGroupInit(comm))
      BRAID_INFO(kSubInit, "ncclCommAbort: dropped the communicator's init queued in this thread's open group");
    std::shared_ptr<void> windows = detachCommWindows(comm);  // freed once the comm is gone
    destroyComm(comm, true);
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return apiCall("ncclCommRevoke", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommRevoke"));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return recordError(ncclInvalidArgument, "ncclCommRevoke: revokeFlags %d is invalid", revokeFlags);
    return commRevoke(comm);
  });
}

BRAID_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return apiCall("ncclCommGetAsyncError", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommGetAsyncError"));
    BRAID_CHECK(checkPtr(asyncError, "asyncError", "ncclCommGetAsyncError"));
    return commAsyncError(comm, asyncError);
  });
}

BRAID_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return apiCall("ncclCommCount", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommCount"));
    BRAID_CHECK(checkPtr(count, "count", "ncclCommCount"));
    *count = comm->nranks;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return apiCall("ncclCommCuDevice", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommCuDevice"));
    BRAID_CHECK(checkPtr(device, "device", "ncclCommCuDevice"));
    *device = comm->cudaDev;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return apiCall("ncclCommUserRank", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommUserRank"));
    BRAID_CHECK(checkPtr(rank, "rank", "ncclCommUserRank"));
    *rank = comm->rank;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
          ncclConfig_t* config) {
  return apiCall("ncclCommSplit", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommSplit"));
    BRAID_CHECK(checkInitDone(comm, "ncclCommSplit"));
    if (comm->revoked.load())
      return recordError(ncclInvalidUsage,
                         "ncclCommSplit: rank %d: the communicator was revoked; it can only be shrunk or destroyed",
                         comm->rank);
    BRAID_CHECK(checkPtr(newcomm, "newcomm", "ncclCommSplit"));
    *newcomm = nullptr;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return recordError(ncclInvalidArgument, "ncclCommSplit: color %d is invalid (>= 0 or NCCL_SPLIT_NOCOLOR)",
                         color);
    if (!comm->bootstrap) return recordError(ncclInvalidUsage, "ncclCommSplit: communicator is not initialised");
    CommConfig checked;
    BRAID_CHECK(parseCommConfig(config, "ncclCommSplit", &checked));  // a bad config fails at the call, in a group too
    return commSplit(comm, color, key, newcomm, config);
  });
}

BRAID_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
          ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return apiCall("ncclCommShrink", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommShrink"));
    BRAID_CHECK(checkInitDone(comm, "ncclCommShrink"));
    BRAID_CHECK(checkPtr(newcomm, "newcomm", "ncclCommShrink"));
    RankTag tag(comm->rank);
    *newcomm = nullptr;
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr))
      return recordError(ncclInvalidArgument, "ncclCommShrink: excludeRanksList/excludeRanksCount (%d) are invalid",
                         excludeRanksCount);
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
      return recordError(ncclInvalidArgument, "ncclCommShrink: shrinkFlags %d is invalid", shrinkFlags);
    std::vector<uint8_t> excluded(comm->nranks, 0);
    for (int i = 0; i < excludeRanksCount; ++i) {
      BRAID_CHECK(checkRank(excludeRanksList[i], comm->nranks, "excludeRanksList entry", "ncclCommShrink"));
      excluded[excludeRanksList[i]] = 1;
    }
    if (excluded[comm->rank])
      return recordError(ncclInvalidArgument, "ncclCommShrink: this rank (%d) is in excludeRanksList", comm->rank);
    CommConfig checked;
    BRAID_CHECK(parseCommConfig(config, "ncclCommShrink", &checked));  // a bad config fails at the call, in a group too
    return commShrink(comm, excluded, newcomm, config);
  });
}
