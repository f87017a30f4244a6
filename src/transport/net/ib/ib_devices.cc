// IB device discovery and NCCL_IB_HCA, GID choice, the registration cache and async events (ib_devices.h).
#include "transport/net/ib/ib_devices.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "transport/p2p/p2p_level.h"

namespace braid {

bool parseIbHca(const std::string& text, IbHcaFilter* out, std::string* why) {
  IbHcaFilter f;
  size_t pos = 0;
  if (pos < text.size() && text[pos] == '^') {
    f.exclude = true;
    pos++;
  }
  if (pos < text.size() && text[pos] == '=') {
    f.exact = true;
    pos++;
  }
  const std::string rest = text.substr(pos);
  if (rest.empty() && pos > 0) {
    *why = "\"" + text + "\" names no device";
    return false;
  }
  size_t start = 0;
  while (start <= rest.size() && !rest.empty()) {
    size_t comma = rest.find(',', start);
    std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    IbHcaFilter::Item it;
    const size_t colon = item.find(':');
    it.name = item.substr(0, colon);
    if (it.name.empty()) {
      *why = "an empty device name in \"" + text + "\"";
      return false;
    }
    if (colon != std::string::npos) {
      const std::string port = item.substr(colon + 1);
      char* end = nullptr;
      errno = 0;
      long v = port.empty() ? 0 : strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || errno != 0 || v < 1 || v > 255) {
        *why = "port \"" + port + "\" of " + it.name + " is not a number from 1 to 255";
        return false;
      }
      it.port = static_cast<int>(v);
    }
    f.items.push_back(it);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out = f;
  return true;
}

bool ibHcaAllows(const IbHcaFilter& f, const std::string& dev, int port) {
  if (f.items.empty()) return true;
  bool listed = false;
  for (const auto& it : f.items) {
    const bool nameOk = f.exact ? dev == it.name : dev.compare(0, it.name.size(), it.name) == 0;
    if (nameOk && (it.port < 0 || it.port == port)) {
      listed = true;
      break;
    }
  }
  return f.exclude ? !listed : listed;
}

double ibPortGbps(int speedCode, int widthCode) {
  double lane = 0;
  switch (speedCode) {
    case 1:
      lane = 2.5;
      break;  // SDR
    case 2:
      lane = 5;
      break;  // DDR
    case 4:
      lane = 10;
      break;  // QDR
    case 8:
      lane = 10;
      break;  // FDR10
    case 16:
      lane = 14;
      break;  // FDR
    case 32:
      lane = 25;
      break;  // EDR
    case 64:
      lane = 50;
      break;  // HDR
    case 128:
      lane = 100;
      break;  // NDR
    case 256:
      lane = 200;
      break;  // XDR
    default:
      return 0;
  }
  int lanes = 0;
  switch (widthCode) {
    case 1:
      lanes = 1;
      break;
    case 2:
      lanes = 4;
      break;
    case 4:
      lanes = 8;
      break;
    case 8:
      lanes = 12;
      break;
    case 16:
      lanes = 2;
      break;
    default:
      return 0;
  }
  return lane * lanes;
}

ncclResult_t ibGidPrefsFromParams(IbGidPrefs* out) {
  IbGidPrefs p;
  const int64_t version = params::IbRoceVersionNum();
  if (version != 1 && version != 2) {
    return recordError(ncclInvalidArgument, "NCCL_IB_ROCE_VERSION_NUM=%lld: RoCE versions are 1 and 2",
                       static_cast<long long>(version));
  }
  p.version = static_cast<int>(version);
  const std::string family = params::IbAddrFamily();
  if (family == "AF_INET6") {
    p.ipv6 = true;
  } else if (!family.empty() && family != "AF_INET") {
    return recordError(ncclInvalidArgument, "NCCL_IB_ADDR_FAMILY=%s: AF_INET or AF_INET6", family.c_str());
  }
  const std::string range = params::IbAddrRange();
  if (!range.empty()) {
    const size_t slash = range.find('/');
    const std::string addr = range.substr(0, slash);
    char* end = nullptr;
    const long bits = slash == std::string::npos ? -1 : strtol(range.c_str() + slash + 1, &end, 10);
    in_addr v4{};
    in6_addr v6{};
    const bool isV4 = inet_pton(AF_INET, addr.c_str(), &v4) == 1;
    const bool isV6 = !isV4 && inet_pton(AF_INET6, addr.c_str(), &v6) == 1;
    if ((!isV4 && !isV6) || bits < 0 || (end && *end) || bits > (isV4 ? 32 : 128)) {
      return recordError(ncclInvalidArgument, "NCCL_IB_ADDR_RANGE=%s: an address and a prefix length, e.g. "
                         "10.0.0.0/8 or fd00::/8", range.c_str());
    }
    p.ranged = true;
    if (isV4) {
      p.prefix[10] = p.prefix[11] = 0xff;
      std::memcpy(p.prefix + 12, &v4, 4);
      p.prefixBits = 96 + static_cast<int>(bits);
    } else {
      std::memcpy(p.prefix, &v6, 16);
      p.prefixBits = static_cast<int>(bits);
    }
  }
  *out = p;
  return ncclSuccess;
}

#if BRAID_HAVE_IBVERBS

namespace {

bool gidIsZero(const ibv_gid& g) {
  for (uint8_t b : g.raw) {
    if (b) return false;
  }
  return true;
}
bool gidIsV4Mapped(const ibv_gid& g) {
  for (int i = 0; i < 10; i++) {
    if (g.raw[i]) return false;
  }
  return g.raw[10] == 0xff && g.raw[11] == 0xff;
}
bool gidIsLinkLocal(const ibv_gid& g) { return g.raw[0] == 0xfe && (g.raw[1] & 0xc0) == 0x80; }
bool gidInRange(const ibv_gid& g, const IbGidPrefs& p) {
  for (int bit = 0; bit < p.prefixBits; ++bit) {
    const int byte = bit / 8, mask = 0x80 >> (bit % 8);
    if ((g.raw[byte] & mask) != (p.prefix[byte] & mask)) return false;
  }
  return true;
}

std::string gidString(const ibv_gid& g) {
  char b[64];
  snprintf(b, sizeof(b), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", g.raw[0], g.raw[1],
           g.raw[2], g.raw[3], g.raw[4], g.raw[5], g.raw[6], g.raw[7], g.raw[8], g.raw[9], g.raw[10], g.raw[11],
           g.raw[12], g.raw[13], g.raw[14], g.raw[15]);
  return b;
}

const char* gidTypeName(IbGidType t) {
  switch (t) {
    case IbGidType::Ib:
      return "IB";
    case IbGidType::RoceV1:
      return "RoCE v1";
    case IbGidType::RoceV2:
      return "RoCE v2";
    default:
      return "unknown type";
  }
}

}  // namespace

int ibPickGid(const std::vector<IbGidCandidate>& table, int forced, const IbGidPrefs& prefs) {
  if (forced >= 0) {
    for (const auto& c : table) {
      if (c.index == forced && !gidIsZero(c.gid)) return forced;
    }
    return -1;
  }
  // Lower score is better.
  const IbGidType first = prefs.version == 1 ? IbGidType::RoceV1 : IbGidType::RoceV2;
  const IbGidType second = prefs.version == 1 ? IbGidType::RoceV2 : IbGidType::RoceV1;
  auto score = [&](const IbGidCandidate& c) {
    const int type = c.type == first ? 0 : c.type == second ? 3 : 6;
    const bool v4 = gidIsV4Mapped(c.gid), linkLocal = gidIsLinkLocal(c.gid);
    const int addr = linkLocal ? 2 : v4 != prefs.ipv6 ? 0 : 1;
    return type + addr;
  };
  int best = -1, bestScore = 1 << 30;
  for (const auto& c : table) {
    if (gidIsZero(c.gid) || (prefs.ranged && !gidInRange(c.gid, prefs))) continue;
    const int s = score(c);
    if (s < bestScore) {
      best = c.index;
      bestScore = s;
    }
  }
  return best;
}

std::string IbPort::describe() const {
  char b[160];
  snprintf(b, sizeof(b), "%s:%d (%s, %.0f Gb/s)", name.c_str(), port, roce ? "RoCE" : "InfiniBand", gbps);
  return b;
}

ncclResult_t IbDevice::acquireMr(void* addr, size_t len, ibv_mr** out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t e = a + (len ? len : 1);
  std::lock_guard<std::mutex> lk(mu_);
  // Entries start at or below a; the few per device make a backwards scan cheap.
  for (auto it = mrs_.upper_bound(a); it != mrs_.begin();) {
    --it;
    if (it->second.end >= e) {
      it->second.refs++;
      *out = it->second.mr;
      return ncclSuccess;
    }
  }
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = a / page * page, end = (e + page - 1) / page * page;
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr = verbs().regMr(pd_, reinterpret_cast<void*>(start), end - start, access);
  if (!mr) {
    const int err = errno;
    return recordError(ncclSystemError, "NET/IB: %s: cannot register %zu bytes at %p: %s (errno %d)", name_.c_str(),
                       static_cast<size_t>(end - start), reinterpret_cast<void*>(start), strerror(err), err);
  }
  auto ins = mrs_.emplace(start, MrEntry{end, mr, 1});
  if (!ins.second) {
    // A registration starting here that is too short: the new, longer one replaces it in the cache; the old one
    // stays registered for its holders, who release it by pointer.
    retired_.push_back(ins.first->second);
    ins.first->second = MrEntry{end, mr, 1};
  }
  *out = mr;
  return ncclSuccess;
}

void IbDevice::releaseMr(ibv_mr* mr) {
  std::lock_guard<std::mutex> lk(mu_);
  auto drop = [&](MrEntry& m) {
    if (--m.refs > 0) return false;
    verbs().deregMr(m.mr);
    return true;
  };
  for (auto it = mrs_.begin(); it != mrs_.end(); ++it) {
    if (it->second.mr != mr) continue;
    if (drop(it->second)) mrs_.erase(it);
    return;
  }
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    if (it->mr != mr) continue;
    if (drop(*it)) retired_.erase(it);
    return;
  }
}

size_t IbDevice::cachedMrs() const {
  std::lock_guard<std::mutex> lk(mu_);
  return mrs_.size() + retired_.size();
}

void IbDevice::pollAsyncEvents() {
  std::lock_guard<std::mutex> lk(mu_);
  for (int i = 0; i < 64; i++) {
    ibv_async_event ev{};
    if (verbs().getAsyncEvent(ctx_, &ev) != 0) break;  // nonblocking descriptor: nothing pending
    const char* what = verbs().eventTypeStr ? verbs().eventTypeStr(ev.event_type) : "async event";
    uint32_t bit = 0;
    if (ev.event_type == IBV_EVENT_PORT_ERR && ev.element.port_num < 32) bit = 1u << ev.element.port_num;
    if (ev.event_type == IBV_EVENT_DEVICE_FATAL) bit = 1u;
    if (bit) {
      downPorts_.fetch_or(bit);
      if (downWhy_.empty()) downWhy_ = what;
      BRAID_WARN(
          "NET/IB: %s: %s%s", name_.c_str(), what,
          ev.event_type == IBV_EVENT_PORT_ERR ? (" on port " + std::to_string(ev.element.port_num)).c_str() : "");
    } else {
      BRAID_INFO(kSubNet, "NET/IB: %s: async event %s", name_.c_str(), what);
    }
    verbs().ackAsyncEvent(&ev);
  }
}

bool IbDevice::portDown(int port, std::string* why) const {
  const uint32_t d = downPorts_.load();
  if (!(d & 1u) && !(port < 32 && (d & (1u << port)))) return false;
  std::lock_guard<std::mutex> lk(mu_);
  *why = (d & 1u) ? "the device reported a fatal error (" + downWhy_ + ")" : "the port went down (" + downWhy_ + ")";
  return true;
}

namespace {

struct Discovery {
  std::vector<std::unique_ptr<IbDevice>> devices;
  std::vector<IbPort> ports;
  std::string why;
};

void addPorts(const VerbsApi& v, ibv_device* d, const IbHcaFilter& filter, Discovery* out) {
  const std::string name = v.getDeviceName(d) ? v.getDeviceName(d) : "?";
  ibv_context* ctx = v.openDevice(d);
  if (!ctx) {
    BRAID_INFO(kSubNet | kSubInit, "NET/IB: cannot open %s: %s", name.c_str(), strerror(errno));
    return;
  }
  ibv_device_attr attr{};
  if (v.queryDevice(ctx, &attr) != 0) {
    BRAID_INFO(kSubNet | kSubInit, "NET/IB: cannot query %s", name.c_str());
    v.closeDevice(ctx);
    return;
  }
  std::vector<IbPort> found;
  for (int p = 1; p <= attr.phys_port_cnt; p++) {
    if (!ibHcaAllows(filter, name, p)) continue;
    ibv_port_attr pa{};
    if (v.queryPort(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
    if (pa.state != IBV_PORT_ACTIVE) {
      BRAID_INFO(kSubNet | kSubInit, "NET/IB: %s:%d is not active (state %d)", name.c_str(), p, pa.state);
      continue;
    }
    if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND && pa.link_layer != IBV_LINK_LAYER_ETHERNET) continue;
    IbPort port;
    port.name = name;
    port.port = p;
    port.roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    port.lid = pa.lid;
    port.mtu = pa.active_mtu;
    port.gbps = ibPortGbps(pa.active_speed, pa.active_width);
    if (port.roce) {
      std::vector<IbGidCandidate> table;
      for (int i = 0; i < pa.gid_tbl_len && i < 256; i++) {
        IbGidCandidate c;
        c.index = i;
        if (v.queryGid(ctx, static_cast<uint8_t>(p), i, &c.gid) != 0) continue;
        c.type = v.queryGidType(ctx, static_cast<uint8_t>(p), i);
        table.push_back(c);
      }
      const int forced = static_cast<int>(params::IbGidIndex());
      IbGidPrefs prefs;
      if (ibGidPrefsFromParams(&prefs) != ncclSuccess) clearPendingError();  // refused at init; defaults here
      port.gidIndex = ibPickGid(table, forced, prefs);
      if (port.gidIndex < 0) {
        BRAID_INFO(kSubNet | kSubInit, "NET/IB: %s:%d has no usable GID%s", name.c_str(), p,
                   forced >= 0 ? " at NCCL_IB_GID_INDEX" : prefs.ranged ? " in NCCL_IB_ADDR_RANGE" : "");
        continue;
      }
      for (const auto& c : table) {
        if (c.index == port.gidIndex) {
          port.gid = c.gid;
          port.gidType = c.type;
        }
      }
    } else if (pa.lid == 0) {
      BRAID_INFO(kSubNet | kSubInit, "NET/IB: %s:%d has no LID (no subnet manager?)", name.c_str(), p);
      continue;
    }
    found.push_back(port);
  }
  if (found.empty()) {
    v.closeDevice(ctx);
    return;
  }
  ibv_pd* pd = v.allocPd(ctx);
  if (!pd) {
    BRAID_INFO(kSubNet | kSubInit, "NET/IB: cannot allocate a protection domain on %s", name.c_str());
    v.closeDevice(ctx);
    return;
  }
  // Async events are read without blocking, whenever a connection on the device makes progress.
  const int fl = fcntl(ctx->async_fd, F_GETFL);
  if (fl >= 0) fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
  out->devices.push_back(std::make_unique<IbDevice>(name, ctx, pd));
  for (auto& port : found) {
    port.dev = out->devices.back().get();
    BRAID_INFO(
        kSubNet | kSubInit, "NET/IB: using %s%s%s%s", port.describe().c_str(), port.roce ? ", GID " : "",
        port.roce ? gidString(port.gid).c_str() : "",
        port.roce
            ? (std::string(" (") + gidTypeName(port.gidType) + ", index " + std::to_string(port.gidIndex) + ")").c_str()
            : "");
    out->ports.push_back(port);
  }
}

Discovery& discovery() {
  static Discovery* d = [] {
    auto* out = new Discovery;  // lives for the process: connections may close during exit
    const VerbsLoad& load = loadVerbs();
    if (!load.ok) {
      out->why = load.why;
      return out;
    }
    IbHcaFilter filter;
    std::string why;
    if (!parseIbHca(params::IbHca(), &filter, &why)) {
      BRAID_WARN("NCCL_IB_HCA=%s: %s; every port is considered", params::IbHca().c_str(), why.c_str());
      filter = IbHcaFilter{};
    }
    const VerbsApi& v = verbs();
    int n = 0;
    ibv_device** list = v.getDeviceList(&n);
    if (!list) {
      out->why = "no RDMA devices (" + std::string(strerror(errno)) + ")";
      return out;
    }
    for (int i = 0; i < n; i++) addPorts(v, list[i], filter, out);
    v.freeDeviceList(list);
    if (out->ports.empty()) {
      out->why = n == 0 ? "no RDMA devices"
                        : std::to_string(n) + " RDMA device(s), but no active port" +
                              (params::IbHca().empty() ? "" : " that NCCL_IB_HCA allows");
    }
    return out;
  }();
  return *d;
}

}  // namespace

const std::vector<IbPort>& ibPorts(std::string* why) {
  Discovery& d = discovery();
  if (why) *why = d.why;
  return d.ports;
}

const IbPort* ibPortFor(int64_t gpuBusId) {
  const std::vector<IbPort>& ports = ibPorts(nullptr);
  if (ports.empty()) return nullptr;
  for (const auto& nic : hostNicsNearestGpu(gpuBusId)) {
    for (const IbPort& p : ports) {
      if (p.name == nic.first && (nic.second <= 0 || nic.second == p.port)) return &p;
    }
  }
  return &ports[0];
}

IbGdrSupport ibGdrSupport() {
  IbGdrSupport g;
  struct stat st;
  g.peermem =
      stat("/sys/kernel/mm/memory_peers/nv_mem/version", &st) == 0 || stat("/sys/module/nvidia_peermem", &st) == 0;
  // dma-buf registration needs libibverbs' entry point and a kernel of 5.12 or later.
  if (loadVerbs().ok && verbs().regDmabufMr) {
    utsname u{};
    int major = 0, minor = 0;
    if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2) {
      g.dmabuf = major > 5 || (major == 5 && minor >= 12);
    }
  }
  return g;
}

#endif  // BRAID_HAVE_IBVERBS

}  // namespace braid
