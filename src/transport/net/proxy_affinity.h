// Where the NET proxy's threads run (BRAID_PROXY_CPUS): on the CPUs of the NUMA node the traffic crosses, the
// NIC's where the backend names one, else the GPU's. Launchers bind ranks tightly (Open MPI binds each of 2 ranks
// to one core by default); a proxy thread that inherits the binding shares that core with the rank's main thread,
// which spins in cudaStreamSynchronize, so a binding of 1-2 CPUs is widened to the local CPUs (or every CPU the
// process may use); a roomier one is narrowed to its local part; "inherit" keeps any binding, a CPU list
// ("0-3,8") names the CPUs. The decision is a pure function (planProxyPlacement), tested without the machine.
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
  CpuList cpus;       // empty: the thread keeps the affinity it inherits
  std::string why;    // for the log
  bool warn = false;   // the user's list was unusable here: logged as a warning
};

// BRAID_PROXY_CPUS's syntax: ncclInvalidArgument naming it when malformed (checked at comm init, before any
// rank waits on another).
ncclResult_t checkProxyCpusSyntax(const std::string& env);
// env: BRAID_PROXY_CPUS ("", "auto", "inherit" or a CPU list); inherited: the process's affinity; gpuLocal:
// the CPUs local to the comm's GPU (empty for host comms or when unknown); allowed: every CPU the process may
// use; nicLocal: the CPUs local to the NIC the connections use (nicName; empty when the backend names none, e.g.
// loopback). "auto" takes the NIC's CPUs where known (some of them allowed), else the GPU's: a binding of at
// most 2 CPUs is widened to them (or to every allowed CPU), a roomier one is narrowed to its part among them.
// A list naming no allowed CPU keeps the binding with out->warn set (CPU counts may differ between hosts); a
// malformed one is ncclInvalidArgument. ignoreBinding (NCCL_IGNORE_CPU_AFFINITY=1): "auto" takes the local CPUs
// whatever the binding.
ncclResult_t planProxyPlacement(const std::string& env, const CpuList& inherited, const CpuList& gpuLocal,
                                const CpuList& allowed, ProxyPlacement* out, const CpuList& nicLocal = {},
                                const std::string& nicName = "", bool ignoreBinding = false);
// Reads those facts from this machine (sched_getaffinity, sysfs, what the kernel grants a scratch thread) and
// plans. busId: the GPU's PeerInfo::busId, or -1; nicDevice: the NIC's sysfs device directory (NetNicPlace), or
// empty.
ncclResult_t proxyPlacementFor(int64_t busId, const std::string& nicName, const std::string& nicDevice,
                               ProxyPlacement* out);
// The CPUs local to a NIC: its sysfs device directory's local_cpulist; empty when absent or malformed.
CpuList nicLocalCpus(const std::string& sysfsDevice);
// Pins the calling thread to cpus (nothing when empty); false when the kernel refuses.
bool pinThisThread(const CpuList& cpus);
// The calling thread's affinity.
CpuList threadCpus();

}  // namespace braid
