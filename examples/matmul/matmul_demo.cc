// matmul_demo: C = A x B on N ranks through Braid's NCCL API, checked and timed. Launch with
// `braidrun -n N -- matmul_demo` (or `mpirun -np N matmul_demo` in a build with MPI). The root makes A and B,
// runs the distributed multiply (matmul_run.cc), verifies C against a single-rank reference multiply of its
// own, and prints a timing breakdown with the speedup over one rank. Exit status: 0 verified, 1 not
// verified, 2 bad arguments, 3 a runtime failure.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "matmul_compute.h"
#include "matmul_launch.h"
#include "matmul_options.h"
#include "matmul_run.h"
#include "matmul_types.h"
#include "nccl.h"

namespace matmul {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool envIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

// Fills `count` elements of type T with inputValue(seed, which, i); returns max |element| after rounding.
template <typename T>
double fillMatrix(std::vector<char>* out, size_t count, uint64_t seed, uint64_t which) {
  out->resize(count * sizeof(T));
  T* p = reinterpret_cast<T*>(out->data());
  float maxAbs = 0;
  for (size_t i = 0; i < count; ++i) {
    p[i] = fromFloat<T>(inputValue(seed, which, i));
    maxAbs = std::max(maxAbs, std::fabs(toFloat(p[i])));
  }
  return maxAbs;
}

double fillMatrix(ElemType t, std::vector<char>* out, size_t count, uint64_t seed, uint64_t which) {
  switch (t) {
    case ElemType::kFloat:
      return fillMatrix<float>(out, count, seed, which);
    case ElemType::kHalf:
      return fillMatrix<Half>(out, count, seed, which);
    case ElemType::kBf16:
      return fillMatrix<Bf16>(out, count, seed, which);
  }
  return 0;
}

float elementAt(ElemType t, const std::vector<char>& v, size_t i) {
  switch (t) {
    case ElemType::kFloat:
      return reinterpret_cast<const float*>(v.data())[i];
    case ElemType::kHalf:
      return toFloat(reinterpret_cast<const Half*>(v.data())[i]);
    case ElemType::kBf16:
      return toFloat(reinterpret_cast<const Bf16*>(v.data())[i]);
  }
  return 0;
}

struct Verification {
  size_t mismatches = 0;
  size_t first = 0;
  float got = 0, expected = 0;
  double maxErr = 0;
};

Verification verify(ElemType t, const std::vector<char>& got, const std::vector<char>& ref, size_t count, double tol) {
  Verification v;
  for (size_t i = 0; i < count; ++i) {
    const float g = elementAt(t, got, i), e = elementAt(t, ref, i);
    const double err = std::fabs(static_cast<double>(g) - static_cast<double>(e));
    if (!(err <= tol)) {  // NaN counts as a mismatch
      if (v.mismatches++ == 0) {
        v.first = i;
        v.got = g;
        v.expected = e;
      }
    }
    if (err > v.maxErr || err != err) v.maxErr = err;
  }
  return v;
}

std::string fmtMs(double sec) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%10.3f ms", sec * 1e3);
  return buf;
}

std::string fmtBytes(double b) {
  char buf[32];
  if (b >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%8.2f GB", b / 1e9);
  } else if (b >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%8.2f MB", b / 1e6);
  } else if (b >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%8.2f kB", b / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%8.0f B ", b);
  }
  return buf;
}

// "812.34 GFLOP/s" or "49.96 TFLOP/s".
std::string fmtFlops(double flops, double sec) {
  char buf[32];
  const double rate = sec > 0 ? flops / sec : 0.0;
  if (rate >= 1e12) {
    std::snprintf(buf, sizeof(buf), "%.2f TFLOP/s", rate / 1e12);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GFLOP/s", rate / 1e9);
  }
  return buf;
}

std::string splitText(const std::vector<size_t>& split) {
  std::string s;
  if (split.size() <= 16) {
    for (size_t c : split) s += " " + std::to_string(c);
  } else {
    size_t lo = split[0], hi = split[0];
    for (size_t c : split) lo = std::min(lo, c), hi = std::max(hi, c);
    s = " " + std::to_string(lo) + " to " + std::to_string(hi);
  }
  return s;
}

void printReport(const Options& o, const Launch& l, const RunReport& r, double refSec) {
  const double flops = 2.0 * o.m * o.n * o.k;
  std::printf("  %s per rank:%s (uneven split: parts differ by at most one)\n",
              o.mode == Mode::kRows ? "rows of A and C" : "columns of A / rows of B (K)", splitText(r.split).c_str());
  std::printf("  %d timed iteration(s) after %d warm-up; per iteration, slowest rank, phases separated by barriers\n",
              o.iters, o.warmup);
  std::printf("  %-22s %13s %11s %s\n", "phase", "time", "bytes", "  achieved");
  double moved = 0;
  for (const PhaseTime& p : r.phases) {
    if (p.multiply) {
      std::printf("  %-22s %13s %11s   %s over all ranks (fastest rank %.3f ms)\n", p.name.c_str(),
                  fmtMs(p.sec).c_str(), "", fmtFlops(flops, p.sec).c_str(), r.multiplyMinSec * 1e3);
      continue;
    }
    moved += p.bytes;
    std::string bw = "  -";
    if (p.bytes > 0 && p.sec > 0) {
      char buf[96];
      if (p.busFactor > 0) {
        std::snprintf(buf, sizeof(buf), "  %.2f GB/s (bus %.2f GB/s)", p.bytes / p.sec / 1e9,
                      p.bytes / p.sec / 1e9 * p.busFactor);
      } else {
        std::snprintf(buf, sizeof(buf), "  %.2f GB/s", p.bytes / p.sec / 1e9);
      }
      bw = buf;
    }
    std::printf("  %-22s %13s %11s %s\n", p.name.c_str(), fmtMs(p.sec).c_str(), fmtBytes(p.bytes).c_str(), bw.c_str());
  }
  if (r.stagingSec > 0) std::printf("  %-22s %13s\n", "host<->GPU staging", fmtMs(r.stagingSec).c_str());
  std::printf("  %-22s %13s %11s   %s end to end\n", "total", fmtMs(r.totalSec).c_str(), fmtBytes(moved).c_str(),
              fmtFlops(flops, r.totalSec).c_str());
  if (r.setupSec > 0)
    std::printf("  (once, before the iterations: root uploads/packs A and B in %.3f ms)\n", r.setupSec * 1e3);
  if (r.downloadSec > 0)
    std::printf("  (once, after the iterations: root copies C to the host in %.3f ms)\n", r.downloadSec * 1e3);
  double mult = 0;
  for (const PhaseTime& p : r.phases)
    if (p.multiply) mult = p.sec;
  std::printf(
      "  single-rank reference multiply on the root: %.3f ms (%s) -> speedup %.2fx on %d rank(s) "
      "(multiply alone %.2fx)\n",
      refSec * 1e3, fmtFlops(flops, refSec).c_str(), r.totalSec > 0 ? refSec / r.totalSec : 0.0, l.nranks,
      mult > 0 ? refSec / mult : 0.0);
}

int runDemo(const Launch& l, Options o) {
  const char* corruptEnv = std::getenv("BRAID_MATMUL_CORRUPT");
  const int corruptRank = (corruptEnv && *corruptEnv) ? std::atoi(corruptEnv) : -1;
  const bool isRoot = l.rank == o.root;

  // Where the data lives. auto: a GPU communicator if GPUs exist and one can be created, else host buffers.
  const int ngpu = gpuCount();
  if ((o.device == Device::kGpu || o.device == Device::kGpuStaged) && (ngpu == 0 || !gpuSupportBuilt()))
    throw std::runtime_error(std::string("--device ") + deviceName(o.device) + ": " +
                             (gpuSupportBuilt() ? "no GPU is visible" : "this build has no GPU support"));
  const bool tryGpuComm = o.device == Device::kGpu || (o.device == Device::kAuto && ngpu > 0 && gpuSupportBuilt() &&
                                                       !envIs("BRAID_HOST_COMM", "1"));
  std::unique_ptr<Compute> host = makeHostCompute();
  std::unique_ptr<Compute> gpu;
  if (tryGpuComm || o.device == Device::kGpuStaged) gpu = makeGpuCompute(l.localRank % ngpu);  // before init
  // Host buffers need a host communicator, which a GPU machine gives only when asked.
  if (!tryGpuComm) setenv("BRAID_HOST_COMM", "1", 1);

  ncclUniqueId id;
  ncclCheck(shareUniqueId(l, &id), nullptr, "ncclGetUniqueId");
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclCommInitRank(&comm, l.nranks, id, l.rank);
  std::string note;
  Device used = tryGpuComm ? Device::kGpu : (o.device == Device::kGpuStaged ? Device::kGpuStaged : Device::kHost);
  if (res != ncclSuccess && tryGpuComm && o.device == Device::kAuto) {
    const char* why = ncclGetLastError(nullptr);
    note = std::string("no GPU communicator (") + ncclGetErrorString(res) + (why && *why ? ": " : "") +
           (why ? why : "") + "); using host buffers";
    gpu.reset();
    used = Device::kHost;
    setenv("BRAID_HOST_COMM", "1", 1);
    ncclCheck(shareUniqueId(l, &id), nullptr, "ncclGetUniqueId");
    res = ncclCommInitRank(&comm, l.nranks, id, l.rank);
  }
  if (res != ncclSuccess && tryGpuComm) {
    const char* why = ncclGetLastError(nullptr);
    throw std::runtime_error(std::string("ncclCommInitRank (GPU communicator) failed: ") + ncclGetErrorString(res) +
                             (why && *why ? ": " : "") + (why ? why : "") +
                             " -- try --device gpu-staged (cuBLAS, host communicator) or --device host");
  }
  ncclCheck(res, nullptr, "ncclCommInitRank");

  const bool onGpu = used != Device::kHost;
  if (o.m == 0) o.m = onGpu ? kGpuDefaultM : kHostDefaultM;
  if (o.n == 0) o.n = onGpu ? kGpuDefaultN : kHostDefaultN;
  if (o.k == 0) o.k = onGpu ? kGpuDefaultK : kHostDefaultK;
  Compute* computeMem = onGpu ? gpu.get() : host.get();
  Compute* commMem = used == Device::kGpu ? gpu.get() : host.get();
  std::string deviceText =
      std::string(deviceName(used)) + ": multiply on " + computeMem->describe() +
      (used == Device::kGpu ? "; GPU communicator on device buffers" : "; host communicator on host buffers");

  RootData data;
  double maxA = 0, maxB = 0;
  if (isRoot) {
    std::printf("matmul_demo: C[%zux%zu] = A[%zux%zu] x B[%zux%zu], %s, %s mode, %d rank(s) (%s), root %d\n", o.m, o.n,
                o.m, o.k, o.k, o.n, typeName(o.type), modeName(o.mode), l.nranks, l.launcher.c_str(), o.root);
    std::printf("  device %s\n", deviceText.c_str());
    if (!note.empty()) std::printf("  note: %s\n", note.c_str());
    std::fflush(stdout);
    maxA = fillMatrix(o.type, &data.a, o.m * o.k, o.seed, 1);
    maxB = fillMatrix(o.type, &data.b, o.k * o.n, o.seed, 2);
  }

  RunSetup setup;
  setup.opt = o;
  setup.rank = l.rank;
  setup.nranks = l.nranks;
  setup.comm = comm;
  setup.commMem = commMem;
  setup.computeMem = computeMem;
  setup.corruptRank = corruptRank;
  RunReport report = runDistributed(setup, isRoot ? &data : nullptr);
  ncclCheck(ncclCommDestroy(comm), nullptr, "ncclCommDestroy");
  if (!isRoot) return 0;

  // The single-rank reference: the whole product with the same kernel on the root, timed.
  const size_t sz = typeSize(o.type);
  std::vector<char> ref(o.m * o.n * sz);
  double refSec = 0;
  if (computeMem->onDevice()) {
    Buffer a(computeMem, data.a.size()), b(computeMem, data.b.size()), c(computeMem, ref.size());
    computeMem->upload(a.get(), data.a.data(), data.a.size());
    computeMem->upload(b.get(), data.b.data(), data.b.size());
    for (int i = 0; i < o.warmup; ++i)
      computeMem->gemm(o.type, a.get(), o.k, b.get(), o.n, c.get(), o.n, o.m, o.n, o.k);
    computeMem->sync();
    auto start = Clock::now();
    computeMem->gemm(o.type, a.get(), o.k, b.get(), o.n, c.get(), o.n, o.m, o.n, o.k);
    computeMem->sync();
    refSec = since(start);
    computeMem->download(ref.data(), c.get(), ref.size());
  } else {
    // Warmed up like the distributed run (its first touch of ref's pages and the caches is not multiply
    // time), so the reported speedup compares like with like.
    for (int i = 0; i < o.warmup; ++i)
      computeMem->gemm(o.type, data.a.data(), o.k, data.b.data(), o.n, ref.data(), o.n, o.m, o.n, o.k);
    auto start = Clock::now();
    computeMem->gemm(o.type, data.a.data(), o.k, data.b.data(), o.n, ref.data(), o.n, o.m, o.n, o.k);
    refSec = since(start);
  }

  printReport(o, l, report, refSec);
  const double tol = absTolerance(o.type, o.k, maxA, maxB);
  Verification v = verify(o.type, data.c, ref, o.m * o.n, tol);
  if (v.mismatches) {
    std::printf(
        "MISMATCH: C[%zu][%zu] (element %zu) is %.6g, the single-rank reference has %.6g (tolerance %.3g); "
        "%zu of %zu elements differ\n",
        v.first / o.n, v.first % o.n, v.first, v.got, v.expected, tol, v.mismatches, o.m * o.n);
    std::fflush(stdout);
    return 1;
  }
  std::printf("verified: all %zu elements of C match the single-rank reference (max |error| %.3g, tolerance %.3g)\n",
              o.m * o.n, v.maxErr, tol);
  return 0;
}

}  // namespace
}  // namespace matmul

int main(int argc, char** argv) {
  using namespace matmul;
  Launch l;
  try {
    l = startLaunch(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "matmul_demo: %s\n", e.what());
    return 3;
  }
  Options o;
  std::string err;
  bool ok = parseOptions(argc - 1, argv + 1, &o, &err);
  if (ok && !o.help && o.root >= l.nranks) {
    ok = false;
    err = "--root " + std::to_string(o.root) + " is not a rank (the job has " + std::to_string(l.nranks) + ")";
  }
  if (!ok || o.help) {
    // Every rank names the error: the launcher may kill rank 0 as soon as another rank exits.
    if (!ok && l.rank != 0) std::fprintf(stderr, "matmul_demo: rank %d: %s\n", l.rank, err.c_str());
    if (l.rank == 0) {
      if (!ok) std::fprintf(stderr, "matmul_demo: %s\n", err.c_str());
      std::fputs(usageText().c_str(), ok ? stdout : stderr);
      std::fprintf(ok ? stdout : stderr, "This build: MPI support %s; GPU mode (CUDA runtime + cuBLAS) %s.\n",
                   mpiSupportBuilt() ? "yes" : "no", gpuSupportBuilt() ? "yes" : "no");
    }
    finishLaunch(l);
    return ok ? 0 : 2;
  }
  int rc = 3;
  try {
    rc = runDemo(l, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "matmul_demo: rank %d: %s\n", l.rank, e.what());
    abortLaunch(l, 3);
  }
  std::fflush(stdout);
  finishLaunch(l);
  return rc;
}
