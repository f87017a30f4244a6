// Group semantics: ops issued between ncclGroupStart and ncclGroupEnd are collected per thread and
// executed together at the outermost ncclGroupEnd; outside a group each op is a group of one.
#pragma once

#include "collectives/op_desc.h"
#include "nccl.h"

struct ncclComm;

namespace braid {
// Queues `op` for `comm` (inside a group) or runs it now (outside one).
ncclResult_t enqueueOp(ncclComm* comm, const OpDesc& op);
// Records an argument error raised inside a group: the group's ncclGroupEnd fails and discards its ops.
void noteGroupError(ncclResult_t res);
bool inGroup();
}  // namespace braid
