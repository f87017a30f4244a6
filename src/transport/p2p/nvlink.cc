// NVLink detection for the P2P transport: whether two GPUs of this host reach each other over NVLink (directly
// or through an NVSwitch), asked of NVML, loaded at run time (libnvidia-ml.so.1 ships with the
// driver; Braid neither links nor needs it). LL128 trusts a 128-byte store to arrive whole only over NVLink,
// so anything uncertain (no NVML, an error, a link to something else) answers false.
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <utility>

#include "core/log.h"
#include "transport/p2p/p2p_internal.h"

namespace braid {
namespace {

// The few NVML declarations used (nvml.h is not installed everywhere Braid builds), per NVML's API reference:
// nvmlDeviceGetP2PStatus(nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t*) with
// NVML_P2P_CAPS_INDEX_NVLINK = 2 and NVML_P2P_STATUS_OK = 0: the driver's own answer for the pair (a degraded
// board whose GPU lost its links, or a PCIe GPU beside an NVSwitch board, answers not OK).
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlP2pCapsNvlink = 2;
constexpr int kNvmlP2pStatusOk = 0;

struct Nvml {
  bool ok = false;
  int (*init)() = nullptr;
  int (*byBusId)(const char*, NvmlDevice*) = nullptr;
  int (*p2pStatus)(NvmlDevice, NvmlDevice, int, int*) = nullptr;
};

const Nvml& nvml() {
  static Nvml n = [] {
    Nvml m;
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return m;
    m.init = reinterpret_cast<int (*)()>(dlsym(h, "nvmlInit_v2"));
    m.byBusId = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    m.p2pStatus = reinterpret_cast<int (*)(NvmlDevice, NvmlDevice, int, int*)>(dlsym(h, "nvmlDeviceGetP2PStatus"));
    m.ok = m.init && m.byBusId && m.p2pStatus && m.init() == kNvmlSuccess;
    return m;  // the handle stays open for the process's life
  }();
  return n;
}

bool queryNvlink(int64_t a, int64_t b) {
  const Nvml& n = nvml();
  if (!n.ok) return false;
  NvmlDevice dev[2] = {nullptr, nullptr};
  const int64_t bus[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    char id[32];
    p2pBusIdToString(bus[i], id, sizeof(id));
    if (n.byBusId(id, &dev[i]) != kNvmlSuccess) return false;
  }
  // Both directions: the answer must not depend on which rank asks.
  for (int i = 0; i < 2; ++i) {
    int status = -1;
    if (n.p2pStatus(dev[i], dev[1 - i], kNvmlP2pCapsNvlink, &status) != kNvmlSuccess || status != kNvmlP2pStatusOk)
      return false;
  }
  return true;
}

}  // namespace

bool p2pNvlinkBetween(int64_t busA, int64_t busB) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, int64_t>, bool> cache;
  std::lock_guard<std::mutex> lk(mu);
  auto key = std::make_pair(busA, busB);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const bool yes = busA >= 0 && busB >= 0 && busA != busB && queryNvlink(busA, busB);
  BRAID_INFO(kSubInit, "P2P: GPUs %llx and %llx %s", static_cast<long long>(busA), static_cast<long long>(busB),
             yes ? "are joined by NVLink" : nvml().ok ? "have no NVLink between them" : "(NVML unavailable: not NVLink)");
  cache[key] = yes;
  return yes;
}

}  // namespace braid
