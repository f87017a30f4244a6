/* Compiled (not run) by the build's C compiler in two ways, with and without the CUDA toolkit on the include
 * path: nccl.h and nccl_device.h are C headers too, and the device API's C types and host functions are usable
 * from C. */
#include <nccl.h>
#include <nccl_device.h>

int useDeviceApiFromC(ncclComm_t comm) {
  ncclTeam_t world = ncclTeamWorld(comm);
  ncclTeam_t lsa = ncclTeamLsa(comm);
  ncclDevCommRequirements_t reqs = {0};
  ncclDevComm_t devComm;
  ncclLsaBarrierHandle_t bar;
  ncclDevResourceRequirements_t res;
  reqs.lsaBarrierCount = 4;
  reqs.lsaMultimem = false;
  if (ncclLsaBarrierCreateRequirement(lsa, 4, &bar, &res) != ncclSuccess) return -1;
  reqs.resourceRequirementsList = &res;
  if (ncclDevCommCreate(comm, &reqs, &devComm) != ncclSuccess) return -2;
  return ncclTeamRankToTeam(world, lsa, 0) + ncclTeamRankInDifference(world, lsa, 0) + (int)sizeof(struct ncclDevComm);
}
