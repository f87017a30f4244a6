// p2p_level: NCCL_P2P_LEVEL against the host's topology (see p2p_level.h).
#include "transport/p2p/p2p_level.h"

#include <mutex>

#include "core/param.h"
#include "transport/p2p/nvlink.h"

namespace braid {
namespace {

std::mutex gMu;
std::shared_ptr<const HostTopology> gTopo;  // guarded by gMu

// NCCL's default: PXB where a CPU's host bridge makes P2P slow (Intel, Zhaoxin) or unsupported (Arm), else SYS.
PathClass defaultLimit(const Topology& topo) {
  for (const XmlNode& cpu : topo.xml.children) {
    if (cpu.name != "cpu") continue;
    const std::string* arch = cpu.attr("arch");
    const std::string* vendor = cpu.attr("vendor");
    if (arch && *arch == "arm64") return PathClass::Pxb;
    if (arch && *arch == "x86_64" && vendor &&
        (vendor->rfind("GenuineIntel", 0) == 0 || vendor->rfind("CentaurHauls", 0) == 0 ||
         vendor->rfind("  Shanghai  ", 0) == 0))
      return PathClass::Pxb;
  }
  return PathClass::Sys;
}

}  // namespace

void setHostTopology(std::shared_ptr<const HostTopology> topo) {
  std::lock_guard<std::mutex> lock(gMu);
  gTopo = std::move(topo);
}

std::shared_ptr<const HostTopology> hostTopologyIfKnown() {
  std::lock_guard<std::mutex> lock(gMu);
  return gTopo;
}

std::vector<std::pair<std::string, int>> hostNicsNearestGpu(int64_t busId) {
  std::vector<std::pair<std::string, int>> out;
  const std::shared_ptr<const HostTopology> t = hostTopologyIfKnown();
  if (!t || busId < 0) return out;
  char bus[32];
  p2pBusIdToString(busId, bus, sizeof(bus));
  const int gpu = t->topo.find(TopoKind::Gpu, bus);
  if (gpu < 0) return out;
  for (int n : nearestNets(t->topo, t->paths, gpu)) out.emplace_back(t->topo.nodes[n].name, t->topo.nodes[n].port);
  return out;
}

bool p2pLevelLimit(const HostTopology* topo, PathClass* limit, std::string* why) {
  const std::string text = params::P2pLevel();
  if (text.empty()) {
    *limit = topo && topo->nvlinkKnown ? defaultLimit(topo->topo) : PathClass::Sys;
    return true;
  }
  if (!parsePathLevel(text, limit)) {
    if (why) *why = "NCCL_P2P_LEVEL=" + text + " is none of LOC, NVL, NVB, PIX, PXB, PHB, SYS or 0-5";
    return false;
  }
  return true;
}

bool p2pPathAllowed(int64_t busA, int64_t busB, PathClass* cls) {
  *cls = PathClass::Dis;
  PathClass limit = PathClass::Sys;
  const std::shared_ptr<const HostTopology> t = hostTopologyIfKnown();
  if (!p2pLevelLimit(t.get(), &limit, nullptr)) return true;  // malformed: refused at init (checkTransportParams)
  if (limit == PathClass::Loc) return false;                   // NCCL_P2P_LEVEL=LOC or 0: no P2P at all
  if (!t) return true;
  char a[32], b[32];
  p2pBusIdToString(busA, a, sizeof(a));
  p2pBusIdToString(busB, b, sizeof(b));
  const int ga = t->topo.find(TopoKind::Gpu, a), gb = t->topo.find(TopoKind::Gpu, b);
  if (ga < 0 || gb < 0) return true;
  *cls = t->paths.between(ga, gb).cls;
  if (*cls > PathClass::Nvb && p2pNvlinkBetween(busA, busB)) *cls = PathClass::Nvl;
  return *cls <= limit;
}

}  // namespace braid
