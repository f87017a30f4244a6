// GPU communicators (device buffers): the hooks of communicator init. initDeviceComm runs after the bootstrap
// has exchanged PeerInfo; it connects the transports for device buffers and creates the GPU executor, which
// turns each batch of ops into kernel launches on the callers' streams.
#pragma once

#include "nccl.h"

struct ncclComm;

namespace braid {

// Fills comm->cudaDev, comm->self.cudaDev/busId for this thread's current device (before the bootstrap).
ncclResult_t describeLocalDevice(ncclComm* comm);
// After the bootstrap: connects channels for device buffers and sets comm->exec to a GPU executor.
ncclResult_t initDeviceComm(ncclComm* comm);

}  // namespace braid
