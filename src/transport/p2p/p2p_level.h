// p2p_level: whether the host's topology lets two GPUs use P2P, as NCCL_P2P_LEVEL says (NCCL's path classes).
// The runtime hands the host's topology over once it is known (the first GPU communicator's init); until then, and
// for a GPU the topology does not hold, CUDA's peer access alone decides, as without a topology.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology.h"

namespace braid {

struct HostTopology {
  Topology topo;
  TopoPaths paths;
  std::string source;  // the NCCL_TOPO_FILE it was read from, or "detected"
  // Where its NVLinks are known: a file (the user's word) or detection with NVML. Without (no NVML), a path the
  // topology sees as PCI may be NVLink, so only an NCCL_P2P_LEVEL the user set restricts P2P.
  bool nvlinkKnown = false;
};

// The host's topology for every later connection choice of this process (replaces any earlier one).
void setHostTopology(std::shared_ptr<const HostTopology> topo);
std::shared_ptr<const HostTopology> hostTopologyIfKnown();

// The NICs (NET nodes: name and port) the host's topology puts nearest GPU `busId` (PeerInfo::busId), best first
// (nearestNets): where a network backend's connections for that GPU go. Empty where the topology is not known yet
// or does not hold the GPU.
std::vector<std::pair<std::string, int>> hostNicsNearestGpu(int64_t busId);

// The most distant path class P2P may cross: NCCL_P2P_LEVEL where set (a class name or NCCL's number), else NCCL's
// default for the host's CPUs: PXB where a CPU is Intel, Zhaoxin or Arm (P2P through their host bridges is slow or
// unsupported), SYS elsewhere (and SYS where the topology's NVLinks are unknown). False with *why when
// NCCL_P2P_LEVEL is malformed.
bool p2pLevelLimit(const HostTopology* topo, PathClass* limit, std::string* why);

// Whether P2P may join the GPUs at PCI bus ids busA and busB (the P2P transport's encoding): true where the topology
// does not hold both, or their path is within the level. NVLink paths are always within it; a path the topology
// sees as PCI while NVML reports NVLink between the two counts as NVLink. *cls: the path's class (Dis when unknown).
bool p2pPathAllowed(int64_t busA, int64_t busB, PathClass* cls);

}  // namespace braid
