// Process setup of the perf tools: which launcher started us (mpirun, braidrun, or none), the unique id,
// GPUs or host buffers, the library actually bound (Braid, or NVIDIA NCCL through LD_PRELOAD), buffers,
// communicators and their teardown.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "perf_runtime.h"

#ifdef BRAID_PERF_HAVE_MPI
#include <mpi.h>
#endif

namespace braid {
namespace perf {
namespace {

const char* envStr(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

int envInt(const char* name, int fallback) {
  const char* v = envStr(name);
  return v ? std::atoi(v) : fallback;
}

// Launched by an MPI launcher? (Open MPI, MPICH/Hydra, PMIx, MVAPICH.)
bool mpiEnvPresent() {
  if (envStr("BRAID_PERF_NO_MPI")) return false;
  return envStr("OMPI_COMM_WORLD_SIZE") || envStr("PMI_SIZE") || envStr("PMIX_RANK") || envStr("MPI_LOCALNRANKS") ||
         envStr("MV2_COMM_WORLD_SIZE");
}

#ifndef BRAID_PERF_HAVE_MPI
int mpiEnvWorldSize() {
  for (const char* n : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}) {
    if (envStr(n)) return std::atoi(envStr(n));
  }
  return 1;
}
#endif

// Which library our nccl* calls reach, and its version string.
void identifyLibrary(Process* p) {
  void* sym = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  Dl_info info;
  std::memset(&info, 0, sizeof(info));
  std::string path = "?";
  if (sym && dladdr(sym, &info) && info.dli_fname) {
    char real[PATH_MAX];
    path = realpath(info.dli_fname, real) ? real : info.dli_fname;
  }
  int version = 0;
  ncclGetVersion(&version);
  int major = version / 10000, minor = (version % 10000) / 100, patch = version % 100;
  if (version < 10000) major = version / 1000, minor = (version % 1000) / 100, patch = version % 100;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%d.%d.%d", major, minor, patch);
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  p->info.library = base.find("braid") != std::string::npos ? "Braid" : "NCCL";
  p->info.libraryPath = path;
  p->info.libraryVersion = buf;
}

}  // namespace

void fatal(const Process& p, int rank, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  std::fflush(stdout);
  if (rank >= 0) {
    std::fprintf(stderr, "%s: rank %d: %s\n", p.tool.c_str(), rank, msg);
  } else {
    std::fprintf(stderr, "%s: %s\n", p.tool.c_str(), msg);
  }
  std::fflush(stderr);
#ifdef BRAID_PERF_HAVE_MPI
  if (p.mpiInitialized) MPI_Abort(MPI_COMM_WORLD, 3);
#endif
  std::_Exit(3);
}

void checkNccl(const Process& p, int rank, ncclResult_t res, ncclComm_t comm, const char* what) {
  if (res == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  fatal(p, rank, "%s failed: %s (%d)%s%s", what, ncclGetErrorString(res), static_cast<int>(res),
        (last && *last) ? ": " : "", last ? last : "");
}

void checkCuda(const Process& p, int rank, cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  fatal(p, rank, "%s failed: %s", what, cudaGetErrorString(err));
}

void noteProgress(Process& p) {
  p.lastProgressNs.store(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void setupProcess(Process* p) {
  PerfArgs& a = p->args;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  p->info.hostname = host;
  p->info.tool = p->tool;
  p->info.collective = collInfo(p->coll).name;
  p->info.date = isoDateUtc();
  p->corrupt = envInt("BRAID_PERF_CORRUPT", 0) != 0;
  if (envStr("NCCL_TESTS_MIN_BW")) p->minBw = std::atof(envStr("NCCL_TESTS_MIN_BW"));

  if (envStr("BRAID_NRANKS")) {
    p->launch = Launch::kBraidrun;
    p->nProcs = envInt("BRAID_NRANKS", 1);
    p->proc = envInt("BRAID_RANK", -1);
    p->localRank = envInt("BRAID_LOCAL_RANK", p->proc);
    if (p->nProcs < 1 || p->proc < 0 || p->proc >= p->nProcs)
      fatal(*p, -1, "bad BRAID_RANK=%s / BRAID_NRANKS=%s", envStr("BRAID_RANK") ? envStr("BRAID_RANK") : "(unset)",
            envStr("BRAID_NRANKS"));
    if (p->nProcs > 1 && !envStr("NCCL_COMM_ID"))
      fatal(*p, -1, "BRAID_NRANKS=%d but NCCL_COMM_ID is not set (start the ranks with braidrun)", p->nProcs);
  } else if (mpiEnvPresent()) {
#ifdef BRAID_PERF_HAVE_MPI
    p->launch = Launch::kMpi;
    MPI_Init(nullptr, nullptr);
    p->mpiInitialized = true;
    MPI_Comm_size(MPI_COMM_WORLD, &p->nProcs);
    MPI_Comm_rank(MPI_COMM_WORLD, &p->proc);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p->proc, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &p->localRank);
    MPI_Comm_free(&node);
#else
    if (mpiEnvWorldSize() > 1)
      fatal(*p, -1,
            "started by an MPI launcher with %d processes, but this build has no MPI support (configure "
            "found no MPI); use braidrun, or set BRAID_PERF_NO_MPI=1 to run independent single-process tests",
            mpiEnvWorldSize());
#endif
  }
  p->info.launcher = p->launch == Launch::kMpi ? "mpi" : p->launch == Launch::kBraidrun ? "braidrun" : "single";
  p->info.nprocs = p->nProcs;
  p->nranks = p->nProcs * a.nThreads * a.nGpus;
  p->info.nranks = p->nranks;

  // GPUs, unless there are none or host communicators are asked for.
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    count = 0;
    cudaGetLastError();
  }
  p->deviceCount = count;
  if (envInt("BRAID_HOST_COMM", 0) == 1) {
    p->hostBuffers = true;
    p->hostReason = "BRAID_HOST_COMM=1";
  } else if (count == 0) {
    p->hostBuffers = true;
    p->hostReason = "no GPU visible";
  } else {
    p->hostBuffers = false;
  }
  p->info.buffers = p->hostBuffers ? "host" : "device";
  if (p->hostBuffers && a.graphLaunches > 0) {  // reported in the header
    a.graphLaunches = 0;
    p->graphIgnored = true;
  }
  identifyLibrary(p);

  // Unique id: rank 0 makes it and MPI broadcasts it; under braidrun every process derives the same id from
  // NCCL_COMM_ID; a single process needs one only for ncclCommInitRank (parallel init).
  if (p->launch == Launch::kMpi) {
#ifdef BRAID_PERF_HAVE_MPI
    if (p->proc == 0) checkNccl(*p, 0, ncclGetUniqueId(&p->id), nullptr, "ncclGetUniqueId");
    MPI_Bcast(&p->id, sizeof(p->id), MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
#endif
  } else if (p->launch == Launch::kBraidrun || a.parallelInit) {
    checkNccl(*p, p->proc, ncclGetUniqueId(&p->id), nullptr, "ncclGetUniqueId");
  }

  const int perProc = a.nThreads * a.nGpus;
  p->locals.resize(perProc);
  int gpu0 = envStr("NCCL_TESTS_DEVICE") ? envInt("NCCL_TESTS_DEVICE", 0) : p->localRank * perProc;
  for (int i = 0; i < perProc; ++i) {
    LocalRank& l = p->locals[i];
    l.rank = p->proc * perProc + i;
    char line[512];
    if (p->hostBuffers) {
      l.device = -1;
      std::snprintf(line, sizeof(line), "#  Rank %2d Group %2d Pid %6d on %10s device  - [host] host buffers", l.rank,
                    0, static_cast<int>(getpid()), host);
    } else {
      l.device = gpu0 + i;
      if (l.device >= count)
        fatal(*p, l.rank, "needs GPU %d but only %d are visible (local rank %d, %d ranks per process)", l.device, count,
              p->localRank, perProc);
      cudaDeviceProp prop;
      checkCuda(*p, l.rank, cudaGetDeviceProperties(&prop, l.device), "cudaGetDeviceProperties");
      std::snprintf(line, sizeof(line), "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s", l.rank,
                    0, static_cast<int>(getpid()), host, l.device, prop.pciDomainID, prop.pciBusID, prop.pciDeviceID,
                    prop.name);
    }
    l.deviceLine = line;
  }
}

void allocateBuffers(Process* p) {
  const size_t bytes = std::max<size_t>(p->args.maxBytes, 64);
  for (LocalRank& l : p->locals) {
    l.bufBytes = bytes;
    const size_t xchgRecvBytes = kExchangeBytes * static_cast<size_t>(p->nranks);
    if (p->hostBuffers) {
      l.send = static_cast<char*>(std::malloc(bytes));
      l.recv = static_cast<char*>(std::malloc(bytes));
      l.xchgSend = static_cast<unsigned char*>(std::calloc(1, kExchangeBytes));
      l.xchgRecv = static_cast<unsigned char*>(std::calloc(1, xchgRecvBytes));
      if (!l.send || !l.recv || !l.xchgSend || !l.xchgRecv)
        fatal(*p, l.rank, "cannot allocate 2 x %zu bytes of host buffers", bytes);
      // Touch the pages now so that the first timed operations do not pay for page faults.
      std::memset(l.send, 0, bytes);
      std::memset(l.recv, 0, bytes);
    } else {
      checkCuda(*p, l.rank, cudaSetDevice(l.device), "cudaSetDevice");
      if (p->args.localRegister > 0) {
        // Registration (symmetric windows above all) wants NCCL's allocator, as nccl-tests uses.
        l.ncclAllocated = true;
        checkNccl(*p, l.rank, ncclMemAlloc(reinterpret_cast<void**>(&l.send), bytes), nullptr, "ncclMemAlloc");
        checkNccl(*p, l.rank, ncclMemAlloc(reinterpret_cast<void**>(&l.recv), bytes), nullptr, "ncclMemAlloc");
      } else {
        checkCuda(*p, l.rank, cudaMalloc(&l.send, bytes), "cudaMalloc(sendbuff)");
        checkCuda(*p, l.rank, cudaMalloc(&l.recv, bytes), "cudaMalloc(recvbuff)");
      }
      checkCuda(*p, l.rank, cudaMalloc(&l.xchgSend, kExchangeBytes), "cudaMalloc");
      checkCuda(*p, l.rank, cudaMalloc(&l.xchgRecv, xchgRecvBytes), "cudaMalloc");
      if (p->args.streamNull) {
        l.stream = nullptr;
      } else {
        checkCuda(*p, l.rank, cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "cudaStreamCreate");
      }
    }
  }
}

namespace {

void initRank(Process* p, LocalRank* l) {
  if (l->device >= 0) checkCuda(*p, l->rank, cudaSetDevice(l->device), "cudaSetDevice");
  checkNccl(*p, l->rank, ncclCommInitRank(&l->comm, p->nranks, p->id, l->rank), nullptr, "ncclCommInitRank");
}

// ncclCommInitRank for several local ranks: one thread each, since each call blocks until all ranks join.
void initRanks(Process* p, LocalRank* first, int n) {
  if (n == 1) return initRank(p, first);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(initRank, p, first + i);
  for (auto& t : threads) t.join();
}

}  // namespace

void initComms(Process* p, int thread) {
  const int perThread = p->args.nGpus;
  if (thread >= 0) return initRanks(p, &p->locals[thread * perThread], perThread);
  const int n = static_cast<int>(p->locals.size());
  if (p->nProcs == 1) {
    std::vector<ncclComm_t> comms(n, nullptr);
    std::vector<int> devs(n);
    for (int i = 0; i < n; ++i) devs[i] = p->locals[i].device;
    checkNccl(*p, 0, ncclCommInitAll(comms.data(), n, p->hostBuffers ? nullptr : devs.data()), nullptr,
              "ncclCommInitAll");
    for (int i = 0; i < n; ++i) p->locals[i].comm = comms[i];
  } else {
    initRanks(p, p->locals.data(), n);
  }
}

void registerBuffers(Process* p, int thread) {
  if (p->args.localRegister == 0) return;
  const int perThread = p->args.nGpus;
  if (perThread > 1) checkNccl(*p, -1, ncclGroupStart(), nullptr, "ncclGroupStart");
  for (int i = thread * perThread; i < (thread + 1) * perThread; ++i) {
    LocalRank& l = p->locals[i];
    if (p->args.localRegister == 2) {
      checkNccl(*p, l.rank,
                ncclCommWindowRegister(l.comm, l.send, l.bufBytes, reinterpret_cast<ncclWindow_t*>(&l.sendReg),
                                       NCCL_WIN_COLL_SYMMETRIC),
                l.comm, "ncclCommWindowRegister(sendbuff)");
      checkNccl(*p, l.rank,
                ncclCommWindowRegister(l.comm, l.recv, l.bufBytes, reinterpret_cast<ncclWindow_t*>(&l.recvReg),
                                       NCCL_WIN_COLL_SYMMETRIC),
                l.comm, "ncclCommWindowRegister(recvbuff)");
    } else {
      checkNccl(*p, l.rank, ncclCommRegister(l.comm, l.send, l.bufBytes, &l.sendReg), l.comm,
                "ncclCommRegister(sendbuff)");
      checkNccl(*p, l.rank, ncclCommRegister(l.comm, l.recv, l.bufBytes, &l.recvReg), l.comm,
                "ncclCommRegister(recvbuff)");
    }
  }
  if (perThread > 1) checkNccl(*p, -1, ncclGroupEnd(), nullptr, "ncclGroupEnd");
}

void deregisterBuffers(Process* p, int thread) {
  if (p->args.localRegister == 0) return;
  const int perThread = p->args.nGpus;
  for (int i = thread * perThread; i < (thread + 1) * perThread; ++i) {
    LocalRank& l = p->locals[i];
    if (p->args.localRegister == 2) {
      checkNccl(*p, l.rank, ncclCommWindowDeregister(l.comm, static_cast<ncclWindow_t>(l.sendReg)), l.comm,
                "ncclCommWindowDeregister");
      checkNccl(*p, l.rank, ncclCommWindowDeregister(l.comm, static_cast<ncclWindow_t>(l.recvReg)), l.comm,
                "ncclCommWindowDeregister");
    } else {
      checkNccl(*p, l.rank, ncclCommDeregister(l.comm, l.sendReg), l.comm, "ncclCommDeregister");
      checkNccl(*p, l.rank, ncclCommDeregister(l.comm, l.recvReg), l.comm, "ncclCommDeregister");
    }
  }
}

void teardown(Process* p) {
  for (LocalRank& l : p->locals) {
    if (l.device >= 0) cudaSetDevice(l.device);
    if (l.comm) checkNccl(*p, l.rank, ncclCommDestroy(l.comm), nullptr, "ncclCommDestroy");
    l.comm = nullptr;
    if (p->hostBuffers) {
      std::free(l.send);
      std::free(l.recv);
      std::free(l.xchgSend);
      std::free(l.xchgRecv);
    } else {
      if (l.ncclAllocated) {
        ncclMemFree(l.send);
        ncclMemFree(l.recv);
      } else {
        cudaFree(l.send);
        cudaFree(l.recv);
      }
      cudaFree(l.xchgSend);
      cudaFree(l.xchgRecv);
      if (l.stream) cudaStreamDestroy(l.stream);
    }
    l.send = l.recv = nullptr;
    l.xchgSend = l.xchgRecv = nullptr;
  }
}

void finalizeLaunch(Process* p) {
#ifdef BRAID_PERF_HAVE_MPI
  if (p->mpiInitialized) MPI_Finalize();
  p->mpiInitialized = false;
#endif
}

}  // namespace perf
}  // namespace braid
