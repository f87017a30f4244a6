/* Braid device API: the LSA barrier, a barrier among the ranks of a team inside the LSA team, kept in a
 * resource buffer of the device communicator and run by plain stores to and loads from peers' memory.
 *
 * The resource buffer holds 3*nBarriers + nBarriers*team.nRanks 32-bit words (ncclLsaBarrierCreateRequirement):
 *   [0, nB)            epoch one ncclLsaBarrierSession leaves to the next, multicast barriers (not supported by Braid)
 *   [nB, 2nB)          epoch one ncclLsaBarrierSession leaves to the next, unicast barriers
 *   [2nB, 3nB)         multicast inboxes
 *   [3nB + b*n + p]    unicast inbox of barrier b where team rank p signals its arrival
 * A rank arrives by writing epoch+1 into its slot of every peer's inbox; it has waited once every peer's slot
 * in its own inbox has reached epoch+1 (compared modulo 2^32). */
#ifndef NCCL_DEVICE_LSA_BARRIER_H_
#define NCCL_DEVICE_LSA_BARRIER_H_

#include "core.h"

#if defined(__CUDACC__)
template <typename Coop>
struct ncclLsaBarrierSession {
  Coop coop;
  ncclDevComm const& comm;
  ncclTeam team;
  ncclLsaBarrierHandle handle;
  int index;
  bool multimem;
  ncclMultimemHandle mmHandle;
  uint32_t epoch;

  /* Every thread of `coop` constructs the ncclLsaBarrierSession; `index` picks one of handle.nBarriers barriers. */
  NCCL_DEVICE_INLINE ncclLsaBarrierSession(Coop c, ncclDevComm const& devComm, ncclTeam tm, ncclLsaBarrierHandle h,
                                           uint32_t barrierIndex, bool useMultimem = false, ncclMultimemHandle mm = {})
      : coop(c),
        comm(devComm),
        team(tm),
        handle(h),
        index(int(barrierIndex)),
        multimem(useMultimem),
        mmHandle(mm),
        epoch(0) {
    if (multimem)
      braidDeviceApiTrap("ncclLsaBarrierSession: multicast barriers (NVLink SHARP) are not supported by Braid");
    epoch = localWords()[handle.nBarriers + index];
  }

  /* The device communicator's own barriers over its LSA team. */
  NCCL_DEVICE_INLINE ncclLsaBarrierSession(Coop c, ncclDevComm const& devComm, ncclTeamTagLsa, uint32_t barrierIndex,
                                           bool useMultimem = false)
      : ncclLsaBarrierSession(c, devComm, ncclTeamLsa(devComm), devComm.lsaBarrier, barrierIndex, useMultimem,
                              devComm.lsaMultimem) {}

  /* The next ncclLsaBarrierSession on this barrier continues from the epoch this one reached. */
  NCCL_DEVICE_INLINE ~ncclLsaBarrierSession() {
    if (coop.thread_rank() == 0) localWords()[handle.nBarriers + index] = epoch;
    coop.sync();
  }

  ncclLsaBarrierSession(ncclLsaBarrierSession const&) = delete;

  /* Signal every peer that this rank has arrived; with a release order, this rank's earlier writes (of every
   * thread of coop) are visible to a peer that has waited. */
  NCCL_DEVICE_INLINE void arrive(Coop, cuda::memory_order order) {
    coop.sync();
    const cuda::memory_order storeOrder = nccl::utility::releaseOrderOf(order);
    for (int i = coop.thread_rank(); i < team.nRanks - 1; i += coop.size()) {
      const int peer = i < team.rank ? i : i + 1;
      cuda::atomic_ref<uint32_t> slot(*inbox(peer, team.rank));
      slot.store(epoch + 1, storeOrder);
    }
  }

  /* Wait until every peer has arrived; with an acquire order, their writes before arriving are visible to
   * every thread of coop afterwards. */
  NCCL_DEVICE_INLINE void wait(Coop, cuda::memory_order order) {
    const cuda::memory_order loadOrder = nccl::utility::acquireOrderOf(order);
    const uint32_t target = epoch + 1;
    for (int i = coop.thread_rank(); i < team.nRanks - 1; i += coop.size()) {
      const int peer = i < team.rank ? i : i + 1;
      cuda::atomic_ref<uint32_t> slot(*inbox(team.rank, peer));
      while (int32_t(slot.load(loadOrder) - target) < 0) {
      }
    }
    epoch = target;
    coop.sync();
  }

  NCCL_DEVICE_INLINE void sync(Coop c, cuda::memory_order order) {
    arrive(c, order);
    wait(c, order);
  }

 private:
  NCCL_DEVICE_INLINE uint32_t* localWords() const {
    return static_cast<uint32_t*>(ncclGetResourceBufferLocalPointer(comm, handle.bufHandle));
  }
  /* The slot in team rank `owner`'s inbox where team rank `from` signals. */
  NCCL_DEVICE_INLINE uint32_t* inbox(int owner, int from) const {
    uint32_t* words = static_cast<uint32_t*>(ncclGetResourceBufferPeerPointer(comm, handle.bufHandle, team, owner));
    return words + 3 * handle.nBarriers + index * team.nRanks + from;
  }
};
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_LSA_BARRIER_H_ */
