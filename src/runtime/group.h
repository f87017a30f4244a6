// Group semantics: ops issued between ncclGroupStart and ncclGroupEnd are collected per thread and executed
// together at the outermost ncclGroupEnd (one batch per communicator, on its executor); outside a group each
// op is a group of one. Communicator inits, splits and shrinks called inside a group run at its end too.
#pragma once

#include <functional>

#include "algo/op_desc.h"
#include "nccl.h"

struct ncclComm;

namespace braid {
// ncclGroupStart, ncclGroupEnd and ncclGroupSimulateEnd (null simInfo: a plain end) after the API's entry guard.
void groupStart();
ncclResult_t groupEnd();
ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo);
// Queues `op` for `comm` (inside a group) or runs it now (outside one).
ncclResult_t enqueueOp(ncclComm* comm, const OpDesc& op);
// Records an argument error raised inside a group: the group's ncclGroupEnd fails and discards its ops.
void noteGroupError(ncclResult_t res);
bool inGroup();
// The communicator can take operations: its init finished, no error from earlier, not finalized.
ncclResult_t checkCommUsable(ncclComm* comm);
// A communicator init called inside a group (`comm` is its handle, already returned): `start` launches it at
// the outermost group end, all such inits together, before the group's ops. Blocking inits are then waited
// for there (the first failure aborts the group's other inits still running); if the group holds nonblocking
// ones, its end returns ncclInProgress. Mixing blocking and nonblocking comms in one group is
// ncclInvalidArgument (as in NCCL), returned here before the comm is handed out.
ncclResult_t deferGroupInit(ncclComm* comm, bool blocking, std::function<void()> start);
// A call on `parent` that must run together with other ranks' at the outermost group end (ncclCommSplit and
// ncclCommShrink inside a group): jobs of one parent run in call order, different parents' concurrently,
// before the group's inits and ops. The parent counts as holding queued ops until then.
void deferGroupJob(ncclComm* parent, std::function<ncclResult_t()> job);
// Removes `comm`'s deferred init from this thread's group (ncclCommAbort); false if it holds none.
bool dropGroupInit(ncclComm* comm);
// Operations of `comm` queued in this thread's open group.
int groupOpsOf(const ncclComm* comm);
// Removes them from this thread's group (which then fails at its ncclGroupEnd with the recorded `reason`);
// returns how many there were. For ncclCommAbort: the group must not run them on a freed communicator.
int dropGroupOps(ncclComm* comm, const char* reason);
}  // namespace braid
