// gpu_topology: the host's topology for GPU communicators. Read from NCCL_TOPO_FILE or detected once per process
// (every NVIDIA GPU of the host, also those CUDA_VISIBLE_DEVICES hides, so every rank of the host sees the same
// paths), handed to the transports (p2p_level.h: NCCL_P2P_LEVEL), dumped where NCCL_TOPO_DUMP_FILE asks, and the
// rings written where NCCL_GRAPH_DUMP_FILE asks.
#pragma once

#include "nccl.h"

struct ncclComm;

namespace braid {

// Before the communicator's first connection. A missing or malformed NCCL_TOPO_FILE fails (every time it is asked
// again) with ncclInvalidArgument naming the file, line and problem; detection never fails (it logs what it could
// not read).
ncclResult_t ensureHostTopology(ncclComm* comm);

// After the ring is connected: NCCL_GRAPH_DUMP_FILE (rank 0) gets the rings in use, and INFO says when the search
// finds a faster order for this host's ranks than the rank order the rings run in.
ncclResult_t reportRings(ncclComm* comm);

}  // namespace braid
