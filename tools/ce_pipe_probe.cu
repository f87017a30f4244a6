// ce_pipe_probe: rooted collectives moved by the copy engines instead of SM stores, as a 2-rank library would
// run them, to see what is left of the copy engine's ~390 GB/s per direction (tools/ce_probe.cu) once the data
// goes through staging slots in the peer's memory, chunk by chunk, ordered only by stream memory operations
// (cuStreamWriteValue64 of a per-slot flag into the peer's memory after a chunk's copy, cuStreamWaitValue64
// before using it; every flag back in its first state after a call, so graphs could replay them), on the user's
// stream or on copy streams forked from it, no host in the loop. One process, two GPUs, peer access. Not part of
// the library: a measuring tool for docs/PERFORMANCE.md (eighteenth session).
//   broadcast  root GPU 0: chunk k -> GPU 1's slot k % slots (CE); GPU 1: wait, slot -> output (CE, local),
//              the slot's flag back; out of place the root's own copy runs beside on a forked stream (SM)
//   reduce     GPU 1 pushes chunks into GPU 0's slots; GPU 0 waits, an SM kernel adds slot + own input
// Every output is checked. Build: nvcc -O3 -arch=sm_90 -std=c++17 tools/ce_pipe_probe.cu -lcuda -o ce_pipe_probe;
// run: ce_pipe_probe [max MiB (512)] [chunk MiB (32)] [slots (2)] [copy streams per side, 1 or 2 (1)]
//      [1: the peer's slot -> output copy by an SM kernel (0: copy engine)]. Calls rotate through the slots.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = ""; cuGetErrorString(r_, &s_); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); exit(1); } } while (0)

constexpr int kMaxSlots = 8;

__global__ void __launch_bounds__(512, 1) smCopy(const float4* src, float4* dst, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
__global__ void __launch_bounds__(512, 1) smAdd(const float4* a, const float4* b, float4* dst, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float4 x = a[i], y = b[i];
    dst[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}
__global__ void fill(float* p, size_t n, float base) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = base + (float)(i % 1000);
}

// Per-slot flags that return to their first state after every call, so a captured graph could replay them:
// ready[j] (in the slot owner's memory) 1 while slot j holds a chunk not yet taken; peerFree[j] (in the pusher's
// memory) 1 while the peer's slot j may be written. Each waiter resets the flag it waited for.
struct Gpu {
  int dev;
  float* in;
  float* out;
  char* stage;          // slots * chunk bytes, written by the peer
  uint64_t* ready;      // [kMaxSlots], then peerFree [kMaxSlots]
  cudaStream_t s, side[3];
  cudaEvent_t fork, join[3];
};

static Gpu g[2];
static size_t chunk;
static int slots = 2, nStreams = 1, ctas = 64;
static bool smTake = false;   // the peer's slot -> output copy by an SM kernel instead of the copy engine
static int cursor[2] = {0, 0};  // the next slot of each GPU's staging: calls rotate through the slots

static uint64_t* peerFree(int r) { return g[r].ready + kMaxSlots; }
static void signal(cudaStream_t s, uint64_t* where, uint64_t v) {
  CU(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)where, v, CU_STREAM_WRITE_VALUE_DEFAULT));
}
static void await(cudaStream_t s, uint64_t* where, uint64_t v) {
  CU(cuStreamWaitValue64((CUstream)s, (CUdeviceptr)where, v, CU_STREAM_WAIT_VALUE_EQ));
}
// The streams a side of a transfer uses: the user's stream alone, or nStreams side streams forked from it.
static cudaStream_t lane(int r, int j) { return nStreams == 1 ? g[r].s : g[r].side[j % nStreams]; }
static void forkLanes(int r) {
  if (nStreams == 1) return;
  CK(cudaSetDevice(r));
  CK(cudaEventRecord(g[r].fork, g[r].s));
  for (int i = 0; i < nStreams; ++i) CK(cudaStreamWaitEvent(g[r].side[i], g[r].fork));
}
static void joinLanes(int r) {
  if (nStreams == 1) return;
  CK(cudaSetDevice(r));
  for (int i = 0; i < nStreams; ++i) {
    CK(cudaEventRecord(g[r].join[i], g[r].side[i]));
    CK(cudaStreamWaitEvent(g[r].s, g[r].join[i]));
  }
}

// Pushes `bytes` from `src` on GPU f into GPU t's slots, chunk k into slot k % slots on lane k % slots.
static void push(int f, int t, const char* src, size_t bytes) {
  CK(cudaSetDevice(f));
  int k = cursor[t];
  for (size_t off = 0; off < bytes; off += chunk, ++k) {
    size_t n = std::min(chunk, bytes - off);
    int j = k % slots;
    cudaStream_t s = lane(f, j);
    await(s, &peerFree(f)[j], 1);
    signal(s, &peerFree(f)[j], 0);
    CK(cudaMemcpyAsync(g[t].stage + j * chunk, src + off, n, cudaMemcpyDeviceToDevice, s));
    signal(s, &g[t].ready[j], 1);
  }
}
// GPU t takes the chunks from its slots: copies them to dst (add == nullptr) or adds `add` to them.
static void take(int t, int f, char* dst, const char* add, size_t bytes) {
  CK(cudaSetDevice(t));
  int k = cursor[t];
  for (size_t off = 0; off < bytes; off += chunk, ++k) {
    size_t n = std::min(chunk, bytes - off);
    int j = k % slots;
    cudaStream_t s = lane(t, j);
    await(s, &g[t].ready[j], 1);
    signal(s, &g[t].ready[j], 0);
    const char* slot = g[t].stage + j * chunk;
    if (add)
      smAdd<<<ctas, 512, 0, s>>>((const float4*)slot, (const float4*)(add + off), (float4*)(dst + off), n / 16);
    else if (smTake)
      smCopy<<<ctas, 512, 0, s>>>((const float4*)slot, (float4*)(dst + off), n / 16);
    else
      CK(cudaMemcpyAsync(dst + off, slot, n, cudaMemcpyDeviceToDevice, s));
    signal(s, &peerFree(f)[j], 1);
  }
  cursor[t] = k % slots;
}

static void broadcast(size_t bytes, bool inPlace) {
  char* src = (char*)g[0].in;
  forkLanes(0);
  if (!inPlace) {  // the root's own copy beside the pushes, on the third side stream
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(g[0].fork, g[0].s));
    CK(cudaStreamWaitEvent(g[0].side[2], g[0].fork));
    smCopy<<<ctas, 512, 0, g[0].side[2]>>>((const float4*)src, (float4*)g[0].out, bytes / 16);
    CK(cudaEventRecord(g[0].join[2], g[0].side[2]));
  }
  push(0, 1, src, bytes);
  joinLanes(0);
  if (!inPlace) CK(cudaStreamWaitEvent(g[0].s, g[0].join[2]));
  forkLanes(1);
  take(1, 0, inPlace ? (char*)g[1].in : (char*)g[1].out, nullptr, bytes);
  joinLanes(1);
}
static void reduce(size_t bytes) {
  forkLanes(1);
  push(1, 0, (const char*)g[1].in, bytes);
  joinLanes(1);
  forkLanes(0);
  take(0, 1, (char*)g[0].out, (const char*)g[0].in, bytes);
  joinLanes(0);
}

static void syncAll() {
  for (int r = 0; r < 2; ++r) {
    CK(cudaSetDevice(r));
    CK(cudaStreamSynchronize(g[r].s));
  }
}

// Elements of p on GPU r that differ from base + mult * (i % 1000).
static size_t checkOut(int r, const float* p, size_t n, float base, float mult) {
  std::vector<float> h(n);
  CK(cudaSetDevice(r));
  CK(cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += h[i] != base + mult * (float)(i % 1000);
  return bad;
}

int main(int argc, char** argv) {
  size_t maxMiB = argc > 1 ? strtoul(argv[1], nullptr, 10) : 512;
  chunk = (argc > 2 ? strtoul(argv[2], nullptr, 10) : 32) << 20;
  slots = std::min(kMaxSlots, argc > 3 ? atoi(argv[3]) : 2);
  nStreams = std::min(2, argc > 4 ? atoi(argv[4]) : 1);
  smTake = argc > 5 && atoi(argv[5]) == 1;
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) {
    printf("ce_pipe_probe: needs two GPUs, found %d\n", n);
    return 0;
  }
  CU(cuInit(0));
  size_t maxBytes = maxMiB << 20;
  for (int r = 0; r < 2; ++r) {
    g[r].dev = r;
    CK(cudaSetDevice(r));
    CK(cudaDeviceEnablePeerAccess(1 - r, 0));
    CK(cudaMalloc(&g[r].in, maxBytes));
    CK(cudaMalloc(&g[r].out, maxBytes));
    CK(cudaMalloc(&g[r].stage, slots * chunk));
    CK(cudaMalloc(&g[r].ready, 2 * kMaxSlots * sizeof(uint64_t)));
    std::vector<uint64_t> init(2 * kMaxSlots, 0);
    std::fill(init.begin() + kMaxSlots, init.end(), 1);
    CK(cudaMemcpy(g[r].ready, init.data(), init.size() * sizeof(uint64_t), cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&g[r].s, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&g[r].fork, cudaEventDisableTiming));
    for (int i = 0; i < 3; ++i) {
      CK(cudaStreamCreateWithFlags(&g[r].side[i], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&g[r].join[i], cudaEventDisableTiming));
    }
    int v = 0;
    CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, r));
    printf("GPU %d: 64-bit stream memory operations %s\n", r, v ? "yes" : "no");
  }
  printf("chunk %zu MiB, %d slots, %d copy streams per side, the peer's copy by %s, %d CTAs per SM kernel; per-call "
         "time in us (mean of back-to-back calls), algbw GB/s\n", chunk >> 20, slots, nStreams, smTake ? "SM" : "CE",
         ctas);
  printf("| collective | bytes | us | GB/s | wrong elements |\n|---|---|---|---|---|\n");
  struct Case { const char* name; int kind; };
  const Case cases[] = {{"broadcast in place", 0}, {"broadcast out of place", 1}, {"reduce", 2}};
  for (const Case& c : cases) {
    for (size_t bytes = size_t(32) << 20; bytes <= maxBytes; bytes *= 2) {
      size_t nf = bytes / 4;
      for (int r = 0; r < 2; ++r) {
        CK(cudaSetDevice(r));
        fill<<<264, 512, 0, g[r].s>>>(g[r].in, nf, 1.f + r);
        CK(cudaMemsetAsync(g[r].out, 0xff, bytes, g[r].s));
      }
      syncAll();
      auto run = [&] {
        if (c.kind <= 1) broadcast(bytes, c.kind == 0);
        if (c.kind == 2) reduce(bytes);
      };
      run();
      syncAll();
      // Check once, before the timed calls (in place overwrites the input with itself: idempotent).
      size_t bad = 0;
      if (c.kind == 0) bad = checkOut(1, g[1].in, nf, 1.f, 1.f);
      if (c.kind == 1) bad = checkOut(1, g[1].out, nf, 1.f, 1.f) + checkOut(0, g[0].out, nf, 1.f, 1.f);
      if (c.kind == 2) bad = checkOut(0, g[0].out, nf, 3.f, 2.f);
      int iters = (int)std::max<size_t>(10, (size_t(4) << 30) / bytes);
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) run();
      syncAll();
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      printf("| %s | %zu | %.2f | %.1f | %zu |\n", c.name, bytes, us, bytes / us / 1e3, bad);
    }
  }
  // The same out-of-place broadcast captured into a graph per GPU and replayed: the flags must come back to their
  // first state after every replay, and each replay must move the data again (outputs poisoned before the last).
  {
    size_t bytes = maxBytes, nf = bytes / 4;
    cudaGraph_t graph[2];
    cudaGraphExec_t exec[2];
    for (int r = 0; r < 2; ++r) {
      CK(cudaSetDevice(r));
      fill<<<264, 512, 0, g[r].s>>>(g[r].in, nf, 1.f + r);
    }
    syncAll();
    for (int r = 0; r < 2; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaStreamBeginCapture(g[r].s, cudaStreamCaptureModeRelaxed));
    }
    broadcast(bytes, false);
    for (int r = 0; r < 2; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaStreamEndCapture(g[r].s, &graph[r]));
      CK(cudaGraphInstantiate(&exec[r], graph[r], 0));
    }
    auto replay = [&] {
      for (int r = 0; r < 2; ++r) {
        CK(cudaSetDevice(r));
        CK(cudaGraphLaunch(exec[r], g[r].s));
      }
    };
    for (int i = 0; i < 3; ++i) replay();
    syncAll();
    for (int r = 0; r < 2; ++r) {
      CK(cudaSetDevice(r));
      CK(cudaMemset(g[r].out, 0xff, bytes));
    }
    int iters = 20;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) replay();
    syncAll();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    size_t bad = checkOut(1, g[1].out, nf, 1.f, 1.f) + checkOut(0, g[0].out, nf, 1.f, 1.f);
    printf("| broadcast out of place, graph replays | %zu | %.2f | %.1f | %zu |\n", bytes, us, bytes / us / 1e3, bad);
  }
  return 0;
}
