// Multi-process test harness: the lists of collective cases the multi-rank tests walk through (every collective x
// datatype x op, the count / in-place / root matrix, large messages), and the loop that runs a list in lockstep on
// every rank. Shared by the single-host suites and the multi-node test bed.
#pragma once

#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace mp {

// Every collective form x datatype x op at counts 0, 1, 7, n-1, 1001 and a few large messages (thousands of
// cases; what the single-host suites run).
std::vector<Case> buildCases(int n);
// Every collective x datatype (and every op of the reductions) at moderate counts, plus the large messages:
// the full list without its count / in-place / root matrix (a few hundred cases), for slower transports.
std::vector<Case> buildShortCases(int n);

// Runs `cases` on comm in order; false, with the failure added and the communicator aborted, when an NCCL call
// failed.
bool runCases(ncclComm_t comm, const RankCtx& ctx, const std::vector<Case>& cases);

}  // namespace mp
