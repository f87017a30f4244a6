// ce_ipc_probe: the two facts a copy-engine path between ranks in different processes rests on, checked on
// the GPUs (tools/ce_pipe_probe.cu measures the path in one process):
//   1. stream memory operations reach memory mapped from the peer process by CUDA IPC: rank 0's stream copies
//      chunks into rank 1's staging (IPC) and writes a flag there (cuStreamWriteValue64); rank 1's stream waits
//      for it (cuStreamWaitValue64), copies the chunk out and writes the slot's flag back into rank 0's memory;
//      the data is checked and the per-chunk time printed;
//   2. a stream blocked in cuStreamWaitValue64 on a flag that never comes (a dead peer) is released by the host
//      writing the flag through another stream, so an abort need not hang.
// Two processes (fork, one GPU each), handles over a pipe. Not part of the library: a measuring tool for
// docs/PERFORMANCE.md (eighteenth session). Build: nvcc -O3 -arch=sm_90 -std=c++17 tools/ce_ipc_probe.cu -lcuda
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "rank %d %s:%d %s: %s\n", rank, __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
  exit(1); } } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = ""; cuGetErrorString(r_, &s_); \
  fprintf(stderr, "rank %d %s:%d %s: %s\n", rank, __FILE__, __LINE__, #x, s_); exit(1); } } while (0)

static int rank = 0;
constexpr size_t kChunk = size_t(64) << 20;
constexpr int kChunks = 32;  // 2 GiB through one 64 MiB slot

static void writeFlag(cudaStream_t s, uint64_t* p, uint64_t v) {
  CU(cuStreamWriteValue64((CUstream)s, (CUdeviceptr)p, v, CU_STREAM_WRITE_VALUE_DEFAULT));
}
static void waitFlag(cudaStream_t s, uint64_t* p, uint64_t v) {
  CU(cuStreamWaitValue64((CUstream)s, (CUdeviceptr)p, v, CU_STREAM_WAIT_VALUE_EQ));
}

static int run(int toPeer, int fromPeer) {
  CK(cudaSetDevice(rank));
  CU(cuInit(0));
  char* mem = nullptr;  // flags page (flag[0]: my slot holds a chunk; flag[1]: the peer's slot is free), then the slot
  CK(cudaMalloc(&mem, 4096 + kChunk));
  std::vector<uint64_t> init = {0, 1};
  CK(cudaMemcpy(mem, init.data(), 16, cudaMemcpyHostToDevice));
  cudaIpcMemHandle_t mine, theirs;
  CK(cudaIpcGetMemHandle(&mine, mem));
  if (write(toPeer, &mine, sizeof(mine)) != sizeof(mine) || read(fromPeer, &theirs, sizeof(theirs)) != sizeof(theirs))
    return 1;
  char* peer = nullptr;
  CK(cudaIpcOpenMemHandle((void**)&peer, theirs, cudaIpcMemLazyEnablePeerAccess));
  uint64_t* myFlags = (uint64_t*)mem;
  uint64_t* peerFlags = (uint64_t*)peer;
  char* src = nullptr;
  char* dst = nullptr;
  CK(cudaMalloc(&src, kChunk));
  CK(cudaMalloc(&dst, kChunk));
  cudaStream_t s, other;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CK(cudaMemset(src, 0x5a, kChunk));
  CK(cudaMemset(dst, 0, kChunk));
  CK(cudaDeviceSynchronize());
  char go = 0;
  if (write(toPeer, &go, 1) != 1 || read(fromPeer, &go, 1) != 1) return 1;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < kChunks; ++k) {
    if (rank == 0) {  // pusher: wait until the peer's slot is free, take it, fill it, tell the peer
      waitFlag(s, &myFlags[1], 1);
      writeFlag(s, &myFlags[1], 0);
      CK(cudaMemcpyAsync(peer + 4096, src, kChunk, cudaMemcpyDeviceToDevice, s));
      writeFlag(s, &peerFlags[0], 1);
    } else {  // taker: wait for a chunk, copy it out, free the slot in the pusher's memory
      waitFlag(s, &myFlags[0], 1);
      writeFlag(s, &myFlags[0], 0);
      CK(cudaMemcpyAsync(dst, mem + 4096, kChunk, cudaMemcpyDeviceToDevice, s));
      writeFlag(s, &peerFlags[1], 1);
    }
  }
  CK(cudaStreamSynchronize(s));
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (rank == 1) {
    std::vector<unsigned char> h(kChunk);
    CK(cudaMemcpy(h.data(), dst, kChunk, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (unsigned char c : h) bad += c != 0x5a;
    printf("1. IPC flags: %d chunks of %zu MiB through one slot in %.1f us (%.1f GB/s, %.2f us per chunk); %zu wrong "
           "bytes\n", kChunks, kChunk >> 20, us, kChunks * (double)kChunk / us / 1e3, us / kChunks, bad);
    // 2. A wait that nothing will satisfy, released by the host through another stream.
    waitFlag(s, &myFlags[0], 7);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cudaError_t q = cudaStreamQuery(s);
    uint64_t release = 7;
    auto r0 = std::chrono::steady_clock::now();
    CK(cudaMemcpyAsync(&myFlags[0], &release, 8, cudaMemcpyHostToDevice, other));
    CK(cudaStreamSynchronize(other));
    while (cudaStreamQuery(s) == cudaErrorNotReady &&
           std::chrono::steady_clock::now() - r0 < std::chrono::seconds(5)) {
    }
    cudaError_t after = cudaStreamQuery(s);
    printf("2. blocked wait after 100 ms: %s; released by the host through another stream: %s after %.1f us\n",
           q == cudaErrorNotReady ? "still waiting" : cudaGetErrorString(q),
           after == cudaSuccess ? "done" : cudaGetErrorString(after),
           std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - r0).count());
  }
  if (write(toPeer, &go, 1) != 1 || read(fromPeer, &go, 1) != 1) return 1;  // keep mappings until both are done
  CK(cudaIpcCloseMemHandle(peer));
  return 0;
}

int main() {
  int a[2], b[2];
  if (pipe(a) || pipe(b)) return 1;
  pid_t child = fork();
  if (child == 0) {
    rank = 1;
    return run(b[1], a[0]);
  }
  int rc = run(a[1], b[0]);
  int st = 0;
  waitpid(child, &st, 0);
  return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
