// The topology graph built from NCCL's topology XML (src/topology/topology.h): each canned machine of
// tests/topology gives the nodes, links, bandwidths and NUMA places NCCL would give it; every malformed file or
// element is ncclInvalidArgument naming file, line and element; a dumped topology loads back to the same text and
// graph; and the small helpers (bus ids, kind and class names, NCCL_P2P_LEVEL values) read what NCCL reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/result.h"
#include "topology/topology.h"
#include "topology_files.h"

using namespace braid;

namespace {

Topology load(const std::string& name) {
  clearPendingError();
  Topology t;
  EXPECT_EQ(loadTopologyFile(topologyDir() + "/" + name, &t), ncclSuccess) << pendingError();
  return t;
}

int count(const Topology& t, TopoKind k) { return static_cast<int>(t.all(k).size()); }

// The link a -> b of `kind`, or nullptr.
const TopoLink* linkOf(const Topology& t, int a, int b, TopoLinkKind kind) {
  if (a < 0 || b < 0) return nullptr;
  for (const TopoLink& l : t.nodes[a].links)
    if (l.peer == b && l.kind == kind) return &l;
  return nullptr;
}

// Both directions exist with bandwidth `bw`.
void expectLink(const Topology& t, int a, int b, TopoLinkKind kind, double bw) {
  const TopoLink* ab = linkOf(t, a, b, kind);
  const TopoLink* ba = linkOf(t, b, a, kind);
  ASSERT_NE(ab, nullptr) << a << " -> " << b;
  ASSERT_NE(ba, nullptr) << b << " -> " << a;
  EXPECT_NEAR(ab->bw, bw, 1e-9) << a << " -> " << b;
  EXPECT_NEAR(ba->bw, bw, 1e-9) << b << " -> " << a;
}

int gpuOfRank(const Topology& t, int rank) {
  for (int g : t.all(TopoKind::Gpu))
    if (t.nodes[g].rank == rank) return g;
  return -1;
}

int netNamed(const Topology& t, const std::string& name) {
  for (int n : t.all(TopoKind::Net))
    if (t.nodes[n].name == name) return n;
  return -1;
}

// The one PCI link up from `node` (towards its CPU): the first Pci link, which the builder adds first.
int parentOf(const Topology& t, int node) {
  for (const TopoLink& l : t.nodes[node].links)
    if (l.kind == TopoLinkKind::Pci) return l.peer;
  return -1;
}

double nvlinkSum(const Topology& t, int node) {
  double sum = 0;
  for (const TopoLink& l : t.nodes[node].links)
    if (l.kind == TopoLinkKind::Nvl) sum += l.bw;
  return sum;
}

bool sameGraph(const Topology& a, const Topology& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const TopoNode& x = a.nodes[i];
    const TopoNode& y = b.nodes[i];
    if (x.kind != y.kind || x.busId != y.busId || x.numa != y.numa || x.cudaDev != y.cudaDev || x.sm != y.sm ||
        x.rank != y.rank || x.gdr != y.gdr || x.name != y.name || x.dev != y.dev || x.speedGBs != y.speedGBs ||
        x.port != y.port || x.guid != y.guid || x.maxConn != y.maxConn || x.links.size() != y.links.size())
      return false;
    for (size_t l = 0; l < x.links.size(); ++l)
      if (x.links[l].peer != y.links[l].peer || x.links[l].kind != y.links[l].kind || x.links[l].bw != y.links[l].bw)
        return false;
  }
  return true;
}

// ---- inline machines: line 1 <system>, line 2 <cpu>, the body from line 3 ----

const char* kHead =
    "<system version=\"1\">\n"
    "  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n";
std::string machine(const std::string& body) { return kHead + body + "  </cpu>\n</system>\n"; }

// A GPU on its own line pair: <pci> then <gpu ...> (self-closed unless `inner` has children).
std::string gpu(const std::string& bus, int rank, const std::string& inner = "", const std::string& sm = "90") {
  std::string s =
      "    <pci busid=\"" + bus + "\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n";
  s += "      <gpu dev=\"" + std::to_string(rank) + "\" sm=\"" + sm + "\" rank=\"" + std::to_string(rank) +
       "\" gdr=\"1\"";
  s += inner.empty() ? "/>\n" : ">\n" + inner + "      </gpu>\n";
  return s + "    </pci>\n";
}
std::string nvlink(const std::string& target, int n, const std::string& tclass) {
  return "        <nvlink target=\"" + target + "\" count=\"" + std::to_string(n) + "\" tclass=\"" + tclass + "\"/>\n";
}

ncclResult_t buildInline(const std::string& text, Topology* t) {
  XmlNode root;
  BRAID_CHECK(parseXml(text, "inline.xml", &root));
  return topologyFromXml(root, "inline.xml", t);
}

Topology built(const std::string& text) {
  clearPendingError();
  Topology t;
  EXPECT_EQ(buildInline(text, &t), ncclSuccess) << pendingError() << "\n" << text;
  return t;
}

// The message of a rejected machine (checked to be ncclInvalidArgument).
std::string rejected(const std::string& text) {
  clearPendingError();
  Topology t;
  EXPECT_EQ(buildInline(text, &t), ncclInvalidArgument) << text;
  std::string msg = pendingError();
  clearPendingError();
  return msg;
}

// ---- the canned machines ----

TEST(Topology, DgxH100) {
  const Topology t = load("dgx_h100.xml");
  EXPECT_EQ(count(t, TopoKind::Gpu), 8);
  EXPECT_EQ(count(t, TopoKind::Nic), 8);
  EXPECT_EQ(count(t, TopoKind::Net), 8);
  EXPECT_EQ(count(t, TopoKind::Pci), 8);
  EXPECT_EQ(count(t, TopoKind::Cpu), 2);
  ASSERT_EQ(count(t, TopoKind::Nvs), 1);  // one shared node for the four NVSwitches, as NCCL
  const int nvs = t.all(TopoKind::Nvs)[0];
  EXPECT_EQ(t.nodes[nvs].busId, "");
  EXPECT_EQ(t.nodes[nvs].numa, -1);
  EXPECT_EQ(t.nodes[nvs].links.size(), 8u);
  const std::vector<int> cpus = t.all(TopoKind::Cpu);
  EXPECT_EQ(t.nodes[cpus[0]].numa, 0);
  EXPECT_EQ(t.nodes[cpus[1]].numa, 1);
  expectLink(t, cpus[0], cpus[1], TopoLinkKind::Sys, 22.0);  // Sapphire Rapids UPI, NCCL's SRP_QPI_BW
  for (int r = 0; r < 8; ++r) {
    SCOPED_TRACE(r);
    const int g = gpuOfRank(t, r);
    ASSERT_GE(g, 0);
    EXPECT_EQ(t.nodes[g].cudaDev, r);
    EXPECT_EQ(t.nodes[g].sm, 90);
    EXPECT_TRUE(t.nodes[g].gdr);
    EXPECT_EQ(t.nodes[g].numa, r < 4 ? 0 : 1);
    // 18 links of 20.6 GB/s (NCCL's SM90_NVLINK_BW), summed over the four switches.
    expectLink(t, g, nvs, TopoLinkKind::Nvl, 18 * 20.6);
    for (int other : t.all(TopoKind::Gpu)) EXPECT_EQ(linkOf(t, g, other, TopoLinkKind::Nvl), nullptr);
    // GPU and NIC share a Gen5 x16 switch: 16 lanes x 240 / 80 = 48 GB/s everywhere on the way to the CPU.
    const int sw = parentOf(t, g);
    ASSERT_GE(sw, 0);
    EXPECT_EQ(t.nodes[sw].kind, TopoKind::Pci);
    expectLink(t, g, sw, TopoLinkKind::Pci, 48.0);
    expectLink(t, sw, cpus[r / 4], TopoLinkKind::Pci, 48.0);
    const int net = netNamed(t, "mlx5_" + std::to_string(r));
    ASSERT_GE(net, 0);
    ASSERT_EQ(t.nodes[net].links.size(), 1u);
    const int nic = t.nodes[net].links[0].peer;
    EXPECT_EQ(t.nodes[nic].kind, TopoKind::Nic);
    EXPECT_EQ(parentOf(t, nic), sw);
    expectLink(t, nic, sw, TopoLinkKind::Pci, 48.0);
    expectLink(t, net, nic, TopoLinkKind::Net, 50.0);  // 400000 Mb/s / 8000
    EXPECT_EQ(t.nodes[net].dev, r);
    EXPECT_EQ(t.nodes[net].numa, r < 4 ? 0 : 1);
    EXPECT_EQ(t.nodes[nic].numa, r < 4 ? 0 : 1);
  }
  const TopoNode& mlx3 = t.nodes[netNamed(t, "mlx5_3")];
  EXPECT_EQ(mlx3.guid, 0xa088c20300e4b123ull);
  EXPECT_EQ(mlx3.port, 1);
  EXPECT_EQ(mlx3.maxConn, 131072);
  EXPECT_TRUE(mlx3.gdr);
  EXPECT_DOUBLE_EQ(mlx3.speedGBs, 50.0);
  EXPECT_EQ(mlx3.busId, "");
  // Lookups take any spelling of a bus id, and only the kind asked for.
  EXPECT_EQ(t.find(TopoKind::Gpu, "0000:1B:00"), gpuOfRank(t, 0));
  EXPECT_EQ(t.find(TopoKind::Gpu, "00000000:DF:00.0"), gpuOfRank(t, 7));
  EXPECT_EQ(t.find(TopoKind::Pci, "0000:1b:00.0"), -1);
  EXPECT_EQ(t.nodes[t.find(TopoKind::Nic, "0000:18:00.0")].kind, TopoKind::Nic);
  EXPECT_EQ(t.nodes[t.find(TopoKind::Pci, "0000:16:00.0")].kind, TopoKind::Pci);
  EXPECT_EQ(t.find(TopoKind::Gpu, "not a bus id"), -1);
  EXPECT_EQ(t.find(TopoKind::Nvs, ""), -1);
}

TEST(Topology, H200FourWayNvswitch) {
  const Topology t = load("h200_nv18x4.xml");
  EXPECT_EQ(count(t, TopoKind::Gpu), 4);
  EXPECT_EQ(count(t, TopoKind::Pci), 4);
  EXPECT_EQ(count(t, TopoKind::Cpu), 1);
  EXPECT_EQ(count(t, TopoKind::Nic), 1);
  EXPECT_EQ(count(t, TopoKind::Net), 1);
  ASSERT_EQ(count(t, TopoKind::Nvs), 1);
  const int nvs = t.all(TopoKind::Nvs)[0];
  const int cpu = t.all(TopoKind::Cpu)[0];
  for (int g : t.all(TopoKind::Gpu)) {
    expectLink(t, g, nvs, TopoLinkKind::Nvl, 18 * 20.6);  // the hidden switch target fffffff:ff:ff.0
    EXPECT_EQ(t.nodes[g].numa, 0);
    const int rootPort = parentOf(t, g);
    expectLink(t, g, rootPort, TopoLinkKind::Pci, 48.0);
    expectLink(t, rootPort, cpu, TopoLinkKind::Pci, 48.0);
  }
  // One socket: no SYS links.
  for (const TopoLink& l : t.nodes[cpu].links) EXPECT_NE(l.kind, TopoLinkKind::Sys);
  // eth0 has no PCI place: its NIC hangs under the CPU by a link as fast as the node itself (NCCL's LOC_BW).
  const int nic = t.all(TopoKind::Nic)[0];
  EXPECT_EQ(t.nodes[nic].busId, "");
  EXPECT_EQ(t.nodes[nic].numa, 0);
  expectLink(t, nic, cpu, TopoLinkKind::Pci, 5000.0);
  const int eth0 = netNamed(t, "eth0");
  ASSERT_GE(eth0, 0);
  expectLink(t, eth0, nic, TopoLinkKind::Net, 1.25);
  EXPECT_FALSE(t.nodes[eth0].gdr);
  EXPECT_EQ(t.nodes[eth0].guid, 0u);
}

TEST(Topology, Dgx1HybridCubeMesh) {
  const Topology t = load("dgx1_v100.xml");
  EXPECT_EQ(count(t, TopoKind::Gpu), 8);
  EXPECT_EQ(count(t, TopoKind::Pci), 4);
  EXPECT_EQ(count(t, TopoKind::Nic), 4);
  EXPECT_EQ(count(t, TopoKind::Net), 4);
  EXPECT_EQ(count(t, TopoKind::Cpu), 2);
  EXPECT_EQ(count(t, TopoKind::Nvs), 0);
  const int nv[8][8] = {
      {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
      {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
  };
  for (int a = 0; a < 8; ++a) {
    const int ga = gpuOfRank(t, a);
    EXPECT_EQ(t.nodes[ga].numa, a < 4 ? 0 : 1);
    EXPECT_NEAR(nvlinkSum(t, ga), 6 * 20.0, 1e-9);  // six NVLinks of 20 GB/s (SM70_NVLINK_BW)
    for (int b = 0; b < 8; ++b) {
      SCOPED_TRACE(std::to_string(a) + "-" + std::to_string(b));
      const int gb = gpuOfRank(t, b);
      if (nv[a][b])
        expectLink(t, ga, gb, TopoLinkKind::Nvl, nv[a][b] * 20.0);
      else
        EXPECT_EQ(linkOf(t, ga, gb, TopoLinkKind::Nvl), nullptr);
    }
  }
  // Two GPUs and a NIC per PLX Gen3 switch: 16 lanes x 60 / 80 = 12 GB/s.
  EXPECT_EQ(parentOf(t, gpuOfRank(t, 0)), parentOf(t, gpuOfRank(t, 1)));
  EXPECT_NE(parentOf(t, gpuOfRank(t, 1)), parentOf(t, gpuOfRank(t, 2)));
  expectLink(t, gpuOfRank(t, 5), parentOf(t, gpuOfRank(t, 5)), TopoLinkKind::Pci, 12.0);
  const int mlx2 = netNamed(t, "mlx5_2");
  const int nic2 = t.nodes[mlx2].links[0].peer;
  EXPECT_EQ(parentOf(t, nic2), parentOf(t, gpuOfRank(t, 4)));
  expectLink(t, mlx2, nic2, TopoLinkKind::Net, 12.5);
  EXPECT_EQ(t.nodes[mlx2].numa, 1);
  const std::vector<int> cpus = t.all(TopoKind::Cpu);
  expectLink(t, cpus[0], cpus[1], TopoLinkKind::Sys, 6.0);  // Broadwell QPI (NCCL's BDW_QPI_BW)
}

TEST(Topology, PcieTwoSwitches) {
  const Topology t = load("pcie_2sw.xml");
  EXPECT_EQ(count(t, TopoKind::Gpu), 4);
  EXPECT_EQ(count(t, TopoKind::Pci), 2);
  EXPECT_EQ(count(t, TopoKind::Cpu), 1);
  EXPECT_EQ(count(t, TopoKind::Nic) + count(t, TopoKind::Net) + count(t, TopoKind::Nvs), 0);
  for (const TopoNode& n : t.nodes)
    for (const TopoLink& l : n.links) EXPECT_NE(l.kind, TopoLinkKind::Nvl);
  const int sw0 = parentOf(t, gpuOfRank(t, 0));
  const int sw1 = parentOf(t, gpuOfRank(t, 2));
  EXPECT_NE(sw0, sw1);
  EXPECT_EQ(parentOf(t, gpuOfRank(t, 1)), sw0);
  EXPECT_EQ(parentOf(t, gpuOfRank(t, 3)), sw1);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(t.nodes[gpuOfRank(t, r)].sm, 89);
    expectLink(t, gpuOfRank(t, r), r < 2 ? sw0 : sw1, TopoLinkKind::Pci, 24.0);  // Gen4 x16
  }
  expectLink(t, sw0, t.all(TopoKind::Cpu)[0], TopoLinkKind::Pci, 24.0);
}

TEST(Topology, NvlinkBridgePairs) {
  const Topology t = load("nvbridge_pairs.xml");
  EXPECT_EQ(count(t, TopoKind::Gpu), 4);
  EXPECT_EQ(count(t, TopoKind::Pci), 4);
  EXPECT_EQ(count(t, TopoKind::Nvs), 0);
  // sm 86 links are 12 GB/s in NCCL (SM86_NVLINK_BW), not the 20 of sm 80.
  expectLink(t, gpuOfRank(t, 0), gpuOfRank(t, 1), TopoLinkKind::Nvl, 4 * 12.0);
  expectLink(t, gpuOfRank(t, 2), gpuOfRank(t, 3), TopoLinkKind::Nvl, 4 * 12.0);
  for (auto p : {std::make_pair(0, 2), std::make_pair(0, 3), std::make_pair(1, 2), std::make_pair(1, 3)})
    EXPECT_EQ(linkOf(t, gpuOfRank(t, p.first), gpuOfRank(t, p.second), TopoLinkKind::Nvl), nullptr);
  for (int g : t.all(TopoKind::Gpu)) EXPECT_EQ(t.nodes[parentOf(t, g)].kind, TopoKind::Pci);
}

TEST(Topology, TwoSocketsWithNics) {
  const Topology t = load("two_socket_nics.xml");
  EXPECT_EQ(count(t, TopoKind::Gpu), 2);
  EXPECT_EQ(count(t, TopoKind::Nic), 2);
  EXPECT_EQ(count(t, TopoKind::Net), 2);
  EXPECT_EQ(count(t, TopoKind::Pci), 4);
  const std::vector<int> cpus = t.all(TopoKind::Cpu);
  ASSERT_EQ(cpus.size(), 2u);
  expectLink(t, cpus[0], cpus[1], TopoLinkKind::Sys, 16.0);  // AMD Infinity Fabric (NCCL's AMD_BW)
  for (int s = 0; s < 2; ++s) {
    const int g = gpuOfRank(t, s);
    const int net = netNamed(t, "mlx5_" + std::to_string(s));
    EXPECT_EQ(t.nodes[g].numa, s);
    EXPECT_EQ(t.nodes[net].numa, s);
    EXPECT_DOUBLE_EQ(t.nodes[net].speedGBs, 25.0);
    EXPECT_EQ(parentOf(t, parentOf(t, g)), cpus[s]);
    const int nic = t.nodes[net].links[0].peer;
    EXPECT_EQ(t.nodes[nic].numa, s);
    EXPECT_EQ(parentOf(t, parentOf(t, nic)), cpus[s]);
  }
}

TEST(Topology, TwoNodesOneFileEach) {
  const Topology a = load("node_a.xml");
  const Topology b = load("node_b.xml");
  for (const Topology* t : {&a, &b}) {
    EXPECT_EQ(count(*t, TopoKind::Gpu), 2);
    EXPECT_EQ(count(*t, TopoKind::Nvs), 1);
    EXPECT_EQ(count(*t, TopoKind::Nic), 1);
    EXPECT_EQ(count(*t, TopoKind::Net), 1);
    EXPECT_EQ(count(*t, TopoKind::Pci), 1);
    EXPECT_EQ(count(*t, TopoKind::Cpu), 1);
    // Two <nvlink> elements of 6 to two switches add up on the one NVS link: 12 x 20 GB/s (sm 80).
    expectLink(*t, gpuOfRank(*t, 0), t->all(TopoKind::Nvs)[0], TopoLinkKind::Nvl, 12 * 20.0);
    expectLink(*t, gpuOfRank(*t, 1), t->all(TopoKind::Nvs)[0], TopoLinkKind::Nvl, 12 * 20.0);
  }
  EXPECT_NE(*a.xml.child("cpu")->attr("host_hash"), *b.xml.child("cpu")->attr("host_hash"));
  EXPECT_NE(a.nodes[gpuOfRank(a, 0)].busId, b.nodes[gpuOfRank(b, 0)].busId);
  EXPECT_NE(a.nodes[netNamed(a, "mlx5_0")].guid, b.nodes[netNamed(b, "mlx5_0")].guid);
}

TEST(Topology, EveryCannedFileIsCovered) {
  const std::vector<std::string> expected = {"dgx1_v100.xml", "dgx_h100.xml",       "h200_nv18x4.xml",
                                             "node_a.xml",    "node_b.xml",         "nvbridge_pairs.xml",
                                             "pcie_2sw.xml",  "two_socket_nics.xml"};
  EXPECT_EQ(cannedTopologyFiles(), expected) << "a new file in tests/topology needs a test of its graph here";
}

// What NCCL_TOPO_DUMP_FILE writes loads back to the same text and the same graph.
TEST(Topology, DumpLoadDumpIsIdentical) {
  char dir[] = "/tmp/braid_topology_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (const std::string& name : cannedTopologyFiles()) {
    SCOPED_TRACE(name);
    const Topology first = load(name);
    const std::string path = std::string(dir) + "/" + name;
    ASSERT_EQ(writeXmlFile(path, first.xml), ncclSuccess) << pendingError();
    Topology second;
    ASSERT_EQ(loadTopologyFile(path, &second), ncclSuccess) << pendingError();
    EXPECT_EQ(writeXml(second.xml), writeXml(first.xml));
    EXPECT_TRUE(sameGraph(first, second));
    std::remove(path.c_str());
  }
  rmdir(dir);
}

// ---- rejected files ----

TEST(Topology, MalformedFilesNameFileLineAndElement) {
  struct Case {
    const char* file;
    int line;
    const char* message;  // what follows "<path>:<line>: "
  };
  const Case cases[] = {
      {"bad_number.xml", 7, "<gpu>: attribute sm=\"8.6\" is not a number"},
      {"bad_xml.xml", 8, "mismatched end tag: </pci> closes <gpu> of line 7"},
      {"duplicate_busid.xml", 10, "<pci>: bus id 0000:17:00.0 again (also at line 6)"},
      {"gpu_outside_pci.xml", 5, "<gpu>: a <gpu> must be inside a <pci> element, not <cpu>"},
      {"nvlink_nowhere.xml", 8, "<nvlink>: nvlink target 0000:31:00.0 is no GPU of this file"},
      {"unknown_attribute.xml", 7, "<gpu>: unknown attribute 'sm_count'"},
      {"unknown_element.xml", 7, "<nvswitch>: unknown element"},
  };
  const std::string dir = topologyDir() + "/malformed";
  std::vector<std::string> covered;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    covered.push_back(c.file);
    const std::string path = dir + "/" + c.file;
    clearPendingError();
    Topology t;
    t.nodes.resize(3);  // a rejected file leaves what was there
    EXPECT_EQ(loadTopologyFile(path, &t), ncclInvalidArgument);
    EXPECT_EQ(t.nodes.size(), 3u);
    const std::string want = path + ":" + std::to_string(c.line) + ": " + c.message;
    EXPECT_EQ(pendingError().rfind(want, 0), 0u) << "got:  " << pendingError() << "\nwant: " << want;
    clearPendingError();
  }
  EXPECT_EQ(xmlFilesIn(dir), covered) << "every malformed file needs its case here";
}

TEST(Topology, MissingTopoFileIsNamed) {
  clearPendingError();
  Topology t;
  const std::string path = "/nonexistent/braid/NCCL_TOPO_FILE.xml";
  EXPECT_EQ(loadTopologyFile(path, &t), ncclInvalidArgument);
  EXPECT_NE(pendingError().find(path), std::string::npos) << pendingError();
  clearPendingError();
}

TEST(Topology, RejectedElementsNameLineAndElement) {
  struct Case {
    const char* what;
    std::string text;
    const char* expect;  // the message starts with it
  };
  const std::string sw =
      "    <pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n";
  const Case cases[] = {
      {"root is no system", "<topology version=\"1\"/>", "inline.xml:1: <topology>: the root element must be <system>"},
      {"no version", "<system/>", "inline.xml:1: <system>: no version attribute"},
      {"version 2", "<system version=\"2\"/>", "inline.xml:1: <system>: version \"2\" is not 1"},
      {"unknown element under cpu", machine("    <socket/>\n"), "inline.xml:3: <socket>: unknown element"},
      {"known element in the wrong place", machine("    <net name=\"eth0\" dev=\"0\"/>\n"),
       "inline.xml:3: <net>: cannot be inside <cpu>"},
      {"nic under system", "<system version=\"1\">\n  <nic/>\n</system>",
       "inline.xml:2: <nic>: a <nic> must be inside a <pci> or <cpu> element, not <system>"},
      {"gpu under gpu", machine(gpu("0000:11:00.0", 0, "        <gpu/>\n")),
       "inline.xml:5: <gpu>: a <gpu> must be inside a <pci> element, not <gpu>"},
      {"unknown cpu attribute", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\" cores=\"8\"/>\n</system>",
       "inline.xml:2: <cpu>: unknown attribute 'cores'"},
      {"cpu without numaid", "<system version=\"1\">\n  <cpu arch=\"arm64\"/>\n</system>",
       "inline.xml:2: <cpu>: no numaid attribute"},
      {"unknown arch", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"riscv\"/>\n</system>",
       "inline.xml:2: <cpu>: attribute arch=\"riscv\" is not one of x86_64, arm64, ppc64"},
      {"x86 without vendor", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\"/>\n</system>",
       "inline.xml:2: <cpu>: no vendor attribute"},
      {"Intel without model",
       "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
       "familyid=\"6\"/>\n</system>",
       "inline.xml:2: <cpu>: no modelid attribute"},
      {"bad affinity", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"arm64\" affinity=\"0-15\"/>\n</system>",
       "inline.xml:2: <cpu>: attribute affinity=\"0-15\" is not a cpuset"},
      {"bad host_hash", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"arm64\" host_hash=\"0xabg\"/>\n</system>",
       "inline.xml:2: <cpu>: attribute host_hash=\"0xabg\" is not a hex number"},
      {"two cpus with one numaid",
       "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"arm64\"/>\n  <cpu numaid=\"0\" arch=\"arm64\"/>\n</system>",
       "inline.xml:3: <cpu>: numaid 0 again (also at line 2)"},
      {"pci without busid", machine("    <pci class=\"0x060400\" link_speed=\"\" link_width=\"\"/>\n"),
       "inline.xml:3: <pci>: no busid attribute"},
      {"malformed bus id", machine(gpu("0000:1g:00.0", 0)),
       "inline.xml:3: <pci>: attribute busid=\"0000:1g:00.0\" is not a PCI address"},
      {"malformed class",
       machine("    <pci busid=\"0000:10:00.0\" class=\"bridge\" link_speed=\"\" link_width=\"16\"/>\n"),
       "inline.xml:3: <pci>: attribute class=\"bridge\" is not a PCI class"},
      {"malformed link_speed",
       machine("    <pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"fast\" link_width=\"16\"/>\n"),
       "inline.xml:3: <pci>: attribute link_speed=\"fast\" is not a PCIe speed"},
      {"malformed link_width",
       machine("    <pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"\" link_width=\"x16\"/>\n"),
       "inline.xml:3: <pci>: attribute link_width=\"x16\" is not a lane count"},
      {"negative dev", machine(gpu("0000:11:00.0", -1)),
       "inline.xml:4: <gpu>: attribute dev=\"-1\" is not in [0, 65536]"},
      {"gdr neither 0 nor 1",
       machine("    <pci busid=\"0000:11:00.0\" class=\"0x03\" link_speed=\"\" link_width=\"\">\n"
               "      <gpu dev=\"0\" gdr=\"yes\"/>\n    </pci>\n"),
       "inline.xml:4: <gpu>: attribute gdr=\"yes\" is not a number"},
      {"two gpus in one pci",
       machine("    <pci busid=\"0000:11:00.0\" class=\"0x03\" link_speed=\"\" link_width=\"\">\n"
               "      <gpu dev=\"0\"/>\n      <gpu dev=\"1\"/>\n    </pci>\n"),
       "inline.xml:5: <gpu>: a second <gpu> in the <pci> of line 3"},
      {"gpu and nic in one pci",
       machine("    <pci busid=\"0000:11:00.0\" class=\"0x03\" link_speed=\"\" link_width=\"\">\n"
               "      <gpu dev=\"0\"/>\n      <nic/>\n    </pci>\n"),
       "inline.xml:5: <nic>: a <pci> holds a <gpu> and a <nic>"},
      {"device holding a pci tree",
       machine("    <pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"\" link_width=\"\">\n"
               "      <pci busid=\"0000:12:00.0\" class=\"0x060400\" link_speed=\"\" link_width=\"\"/>\n"
               "    </pci>\n"),
       "inline.xml:3: <pci>: a device (class 0x030200) cannot hold <pci> elements"},
      {"nvlink to nowhere", machine(gpu("0000:11:00.0", 0, nvlink("0000:99:00.0", 2, "0x030200"))),
       "inline.xml:5: <nvlink>: nvlink target 0000:99:00.0 is no GPU of this file"},
      {"nvlink to itself", machine(gpu("0000:11:00.0", 0, nvlink("0000:11:00.0", 2, "0x030200"))),
       "inline.xml:5: <nvlink>: nvlink target 0000:11:00.0 is the GPU itself"},
      {"nvlink to a bridge class", machine(gpu("0000:11:00.0", 0, nvlink("0000:10:00.0", 2, "0x060400"))),
       "inline.xml:5: <nvlink>: nvlink target class 0x060400 is neither a GPU"},
      {"nvlink with a malformed target", machine(gpu("0000:11:00.0", 0, nvlink("switch0", 2, "0x068000"))),
       "inline.xml:5: <nvlink>: attribute target=\"switch0\" is not a PCI address"},
      {"nvlink without count",
       machine(gpu("0000:11:00.0", 0, "        <nvlink target=\"0000:05:00.0\" tclass=\"0x068000\"/>\n")),
       "inline.xml:5: <nvlink>: no count attribute"},
      {"nvlink count 0", machine(gpu("0000:11:00.0", 0, nvlink("0000:05:00.0", 0, "0x068000"))),
       "inline.xml:5: <nvlink>: attribute count=\"0\" is not in [1, 1024]"},
      {"c2c with a bad bw", machine(gpu("0000:11:00.0", 0, "        <c2c bw=\"fast\" count=\"10\"/>\n")),
       "inline.xml:5: <c2c>: attribute bw=\"fast\" is not a number"},
      {"net speed not a number",
       machine(sw + "      <pci busid=\"0000:11:00.0\" class=\"0x020000\" link_speed=\"\" link_width=\"\">\n"
                    "        <nic>\n          <net name=\"eth0\" dev=\"0\" speed=\"10G\"/>\n        </nic>\n"
                    "      </pci>\n    </pci>\n"),
       "inline.xml:6: <net>: attribute speed=\"10G\" is not a number"},
      {"net with a bad guid", machine("    <nic>\n      <net name=\"e\" dev=\"0\" guid=\"0x12_34\"/>\n    </nic>\n"),
       "inline.xml:4: <net>: attribute guid=\"0x12_34\" is not a hex number"},
      {"net with a bad latency", machine("    <nic>\n      <net name=\"e\" dev=\"0\" latency=\"soon\"/>\n    </nic>\n"),
       "inline.xml:4: <net>: attribute latency=\"soon\" is not a latency"},
      {"two nets with one dev",
       machine("    <nic>\n      <net name=\"a\" dev=\"0\"/>\n      <net name=\"b\" dev=\"0\"/>\n    </nic>\n"),
       "inline.xml:5: <net>: net dev 0 again (also a)"},
      {"pcilink with a malformed target", machine(sw + "      <pcilink target=\"sw1\"/>\n    </pci>\n"),
       "inline.xml:4: <pcilink>: attribute target=\"sw1\" is not a PCI address"},
      {"pcilink of a device",
       machine("    <pci busid=\"0000:11:00.0\" class=\"0x030200\" link_speed=\"\" link_width=\"\">\n"
               "      <gpu dev=\"0\"/>\n      <pcilink target=\"0000:10:00.0\"/>\n    </pci>\n"),
       "inline.xml:5: <pcilink>: only a PCI switch has pcilinks; the <pci> of line 3 is a device (class 0x030200)"},
      {"duplicate bus id of an unused device",
       machine("    <pci busid=\"0000:05:00.0\" class=\"0x068000\" link_speed=\"\" link_width=\"\"/>\n" +
               gpu("0000:05:00.0", 0)),
       "inline.xml:4: <pci>: bus id 0000:05:00.0 again (also at line 3)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = rejected(c.text);
    EXPECT_EQ(msg.rfind(c.expect, 0), 0u) << "got: " << msg << "\n" << c.text;
  }
}

// XML built in code (detection) has no lines: the message names the source alone.
TEST(Topology, ErrorsOfBuiltXmlNameTheSource) {
  XmlNode system;
  system.name = "system";
  system.set("version", "1");
  XmlNode& cpu = system.add("cpu");
  cpu.set("numaid", "0");
  cpu.set("arch", "arm64");
  cpu.add("gpu");
  clearPendingError();
  Topology t;
  EXPECT_EQ(topologyFromXml(system, "detected", &t), ncclInvalidArgument);
  EXPECT_EQ(pendingError().rfind("detected: <gpu>: a <gpu> must be inside a <pci> element", 0), 0u) << pendingError();
  clearPendingError();
}

// ---- what NCCL's reading gives less common elements ----

TEST(Topology, NvlinkListedOnOneSideIsBothWays) {
  const Topology t = built(
      machine(gpu("0000:11:00.0", 0, nvlink("0000:12:00.0", 3, "0x030200"), "80") + gpu("0000:12:00.0", 1, "", "80")));
  expectLink(t, gpuOfRank(t, 0), gpuOfRank(t, 1), TopoLinkKind::Nvl, 60.0);
  // Listed on both sides, each direction is the side's own count; repeated elements add up.
  const Topology u = built(
      machine(gpu("0000:11:00.0", 0, nvlink("0000:12:00.0", 2, "0x03") + nvlink("0000:12:00.0", 1, "0x03"), "80") +
              gpu("0000:12:00.0", 1, nvlink("0000:11:00.0", 3, "0x03"), "80")));
  expectLink(u, gpuOfRank(u, 0), gpuOfRank(u, 1), TopoLinkKind::Nvl, 60.0);
  EXPECT_EQ(u.nodes[gpuOfRank(u, 0)].links.size(), 2u);  // its PCI parent and one NVLink
}

TEST(Topology, NvlinkBandwidthFollowsTheSourceGpusArchitecture) {
  const struct {
    const char* sm;
    double perLink;
  } cases[] = {{"60", 18.0}, {"70", 20.0}, {"75", 20.0},  {"80", 20.0},  {"86", 12.0},
               {"89", 20.0}, {"90", 20.6}, {"100", 40.1}, {"103", 40.1}, {"0", 20.0}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sm);
    const Topology t = built(machine(gpu("0000:11:00.0", 0, nvlink("0000:05:00.0", 2, "0x068000"), c.sm)));
    expectLink(t, gpuOfRank(t, 0), t.all(TopoKind::Nvs)[0], TopoLinkKind::Nvl, 2 * c.perLink);
  }
}

TEST(Topology, NvlinkToCpuJoinsTheGpusOwnCpu) {
  // POWER9: NVLink between GPU and CPU (tclass 0x068001), 32 GB/s between sockets.
  const std::string p9 = "  <cpu numaid=\"8\" arch=\"ppc64\">\n";
  const Topology t =
      built("<system version=\"1\">\n" + p9 + gpu("0035:03:00.0", 0, nvlink("0035:03:00.0", 3, "0x068001"), "70") +
            "  </cpu>\n  <cpu numaid=\"0\" arch=\"ppc64\"/>\n</system>\n");
  const std::vector<int> cpus = t.all(TopoKind::Cpu);
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(t.nodes[cpus[0]].numa, 8);
  expectLink(t, gpuOfRank(t, 0), cpus[0], TopoLinkKind::Nvl, 60.0);
  EXPECT_EQ(linkOf(t, gpuOfRank(t, 0), cpus[1], TopoLinkKind::Nvl), nullptr);
  expectLink(t, cpus[0], cpus[1], TopoLinkKind::Sys, 32.0);
  EXPECT_EQ(t.nodes[gpuOfRank(t, 0)].numa, 8);
}

TEST(Topology, SysBandwidthByCpuModel) {
  const struct {
    const char* attrs;
    double bw;
  } cases[] = {
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"207\"", 40.0},  // Emerald Rapids
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\"", 22.0},  // Sapphire Rapids
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\"", 10.0},   // Skylake
      {"arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"79\"", 6.0},    // Broadwell
      {"arch=\"x86_64\" vendor=\"AuthenticAMD\"", 16.0},
      {"arch=\"x86_64\" vendor=\"CentaurHauls\" familyid=\"7\" modelid=\"91\"", 9.0},  // Zhaoxin Yongfeng
      {"arch=\"x86_64\" vendor=\"CentaurHauls\" familyid=\"7\" modelid=\"59\"", 6.0},
      {"arch=\"x86_64\" vendor=\"HygonGenuine\"", 5000.0},  // unknown to NCCL: no penalty
      {"arch=\"arm64\"", 6.0},
      {"arch=\"ppc64\"", 32.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attrs);
    const std::string a = c.attrs;
    const Topology t =
        built("<system version=\"1\">\n  <cpu numaid=\"0\" " + a + "/>\n  <cpu numaid=\"1\" " + a + "/>\n</system>\n");
    const std::vector<int> cpus = t.all(TopoKind::Cpu);
    ASSERT_EQ(cpus.size(), 2u);
    expectLink(t, cpus[0], cpus[1], TopoLinkKind::Sys, c.bw);
  }
}

TEST(Topology, PciBandwidthFromSpeedAndWidth) {
  const struct {
    const char* speed;
    const char* width;
    double bw;
  } cases[] = {
      {"2.5 GT/s PCIe", "1", 0.1875},
      {"5 GT/s", "8", 3.0},
      {"8.0 GT/s PCIe", "16", 12.0},
      {"16 GT/s", "4", 6.0},
      {"32.0 GT/s PCIe", "8", 24.0},
      {"64.0 GT/s PCIe", "16", 96.0},
      {"", "", 12.0},  // nothing known: NCCL's x16 Gen3
      {"Unknown", "0", 12.0},
      {"32.0 GT/s PCIe", "0", 48.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.speed) + " x" + c.width);
    const Topology t = built(machine(std::string("    <pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"") +
                                     c.speed + "\" link_width=\"" + c.width + "\"/>\n"));
    expectLink(t, t.all(TopoKind::Pci)[0], t.all(TopoKind::Cpu)[0], TopoLinkKind::Pci, c.bw);
  }
}

TEST(Topology, NetsNcclLeavesOut) {
  const Topology t = built(
      machine("    <nic>\n"
              "      <net name=\"nodev\" speed=\"100000\"/>\n"                   // no dev: not placed
              "      <net name=\"collonly\" dev=\"1\" net=\"0\" coll=\"1\"/>\n"  // not a network device
              "      <net name=\"nospeed\" dev=\"2\" speed=\"-1\" port=\"2\" rail=\"0\" plane=\"1\" keep=\"1\"/>\n"
              "    </nic>\n"));
  EXPECT_EQ(count(t, TopoKind::Nic), 1);
  ASSERT_EQ(count(t, TopoKind::Net), 1);
  const TopoNode& net = t.nodes[t.all(TopoKind::Net)[0]];
  EXPECT_EQ(net.name, "nospeed");
  EXPECT_EQ(net.dev, 2);
  EXPECT_EQ(net.port, 2);
  EXPECT_DOUBLE_EQ(net.speedGBs, 1.25);  // a NIC without a speed counts as 10 Gb/s
}

TEST(Topology, DevicesWithoutNodes) {
  // An NVSwitch seen on PCI and a NIC no plugin uses make no node (NCCL reaches switches through NVLink only).
  const Topology t =
      built(machine("    <pci busid=\"0000:05:00.0\" class=\"0x068000\" link_speed=\"\" link_width=\"\"/>\n"
                    "    <pci busid=\"0000:21:00.0\" class=\"0x020000\" link_speed=\"\" link_width=\"\"/>\n" +
                    gpu("0000:11:00.0", 0, nvlink("0000:05:00.0", 12, "0x068000"), "80") +
                    gpu("0000:12:00.0", 1, "        <c2c bw=\"40000\" count=\"10\"/>\n", "90")));
  EXPECT_EQ(count(t, TopoKind::Pci), 0);
  EXPECT_EQ(count(t, TopoKind::Nic), 0);
  EXPECT_EQ(count(t, TopoKind::Nvs), 1);
  // <c2c> is kept in the XML but makes no link: the GPU's PCI link is its only way to the CPU.
  EXPECT_EQ(t.nodes[gpuOfRank(t, 1)].links.size(), 1u);
}

TEST(Topology, PcilinksJoinSwitchHalves) {
  const Topology t = built(
      machine("    <pci busid=\"0000:10:00.0\" class=\"0x060400\" vendor=\"0x1000\" link_speed=\"\" link_width=\"\">\n"
              "      <pcilink target=\"0000:20:00.0\"/>\n"
              "      <pcilink target=\"0000:30:00.0\"/>\n"  // trimmed from the dump: skipped, as NCCL
              "    </pci>\n"
              "    <pci busid=\"0000:20:00.0\" class=\"0x060400\" vendor=\"0x1000\" link_speed=\"\" link_width=\"\">\n"
              "      <pcilink target=\"0000:10:00.0\"/>\n"
              "    </pci>\n"));
  const std::vector<int> sw = t.all(TopoKind::Pci);
  ASSERT_EQ(sw.size(), 2u);
  expectLink(t, sw[0], sw[1], TopoLinkKind::Loc, 5000.0);
  EXPECT_EQ(t.nodes[sw[0]].links.size(), 2u);  // the CPU and the one sibling, once
}

// ---- the helpers ----

TEST(Topology, BusIdSpellings) {
  EXPECT_EQ(topoBusId("0000:1A:00"), "0000:1a:00.0");
  EXPECT_EQ(topoBusId("0000:1a:00.0"), "0000:1a:00.0");
  EXPECT_EQ(topoBusId("00000000:1A:00.0"), "0000:1a:00.0");  // NVML's 8-digit domain
  EXPECT_EQ(topoBusId("1a:00.3"), "0000:1a:00.3");
  EXPECT_EQ(topoBusId("0001:C5:1F.7"), "0001:c5:1f.7");
  EXPECT_EQ(topoBusId("fffffff:ff:ff.0"), "fffffff:ff:ff.0");  // NCCL's hidden NVSwitch
  for (const char* bad : {"", "0000", "0000:1a", "0000:1a:0.0", "0000:1a:00.8", "0000:1a:00.", "0000:1a:00.0 ",
                          " 0000:1a:00.0", "000000000:1a:00.0", "0000:1a:00:0", "0000:zz:00.0", "0000:1a:00.0.1"})
    EXPECT_EQ(topoBusId(bad), "") << '"' << bad << '"';
}

TEST(Topology, KindAndClassNames) {
  EXPECT_STREQ(topoKindName(TopoKind::Gpu), "GPU");
  EXPECT_STREQ(topoKindName(TopoKind::Pci), "PCI");
  EXPECT_STREQ(topoKindName(TopoKind::Nvs), "NVS");
  EXPECT_STREQ(topoKindName(TopoKind::Cpu), "CPU");
  EXPECT_STREQ(topoKindName(TopoKind::Nic), "NIC");
  EXPECT_STREQ(topoKindName(TopoKind::Net), "NET");
  const char* names[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS", "NET", "DIS"};
  for (int c = 0; c <= static_cast<int>(PathClass::Dis); ++c)
    EXPECT_STREQ(pathClassName(static_cast<PathClass>(c)), names[c]);
}

TEST(Topology, P2pLevelValues) {
  const struct {
    const char* text;
    PathClass cls;
  } good[] = {{"LOC", PathClass::Loc},
              {"NVL", PathClass::Nvl},
              {"NVB", PathClass::Nvb},
              {"PIX", PathClass::Pix},
              {"PXB", PathClass::Pxb},
              {"PHB", PathClass::Phb},
              {"SYS", PathClass::Sys},
              // NCCL's old numbers: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS, larger ones clamped to SYS
              {"0", PathClass::Loc},
              {"1", PathClass::Pix},
              {"2", PathClass::Pxb},
              {"3", PathClass::Phb},
              {"4", PathClass::Sys},
              {"5", PathClass::Sys},
              {"17", PathClass::Sys}};
  for (const auto& g : good) {
    PathClass c = PathClass::Dis;
    EXPECT_TRUE(parsePathLevel(g.text, &c)) << g.text;
    EXPECT_EQ(c, g.cls) << g.text;
  }
  for (const char* bad : {"", "nvl", "NET", "DIS", "C2C", "PXN", "-1", "3x", " 3", "SYS ", "1234567890"}) {
    PathClass c = PathClass::Nvb;
    EXPECT_FALSE(parsePathLevel(bad, &c)) << '"' << bad << '"';
    EXPECT_EQ(c, PathClass::Nvb) << bad;
  }
}

}  // namespace
