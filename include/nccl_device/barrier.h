/* Braid device API: ncclBarrierSession, NCCL's barrier over an inner LSA team and an outer GIN team. The
 * LSA-only form (ncclTeamTagLsa) runs an ncclLsaBarrierSession; every form that takes an ncclGin needs
 * GPU-initiated networking, which Braid does not have, and traps. */
#ifndef NCCL_DEVICE_BARRIER_H_
#define NCCL_DEVICE_BARRIER_H_

#include "gin.h"
#include "lsa_barrier.h"

#if defined(__CUDACC__)
template <typename Coop>
struct ncclBarrierSession {
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop c, ncclTeam innerTeam, ncclTeam outerTeam, ncclGin gin,
                                        ncclLsaBarrierHandle innerBarHandle, ncclGinBarrierHandle outerBarHandle,
                                        uint32_t index, bool multimem = false, ncclMultimemHandle innerMmHandle = {})
      : coop_(c), hasLsa_(false) {
    braidDeviceApiTrap("ncclBarrierSession over a GIN team: GPU-initiated networking is not supported by Braid");
  }
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop c, ncclTeamTagWorld, ncclGin gin, uint32_t index, bool multimem = false)
      : coop_(c), hasLsa_(false) {
    braidDeviceApiTrap("ncclBarrierSession(ncclTeamTagWorld): GPU-initiated networking is not supported by Braid");
  }
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop c, ncclTeamTagLsa tag, ncclDevComm const& comm, uint32_t index,
                                        bool multimem = false)
      : coop_(c), hasLsa_(true), lsa_(c, comm, tag, index, multimem) {}
  NCCL_DEVICE_INLINE ncclBarrierSession(Coop c, ncclTeamTagRail, ncclGin gin, uint32_t index)
      : coop_(c), hasLsa_(false) {
    braidDeviceApiTrap("ncclBarrierSession(ncclTeamTagRail): GPU-initiated networking is not supported by Braid");
  }

  NCCL_DEVICE_INLINE ~ncclBarrierSession() {
    if (hasLsa_) lsa_.~ncclLsaBarrierSession<Coop>();
  }

  ncclBarrierSession(ncclBarrierSession const&) = delete;

  NCCL_DEVICE_INLINE ncclLsaBarrierSession<Coop>& lsaBarrier() { return lsa_; }
  NCCL_DEVICE_INLINE ncclGinBarrierSession<Coop>& ginBarrier() {
    braidDeviceApiTrap("ncclBarrierSession::ginBarrier: GPU-initiated networking is not supported by Braid");
  }

  NCCL_DEVICE_INLINE void sync(Coop c, cuda::memory_order order, ncclGinFenceLevel) { lsa_.sync(c, order); }

 private:
  Coop coop_;
  bool hasLsa_;
  union {
    ncclLsaBarrierSession<Coop> lsa_;  // constructed only by the ncclTeamTagLsa form
  };
};
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_BARRIER_H_ */
