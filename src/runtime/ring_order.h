// The order in which a communicator's rings visit its ranks (position -> rank), agreed once at init: every
// rank must connect and walk the same ring, whatever its own environment says.
//
// The default order (defaultRingOrder) keeps the ranks of each host together, so a ring crosses each host boundary
// once, hosts in the order of their lowest rank; within a host the ranks follow the ring the topology search found
// for that host's GPUs (hostRingPosition in gpu_topology.h), else rank order. BRAID_RING_ORDER (rank 0's) names
// another order, for testing and for users who know their machine better.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace braid {

// Parses `text`, a comma-separated permutation of 0..nranks-1 (spaces around numbers allowed), into `order`
// (position -> rank). Empty text: rank order. Anything else: ncclInvalidArgument naming BRAID_RING_ORDER.
ncclResult_t parseRingOrder(const std::string& text, int nranks, std::vector<int>* order);

// The order of ranks whose hosts are hostOf[r] (any value naming a host, e.g. PeerInfo::hostHash) and whose places
// in their host's searched ring are hostPos[r] (-1: none). Hosts come in the order of their lowest rank. A host's
// ranks follow their hostPos when every one of them has a distinct one, else rank order.
std::vector<int> defaultRingOrder(const std::vector<uint64_t>& hostOf, const std::vector<int>& hostPos);

// Sets comm->ringOrder and comm->ringPos, agreed over the bootstrap: every rank contributes `hostPos` (its place in
// its host's searched ring, -1 for none); rank 0 builds defaultRingOrder from them, or takes its BRAID_RING_ORDER,
// and broadcasts it (a malformed value fails init on every rank, so none waits for a ring the others never build).
// hostPos kRingPosFailed: this rank cannot go on (its caller recorded why); every other rank then fails too,
// naming it, rather than waiting for it.
constexpr int kRingPosFailed = -2;
ncclResult_t agreeRingOrder(ncclComm* comm, int hostPos = -1);

// The ring neighbours of `comm`'s rank in its agreed order: the rank it sends to and the one it receives from.
int ringNextRank(const ncclComm* comm);
int ringPrevRank(const ncclComm* comm);

}  // namespace braid
