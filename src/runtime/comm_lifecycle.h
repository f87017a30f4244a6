// Communicator lifecycle below the C API (runtime/comm_lifecycle.cc): what ncclCommInit*, ncclCommSplit,
// ncclCommShrink, ncclCommRevoke, ncclCommDestroy/Abort and ncclCommGetAsyncError do once the API layer has
// checked their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nccl.h"
#include "runtime/comm.h"

namespace braid {

// Reads the caller's config, honouring its size (older headers carry fewer fields), and the environment
// (NCCL_COMM_BLOCKING, NCCL_CTA_POLICY). A bad field is ncclInvalidArgument naming it.
ncclResult_t parseCommConfig(const ncclConfig_t* cfg, const char* fn, CommConfig* out);
// Whether this process sees a GPU (else every communicator is a host communicator).
bool gpusVisible();
// Creates rank `rank` of `nranks` on the job `id`. Blocking and outside a group: returns when the init is done.
// Nonblocking, or inside a group: *out is valid at once and ncclCommGetAsyncError reports ncclInProgress until
// the init (started now, or at the group's end) is done.
// `members`: a split's or shrink's members as the parent knows them (watched during the child's bootstrap).
ncclResult_t commInit(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* cfg,
                      const char* fn, std::unique_ptr<MemberWatch> members = nullptr);
// Frees `comm` once the calls running on it have left (abort: stops its transfers first). A comm still held
// by another thread's open group, or by a call that does not leave within 30 s, is left allocated (warned).
void destroyComm(ncclComm* comm, bool abort);
// The split and shrink (inside a group: deferred to its end, with the config copied now).
ncclResult_t commSplit(ncclComm* comm, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config);
// excluded[r] != 0 for every rank left out (never this rank).
ncclResult_t commShrink(ncclComm* comm, const std::vector<uint8_t>& excluded, ncclComm_t* newcomm,
                        const ncclConfig_t* config);
// Stops the communicator's transfers; afterwards it can only be shrunk or destroyed.
ncclResult_t commRevoke(ncclComm* comm);
// The communicator's sticky error, or one its executor found since (GPU kernels), or ncclInProgress.
ncclResult_t commAsyncError(ncclComm* comm, ncclResult_t* asyncError);

}  // namespace braid
