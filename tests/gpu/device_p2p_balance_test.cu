// GPU test, one process driving 2 GPUs: balanced point-to-point transfers (p2p_plan.h: p2pBalanced), whose sending
// CTAs claim chunks of the whole transfer instead of a fixed share each. Every byte of each transfer checked against
// poisoned outputs (and the byte after it), each way at once: one 64 MiB + 5 transfer (the default threshold); a group
// of 80 transfers each way under BRAID_P2P_BALANCE_BYTES=65536, past the launch's kP2pMaxBalanced claim slots, so the
// rest deal their chunks fixed; both under CTA bounds of 24 (half the bound each way) and 8 (each ring channel's send
// and receive on two warp groups of one CTA), and over SHM (never balanced). Each case runs twice on the streams and
// then three times as a replayed CUDA graph, new inputs each time: a claim counter left non-zero by one launch would
// leave the next one's output unwritten. And a 5.1 GB transfer whose close once read as a stop. Skips with a reason
// where fewer than 2 GPUs exist.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu_harness.h"
#include "gpu_pattern.cuh"

using namespace gpu_test;

namespace {

void runCase(P2pTransfers& t, const std::string& what) {
  Pair p;
  ASSERT_TRUE(p.init());
  ASSERT_TRUE(t.alloc());
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(t.prepare(round));
    ASSERT_TRUE(t.post(p)) << what;
    bool hung = false;
    ASSERT_TRUE(finishPair(p, what, &hung)) << "round " << round;
    ASSERT_NO_FATAL_FAILURE(t.check(round, what + ", on the streams"));
  }
  cudaGraph_t graph[2];
  cudaGraphExec_t exec[2];
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaStreamBeginCapture(p.stream[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
  }
  const bool posted = t.post(p);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaStreamEndCapture(p.stream[r], &graph[r]), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
  }
  ASSERT_TRUE(posted) << what << ": the group failed inside the capture";
  for (int round = 2; round < 5; ++round) {
    ASSERT_TRUE(t.prepare(round));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaGraphLaunch(exec[r], p.stream[r]), cudaSuccess);
    }
    bool hung = false;
    ASSERT_TRUE(finishPair(p, what + ", graph replay", &hung)) << "round " << round;
    ASSERT_NO_FATAL_FAILURE(t.check(round, what + ", graph replay"));
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    cudaGraphExecDestroy(exec[r]);
    cudaGraphDestroy(graph[r]);
  }
  p.destroy();
}

TEST(DeviceP2pBalance, EveryByteOnStreamsAndInGraphs) {
  NEED_GPUS(2);
  std::vector<size_t> many;
  for (int k = 0; k < 80; ++k) many.push_back((size_t(2) << 20) + 3 + 4096 * static_cast<size_t>(k % 7));
  struct Case {
    const char* bound;
    const char* env;  // NAME=VALUE or ""
  };
  for (const Case& c : {Case{"", ""}, Case{"24", ""}, Case{"8", ""}, Case{"", "NCCL_P2P_DISABLE=1"}}) {
    const std::string label = std::string("NCCL_MAX_CTAS=") + c.bound + " " + c.env;
    SCOPED_TRACE(label);
    EnvScope env;
    if (*c.bound) env.set("NCCL_MAX_CTAS", c.bound);
    if (*c.env) {
      const std::string kv = c.env;
      env.set(kv.substr(0, kv.find('=')).c_str(), kv.substr(kv.find('=') + 1).c_str());
    }
    {
      P2pTransfers one({(size_t(64) << 20) + 5});
      ASSERT_NO_FATAL_FAILURE(runCase(one, label + " one 64 MiB + 5 transfer each way"));
    }
    {
      EnvScope low;
      low.set("BRAID_P2P_BALANCE_BYTES", "65536");
      P2pTransfers group(many);
      ASSERT_NO_FATAL_FAILURE(runCase(group, label + " 80 transfers of ~2 MiB each way (past the claim slots)"));
    }
  }
}

// A balanced transfer whose close word's fold once equalled a receiving CTA's stop word (dev_work.h: devBalFold):
// 5472764716 bytes each way, unbounded (64 channels, 256 KiB chunks), whose receivers then read their close as a stop
// and skipped its head post, so the next transfer on those connections hung or failed. Two rounds on the streams,
// every byte checked: the second runs on the connections the first closed.
TEST(DeviceP2pBalance, CloseWhoseFoldOnceReadAsAStop) {
  NEED_GPUS(2);
  P2pTransfers t({size_t(5472764716)});
  Pair p;
  ASSERT_TRUE(p.init());
  ASSERT_TRUE(t.alloc());
  for (int round = 0; round < 2; ++round) {
    const std::string what = "5472764716 bytes each way, round " + std::to_string(round);
    ASSERT_TRUE(t.prepare(round));
    ASSERT_TRUE(t.post(p)) << what;
    bool hung = false;
    ASSERT_TRUE(finishPair(p, what, &hung));
    ASSERT_NO_FATAL_FAILURE(t.check(round, what));
  }
  p.destroy();
}

}  // namespace
