// The NET proxy's thread placement: CPU-list parsing, the BRAID_PROXY_CPUS policy for the layouts launchers
// produce (a rank bound to one core, unbound, a one-CPU container), and pinning a real thread.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "common/env_guard.h"
#include "core/result.h"
#include "transport/net/net_proxy.h"
#include "transport/net/proxy_affinity.h"

namespace braid {
namespace {

using EnvVar = braid_test::EnvGuard;

CpuList range(int lo, int hi) {
  CpuList c;
  for (int i = lo; i <= hi; ++i) c.push_back(i);
  return c;
}

TEST(ProxyAffinity, ParsesAndFormatsCpuLists) {
  CpuList c;
  ASSERT_TRUE(parseCpuList("0-3,8,10-11\n", &c));
  EXPECT_EQ(c, (CpuList{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(formatCpuList(c), "0-3,8,10-11");
  ASSERT_TRUE(parseCpuList(" 5 , 2-3,3 ", &c));  // unsorted, overlapping, spaced
  EXPECT_EQ(c, (CpuList{2, 3, 5}));
  EXPECT_EQ(formatCpuList({}), "none");
  for (const char* bad : {"", "x", "3-1", "1,,2", "-1", "1-", "2-x", "99999999"}) {
    CpuList keep{7};
    EXPECT_FALSE(parseCpuList(bad, &keep)) << bad;
    EXPECT_EQ(keep, CpuList{7}) << bad << ": left untouched";
  }
  EXPECT_EQ(intersectCpus(range(0, 7), {1, 5, 9}), (CpuList{1, 5}));
}

TEST(ProxyAffinity, BoundRankMovesThreadsToItsGpusCpus) {
  // Open MPI's default for 2 ranks: each bound to one core. The GPU's local CPUs are 0-15 of 0-31.
  ProxyPlacement p;
  ASSERT_EQ(planProxyPlacement("", {1}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 15));
  EXPECT_NE(p.why.find("binding to CPUs 1"), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("GPU's local CPUs 0-15"), std::string::npos) << p.why;
  // "auto" is the same; unknown GPU locality (host comms): every CPU the process may use.
  ASSERT_EQ(planProxyPlacement("auto", {1}, {}, range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 31));
  // The GPU's CPUs outside the cgroup: the allowed ones.
  ASSERT_EQ(planProxyPlacement("", {1}, range(40, 47), range(0, 3), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 3));
}

TEST(ProxyAffinity, RoomyOrOneCpuRanksKeepTheirBinding) {
  ProxyPlacement p;
  // Unbound on 32 CPUs: the GPU's half of them (the rank's own, narrowed to the local node).
  ASSERT_EQ(planProxyPlacement("", range(0, 31), range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 15));
  EXPECT_NE(p.why.find("GPU's local CPUs 0-15 within the rank's binding to CPUs 0-31"), std::string::npos) << p.why;
  // ... and without any locality known: nothing to do.
  ASSERT_EQ(planProxyPlacement("", range(0, 31), {}, range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  // A rank given 4 CPUs on purpose (Slurm --cpus-per-task=4, numactl), all local: it keeps them.
  ASSERT_EQ(planProxyPlacement("auto", range(4, 7), range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  // Two CPUs still count as a launcher's tight binding.
  ASSERT_EQ(planProxyPlacement("", {2, 3}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 15));
  // A one-CPU container: nowhere to go.
  ASSERT_EQ(planProxyPlacement("", {0}, {}, {0}, &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  // The affinity could not be read: keep whatever it is.
  ASSERT_EQ(planProxyPlacement("", {}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  // inherit: the launcher's binding even when tight.
  ASSERT_EQ(planProxyPlacement("inherit", {1}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_NE(p.why.find("BRAID_PROXY_CPUS=inherit"), std::string::npos) << p.why;
  EXPECT_FALSE(p.warn);
}

// NCCL_IGNORE_CPU_AFFINITY=1: the local CPUs whatever the binding, roomy or tight; inherit and lists still win.
TEST(ProxyAffinity, IgnoringTheBindingTakesTheLocalCpus) {
  ProxyPlacement p;
  ASSERT_EQ(planProxyPlacement("", range(16, 23), range(0, 15), range(0, 31), &p, {}, "", true), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 15));
  EXPECT_NE(p.why.find("NCCL_IGNORE_CPU_AFFINITY=1"), std::string::npos) << p.why;
  ASSERT_EQ(planProxyPlacement("auto", {1}, range(0, 15), range(0, 31), &p, range(16, 31), "mlx5_0", true),
            ncclSuccess);
  EXPECT_EQ(p.cpus, range(16, 31));  // the NIC's
  ASSERT_EQ(planProxyPlacement("", range(16, 23), range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty()) << "without it the roomy binding is kept";
  ASSERT_EQ(planProxyPlacement("inherit", range(16, 23), range(0, 15), range(0, 31), &p, {}, "", true), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  ASSERT_EQ(planProxyPlacement("4-5", range(16, 23), range(0, 15), range(0, 31), &p, {}, "", true), ncclSuccess);
  EXPECT_EQ(p.cpus, range(4, 5));
}

TEST(ProxyAffinity, ExplicitListsAndTheirErrors) {
  ProxyPlacement p;
  ASSERT_EQ(planProxyPlacement("4-6,40", {1}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, (CpuList{4, 5, 6})) << "CPUs the process may not use are dropped";
  EXPECT_FALSE(p.warn);
  // A list this host cannot honour (hosts differ): the binding stays, with a warning, not a failure.
  ASSERT_EQ(planProxyPlacement("40-47", {1}, {}, range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_TRUE(p.warn);
  EXPECT_NE(p.why.find("BRAID_PROXY_CPUS=40-47 names no CPU this process may use (0-31)"), std::string::npos) << p.why;
  // Malformed: ncclInvalidArgument naming the variable, at init (checkProxyCpusSyntax) and here.
  clearPendingError();
  for (const char* ok : {"", "auto", " inherit ", "0-3,8"}) EXPECT_EQ(checkProxyCpusSyntax(ok), ncclSuccess) << ok;
  EXPECT_EQ(checkProxyCpusSyntax("1024"), ncclInvalidArgument) << "beyond a cpu_set_t";
  clearPendingError();
  ProxyPlacement untouched;
  EXPECT_EQ(planProxyPlacement("cores 1-2", {1}, {}, range(0, 31), &untouched), ncclInvalidArgument);
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("BRAID_PROXY_CPUS=\"cores 1-2\" is not a CPU list"), std::string::npos) << msg;
  clearPendingError();
}

// The NIC's NUMA node comes first where the backend names a NIC with a device; the GPU's where it does not, or
// where none of the NIC's CPUs may be used; the user's list and "inherit" still win.
TEST(ProxyAffinity, NicLocalCpusComeFirst) {
  ProxyPlacement p;
  // Bound to one core; the GPU on node 0 (0-15), the NIC on node 1 (16-31): the NIC's node.
  ASSERT_EQ(planProxyPlacement("", {1}, range(0, 15), range(0, 31), &p, range(16, 31), "mlx5_1"), ncclSuccess);
  EXPECT_EQ(p.cpus, range(16, 31));
  EXPECT_NE(p.why.find("the NIC mlx5_1's local CPUs 16-31"), std::string::npos) << p.why;
  // Unbound: narrowed to the NIC's node.
  ASSERT_EQ(planProxyPlacement("auto", range(0, 31), range(0, 15), range(0, 31), &p, range(16, 31), "eth2"),
            ncclSuccess);
  EXPECT_EQ(p.cpus, range(16, 31));
  EXPECT_NE(p.why.find("NIC eth2's local CPUs 16-31 within the rank's binding"), std::string::npos) << p.why;
  // Bound to 4 CPUs of node 0: the rank's binding holds none of the NIC's CPUs, so it keeps its own.
  ASSERT_EQ(planProxyPlacement("", range(4, 7), range(0, 15), range(0, 31), &p, range(16, 31), "eth2"), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  // The NIC's CPUs outside the cgroup: the GPU's are used.
  ASSERT_EQ(planProxyPlacement("", {1}, range(0, 7), range(0, 15), &p, range(16, 31), "eth2"), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 7));
  EXPECT_NE(p.why.find("GPU's local CPUs 0-7"), std::string::npos) << p.why;
  // No NIC known (loopback), no GPU (host comms), bound to one core: every allowed CPU.
  ASSERT_EQ(planProxyPlacement("", {1}, {}, range(0, 3), &p, {}, "lo"), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 3));
  // The user's word wins.
  ASSERT_EQ(planProxyPlacement("2-3", {1}, range(0, 15), range(0, 31), &p, range(16, 31), "eth2"), ncclSuccess);
  EXPECT_EQ(p.cpus, (CpuList{2, 3}));
  ASSERT_EQ(planProxyPlacement("inherit", {1}, range(0, 15), range(0, 31), &p, range(16, 31), "eth2"), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
}

// The sysfs reading: a NIC device directory's local_cpulist, as the kernel writes it; nothing where the interface
// has no device (loopback, a veth) or the file is malformed.
TEST(ProxyAffinity, ReadsTheNicsLocalCpusFromSysfs) {
  char dir[] = "/tmp/braid_nicdev_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/local_cpulist";
  {
    std::ofstream f(file);
    f << "0-3,8\n";
  }
  EXPECT_EQ(nicLocalCpus(dir), (CpuList{0, 1, 2, 3, 8}));
  {
    std::ofstream f(file);
    f << "zero\n";
  }
  EXPECT_TRUE(nicLocalCpus(dir).empty());
  unlink(file.c_str());
  EXPECT_TRUE(nicLocalCpus(dir).empty());
  rmdir(dir);
  EXPECT_TRUE(nicLocalCpus("").empty());
  EXPECT_TRUE(nicLocalCpus("/sys/class/net/lo/device").empty()) << "loopback has no device";
}

TEST(ProxyAffinity, PinsARealThread) {
  const CpuList mine = threadCpus();
  ASSERT_FALSE(mine.empty());
  const CpuList one{mine.back()};
  CpuList seen;
  bool ok = false;
  std::thread t([&] {
    ok = pinThisThread(one);
    seen = threadCpus();
  });
  t.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(seen, one);
  EXPECT_EQ(threadCpus(), mine) << "the calling thread is not moved";
  EXPECT_TRUE(pinThisThread({})) << "an empty list keeps the binding";
  EXPECT_EQ(threadCpus(), mine);
}

}  // namespace
}  // namespace braid
