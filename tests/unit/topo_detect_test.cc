// Topology detection tests: fake sysfs trees built in a temporary directory (a two-socket host with GPUs and a NIC
// behind one PCIe switch, a VM without a PCI tree, virtual interfaces), a fake NVML for NVLink, and detection on
// the machine the test runs on.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "topology/topo_detect.h"
#include "topology/topology.h"
#include "topology/topo_nvml.h"
#include "topology/topo_xml.h"

using namespace braid;
namespace fs = std::filesystem;

namespace {

struct PciSpec {
  std::string cls = "0x060400";  // a bridge
  std::string vendor = "0x10b5", device = "0x8796";
  std::string speed = "32.0 GT/s PCIe";
  int width = 16;
  int numa = 0;
  bool linkFiles = true;  // false: a VM's function with no PCIe link
};

// A fake sysfs tree at <dir>/sys (and <dir>/proc/cpuinfo beside it), laid out as Linux lays out the real one:
// devices under devices/pciDDDD:BB/..., bus/pci/devices/<busid> and class/* links pointing into them.
class FakeHost {
 public:
  FakeHost() {
    char tmpl[] = "/tmp/braid_topo_XXXXXX";
    root_ = mkdtemp(tmpl);
    sys_ = root_ + "/sys";
    fs::create_directories(sys_ + "/bus/pci/devices");
  }
  ~FakeHost() { fs::remove_all(root_); }
  const std::string& sysfs() const { return sys_; }

  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text << "\n";
  }
  // A PCI function at devices/<path>, linked from bus/pci/devices unless `busLink` is false.
  void pci(const std::string& path, const PciSpec& s, bool busLink = true) {
    std::string d = sys_ + "/devices/" + path;
    fs::create_directories(d);
    write(d + "/class", s.cls);
    write(d + "/vendor", s.vendor);
    write(d + "/device", s.device);
    write(d + "/subsystem_vendor", s.vendor);
    write(d + "/subsystem_device", "0x0001");
    write(d + "/numa_node", std::to_string(s.numa));
    if (s.linkFiles) {
      write(d + "/max_link_speed", s.speed);
      write(d + "/current_link_speed", "2.5 GT/s PCIe");  // an idle link trained down: must not count
      write(d + "/max_link_width", std::to_string(s.width));
    }
    if (busLink)
      fs::create_directory_symlink("../../../devices/" + path,
                                   sys_ + "/bus/pci/devices/" + fs::path(path).filename().string());
  }
  // An interface in class/net; `devicePath` "" for a virtual one (no device link).
  void netIf(const std::string& name, const std::string& devicePath, const std::string& speed,
             const std::string& operstate = "up") {
    std::string d = sys_ + "/class/net/" + name;
    fs::create_directories(d);
    if (!devicePath.empty()) fs::create_directory_symlink(sys_ + "/devices/" + devicePath, d + "/device");
    write(d + "/speed", speed);
    write(d + "/operstate", operstate);
  }
  void ibDev(const std::string& name, const std::string& devicePath, const std::string& guid,
             const std::map<int, std::pair<std::string, std::string>>& ports) {
    std::string d = sys_ + "/class/infiniband/" + name;
    fs::create_directories(d);
    fs::create_directory_symlink(sys_ + "/devices/" + devicePath, d + "/device");
    write(d + "/sys_image_guid", guid);
    write(d + "/node_guid", "0000:0000:0000:0001");
    for (const auto& p : ports) {
      write(d + "/ports/" + std::to_string(p.first) + "/state", p.second.first);
      write(d + "/ports/" + std::to_string(p.first) + "/rate", p.second.second);
    }
  }
  void numaNode(int n, const std::string& cpumap) {
    write(sys_ + "/devices/system/node/node" + std::to_string(n) + "/cpumap", cpumap);
  }
  void cpuinfo(const std::string& text) { write(root_ + "/proc/cpuinfo", text); }

 private:
  std::string root_, sys_;
};

const char kCpuInfo[] =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Xeon\n\n"
    "processor\t: 1\nvendor_id\t: Other\ncpu family\t: 9\nmodel\t\t: 1\n";

PciSpec gpuSpec(int numa = 0) {
  PciSpec s;
  s.cls = "0x030200";
  s.vendor = "0x10de";
  s.device = "0x2335";
  s.numa = numa;
  return s;
}

// Socket 0: root port 00:01.0 > switch 01:00.0 > downstream ports 02:0x.0 > GPUs 03:00.0, 04:00.0 and an IB NIC
// 05:00.0 (a Gen4 card). Socket 1: a GPU straight under root port 80:01.0 (an x8 port), an Ethernet NIC under
// 80:02.0. Also an interface that is down and a loopback.
void buildTwoSocketHost(FakeHost* h) {
  PciSpec bridge;
  h->pci("pci0000:00/0000:00:01.0", bridge);
  h->pci("pci0000:00/0000:00:01.0/0000:01:00.0", bridge);
  for (const char* p : {"0000:02:00.0", "0000:02:01.0", "0000:02:02.0"})
    h->pci(std::string("pci0000:00/0000:00:01.0/0000:01:00.0/") + p, bridge);
  h->pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", gpuSpec());
  h->pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", gpuSpec());
  PciSpec ib;
  ib.cls = "0x020700";
  ib.vendor = "0x15b3";
  ib.device = "0x101b";
  ib.speed = "16.0 GT/s PCIe";
  const std::string ibPath = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0";
  h->pci(ibPath, ib);
  h->ibDev("mlx5_0", ibPath, "b8ce:f603:00f2:1c4e", {{1, {"4: ACTIVE", "200 Gb/sec (4X HDR)"}}});

  PciSpec rootPort;
  rootPort.numa = 1;
  rootPort.width = 8;
  rootPort.speed = "16.0 GT/s PCIe";
  h->pci("pci0000:80/0000:80:01.0", rootPort);
  h->pci("pci0000:80/0000:80:02.0", rootPort);
  h->pci("pci0000:80/0000:80:01.0/0000:81:00.0", gpuSpec(1));
  PciSpec eth;
  eth.cls = "0x020000";
  eth.vendor = "0x8086";
  eth.device = "0x1593";
  eth.numa = 1;
  h->pci("pci0000:80/0000:80:02.0/0000:82:00.0", eth);
  h->pci("pci0000:80/0000:80:02.0/0000:82:00.1", eth);
  h->netIf("ens2f0", "pci0000:80/0000:80:02.0/0000:82:00.0", "100000");
  h->netIf("ens2f1", "pci0000:80/0000:80:02.0/0000:82:00.1", "-1", "down");
  h->netIf("lo", "", "");
  h->numaNode(0, "00000000,0000ffff");
  h->numaNode(1, "00000000,ffff0000");
  h->cpuinfo(kCpuInfo);
}

TopoDetectOptions twoSocketOptions(const FakeHost& h) {
  TopoDetectOptions o;
  o.sysfsRoot = h.sysfs();
  o.useNvml = false;
  o.gpus = {{"0000:03:00.0", 0, 90, 0}, {"0000:04:00.0", 1, 90, 1}, {"0000:81:00.0", 2, 90, 2}};
  return o;
}

std::string detectText(const TopoDetectOptions& o) {
  XmlNode system;
  EXPECT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  return writeXml(system);
}

const XmlNode* findPci(const XmlNode& n, const std::string& busId) {
  if (n.name == "pci" && n.attr("busid") && *n.attr("busid") == busId) return &n;
  for (const XmlNode& c : n.children)
    if (const XmlNode* f = findPci(c, busId)) return f;
  return nullptr;
}

int countElements(const XmlNode& n, const std::string& name) {
  int c = n.name == name ? 1 : 0;
  for (const XmlNode& k : n.children) c += countElements(k, name);
  return c;
}

std::string attrOf(const XmlNode* n, const char* key) {
  const std::string* v = n ? n->attr(key) : nullptr;
  return v ? *v : "<none>";
}

}  // namespace

// The whole document: switches shared, downstream ports left out, link speed and width the slower end's, CPUs by
// NUMA node with cpuinfo's facts, NICs inside their PCI functions; no nvlink without NVML.
TEST(TopoDetect, TwoSocketHostGivesNcclSchema) {
  FakeHost h;
  buildTwoSocketHost(&h);
  const std::string text = detectText(twoSocketOptions(h));
#if !defined(__x86_64__)
  GTEST_SKIP() << "the expected text has x86's cpu facts";
#endif
  const std::string cpuFacts = " arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\"";
  std::string expected =
      "<?xml version=\"1.0\"?>\n"
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" affinity=\"00000000,0000ffff\"@CPU@>\n"
      "    <pci busid=\"0000:01:00.0\" class=\"0x060400\" vendor=\"0x10b5\" device=\"0x8796\" "
      "subsystem_vendor=\"0x10b5\" subsystem_device=\"0x0001\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "      <pci busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2335\" "
      "subsystem_vendor=\"0x10de\" subsystem_device=\"0x0001\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "        <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"0\"/>\n"
      "      </pci>\n"
      "      <pci busid=\"0000:04:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2335\" "
      "subsystem_vendor=\"0x10de\" subsystem_device=\"0x0001\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "        <gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"0\"/>\n"
      "      </pci>\n"
      "      <pci busid=\"0000:05:00.0\" class=\"0x020700\" vendor=\"0x15b3\" device=\"0x101b\" "
      "subsystem_vendor=\"0x15b3\" subsystem_device=\"0x0001\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n"
      "        <nic>\n"
      "          <net name=\"mlx5_0\" dev=\"0\" latency=\"0\" speed=\"200000\" port=\"1\" guid=\"0x4e1cf20003f6ceb8\" "
      "maxconn=\"65536\" gdr=\"0\"/>\n"
      "        </nic>\n"
      "      </pci>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "  <cpu numaid=\"1\" affinity=\"00000000,ffff0000\"@CPU@>\n"
      "    <pci busid=\"0000:81:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2335\" "
      "subsystem_vendor=\"0x10de\" subsystem_device=\"0x0001\" link_speed=\"16.0 GT/s PCIe\" link_width=\"8\">\n"
      "      <gpu dev=\"2\" sm=\"90\" rank=\"2\" gdr=\"0\"/>\n"
      "    </pci>\n"
      "    <pci busid=\"0000:82:00.0\" class=\"0x020000\" vendor=\"0x8086\" device=\"0x1593\" "
      "subsystem_vendor=\"0x8086\" subsystem_device=\"0x0001\" link_speed=\"16.0 GT/s PCIe\" link_width=\"8\">\n"
      "      <nic>\n"
      "        <net name=\"ens2f0\" dev=\"1\" latency=\"0\" speed=\"100000\" port=\"0\" guid=\"0x1\" "
      "maxconn=\"65536\" gdr=\"0\"/>\n"
      "      </nic>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n";
  for (size_t at; (at = expected.find("@CPU@")) != std::string::npos;) expected.replace(at, 5, cpuFacts);
  EXPECT_EQ(text, expected);

  // The text parses back to the same document (what NCCL_TOPO_DUMP_FILE writes and NCCL_TOPO_FILE reads).
  XmlNode parsed;
  ASSERT_EQ(parseXml(text, "detected", &parsed), ncclSuccess) << pendingError();
  EXPECT_EQ(writeXml(parsed), text);
  EXPECT_EQ(countElements(parsed, "nvlink"), 0);
  // ... and builds the graph: 3 GPUs, 2 NICs, the switch, 2 CPUs.
  Topology topo;
  ASSERT_EQ(topologyFromXml(parsed, "detected", &topo), ncclSuccess) << pendingError();
  EXPECT_EQ(topo.all(TopoKind::Gpu).size(), 3u);
  EXPECT_EQ(topo.all(TopoKind::Nic).size(), 2u);
  EXPECT_EQ(topo.all(TopoKind::Cpu).size(), 2u);
  EXPECT_GE(topo.find(TopoKind::Gpu, "0000:81:00.0"), 0);
}

// Two ranks of a host list their GPUs in their own order, with other spellings: the text is the same.
TEST(TopoDetect, SameHostGivesSameTextWhateverTheOrder) {
  FakeHost h;
  buildTwoSocketHost(&h);
  TopoDetectOptions a = twoSocketOptions(h);
  TopoDetectOptions b = a;
  std::reverse(b.gpus.begin(), b.gpus.end());
  b.gpus[0].busId = "0000:81:00";        // no function
  b.gpus[2].busId = "00000000:03:00.0";  // NVML's 8-digit domain
  const std::string first = detectText(a);
  EXPECT_EQ(detectText(b), first);
  EXPECT_EQ(detectText(a), first);
}

// Without NICs asked for, none; the GPUs' tree stays.
TEST(TopoDetect, NicsOnlyWhenAsked) {
  FakeHost h;
  buildTwoSocketHost(&h);
  TopoDetectOptions o = twoSocketOptions(h);
  o.includeNics = false;
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  EXPECT_EQ(countElements(system, "nic"), 0);
  EXPECT_EQ(countElements(system, "gpu"), 3);
  EXPECT_EQ(findPci(system, "0000:05:00.0"), nullptr);
}

// With a GPUDirect RDMA module loaded, GPUs and InfiniBand ports say gdr="1"; an Ethernet interface does not.
TEST(TopoDetect, GdrFollowsThePeerMemoryModule) {
  FakeHost h;
  buildTwoSocketHost(&h);
  h.write(h.sysfs() + "/module/nvidia_peermem/version", "1.0");
  XmlNode system;
  ASSERT_EQ(detectTopology(twoSocketOptions(h), &system), ncclSuccess) << pendingError();
  EXPECT_EQ(attrOf(findPci(system, "0000:03:00.0")->child("gpu"), "gdr"), "1");
  EXPECT_EQ(attrOf(findPci(system, "0000:05:00.0")->child("nic")->child("net"), "gdr"), "1");
  EXPECT_EQ(attrOf(findPci(system, "0000:82:00.0")->child("nic")->child("net"), "gdr"), "0");
}

// A VM: no bus/pci/devices entry for the GPU, a virtio NIC on a PCI function without PCIe link files or NUMA node,
// a loopback, no NUMA nodes, no cpuinfo. GPU and NIC sit directly under one CPU; nothing fails.
TEST(TopoDetect, VmWithoutPciTreeFallsBackToOneCpu) {
  FakeHost h;
  PciSpec virtioNet;
  virtioNet.cls = "0x020000";
  virtioNet.vendor = "0x1af4";
  virtioNet.device = "0x1000";
  virtioNet.numa = -1;
  virtioNet.linkFiles = false;
  h.pci("pci0000:00/0000:00:03.0", virtioNet);
  fs::create_directories(h.sysfs() + "/devices/pci0000:00/0000:00:03.0/virtio2");
  h.netIf("eth0", "pci0000:00/0000:00:03.0/virtio2", "-1");
  h.netIf("lo", "", "");
  TopoDetectOptions o;
  o.sysfsRoot = h.sysfs();
  o.useNvml = false;
  o.gpus = {{"0000:00:05.0", 0, 90, 0}};
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  ASSERT_EQ(system.children.size(), 1u);
  const XmlNode& cpu = system.children[0];
  EXPECT_EQ(attrOf(&cpu, "numaid"), "0");
  EXPECT_EQ(attrOf(&cpu, "affinity"), "<none>");
  EXPECT_EQ(attrOf(&cpu, "vendor"), "<none>");
  ASSERT_EQ(cpu.children.size(), 2u);  // by bus id: the NIC's function, then the GPU
  const XmlNode& nicPci = cpu.children[0];
  EXPECT_EQ(attrOf(&nicPci, "busid"), "0000:00:03.0");
  EXPECT_EQ(attrOf(&nicPci, "class"), "0x020000");
  EXPECT_EQ(attrOf(&nicPci, "link_speed"), "");
  EXPECT_EQ(attrOf(&nicPci, "link_width"), "");
  ASSERT_NE(nicPci.child("nic"), nullptr);
  ASSERT_EQ(nicPci.child("nic")->children.size(), 1u);  // eth0 only: lo is virtual
  const XmlNode* net = nicPci.child("nic")->child("net");
  EXPECT_EQ(attrOf(net, "name"), "eth0");
  EXPECT_EQ(attrOf(net, "speed"), "10000");  // "-1" in sysfs: NCCL's default
  const XmlNode& gpuPci = cpu.children[1];
  EXPECT_EQ(attrOf(&gpuPci, "busid"), "0000:00:05.0");
  EXPECT_EQ(attrOf(&gpuPci, "class"), "0x03");
  EXPECT_EQ(attrOf(&gpuPci, "link_speed"), "");
  EXPECT_EQ(attrOf(&gpuPci, "link_width"), "");
  EXPECT_EQ(attrOf(gpuPci.child("gpu"), "dev"), "0");
  EXPECT_EQ(gpuPci.children.size(), 1u);
  Topology topo;  // the fallback's empty link facts build too
  ASSERT_EQ(topologyFromXml(system, "detected", &topo), ncclSuccess) << pendingError();
  EXPECT_EQ(topo.all(TopoKind::Gpu).size(), 1u);
}

// A flat VM tree (functions straight under the host bridge, numa_node -1) on a two-node host: placed under the
// lowest node, with the device's own link facts.
TEST(TopoDetect, UnknownNumaNodeGoesToTheLowestNode) {
  FakeHost h;
  PciSpec g = gpuSpec(-1);
  h.pci("pci0000:00/0000:00:05.0", g);
  h.numaNode(1, "ff00");
  h.numaNode(3, "00ff");
  TopoDetectOptions o;
  o.sysfsRoot = h.sysfs();
  o.useNvml = false;
  o.gpus = {{"0000:00:05.0", 0, 80, -1}};
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  ASSERT_EQ(system.children.size(), 1u);
  EXPECT_EQ(attrOf(&system.children[0], "numaid"), "1");
  EXPECT_EQ(attrOf(&system.children[0], "affinity"), "ff00");
  const XmlNode* pci = findPci(system, "0000:00:05.0");
  ASSERT_NE(pci, nullptr);
  EXPECT_EQ(attrOf(pci, "link_speed"), "32.0 GT/s PCIe");
  EXPECT_EQ(attrOf(pci, "link_width"), "16");
  EXPECT_EQ(attrOf(pci->child("gpu"), "rank"), "<none>");  // unknown rank: no attribute, as NCCL
}

// Only active InfiniBand ports count; a device with several ports names them "<dev>:<port>".
TEST(TopoDetect, InfinibandPortsActiveOnly) {
  FakeHost h;
  PciSpec ib;
  ib.cls = "0x020700";
  h.pci("pci0000:00/0000:00:02.0", ib);
  h.ibDev("mlx5_0", "pci0000:00/0000:00:02.0", "0000:0000:0000:0abc",
          {{1, {"1: DOWN", "10 Gb/sec (4X SDR)"}}, {2, {"4: ACTIVE", "400 Gb/sec (4X NDR)"}}});
  TopoDetectOptions o;
  o.sysfsRoot = h.sysfs();
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  EXPECT_EQ(countElements(system, "net"), 1);
  const XmlNode* net = findPci(system, "0000:00:02.0")->child("nic")->child("net");
  EXPECT_EQ(attrOf(net, "name"), "mlx5_0:2");
  EXPECT_EQ(attrOf(net, "port"), "2");
  EXPECT_EQ(attrOf(net, "speed"), "400000");
  EXPECT_EQ(attrOf(net, "dev"), "0");
}

TEST(TopoDetect, BadGpuListIsInvalidArgument) {
  FakeHost h;
  TopoDetectOptions o;
  o.sysfsRoot = h.sysfs();
  o.useNvml = false;
  XmlNode system;
  {
    ErrorScope scope;
    o.gpus = {{"gpu0", 0, 90, 0}};
    EXPECT_EQ(detectTopology(o, &system), ncclInvalidArgument);
    EXPECT_NE(pendingError().find("'gpu0'"), std::string::npos) << pendingError();
  }
  {
    ErrorScope scope;
    o.gpus = {{"0000:03:00.0", 0, 90, 0}, {"0000:03:00.0", 1, 90, 1}};
    EXPECT_EQ(detectTopology(o, &system), ncclInvalidArgument);
    EXPECT_NE(pendingError().find("0000:03:00.0 is listed twice"), std::string::npos) << pendingError();
  }
  {
    ErrorScope scope;
    EXPECT_EQ(detectTopology(o, nullptr), ncclInvalidArgument);
    EXPECT_NE(pendingError().find("system"), std::string::npos) << pendingError();
  }
}

// ---- NVLink through a fake NVML

namespace {

struct FakeLink {
  bool p2p = true, up = true;
  std::string legacy, wide;  // remote bus id fields
};
std::map<std::string, std::vector<FakeLink>> gFakeGpus;  // by bus id as NVML is asked
std::vector<std::string> gFakeHandles;
int gFakeInitResult = 0;
int gFakeShutdowns = 0;

FakeLink* fakeLink(NvmlDevice d, unsigned l) {
  size_t i = reinterpret_cast<uintptr_t>(d) - 1;
  if (i >= gFakeHandles.size()) return nullptr;
  auto& links = gFakeGpus[gFakeHandles[i]];
  return l < links.size() ? &links[l] : nullptr;
}

NvmlApi fakeNvml() {
  NvmlApi api;
  api.init = [] { return gFakeInitResult; };
  api.shutdown = [] {
    ++gFakeShutdowns;
    return 0;
  };
  api.errorString = [](int r) { return r == 9 ? "Driver Not Loaded" : "Unknown Error"; };
  api.handleByBusId = [](const char* busId, NvmlDevice* d) {
    if (!gFakeGpus.count(busId)) return 6;  // NOT_FOUND
    gFakeHandles.push_back(busId);
    *d = reinterpret_cast<NvmlDevice>(static_cast<uintptr_t>(gFakeHandles.size()));
    return 0;
  };
  api.nvlinkCapability = [](NvmlDevice d, unsigned l, int cap, unsigned* r) {
    FakeLink* f = fakeLink(d, l);
    if (!f || cap != kNvmlNvlinkCapP2p) return 3;  // NOT_SUPPORTED
    *r = f->p2p ? 1 : 0;
    return 0;
  };
  api.nvlinkState = [](NvmlDevice d, unsigned l, int* s) {
    FakeLink* f = fakeLink(d, l);
    if (!f) return 3;
    *s = f->up ? kNvmlFeatureEnabled : 0;
    return 0;
  };
  api.nvlinkVersion = [](NvmlDevice d, unsigned l, unsigned* v) {
    *v = 4;
    return fakeLink(d, l) ? 0 : 3;
  };
  api.nvlinkRemotePciInfo = [](NvmlDevice d, unsigned l, NvmlPciInfo* p) {
    FakeLink* f = fakeLink(d, l);
    if (!f) return 3;
    snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%s", f->legacy.c_str());
    snprintf(p->busId, sizeof(p->busId), "%s", f->wide.c_str());
    return 0;
  };
  return api;
}

class TopoDetectNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    gFakeGpus.clear();
    gFakeHandles.clear();
    gFakeInitResult = 0;
    gFakeShutdowns = 0;
    api_ = fakeNvml();
    setNvmlApiForTest(&api_);
  }
  void TearDown() override { setNvmlApiForTest(nullptr); }
  NvmlApi api_;
};

}  // namespace

// GPU 03 has two links to GPU 04, one to an NVSwitch (named only in NVML's wide field), one to a far end NVML
// cannot show, one down, one without P2P and one to a GPU not listed for detection; GPU 04 has the two back.
TEST_F(TopoDetectNvml, LinksCountedPerFarEndWithTargetClass) {
  FakeHost h;
  buildTwoSocketHost(&h);
  PciSpec nvswitch;
  nvswitch.cls = "0x068000";
  h.pci("pci0000:c0/0000:c0:00.0", nvswitch);
  h.pci("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:06:00.0", gpuSpec());
  gFakeGpus["0000:03:00.0"] = {{true, true, "0000:04:00.0", ""},     {true, true, "0000:04:00.0", ""},
                               {true, true, "", "00000000:C0:00.0"}, {true, true, "", ""},
                               {true, false, "0000:c0:00.0", ""},    {false, true, "0000:c0:00.0", ""},
                               {true, true, "0000:06:00.0", ""}};
  gFakeGpus["0000:04:00.0"] = {{true, true, "0000:03:00.0", ""}, {true, true, "0000:03:00.0", ""}};
  TopoDetectOptions o = twoSocketOptions(h);
  o.useNvml = true;
  XmlNode system;
  bool known = false;
  ASSERT_EQ(detectTopology(o, &system, &known), ncclSuccess) << pendingError();
  EXPECT_TRUE(known) << "NVML answered";
  EXPECT_EQ(gFakeShutdowns, 1);

  const XmlNode* gpu3 = findPci(system, "0000:03:00.0")->child("gpu");
  ASSERT_EQ(gpu3->children.size(), 3u);
  const char* expect3[3][3] = {
      {"0000:04:00.0", "2", "0x030200"}, {"0000:c0:00.0", "1", "0x068000"}, {"fffffff:ffff:ff", "1", "0x068000"}};
  for (int i = 0; i < 3; ++i) {
    const XmlNode& l = gpu3->children[i];
    EXPECT_EQ(l.name, "nvlink");
    EXPECT_EQ(attrOf(&l, "target"), expect3[i][0]) << i;
    EXPECT_EQ(attrOf(&l, "count"), expect3[i][1]) << i;
    EXPECT_EQ(attrOf(&l, "tclass"), expect3[i][2]) << i;
  }
  const XmlNode* gpu4 = findPci(system, "0000:04:00.0")->child("gpu");
  ASSERT_EQ(gpu4->children.size(), 1u);
  EXPECT_EQ(attrOf(&gpu4->children[0], "target"), "0000:03:00.0");
  EXPECT_EQ(attrOf(&gpu4->children[0], "count"), "2");
  // GPU 81 is unknown to this NVML: no links, no failure.
  EXPECT_EQ(findPci(system, "0000:81:00.0")->child("gpu")->children.size(), 0u);
  EXPECT_EQ(countElements(system, "nvlink"), 4);
  // NVSwitch targets (named, and hidden) and GPU pairs build: one NVS node, GPUs 3 and 4 joined directly.
  Topology topo;
  ASSERT_EQ(topologyFromXml(system, "detected", &topo), ncclSuccess) << pendingError();
  EXPECT_EQ(topo.all(TopoKind::Nvs).size(), 1u);
  const int g3 = topo.find(TopoKind::Gpu, "0000:03:00.0"), g4 = topo.find(TopoKind::Gpu, "0000:04:00.0");
  ASSERT_GE(g3, 0);
  ASSERT_GE(g4, 0);
  bool joined = false;
  for (const TopoLink& l : topo.nodes[g3].links) joined = joined || (l.peer == g4 && l.kind == TopoLinkKind::Nvl);
  EXPECT_TRUE(joined);
}

// NVML present but its init failing, or NVML not asked for: a topology without nvlink elements.
TEST_F(TopoDetectNvml, NoNvlinkWhenNvmlFailsOrIsOff) {
  FakeHost h;
  buildTwoSocketHost(&h);
  gFakeGpus["0000:03:00.0"] = {{true, true, "0000:04:00.0", ""}};
  TopoDetectOptions o = twoSocketOptions(h);
  o.useNvml = false;
  XmlNode off;
  bool known = true;
  ASSERT_EQ(detectTopology(o, &off, &known), ncclSuccess) << pendingError();
  EXPECT_FALSE(known) << "NVML not asked: NVLinks unknown";
  EXPECT_EQ(countElements(off, "nvlink"), 0);
  EXPECT_TRUE(gFakeHandles.empty());

  gFakeInitResult = 9;  // DRIVER_NOT_LOADED
  o.useNvml = true;
  XmlNode failed;
  known = true;
  ASSERT_EQ(detectTopology(o, &failed, &known), ncclSuccess) << pendingError();
  EXPECT_FALSE(known) << "NVML failing: NVLinks unknown";
  EXPECT_EQ(countElements(failed, "nvlink"), 0);
  EXPECT_EQ(gFakeShutdowns, 0);  // no shutdown for an init that failed
  EXPECT_EQ(writeXml(failed), writeXml(off));
}

// ---- the machine the test runs on

// Whatever it has (here often no GPU, no NVML, a virtio NIC): detection succeeds with a <system> element.
TEST(TopoDetectRealHost, SucceedsWithoutGpus) {
  TopoDetectOptions o;  // /sys, NVML, NICs
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  EXPECT_EQ(system.name, "system");
  EXPECT_EQ(attrOf(&system, "version"), "1");
  EXPECT_EQ(countElements(system, "gpu"), 0);
  for (const XmlNode& c : system.children) EXPECT_EQ(c.name, "cpu");
  std::printf("%s", writeXml(system).c_str());
}

// A GPU sysfs does not show, with NVML asked for (missing here; present on a GPU machine, where it does not know the
// GPU): the fallback placement, no nvlink, no failure.
TEST(TopoDetectRealHost, GpuUnknownToSysfsAndNvml) {
  TopoDetectOptions o;
  o.gpus = {{"ffff:ff:1f.7", 0, 90, 0}};
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  const XmlNode* pci = findPci(system, "ffff:ff:1f.7");
  ASSERT_NE(pci, nullptr);
  EXPECT_EQ(attrOf(pci, "class"), "0x03");
  ASSERT_NE(pci->child("gpu"), nullptr);
  EXPECT_EQ(countElements(system, "nvlink"), 0);
}

// On a GPU machine: every GPU CUDA shows is placed in a <pci> element of its bus id (with NVLinks where NVML has
// them). Skipped without GPUs.
TEST(TopoDetectRealHost, PlacesEveryCudaGpu) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA GPU";
  TopoDetectOptions o;
  for (int d = 0; d < n; ++d) {
    char busId[32] = {};
    int major = 0, minor = 0;
    ASSERT_EQ(cudaDeviceGetPCIBusId(busId, sizeof(busId), d), cudaSuccess);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d);
    for (char* c = busId; *c; ++c) *c = static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    o.gpus.push_back({busId, d, major * 10 + minor, d});
  }
  XmlNode system;
  ASSERT_EQ(detectTopology(o, &system), ncclSuccess) << pendingError();
  EXPECT_EQ(countElements(system, "gpu"), n);
  for (const TopoGpuFact& g : o.gpus) {
    const XmlNode* pci = findPci(system, g.busId);
    ASSERT_NE(pci, nullptr) << g.busId;
    EXPECT_NE(pci->child("gpu"), nullptr) << g.busId;
  }
  std::printf("%s", writeXml(system).c_str());
}
