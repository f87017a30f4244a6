// The braid_topo tool as a black box, on the canned machines of tests/topology: the report's paths, rings and NICs,
// the Graphviz output, the XML it writes, and its answers to bad arguments. The tool is the braid_topo beside this
// test's binary (both build into bin/); without it the tests skip.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "core/result.h"
#include "topology/topo_xml.h"
#include "topology/topology.h"
#include "topology_files.h"

namespace braid {
namespace {

std::string toolPath() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  std::string dir(self, n);
  dir = dir.substr(0, dir.find_last_of('/'));
  return dir + "/braid_topo";
}

struct ToolRun {
  int status = -1;
  std::string out, err;
};

// Runs the tool with `args` (already shell-quoted where needed) and `env` before it.
ToolRun runTool(const std::string& args, const std::string& env = "") {
  // Names of this process's own: ctest runs the cases of this file as processes side by side.
  const std::string tag = ::testing::TempDir() + "braid_topo_" + std::to_string(getpid());
  const std::string out = tag + "_out.txt", err = tag + "_err.txt";
  const std::string cmd = env + " '" + toolPath() + "' " + args + " >'" + out + "' 2>'" + err + "'";
  ToolRun r;
  const int st = std::system(cmd.c_str());
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = readText(out);
  r.err = readText(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

std::string canned(const std::string& name) { return "--file '" + topologyDir() + "/" + name + "'"; }

class BraidTopo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(toolPath().c_str(), X_OK) != 0) GTEST_SKIP() << "no braid_topo at " << toolPath();
  }
};

TEST_F(BraidTopo, ReportsPathsRingsAndNicsOfADgx1) {
  ToolRun r = runTool(canned("dgx1_v100.xml"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("8 GPUs, 4 NICs (4 network ports), 2 CPUs, 4 PCI switches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  GPU0     <-> GPU3     NVL 40\n"), std::string::npos) << r.out;
  // GPU0's row: NVL to its NVLink peers, NVB to 5 6 7, PIX to the NIC on its switch, SYS across the sockets.
  EXPECT_NE(r.out.find("    GPU0        LOC     NVL/20     NVL/20     NVL/40     NVL/40     NVB/20     NVB/20     "
                       "NVB/40     PIX/12     PHB/12      SYS/6      SYS/6\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Rings for 8 ranks: 6 rings at 20 GB/s each, worst hop NVL\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  ring  0: 0 3 2 1 5 6 7 4   (hops NVL NVL NVL NVL NVL NVL NVL NVL)\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  rank  5 on GPU5   NET2 mlx5_2 (PIX, 12 GB/s)\n"), std::string::npos) << r.out;
}

// What a communicator runs: each channel's ring, each hop's transport by NCCL_P2P_LEVEL's default for the CPUs (PXB
// on the DGX-1's Intel CPUs, SYS on the NV18 box's), channels from the slowest hop: as many per ring as that hop
// feeds where there are several (the DGX-1's four cycles: 4 each, its single NVLinks at 20 GB/s).
TEST_F(BraidTopo, SaysWhatACommunicatorRuns) {
  ToolRun dgx1 = runTool(canned("dgx1_v100.xml"));
  ASSERT_EQ(dgx1.status, 0) << dgx1.err;
  EXPECT_NE(dgx1.out.find("  P2P up to PXB\n  channels: 16 (4 per ring: the slowest hop of any ring 20 GB/s;"),
            std::string::npos)
      << dgx1.out;
  EXPECT_NE(dgx1.out.find("    hops: 0->3 P2P, 3->2 P2P, 2->1 P2P, 1->5 P2P, 5->6 P2P, 6->7 P2P, 7->4 P2P, 4->0 P2P\n"),
            std::string::npos)
      << dgx1.out;
  ToolRun mesh = runTool(canned("h200_nv18x4.xml"));
  ASSERT_EQ(mesh.status, 0) << mesh.err;
  EXPECT_NE(mesh.out.find("  hops: 0->1 P2P, 1->2 P2P, 2->3 P2P, 3->0 P2P\n  channels: 64 (slowest hop 370.8 GB/s"),
            std::string::npos)
      << mesh.out;
  // Bridged pairs on Intel CPUs: the hops between pairs cross the host bridge (PHB), beyond PXB: shared memory. The
  // search runs the cycle both ways.
  ToolRun pairs = runTool(canned("nvbridge_pairs.xml"));
  ASSERT_EQ(pairs.status, 0) << pairs.err;
  EXPECT_NE(pairs.out.find("  channels: 64 (a hop over shared memory"), std::string::npos) << pairs.out;
  EXPECT_NE(pairs.out.find("    hops: 0->1 P2P, 1->2 SHM, 2->3 P2P, 3->0 SHM\n"), std::string::npos) << pairs.out;
  EXPECT_NE(pairs.out.find("    hops: 0->3 SHM, 3->2 P2P, 2->1 SHM, 1->0 P2P\n"), std::string::npos) << pairs.out;
  // NCCL_P2P_LEVEL moves the line; a malformed one is refused.
  ToolRun sys = runTool(canned("nvbridge_pairs.xml"), "NCCL_P2P_LEVEL=SYS");
  EXPECT_NE(sys.out.find("  channels: 10 (5 per ring: the slowest hop of any ring 24 GB/s"), std::string::npos)
      << sys.out;
  EXPECT_NE(sys.out.find("    hops: 0->1 P2P, 1->2 P2P, 2->3 P2P, 3->0 P2P\n"), std::string::npos) << sys.out;
  ToolRun bad = runTool(canned("nvbridge_pairs.xml"), "NCCL_P2P_LEVEL=FAST");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("NCCL_P2P_LEVEL"), std::string::npos) << bad.err;
}

// Several distinct rings: a communicator runs channel c on ring c % nRings (the DGX-1's four cycles; --ring-order's
// rings), each ring's channels and hops shown, the channel count from the slowest hop of any ring. A malformed order
// is refused, naming it.
TEST_F(BraidTopo, ShowsEachChannelsRingWhereTheyDiffer) {
  ToolRun dgx1 = runTool(canned("dgx1_v100.xml"));
  ASSERT_EQ(dgx1.status, 0) << dgx1.err;
  EXPECT_NE(dgx1.out.find("runs channel c on ring c % 4:\n"), std::string::npos) << dgx1.out;
  EXPECT_NE(dgx1.out.find("  channels 3, 7, ...: ring 3: "), std::string::npos) << dgx1.out;
  EXPECT_EQ(dgx1.out.find("not run"), std::string::npos) << dgx1.out;
  ToolRun two = runTool(canned("dgx1_v100.xml") + " --ring-order '0,3,2,1,5,6,7,4|0,1,2,3,4,5,6,7|0,3,2,1,5,6,7,4'");
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("runs channel c on ring c % 2 of BRAID_RING_ORDER=\"0,3,2,1,5,6,7,4|0,1,2,3,4,5,6,7|"
                         "0,3,2,1,5,6,7,4\":\n  P2P up to PXB\n"),
            std::string::npos)
      << two.out;
  EXPECT_NE(two.out.find("  channels 0, 2, ...: ring 0: 0 3 2 1 5 6 7 4   (hops NVL NVL NVL NVL NVL NVL NVL NVL)\n"
                         "    hops: 0->3 P2P, 3->2 P2P"),
            std::string::npos)
      << two.out;
  EXPECT_NE(two.out.find("  channels 1, 3, ...: ring 1: 0 1 2 3 4 5 6 7   (hops NVL NVL NVL NVB NVL NVL NVL NVB)\n"
                         "    hops: 0->1 P2P"),
            std::string::npos)
      << two.out;
  // The trees follow the first ring.
  EXPECT_NE(two.out.find("  tree 0:  root<-0->3  2<-1->5  3<-2->1  0<-3->2"), std::string::npos) << two.out;
  // One ring named: no per-channel section.
  ToolRun one = runTool(canned("h200_nv18x4.xml") + " --ring-order 3,2,1,0");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("runs ring 0 of BRAID_RING_ORDER=\"3,2,1,0\" on every channel:\n"), std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("  hops: 3->2 P2P, 2->1 P2P, 1->0 P2P, 0->3 P2P\n"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("channels 0, "), std::string::npos) << one.out;
  ToolRun bad = runTool(canned("h200_nv18x4.xml") + " --ring-order '0,1,2,3|0,1,1,3'");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--ring-order: BRAID_RING_ORDER=\"0,1,1,3\": rank 1 appears twice"), std::string::npos)
      << bad.err;
}

// The all-reduce trees: one machine gives two chains in ring order (reversed in tree 1); with --nodes 3, tree 0's
// root is machine 1's chain head, machine 0 hangs off that head and machine 2 off its tail, and tree 1 swaps
// which machines are interior.
TEST_F(BraidTopo, PrintsTheAllReduceTreesOfKMachines) {
  ToolRun one = runTool(canned("h200_nv18x4.xml"));
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("  tree 0:  root<-0->1  0<-1->2  1<-2->3  2<-3\n  tree 1:  1<-0  2<-1->0  3<-2->1  root<-3->2\n"),
            std::string::npos)
      << one.out;
  ToolRun three = runTool(canned("h200_nv18x4.xml") + " --nodes 3");
  ASSERT_EQ(three.status, 0) << three.err;
  EXPECT_NE(three.out.find("over 3 machines x 4 ranks"), std::string::npos) << three.out;
  EXPECT_NE(three.out.find("  tree 0:  4<-0->1  0<-1->2  1<-2->3  2<-3  root<-4->5,0  4<-5->6  5<-6->7  6<-7->8  "
                           "7<-8->9  8<-9->10  9<-10->11  10<-11\n"),
            std::string::npos)
      << three.out;
  EXPECT_NE(three.out.find("root<-3->2,11"), std::string::npos) << three.out;
  EXPECT_EQ(runTool("--nodes 0").status, 2);
}

TEST_F(BraidTopo, RanksPickTheFirstGpus) {
  ToolRun r = runTool(canned("pcie_2sw.xml") + " --ranks 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Rings for 2 ranks: 1 ring at 24 GB/s each, worst hop PIX\n  ring  0: 0 1   (hops PIX PIX)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  rank  0 on GPU0   none\n"), std::string::npos) << r.out;
}

TEST_F(BraidTopo, DotDrawsNvlinksBoldAndTheRingOrder) {
  ToolRun r = runTool(canned("nvbridge_pairs.xml") + " --dot");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("graph topology {\n", 0), 0u) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n");
  EXPECT_EQ(r.out.find("Nodes:"), std::string::npos) << "the report goes only without --dot";
  EXPECT_NE(r.out.find("label=\"GPU0\\n0000:17:00.0\\nsm 86\\nrank 0\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[label=\"NVL 48\", penwidth=3, color=forestgreen"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("color=red, fontcolor=red, label=\"ring 0: 1\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shape=box3d"), std::string::npos) << r.out;  // the CPU
}

TEST_F(BraidTopo, WritesTheTopologyAndGraphXml) {
  const std::string dump = ::testing::TempDir() + "braid_topo_dump_" + std::to_string(getpid()) + ".xml";
  const std::string graph = ::testing::TempDir() + "braid_topo_graph_" + std::to_string(getpid()) + ".xml";
  ToolRun r = runTool(canned("dgx_h100.xml") + " --dump '" + dump + "' --graph '" + graph + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  Topology again, orig;
  ASSERT_EQ(loadTopologyFile(dump, &again), ncclSuccess) << pendingError();
  ASSERT_EQ(loadTopologyFile(topologyDir() + "/dgx_h100.xml", &orig), ncclSuccess) << pendingError();
  EXPECT_EQ(again.nodes.size(), orig.nodes.size());
  XmlNode g;
  ASSERT_EQ(readXmlFile(graph, &g), ncclSuccess) << pendingError();
  EXPECT_EQ(g.name, "graphs");
  ASSERT_EQ(g.children.size(), 1u);
  EXPECT_EQ(*g.children[0].attr("typeintra"), "NVL");
  EXPECT_EQ(*g.children[0].attr("nchannels"), std::to_string(g.children[0].children.size()));
  ASSERT_FALSE(g.children[0].children.empty());
  EXPECT_EQ(g.children[0].children[0].children.size(), 10u);  // net, 8 GPUs, net
}

TEST_F(BraidTopo, BadArgumentsGetTheUsage) {
  ToolRun help = runTool("-h");
  EXPECT_EQ(help.status, 0);
  EXPECT_EQ(help.out.rfind("usage: braid_topo", 0), 0u) << help.out;
  for (const char* args : {"--bogus", "--ranks 0", "--ranks x", "--file", "--max-rings=-1", "--dot=1"}) {
    ToolRun r = runTool(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find("usage: braid_topo"), std::string::npos) << args << ": " << r.err;
  }
  ToolRun many = runTool(canned("pcie_2sw.xml") + " --ranks 5");
  EXPECT_EQ(many.status, 1);
  EXPECT_NE(many.err.find("--ranks 5, but"), std::string::npos) << many.err;
  EXPECT_NE(many.err.find("has 4 GPUs"), std::string::npos) << many.err;
  ToolRun missing = runTool("--file /nonexistent/topo.xml");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("/nonexistent/topo.xml"), std::string::npos) << missing.err;
  // Rendering needs Graphviz: with nothing on PATH the tool says so and fails.
  ToolRun noDot = runTool(canned("pcie_2sw.xml") + " --png /dev/null", "PATH=/nonexistent");
  EXPECT_EQ(noDot.status, 1);
  EXPECT_NE(noDot.err.find("needs Graphviz's dot on PATH"), std::string::npos) << noDot.err;
}

}  // namespace
}  // namespace braid
