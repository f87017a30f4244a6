// NCCL_GRAPH_DUMP_FILE's contents: NCCL's graph XML written and read back (topo_graph.h), and the graphs a
// communicator's rings and trees make (graph_dump.h) on hand-built hosts: a ring per channel, each host's segment
// with the NICs nearest its ends, and across hosts the two trees' chains. Every dump parses back to the same graphs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/result.h"
#include "runtime/graph_dump.h"
#include "topo_test_util.h"
#include "topology/topo_graph.h"
#include "topology/topo_xml.h"

namespace braid {
namespace {

using topotest::TopoBuilder;

void expectSameGraphs(const std::vector<TopoGraph>& a, const std::vector<TopoGraph>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].pattern, b[i].pattern);
    EXPECT_EQ(a[i].crossNic, b[i].crossNic);
    EXPECT_DOUBLE_EQ(a[i].speedIntra, b[i].speedIntra);
    EXPECT_DOUBLE_EQ(a[i].speedInter, b[i].speedInter);
    EXPECT_EQ(a[i].typeIntra, b[i].typeIntra);
    EXPECT_EQ(a[i].typeInter, b[i].typeInter);
    ASSERT_EQ(a[i].channels.size(), b[i].channels.size()) << "graph " << i;
    for (size_t c = 0; c < a[i].channels.size(); ++c) {
      EXPECT_EQ(a[i].channels[c].netIn, b[i].channels[c].netIn) << "graph " << i << " channel " << c;
      EXPECT_EQ(a[i].channels[c].gpus, b[i].channels[c].gpus) << "graph " << i << " channel " << c;
      EXPECT_EQ(a[i].channels[c].netOut, b[i].channels[c].netOut) << "graph " << i << " channel " << c;
    }
  }
}

// Writes the graphs as a file would hold them and reads them back.
std::vector<TopoGraph> roundTrip(const std::vector<TopoGraph>& graphs) {
  const std::string text = writeXml(graphsXml(graphs));
  XmlNode root;
  EXPECT_EQ(parseXml(text, "graphs.xml", &root), ncclSuccess) << pendingError();
  std::vector<TopoGraph> back;
  EXPECT_EQ(parseGraphsXml(root, &back), ncclSuccess) << pendingError() << "\n" << text;
  return back;
}

GraphChannel channel(int in, std::vector<int> gpus, int out) {
  GraphChannel c;
  c.netIn = in;
  c.gpus = std::move(gpus);
  c.netOut = out;
  return c;
}

TEST(GraphDump, GraphsWriteAndReadBack) {
  TopoGraph ring;
  ring.pattern = kGraphPatternRing;
  ring.speedIntra = 20;
  ring.speedInter = 12.5;
  ring.typeIntra = PathClass::Nvl;
  ring.typeInter = PathClass::Pxb;
  ring.crossNic = true;
  ring.channels = {channel(0, {0, 1, 3, 2}, 1), channel(1, {2, 3, 1, 0}, 0)};
  TopoGraph tree;
  tree.id = 1;
  tree.pattern = kGraphPatternBalancedTree;
  tree.speedIntra = tree.speedInter = 0.5;
  tree.channels = {channel(-1, {7}, -1)};
  const std::vector<TopoGraph> graphs = {ring, tree};
  expectSameGraphs(roundTrip(graphs), graphs);
  const std::string text = writeXml(graphsXml(graphs));
  EXPECT_NE(
      text.find("<graph id=\"0\" pattern=\"4\" crossnic=\"1\" nchannels=\"2\" speedintra=\"20\" speedinter=\"12.5\" "
                "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PXB\" samechannels=\"0\">\n    <channel>\n"
                "      <net dev=\"0\"/>\n      <gpu dev=\"0\"/>"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("<graph id=\"1\" pattern=\"1\" crossnic=\"0\" nchannels=\"1\""), std::string::npos) << text;
}

void rejected(const std::string& text, const char* why) {
  clearPendingError();
  XmlNode root;
  ASSERT_EQ(parseXml(text, "g.xml", &root), ncclSuccess) << pendingError();
  std::vector<TopoGraph> graphs;
  EXPECT_EQ(parseGraphsXml(root, &graphs), ncclInvalidArgument) << text;
  EXPECT_NE(pendingError().find(why), std::string::npos) << pendingError();
  clearPendingError();
}

TEST(GraphDump, MalformedGraphsAreRejectedWithTheirLine) {
  const std::string head = "<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\" crossnic=\"0\" ";
  const std::string attrs =
      "speedintra=\"1\" speedinter=\"1\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" "
      "samechannels=\"1\">\n";
  rejected(head + "nchannels=\"2\" " + attrs + "<channel><gpu dev=\"0\"/></channel>\n</graph></graphs>",
           "nchannels=2 but has 1");
  rejected(head + "nchannels=\"1\" " + attrs + "<channel><cpu dev=\"0\"/></channel>\n</graph></graphs>",
           "not an element of a channel");
  rejected(head + "nchannels=\"1\" " + attrs + "<channel><gpu dev=\"x\"/></channel>\n</graph></graphs>",
           "bad number in dev=\"x\"");
  rejected(head + "nchannels=\"1\" " + attrs + "<channel>\n</channel>\n</graph></graphs>",
           "line 3: <channel> names no GPU");
  rejected(head + "nchannels=\"1\" " + attrs +
               "<channel><net dev=\"0\"/><gpu dev=\"0\"/><net dev=\"0\"/><net dev=\"1\"/></channel>\n</graph></graphs>",
           "third NIC");
  rejected(
      "<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"0\" speedintra=\"1\" "
      "speedinter=\"1\" latencyinter=\"0\" typeintra=\"FAST\" typeinter=\"PIX\" samechannels=\"1\"/></graphs>",
      "line 2: <graph> has an unknown link type in typeintra=\"FAST\"");
  rejected("<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\"/></graphs>", "lacks the attribute crossnic");
  rejected("<graph/>", "is not <graphs>");
}

// Two GPUs a host, each on its own switch with a NIC: GPU 0's NIC has two ports (NETs 0 and 1), GPU 1's one (NET 2).
// Ranks 0 and 1 on host A, 2 and 3 on host B (the same machine).
CommGraphInput twoHosts(const TopoBuilder& b, uint64_t host) {
  CommGraphInput in;
  in.hostOf = {0xa, 0xa, 0xb, 0xb};
  in.host = host;
  in.rankGpu =
      host == 0xa ? std::vector<int>{b.gpus[0], b.gpus[1], -1, -1} : std::vector<int>{-1, -1, b.gpus[0], b.gpus[1]};
  in.ringOrders = {{0, 1, 2, 3}, {1, 0, 3, 2}};
  in.nChannels = 3;
  in.treeChannels = 2;
  return in;
}

TEST(GraphDump, RingsPerChannelAndTreesAcrossHosts) {
  TopoBuilder b = topotest::gpuNicSwitches();
  TopoPaths paths;
  ASSERT_EQ(computePaths(b.topo, &paths), ncclSuccess) << pendingError();
  const std::vector<TopoGraph> g = commGraphs(twoHosts(b, 0xa), b.topo, paths);
  ASSERT_EQ(g.size(), 2u);
  // Rings: channel c on ring c % 2, this host's segment from where the ring enters it, NICs nearest its ends (GPU 0's
  // two ports taken by channel).
  EXPECT_EQ(g[0].id, 0);
  EXPECT_EQ(g[0].pattern, kGraphPatternRing);
  ASSERT_EQ(g[0].channels.size(), 3u);
  EXPECT_EQ(g[0].channels[0], channel(0, {0, 1}, 2));
  EXPECT_EQ(g[0].channels[1], channel(2, {1, 0}, 1));
  EXPECT_EQ(g[0].channels[2], channel(0, {0, 1}, 2));
  EXPECT_TRUE(g[0].crossNic);
  EXPECT_EQ(g[0].typeIntra, PathClass::Phb);  // the two GPUs meet at the CPU
  EXPECT_EQ(g[0].typeInter, PathClass::Pix);  // each NIC shares its GPU's switch
  // Trees: per tree channel, tree 0's chain (ring 0's order here) and tree 1's (reversed), head first.
  EXPECT_EQ(g[1].id, 1);
  EXPECT_EQ(g[1].pattern, kGraphPatternBalancedTree);
  ASSERT_EQ(g[1].channels.size(), 4u);
  EXPECT_EQ(g[1].channels[0], channel(0, {0, 1}, 2));
  EXPECT_EQ(g[1].channels[1], channel(2, {1, 0}, 0));
  EXPECT_EQ(g[1].channels[2], channel(1, {0, 1}, 2));
  EXPECT_EQ(g[1].channels[3], channel(2, {1, 0}, 1));
  expectSameGraphs(roundTrip(g), g);
  // Host B sees its own ranks on the same GPUs: ring 0 enters it at rank 2, ring 1 at rank 3.
  const std::vector<TopoGraph> gb = commGraphs(twoHosts(b, 0xb), b.topo, paths);
  ASSERT_EQ(gb.size(), 2u);
  ASSERT_EQ(gb[0].channels.size(), 3u);
  EXPECT_EQ(gb[0].channels[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(gb[0].channels[1].gpus, (std::vector<int>{1, 0}));
  expectSameGraphs(roundTrip(gb), gb);
}

TEST(GraphDump, OneHostHasRingsOnlyAndNoNics) {
  TopoBuilder b = topotest::dgx1();
  TopoPaths paths;
  ASSERT_EQ(computePaths(b.topo, &paths), ncclSuccess) << pendingError();
  CommGraphInput in;
  in.hostOf.assign(8, 0x1);
  in.host = 0x1;
  in.rankGpu = b.gpus;
  in.ringOrders = {{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}};
  in.nChannels = 4;
  in.treeChannels = 4;
  const std::vector<TopoGraph> g = commGraphs(in, b.topo, paths);
  ASSERT_EQ(g.size(), 1u);  // one host: no trees
  ASSERT_EQ(g[0].channels.size(), 4u);
  for (int c = 0; c < 4; ++c) {
    const GraphChannel& ch = g[0].channels[static_cast<size_t>(c)];
    EXPECT_EQ(ch.netIn, -1);
    EXPECT_EQ(ch.netOut, -1);
    std::vector<int> want = in.ringOrders[static_cast<size_t>(c % 2)];  // CUDA ordinal = rank here
    EXPECT_EQ(ch.gpus, want) << "channel " << c;
  }
  expectSameGraphs(roundTrip(g), g);
}

}  // namespace
}  // namespace braid
