// Placement of the NET proxy's threads: the policy (planProxyPlacement) and the system facts it needs.
#include "transport/net/proxy_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/param.h"
#include "core/result.h"

namespace braid {

namespace {

constexpr int kMaxCpu = 1 << 16;  // sanity bound for parsed CPU numbers

bool parseInt(const std::string& s, int* v) {
  if (s.empty() || s.size() > 6) return false;
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

// Every CPU this process may be given: the cgroup's cpuset (v2, then v1), else the online CPUs.
CpuList allowedCpus() {
  for (const char* p : {"/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus",
                        "/sys/devices/system/cpu/online"}) {
    CpuList c = readCpuListFile(p);
    if (!c.empty()) return c;
  }
  return {};
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

ncclResult_t planProxyPlacement(const std::string& envRaw, const CpuList& inherited, const CpuList& gpuLocal,
                                const CpuList& allowed, int threads, ProxyPlacement* out) {
  // At most one thread per CPU of the set, but 2 even on one CPU: 2 threads on the rank's single core
  // measured 3.0-3.5 GB/s against 2.4-2.6 for one.
  auto capFor = [](size_t cpus) { return std::max<int>(2, static_cast<int>(cpus)); };
  const std::string env = trim(envRaw);
  ProxyPlacement p;
  if (env == "inherit") {
    p.maxThreads = capFor(inherited.size());
    p.why = "BRAID_PROXY_CPUS=inherit";
  } else if (!env.empty() && env != "auto") {
    CpuList asked;
    if (!parseCpuList(env, &asked)) {
      return recordError(ncclInvalidArgument,
                         "BRAID_PROXY_CPUS=\"%s\" is not a CPU list (e.g. 0-3,8), \"auto\" or \"inherit\"", env.c_str());
    }
    p.cpus = allowed.empty() ? asked : intersectCpus(asked, allowed);
    if (p.cpus.empty()) {
      return recordError(ncclInvalidArgument, "BRAID_PROXY_CPUS=\"%s\" names no CPU this process may use (%s)",
                         env.c_str(), formatCpuList(allowed).c_str());
    }
    p.maxThreads = capFor(p.cpus.size());
    p.why = "BRAID_PROXY_CPUS=" + env;
  } else if (static_cast<int>(inherited.size()) > threads || allowed.empty()) {
    // Room for the threads beside the main thread (or nothing known to widen to).
    p.maxThreads = capFor(inherited.size());
    p.why = "the rank's own (" + formatCpuList(inherited) + ")";
  } else {
    CpuList wide = intersectCpus(gpuLocal, allowed);
    const bool local = wide.size() > inherited.size();
    if (!local) wide = allowed;
    if (wide.size() > inherited.size()) {
      p.cpus = wide;
      p.maxThreads = capFor(wide.size());
      p.why = (local ? "its GPU's local CPUs " : "every CPU this process may use, ") + formatCpuList(wide) +
              ", not the rank's binding to CPUs " + formatCpuList(inherited) + " (BRAID_PROXY_CPUS=inherit keeps it)";
    } else {
      p.maxThreads = capFor(inherited.size());
      p.why = "the rank's own (" + formatCpuList(inherited) + "), all this process may use";
    }
  }
  *out = std::move(p);
  return ncclSuccess;
}

ncclResult_t proxyPlacementFor(int64_t busId, int threads, ProxyPlacement* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CpuList inherited;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) inherited = fromSet(set);
  CpuList gpuLocal;
  if (busId >= 0) {
    char path[96];
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.0/local_cpulist",
             static_cast<unsigned>(busId >> 16), static_cast<unsigned>((busId >> 8) & 0xff),
             static_cast<unsigned>(busId & 0xff));
    gpuLocal = readCpuListFile(path);
  }
  return planProxyPlacement(params::ProxyCpus(), inherited, gpuLocal, allowedCpus(), threads, out);
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
