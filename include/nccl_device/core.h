/* Braid device API, core: the types of NCCL 2.28.9's device API with its struct layouts byte for byte (checked
 * below), the host entry points (device communicators, teams, requirement helpers), the team arithmetic and
 * the window pointer functions that load/store-accessible (LSA) device code uses.
 *
 * NCCL states that this API is not ABI-stable across minor versions: these layouts are 2.28.9's and only
 * 2.28.9's. A program built against these headers is built for 2.28's device API (NCCL 2.29 changed it). */
#ifndef NCCL_DEVICE_CORE_H_
#define NCCL_DEVICE_CORE_H_

#include "../nccl.h"
#include "coop.h"
#include "utility.h"

/* ---- Types ---------------------------------------------------------------------------------------------- */

#define NCCL_GIN_MAX_CONTEXTS 4

typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclTeam ncclTeam_t;
typedef struct ncclMultimemHandle ncclMultimemHandle_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclTeamRequirements ncclTeamRequirements_t;

/* A resource buffer inside a device communicator's resource window, in units of 128 bytes. */
typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;
typedef void* ncclGinWindow_t;

/* A team: nRanks ranks, this rank being `rank`, whose world ranks are `stride` apart. */
struct ncclTeam {
  int nRanks, rank, stride;
};

#ifdef __cplusplus
/* Names of the teams every device communicator has built in (constructor tags). */
struct ncclTeamTagWorld {};
struct ncclTeamTagLsa {};
struct ncclTeamTagRail {};
template <typename T>
struct ncclSymPtr;
#endif

/* What ncclDevCommCreate is asked to provide. */
struct ncclDevCommRequirements {
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
};

/* One resource buffer (and GIN signals/counters) a device-side object needs; a linked list. */
struct ncclDevResourceRequirements {
  ncclDevResourceRequirements_t* next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t* outGinSignalStart;
  ncclGinCounter_t* outGinCounterStart;
};

struct ncclTeamRequirements {
  ncclTeamRequirements_t* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t* outMultimemHandle;
};

/* The device-side window behind ncclWindow_t (nccl.h): rank i of the LSA team holds its copy of the window at
 * lsaFlatBase + i * stride4G * 4 GiB. */
struct ncclWindow_vidmem {
  void* winHost;
  char* lsaFlatBase;
  int lsaRank;
  int worldRank;
  uint32_t stride4G;
  uint32_t mcOffset4K;
  uint32_t ginOffset4K;
  ncclGinWindow_t ginWins[NCCL_GIN_MAX_CONTEXTS];
};

struct ncclMultimemHandle {
  void* mcBasePtr;
};

/* An LSA barrier's state: nBarriers barriers in the resource buffer bufHandle. */
struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
};

struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t bufHandle;
};

/* A low-latency all-to-all's state: nSlots 16-byte slots per block, in the resource buffer bufHandle. */
struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
};

struct ncclDevCommWindowTable;
#ifdef __cplusplus
/* The windows of a device communicator, 32 per node of a linked list. */
struct ncclDevCommWindowTable {
  struct Entry {
    uintptr_t base, size;
    ncclWindow_t window;
  } entries[32];
  struct ncclDevCommWindowTable* next;
};
#endif

/* The device communicator, passed to kernels by value. */
struct ncclDevComm {
  int rank, nRanks;
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  struct ncclDevCommWindowTable* windowTable;
  ncclWindow_t resourceWindow;
  struct ncclWindow_vidmem resourceWindow_inlined;
  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;
  uint8_t ginContextCount;
  uint8_t ginTypes[NCCL_GIN_MAX_CONTEXTS];
  void* ginHandles[NCCL_GIN_MAX_CONTEXTS];
  uint32_t ginSignalBase;
  int ginSignalCount;
  uint32_t ginCounterBase;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
};

/* NCCL 2.28.9's layouts on LP64 (x86-64, aarch64), as its headers compile there. */
#if defined(__LP64__)
#if defined(__cplusplus)
#define BRAID_DEVICE_LAYOUT(cond) static_assert(cond, "NCCL 2.28.9 device API layout: " #cond)
#else
#define BRAID_DEVICE_LAYOUT(cond) _Static_assert(cond, "NCCL 2.28.9 device API layout: " #cond)
#endif
BRAID_DEVICE_LAYOUT(sizeof(struct ncclTeam) == 12 && offsetof(struct ncclTeam, rank) == 4 &&
                    offsetof(struct ncclTeam, stride) == 8);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclDevCommRequirements) == 56);
BRAID_DEVICE_LAYOUT(offsetof(struct ncclDevCommRequirements, teamRequirementsList) == 8 &&
                    offsetof(struct ncclDevCommRequirements, lsaMultimem) == 16 &&
                    offsetof(struct ncclDevCommRequirements, barrierCount) == 20 &&
                    offsetof(struct ncclDevCommRequirements, lsaBarrierCount) == 24 &&
                    offsetof(struct ncclDevCommRequirements, railGinBarrierCount) == 28 &&
                    offsetof(struct ncclDevCommRequirements, lsaLLA2ABlockCount) == 32 &&
                    offsetof(struct ncclDevCommRequirements, lsaLLA2ASlotCount) == 36 &&
                    offsetof(struct ncclDevCommRequirements, ginForceEnable) == 40 &&
                    offsetof(struct ncclDevCommRequirements, ginContextCount) == 44 &&
                    offsetof(struct ncclDevCommRequirements, ginSignalCount) == 48 &&
                    offsetof(struct ncclDevCommRequirements, ginCounterCount) == 52);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclDevResourceRequirements) == 56);
BRAID_DEVICE_LAYOUT(offsetof(struct ncclDevResourceRequirements, bufferSize) == 8 &&
                    offsetof(struct ncclDevResourceRequirements, bufferAlign) == 16 &&
                    offsetof(struct ncclDevResourceRequirements, outBufferHandle) == 24 &&
                    offsetof(struct ncclDevResourceRequirements, ginSignalCount) == 32 &&
                    offsetof(struct ncclDevResourceRequirements, ginCounterCount) == 36 &&
                    offsetof(struct ncclDevResourceRequirements, outGinSignalStart) == 40 &&
                    offsetof(struct ncclDevResourceRequirements, outGinCounterStart) == 48);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclTeamRequirements) == 32 && offsetof(struct ncclTeamRequirements, team) == 8 &&
                    offsetof(struct ncclTeamRequirements, multimem) == 20 &&
                    offsetof(struct ncclTeamRequirements, outMultimemHandle) == 24);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclWindow_vidmem) == 72);
BRAID_DEVICE_LAYOUT(offsetof(struct ncclWindow_vidmem, lsaFlatBase) == 8 &&
                    offsetof(struct ncclWindow_vidmem, lsaRank) == 16 &&
                    offsetof(struct ncclWindow_vidmem, worldRank) == 20 &&
                    offsetof(struct ncclWindow_vidmem, stride4G) == 24 &&
                    offsetof(struct ncclWindow_vidmem, mcOffset4K) == 28 &&
                    offsetof(struct ncclWindow_vidmem, ginOffset4K) == 32 &&
                    offsetof(struct ncclWindow_vidmem, ginWins) == 40);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclMultimemHandle) == 8);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclLsaBarrierHandle) == 8 && offsetof(struct ncclLsaBarrierHandle, nBarriers) == 4);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclGinBarrierHandle) == 8 && offsetof(struct ncclGinBarrierHandle, bufHandle) == 4);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclLLA2AHandle) == 8 && offsetof(struct ncclLLA2AHandle, nSlots) == 4);
BRAID_DEVICE_LAYOUT(sizeof(struct ncclDevComm) == 200);
BRAID_DEVICE_LAYOUT(
    offsetof(struct ncclDevComm, nRanks) == 4 && offsetof(struct ncclDevComm, nRanks_rcp32) == 8 &&
    offsetof(struct ncclDevComm, lsaRank) == 12 && offsetof(struct ncclDevComm, lsaSize) == 16 &&
    offsetof(struct ncclDevComm, lsaSize_rcp32) == 20 && offsetof(struct ncclDevComm, windowTable) == 24 &&
    offsetof(struct ncclDevComm, resourceWindow) == 32 && offsetof(struct ncclDevComm, resourceWindow_inlined) == 40 &&
    offsetof(struct ncclDevComm, lsaMultimem) == 112 && offsetof(struct ncclDevComm, lsaBarrier) == 120 &&
    offsetof(struct ncclDevComm, railGinBarrier) == 128 && offsetof(struct ncclDevComm, ginContextCount) == 136 &&
    offsetof(struct ncclDevComm, ginTypes) == 137 && offsetof(struct ncclDevComm, ginHandles) == 144 &&
    offsetof(struct ncclDevComm, ginSignalBase) == 176 && offsetof(struct ncclDevComm, ginSignalCount) == 180 &&
    offsetof(struct ncclDevComm, ginCounterBase) == 184 && offsetof(struct ncclDevComm, ginCounterCount) == 188 &&
    offsetof(struct ncclDevComm, ginSignalShadows) == 192);
#ifdef __cplusplus
BRAID_DEVICE_LAYOUT(sizeof(ncclDevCommWindowTable::Entry) == 24 && sizeof(ncclDevCommWindowTable) == 776 &&
                    offsetof(ncclDevCommWindowTable, next) == 768);
#endif
#undef BRAID_DEVICE_LAYOUT
#endif /* __LP64__ */

/* ---- Host entry points (exported by libnccl.so, each with its pncclName twin) -------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/* Braid has no device-initiated communication yet: ncclDevCommCreate returns ncclInvalidUsage with a message,
 * at once and on every rank, and ncclDevCommDestroy has nothing to destroy. */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm);

/* The teams of a host communicator: world (every rank), LSA (the ranks this rank's device code can load from
 * and store to: on Braid only itself) and rail (the world's ranks with this rank's LSA index). */
ncclTeam_t ncclTeamWorld(ncclComm_t comm);
ncclTeam_t pncclTeamWorld(ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm);
ncclTeam_t pncclTeamLsa(ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm);
ncclTeam_t pncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);

/* Fill a resource requirement for nBarriers barriers (or an all-to-all of nBlocks blocks of nSlots slots); the
 * handle is completed by the ncclDevCommCreate that receives the requirement. */
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq);
/* Slots an all-to-all needs for maxElts elements of up to maxEltSize bytes each (8 payload bytes a slot). */
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);

#ifdef __cplusplus
}
#endif

/* ---- Team arithmetic (host and device) ------------------------------------------------------------------ */

/* Team b's rank bRank as a rank of team a (both teams must contain this rank). */
NCCL_HOST_DEVICE_INLINE int ncclTeamRankToTeam(ncclTeam_t a, ncclTeam_t b, int bRank) {
  const int worldDelta = (bRank - b.rank) * b.stride;
  return a.rank + worldDelta / a.stride;
}

/* Whether team b's rank bRank belongs to team a. */
NCCL_HOST_DEVICE_INLINE bool ncclTeamRankIsMember(ncclTeam_t a, ncclTeam_t b, int bRank) {
  const int worldDelta = (bRank - b.rank) * b.stride;
  if (worldDelta % a.stride != 0) return false;
  const int aRank = a.rank + worldDelta / a.stride;
  return 0 <= aRank && aRank < a.nRanks;
}

/* The team of innerSize consecutive ranks (of `parent`) that holds this rank, and the team of those teams'
 * members with this rank's inner index: parent = inner x outer. */
NCCL_HOST_DEVICE_INLINE ncclTeam_t ncclTeamInnerFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = innerSize;
  t.rank = parent.rank % innerSize;
  t.stride = parent.stride;
  return t;
}

NCCL_HOST_DEVICE_INLINE ncclTeam_t ncclTeamOuterFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = parent.nRanks / innerSize;
  t.rank = parent.rank / innerSize;
  t.stride = parent.stride * innerSize;
  return t;
}

/* The index-th rank (as a rank of `parent`, ascending) of parent's ranks that are not in `subset`, a team
 * inside parent. The subset's members sit in parent at first + k*step, k < subset.nRanks. */
NCCL_HOST_DEVICE_INLINE int ncclTeamRankInDifference(ncclTeam_t parent, ncclTeam_t subset, int index) {
  int step = subset.stride / parent.stride;
  int first = parent.rank - subset.rank * step;  // parent rank of subset's rank 0
  if (step < 0) {                                // the subset runs downwards in parent: start from its last member
    first += (subset.nRanks - 1) * step;
    step = -step;
  }
  if (index < first) return index;  // below the subset
  const int rest = index - first;
  const int holes = (subset.nRanks - 1) * (step - 1);  // non-members between the first and last member
  if (rest < holes) return first + 1 + (rest / (step - 1)) * step + rest % (step - 1);
  return first + (subset.nRanks - 1) * step + 1 + (rest - holes);  // above the subset
}

/* Byte offset of a resource buffer inside the resource window. */
NCCL_HOST_DEVICE_INLINE size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h) { return (size_t)h * 128; }

#ifdef __cplusplus
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamWorld(ncclDevComm const& comm) {
  ncclTeam t;
  t.nRanks = comm.nRanks;
  t.rank = comm.rank;
  t.stride = 1;
  return t;
}

NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamLsa(ncclDevComm const& comm) {
  ncclTeam t;
  t.nRanks = comm.lsaSize;
  t.rank = comm.lsaRank;
  t.stride = 1;
  return t;
}

/* The world's ranks with this rank's LSA index (LSA teams are consecutive world ranks of equal size). */
NCCL_HOST_DEVICE_INLINE ncclTeam ncclTeamRail(ncclDevComm const& comm) {
  ncclTeam t;
  t.nRanks = comm.nRanks / comm.lsaSize;
  t.rank = comm.rank / comm.lsaSize;
  t.stride = comm.lsaSize;
  return t;
}

NCCL_HOST_DEVICE_INLINE int ncclTeamRankToWorld(ncclDevComm const& comm, ncclTeam team, int rank) {
  return comm.rank + (rank - team.rank) * team.stride;
}

NCCL_HOST_DEVICE_INLINE int ncclTeamRankToLsa(ncclDevComm const& comm, ncclTeam team, int rank) {
  return comm.lsaRank + (rank - team.rank) * team.stride;
}
#endif /* __cplusplus */

/* ---- Window pointers (device) --------------------------------------------------------------------------- */

#ifdef __cplusplus
/* LSA rank lsaIndex's copy of window w, at `offset` (host and device: the arithmetic is testable anywhere). */
NCCL_HOST_DEVICE_INLINE void* braidWindowLsaCopy(const ncclWindow_vidmem* w, size_t offset, int lsaIndex) {
  return nccl::utility::add4G(w->lsaFlatBase, uint32_t(lsaIndex) * w->stride4G) + offset;
}
#endif

#if defined(__CUDACC__)

NCCL_DEVICE_INLINE void* ncclGetLocalPointer(ncclWindow_t w, size_t offset) {
  return braidWindowLsaCopy(w, offset, w->lsaRank);
}

/* `peer` is a rank of the LSA team. */
NCCL_DEVICE_INLINE void* ncclGetLsaPointer(ncclWindow_t w, size_t offset, int peer) {
  return braidWindowLsaCopy(w, offset, peer);
}

/* `peer` is a world rank inside this rank's LSA team. */
NCCL_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, int peer) {
  return braidWindowLsaCopy(w, offset, w->lsaRank + (peer - w->worldRank));
}

/* `peer` is a rank of `team`, which must lie inside this rank's LSA team. */
NCCL_DEVICE_INLINE void* ncclGetPeerPointer(ncclWindow_t w, size_t offset, ncclTeam team, int peer) {
  return braidWindowLsaCopy(w, offset, w->lsaRank + (peer - team.rank) * team.stride);
}

NCCL_DEVICE_INLINE void* ncclGetMultimemPointer(ncclWindow_t, size_t, ncclMultimemHandle) {
  braidDeviceApiTrap("ncclGetMultimemPointer: NVLink multicast is not supported by Braid");
}

NCCL_DEVICE_INLINE void* ncclGetLsaMultimemPointer(ncclWindow_t, size_t, ncclDevComm const&) {
  braidDeviceApiTrap("ncclGetLsaMultimemPointer: NVLink multicast is not supported by Braid");
}

/* Resource buffers live in the communicator's resource window, whose descriptor the communicator carries
 * inline (no load through the window pointer). */
NCCL_DEVICE_INLINE void* ncclGetResourceBufferLsaPointer(ncclDevComm const& comm, ncclDevResourceHandle h, int peer) {
  return braidWindowLsaCopy(&comm.resourceWindow_inlined, ncclGetResourceBufferOffset(h), peer);
}

NCCL_DEVICE_INLINE void* ncclGetResourceBufferLocalPointer(ncclDevComm const& comm, ncclDevResourceHandle h) {
  return ncclGetResourceBufferLsaPointer(comm, h, comm.lsaRank);
}

NCCL_DEVICE_INLINE void* ncclGetResourceBufferPeerPointer(ncclDevComm const& comm, ncclDevResourceHandle h,
                                                          ncclTeam team, int peer) {
  return ncclGetResourceBufferLsaPointer(comm, h, comm.lsaRank + (peer - team.rank) * team.stride);
}

NCCL_DEVICE_INLINE void* ncclGetResourceBufferMultimemPointer(ncclDevComm const&, ncclDevResourceHandle,
                                                              ncclMultimemHandle) {
  braidDeviceApiTrap("ncclGetResourceBufferMultimemPointer: NVLink multicast is not supported by Braid");
}

NCCL_DEVICE_INLINE void* ncclGetResourceBufferLsaMultimemPointer(ncclDevComm const&, ncclDevResourceHandle) {
  braidDeviceApiTrap("ncclGetResourceBufferLsaMultimemPointer: NVLink multicast is not supported by Braid");
}

/* The window of `comm` that holds `ptr` (a local address). Every thread of `coop` calls it and gets the
 * same answer; a pointer in no window is a programming error and traps. */
template <typename Coop>
NCCL_DEVICE_INLINE ncclWindow_t ncclFindWindow(Coop, ncclDevComm const& comm, void const* ptr) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
  for (const ncclDevCommWindowTable* t = comm.windowTable; t != nullptr; t = t->next) {
    for (int i = 0; i < 32; i++) {
      const ncclDevCommWindowTable::Entry& e = t->entries[i];
      if (e.window != nullptr && e.size != 0 && addr - e.base < e.size) return e.window;
    }
  }
  braidDeviceApiTrap("ncclFindWindow: the pointer is in no window of the device communicator");
}
#endif /* __CUDACC__ */

#endif /* NCCL_DEVICE_CORE_H_ */
