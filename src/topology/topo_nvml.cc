// topo_nvml: loading NVML with dlopen and reading a GPU's NVLinks (see topo_nvml.h).
#include "topology/topo_nvml.h"

#include <dlfcn.h>

#include <atomic>
#include <cctype>

namespace braid {
namespace {

std::atomic<const NvmlApi*> gTestApi{nullptr};

template <typename Fn>
bool loadSymbol(void* handle, const char* name, Fn* fn, std::string* why) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) {
    *why = std::string("libnvidia-ml.so.1 has no ") + name;
    return false;
  }
  return true;
}

std::string resultText(const NvmlApi& api, int result) {
  const char* text = api.errorString ? api.errorString(result) : nullptr;
  return text ? std::string(text) + " (" + std::to_string(result) + ")" : "NVML error " + std::to_string(result);
}

// A bus id field of NvmlPciInfo: "" unless it is printable text ending within the field (NVML leaves garbage or
// nothing for a far end it cannot show, e.g. an NVSwitch hidden from a VM).
std::string pciText(const char* field, size_t size) {
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    if (field[i] == '\0') return text;
    if (!std::isprint(static_cast<unsigned char>(field[i]))) return "";
    text += field[i];
  }
  return "";
}

}  // namespace

void setNvmlApiForTest(const NvmlApi* api) { gTestApi.store(api); }

bool NvmlSession::open(std::string* why) {
  if (const NvmlApi* fake = gTestApi.load()) {
    api_ = *fake;
  } else {
    // The versioned name only: the unversioned libnvidia-ml.so comes with development packages, not the driver.
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* err = dlerror();
      *why = err ? err : "dlopen(libnvidia-ml.so.1) failed";
      return false;
    }
    if (!loadSymbol(handle_, "nvmlInit_v2", &api_.init, why) ||
        !loadSymbol(handle_, "nvmlShutdown", &api_.shutdown, why) ||
        !loadSymbol(handle_, "nvmlErrorString", &api_.errorString, why) ||
        !loadSymbol(handle_, "nvmlDeviceGetHandleByPciBusId_v2", &api_.handleByBusId, why) ||
        !loadSymbol(handle_, "nvmlDeviceGetNvLinkState", &api_.nvlinkState, why) ||
        !loadSymbol(handle_, "nvmlDeviceGetNvLinkVersion", &api_.nvlinkVersion, why) ||
        !loadSymbol(handle_, "nvmlDeviceGetNvLinkCapability", &api_.nvlinkCapability, why) ||
        !loadSymbol(handle_, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api_.nvlinkRemotePciInfo, why))
      return false;  // the destructor closes the handle
  }
  int rc = api_.init ? api_.init() : -1;
  if (rc != kNvmlSuccess) {
    *why = "nvmlInit_v2: " + resultText(api_, rc);
    return false;
  }
  initialised_ = true;
  return true;
}

NvmlSession::~NvmlSession() {
  if (initialised_ && api_.shutdown) api_.shutdown();
  if (handle_) dlclose(handle_);
}

bool queryNvlinks(const NvmlApi& api, const std::string& busId, int maxLinks, std::vector<NvlinkFact>* out,
                  std::string* why) {
  out->clear();
  NvmlDevice device = nullptr;
  int rc = api.handleByBusId(busId.c_str(), &device);
  if (rc != kNvmlSuccess) {
    *why = "nvmlDeviceGetHandleByPciBusId_v2(" + busId + "): " + resultText(api, rc);
    return false;
  }
  for (int l = 0; l < maxLinks; ++l) {
    const unsigned link = static_cast<unsigned>(l);
    unsigned canP2p = 0;
    if (api.nvlinkCapability(device, link, kNvmlNvlinkCapP2p, &canP2p) != kNvmlSuccess || !canP2p) continue;
    int state = 0;
    if (api.nvlinkState(device, link, &state) != kNvmlSuccess || state != kNvmlFeatureEnabled) continue;
    NvmlPciInfo remote = {};
    if (api.nvlinkRemotePciInfo(device, link, &remote) != kNvmlSuccess) continue;
    NvlinkFact fact;
    fact.link = link;
    // The legacy field holds "dddd:bb:dd.f"; newer NVMLs also fill the wider one ("dddddddd:bb:dd.f").
    fact.remoteBusId = pciText(remote.busIdLegacy, sizeof(remote.busIdLegacy));
    if (fact.remoteBusId.empty()) fact.remoteBusId = pciText(remote.busId, sizeof(remote.busId));
    unsigned version = 0;
    if (api.nvlinkVersion(device, link, &version) == kNvmlSuccess) fact.version = version;
    out->push_back(fact);
  }
  return true;
}

}  // namespace braid
