// The NET proxy's thread placement: CPU-list parsing, the BRAID_PROXY_CPUS policy for the layouts launchers
// produce (a rank bound to one core, unbound, a one-CPU container), and pinning a real thread.
#include <gtest/gtest.h>

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
  EXPECT_EQ(p.maxThreads, 16);
  EXPECT_NE(p.why.find("binding to CPUs 1"), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("GPU's local CPUs 0-15"), std::string::npos) << p.why;
  // "auto" is the same; unknown GPU locality (host comms): every CPU the process may use.
  ASSERT_EQ(planProxyPlacement("auto", {1}, {}, range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 31));
  // The GPU's CPUs outside the cgroup: the allowed ones.
  ASSERT_EQ(planProxyPlacement("", {1}, range(40, 47), range(0, 3), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 3));
  EXPECT_EQ(p.maxThreads, 4);
}

TEST(ProxyAffinity, RoomyOrOneCpuRanksKeepTheirBinding) {
  ProxyPlacement p;
  // Unbound on 32 CPUs: nothing to do, up to 32 threads.
  ASSERT_EQ(planProxyPlacement("", range(0, 31), range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_EQ(p.maxThreads, 32);
  // A rank given 4 CPUs on purpose (Slurm --cpus-per-task=4, numactl) keeps them, even for 8 threads.
  ASSERT_EQ(planProxyPlacement("auto", range(4, 7), range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_EQ(p.maxThreads, 4);
  // Two CPUs still count as a launcher's tight binding.
  ASSERT_EQ(planProxyPlacement("", {2, 3}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, range(0, 15));
  // A one-CPU container: nowhere to go; still 2 threads (measured better than one on a shared core).
  ASSERT_EQ(planProxyPlacement("", {0}, {}, {0}, &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_EQ(p.maxThreads, 2);
  // The affinity could not be read: keep whatever it is.
  ASSERT_EQ(planProxyPlacement("", {}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  // inherit: the launcher's binding even when tight.
  ASSERT_EQ(planProxyPlacement("inherit", {1}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_EQ(p.maxThreads, 2);
  EXPECT_NE(p.why.find("BRAID_PROXY_CPUS=inherit"), std::string::npos) << p.why;
  EXPECT_FALSE(p.warn);
}

TEST(ProxyAffinity, ExplicitListsAndTheirErrors) {
  ProxyPlacement p;
  ASSERT_EQ(planProxyPlacement("4-6,40", {1}, range(0, 15), range(0, 31), &p), ncclSuccess);
  EXPECT_EQ(p.cpus, (CpuList{4, 5, 6})) << "CPUs the process may not use are dropped";
  EXPECT_EQ(p.maxThreads, 3);
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
  untouched.maxThreads = -7;
  EXPECT_EQ(planProxyPlacement("cores 1-2", {1}, {}, range(0, 31), &untouched), ncclInvalidArgument);
  const std::string msg = pendingError();
  EXPECT_NE(msg.find("BRAID_PROXY_CPUS=\"cores 1-2\" is not a CPU list"), std::string::npos) << msg;
  EXPECT_EQ(untouched.maxThreads, -7) << "no placement on error";
  clearPendingError();
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

TEST(ProxyAffinity, ThreadCountCappedByPlacementNotByTheUser) {
  ProxyPlacement two;
  two.maxThreads = 2;
  {
    EnvVar t("BRAID_NET_PROXY_THREADS", "0");
    EXPECT_EQ(NetProxy(0, 8, 50, two).threads(), 2);
    EXPECT_EQ(NetProxy(0, 8, 50).threads(), 8);
    EXPECT_EQ(NetProxy(0, 1, 50, two).threads(), 1);
  }
  {
    EnvVar t("BRAID_NET_PROXY_THREADS", "5");
    EXPECT_EQ(NetProxy(0, 8, 50, two).threads(), 5);
  }
}

}  // namespace
}  // namespace braid
