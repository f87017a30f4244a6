// topo_nvml: NVML, loaded with dlopen, as topology detection (topo_detect.h) uses it: which NVLinks of a GPU are up
// and carry P2P, the PCI address at their far end, and their NVLink version. The few NVML types and constants used
// are declared here, so the build needs no nvml.h and the library runs where the driver's NVML is missing.
#pragma once

#include <string>
#include <vector>

namespace braid {

using NvmlDevice = struct NvmlDeviceOpaque*;  // nvmlDevice_t

// nvmlPciInfo_t in its current layout (nvmlDeviceGetNvLinkRemotePciInfo_v2 fills the 32-byte bus id after the
// legacy 16-byte one); the larger layout, so an NVML that fills all of it never writes past the end.
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};
static_assert(sizeof(NvmlPciInfo) == 68, "nvmlPciInfo_t is 68 bytes");

constexpr int kNvmlSuccess = 0;         // NVML_SUCCESS
constexpr int kNvmlFeatureEnabled = 1;  // NVML_FEATURE_ENABLED
constexpr int kNvmlNvlinkCapP2p = 0;    // NVML_NVLINK_CAP_P2P_SUPPORTED

// The NVML entry points detection calls, with NVML's signatures (its enums passed as int).
struct NvmlApi {
  int (*init)() = nullptr;                           // nvmlInit_v2
  int (*shutdown)() = nullptr;                       // nvmlShutdown
  const char* (*errorString)(int result) = nullptr;  // nvmlErrorString
  // nvmlDeviceGetHandleByPciBusId_v2
  int (*handleByBusId)(const char* busId, NvmlDevice* device) = nullptr;
  // nvmlDeviceGetNvLinkState
  int (*nvlinkState)(NvmlDevice device, unsigned link, int* state) = nullptr;
  // nvmlDeviceGetNvLinkVersion
  int (*nvlinkVersion)(NvmlDevice device, unsigned link, unsigned* version) = nullptr;
  // nvmlDeviceGetNvLinkCapability
  int (*nvlinkCapability)(NvmlDevice device, unsigned link, int cap, unsigned* result) = nullptr;
  // nvmlDeviceGetNvLinkRemotePciInfo_v2
  int (*nvlinkRemotePciInfo)(NvmlDevice device, unsigned link, NvmlPciInfo* pci) = nullptr;
};

// NVML for the life of the object: libnvidia-ml.so.1 opened and initialised, shut down and closed on destruction.
class NvmlSession {
 public:
  NvmlSession() = default;
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  // False, with the reason in *why, when the library or an entry point is missing or nvmlInit_v2 fails.
  bool open(std::string* why);
  const NvmlApi& api() const { return api_; }

 private:
  void* handle_ = nullptr;
  bool initialised_ = false;
  NvmlApi api_;
};

// Tests: while `api` is set, NvmlSession::open uses it (calling its init and, on close, its shutdown) instead of
// loading the library. nullptr restores loading.
void setNvmlApiForTest(const NvmlApi* api);

struct NvlinkFact {
  unsigned link = 0;
  std::string remoteBusId;  // as NVML gives it (any case, 4 or 8 domain digits); "" when NVML shows no far end
  unsigned version = 0;     // NVLink version; 0 when NVML does not say
};

// The links 0..maxLinks-1 of the GPU at `busId` that support P2P and are up, in link order (NCCL's test: the P2P
// capability first, since querying it trains the link, then the state). False, with *why, when NVML does not
// know the GPU.
bool queryNvlinks(const NvmlApi& api, const std::string& busId, int maxLinks, std::vector<NvlinkFact>* out,
                  std::string* why);

}  // namespace braid
