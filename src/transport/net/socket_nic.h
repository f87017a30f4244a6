// socket_nic: which socket interface a GPU rank listens on where several match NCCL_SOCKET_IFNAME (or the default
// rule): the one whose NIC the host's topology puts nearest the rank's GPU, as the IB backend picks its port. An
// interface the topology has no NET node for (a virtual one: no PCI place) never wins over one it places; where it
// places none of them, or does not know the GPU, the first interface serves, as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace braid {

// The index in ifNames of the interface nearest GPU `gpuBusId` (PeerInfo::busId) in `topo`: best path class, then
// widest path, then the earliest in ifNames; -1 where the topology knows neither the GPU nor any of the interfaces
// (then the caller takes the first). *why (may be null) says what decided, for the INFO line.
int nearestSocketInterface(const Topology& topo, const TopoPaths& paths, int64_t gpuBusId,
                           const std::vector<std::string>& ifNames, std::string* why);

}  // namespace braid
