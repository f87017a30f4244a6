// The perf tools' runtime, shared by perf_launch.cc (process setup: launcher, MPI, devices, buffers,
// communicators) and perf_bench.cc (the measurement loop run by each thread). Only nccl.h and the CUDA runtime
// are used, so the same binary measures NVIDIA NCCL when its libnccl.so.2 is preloaded.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf_args.h"
#include "perf_coll.h"
#include "perf_report.h"

namespace braid {
namespace perf {

enum class Launch { kSingle, kBraidrun, kMpi };

// Bytes per rank in the small all-gathers the tools use among themselves (timings, error counts, device
// lines); they go through the communicator under test, so no second transport is needed under braidrun.
constexpr size_t kExchangeBytes = 256;

// One communicator of this process and its buffers.
struct LocalRank {
  int rank = 0;     // rank in the communicator
  int device = -1;  // CUDA device; -1 with host buffers
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  char* send = nullptr;  // device memory, or host memory with host buffers
  char* recv = nullptr;
  size_t bufBytes = 0;
  bool ncclAllocated = false;  // ncclMemAlloc (with -R) rather than cudaMalloc
  void* sendReg = nullptr;     // -R handles
  void* recvReg = nullptr;
  unsigned char* xchgSend = nullptr;  // kExchangeBytes
  unsigned char* xchgRecv = nullptr;  // nranks * kExchangeBytes
  std::vector<unsigned char> stage;   // host staging for device buffers
  std::string deviceLine;             // "#  Rank ..." as nccl-tests prints it
};

struct Process {
  PerfArgs args;
  Coll coll = Coll::AllReduce;
  std::string tool;
  Launch launch = Launch::kSingle;
  bool mpiInitialized = false;
  int nProcs = 1;
  int proc = 0;
  int localRank = 0;
  int nranks = 1;
  bool hostBuffers = true;
  std::string hostReason;
  bool graphIgnored = false;  // -G given with host buffers
  int deviceCount = 0;
  bool corrupt = false;  // BRAID_PERF_CORRUPT=1
  double minBw = -1;     // NCCL_TESTS_MIN_BW
  ncclUniqueId id{};
  std::vector<LocalRank> locals;  // nThreads * nGpus, thread t owns [t*nGpus, (t+1)*nGpus)
  RunInfo info;
  std::atomic<int64_t> lastProgressNs{0};
};

// What a thread's measurement loop reports back (identical on every thread; thread 0 of process 0 prints).
struct ThreadResult {
  int64_t outOfBounds = 0;
  double busBwSum = 0;
  int busBwCount = 0;
  std::vector<ResultRow> rows;
};

// Prints "<tool>: rank R: message" to stderr and ends the job (MPI_Abort under mpirun), exit status 3.
[[noreturn]] void fatal(const Process& p, int rank, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void checkNccl(const Process& p, int rank, ncclResult_t res, ncclComm_t comm, const char* what);
void checkCuda(const Process& p, int rank, cudaError_t err, const char* what);
void noteProgress(Process& p);

// perf_launch.cc
void setupProcess(Process* p);           // launcher, MPI, GPUs, library identity, header lines
void allocateBuffers(Process* p);        // per LocalRank: streams, buffers, exchange scratch
void initComms(Process* p, int thread);  // thread < 0: all locals (not parallel init); else one thread's
void registerBuffers(Process* p, int thread);
void deregisterBuffers(Process* p, int thread);
void teardown(Process* p);
void finalizeLaunch(Process* p);

// perf_bench.cc
void runThread(Process* p, int thread, ThreadResult* out);

}  // namespace perf
}  // namespace braid
