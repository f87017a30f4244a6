// NCCL tuner plugins (src/tuner/tuner_plugin.h) against the tests' own (tests/tuner_plugin, each table version):
// finding the library as NCCL does, a communicator's context, the cost table the plugin sees and the entry Braid takes
// back from it, and the GPU planner (coll_plan.h) running what the plugin picks within what Braid can run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "coll_plan_fixtures.h"
#include "common/env_guard.h"
#include "core/result.h"
#include "runtime/gpu/coll_plan.h"
#include "tuner/tuner_plugin.h"

using namespace braid;
using braid_test::allReduce;
using braid_test::EnvGuard;
using braid_test::nvlinkPair;

namespace {

std::string pluginPath(int v) {
  return std::string(BRAID_TEST_TUNER_PLUGIN_DIR) + "/libnccl-tuner-braidtest-v" + std::to_string(v) + ".so";
}

const TunerPluginLib* load(int v) {
  std::string why;
  const TunerPluginLib* t = loadTunerPlugin(pluginPath(v), {}, &why);
  EXPECT_NE(t, nullptr) << why;
  return t;
}

// A record file for the plugin (BRAID_TEST_TUNER_RECORD), read back line by line.
struct Record {
  std::string path = "/tmp/braid_tuner_record_" + std::to_string(getpid());
  EnvGuard guard{"BRAID_TEST_TUNER_RECORD", path.c_str()};
  Record() { std::remove(path.c_str()); }
  ~Record() { std::remove(path.c_str()); }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);) out.push_back(l);
    return out;
  }
};

// Costs as the planner offers them: Ring on every protocol, Tree on Simple, the rest not offered.
void offered(float (*c)[tunerabi::kNumProtos]) {
  for (int a = 0; a < tunerabi::kNumAlgos; ++a)
    for (int p = 0; p < tunerabi::kNumProtos; ++p) c[a][p] = tunerabi::kIgnore;
  c[tunerabi::kAlgoRing][0] = 5;   // LL
  c[tunerabi::kAlgoRing][1] = 7;   // LL128
  c[tunerabi::kAlgoRing][2] = 9;   // Simple
  c[tunerabi::kAlgoTree][2] = 11;  // Simple
}

}  // namespace

TEST(TunerPlugin, LoadsEachTableVersion) {
  for (int v = 2; v <= 6; ++v) {
    const TunerPluginLib* t = load(v);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->version, v);
    EXPECT_EQ(t->name, "BraidTestTuner");
    EXPECT_EQ(t->library, pluginPath(v));
  }
}

// NCCL's search: the names given, then the network plugin's libraries; "none" loads nothing; a library without a
// tuner table is passed over, saying why.
TEST(TunerPlugin, SearchFallsThroughToTheNetworkPluginsLibrary) {
  std::string why;
  const std::string netOnly = std::string(BRAID_TEST_TUNER_PLUGIN_DIR) + "/../net_plugin/libnccl-net-braidtest-v10.so";
  const TunerPluginLib* t = loadTunerPlugin("no-such-tuner", {netOnly, pluginPath(5)}, &why);
  ASSERT_NE(t, nullptr) << why;
  EXPECT_EQ(t->version, 5);
  EXPECT_EQ(loadTunerPlugin("none", {pluginPath(5)}, &why), nullptr);
  EXPECT_EQ(loadTunerPlugin("no-such-tuner", {netOnly}, &why), nullptr);
  EXPECT_NE(why.find("libnccl-tuner-no-such-tuner.so"), std::string::npos) << why;
  EXPECT_NE(why.find("exports none of ncclTunerPlugin"), std::string::npos) << why;
}

// Every table version: init with the communicator's size, the table as offered (-1 entries left out), the plugin's
// pick and channel count back, a pick Braid does not offer ignored, a failed call reported, finalize at the end.
TEST(TunerPlugin, EachVersionPicksAnOfferedEntry) {
  for (int v = 2; v <= 6; ++v) {
    SCOPED_TRACE("v" + std::to_string(v));
    Record rec;
    {
      auto comm = TunerPluginComm::open(load(v), 8, 2, 0x1234);
      ASSERT_NE(comm, nullptr);
      float c[tunerabi::kNumAlgos][tunerabi::kNumProtos];
      int a = -1, p = -1, nc = -1;
      {
        EnvGuard g1("BRAID_TEST_TUNER_PICK", "tree,simple");
        EnvGuard g2("BRAID_TEST_TUNER_CHANNELS", "3");
        offered(c);
        ASSERT_EQ(ncclSuccess, comm->choose(tunerabi::kFuncAllReduce, 4096, 1, c, &a, &p, &nc));
        EXPECT_EQ(a, tunerabi::kAlgoTree);
        EXPECT_EQ(p, 2);
        EXPECT_EQ(nc, 3);
      }
      {
        // Not offered: a table plugin raised every offered entry, so the cheapest of those stands; v2's pick alone
        // changes nothing, so it is no opinion.
        EnvGuard g1("BRAID_TEST_TUNER_PICK", "nvls,simple");
        offered(c);
        ASSERT_EQ(ncclSuccess, comm->choose(tunerabi::kFuncAllGather, 65536, 1, c, &a, &p, &nc));
        if (v == 2) EXPECT_EQ(a, -1);
        else EXPECT_TRUE(a == tunerabi::kAlgoRing || a == tunerabi::kAlgoTree) << a;
        EXPECT_EQ(nc, 0);
      }
      {
        offered(c);  // no pick: the table comes back as it went, no opinion
        ASSERT_EQ(ncclSuccess, comm->choose(tunerabi::kFuncReduce, 8, 1, c, &a, &p, &nc));
        EXPECT_EQ(a, -1);
        EXPECT_EQ(p, -1);
      }
      {
        EnvGuard g("BRAID_TEST_TUNER_FAIL", "call");
        offered(c);
        EXPECT_EQ(ncclInternalError, comm->choose(tunerabi::kFuncAllReduce, 8, 1, c, &a, &p, &nc));
      }
    }
    const std::vector<std::string> l = rec.lines();
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(l[0], "init " + std::to_string(v) + " 8 2");
    if (v == 2) {
      EXPECT_EQ(l[1], "call 4 4096 1");
    } else {
      EXPECT_EQ(l[1], "call 4 4096 1 0:2=11 1:0=5 1:1=7 1:2=9");  // the entries offered, nothing else
    }
    EXPECT_EQ(l[2].rfind("call 2 65536 1", 0), 0u) << l[2];
    EXPECT_EQ(l[5], "fini");
  }
}

TEST(TunerPlugin, AFailedInitLeavesNoContext) {
  EnvGuard g("BRAID_TEST_TUNER_FAIL", "init");
  for (int v : {2, 5}) EXPECT_EQ(TunerPluginComm::open(load(v), 4, 1, 1), nullptr) << v;
}

// The planner asks the plugin with the tuner on and runs its pick: a small all-reduce that the model runs on LL or
// LL128 runs Simple when the plugin says Ring/Simple, on the plugin's channel count; a plugin that hands the table
// back unchanged leaves the model's plan; a plugin whose call fails fails the collective.
TEST(TunerPlugin, ThePlannerRunsThePick) {
  std::vector<char> mem(1 << 20);
  const OpDesc small = allReduce(256, mem.data(), mem.data() + (512 << 10));
  const CollPlan own = CollPlanner(nvlinkPair()).plan(small, braid_test::kAllProtos);
  ASSERT_NE(own.proto, Proto::Simple);
  auto comm = TunerPluginComm::open(load(4), 2, 1, 7);
  ASSERT_NE(comm, nullptr);
  CollPlanFacts f = nvlinkPair();
  f.tunerPlugin = comm.get();
  {
    EnvGuard g1("BRAID_TEST_TUNER_PICK", "ring,simple");
    EnvGuard g2("BRAID_TEST_TUNER_CHANNELS", "3");
    const CollPlan p = CollPlanner(f).plan(small, braid_test::kAllProtos);
    EXPECT_EQ(p.proto, Proto::Simple);
    EXPECT_EQ(p.nChannels, 3);
  }
  {
    EnvGuard g1("BRAID_TEST_TUNER_PICK", "ring,ll");
    EXPECT_EQ(CollPlanner(f).plan(small, braid_test::kAllProtos).proto, Proto::LL);
  }
  {
    const CollPlan p = CollPlanner(f).plan(small, braid_test::kAllProtos);  // no pick: the model's plan
    EXPECT_EQ(p.proto, own.proto);
    EXPECT_EQ(p.nChannels, own.nChannels);
    EXPECT_EQ(p.error, ncclSuccess);
  }
  {
    EnvGuard g1("BRAID_TEST_TUNER_FAIL", "call");  // the collective fails, naming the plugin, on every call
    CollPlanner planner(f);
    for (int k = 0; k < 2; ++k) {
      clearPendingError();
      EXPECT_EQ(planner.plan(small, braid_test::kAllProtos).error, ncclInternalError) << k;
    }
    const std::string msg = pendingError();
    EXPECT_NE(msg.find("tuner plugin BraidTestTuner (v4) failed (3) on AllReduce of 1024 bytes"), std::string::npos)
        << msg;
  }
  // With the tuner off (BRAID_DEVICE_TUNER=0) the plugin is not asked.
  f.tunerOn = false;
  Record rec;
  CollPlanner(f).plan(small, braid_test::kAllProtos);
  EXPECT_TRUE(rec.lines().empty());
}

// Across nodes the table offers the tree: a plugin picking Tree/Simple gets the tree all-reduce, on its channels
// within the trees'.
TEST(TunerPlugin, APickOfTheTreeRunsTheTree) {
  std::vector<char> mem(1 << 20);
  auto comm = TunerPluginComm::open(load(6), 4, 2, 9);
  ASSERT_NE(comm, nullptr);
  CollPlanFacts f = nvlinkPair();
  f.nranks = 4;
  f.transport = TransportClass::NetSocket;
  f.treeChannels = 4;
  f.nNodes = 2;
  f.tunerPlugin = comm.get();
  EnvGuard g1("BRAID_TEST_TUNER_PICK", "tree,simple");
  EnvGuard g2("BRAID_TEST_TUNER_CHANNELS", "9");
  const OpDesc op = allReduce(1 << 16, mem.data(), mem.data() + (512 << 10));
  const CollPlan p = CollPlanner(f).plan(op, braid_test::kAllProtos);
  EXPECT_EQ(p.devColl, kDevAllReduceTree);
  EXPECT_EQ(p.proto, Proto::Simple);
  EXPECT_EQ(p.nChannels, 4);  // the plugin's 9, within the 4 tree channels
}

// More than two ranks: the one-shot over every peer runs by its size rule before the model is asked, and a plugin's
// pick keeps it only where it is Ring/LL (the row Braid's one-shots run in); with no plugin it runs also where the
// model has no LL row for the path (P2P over PCIe).
TEST(TunerPlugin, TheOneShotOverPeersFollowsARingLlPick) {
  std::vector<char> mem(1 << 20);
  CollPlanFacts f = nvlinkPair();
  f.nranks = 4;
  f.transport = TransportClass::P2pPcie;
  f.oneShotPeersBytes = 65536;
  f.oneShotPeerChannels = 8;
  const OpDesc op = allReduce(1024, mem.data(), mem.data() + (512 << 10));
  EXPECT_EQ(CollPlanner(f).plan(op, braid_test::kAllProtos).devColl, kDevAllReduceOneShotPeers);
  f.transport = TransportClass::P2pNvlink;
  auto comm = TunerPluginComm::open(load(3), 4, 1, 3);
  ASSERT_NE(comm, nullptr);
  f.tunerPlugin = comm.get();
  {
    EnvGuard g("BRAID_TEST_TUNER_PICK", "ring,ll");
    EXPECT_EQ(CollPlanner(f).plan(op, braid_test::kAllProtos).devColl, kDevAllReduceOneShotPeers);
  }
  {
    EnvGuard g("BRAID_TEST_TUNER_PICK", "ring,simple");
    const CollPlan p = CollPlanner(f).plan(op, braid_test::kAllProtos);
    EXPECT_EQ(p.devColl, kDevAllReduce);
    EXPECT_EQ(p.proto, Proto::Simple);
  }
  EXPECT_EQ(CollPlanner(f).plan(op, braid_test::kAllProtos).devColl, kDevAllReduceOneShotPeers);  // no opinion
}
