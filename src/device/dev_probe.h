// Phase timestamps inside a kernel, for finding where a small collective's microseconds go (docs/TUNING.md,
// "Measured bounds"; tools/gpu/probe.sh). Compiled in only with -DBRAID_DEV_PROBE=ON (CMake): thread 0 of CTA 0
// notes the SM clock at each BRAID_PROBE(k) and, at BRAID_PROBE_REPORT, records the launch: each mark's cycles
// since the first, the launch's nanoseconds by %globaltimer (to convert cycles), the %globaltimer at its first mark
// (the time from one launch's report to the next one's first mark is outside the CTA) and a sequence number. Every
// 32nd launch prints the last 32 records, a line each. Without the option both macros are empty.
#pragma once

#ifdef __CUDACC__

#ifdef BRAID_DEV_PROBE
#include <cstdio>
#endif

namespace braid {

constexpr int kDevProbeMarks = 12;

#ifdef BRAID_DEV_PROBE
struct DevProbe {
  long long t[kDevProbeMarks];
  unsigned long long ns0;
};
// One per CTA of each kernel that uses it (a function-scope __shared__ is static storage).
__device__ __forceinline__ DevProbe& devProbe() {
  __shared__ DevProbe p;
  return p;
}
// Launches' records wait in a ring and are printed 32 at a time by the launch that fills it, so 31 of 32 launches
// (and the time between them) carry no printing. One ring per translation unit (static): a kernel's records stay
// in its own file's ring, in launch order.
constexpr int kDevProbeRing = 32;
struct DevProbeRecord {
  const char* what;
  int rank;
  unsigned long long seq, at, ns;
  long long d[kDevProbeMarks];
};
static __device__ DevProbeRecord gDevProbeRing[kDevProbeRing];
static __device__ unsigned long long gDevProbeSeq;
__device__ __forceinline__ bool devProbeThread() { return threadIdx.x == 0 && blockIdx.x == 0; }
__device__ __forceinline__ void devProbeMark(int k) {
  if (!devProbeThread()) return;
  DevProbe& p = devProbe();
  if (k == 0) {
    for (int i = 0; i < kDevProbeMarks; ++i) p.t[i] = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(p.ns0));
  }
  p.t[k] = clock64();
}
__device__ __forceinline__ void devProbeReport(const char* what, int rank) {
  if (!devProbeThread()) return;
  DevProbe& p = devProbe();
  unsigned long long ns1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns1));
  const unsigned long long seq = atomicAdd(&gDevProbeSeq, 1ull);
  DevProbeRecord& r = gDevProbeRing[seq % kDevProbeRing];
  r.what = what;
  r.rank = rank;
  r.seq = seq;
  r.at = p.ns0;
  r.ns = ns1 - p.ns0;
  for (int i = 0; i < kDevProbeMarks; ++i) r.d[i] = p.t[i] ? p.t[i] - p.t[0] : -1;
  if (seq % kDevProbeRing != kDevProbeRing - 1) return;
  __threadfence();
  for (int j = 0; j < kDevProbeRing; ++j) {
    const DevProbeRecord& q = gDevProbeRing[j];
    printf(
        "BRAID_PROBE %s rank %d ns %llu cyc %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld at %llu seq %llu\n",
        q.what, q.rank, q.ns, q.d[1], q.d[2], q.d[3], q.d[4], q.d[5], q.d[6], q.d[7], q.d[8], q.d[9], q.d[10], q.d[11],
        q.at, q.seq);
  }
}
#define BRAID_PROBE(k) ::braid::devProbeMark(k)
#define BRAID_PROBE_REPORT(what, rank) ::braid::devProbeReport(what, rank)
#else
#define BRAID_PROBE(k) ((void)0)
#define BRAID_PROBE_REPORT(what, rank) ((void)0)
#endif

}  // namespace braid

#endif  // __CUDACC__
