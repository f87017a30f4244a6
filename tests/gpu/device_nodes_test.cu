// GPU communicators across nodes: one process per rank, rank r on GPU r % gpus, each rank's node named by
// NCCL_HOSTID, so one machine runs as several nodes (between nodes the network, inside a node P2P or SHM).
//
// DeviceTree: the tree all-reduce (NCCL_ALGO=Tree; coll_kernel.cuh's treeCta and treeCtaLL, prims_tree.h and
// prims_tree_ll.h), on Simple and on LL (NCCL_PROTO forcing each). Every datatype x op of the harness, in and out of
// place, at 1, 1031 and 262147 elements, then float/half at 2^22 + 5 / + 3 (several FIFO steps per tree and channel)
// and the harness's unaligned user pointers; outputs poisoned first, every element checked (gpu_harness.h). Each rank
// must log that its all-reduce may run on the trees (so a silent fall back to the ring fails the test), and on LL
// that every tree connection has LL slots and the tuner's decision was the tree on LL (a silent Simple fails it).
//
// DeviceNodes: every collective of the harness (gpu_harness.h's quick set: every datatype x op at 0 and 1031
// elements, then 2^22 + 5 elements and the mid all-reduce sums) over rings that cross the nodes: as the tuner
// chooses (which prices a socket ring's channels per network step, so small ops run LL on one channel), and with
// the ring, LL and four channels forced, so an LL step of every channel crosses the network.
//
// Shapes: 2 ranks as 2 nodes; 4 ranks as 4 nodes; 4 ranks as 2 nodes of 2 (chains inside each node), the last
// also with 64 KiB FIFOs (8 KiB steps), so the mid sizes cross many steps and the tree's lag (Simple only: NET FIFOs
// of 8 KiB steps hold no LL slot; LL's 32 KiB steps cross many steps and the lag from 262147 elements). Ranks
// sharing a GPU (4 ranks on 2 GPUs) time-slice it.
// A datatype whose kernel this build lacks (-DBRAID_KERNELS=minimal has float only) is refused by the API with
// ncclInvalidUsage, which leaves the communicator failed: each rank first asks a one-rank communicator of its own
// which datatypes it refuses, and their cases are counted and printed as not built, not as passed.
// Environment: BRAID_CASE_TIMEOUT (s, default 60) bounds one case, BRAID_TREE_LIMIT (s, default 280) one test.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_harness.h"

using namespace gpu_test;

namespace {

double envSeconds(const char* name, double dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : dflt;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// What one run covers: the tree's all-reduce cases, or every collective's quick set.
std::vector<Case> casesFor(int nranks, bool allColls) {
  if (allColls) return allCases(nranks, true);
  std::vector<Case> v;
  for (const Case& c : allCases(nranks, false))
    if (c.coll == kAllReduce) v.push_back(c);
  return v;
}

bool reduces(const Case& c) { return c.coll == kAllReduce || c.coll == kReduce || c.coll == kReduceScatter; }

// The settings of one run: NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS (null: as chosen), NCCL_BUFFSIZE.
struct RunSpec {
  const char* algo = nullptr;
  const char* proto = nullptr;
  const char* channels = nullptr;
  const char* buffSize = nullptr;
  bool allColls = false;
  std::string describe() const {
    std::string d =
        std::string("NCCL_ALGO=") + (algo ? algo : "(chosen)") + ", NCCL_PROTO=" + (proto ? proto : "(chosen)");
    if (channels) d += std::string(", channels=") + channels;
    if (buffSize) d += std::string(", NCCL_BUFFSIZE=") + buffSize;
    return d;
  }
};

// The datatypes whose all-reduce (sum) this build refuses as not built, asked of a one-rank communicator on `dev`
// (the copies of every datatype run on the byte kernels, which every build has).
bool refusedTypes(int dev, std::vector<ncclDataType_t>* refused) {
  ncclComm_t one;
  GT_NCCL(ncclCommInitAll(&one, 1, &dev));
  void* buf = nullptr;
  GT_CUDA(cudaMalloc(&buf, 64));
  for (int t = 0; t < ncclNumTypes; ++t) {
    const ncclDataType_t dt = static_cast<ncclDataType_t>(t);
    if (ncclAllReduce(buf, buf, 1, dt, ncclSum, one, nullptr) == ncclSuccess) continue;
    refused->push_back(dt);
    ncclCommDestroy(one);  // failed now: a fresh one for the next type
    GT_NCCL(ncclCommInitAll(&one, 1, &dev));
  }
  GT_CUDA(cudaDeviceSynchronize());
  cudaFree(buf);
  ncclCommDestroy(one);
  return true;
}

// One rank: init as node `node`, every case, a summary line on stdout. 0: passed, 1: failed.
int rankMain(int rank, int n, int node, int gpus, const ncclUniqueId& id, const RunSpec& spec) {
  const std::string host = "sim-node-" + std::to_string(node);
  setenv("NCCL_HOSTID", host.c_str(), 1);
  if (spec.algo) setenv("NCCL_ALGO", spec.algo, 1);
  if (spec.proto) setenv("NCCL_PROTO", spec.proto, 1);
  if (spec.channels) {
    setenv("NCCL_MIN_NCHANNELS", spec.channels, 1);
    setenv("NCCL_MAX_NCHANNELS", spec.channels, 1);
  }
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,TUNING", 1);
  if (spec.buffSize) setenv("NCCL_BUFFSIZE", spec.buffSize, 1);
  ncclResetDebugInit();  // the logging settings were read in the parent, before these
  if (cudaSetDevice(rank % gpus) != cudaSuccess) {
    fprintf(stderr, "rank %d: cudaSetDevice(%d) failed\n", rank, rank % gpus);
    return 1;
  }
  std::vector<ncclDataType_t> refused;
  if (!refusedTypes(rank % gpus, &refused)) return 1;
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, n, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommInitRank failed: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    fprintf(stderr, "rank %d: cudaStreamCreateWithFlags failed\n", rank);
    return 1;
  }
  const double limit = envSeconds("BRAID_CASE_TIMEOUT", 60);
  int failures = 0, passed = 0, notBuilt = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Case& c : casesFor(n, spec.allColls)) {
    if (reduces(c) && std::find(refused.begin(), refused.end(), c.dtype) != refused.end()) {
      ++notBuilt;
      continue;
    }
    RankBufs b;
    if (!prepare(c, rank, n, &b)) {
      fprintf(stderr, "rank %d: %s: preparing the buffers failed\n", rank, c.name().c_str());
      return 1;
    }
    if (!enqueue(c, rank, n, comm, s, b)) {
      fprintf(stderr, "rank %d: %s: enqueueing failed: %s\n", rank, c.name().c_str(), ncclGetLastError(comm));
      return 1;
    }
    const auto c0 = std::chrono::steady_clock::now();
    cudaError_t e;
    while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
      if (secondsSince(c0) > limit) {
        fprintf(stderr, "rank %d: %s: still running after %.0f s; last error: %s\n", rank, c.name().c_str(), limit,
                ncclGetLastError(comm));
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (e != cudaSuccess) {
      fprintf(stderr, "rank %d: %s: stream error %s\n", rank, c.name().c_str(), cudaGetErrorString(e));
      return 1;
    }
    if (check(c, rank, n, &b)) {
      ++passed;
    } else if (++failures > 20) {
      break;
    }
  }
  printf("rank %d of %d (node %d, GPU %d, %s): %d cases passed, %d failed, %d not built, %.1f s\n", rank, n, node,
         rank % gpus, spec.describe().c_str(), passed, failures, notBuilt, secondsSince(t0));
  fflush(stdout);
  cudaStreamDestroy(s);
  ncclCommDestroy(comm);
  return failures == 0 && passed > 0 ? 0 : 1;
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  int status = -1;
  std::string err;
};

// Forks one process per rank (this process makes no CUDA call), collects each one's stderr, kills all past `limit`.
void runRanks(int n, int nodes, const RunSpec& spec) {
  const int gpus = gpuCountForked();
  if (gpus < 1) GTEST_SKIP() << "needs a GPU; cudaGetDeviceCount (in a probe child) reports none";
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  printf("%d ranks as %d nodes on %d GPU(s), %s: %zu cases each\n", n, nodes, gpus, spec.describe().c_str(),
         casesFor(n, spec.allColls).size());
  fflush(stdout);
  std::vector<Child> ch(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      for (int j = 0; j < r; ++j) close(ch[static_cast<size_t>(j)].fd);
      dup2(p[1], 2);
      close(p[1]);
      const int rc = rankMain(r, n, r / (n / nodes), gpus, id, spec);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    close(p[1]);
    ch[static_cast<size_t>(r)].pid = pid;
    ch[static_cast<size_t>(r)].fd = p[0];
  }
  const double limit = envSeconds("BRAID_TREE_LIMIT", 280);
  const auto t0 = std::chrono::steady_clock::now();
  int left = n;
  while (left > 0) {
    for (Child& c : ch) {
      char buf[4096];
      pollfd pf{c.fd, POLLIN, 0};
      while (c.fd >= 0 && poll(&pf, 1, 0) > 0) {
        const ssize_t got = read(c.fd, buf, sizeof(buf));
        if (got <= 0) {
          close(c.fd);
          c.fd = -1;
          break;
        }
        c.err.append(buf, static_cast<size_t>(got));
      }
      if (c.status == -1 && waitpid(c.pid, &c.status, WNOHANG) == c.pid) --left;
    }
    if (left > 0 && secondsSince(t0) > limit) {
      for (Child& c : ch)
        if (c.status == -1) {
          kill(c.pid, SIGKILL);
          waitpid(c.pid, &c.status, 0);
          c.err += "\n(killed: still running after " + std::to_string(static_cast<int>(limit)) + " s)";
        }
      left = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t r = 0; r < ch.size(); ++r) {
    Child& c = ch[r];
    if (c.fd >= 0) {
      char buf[4096];
      ssize_t got;
      while ((got = read(c.fd, buf, sizeof(buf))) > 0) c.err.append(buf, static_cast<size_t>(got));
      close(c.fd);
    }
    const bool ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
    const bool onTrees =
        c.err.find("may run on the double binary tree over " + std::to_string(nodes) + " nodes") != std::string::npos;
    std::string tail = c.err.size() > 3000 ? c.err.substr(c.err.size() - 3000) : c.err;
    EXPECT_TRUE(ok) << "rank " << r << " did not pass (status " << c.status << "); its last lines:\n" << tail;
    const bool treeAllowed = spec.algo == nullptr || std::string(spec.algo) == "Tree";
    if (treeAllowed)
      EXPECT_TRUE(onTrees) << "rank " << r << " did not connect the trees over " << nodes << " nodes; its last lines:\n"
                           << tail;
    const bool tree = spec.algo && std::string(spec.algo) == "Tree";
    if (tree && spec.proto && std::string(spec.proto) == "LL") {
      EXPECT_NE(c.err.find("channels, Simple or LL;"), std::string::npos)
          << "rank " << r << ": a tree connection has no LL slots; its last lines:\n"
          << tail;
      EXPECT_NE(c.err.find("AllReduce"), std::string::npos) << "rank " << r << " logged no tuning decision";
      EXPECT_NE(c.err.find(": Tree/LL,"), std::string::npos)
          << "rank " << r << " did not run the tree on LL; its last lines:\n"
          << tail;
    }
  }
}

}  // namespace

RunSpec tree(const char* proto, const char* buffSize = nullptr) {
  RunSpec s;
  s.algo = "Tree";
  s.proto = proto;
  s.buffSize = buffSize;
  return s;
}

RunSpec everyColl(const char* algo, const char* proto, const char* channels) {
  RunSpec s;
  s.algo = algo;
  s.proto = proto;
  s.channels = channels;
  s.allColls = true;
  return s;
}

TEST(DeviceTree, TwoRanksAsTwoNodes) { runRanks(2, 2, tree("Simple")); }
TEST(DeviceTree, FourRanksAsFourNodes) { runRanks(4, 4, tree("Simple")); }
TEST(DeviceTree, FourRanksAsTwoNodes) { runRanks(4, 2, tree("Simple")); }
TEST(DeviceTree, FourRanksAsTwoNodesSmallSteps) { runRanks(4, 2, tree("Simple", "65536")); }
TEST(DeviceTree, TwoRanksAsTwoNodesLL) { runRanks(2, 2, tree("LL")); }
TEST(DeviceTree, FourRanksAsFourNodesLL) { runRanks(4, 4, tree("LL")); }
TEST(DeviceTree, FourRanksAsTwoNodesLL) { runRanks(4, 2, tree("LL")); }

TEST(DeviceNodes, TwoRanksAsTwoNodesAsChosen) { runRanks(2, 2, everyColl(nullptr, nullptr, nullptr)); }
TEST(DeviceNodes, FourRanksAsTwoNodesAsChosen) { runRanks(4, 2, everyColl(nullptr, nullptr, nullptr)); }
TEST(DeviceNodes, FourRanksAsTwoNodesRingLLFourChannels) { runRanks(4, 2, everyColl("Ring", "LL", "4")); }
TEST(DeviceNodes, FourRanksAsTwoNodesRingSimpleOneChannel) { runRanks(4, 2, everyColl("Ring", "Simple", "1")); }
