/* Braid: NCCL 2.28's device-side communicator API entry points. Braid exports them for ABI completeness
 * (PyTorch imports them); they return ncclInvalidUsage with a message until the device API is built. */
#ifndef NCCL_DEVICE_H_
#define NCCL_DEVICE_H_

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclDevCommRequirements {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int resourceRequirementsCount;
  void* resourceRequirementsList;
  int teamRequirementsCount;
  void* teamRequirementsList;
  int lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount;
  int lsaLLA2ASlotCount;
  int ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
} ncclDevCommRequirements_t;

/* Opaque here: Braid never fills one (ncclDevCommCreate is not supported yet). */
typedef struct ncclDevComm {
  char opaque[1024];
} ncclDevComm_t;

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs, ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs, ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_DEVICE_H_ */
