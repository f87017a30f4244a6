// The orders in which a communicator's rings visit its ranks (position -> rank), agreed once at init: every
// rank must connect and walk the same rings, whatever its own environment says. A communicator runs one or more
// distinct rings; channel c runs ring c % nRings, so channels spread over every cycle the search found (a DGX-1's
// different cycles) instead of all piling onto the first one's links.
//
// The default order (defaultRingOrder) keeps the ranks of each host together, so a ring crosses each host boundary
// once, hosts in the order of their lowest rank; within a host the ranks follow the ring the topology search found
// for that host's GPUs (hostRingPosition in gpu_topology.h), else rank order. BRAID_RING_ORDER (rank 0's) names
// another order (or several, separated by '|'), for testing and for users who know their machine better.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace braid {

// Distinct rings a communicator runs at most.
constexpr int kMaxRingOrders = 16;

// Parses `text`, a comma-separated permutation of 0..nranks-1 (spaces around numbers allowed), into `order`
// (position -> rank). Empty text: rank order. Anything else: ncclInvalidArgument naming BRAID_RING_ORDER.
ncclResult_t parseRingOrder(const std::string& text, int nranks, std::vector<int>* order);
// Parses `text`, one or more such permutations separated by '|' (at most kMaxRingOrders), into `orders`, ring by
// ring, duplicates dropped (a ring named twice runs once). Empty text: one ring in rank order.
ncclResult_t parseRingOrders(const std::string& text, int nranks, std::vector<std::vector<int>>* orders);

// The order of ranks whose hosts are hostOf[r] (any value naming a host, e.g. PeerInfo::hostHash) and whose places
// in their host's searched ring are hostPos[r] (-1: none). Hosts come in the order of their lowest rank. A host's
// ranks follow their hostPos when every one of them has a distinct one, else rank order.
std::vector<int> defaultRingOrder(const std::vector<uint64_t>& hostOf, const std::vector<int>& hostPos);
// Several rings: hostPos[r][k] is rank r's place in its host's k-th searched ring (an empty row: none). Ring k
// orders each host's ranks by their ring k % (that host's ring count), so a host with fewer rings repeats them;
// rings that come out the same run once. At least one ring (rank order where nothing is known).
std::vector<std::vector<int>> defaultRingOrders(const std::vector<uint64_t>& hostOf,
                                                const std::vector<std::vector<int>>& hostPos);

// Sets comm->ringOrders and comm->ringPositions (and ring 0's comm->ringOrder and comm->ringPos), agreed over the
// bootstrap: every rank contributes `hostPos` (its places in its host's searched rings, ring by ring; empty for
// none); rank 0 builds defaultRingOrders from them, or takes its BRAID_RING_ORDER, keeps at most `maxRings` rings
// and broadcasts them (a malformed value fails init on every rank, so none waits for a ring the others never
// build). hostPos {kRingPosFailed}: this rank cannot go on (its caller recorded why); every other rank then fails
// too, naming it, rather than waiting for it.
constexpr int kRingPosFailed = -2;
ncclResult_t agreeRingOrder(ncclComm* comm, const std::vector<int>& hostPos = {}, int maxRings = kMaxRingOrders);

// The ring neighbours of `comm`'s rank on `channel` (its ring: channel % nRings of the agreed orders): the rank it
// sends to and the one it receives from. Before any agreement: rank order.
int ringNextRank(const ncclComm* comm, int channel = 0);
int ringPrevRank(const ncclComm* comm, int channel = 0);
// The agreed rings' count (1 before any agreement).
int ringCount(const ncclComm* comm);
// The ring neighbours of every ring, ring by ring (ConnectionManager::connectRings' lists).
void ringNeighbours(const ncclComm* comm, std::vector<int>* next, std::vector<int>* prev);

// The device tables of several rings (CollLaunchArgs::ringTables): ring k at [2 k n, 2 (k + 1) n), first its
// position -> rank order, then rank -> position. Every order must be a permutation of 0..n-1 (agreed ones are).
std::vector<int32_t> ringTablesFor(const std::vector<std::vector<int>>& orders);
// The channels among [0, nChannels) whose ring (channel % orders.size()) has `peer` as `rank`'s next neighbour
// (send) or previous one (!send), ascending; empty where none does (or peer == rank). Rank a's send list for b
// equals b's receive list for a, so both ends of a point-to-point transfer over ring connections cut it alike.
std::vector<int> ringChannelsWith(const std::vector<std::vector<int>>& orders, int rank, int peer, bool send,
                                  int nChannels);

}  // namespace braid
