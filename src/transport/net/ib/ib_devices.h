// RDMA devices and ports for the IB backend: NCCL_IB_HCA parsing, discovery of the active ports through the verbs
// table (link layer, speed and width, LID or the RoCE GID to use), the port a rank uses (the NIC the host topology
// puts nearest its GPU, where there is one), GPUDirect RDMA detection, and each device's protection domain with its
// memory registration cache. Devices are opened once per process and stay open.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"
#include "transport/net/ib/verbs_api.h"

namespace braid {

// NCCL_IB_HCA: "[^][=]name[:port],name[:port],...". Names are prefixes unless '=' asks for whole names; '^'
// excludes the listed devices instead of selecting them; a missing port means any port.
struct IbHcaFilter {
  struct Item {
    std::string name;
    int port = -1;
  };
  bool exclude = false;
  bool exact = false;
  std::vector<Item> items;  // empty: everything passes
};
// False with *why for text that is not a device list (an empty name, a port that is not a positive number).
bool parseIbHca(const std::string& text, IbHcaFilter* out, std::string* why);
bool ibHcaAllows(const IbHcaFilter& f, const std::string& dev, int port);

// Gb/s of a port from ibv_port_attr's active_speed and active_width codes (0 when a code is unknown).
double ibPortGbps(int speedCode, int widthCode);

// What NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE ask of a RoCE port's GID: a RoCE
// version and an address family to prefer, and a range outside which no GID is used.
struct IbGidPrefs {
  int version = 2;          // 1 or 2
  bool ipv6 = false;        // AF_INET6: IPv6 addresses before IPv4-mapped ones
  bool ranged = false;      // only GIDs in prefix/prefixBits
  uint8_t prefix[16] = {};  // an IPv4 range as its IPv4-mapped GID (::ffff:a.b.c.d)
  int prefixBits = 0;       // of the 128
};
// From the three variables; ncclInvalidArgument naming the one that is malformed (checked at comm init).
ncclResult_t ibGidPrefsFromParams(IbGidPrefs* out);

#if BRAID_HAVE_IBVERBS

// One entry of a RoCE port's GID table, as GID selection sees it.
struct IbGidCandidate {
  int index = -1;
  ibv_gid gid{};
  IbGidType type = IbGidType::Unknown;
};
// The GID a RoCE port uses: `forced` >= 0 (NCCL_IB_GID_INDEX) takes that index when the table holds a non-zero GID
// there; otherwise, among the GIDs in prefs' range (all where it names none), the preferred RoCE version (v2 by
// default) first, then the other, then a GID of unknown type; within each, the preferred family (IPv4-mapped by
// default, else IPv6 that is not link-local), then the other, link-local last. -1 when none is usable.
int ibPickGid(const std::vector<IbGidCandidate>& table, int forced, const IbGidPrefs& prefs = IbGidPrefs{});

class IbDevice;

struct IbPort {
  IbDevice* dev = nullptr;
  std::string name;  // device name, e.g. mlx5_0
  int port = 1;
  bool roce = false;  // link layer Ethernet
  uint16_t lid = 0;
  int gidIndex = -1;  // RoCE: the GID in use
  ibv_gid gid{};
  IbGidType gidType = IbGidType::Unknown;
  ibv_mtu mtu = IBV_MTU_1024;
  double gbps = 0;
  std::string describe() const;  // "mlx5_0:1 (InfiniBand, 400 Gb/s)"
};

// An open device: its context, one protection domain, the ports that were up at discovery, the async events
// (a port going down marks it down for every connection on it) and the registration cache.
class IbDevice {
 public:
  IbDevice(std::string name, ibv_context* ctx, ibv_pd* pd) : name_(std::move(name)), ctx_(ctx), pd_(pd) {}
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;
  const std::string& name() const { return name_; }
  ibv_context* ctx() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }

  // Registers [addr, addr + len) for local and remote writes, or takes a registration that covers it; each
  // acquire is paired with one release. Registrations cover whole pages and live while anyone holds them.
  ncclResult_t acquireMr(void* addr, size_t len, ibv_mr** out);
  void releaseMr(ibv_mr* mr);
  size_t cachedMrs() const;

  // Reads the pending async events (never blocks). Port errors, and a device that reports itself fatal, are
  // remembered: portDown() then says so with the event's name in *why.
  void pollAsyncEvents();
  bool portDown(int port, std::string* why) const;
  int asyncFd() const { return ctx_->async_fd; }

 private:
  struct MrEntry {
    uintptr_t end;
    ibv_mr* mr;
    int refs;
  };
  std::string name_;
  ibv_context* ctx_;
  ibv_pd* pd_;
  mutable std::mutex mu_;
  std::map<uintptr_t, MrEntry> mrs_;    // by start address
  std::vector<MrEntry> retired_;        // replaced in mrs_ by a longer registration, still held
  std::atomic<uint32_t> downPorts_{0};  // bit p: port p got IBV_EVENT_PORT_ERR; bit 0: the device is fatal
  std::string downWhy_;                 // under mu_
};

// Every active port that NCCL_IB_HCA allows, discovered once per process (devices it cannot open are skipped with
// an INFO line). Empty with *why when there is none, or the verbs library did not load.
const std::vector<IbPort>& ibPorts(std::string* why);

// The port a connection of a rank uses: the first port of the NIC the host topology puts nearest its GPU
// (gpuBusId, -1 for host communicators), else the first port found.
const IbPort* ibPortFor(int64_t gpuBusId);

// Whether this system could let the NIC reach GPU memory (dma-buf registration, or the nvidia-peermem module).
// Reported at INFO; the IB backend moves GPU data through host memory either way.
struct IbGdrSupport {
  bool dmabuf = false;
  bool peermem = false;
};
IbGdrSupport ibGdrSupport();

#endif  // BRAID_HAVE_IBVERBS

}  // namespace braid
