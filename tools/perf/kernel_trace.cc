// libbraid_kernel_trace.so: GPU kernel and CUDA runtime call times of any CUDA program, through CUPTI's activity
// records, for telling a kernel bound from a launch or host bound at sizes where the perf tools' averages cannot.
// Load it with LD_PRELOAD (Braid or NVIDIA NCCL alike); when the process's CUDA contexts end it prints to stderr,
// for each GPU, each kernel name's count, median duration and median gap since the previous kernel on that GPU
// ended, and each runtime call's count and median host time.
//
//   KERNEL_TRACE_RANK=R   print only in the process whose OMPI_COMM_WORLD_RANK or BRAID_RANK is R (default: all)
//   KERNEL_TRACE_SKIP=N   leave out each GPU's first N kernels and the first N calls of each runtime call (warm-up)
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelRec {
  uint64_t start, end;
  std::string name;
};

struct State {
  std::mutex mu;
  std::map<uint32_t, std::vector<KernelRec>> kernels;   // by device
  std::map<std::string, std::vector<uint64_t>> calls;   // runtime call -> host durations (ns)
  bool printed = false;
};

State& state() {
  static State* s = new State;  // never destroyed: CUPTI may deliver buffers during exit
  return *s;
}

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *maxRecords = 0;
}

std::string shortName(const char* mangled) {
  if (!mangled) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : mangled;
  free(d);
  const size_t paren = s.find('(');  // the signature says nothing the name does not
  if (paren != std::string::npos && paren > 0) s.resize(paren);
  if (s.size() > 56) s = s.substr(0, 53) + "...";
  return s;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validSize) {
  State& st = state();
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(st.mu);
  while (cuptiActivityGetNextRecord(buffer, validSize, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      st.kernels[k->deviceId].push_back(KernelRec{k->start, k->end, shortName(k->name)});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const char* name = nullptr;
      cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
      st.calls[name ? name : "?"].push_back(a->end - a->start);
    }
  }
  free(buffer);
}

double medianUs(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return static_cast<double>(v[v.size() / 2]) / 1000.0;
}

bool thisRankPrints() {
  const char* want = getenv("KERNEL_TRACE_RANK");
  if (!want || !*want) return true;
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r) r = getenv("BRAID_RANK");
  return std::string(r ? r : "0") == want;
}

void report() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.printed || !thisRankPrints()) return;
  st.printed = true;
  const char* skipEnv = getenv("KERNEL_TRACE_SKIP");
  const size_t skip = skipEnv ? static_cast<size_t>(strtoull(skipEnv, nullptr, 10)) : 0;
  fprintf(stderr, "kernel_trace: %-6s %-56s %7s %10s %8s\n", "GPU", "kernel", "count", "median us", "gap us");
  for (auto& [dev, recs] : st.kernels) {
    std::sort(recs.begin(), recs.end(), [](const KernelRec& a, const KernelRec& b) { return a.start < b.start; });
    std::map<std::string, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> per;
    for (size_t i = skip; i < recs.size(); ++i) {
      auto& p = per[recs[i].name];
      p.first.push_back(recs[i].end - recs[i].start);
      if (i > 0 && recs[i].start >= recs[i - 1].end) p.second.push_back(recs[i].start - recs[i - 1].end);
    }
    for (auto& [name, p] : per)
      fprintf(stderr, "kernel_trace: %-6u %-56s %7zu %10.2f %8.2f\n", dev, name.c_str(), p.first.size(),
              medianUs(p.first), medianUs(p.second));
  }
  fprintf(stderr, "kernel_trace: %-63s %7s %10s\n", "runtime call", "count", "median us");
  for (auto& [name, v] : st.calls) {
    if (v.size() <= skip) continue;
    std::vector<uint64_t> kept(v.begin() + static_cast<long>(skip), v.end());
    fprintf(stderr, "kernel_trace: %-63s %7zu %10.2f\n", name.c_str(), kept.size(), medianUs(kept));
  }
}

// Records of a context are lost once it is gone: report when the first one starts to end (cudaDeviceReset,
// exit), or at exit where none ends explicitly.
void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void*) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) report();
}

__attribute__((constructor)) void start() {
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, onCallback, nullptr) != CUPTI_SUCCESS) {
    fprintf(stderr, "kernel_trace: cuptiSubscribe failed; no trace\n");
    return;
  }
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  atexit(report);
}

}  // namespace
