// NCCL_P2P_LEVEL against the host topology (src/transport/p2p/p2p_level.h): the canned PCIe machine of two
// switches (tests/topology/pcie_2sw.xml), with its CPU as the file has it (AMD: SYS by default) and as Intel (PXB
// by default, so P2P across the host bridge is refused), the user's levels, NVLinks unknown, and GPUs the topology
// does not hold.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "../common/env_guard.h"
#include "core/result.h"
#include "topology/topology.h"
#include "topology_files.h"
#include "transport/p2p/nvlink.h"
#include "transport/p2p/p2p_level.h"

namespace braid {
namespace {

using braid_test::EnvGuard;

std::shared_ptr<HostTopology> pcieHost(const char* vendor, bool nvlinkKnown) {
  XmlNode xml;
  EXPECT_EQ(readXmlFile(topologyDir() + "/pcie_2sw.xml", &xml), ncclSuccess) << pendingError();
  for (XmlNode& c : xml.children)
    if (c.name == "cpu") c.set("vendor", vendor);
  auto host = std::make_shared<HostTopology>();
  EXPECT_EQ(topologyFromXml(xml, "pcie_2sw.xml", &host->topo), ncclSuccess) << pendingError();
  EXPECT_EQ(computePaths(host->topo, &host->paths), ncclSuccess) << pendingError();
  host->nvlinkKnown = nvlinkKnown;
  host->source = "pcie_2sw.xml";
  return host;
}

// Whether P2P may join the GPUs at these two bus ids, and the path class seen.
bool allowed(const char* a, const char* b, PathClass* cls) {
  return p2pPathAllowed(p2pBusIdFromString(a), p2pBusIdFromString(b), cls);
}

struct TopologyReset {
  ~TopologyReset() { setHostTopology(nullptr); }
};

}  // namespace

TEST(P2pLevel, DefaultFollowsTheHostsCpus) {
  TopologyReset reset;
  EnvGuard level("NCCL_P2P_LEVEL", nullptr);
  PathClass cls;
  setHostTopology(pcieHost("AuthenticAMD", true));  // SYS: every pair
  EXPECT_TRUE(allowed("0000:43:00.0", "0000:44:00.0", &cls));
  EXPECT_EQ(cls, PathClass::Pix);
  EXPECT_TRUE(allowed("0000:43:00.0", "0000:c3:00.0", &cls));
  EXPECT_EQ(cls, PathClass::Phb);
  setHostTopology(pcieHost("GenuineIntel", true));  // PXB: within a switch only
  EXPECT_TRUE(allowed("0000:43:00.0", "0000:44:00.0", &cls));
  EXPECT_FALSE(allowed("0000:43:00.0", "0000:c3:00.0", &cls));
  EXPECT_FALSE(allowed("0000:c4:00.0", "0000:44:00.0", &cls)) << "symmetric";
  EXPECT_EQ(cls, PathClass::Phb);
  // NVLinks unknown (detection without NVML): a path seen as PCI may be NVLink, so the default does not restrict.
  setHostTopology(pcieHost("GenuineIntel", false));
  EXPECT_TRUE(allowed("0000:43:00.0", "0000:c3:00.0", &cls));
}

TEST(P2pLevel, UserLevelsAndUnknownGpus) {
  TopologyReset reset;
  setHostTopology(pcieHost("GenuineIntel", false));
  PathClass cls;
  {
    EnvGuard level("NCCL_P2P_LEVEL", "PIX");
    EXPECT_TRUE(allowed("0000:43:00.0", "0000:44:00.0", &cls));
    EXPECT_FALSE(allowed("0000:43:00.0", "0000:c3:00.0", &cls)) << "a user's level holds without NVML too";
  }
  {
    EnvGuard level("NCCL_P2P_LEVEL", "SYS");
    EXPECT_TRUE(allowed("0000:43:00.0", "0000:c3:00.0", &cls));
  }
  {
    EnvGuard level("NCCL_P2P_LEVEL", "3");  // NCCL's number for PHB
    EXPECT_TRUE(allowed("0000:43:00.0", "0000:c3:00.0", &cls));
  }
  {
    EnvGuard level("NCCL_P2P_LEVEL", "LOC");
    EXPECT_FALSE(allowed("0000:43:00.0", "0000:44:00.0", &cls));
    EXPECT_FALSE(allowed("0000:07:00.0", "0000:08:00.0", &cls)) << "LOC: no P2P even for GPUs it does not hold";
  }
  {
    EnvGuard level("NCCL_P2P_LEVEL", "PIX");
    EXPECT_TRUE(allowed("0000:07:00.0", "0000:43:00.0", &cls)) << "a GPU the topology does not hold: peer access";
    EXPECT_EQ(cls, PathClass::Dis);
  }
  {
    EnvGuard level("NCCL_P2P_LEVEL", "FAR");
    std::string why;
    PathClass limit;
    EXPECT_FALSE(p2pLevelLimit(nullptr, &limit, &why));
    EXPECT_NE(why.find("NCCL_P2P_LEVEL=FAR"), std::string::npos) << why;
  }
}

}  // namespace braid
