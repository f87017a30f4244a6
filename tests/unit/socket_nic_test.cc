// The socket backend's interface per GPU (socket_nic.h) over canned topologies: two sockets with a NIC on each give
// each GPU the interface of its own socket's NIC, whatever order the interfaces come in; interfaces the topology does
// not place (virtual ones) lose to one it places, and where it places none, or does not know the GPU, there is no
// choice (the backend then takes the first).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/result.h"
#include "topology/topo_xml.h"
#include "topology/topology.h"
#include "topology_files.h"
#include "transport/net/socket_nic.h"

namespace braid {
namespace {

// tests/topology/two_socket_nics.xml with its NICs' ports named as Ethernet interfaces: socket 0's "eth0", socket
// 1's "eth1". GPU 0 (0000:41:00.0) is on socket 0, GPU 1 (0000:c1:00.0) on socket 1.
struct TwoSockets {
  Topology topo;
  TopoPaths paths;
};

TwoSockets twoSockets(const char* nic0 = "eth0", const char* nic1 = "eth1") {
  std::string text = readText(topologyDir() + "/two_socket_nics.xml");
  auto rename = [&](const std::string& from, const std::string& to) {
    const size_t at = text.find("name=\"" + from + "\"");
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size() + 7, "name=\"" + to + "\"");
  };
  rename("mlx5_0", nic0);
  rename("mlx5_1", nic1);
  TwoSockets t;
  XmlNode root;
  EXPECT_EQ(parseXml(text, "two_socket_nics.xml", &root), ncclSuccess) << pendingError();
  EXPECT_EQ(topologyFromXml(root, "two_socket_nics.xml", &t.topo), ncclSuccess) << pendingError();
  EXPECT_EQ(computePaths(t.topo, &t.paths), ncclSuccess) << pendingError();
  return t;
}

constexpr int64_t kGpu0 = 0x4100;  // PeerInfo::busId of 0000:41:00.0
constexpr int64_t kGpu1 = 0xc100;

TEST(SocketNic, EachGpuGetsItsSocketsInterface) {
  TwoSockets t = twoSockets();
  std::string why;
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {"eth0", "eth1"}, &why), 0) << why;
  EXPECT_NE(why.find("PHB"), std::string::npos) << why;  // through its own socket's root complex
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu1, {"eth0", "eth1"}, &why), 1) << why;
  // The order the interfaces come in does not matter.
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {"eth1", "eth0"}, nullptr), 1);
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu1, {"eth1", "eth0"}, nullptr), 0);
  // Only the other socket's NIC matches (NCCL_SOCKET_IFNAME=eth1): that one, across the sockets' link.
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {"eth1"}, &why), 0) << why;
  EXPECT_NE(why.find("SYS"), std::string::npos) << why;
}

TEST(SocketNic, UnplacedInterfacesLoseToPlacedOnes) {
  TwoSockets t = twoSockets();
  // A bridge and a tunnel have no PCI place, so no NET node: the placed interface wins though it comes last.
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu1, {"br0", "tun0", "eth1"}, nullptr), 2);
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {"br0", "eth1", "eth0"}, nullptr), 2);
}

TEST(SocketNic, NoChoiceWhereTheTopologySaysNothing) {
  TwoSockets t = twoSockets();
  std::string why;
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {"br0", "lo"}, &why), -1);
  EXPECT_NE(why.find("places none"), std::string::npos) << why;
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, 0x9900, {"eth0", "eth1"}, &why), -1);  // not its GPU
  EXPECT_NE(why.find("0000:99:00.0 is not in the topology"), std::string::npos) << why;
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, -1, {"eth0", "eth1"}, &why), -1);  // a host rank
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {}, nullptr), -1);
}

// The nearest wins; between equals (a name listed twice), the first.
TEST(SocketNic, TheNearestWinsThenTheFirstNamed) {
  TwoSockets t = twoSockets("ens1", "ens2");
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu1, {"ens1", "ens2"}, nullptr), 1);
  EXPECT_EQ(nearestSocketInterface(t.topo, t.paths, kGpu0, {"ens1", "ens1", "ens2"}, nullptr), 0);
}

}  // namespace
}  // namespace braid
