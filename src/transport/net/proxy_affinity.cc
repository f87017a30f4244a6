// Placement of the NET proxy's threads: the policy (planProxyPlacement) and the system facts it needs.
#include "transport/net/proxy_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <thread>

#include "core/param.h"
#include "core/result.h"
#include "transport/p2p/p2p_internal.h"

namespace braid {

namespace {

constexpr int kMaxCpu = CPU_SETSIZE;  // what a cpu_set_t holds (1024)
// Widen only bindings this tight (a launcher's one core per rank); a rank given more CPUs keeps them.
constexpr size_t kTightBinding = 2;

bool parseInt(const std::string& s, int* v) {
  if (s.empty() || s.size() > 5) return false;
  for (char ch : s)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
  *v = std::stoi(s);
  return *v < kMaxCpu;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\n"), b = s.find_last_not_of(" \t\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A sysfs/cgroup CPU list file; empty when missing or malformed.
CpuList readCpuListFile(const char* path) {
  std::ifstream f(path);
  if (!f) return {};
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CpuList c;
  return parseCpuList(s, &c) ? c : CpuList{};
}

CpuList fromSet(const cpu_set_t& set) {
  CpuList c;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) c.push_back(i);
  return c;
}

// Every CPU this process may be given: a scratch thread asks for all of them and reads back what the kernel
// granted (sched_setaffinity intersects with the task's cpuset, wherever its cgroup sits); else the online
// CPUs.
CpuList allowedCpus() {
  CpuList granted;
  try {
    std::thread probe([&granted] {
      cpu_set_t all;
      CPU_ZERO(&all);
      for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &all);
      if (pthread_setaffinity_np(pthread_self(), sizeof(all), &all) == 0) granted = threadCpus();
    });
    probe.join();
  } catch (const std::system_error&) {
  }
  return granted.empty() ? readCpuListFile("/sys/devices/system/cpu/online") : granted;
}

}  // namespace

bool parseCpuList(const std::string& text, CpuList* out) {
  CpuList c;
  std::stringstream ss(trim(text));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    size_t dash = item.find('-');
    int lo, hi;
    if (dash == std::string::npos) {
      if (!parseInt(item, &lo)) return false;
      hi = lo;
    } else if (!parseInt(item.substr(0, dash), &lo) || !parseInt(item.substr(dash + 1), &hi) || hi < lo) {
      return false;
    }
    for (int i = lo; i <= hi; ++i) c.push_back(i);
  }
  if (c.empty()) return false;
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  *out = std::move(c);
  return true;
}

std::string formatCpuList(const CpuList& c) {
  std::string s;
  for (size_t i = 0; i < c.size();) {
    size_t j = i;
    while (j + 1 < c.size() && c[j + 1] == c[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(c[i]);
    if (j > i) s += '-' + std::to_string(c[j]);
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

CpuList intersectCpus(const CpuList& a, const CpuList& b) {
  CpuList c;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(c));
  return c;
}

ncclResult_t checkProxyCpusSyntax(const std::string& envRaw) {
  const std::string env = trim(envRaw);
  CpuList ignored;
  if (env.empty() || env == "auto" || env == "inherit" || parseCpuList(env, &ignored)) return ncclSuccess;
  return recordError(ncclInvalidArgument,
                     "BRAID_PROXY_CPUS=\"%s\" is not a CPU list (e.g. 0-3,8; CPUs below %d), \"auto\" or \"inherit\"",
                     env.c_str(), kMaxCpu);
}

ncclResult_t planProxyPlacement(const std::string& envRaw, const CpuList& inherited, const CpuList& gpuLocal,
                                const CpuList& allowed, ProxyPlacement* out, const CpuList& nicLocal,
                                const std::string& nicName, bool ignoreBinding) {
  const std::string env = trim(envRaw);
  BRAID_CHECK(checkProxyCpusSyntax(env));
  ProxyPlacement p;
  // The NUMA node the traffic crosses: the NIC's where the backend names one, else the GPU's.
  const CpuList nicOk = allowed.empty() ? nicLocal : intersectCpus(nicLocal, allowed);
  const bool byNic = !nicOk.empty();
  const CpuList& local = byNic ? nicLocal : gpuLocal;
  const std::string localWhat = byNic ? "the NIC " + nicName + "'s local CPUs " : std::string("its GPU's local CPUs ");
  if (env == "inherit") {
    p.why = "the rank's own (" + formatCpuList(inherited) + "; BRAID_PROXY_CPUS=inherit)";
  } else if (!env.empty() && env != "auto") {
    CpuList asked;
    parseCpuList(env, &asked);
    CpuList usable = allowed.empty() ? asked : intersectCpus(asked, allowed);
    if (usable.empty()) {
      // Node-dependent (CPU counts differ between hosts): a warning, not a failure of this rank alone.
      p.why = "the rank's own (" + formatCpuList(inherited) + "): BRAID_PROXY_CPUS=" + env +
              " names no CPU this process may use (" + formatCpuList(allowed) + ")";
      p.warn = true;
    } else {
      p.cpus = usable;
      p.why = formatCpuList(usable) + " (BRAID_PROXY_CPUS=" + env + ")";
    }
  } else if (inherited.empty() || allowed.empty()) {
    p.why = "the rank's own (" + formatCpuList(inherited) + ")";  // nothing known: keep whatever it is
  } else if (ignoreBinding && !intersectCpus(local, allowed).empty()) {
    p.cpus = intersectCpus(local, allowed);
    p.why = localWhat + formatCpuList(p.cpus) + ", whatever the rank's binding to CPUs " + formatCpuList(inherited) +
            " (NCCL_IGNORE_CPU_AFFINITY=1)";
  } else if (inherited.size() > kTightBinding) {
    // A roomy binding is the user's: the thread stays inside it, on its part local to the NIC (or GPU).
    const CpuList near = intersectCpus(local, inherited);
    if (!near.empty() && near.size() < inherited.size()) {
      p.cpus = near;
      p.why = localWhat + formatCpuList(near) + " within the rank's binding to CPUs " + formatCpuList(inherited);
    } else {
      p.why = "the rank's own (" + formatCpuList(inherited) + ")";
    }
  } else {
    CpuList wide = intersectCpus(local, allowed);
    const bool isLocal = wide.size() > inherited.size();
    if (!isLocal) wide = allowed;
    if (wide.size() > inherited.size()) {
      p.cpus = wide;
      p.why = (isLocal ? localWhat : std::string("every CPU this process may use, ")) + formatCpuList(wide) +
              ", not the rank's binding to CPUs " + formatCpuList(inherited) + " (BRAID_PROXY_CPUS=inherit keeps it)";
    } else {
      p.why = "the rank's own (" + formatCpuList(inherited) + "), all this process may use";
    }
  }
  *out = std::move(p);
  return ncclSuccess;
}

ncclResult_t proxyPlacementFor(int64_t busId, const std::string& nicName, const std::string& nicDevice,
                               ProxyPlacement* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CpuList inherited;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) inherited = fromSet(set);
  CpuList gpuLocal;
  if (busId >= 0) {
    char bus[32];
    p2pBusIdToString(busId, bus, sizeof(bus));
    gpuLocal = readCpuListFile((std::string("/sys/bus/pci/devices/") + bus + "/local_cpulist").c_str());
  }
  return planProxyPlacement(params::ProxyCpus(), inherited, gpuLocal, allowedCpus(), out, nicLocalCpus(nicDevice),
                            nicName, params::IgnoreCpuAffinity() == 1);
}

CpuList nicLocalCpus(const std::string& sysfsDevice) {
  return sysfsDevice.empty() ? CpuList{} : readCpuListFile((sysfsDevice + "/local_cpulist").c_str());
}

bool pinThisThread(const CpuList& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

CpuList threadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return {};
  return fromSet(set);
}

}  // namespace braid
