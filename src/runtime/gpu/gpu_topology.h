// gpu_topology: the host's topology for GPU communicators. Read from NCCL_TOPO_FILE or detected once per process
// (every NVIDIA GPU of the host, also those CUDA_VISIBLE_DEVICES hides, so every rank of the host sees the same
// paths), handed to the transports (p2p_level.h: NCCL_P2P_LEVEL), dumped where NCCL_TOPO_DUMP_FILE asks, and the
// rings written where NCCL_GRAPH_DUMP_FILE asks.
#pragma once

#include <vector>

#include "nccl.h"
#include "runtime/ring_order.h"

struct ncclComm;

namespace braid {

// Before the communicator's first connection. A missing or malformed NCCL_TOPO_FILE fails (every time it is asked
// again) with ncclInvalidArgument naming the file, line and problem; detection never fails (it logs what it could
// not read).
ncclResult_t ensureHostTopology(ncclComm* comm);

// This rank's places in the rings the topology search finds for the GPUs of its host's ranks (agreeRingOrder's
// hostPos), at most maxRings of them; empty where there is none: no topology, a peer's GPU not in it, ranks sharing
// a GPU. Every rank of a host searches the same topology and so finds the same rings. Needs the peers' PeerInfo
// (after the bootstrap).
ncclResult_t hostRingPositions(ncclComm* comm, int maxRings, std::vector<int>* pos);
// The distinct rings a GPU communicator runs at most, as many as a host communicator: channel c runs ring
// c % nRings, each channel's kernel CTA reading its own ring's tables (CollLaunchArgs::ringTables).
constexpr int kDeviceRingOrders = kMaxRingOrders;

// The slowest hop, in GB/s, of any agreed ring between two GPUs of this host as the topology sees it, for the
// channel count (-1 where no such hop is known).
double ringSlowestHopGBs(const ncclComm* comm);

// After the ring is connected: NCCL_GRAPH_DUMP_FILE (rank 0) gets the rings in use channel by channel and, where the
// ranks span hosts, the all-reduce trees (graph_dump.h), as rank 0's host sees them; INFO says when the search
// finds a faster order for this host's ranks than the one the rings run in.
ncclResult_t reportRings(ncclComm* comm);

}  // namespace braid
