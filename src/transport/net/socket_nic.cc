// The socket interface nearest a GPU (socket_nic.h).
#include "transport/net/socket_nic.h"

#include "transport/p2p/nvlink.h"

namespace braid {

int nearestSocketInterface(const Topology& topo, const TopoPaths& paths, int64_t gpuBusId,
                           const std::vector<std::string>& ifNames, std::string* why) {
  if (gpuBusId < 0) {
    if (why) *why = "no GPU";
    return -1;
  }
  char bus[32];
  p2pBusIdToString(gpuBusId, bus, sizeof(bus));
  const int gpu = topo.find(TopoKind::Gpu, bus);
  if (gpu < 0) {
    if (why) *why = std::string("GPU ") + bus + " is not in the topology";
    return -1;
  }
  int best = -1;
  PathClass bestCls = PathClass::Dis;
  double bestBw = 0;
  for (size_t i = 0; i < ifNames.size(); ++i) {
    for (int net : topo.all(TopoKind::Net)) {
      if (topo.nodes[static_cast<size_t>(net)].name != ifNames[i]) continue;
      const TopoPath& p = paths.between(gpu, net);
      if (p.cls == PathClass::Dis) continue;
      if (best < 0 || p.cls < bestCls || (p.cls == bestCls && p.bw > bestBw)) {
        best = static_cast<int>(i);
        bestCls = p.cls;
        bestBw = p.bw;
      }
    }
  }
  if (why) {
    *why = best < 0 ? "the topology places none of the interfaces"
                    : std::string("path ") + pathClassName(bestCls) + " from GPU " + bus;
  }
  return best;
}

}  // namespace braid
