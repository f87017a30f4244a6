// The host topology on a GPU machine (src/runtime/gpu/gpu_topology.h): what a communicator dumps
// (NCCL_TOPO_DUMP_FILE) loads back, and its GPU-to-GPU path classes match what `nvidia-smi topo -m` says of the
// same pairs; a missing NCCL_TOPO_FILE fails init naming the file. Each case runs in a child process (the topology
// is built once per process), so this process stays CUDA-free. White-box: links braid_static (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/result.h"
#include "gpu_harness.h"
#include "topology/topology.h"

using namespace gpu_test;

namespace braid {
namespace {

std::string run(const char* cmd) {
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

// nvidia-smi's connection between its GPUs i and j mapped to a path class: NV# -> NVL, NODE (across host bridges of
// one NUMA node) -> PHB; DIS where it says something else.
PathClass smiClass(const std::string& word) {
  if (word.rfind("NV", 0) == 0 && word.size() > 2 && std::isdigit(static_cast<unsigned char>(word[2])))
    return PathClass::Nvl;
  if (word == "PIX") return PathClass::Pix;
  if (word == "PXB") return PathClass::Pxb;
  if (word == "PHB" || word == "NODE") return PathClass::Phb;
  if (word == "SYS") return PathClass::Sys;
  return PathClass::Dis;
}

int childCheckDump() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) return 77;
  const std::string dump = "/tmp/braid_topo_dump_" + std::to_string(getpid()) + ".xml";
  setenv("NCCL_TOPO_DUMP_FILE", dump.c_str(), 1);
  std::vector<ncclComm_t> comms(n);
  std::vector<int> devs(n);
  for (int i = 0; i < n; ++i) devs[i] = i;
  if (ncclCommInitAll(comms.data(), n, devs.data()) != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  Topology topo;
  if (loadTopologyFile(dump, &topo) != ncclSuccess) {
    fprintf(stderr, "the dump does not load back: %s\n", pendingError().c_str());
    return 1;
  }
  TopoPaths paths;
  if (computePaths(topo, &paths) != ncclSuccess) return 1;
  std::remove(dump.c_str());
  // nvidia-smi's GPU index -> bus id, then its matrix.
  std::map<int, std::string> bus;
  std::istringstream ids(run("nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null"));
  for (std::string line; std::getline(ids, line);) {
    const size_t comma = line.find(',');
    if (comma == std::string::npos) continue;
    bus[std::atoi(line.c_str())] = topoBusId(line.substr(comma + 1).substr(line.substr(comma + 1).find_first_not_of(' ')));
  }
  if (bus.size() < 2) {
    fprintf(stderr, "nvidia-smi listed %zu GPUs\n", bus.size());
    return 1;
  }
  std::istringstream matrix(run("nvidia-smi topo -m 2>/dev/null"));
  int compared = 0, wrong = 0;
  for (std::string line; std::getline(matrix, line);) {
    std::istringstream words(line);
    std::string head;
    words >> head;
    if (head.rfind("GPU", 0) != 0 || head.size() < 4 || !std::isdigit(static_cast<unsigned char>(head[3]))) continue;
    const int i = std::atoi(head.c_str() + 3);
    for (int j = 0; j < static_cast<int>(bus.size()); ++j) {
      std::string w;
      if (!(words >> w)) break;
      if (i == j || !bus.count(i) || !bus.count(j)) continue;
      const int a = topo.find(TopoKind::Gpu, bus[i]), b = topo.find(TopoKind::Gpu, bus[j]);
      if (a < 0 || b < 0) {
        fprintf(stderr, "GPU %s or %s missing from the topology\n", bus[i].c_str(), bus[j].c_str());
        return 1;
      }
      const PathClass want = smiClass(w), got = paths.between(a, b).cls;
      ++compared;
      if (want != got) {
        ++wrong;
        fprintf(stderr, "GPU%d-GPU%d: nvidia-smi says %s, the topology %s\n", i, j, w.c_str(), pathClassName(got));
      }
    }
  }
  printf("compared %d GPU pairs with nvidia-smi topo -m, %d differ\n", compared, wrong);
  return compared > 0 && wrong == 0 ? 0 : 1;
}

int childMissingFile() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) return 77;
  setenv("NCCL_TOPO_FILE", "/nonexistent/braid-topo.xml", 1);
  ncclComm_t comms[2];
  int devs[2] = {0, 1};
  const ncclResult_t r = ncclCommInitAll(comms, 2, devs);
  const std::string msg = ncclGetLastError(nullptr);
  if (r != ncclInvalidArgument || msg.find("/nonexistent/braid-topo.xml") == std::string::npos) {
    fprintf(stderr, "init gave %d (%s)\n", static_cast<int>(r), msg.c_str());
    return 1;
  }
  return 0;
}

// One GPU a process (CUDA_VISIBLE_DEVICES), as launchers often run: each process's topology still holds both GPUs
// (the one it cannot see too), init succeeds on both, and rank 0's dump lists both GPUs.
int childHiddenGpus(int rank, const ncclUniqueId& id, const std::string& dump) {
  setenv("CUDA_VISIBLE_DEVICES", std::to_string(rank).c_str(), 1);
  if (rank == 0) setenv("NCCL_TOPO_DUMP_FILE", dump.c_str(), 1);
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  ncclCommDestroy(comm);
  if (rank != 0) return 0;
  Topology topo;
  if (loadTopologyFile(dump, &topo) != ncclSuccess) {
    fprintf(stderr, "the dump does not load back: %s\n", pendingError().c_str());
    return 1;
  }
  std::remove(dump.c_str());
  if (topo.all(TopoKind::Gpu).size() < 2) {
    fprintf(stderr, "rank 0's topology holds %zu GPUs\n", topo.all(TopoKind::Gpu).size());
    return 1;
  }
  return 0;
}

int inChild(int (*body)()) {
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

}  // namespace

TEST(TopologyGpu, DumpLoadsBackAndMatchesNvidiaSmi) {
  if (gpuCountForked() < 2) GTEST_SKIP() << "needs 2 GPUs";
  if (run("command -v nvidia-smi").empty()) GTEST_SKIP() << "no nvidia-smi on PATH";
  EXPECT_EQ(inChild(childCheckDump), 0);
}

TEST(TopologyGpu, ProcessesSeeingOneGpuEachDetectBoth) {
  if (gpuCountForked() < 2) GTEST_SKIP() << "needs 2 GPUs";
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const std::string dump = "/tmp/braid_topo_hidden_" + std::to_string(getpid()) + ".xml";
  std::vector<pid_t> kids;
  for (int r = 0; r < 2; ++r) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) _exit(childHiddenGpus(r, id, dump));
    kids.push_back(pid);
  }
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    waitpid(kids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r;
  }
}

TEST(TopologyGpu, MissingTopoFileFailsInitNamingIt) {
  if (gpuCountForked() < 2) GTEST_SKIP() << "needs 2 GPUs";
  EXPECT_EQ(inChild(childMissingFile), 0);
}

}  // namespace braid
