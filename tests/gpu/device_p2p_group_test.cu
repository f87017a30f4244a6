// GPU test, one process driving 2 GPUs: groups of more point-to-point transfers than one launch's kernel
// parameters hold (kMaxP2pBlocks blocks, dev_work.h). Such a group still runs as one launch, its lists in
// device memory (p2p_table.h): hundreds of sends and receives each way, sizes across the LL, mid and large
// cuts, every byte checked against poisoned outputs (and the byte after each transfer); the same group
// captured into a CUDA graph and replayed after another group of its size rewrote the table's buffer and after a
// larger group outgrew it; small groups (parameter tiers) before and after; gather and scatter grouped with
// transfers the other way under CTA bounds; NCCL_MAX_P2P_NCHANNELS bounding point-to-point launches only; two groups
// captured on forked streams of one graph run in turn, another graph's capture between them; two graphs' replays and
// an uncaptured group on three streams run in turn (graph mixing). Skips with a reason where fewer than 2 GPUs exist.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpu_harness.h"
#include "gpu_pattern.cuh"

using namespace gpu_test;

namespace {

// Transfer k's size: LL-cut (64 KiB, 1027 B, 5 B, 4160 B), mid-cut (200 KiB) and large-cut (1 MiB) transfers.
size_t transferBytes(int k) {
  static const size_t s[] = {size_t(64) << 10, 1027, size_t(200) << 10, 5, size_t(1) << 20, 4160};
  return s[k % 6];
}

// n transfers' sizes, cycling through transferBytes.
std::vector<size_t> groupSizes(int n) {
  std::vector<size_t> v;
  for (int k = 0; k < n; ++k) v.push_back(transferBytes(k));
  return v;
}

// Posts, waits (bounded) and checks one round of `g`.
void runRound(Pair& p, P2pTransfers& g, int round, const std::string& what) {
  ASSERT_TRUE(g.prepare(round));
  ASSERT_TRUE(g.post(p)) << what;
  bool hung = false;
  ASSERT_TRUE(finishPair(p, what, &hung));
  ASSERT_NO_FATAL_FAILURE(g.check(round, what));
}

TEST(DeviceP2pGroup, ManyTransfersRunAsOneLaunchOnStreamsAndInGraphs) {
  NEED_GPUS(2);
  for (const char* variant : {"P2P", "SHM"}) {
    SCOPED_TRACE(variant);
    EnvScope env;
    if (std::string(variant) == "SHM") env.set("NCCL_P2P_DISABLE", "1");
    Pair p;
    ASSERT_TRUE(p.init());
    // 240 transfers each way: ~2,000 blocks per direction, three times a launch's parameter block; 400 more
    // blocks' worth in the larger group, which outgrows the table's buffer.
    P2pTransfers small(groupSizes(2)), big(groupSizes(240)), other(groupSizes(240)), bigger(groupSizes(400));
    ASSERT_TRUE(small.alloc() && big.alloc() && other.alloc() && bigger.alloc());
    ASSERT_NO_FATAL_FAILURE(runRound(p, small, 0, "2 transfers each way, before"));
    ASSERT_NO_FATAL_FAILURE(runRound(p, big, 1, "240 transfers each way"));
    ASSERT_NO_FATAL_FAILURE(runRound(p, big, 2, "240 transfers each way, again"));

    // The same group captured on both ranks' streams.
    cudaGraph_t graph[2];
    cudaGraphExec_t exec[2];
    ASSERT_TRUE(big.prepare(3));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaStreamBeginCapture(p.stream[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
    }
    ASSERT_TRUE(big.post(p));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaStreamEndCapture(p.stream[r], &graph[r]), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
    }
    // Replays after an eager group of the same size rewrote the buffer with other pointers (each replay must
    // fill it again), and after a larger one grew it (the graph keeps the outgrown buffer).
    auto replay = [&](int round, const char* what) {
      ASSERT_TRUE(big.prepare(round));
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        ASSERT_EQ(cudaGraphLaunch(exec[r], p.stream[r]), cudaSuccess);
      }
      bool hung = false;
      ASSERT_TRUE(finishPair(p, what, &hung)) << "round " << round;
      ASSERT_NO_FATAL_FAILURE(big.check(round, what));
    };
    ASSERT_NO_FATAL_FAILURE(runRound(p, other, 4, "another 240 transfers each way (the same table size)"));
    ASSERT_NO_FATAL_FAILURE(replay(5, "graph replay after another group used the table"));
    ASSERT_NO_FATAL_FAILURE(runRound(p, bigger, 6, "400 transfers each way (a larger table)"));
    ASSERT_NO_FATAL_FAILURE(replay(7, "graph replay after the table grew"));
    ASSERT_NO_FATAL_FAILURE(replay(8, "graph replay again"));
    ASSERT_NO_FATAL_FAILURE(runRound(p, small, 9, "2 transfers each way, after"));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      cudaGraphExecDestroy(exec[r]);
      cudaGraphDestroy(graph[r]);
    }
    p.destroy();
  }
}

// The table's first buffer allocated while both ranks' streams capture in global mode (the strictest: no
// unsafe call from any thread); the graph then replays twice, inputs changed between.
TEST(DeviceP2pGroup, TableAllocatedInsideAGlobalModeCapture) {
  NEED_GPUS(2);
  Pair p;
  ASSERT_TRUE(p.init());
  P2pTransfers g(groupSizes(300));
  ASSERT_TRUE(g.alloc());
  ASSERT_TRUE(g.prepare(0));
  cudaGraph_t graph[2];
  cudaGraphExec_t exec[2];
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaStreamBeginCapture(p.stream[r], cudaStreamCaptureModeGlobal), cudaSuccess);
  }
  const bool posted = g.post(p);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaStreamEndCapture(p.stream[r], &graph[r]), cudaSuccess);
  }
  ASSERT_TRUE(posted) << "the group failed inside the capture";
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
  }
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(g.prepare(round));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaGraphLaunch(exec[r], p.stream[r]), cudaSuccess);
    }
    bool hung = false;
    ASSERT_TRUE(finishPair(p, "global-mode graph replay", &hung)) << "round " << round;
    ASSERT_NO_FATAL_FAILURE(g.check(round, "global-mode graph replay"));
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    cudaGraphExecDestroy(exec[r]);
    cudaGraphDestroy(graph[r]);
  }
  p.destroy();
}

// Whether the kernel nodes of `g` form one chain (every two joined by a path of edges, one way or the other): a
// communicator's launches captured into it never run at once. *kernels counts them.
bool kernelsInOneChain(cudaGraph_t g, size_t* kernels) {
  size_t n = 0, m = 0;
  GT_CUDA(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  GT_CUDA(cudaGraphGetNodes(g, nodes.data(), &n));
#if CUDART_VERSION >= 13000
  GT_CUDA(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &m));
  std::vector<cudaGraphNode_t> from(m), to(m);
  GT_CUDA(cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &m));
#else
  GT_CUDA(cudaGraphGetEdges(g, nullptr, nullptr, &m));
  std::vector<cudaGraphNode_t> from(m), to(m);
  GT_CUDA(cudaGraphGetEdges(g, from.data(), to.data(), &m));
#endif
  std::map<cudaGraphNode_t, size_t> index;
  for (size_t i = 0; i < n; ++i) index[nodes[i]] = i;
  std::vector<std::vector<size_t>> next(n);
  for (size_t e = 0; e < m; ++e) next[index[from[e]]].push_back(index[to[e]]);
  auto reaches = [&](size_t a, size_t b) {
    std::vector<char> seen(n, 0);
    std::vector<size_t> todo{a};
    while (!todo.empty()) {
      const size_t x = todo.back();
      todo.pop_back();
      if (x == b) return true;
      for (size_t y : next[x])
        if (!seen[y]) seen[y] = 1, todo.push_back(y);
    }
    return false;
  };
  std::vector<size_t> ks;
  for (size_t i = 0; i < n; ++i) {
    cudaGraphNodeType t;
    GT_CUDA(cudaGraphNodeGetType(nodes[i], &t));
    if (t == cudaGraphNodeTypeKernel) ks.push_back(i);
  }
  *kernels = ks.size();
  for (size_t i = 0; i < ks.size(); ++i)
    for (size_t j = i + 1; j < ks.size(); ++j)
      if (!reaches(ks[i], ks[j]) && !reaches(ks[j], ks[i])) return false;
  return true;
}

// Two groups of one communicator captured into one graph (X) on sibling streams, each rank's stream and a fork of
// it, with a third group captured into another graph (Y) on a third stream between them. X has no edge between
// the two groups of its own, so only the communicator can keep them from running at once over the same FIFOs,
// steps and p2p claim words (NCCL serializes a communicator's captured operations per graph alike); the one in Y
// between them must not make it forget X's last batch. Each group holds a balanced transfer of 64 MiB and more
// each way beside LL- and mid-cut ones. Checked in X's structure (its kernel nodes form one chain: gpu_executor.cc
// run orders them; left alone they would be siblings) and by replaying X, then Y, twice, every byte checked.
TEST(DeviceP2pGroup, GroupsCapturedOnForkedStreamsRunInTurn) {
  NEED_GPUS(2);
  Pair p;
  ASSERT_TRUE(p.init());
  P2pTransfers a({(size_t(64) << 20) + 5, 1027, size_t(200) << 10}), b({(size_t(64) << 20) + 7, 5, size_t(1) << 20});
  P2pTransfers c({(size_t(8) << 20) + 3, 4160});
  ASSERT_TRUE(a.alloc() && b.alloc() && c.alloc());
  cudaStream_t side[2], other[2];
  cudaEvent_t fork[2], join[2];
  cudaGraph_t graph[2][2];  // [X or Y][rank]
  cudaGraphExec_t exec[2][2];
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&side[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&other[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&fork[r], cudaEventDisableTiming), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&join[r], cudaEventDisableTiming), cudaSuccess);
  }
  // Every capture ends before any check returns: a global-mode capture left open forbids cudaGraphInstantiate, and
  // the later tests' allocations, in this thread (instantiating rank 0's graph while rank 1's stream still captures
  // gets cudaErrorStreamCaptureUnsupported, and the tests after it fail in init).
  bool captured = true;
  for (int r = 0; r < 2; ++r) {
    captured = captured && cudaSetDevice(r) == cudaSuccess &&
               cudaStreamBeginCapture(p.stream[r], cudaStreamCaptureModeGlobal) == cudaSuccess &&
               cudaStreamBeginCapture(other[r], cudaStreamCaptureModeGlobal) == cudaSuccess &&
               cudaEventRecord(fork[r], p.stream[r]) == cudaSuccess &&
               cudaStreamWaitEvent(side[r], fork[r], 0) == cudaSuccess;
  }
  const bool posted = captured && a.post(p) && c.post(p, other) && b.post(p, side);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    const bool joined =
        cudaEventRecord(join[r], side[r]) == cudaSuccess && cudaStreamWaitEvent(p.stream[r], join[r], 0) == cudaSuccess;
    const bool endX = cudaStreamEndCapture(p.stream[r], &graph[0][r]) == cudaSuccess;
    const bool endY = cudaStreamEndCapture(other[r], &graph[1][r]) == cudaSuccess;
    captured = endX && endY && joined && captured;
  }
  ASSERT_TRUE(captured) << "capturing on each rank's stream and a fork of it, and on a third stream, failed";
  ASSERT_TRUE(posted) << "a group failed inside the captures";
  for (int r = 0; r < 2; ++r) {
    size_t kernels = 0;
    EXPECT_TRUE(kernelsInOneChain(graph[0][r], &kernels))
        << "rank " << r << ": graph X's " << kernels << " kernel nodes are not one chain (two launches may overlap)";
    EXPECT_GE(kernels, 2u) << "rank " << r << ": graph X should hold both groups' launches";
  }
  for (int g = 0; g < 2; ++g)
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&exec[g][r], graph[g][r], 0), cudaSuccess);
    }
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(a.prepare(round) && b.prepare(round + 10) && c.prepare(round + 20));
    // X, then Y, in turn (GraphReplaysOrderedAgainstEachOtherAndUncapturedGroups: at once)
    for (int g = 0; g < 2; ++g) {
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        ASSERT_EQ(cudaGraphLaunch(exec[g][r], p.stream[r]), cudaSuccess);
      }
      bool hung = false;
      ASSERT_TRUE(finishPair(p, g == 0 ? "graph X: two groups on forked streams" : "graph Y", &hung))
          << "round " << round;
    }
    ASSERT_NO_FATAL_FAILURE(a.check(round, "graph X, the group on each rank's stream"));
    ASSERT_NO_FATAL_FAILURE(b.check(round + 10, "graph X, the group on the forked stream"));
    ASSERT_NO_FATAL_FAILURE(c.check(round + 20, "graph Y"));
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    for (int g = 0; g < 2; ++g) {
      cudaGraphExecDestroy(exec[g][r]);
      cudaGraphDestroy(graph[g][r]);
    }
    cudaStreamDestroy(side[r]);
    cudaStreamDestroy(other[r]);
    cudaEventDestroy(fork[r]);
    cudaEventDestroy(join[r]);
  }
  p.destroy();
}

// Kernel nodes of `g` and, with graph mixing, the external event nodes its batches add: a wait (a capture's
// first batch) and a record (after its last batch).
bool countNodes(cudaGraph_t g, size_t* kernels, size_t* waits, size_t* records) {
  size_t n = 0;
  GT_CUDA(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  GT_CUDA(cudaGraphGetNodes(g, nodes.data(), &n));
  *kernels = *waits = *records = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    GT_CUDA(cudaGraphNodeGetType(node, &t));
    *kernels += t == cudaGraphNodeTypeKernel;
    *waits += t == cudaGraphNodeTypeWaitEvent;
    *records += t == cudaGraphNodeTypeEventRecord;
  }
  return true;
}

#if CUDART_VERSION >= 13000  // CUDA 13 added edge data to these two
#define NODE_DEPS(node, out, n) cudaGraphNodeGetDependencies(node, out, nullptr, n)
#define NODE_DEPENDENTS(node, out, n) cudaGraphNodeGetDependentNodes(node, out, nullptr, n)
#else
#define NODE_DEPS(node, out, n) cudaGraphNodeGetDependencies(node, out, n)
#define NODE_DEPENDENTS(node, out, n) cudaGraphNodeGetDependentNodes(node, out, n)
#endif

// Whether `g`'s record node comes after its last kernel: every node it depends on is a kernel whose only dependent is
// the record node (a record hung after an earlier batch would share its kernel with the next batch's first node).
bool recordIsLast(cudaGraph_t g, std::string* why) {
  size_t n = 0;
  GT_CUDA(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  GT_CUDA(cudaGraphGetNodes(g, nodes.data(), &n));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    GT_CUDA(cudaGraphNodeGetType(node, &t));
    if (t != cudaGraphNodeTypeEventRecord) continue;
    size_t nd = 0;
    GT_CUDA(NODE_DEPS(node, nullptr, &nd));
    std::vector<cudaGraphNode_t> deps(nd);
    GT_CUDA(NODE_DEPS(node, deps.data(), &nd));
    if (nd == 0) return *why = "the record node depends on nothing", false;
    for (cudaGraphNode_t d : deps) {
      GT_CUDA(cudaGraphNodeGetType(d, &t));
      size_t nx = 0;
      GT_CUDA(NODE_DEPENDENTS(d, nullptr, &nx));
      if (t != cudaGraphNodeTypeKernel || nx != 1)
        return *why = "the record node hangs on a node of type " + std::to_string(t) + " with " + std::to_string(nx) +
                      " dependents, not on the last kernel",
               false;
    }
    return true;
  }
  return *why = "no record node", false;
}

// Captures `g`, posted `times` times, into one graph per rank on the pair's streams (every capture ended before
// returning).
bool captureGroup(Pair& p, P2pTransfers& g, cudaGraph_t graph[2], int times = 1) {
  bool ok = true;
  for (int r = 0; r < 2; ++r)
    ok = ok && cudaSetDevice(r) == cudaSuccess &&
         cudaStreamBeginCapture(p.stream[r], cudaStreamCaptureModeGlobal) == cudaSuccess;
  bool posted = ok;
  for (int i = 0; i < times; ++i) posted = posted && g.post(p);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ok = cudaStreamEndCapture(p.stream[r], &graph[r]) == cudaSuccess && ok;
  }
  return ok && posted;
}

// Two graphs of one communicator replayed at once on two streams of each rank, with no order between them from
// the user, and a group issued uncaptured on a third stream right after: with NCCL_GRAPH_MIXING_SUPPORT (on by
// default, as NCCL) the communicator orders all three (each graph waits for the communicator's last operation and
// records its end; the uncaptured group waits for the last graph). Without it they ran at once over the same FIFOs,
// steps and p2p claim words. Checked in the graphs' structure (one external wait and one record, after the last of
// graph X's two groups; none when NCCL_GRAPH_MIXING_SUPPORT=0) and by three rounds, every byte checked.
TEST(DeviceP2pGroup, GraphReplaysOrderedAgainstEachOtherAndUncapturedGroups) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("NCCL_GRAPH_MIXING_SUPPORT", "0");
  {
    Pair q;
    ASSERT_TRUE(q.init());
    P2pTransfers z({size_t(1) << 20, 5});
    ASSERT_TRUE(z.alloc());
    cudaGraph_t graph[2];
    ASSERT_TRUE(captureGroup(q, z, graph)) << "capturing a group without graph mixing failed";
    for (int r = 0; r < 2; ++r) {
      size_t kernels = 0, waits = 0, records = 0;
      ASSERT_TRUE(countNodes(graph[r], &kernels, &waits, &records));
      EXPECT_GE(kernels, 1u) << "rank " << r;
      EXPECT_EQ(waits + records, 0u) << "rank " << r << ": NCCL_GRAPH_MIXING_SUPPORT=0 still added event nodes";
      cudaSetDevice(r);
      cudaGraphDestroy(graph[r]);
    }
    q.destroy();
  }
  env.set("NCCL_GRAPH_MIXING_SUPPORT", "1");
  Pair p;
  ASSERT_TRUE(p.init());
  P2pTransfers a({(size_t(64) << 20) + 5, 1027, size_t(200) << 10}), b({(size_t(64) << 20) + 7, 5, size_t(1) << 20});
  P2pTransfers c({(size_t(8) << 20) + 3, 4160});
  ASSERT_TRUE(a.alloc() && b.alloc() && c.alloc());
  cudaGraph_t graph[2][2];  // [X or Y][rank]
  cudaGraphExec_t exec[2][2];
  ASSERT_TRUE(captureGroup(p, a, graph[0], 2)) << "capturing graph X (the same group twice) failed";
  ASSERT_TRUE(captureGroup(p, b, graph[1])) << "capturing graph Y failed";
  for (int g = 0; g < 2; ++g)
    for (int r = 0; r < 2; ++r) {
      size_t kernels = 0, waits = 0, records = 0;
      ASSERT_TRUE(countNodes(graph[g][r], &kernels, &waits, &records));
      EXPECT_GE(kernels, 1u) << "graph " << g << ", rank " << r;
      EXPECT_EQ(waits, 1u) << "graph " << g << ", rank " << r << ": the capture's first batch waits once";
      EXPECT_EQ(records, 1u) << "graph " << g << ", rank " << r << ": one record, whatever the groups";
      std::string why;
      EXPECT_TRUE(recordIsLast(graph[g][r], &why)) << "graph " << g << ", rank " << r << ": " << why;
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiate(&exec[g][r], graph[g][r], 0), cudaSuccess);
    }
  cudaStream_t side[2], other[2];
  cudaEvent_t join[2];
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&side[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&other[r], cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&join[r], cudaEventDisableTiming), cudaSuccess);
  }
  for (int round = 1; round <= 3; ++round) {
    ASSERT_TRUE(a.prepare(round) && b.prepare(round + 10) && c.prepare(round + 20));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaGraphLaunch(exec[0][r], p.stream[r]), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec[1][r], side[r]), cudaSuccess);
    }
    ASSERT_TRUE(c.post(p, other)) << "round " << round << ": the uncaptured group after the replays";
    for (int r = 0; r < 2; ++r) {  // only so that finishPair's wait on p.stream covers all three
      cudaSetDevice(r);
      ASSERT_EQ(cudaEventRecord(join[r], side[r]), cudaSuccess);
      ASSERT_EQ(cudaStreamWaitEvent(p.stream[r], join[r], 0), cudaSuccess);
      ASSERT_EQ(cudaEventRecord(join[r], other[r]), cudaSuccess);
      ASSERT_EQ(cudaStreamWaitEvent(p.stream[r], join[r], 0), cudaSuccess);
    }
    bool hung = false;
    ASSERT_TRUE(finishPair(p, "graphs X and Y replayed at once, a group uncaptured after", &hung)) << "round " << round;
    ASSERT_NO_FATAL_FAILURE(a.check(round, "graph X, replayed on each rank's stream"));
    ASSERT_NO_FATAL_FAILURE(b.check(round + 10, "graph Y, replayed on a second stream"));
    ASSERT_NO_FATAL_FAILURE(c.check(round + 20, "the uncaptured group on a third stream"));
  }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    for (int g = 0; g < 2; ++g) {
      cudaGraphExecDestroy(exec[g][r]);
      cudaGraphDestroy(graph[g][r]);
    }
    cudaStreamDestroy(side[r]);
    cudaStreamDestroy(other[r]);
    cudaEventDestroy(join[r]);
  }
  p.destroy();
}

// A gather (root 0) beside a send the other way, then a scatter (root 0) beside a send the other way, each in
// one group, under CTA bounds of 24 and 32 (a gather's or scatter's transfer cut over the whole bound, the send
// over half, so half the channels pair to keep the bound: p2p_plan.h), 8 (every ring channel paired) and none; and
// 24 MiB + 5 under 28 and 24 (balanced under 24: shares of 1 MiB and more, p2pBalanced). Every byte checked against
// poisoned outputs, and the byte after each.
TEST(DeviceP2pGroup, RootedCollectivesBesideTransfersTheOtherWay) {
  NEED_GPUS(2);
  const size_t m = (size_t(2) << 20) + 5;
  struct Case {
    const char* bound;
    size_t n;
  };
  const size_t eight = (size_t(8) << 20) - 3, past = (size_t(24) << 20) + 5;  // balanced under 24
  for (const Case& k : {Case{"24", eight}, Case{"32", eight}, Case{"8", eight}, Case{"", eight}, Case{"28", past},
                        Case{"24", past}}) {
    const char* bound = k.bound;
    const size_t n = k.n;
    SCOPED_TRACE(std::string("NCCL_MAX_CTAS=") + bound + " n=" + std::to_string(n));
    EnvScope env;
    if (*bound) env.set("NCCL_MAX_CTAS", bound);
    Pair p;
    ASSERT_TRUE(p.init());
    uint8_t *in[2], *out[2], *xin[2], *xout[2];
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&in[r], 2 * n), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&out[r], 2 * n + 1), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&xin[r], m), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&xout[r], m + 1), cudaSuccess);
    }
    for (int round = 0; round < 2; ++round) {
      const bool gather = round == 0;
      const std::string what = gather ? "gather + send 0 -> 1" : "scatter + send 1 -> 0";
      const int xs = gather ? 0 : 1;  // the sender of the transfer the other way
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        fillPattern<<<64, 256>>>(in[r], 2 * n, seedOf(r, round, 0));
        fillPattern<<<64, 256>>>(xin[r], m, seedOf(r, round, 1));
        ASSERT_EQ(cudaMemset(out[r], 0xa5, 2 * n + 1), cudaSuccess);
        ASSERT_EQ(cudaMemset(xout[r], 0xa5, m + 1), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < 2; ++r) {
        ncclResult_t a = gather ? ncclGather(in[r], out[r], n, ncclUint8, 0, p.comm[r], p.stream[r])
                                : ncclScatter(in[r], out[r], n, ncclUint8, 0, p.comm[r], p.stream[r]);
        ASSERT_EQ(a, ncclSuccess) << what;
        ncclResult_t b = r == xs ? ncclSend(xin[r], m, ncclUint8, 1 - r, p.comm[r], p.stream[r])
                                 : ncclRecv(xout[r], m, ncclUint8, 1 - r, p.comm[r], p.stream[r]);
        ASSERT_EQ(b, ncclSuccess) << what;
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << what;
      bool hung = false;
      ASSERT_TRUE(finishPair(p, what, &hung));
      std::vector<uint8_t> h(2 * n + 1);
      // `bytes` of the pattern `seed` from `from` on; the byte after still poison where nothing follows.
      auto expect = [&](int r, const uint8_t* dev, size_t bytes, uint32_t seed, size_t from, const char* which,
                        bool last = true) {
        cudaSetDevice(r);
        ASSERT_EQ(cudaMemcpy(h.data(), dev, bytes + 1, cudaMemcpyDeviceToHost), cudaSuccess);
        for (size_t i = 0; i < bytes; ++i)
          ASSERT_EQ(h[i], patternByte(seed, from + i)) << what << ": rank " << r << " " << which << " byte " << i;
        if (last) ASSERT_EQ(h[bytes], 0xa5) << what << ": rank " << r << " " << which << " wrote past its end";
      };
      if (gather) {  // root 0 holds rank 0's input, then rank 1's
        ASSERT_NO_FATAL_FAILURE(expect(0, out[0], n, seedOf(0, round, 0), 0, "gather's own share", false));
        ASSERT_NO_FATAL_FAILURE(expect(0, out[0] + n, n, seedOf(1, round, 0), 0, "gather's share from rank 1"));
      } else {  // each rank gets its share of root 0's input
        ASSERT_NO_FATAL_FAILURE(expect(0, out[0], n, seedOf(0, round, 0), 0, "scatter's own share"));
        ASSERT_NO_FATAL_FAILURE(expect(1, out[1], n, seedOf(0, round, 0), n, "scatter's share"));
      }
      ASSERT_NO_FATAL_FAILURE(expect(1 - xs, xout[1 - xs], m, seedOf(xs, round, 1), 0, "received transfer"));
    }
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      cudaFree(in[r]);
      cudaFree(out[r]);
      cudaFree(xin[r]);
      cudaFree(xout[r]);
    }
    p.destroy();
  }
}

// NCCL_MAX_P2P_NCHANNELS bounds point-to-point launches as NCCL_MAX_CTAS does, and only those (NCCL's p2p
// kernels heed it and not NCCL_MAX_CTAS: NVIDIA/nccl#2421): ncclGroupSimulateEnd's estimate of a 64 MiB
// send/recv under it equals the one under NCCL_MAX_CTAS of the same value, and is slower than unbounded (the
// estimate is the executor's cut, the one launchP2p makes); the estimate of a 64 MiB all-reduce under it equals
// the unbounded one, while NCCL_MAX_CTAS changes it. With both set, the smaller bounds p2p. Each case then runs the
// send/recv both ways, every byte checked against poisoned outputs.
TEST(DeviceP2pGroup, P2pChannelBoundBoundsPointToPointOnly) {
  NEED_GPUS(2);
  const size_t n = size_t(64) << 20;
  struct Case {
    const char* maxCtas;
    const char* maxP2p;
  };
  const Case cases[] = {{"", ""}, {"8", ""}, {"", "8"}, {"24", "8"}, {"8", "64"}};
  float p2pEst[5], arEst[5];
  for (int c = 0; c < 5; ++c) {
    const std::string what =
        std::string("NCCL_MAX_CTAS=") + cases[c].maxCtas + " NCCL_MAX_P2P_NCHANNELS=" + cases[c].maxP2p;
    SCOPED_TRACE(what);
    EnvScope env;
    // An empty value clears the variable, so the cases hold when the binary runs under an outer bound.
    for (auto [name, value] :
         {std::pair{"NCCL_MAX_CTAS", cases[c].maxCtas}, std::pair{"NCCL_MAX_P2P_NCHANNELS", cases[c].maxP2p}}) {
      if (*value)
        env.set(name, value);
      else
        env.unset(name);
    }
    Pair p;
    ASSERT_TRUE(p.init());
    uint8_t *in[2], *out[2];
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&in[r], n), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&out[r], n + 1), cudaSuccess);
      fillPattern<<<64, 256>>>(in[r], n, seedOf(r, c, 0));
      ASSERT_EQ(cudaMemset(out[r], 0xa5, n + 1), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(in[0], n, ncclUint8, 1, p.comm[0], p.stream[0]), ncclSuccess);
    ASSERT_EQ(ncclRecv(out[0], n, ncclUint8, 1, p.comm[0], p.stream[0]), ncclSuccess);
    ASSERT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
    p2pEst[c] = info.estimatedTime;
    ncclSimInfo_t arInfo = NCCL_SIM_INFO_INITIALIZER;
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclAllReduce(in[0], out[0], n / 4, ncclFloat32, ncclSum, p.comm[0], p.stream[0]), ncclSuccess);
    ASSERT_EQ(ncclGroupSimulateEnd(&arInfo), ncclSuccess);
    arEst[c] = arInfo.estimatedTime;
    printf("%s: send/recv 64 MiB estimated %.1f us, all-reduce 64 MiB %.1f us\n", what.c_str(), p2pEst[c], arEst[c]);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(ncclSend(in[r], n, ncclUint8, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
      ASSERT_EQ(ncclRecv(out[r], n, ncclUint8, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    bool hung = false;
    ASSERT_TRUE(finishPair(p, what, &hung));
    std::vector<uint8_t> h(n + 1);
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaMemcpy(h.data(), out[r], n + 1, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(h[i], patternByte(seedOf(1 - r, c, 0), i)) << "rank " << r << " byte " << i;
      ASSERT_EQ(h[n], 0xa5) << "rank " << r << " wrote past its end";
      cudaFree(in[r]);
      cudaFree(out[r]);
    }
    p.destroy();
  }
  EXPECT_GT(p2pEst[0], 0.f);
  EXPECT_FLOAT_EQ(p2pEst[2], p2pEst[1]) << "NCCL_MAX_P2P_NCHANNELS=8 cuts p2p as NCCL_MAX_CTAS=8 does";
  EXPECT_FLOAT_EQ(p2pEst[3], p2pEst[1]) << "the smaller of the two bounds p2p";
  EXPECT_FLOAT_EQ(p2pEst[4], p2pEst[1]) << "the smaller of the two bounds p2p";
  EXPECT_GT(p2pEst[2], 1.2f * p2pEst[0]) << "8 CTAs estimated no slower than the comm's channels";
  EXPECT_FLOAT_EQ(arEst[2], arEst[0]) << "NCCL_MAX_P2P_NCHANNELS changed a collective's plan";
  EXPECT_GT(arEst[1], 1.1f * arEst[0]) << "NCCL_MAX_CTAS=8 left the all-reduce estimate as unbounded";
}

}  // namespace
