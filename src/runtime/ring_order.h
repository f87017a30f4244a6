// The order in which a communicator's rings visit its ranks (position -> rank), agreed once at init: every
// rank must connect and walk the same ring, whatever its own environment says.
//
// Today the order is rank order unless BRAID_RING_ORDER (rank 0's) names another, for testing. The topology's
// ring search (searchRings, reported by reportRings in gpu_topology.cc) finds faster orders; applying its
// result here is the follow-up (it would be rank 0's search, broadcast the same way).
#pragma once

#include <string>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace braid {

// Parses `text`, a comma-separated permutation of 0..nranks-1 (spaces around numbers allowed), into `order`
// (position -> rank). Empty text: rank order. Anything else: ncclInvalidArgument naming BRAID_RING_ORDER.
ncclResult_t parseRingOrder(const std::string& text, int nranks, std::vector<int>* order);

// Sets comm->ringOrder and comm->ringPos from rank 0's BRAID_RING_ORDER, broadcast over the bootstrap (a
// malformed value fails init on every rank, so none waits for a ring the others never build).
ncclResult_t agreeRingOrder(ncclComm* comm);

// The ring neighbours of `comm`'s rank in its agreed order: the rank it sends to and the one it receives from.
int ringNextRank(const ncclComm* comm);
int ringPrevRank(const ncclComm* comm);

}  // namespace braid
