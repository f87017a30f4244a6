// gpu_topology: the host's topology for GPU communicators (see gpu_topology.h).
#include "runtime/gpu/gpu_topology.h"

#include <cuda_runtime.h>
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "runtime/comm.h"
#include "runtime/graph_dump.h"
#include "topology/topo_detect.h"
#include "topology/topology.h"
#include "transport/p2p/nvlink.h"
#include "transport/p2p/p2p_level.h"
#include "transport/transport.h"

namespace braid {
namespace {

std::mutex gMu;
bool gTried = false;          // guarded by gMu: built (or failed) once per process
ncclResult_t gResult = ncclSuccess;
std::string gError;           // the failure's message, recorded again at each later init
bool gDumped = false;         // NCCL_TOPO_DUMP_FILE written
bool gGraphDumped = false;    // NCCL_GRAPH_DUMP_FILE written

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Every NVIDIA display or 3D controller the host's sysfs lists (also those CUDA_VISIBLE_DEVICES hides from this
// process), with the compute capability where this process sees them. Others take `sm` from a visible one (the GPUs
// of a node are alike; it sets only NVLink's per-link rate).
std::vector<TopoGpuFact> hostGpus() {
  std::vector<TopoGpuFact> out;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0, cudaGetLastError();
  int anySm = 0;
  for (int d = 0; d < n; ++d) {
    char bus[32] = {};
    int major = 0, minor = 0;
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), d) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    TopoGpuFact g;
    g.busId = topoBusId(bus);
    g.cudaDev = d;
    g.sm = major * 10 + minor;
    anySm = g.sm;
    if (!g.busId.empty()) out.push_back(g);
  }
  if (DIR* dir = opendir("/sys/bus/pci/devices")) {
    while (dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      if (name[0] == '.') continue;
      const std::string base = std::string("/sys/bus/pci/devices/") + name;
      const std::string cls = readFirstLine(base + "/class"), vendor = readFirstLine(base + "/vendor");
      if (vendor != "0x10de" || (cls.rfind("0x0300", 0) != 0 && cls.rfind("0x0302", 0) != 0)) continue;
      const std::string id = topoBusId(name);
      if (id.empty() || std::any_of(out.begin(), out.end(), [&](const TopoGpuFact& g) { return g.busId == id; }))
        continue;
      TopoGpuFact g;
      g.busId = id;
      g.sm = anySm;
      out.push_back(g);
    }
    closedir(dir);
  }
  std::sort(out.begin(), out.end(), [](const TopoGpuFact& a, const TopoGpuFact& b) { return a.busId < b.busId; });
  // `dev` is each GPU's place in bus-id order (NCCL's NVML index), the same in every process of the host whatever
  // CUDA_VISIBLE_DEVICES shows it.
  for (size_t i = 0; i < out.size(); ++i) out[i].cudaDev = static_cast<int>(i);
  return out;
}

ncclResult_t buildHostTopology(int rank) {
  auto host = std::make_shared<HostTopology>();
  const std::string file = params::TopoFile();
  if (!file.empty()) {
    BRAID_CHECK(loadTopologyFile(file, &host->topo));
    host->source = file;
    host->nvlinkKnown = true;
  } else {
    // Detection never fails init: what it cannot read or build leaves the host without a topology (CUDA's peer
    // access decides P2P, as NCCL_P2P_LEVEL=SYS would), with a warning.
    TopoDetectOptions opts;
    opts.gpus = hostGpus();
    XmlNode system;
    bool nvlinksKnown = false;
    if (detectTopology(opts, &system, &nvlinksKnown) != ncclSuccess ||
        topologyFromXml(system, "the detected topology", &host->topo) != ncclSuccess) {
      BRAID_WARN("rank %d: the host's topology could not be detected (%s); P2P follows CUDA's peer access", rank,
                 pendingError().c_str());
      clearPendingError();
      return ncclSuccess;
    }
    host->source = "detected";
    host->nvlinkKnown = nvlinksKnown;
  }
  BRAID_CHECK(computePaths(host->topo, &host->paths));
  PathClass limit = PathClass::Sys;
  std::string why;
  if (!p2pLevelLimit(host.get(), &limit, &why)) limit = PathClass::Sys;  // refused per init (checkTransportParams)
  BRAID_INFO(kSubGraph, "rank %d: host topology (%s): %zu GPU(s), %zu NVSwitch(es), %zu CPU(s), %zu network port(s); "
             "P2P up to %s",
             rank, host->source.c_str(), host->topo.all(TopoKind::Gpu).size(), host->topo.all(TopoKind::Nvs).size(),
             host->topo.all(TopoKind::Cpu).size(), host->topo.all(TopoKind::Net).size(), pathClassName(limit));
  setHostTopology(host);
  return ncclSuccess;
}

}  // namespace

ncclResult_t ensureHostTopology(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMu);
  if (!gTried) {
    gTried = true;
    clearPendingError();
    gResult = buildHostTopology(comm->rank);
    if (gResult != ncclSuccess) gError = pendingError();
  }
  if (gResult != ncclSuccess) return recordError(gResult, "%s", gError.c_str());
  const std::string dump = params::TopoDumpFile();
  if (!dump.empty() && comm->rank == 0 && !gDumped) {
    gDumped = true;
    const std::shared_ptr<const HostTopology> host = hostTopologyIfKnown();
    // A file that cannot be written fails nothing: rank 0 alone failing would leave its peers waiting in init.
    if (host && writeXmlFile(dump, host->topo.xml) != ncclSuccess) {
      BRAID_WARN("rank 0: NCCL_TOPO_DUMP_FILE: %s", pendingError().c_str());
      clearPendingError();
    } else if (host) {
      BRAID_INFO(kSubGraph, "rank 0: topology written to %s (NCCL_TOPO_DUMP_FILE)", dump.c_str());
    }
  }
  return ncclSuccess;
}

namespace {

// The topology's GPU node of each rank of this host (in rank order) and those ranks; false where any of them is
// not in the topology.
bool hostRankGpus(const ncclComm* comm, const HostTopology& host, std::vector<int>* ranks, std::vector<int>* gpus) {
  for (const PeerInfo& p : comm->peers) {
    if (p.hostHash != comm->self.hostHash) continue;
    char bus[32];
    p2pBusIdToString(p.busId, bus, sizeof(bus));
    const int g = host.topo.find(TopoKind::Gpu, bus);
    if (g < 0) return false;
    ranks->push_back(p.rank);
    gpus->push_back(g);
  }
  return !ranks->empty();
}

}  // namespace

ncclResult_t hostRingPositions(ncclComm* comm, int maxRings, std::vector<int>* pos) {
  pos->clear();
  if (comm->nranks < 2) return ncclSuccess;
  BRAID_CHECK(ensureHostTopology(comm));
  const std::shared_ptr<const HostTopology> host = hostTopologyIfKnown();
  std::vector<int> ranks, gpus;
  if (!host || !hostRankGpus(comm, *host, &ranks, &gpus)) return ncclSuccess;
  TopoRings best;
  // searchRings rejects ranks sharing a GPU (no place then: rank order).
  if (searchRings(host->topo, host->paths, gpus, std::max(1, maxRings), &best) != ncclSuccess || best.rings.empty()) {
    clearPendingError();
    return ncclSuccess;
  }
  for (const std::vector<int>& ring : best.rings)
    for (size_t p = 0; p < ring.size(); ++p)
      if (ranks[static_cast<size_t>(ring[p])] == comm->rank) pos->push_back(static_cast<int>(p));
  if (pos->size() != best.rings.size()) pos->clear();  // not in every ring: no place
  return ncclSuccess;
}

double ringSlowestHopGBs(const ncclComm* comm) {
  const std::shared_ptr<const HostTopology> host = hostTopologyIfKnown();
  const int n = comm->nranks;
  // Without NVML a detected topology cannot tell NVLink from PCI: its bandwidths would starve an NVLink ring.
  if (!host || !host->nvlinkKnown || n < 2) return -1;
  std::vector<std::vector<int>> orders = comm->ringOrders;
  if (orders.empty()) orders.push_back(comm->ringOrder);
  double slowest = -1;
  for (const std::vector<int>& order : orders) {
    if (static_cast<int>(order.size()) != n) return -1;
    for (int p = 0; p < n; ++p) {
      const PeerInfo& a = comm->peers[static_cast<size_t>(order[static_cast<size_t>(p)])];
      const PeerInfo& b = comm->peers[static_cast<size_t>(order[static_cast<size_t>((p + 1) % n)])];
      if (a.hostHash != comm->self.hostHash || b.hostHash != comm->self.hostHash || a.busId == b.busId) continue;
      char busA[32], busB[32];
      p2pBusIdToString(a.busId, busA, sizeof(busA));
      p2pBusIdToString(b.busId, busB, sizeof(busB));
      const int ga = host->topo.find(TopoKind::Gpu, busA), gb = host->topo.find(TopoKind::Gpu, busB);
      if (ga < 0 || gb < 0) continue;
      const TopoPath& hop = host->paths.between(ga, gb);
      if (hop.cls == PathClass::Dis) continue;
      slowest = slowest < 0 ? hop.bw : std::min(slowest, hop.bw);
    }
  }
  return slowest;
}

ncclResult_t reportRings(ncclComm* comm) {
  const std::shared_ptr<const HostTopology> host = hostTopologyIfKnown();
  if (!host || comm->nranks < 2 || comm->rank != 0) return ncclSuccess;  // rank 0 reports and dumps
  // The ranks of this host and their GPUs.
  std::vector<int> ranks, gpus;
  if (!hostRankGpus(comm, *host, &ranks, &gpus)) return ncclSuccess;
  const int n = comm->nranks;
  std::vector<int> order(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) order[static_cast<size_t>(r)] = r;
  if (static_cast<int>(comm->ringOrder.size()) == n) order = comm->ringOrder;
  if (static_cast<int>(ranks.size()) == n) {
    // All ranks here: the order in use differs from the search's first ring where BRAID_RING_ORDER chose another,
    // or ranks share a GPU; say so, since the rings then run slower than the machine allows.
    TopoRings best;
    if (searchRings(host->topo, host->paths, gpus, 1, &best) == ncclSuccess && !best.rings.empty()) {
      PathClass worst = PathClass::Loc;
      for (int p = 0; p < n; ++p) {
        const int from = order[static_cast<size_t>(p)], to = order[static_cast<size_t>((p + 1) % n)];
        worst =
            std::max(worst, host->paths.between(gpus[static_cast<size_t>(from)], gpus[static_cast<size_t>(to)]).cls);
      }
      if (best.rings[0] != order && best.worst < worst)
        BRAID_INFO(kSubGraph,
                   "rank 0: on this host the search finds a faster ring order than the one in use (worst "
                   "hop %s rather than %s)",
                   pathClassName(best.worst), pathClassName(worst));
    }
    clearPendingError();
  }
  const std::string file = params::GraphDumpFile();
  std::lock_guard<std::mutex> lock(gMu);
  if (file.empty() || gGraphDumped) return ncclSuccess;
  gGraphDumped = true;
  // The rings in use channel by channel and, across hosts, the trees' chains through this host.
  CommGraphInput in;
  in.ringOrders = comm->ringOrders;
  in.nChannels = comm->nChannels;
  in.treeChannels = std::min(comm->nChannels, kMaxTreeChannels);
  in.host = comm->self.hostHash;
  in.rankGpu.assign(static_cast<size_t>(n), -1);
  for (const PeerInfo& p : comm->peers) in.hostOf.push_back(p.hostHash);
  for (size_t i = 0; i < ranks.size(); ++i) in.rankGpu[static_cast<size_t>(ranks[i])] = gpus[i];
  if (writeXmlFile(file, graphsXml(commGraphs(in, host->topo, host->paths))) != ncclSuccess) {
    BRAID_WARN("rank 0: NCCL_GRAPH_DUMP_FILE: %s", pendingError().c_str());
    clearPendingError();
  }
  return ncclSuccess;
}

}  // namespace braid
