// Where the NET proxy's threads run (BRAID_PROXY_CPUS). Launchers bind ranks tightly (Open MPI binds each of
// 2 ranks to one core by default); proxy threads that inherit the binding share that core with the rank's
// main thread, which spins in cudaStreamSynchronize. On 2xH200 the socket path moved 3.0-3.5 GB/s bound and
// 5.3-5.8 GB/s with the binding off (2 threads), 9.2-10.6 GB/s with 8 (docs/TUNING.md, "Socket path"). So by default a
// rank bound to 1-2 CPUs runs its proxy threads on its GPU's local CPUs (or every CPU the process may use)
// instead; a rank given more keeps them; "inherit" keeps any binding, a CPU list ("0-3,8") names the CPUs.
// The decision is a pure function (planProxyPlacement) so the policy is tested without the machine's layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace braid {

using CpuList = std::vector<int>;  // CPU numbers, sorted, unique

// "0-3,8,10-11" (whitespace and a trailing newline allowed, as sysfs writes it); false when malformed.
bool parseCpuList(const std::string& s, CpuList* out);
std::string formatCpuList(const CpuList& c);
CpuList intersectCpus(const CpuList& a, const CpuList& b);

struct ProxyPlacement {
  CpuList cpus;        // empty: the threads keep the affinity they inherit
  int maxThreads = 0;  // the most threads worth starting on that set (0: no cap); a user's count is not capped
  std::string why;     // for the log
  bool warn = false;   // the user's list was unusable here: logged as a warning
};

// BRAID_PROXY_CPUS's syntax: ncclInvalidArgument naming it when malformed (checked at comm init, before any
// rank waits on another).
ncclResult_t checkProxyCpusSyntax(const std::string& env);
// env: BRAID_PROXY_CPUS ("", "auto", "inherit" or a CPU list); inherited: the process's affinity; gpuLocal:
// the CPUs local to the comm's GPU (empty for host comms or when unknown); allowed: every CPU the process may
// use. "auto" widens only bindings of at most 2 CPUs. A list naming no
// allowed CPU keeps the binding with out->warn set (CPU counts may differ between hosts); a malformed one is
// ncclInvalidArgument.
ncclResult_t planProxyPlacement(const std::string& env, const CpuList& inherited, const CpuList& gpuLocal,
                                const CpuList& allowed, ProxyPlacement* out);
// Reads those facts from this machine (sched_getaffinity, sysfs, what the kernel grants a scratch thread) and
// plans. busId: the GPU's PeerInfo::busId, or -1.
ncclResult_t proxyPlacementFor(int64_t busId, ProxyPlacement* out);
// Pins the calling thread to cpus (nothing when empty); false when the kernel refuses.
bool pinThisThread(const CpuList& cpus);
// The calling thread's affinity.
CpuList threadCpus();

}  // namespace braid
