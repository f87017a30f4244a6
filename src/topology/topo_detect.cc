// topo_detect: the host's <system> element in NCCL's topology schema, read from sysfs, /proc/cpuinfo and NVML (see
// topo_detect.h). The shape follows NCCL's detection so that a dump loads in either library and paths get the same
// classes: a <pci> element per PCIe switch (its upstream port) and per endpoint, nested as the PCI tree nests them,
// under the <cpu> of the NUMA node the tree hangs from; a <gpu> or <nic> inside its endpoint's <pci>.
//
// Where each attribute comes from (a missing fact is left out, or written empty where NCCL's loader needs the key):
//   cpu   numaid: the numa_node of the top device of the tree (-1 or unreadable: the lowest NUMA node, 0 without
//         any); affinity: devices/system/node/node<N>/cpumap; arch: the architecture this library was built for
//         (what NCCL writes too); vendor, familyid, modelid: the first processor of /proc/cpuinfo (x86 only, as in
//         NCCL), read as <sysfsRoot>/../proc/cpuinfo so a fake tree brings its own. Without that file they are left
//         out: no cpuid fallback, so a test tree never sees the host's CPU.
//   pci   busid: the sysfs directory's name; class, vendor, device, subsystem_vendor, subsystem_device: the files of
//         that name; link_speed: the slower of the device's and its upstream port's max_link_speed (current_link_speed
//         where max is missing), as sysfs writes it ("16.0 GT/s PCIe"); link_width: the narrower max_link_width.
//   gpu   dev, sm, rank: the caller's TopoGpuFact (rank only when known); gdr: a GPUDirect RDMA kernel module is
//         loaded (nvidia_peermem or nv_peer_mem, the modules NCCL's IB transport looks for).
//   nvlink target, count: NVML's far ends of the GPU's P2P-capable, active links, counted per far end; tclass: the
//         far end's PCI class (the listed GPU's, or sysfs's), NVSwitch (0x068000) where it cannot be read.
//   net   name: the InfiniBand device (with ":<port>" when it has several ports) or the interface; dev: the order of
//         the list (InfiniBand ports by name and port, then interfaces by name); speed (Mb/s): ports/<p>/rate or the
//         interface's speed file (10000 where it reads no positive value, NCCL's default); port: the IB port, 0 for
//         an interface; guid: sys_image_guid (node_guid where missing) in NCCL's text, the dev index for an
//         interface (as NCCL's socket transport); maxconn: 65536 (NCCL's socket transport; the IB queue-pair limit
//         is no sysfs fact); gdr: IB with a GPUDirect module loaded; latency: 0 (NCCL's "not set").
// Left out: interfaces without a device link (virtual) or that are down, InfiniBand ports that are not active,
// network devices on no PCI function (USB), and NVLinks to a far end the topology cannot hold (a GPU not listed,
// a CPU): topology.h takes a <nic> only inside a <pci>, an <nvlink> only to a listed GPU or an NVSwitch.
#include "topology/topo_detect.h"
#include "topology/topology.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/log.h"
#include "core/result.h"
#include "topology/topo_nvml.h"

namespace braid {
namespace {

constexpr char kTopoXmlVersion[] = "1";
constexpr char kNvSwitchClass[] = "0x068000";
constexpr char kGpuClassPrefix[] = "0x03";
constexpr char kNicClassPrefix[] = "0x02";
// NCCL's stand-in for an NVLink far end that NVML cannot show (an NVSwitch hidden from a VM).
constexpr char kHiddenNvlinkTarget[] = "fffffff:ffff:ff";
constexpr int kDefaultNetSpeed = 10000;  // Mb/s
constexpr int kNetMaxConn = 65536;

// ---- sysfs reading

// The first line of a small file, trimmed; false when it cannot be read or says nothing.
bool readLine(const std::string& path, std::string* out) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  size_t b = line.find_first_not_of(" \t\r\n");
  size_t e = line.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return false;
  *out = line.substr(b, e - b + 1);
  return true;
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// The canonical absolute path, links resolved; "" when it does not resolve.
std::string realPath(const std::string& path) {
  char* p = realpath(path.c_str(), nullptr);
  if (p == nullptr) return "";
  std::string s(p);
  free(p);
  return s;
}

// Entry names of a directory, sorted (readdir's order differs between hosts).
std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string baseName(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}
std::string dirName(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos || s == 0 ? "/" : path.substr(0, s);
}

bool parseInt(const std::string& s, long* v) {
  char* end = nullptr;
  *v = std::strtol(s.c_str(), &end, 10);
  return !s.empty() && end != s.c_str() && *end == '\0';
}

// A sysfs directory named after a PCI function (not a host bridge "pci0000:00", not "virtio0").
bool isPciFunctionName(const std::string& name) { return !name.empty() && topoBusId(name) == name; }

// The PCI function directory behind a class device's `device` link: the link itself, or its parent for a
// device on a bus of its own over PCI (virtio-net: .../0000:00:03.0/virtio2). "" for anything else.
std::string pciFunctionDir(const std::string& deviceDir) {
  if (deviceDir.empty()) return "";
  if (isPciFunctionName(baseName(deviceDir))) return deviceDir;
  std::string parent = dirName(deviceDir);
  return isPciFunctionName(baseName(parent)) ? parent : "";
}

// A link's speed in GT/s from max_link_speed (current_link_speed where that is missing); 0 when unknown.
double linkSpeed(const std::string& dir, std::string* text) {
  for (const char* file : {"max_link_speed", "current_link_speed"}) {
    std::string t;
    if (!readLine(dir + "/" + file, &t) || t.find("GT/s") == std::string::npos) continue;
    double v = std::strtod(t.c_str(), nullptr);
    if (v > 0) {
      *text = t;
      return v;
    }
  }
  return 0;
}

long linkWidth(const std::string& dir) {
  for (const char* file : {"max_link_width", "current_link_width"}) {
    std::string t;
    long v = 0;
    if (readLine(dir + "/" + file, &t) && parseInt(t, &v) && v > 0) return v;
  }
  return 0;
}

int maxNvlinks(int sm) {
  // NCCL's bound per generation; an unknown sm (0) gets the largest.
  if (sm <= 0) return 18;
  return sm < 60 ? 0 : sm < 70 ? 4 : sm < 80 ? 6 : sm < 90 ? 12 : 18;
}

// ---- the detected machine, before it is written as XML

struct NetFact {
  std::string name;
  int dev = 0;
  int speed = kDefaultNetSpeed;
  int port = 0;
  uint64_t guid = 0;
  bool ib = false;
  bool gdr = false;
};

struct PciEntry {
  std::string parent;  // the bus id of the element above; "" at the top, under the CPU of `numa`
  int numa = 0;
  std::vector<std::pair<std::string, std::string>> attrs;  // after busid, in NCCL's order
  int gpu = -1;                                            // index into Detector::gpus_
  std::vector<NetFact> nets;                               // a NIC's ports, in dev order
};

struct GpuEntry {
  std::string busId;
  TopoGpuFact fact;
  struct Nvlink {
    std::string target, tclass;
    int count = 0;
  };
  std::vector<Nvlink> nvlinks;  // by target
};

class Detector {
 public:
  explicit Detector(const TopoDetectOptions& opts) : opts_(opts), root_(opts.sysfsRoot) {}
  ncclResult_t run(XmlNode* system, bool* nvlinksKnown);

 private:
  ncclResult_t collectGpus();
  void placeGpus();
  void detectNics();
  bool detectNvlinks();  // false: NVML unavailable
  std::string addPciPath(const std::string& dir, const char* leafClass);
  void readPciAttrs(const std::string& dir, const std::string& portDir, const char* leafClass, PciEntry* e);
  int numaOf(const std::string& dir, const std::string& busId);
  int defaultNuma();
  std::string targetClass(const std::string& target);
  void readCpuInfo();
  void emitCpu(XmlNode* system, int numa, const std::map<std::string, std::vector<std::string>>& kids,
               const std::vector<std::string>& tops);
  void emitPci(XmlNode* parent, const std::string& busId, const std::map<std::string, std::vector<std::string>>& kids);

  const TopoDetectOptions& opts_;
  std::string root_;
  std::vector<GpuEntry> gpus_;           // by bus id
  std::map<std::string, PciEntry> pci_;  // by bus id
  bool gdrModule_ = false;
  int defaultNuma_ = -2;  // -2: not read yet
  int numaNodes_ = 0;
  bool numaNoted_ = false;
  std::string arch_, vendor_, familyId_, modelId_;
};

ncclResult_t Detector::collectGpus() {
  for (const TopoGpuFact& g : opts_.gpus) {
    std::string busId = topoBusId(g.busId);
    if (busId.empty())
      return BRAID_ERR(ncclInvalidArgument, "detectTopology: GPU bus id '%s' (cudaDev %d) is no PCI address",
                       g.busId.c_str(), g.cudaDev);
    for (const GpuEntry& e : gpus_)
      if (e.busId == busId)
        return BRAID_ERR(ncclInvalidArgument, "detectTopology: GPU %s is listed twice (cudaDev %d and %d)",
                         busId.c_str(), e.fact.cudaDev, g.cudaDev);
    gpus_.push_back(GpuEntry{busId, g, {}});
  }
  std::sort(gpus_.begin(), gpus_.end(), [](const GpuEntry& a, const GpuEntry& b) { return a.busId < b.busId; });
  return ncclSuccess;
}

int Detector::defaultNuma() {
  if (defaultNuma_ != -2) return defaultNuma_;
  defaultNuma_ = -1;
  for (const std::string& n : listDir(root_ + "/devices/system/node")) {
    long id = 0;
    if (n.compare(0, 4, "node") != 0 || !parseInt(n.substr(4), &id) || id < 0) continue;
    ++numaNodes_;
    if (defaultNuma_ < 0 || id < defaultNuma_) defaultNuma_ = static_cast<int>(id);
  }
  if (defaultNuma_ < 0) defaultNuma_ = 0;
  return defaultNuma_;
}

int Detector::numaOf(const std::string& dir, const std::string& busId) {
  std::string t;
  long id = -1;
  if (readLine(dir + "/numa_node", &t) && parseInt(t, &id) && id >= 0) return static_cast<int>(id);
  int fallback = defaultNuma();
  // One node (most VMs, single-socket hosts) is no guess; several are.
  if (numaNodes_ > 1 && !numaNoted_) {
    numaNoted_ = true;
    BRAID_INFO(kSubInit | kSubGraph,
               "Topology detection: %s has no NUMA node (numa_node -1); placing it and others like it under "
               "NUMA node %d of %d",
               busId.c_str(), fallback, numaNodes_);
  }
  return fallback;
}

void Detector::readPciAttrs(const std::string& dir, const std::string& portDir, const char* leafClass, PciEntry* e) {
  std::string v;
  if (readLine(dir + "/class", &v))
    e->attrs.emplace_back("class", v);
  else if (leafClass)
    e->attrs.emplace_back("class", leafClass);
  for (const char* key : {"vendor", "device", "subsystem_vendor", "subsystem_device"})
    if (readLine(dir + "/" + key, &v)) e->attrs.emplace_back(key, v);
  // The link to the element above is as fast as the slower end of it: the device or the port it plugs into.
  std::string devText, portText;
  double devSpeed = linkSpeed(dir, &devText), portSpeed = linkSpeed(portDir, &portText);
  std::string speed = devSpeed > 0 && (portSpeed <= 0 || devSpeed <= portSpeed) ? devText : portText;
  e->attrs.emplace_back("link_speed", speed);
  long devWidth = linkWidth(dir), portWidth = linkWidth(portDir);
  long width = devWidth > 0 && portWidth > 0 ? std::min(devWidth, portWidth) : std::max(devWidth, portWidth);
  e->attrs.emplace_back("link_width", width > 0 ? std::to_string(width) : "");
}

// Adds the element of the PCI function at `dir` (a resolved sysfs path) and those above it, and returns its bus
// id. NCCL's walk: the element above a function sits two directory levels up, so a PCIe switch is one element
// (its upstream port) and the downstream port between is left out, which gives "one switch" (PIX) between two
// GPUs behind it; the walk stops below the host bridge (pciDDDD:BB), where the top element hangs under the CPU of
// its numa_node. An element already added (a switch shared with an earlier device) ends the walk.
std::string Detector::addPciPath(const std::string& dir, const char* leafClass) {
  std::vector<std::string> comps;
  for (size_t b = 1, e; b <= dir.size(); b = e + 1) {
    e = dir.find('/', b);
    if (e == std::string::npos) e = dir.size();
    comps.push_back(dir.substr(b, e - b));
  }
  auto prefix = [&](int k) {
    std::string p;
    for (int i = 0; i < k; ++i) p += "/" + comps[i];
    return p;
  };
  const int n = static_cast<int>(comps.size());
  int first = n;  // comps[first..n-1] are PCI functions
  while (first > 0 && isPciFunctionName(comps[first - 1])) --first;
  std::string child;
  for (int i = n - 1; i >= first; i -= 2) {
    const std::string& busId = comps[i];
    bool known = pci_.count(busId) != 0;
    if (!known) readPciAttrs(prefix(i + 1), prefix(i), i == n - 1 ? leafClass : nullptr, &pci_[busId]);
    if (!child.empty()) pci_[child].parent = busId;
    if (known) break;
    child = busId;
    if (i - 2 < first) pci_[busId].numa = numaOf(prefix(i + 1), busId);
  }
  return comps[n - 1];
}

void Detector::placeGpus() {
  std::string unplaced;
  for (size_t g = 0; g < gpus_.size(); ++g) {
    const std::string& busId = gpus_[g].busId;
    std::string dir = realPath(root_ + "/bus/pci/devices/" + busId);
    if (!dir.empty() && baseName(dir) == busId) {
      addPciPath(dir, kGpuClassPrefix);
    } else {
      // No PCI tree to place it in (a VM or container without the device in sysfs): NCCL's placeholder element,
      // class "0x03" and the link keys present but empty, directly under a CPU.
      PciEntry& e = pci_[busId];
      e.numa = defaultNuma();
      e.attrs = {{"class", kGpuClassPrefix}, {"link_speed", ""}, {"link_width", ""}};
      unplaced += (unplaced.empty() ? "" : ", ") + busId;
    }
    pci_[busId].gpu = static_cast<int>(g);
  }
  if (!unplaced.empty())
    BRAID_INFO(kSubInit | kSubGraph,
               "Topology detection: no PCI path in %s/bus/pci/devices for GPU %s; placing it directly under the CPU "
               "of NUMA node %d, without PCI switches",
               root_.c_str(), unplaced.c_str(), defaultNuma());
}

void Detector::detectNics() {
  std::vector<std::pair<std::string, NetFact>> found;  // PCI function dir, port
  std::string skipped;
  const std::string ibRoot = root_ + "/class/infiniband";
  for (const std::string& name : listDir(ibRoot)) {
    std::string dir = pciFunctionDir(realPath(ibRoot + "/" + name + "/device"));
    if (dir.empty()) {
      skipped += " " + name;
      continue;
    }
    std::string guidText;
    uint64_t guid = 0;
    // The system image guid names the adapter, shared by its ports and functions, as NCCL's IB transport uses it.
    if (readLine(ibRoot + "/" + name + "/sys_image_guid", &guidText) ||
        readLine(ibRoot + "/" + name + "/node_guid", &guidText)) {
      guidText.erase(std::remove(guidText.begin(), guidText.end(), ':'), guidText.end());
      guid = std::strtoull(guidText.c_str(), nullptr, 16);
      // sysfs prints the guid in network byte order; NCCL prints verbs' big-endian value as a host integer.
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      guid = __builtin_bswap64(guid);
#endif
    }
    std::vector<std::string> ports = listDir(ibRoot + "/" + name + "/ports");
    std::sort(ports.begin(), ports.end(),
              [](const std::string& a, const std::string& b) { return std::atol(a.c_str()) < std::atol(b.c_str()); });
    for (const std::string& p : ports) {
      std::string base = ibRoot + "/" + name + "/ports/" + p, state, rate;
      // NCCL's IB transport only uses active ports ("4: ACTIVE").
      if (!readLine(base + "/state", &state) || state.find("ACTIVE") == std::string::npos) continue;
      NetFact f;
      f.name = ports.size() > 1 ? name + ":" + p : name;
      f.port = std::atoi(p.c_str());
      f.ib = true;
      f.guid = guid;
      f.gdr = gdrModule_;
      double gbs = readLine(base + "/rate", &rate) ? std::strtod(rate.c_str(), nullptr) : 0;  // "200 Gb/sec (4X HDR)"
      if (gbs > 0) f.speed = static_cast<int>(gbs * 1000 + 0.5);
      found.emplace_back(dir, f);
    }
  }
  const std::string netRoot = root_ + "/class/net";
  for (const std::string& name : listDir(netRoot)) {
    std::string device = realPath(netRoot + "/" + name + "/device");
    std::string state;
    if (device.empty()) continue;  // virtual: loopback, bridges, tunnels, ifb
    if (readLine(netRoot + "/" + name + "/operstate", &state) && state == "down") continue;
    std::string dir = pciFunctionDir(device);
    if (dir.empty()) {
      skipped += " " + name;
      continue;
    }
    NetFact f;
    std::string speed;
    long mbps = 0;
    if (readLine(netRoot + "/" + name + "/speed", &speed) && parseInt(speed, &mbps) && mbps > 0)
      f.speed = static_cast<int>(mbps);
    f.name = name;
    found.emplace_back(dir, f);
  }
  if (!skipped.empty())
    BRAID_INFO(kSubGraph, "Topology detection: network devices without a PCI function left out:%s", skipped.c_str());
  int dev = 0;
  for (auto& nf : found) {
    nf.second.dev = dev++;
    if (!nf.second.ib) nf.second.guid = static_cast<uint64_t>(nf.second.dev);
    pci_[addPciPath(nf.first, kNicClassPrefix)].nets.push_back(nf.second);
  }
}

std::string Detector::targetClass(const std::string& target) {
  if (target == kHiddenNvlinkTarget) return kNvSwitchClass;  // NCCL's assumption for a far end out of sight
  auto it = pci_.find(target);
  if (it != pci_.end() && it->second.gpu >= 0)
    for (const auto& a : it->second.attrs)
      if (a.first == "class") return a.second;
  std::string cls;
  if (readLine(root_ + "/bus/pci/devices/" + target + "/class", &cls)) return cls;
  BRAID_INFO(kSubGraph, "Topology detection: no PCI class for NVLink target %s; taking it for an NVSwitch",
             target.c_str());
  return kNvSwitchClass;
}

bool Detector::detectNvlinks() {
  NvmlSession nvml;
  std::string why;
  if (!nvml.open(&why)) {
    BRAID_INFO(kSubInit | kSubGraph, "Topology detection: NVML unavailable (%s); no NVLink in the topology",
               why.c_str());
    return false;
  }
  for (GpuEntry& g : gpus_) {
    std::vector<NvlinkFact> links;
    int maxLinks = maxNvlinks(g.fact.sm);
    if (maxLinks == 0) continue;
    if (!queryNvlinks(nvml.api(), g.busId, maxLinks, &links, &why)) {
      BRAID_INFO(kSubGraph, "Topology detection: %s; no NVLink for this GPU", why.c_str());
      continue;
    }
    std::map<std::string, int> counts;
    unsigned version = 0;
    for (const NvlinkFact& l : links) {
      std::string target = topoBusId(l.remoteBusId);
      ++counts[target.empty() ? kHiddenNvlinkTarget : target];
      version = std::max(version, l.version);
    }
    for (const auto& c : counts) {
      std::string tclass = targetClass(c.first);
      auto it = pci_.find(c.first);
      bool listedGpu = it != pci_.end() && it->second.gpu >= 0;
      if (!listedGpu && tclass != kNvSwitchClass) {
        // A GPU this process does not use, or a CPU (POWER9): the topology has no node for it.
        BRAID_INFO(kSubGraph,
                   "Topology detection: %d NVLink(s) of GPU %s to %s (class %s) left out: no GPU listed "
                   "for detection nor an NVSwitch",
                   c.second, g.busId.c_str(), c.first.c_str(), tclass.c_str());
        continue;
      }
      g.nvlinks.push_back(GpuEntry::Nvlink{c.first, tclass, c.second});
    }
    BRAID_INFO(kSubGraph, "Topology detection: GPU %s has %zu active NVLink(s) (version %u) to %zu far end(s)",
               g.busId.c_str(), links.size(), version, counts.size());
  }
  return true;
}

void Detector::readCpuInfo() {
#if defined(__x86_64__)
  arch_ = "x86_64";
#elif defined(__aarch64__)
  arch_ = "arm64";
#elif defined(__powerpc64__)
  arch_ = "ppc64";
#endif
  if (arch_ != "x86_64") return;  // NCCL reads vendor and model on x86 only
  std::ifstream in(root_ + "/../proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) break;  // the first processor's block is enough
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    size_t vb = line.find_first_not_of(" \t", colon + 1);
    std::string value = vb == std::string::npos ? "" : line.substr(vb);
    if (key == "vendor_id")
      vendor_ = value;
    else if (key == "cpu family")
      familyId_ = value;
    else if (key == "model")
      modelId_ = value;
  }
}

void Detector::emitCpu(XmlNode* system, int numa, const std::map<std::string, std::vector<std::string>>& kids,
                       const std::vector<std::string>& tops) {
  XmlNode& cpu = system->add("cpu");
  cpu.set("numaid", std::to_string(numa));
  std::string affinity;
  if (readLine(root_ + "/devices/system/node/node" + std::to_string(numa) + "/cpumap", &affinity))
    cpu.set("affinity", affinity);
  if (!arch_.empty()) cpu.set("arch", arch_);
  if (!vendor_.empty()) cpu.set("vendor", vendor_);
  if (!familyId_.empty() && !modelId_.empty()) {
    cpu.set("familyid", familyId_);
    cpu.set("modelid", modelId_);
  }
  for (const std::string& busId : tops) emitPci(&cpu, busId, kids);
}

void Detector::emitPci(XmlNode* parent, const std::string& busId,
                       const std::map<std::string, std::vector<std::string>>& kids) {
  const PciEntry& e = pci_.at(busId);
  XmlNode& pci = parent->add("pci");
  pci.set("busid", busId);
  for (const auto& a : e.attrs) pci.set(a.first, a.second);
  auto k = kids.find(busId);
  if (k != kids.end())
    for (const std::string& kid : k->second) emitPci(&pci, kid, kids);
  if (e.gpu >= 0) {
    const GpuEntry& g = gpus_[e.gpu];
    XmlNode& gpu = pci.add("gpu");
    gpu.set("dev", std::to_string(g.fact.cudaDev));
    gpu.set("sm", std::to_string(g.fact.sm));
    if (g.fact.rank >= 0) gpu.set("rank", std::to_string(g.fact.rank));
    gpu.set("gdr", gdrModule_ ? "1" : "0");
    for (const GpuEntry::Nvlink& l : g.nvlinks) {
      XmlNode& nvl = gpu.add("nvlink");
      nvl.set("target", l.target);
      nvl.set("count", std::to_string(l.count));
      nvl.set("tclass", l.tclass);
    }
  }
  if (!e.nets.empty()) {
    XmlNode& nic = pci.add("nic");
    for (const NetFact& f : e.nets) {
      XmlNode& net = nic.add("net");
      char guid[32];
      snprintf(guid, sizeof(guid), "0x%" PRIx64, f.guid);
      net.set("name", f.name);
      net.set("dev", std::to_string(f.dev));
      net.set("latency", "0");
      net.set("speed", std::to_string(f.speed));
      net.set("port", std::to_string(f.port));
      net.set("guid", guid);
      net.set("maxconn", std::to_string(kNetMaxConn));
      net.set("gdr", f.gdr ? "1" : "0");
    }
  }
}

ncclResult_t Detector::run(XmlNode* system, bool* nvlinksKnown) {
  BRAID_CHECK(collectGpus());
  gdrModule_ = exists(root_ + "/module/nvidia_peermem/version") ||
               exists(root_ + "/kernel/mm/memory_peers/nv_mem/version") ||
               exists(root_ + "/kernel/mm/memory_peers/nv_mem_nc/version");
  readCpuInfo();
  placeGpus();
  if (opts_.includeNics) detectNics();
  const bool known = opts_.useNvml && !gpus_.empty() && detectNvlinks();
  if (nvlinksKnown) *nvlinksKnown = known;

  // Children in bus id order (pci_ is sorted), CPUs by NUMA id: the same machine gives the same text.
  std::map<std::string, std::vector<std::string>> kids;
  std::map<int, std::vector<std::string>> tops;
  for (const auto& p : pci_) (p.second.parent.empty() ? tops[p.second.numa] : kids[p.second.parent]).push_back(p.first);
  XmlNode out;
  out.name = "system";
  out.set("version", kTopoXmlVersion);
  for (const auto& t : tops) emitCpu(&out, t.first, kids, t.second);
  *system = std::move(out);
  return ncclSuccess;
}

}  // namespace

ncclResult_t detectTopology(const TopoDetectOptions& opts, XmlNode* system, bool* nvlinksKnown) {
  if (nvlinksKnown) *nvlinksKnown = false;
  if (system == nullptr) return BRAID_ERR(ncclInvalidArgument, "detectTopology: system is NULL");
  Detector d(opts);
  return d.run(system, nvlinksKnown);
}

}  // namespace braid
