// GPU tests at 3 and 4 ranks (the other gpu tests run 2): every collective x datatype x op of the harness
// (gpu_harness.h allCases) plus point-to-point cases it lacks (multirank_p2p_cases.cuh), every output element
// checked:
//   - a grouped send/recv to the rank two ahead ((r+2)%n: the reverse ring at 3 ranks, the far peer both ways
//     at 4) of 1, 1031, 262147 and 2^22+5 floats, each alone and all four in one group;
//   - one group in which every rank sends every rank (itself included) a different number of floats, derived
//     from (sender, receiver), one pair sending none;
//   - gather and scatter from each root; all-to-all of 1031 and 2^22+5 floats per peer.
// Their inputs are a hash of (sender, receiver, transfer, index) (xValue), so a misplaced, stale or skipped
// element shows, and the bytes around every received block must keep their poison.
//
// DeviceMultiRank.Processes*: one process per rank, forked before any CUDA call here (the parent stays
// CUDA-free), rank r on GPU r % gpus through ncclCommInitRank: ranks sharing a GPU talk over SHM, the others
// over P2P (on one GPU every connection is SHM; on 4+ GPUs each rank has its own). The tuner's own protocol choice,
// then NCCL_PROTO=LL, LL128 and Simple on a smaller set (float/half/int8, no empty cases, no 2^22+5 p2p transfers).
// DeviceMultiRank.Processes*Rings*: the same with BRAID_RING_ORDER forcing 2 or 3 rings (channel c on ring
// c % nRings), each child checking from its INFO log that its channels' ring connections follow their rings.
// DeviceMultiRank.OneProcess*: allCases(n, false) and every p2p case from one process driving every rank
// (ncclCommInitAll, one stream per rank, the ranks' calls in one group), itself a forked child. Braid's
// ncclCommInitAll refuses a device listed twice (ncclInvalidUsage), so with fewer GPUs than ranks these skip,
// quoting the refusal.
//
// With 4 GPUs the whole binary should take about 4 minutes (most of it the processes' sweeps: a case costs tens
// of ms in a multi-process sweep); with 2, ranks share GPUs by time-slicing and it may take longer.
//
// Every test skips (with the reason) where no GPU is visible. Environment: BRAID_MULTIRANK_FULL=1
// runs allCases(n, false) (also counts 1 and 262147) in the processes' default-protocol tests, which otherwise
// run the quick list; BRAID_CASE_TIMEOUT (s, default 20, 60 where ranks share a GPU) bounds one case;
// BRAID_MULTIRANK_LIMIT (s, default 280) one test's processes; BRAID_TEST_VERBOSE=1 prints each case.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_harness.h"
#include "multirank_p2p_cases.cuh"

using namespace gpu_test;

namespace {

// ---- Case lists ----------------------------------------------------------------------------------------

const size_t kBig = (size_t(1) << 22) + 5;

// The p2p cases; `big`: also the 2^22+5 float transfers.
std::vector<XCase> extraCases(int n, bool big) {
  std::vector<XCase> v;
  std::vector<size_t> shift = {1, 1031, 262147};
  if (big) shift.push_back(kBig);
  for (size_t c : shift) v.push_back(XCase{XCase::kShift2, {c}});
  v.push_back(XCase{XCase::kShift2, shift});
  v.push_back(XCase{XCase::kUneven, {}});
  for (size_t c : {size_t{1031}, size_t{262147}})
    for (int root = 0; root < n; ++root) {
      v.push_back(XCase{XCase::kGather, {}, c, root});
      v.push_back(XCase{XCase::kScatter, {}, c, root});
    }
  v.push_back(XCase{XCase::kAllToAll, {}, 1031});
  if (big) v.push_back(XCase{XCase::kAllToAll, {}, kBig});
  return v;
}

struct Sweep {
  std::vector<Case> colls;
  std::vector<XCase> p2p;
};

// The tuner's choice: allCases(n, quick) and every p2p case.
Sweep defaultSweep(int n, bool full) { return Sweep{allCases(n, !full), extraCases(n, true)}; }

// Under a forced protocol: the quick list's float, half and int8 cases that move data, and the p2p cases up to
// 262147 floats.
Sweep protoSweep(int n) {
  Sweep s;
  for (const Case& c : allCases(n, true))
    if ((c.dtype == ncclFloat32 || c.dtype == ncclFloat16 || c.dtype == ncclInt8) && c.count != 0) s.colls.push_back(c);
  s.p2p = extraCases(n, false);
  return s;
}

bool verbose() { return std::getenv("BRAID_TEST_VERBOSE") != nullptr; }

double envSeconds(const char* name, double dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : dflt;
}

double caseLimit(bool sharedGpu) { return envSeconds("BRAID_CASE_TIMEOUT", sharedGpu ? 60.0 : 20.0); }

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- One process per rank ------------------------------------------------------------------------------

// Waits for the rank's stream; past `limit` s names the case and the comm's state and returns false (the caller
// exits, the other ranks' peer watch stops their kernels).
bool waitStream(cudaStream_t s, ncclComm_t comm, int rank, const std::string& what, double limit) {
  const auto t0 = std::chrono::steady_clock::now();
  cudaError_t e;
  while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
    if (secondsSince(t0) > limit) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      fprintf(stderr, "rank %d: %s: still running after %.0f s (async state %s; last error: %s)\n", rank, what.c_str(),
              limit, ncclGetErrorString(async), ncclGetLastError(comm));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (e != cudaSuccess) {
    fprintf(stderr, "rank %d: %s: stream error %s\n", rank, what.c_str(), cudaGetErrorString(e));
    return false;
  }
  return true;
}

// One case on this rank. False where the rank cannot go on (an error, a hang, too many failures).
template <class C>
bool runOnRank(const C& c, int rank, int n, ncclComm_t comm, cudaStream_t s, double limit, int* failures) {
  if (verbose() && rank == 0) printf("case: %s\n", c.name().c_str()), fflush(stdout);
  typename BufsOf<C>::type b;
  if (!prepare(c, rank, n, &b) || !enqueue(c, rank, n, comm, s, b)) {
    fprintf(stderr, "rank %d: %s: could not prepare or enqueue it\n", rank, c.name().c_str());
    return false;
  }
  if (!waitStream(s, comm, rank, c.name(), limit)) return false;
  if (!check(c, rank, n, &b)) {
    fprintf(stderr, "rank %d: FAILED %s\n", rank, c.name().c_str());
    if (++*failures > 10) return false;
  }
  return true;
}

// Every rank must store the same bits from an all-reduce, whatever order a schedule reduces in: the one-shot over
// every peer's sizes (8 KiB-64 KiB of float; half and bfloat16 too), in and out of place, with inputs whose float
// sums depend on the order (large and small values mixed). Each rank gathers every rank's result and compares bit by
// bit, and checks its own against a double-precision sum within the type's rounding.
template <typename T>
bool sameBitsEverywhere(int rank, int n, ncclComm_t comm, cudaStream_t s, ncclDataType_t dt, size_t count, bool inPlace,
                        double limit) {
  auto value = [](int r, size_t i) {
    const double big = (i % 3 == 0) ? 4096.0 : 1.0;
    return big * ((r + 1) * 0.7 + static_cast<double>((i * 2654435761u) % 1000) / 997.0);
  };
  std::vector<T> in(count);
  for (size_t i = 0; i < count; ++i) in[i] = T(static_cast<float>(value(rank, i)));
  T *dIn = nullptr, *dOut = nullptr, *dAll = nullptr;
  GT_CUDA(cudaMalloc(&dIn, count * sizeof(T)));
  GT_CUDA(cudaMalloc(&dOut, count * sizeof(T)));
  GT_CUDA(cudaMalloc(&dAll, count * n * sizeof(T)));
  GT_CUDA(cudaMemcpy(dIn, in.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  GT_CUDA(cudaMemset(dOut, 0xA5, count * sizeof(T)));
  // The copy and the memset run on the legacy stream, which the non-blocking stream `s` does not wait for, and a
  // copy from pageable memory may return before its data has landed: without this, the all-reduce could read a
  // stale input or have its output poisoned after it (ranks sharing one GPU saw both, 1 run in 3).
  GT_CUDA(cudaDeviceSynchronize());
  T* out = inPlace ? dIn : dOut;
  GT_NCCL(ncclAllReduce(dIn, out, count, dt, ncclSum, comm, s));
  GT_NCCL(ncclAllGather(out, dAll, count, dt, comm, s));
  const std::string what = "all-reduce of " + std::to_string(count) + " " + typeName(dt) + (inPlace ? " in place" : "");
  if (!waitStream(s, comm, rank, what, limit)) return false;
  std::vector<T> all(count * n);
  GT_CUDA(cudaMemcpy(all.data(), dAll, all.size() * sizeof(T), cudaMemcpyDeviceToHost));
  cudaFree(dIn);
  cudaFree(dOut);
  cudaFree(dAll);
  const double tol = sizeof(T) == 4 ? 1e-5 : 2e-2;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += static_cast<float>(T(static_cast<float>(value(r, i))));
    const float mine = static_cast<float>(all[static_cast<size_t>(rank) * count + i]);
    if (std::fabs(mine - want) > tol * std::fabs(want) + 1e-3) {
      fprintf(stderr, "rank %d: %s: element %zu is %g, want about %g\n", rank, what.c_str(), i, mine, want);
      return false;
    }
    for (int r = 0; r < n; ++r) {
      if (std::memcmp(&all[static_cast<size_t>(r) * count + i], &all[static_cast<size_t>(rank) * count + i],
                      sizeof(T)) != 0) {
        fprintf(stderr, "rank %d: %s: element %zu differs between rank %d (%g) and this rank (%g)\n", rank,
                what.c_str(), i, r, static_cast<float>(all[static_cast<size_t>(r) * count + i]), mine);
        return false;
      }
    }
  }
  return true;
}

bool sameBitsCases(int rank, int n, ncclComm_t comm, cudaStream_t s, double limit) {
  for (bool inPlace : {false, true}) {
    for (size_t count : {size_t{2048}, size_t{10007}, size_t{16384}})
      if (!sameBitsEverywhere<float>(rank, n, comm, s, ncclFloat32, count, inPlace, limit)) return false;
    if (!sameBitsEverywhere<Half>(rank, n, comm, s, ncclFloat16, 32768, inPlace, limit)) return false;
    if (!sameBitsEverywhere<BFloat16>(rank, n, comm, s, ncclBfloat16, 20001, inPlace, limit)) return false;
  }
  return true;
}

bool rankMain(int rank, int n, int gpus, const ncclUniqueId& id, const Sweep& sw, const char* proto) {
  if (proto) setenv("NCCL_PROTO", proto, 1);  // read by ncclCommInitRank
  GT_CUDA(cudaSetDevice(rank % gpus));
  const auto t0 = std::chrono::steady_clock::now();
  ncclComm_t comm;
  GT_NCCL(ncclCommInitRank(&comm, n, id, rank));
  cudaStream_t s;
  GT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const double limit = caseLimit(gpus < n);
  int failures = 0;
  bool going = true;
  for (size_t k = 0; going && k < sw.colls.size(); ++k)
    going = runOnRank(sw.colls[k], rank, n, comm, s, limit, &failures);
  for (size_t k = 0; going && k < sw.p2p.size(); ++k) going = runOnRank(sw.p2p[k], rank, n, comm, s, limit, &failures);
  if (going && !sameBitsCases(rank, n, comm, s, limit)) ++failures;
  if (rank == 0 || !going)
    printf("rank %d of %d processes on %d GPUs%s%s: %zu collective and %zu p2p cases, %d failed%s, %.1f s\n", rank, n,
           gpus, proto ? ", NCCL_PROTO=" : "", proto ? proto : "", sw.colls.size(), sw.p2p.size(), failures,
           going ? "" : ", stopped", secondsSince(t0));
  if (!going) return false;  // the comm is left as it is: the process ends
  GT_CUDA(cudaStreamDestroy(s));
  GT_NCCL(ncclCommDestroy(comm));
  return failures == 0;
}

// ---- Children ------------------------------------------------------------------------------------------

struct ChildResult {
  int status = -1;  // waitpid's
  bool timedOut = false;
  double limit = 0;  // s, where timedOut
  std::string out;   // its stderr (the last 4000 characters)
};

const int kSkipExit = 77;

// Forks k children, child i running body(i) and exiting with what it returns (0 passed, 1 failed, kSkipExit
// skipped). Their stderr comes through a pipe each: echoed here as it arrives and kept for the failure messages.
// After `limit` s whatever still runs is killed.
std::vector<ChildResult> runChildren(int k, const std::function<int(int)>& body, double limit) {
  std::vector<ChildResult> res(k);
  std::vector<pid_t> pids(k, -1);
  std::vector<int> fds(k, -1);
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < k; ++i) {
    int p[2];
    if (pipe(p) != 0) {
      ADD_FAILURE() << "pipe failed";
      break;
    }
    pids[i] = fork();
    if (pids[i] == 0) {
      close(p[0]);
      for (int j = 0; j < i; ++j) close(fds[j]);
      dup2(p[1], 2);
      close(p[1]);
      const int rc = body(i);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    close(p[1]);
    fds[i] = p[0];
  }
  const auto t0 = std::chrono::steady_clock::now();
  int left = 0;
  for (int i = 0; i < k; ++i) left += pids[i] > 0;
  auto drain = [&](int i, int waitMs) {
    pollfd pf{fds[i], POLLIN, 0};
    char buf[4096];
    while (fds[i] >= 0 && poll(&pf, 1, waitMs) > 0) {
      const ssize_t got = read(fds[i], buf, sizeof(buf));
      if (got <= 0) {
        close(fds[i]);
        fds[i] = -1;
        break;
      }
      (void)!write(2, buf, static_cast<size_t>(got));
      res[i].out.append(buf, static_cast<size_t>(got));
      if (res[i].out.size() > 8000) res[i].out.erase(0, res[i].out.size() - 4000);
      waitMs = 0;
    }
  };
  while (left > 0) {
    for (int i = 0; i < k; ++i) {
      if (fds[i] >= 0) drain(i, 0);
      int st;
      if (pids[i] > 0 && res[i].status == -1 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        res[i].status = st;
        --left;
      }
    }
    if (left > 0 && secondsSince(t0) > limit) {
      for (int i = 0; i < k; ++i)
        if (pids[i] > 0 && res[i].status == -1) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], &res[i].status, 0);
          res[i].timedOut = true;
          res[i].limit = limit;
        }
      left = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < k; ++i) {
    if (fds[i] >= 0) drain(i, 100);  // what it wrote before it ended
    if (fds[i] >= 0) close(fds[i]);
    if (res[i].out.size() > 4000) res[i].out.erase(0, res[i].out.size() - 4000);
  }
  return res;
}

std::string describe(const ChildResult& r) {
  if (r.timedOut) return "killed, still running after " + std::to_string(static_cast<int>(r.limit)) + " s";
  if (WIFEXITED(r.status)) return "exit status " + std::to_string(WEXITSTATUS(r.status));
  if (WIFSIGNALED(r.status)) return "killed by signal " + std::to_string(WTERMSIG(r.status));
  return "status " + std::to_string(r.status);
}

// The line a skipping child wrote ("skip: ..."), without the prefix.
std::string skipReason(const std::vector<ChildResult>& res) {
  for (const ChildResult& r : res) {
    const size_t at = r.out.find("skip: ");
    if (at != std::string::npos) return r.out.substr(at + 6, r.out.find('\n', at) - at - 6);
  }
  return "a child skipped without a reason";
}

// Each child (rank) that did not pass is one failure, with its status and its last stderr lines (the failed
// cases' first wrong elements).
void report(const std::string& what, const std::vector<ChildResult>& res, const char* unit) {
  for (size_t i = 0; i < res.size(); ++i) {
    const ChildResult& r = res[i];
    if (!r.timedOut && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) continue;
    ADD_FAILURE() << what << ": " << unit << " " << i << " did not pass (" << describe(r) << "); its last lines:\n"
                  << r.out;
  }
}

bool allSkipped(const std::vector<ChildResult>& res) {
  for (const ChildResult& r : res)
    if (r.timedOut || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != kSkipExit) return false;
  return !res.empty();
}

// The GPUs visible, counted once in a probe child (this process stays CUDA-free so its children may use CUDA).
int gpus() {
  static const int n = gpuCountForked();
  return n;
}

#define NEED_A_GPU()                                                                                         \
  do {                                                                                                       \
    if (gpus() < 1) GTEST_SKIP() << "needs a GPU, cudaGetDeviceCount (in a probe child) reports " << gpus(); \
  } while (0)

// ---- Several rings ----------------------------------------------------------------------------------------

// BRAID_RING_ORDER's rings ('|' between them, ',' between ranks).
std::vector<std::vector<int>> ringsOf(const std::string& text) {
  std::vector<std::vector<int>> rings(1);
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find_first_of(",|", at);
    rings.back().push_back(std::atoi(text.substr(at, end - at).c_str()));
    if (end == std::string::npos) break;
    if (text[end] == '|') rings.emplace_back();
    at = end + 1;
  }
  return rings;
}

// With several rings each child logs its init to a file of its own (NCCL_DEBUG=INFO, subsystem INIT), where the
// GPU communicator says where each channel's ring connections go, as connected. Channel c must send to and receive
// from ring c % nRings's neighbours of this rank, and the channels must not all share one pair of neighbours: the
// sweep then ran over different rings on different channels.
bool ranOnEveryRing(int rank, const std::string& ringOrder, const std::string& logPath) {
  const std::vector<std::vector<int>> rings = ringsOf(ringOrder);
  const int n = static_cast<int>(rings[0].size()), k = static_cast<int>(rings.size());
  FILE* f = fopen(logPath.c_str(), "r");
  if (!f) {
    fprintf(stderr, "rank %d: no log %s\n", rank, logPath.c_str());
    return false;
  }
  const std::string key = "rank " + std::to_string(rank) + ": " + std::to_string(k) + " rings on ";
  std::string line, found;
  char buf[4096];
  while (fgets(buf, sizeof(buf), f)) {
    line = buf;
    if (line.find(key) != std::string::npos) found = line;
  }
  fclose(f);
  const size_t list = found.find("next/previous rank: ");
  if (found.empty() || list == std::string::npos) {
    fprintf(stderr, "rank %d: the log %s has no line \"%s... next/previous rank: ...\"\n", rank, logPath.c_str(),
            key.c_str());
    return false;
  }
  const int channels = std::atoi(found.c_str() + found.find(key) + key.size());
  std::vector<std::pair<int, int>> seen;
  const char* p = found.c_str() + list + strlen("next/previous rank: ");
  for (int c = 0; c < channels; ++c) {
    int next = -1, prev = -1, used = 0;
    if (sscanf(p, "%d/%d%n", &next, &prev, &used) != 2) {
      fprintf(stderr, "rank %d: channel %d missing in: %s", rank, c, found.c_str());
      return false;
    }
    p += used;
    const std::vector<int>& o = rings[static_cast<size_t>(c % k)];
    const int pos = static_cast<int>(std::find(o.begin(), o.end(), rank) - o.begin());
    const int wantNext = o[static_cast<size_t>((pos + 1) % n)], wantPrev = o[static_cast<size_t>((pos + n - 1) % n)];
    if (next != wantNext || prev != wantPrev) {
      fprintf(stderr, "rank %d: channel %d's ring connections go to %d and come from %d; ring %d says %d and %d\n",
              rank, c, next, prev, c % k, wantNext, wantPrev);
      return false;
    }
    if (std::find(seen.begin(), seen.end(), std::make_pair(next, prev)) == seen.end()) seen.emplace_back(next, prev);
  }
  if (channels < 2 || seen.size() < 2) {
    fprintf(stderr, "rank %d: %d channels, all on one pair of ring neighbours: %s", rank, channels, found.c_str());
    return false;
  }
  return true;
}

// ringOrder: BRAID_RING_ORDER set in every child before its init (null: unset, rank order); with several rings
// (ranOnEveryRing) each child also checks its channels' rings.
void multiProcess(int n, const char* proto, const char* ringOrder = nullptr) {
  const int g = gpus();
  const bool full = std::getenv("BRAID_MULTIRANK_FULL") != nullptr;
  const Sweep sw = proto ? protoSweep(n) : defaultSweep(n, full);
  const std::string what = std::to_string(n) + " processes on " + std::to_string(g) + " GPUs" +
                           (proto ? std::string(", NCCL_PROTO=") + proto : std::string(", default protocols")) +
                           (ringOrder ? std::string(", BRAID_RING_ORDER=") + ringOrder : std::string());
  printf("%s: %zu collective and %zu p2p cases%s\n", what.c_str(), sw.colls.size(), sw.p2p.size(),
         g < n ? " (ranks sharing a GPU talk over SHM)" : "");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);  // no CUDA call
  const auto res = runChildren(
      n,
      [&](int rank) {
        if (ringOrder) setenv("BRAID_RING_ORDER", ringOrder, 1);  // read by ncclCommInitRank
        const bool rings = ringOrder && strchr(ringOrder, '|');
        const std::string log = "/tmp/braid_rings_" + std::to_string(getpid()) + ".log";
        if (rings) {
          setenv("NCCL_DEBUG", "INFO", 1);
          setenv("NCCL_DEBUG_SUBSYS", "INIT", 1);
          setenv("NCCL_DEBUG_FILE", log.c_str(), 1);
          ncclResetDebugInit();  // the parent's logging, read at its ncclGetUniqueId, came along the fork
        }
        bool ok = rankMain(rank, n, g, id, sw, proto);
        if (rings) {
          ok = ranOnEveryRing(rank, ringOrder, log) && ok;
          unlink(log.c_str());
        }
        return ok ? 0 : 1;
      },
      envSeconds("BRAID_MULTIRANK_LIMIT", 280));
  report(what, res, "rank");
}

// ---- One process, every rank -------------------------------------------------------------------------

// The ranks of one ncclCommInitAll, a non-blocking stream each.
struct Ranks {
  int n = 0;
  std::vector<int> dev;
  std::vector<ncclComm_t> comm;
  std::vector<cudaStream_t> stream;

  bool makeStreams() {
    stream.assign(n, nullptr);
    for (int r = 0; r < n; ++r) {
      GT_CUDA(cudaSetDevice(dev[r]));
      GT_CUDA(cudaStreamCreateWithFlags(&stream[r], cudaStreamNonBlocking));
    }
    return true;
  }
  // Every rank's stream done within `limit` s; else the case is named, each rank's state printed and the comms
  // aborted (which stops the kernels).
  bool finish(const std::string& what, double limit, bool* hung) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < n; ++r) {
      GT_CUDA(cudaSetDevice(dev[r]));
      cudaError_t e;
      while ((e = cudaStreamQuery(stream[r])) == cudaErrorNotReady) {
        if (secondsSince(t0) > limit) {
          fprintf(stderr, "%s: rank %d still running after %.0f s; aborting\n", what.c_str(), r, limit);
          for (int k = 0; k < n; ++k) {
            ncclResult_t async = ncclSuccess;
            ncclCommGetAsyncError(comm[k], &async);
            fprintf(stderr, "  rank %d: async state %s; last error: %s\n", k, ncclGetErrorString(async),
                    ncclGetLastError(comm[k]));
          }
          *hung = true;
          for (int k = 0; k < n; ++k) ncclCommAbort(comm[k]), comm[k] = nullptr;
          return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      if (e != cudaSuccess) {
        fprintf(stderr, "%s: rank %d: stream error %s\n", what.c_str(), r, cudaGetErrorString(e));
        return false;
      }
    }
    return true;
  }
  void destroy() {
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(dev[r]);
      if (r < static_cast<int>(stream.size()) && stream[r]) cudaStreamDestroy(stream[r]);
      if (comm[r]) ncclCommDestroy(comm[r]);
      comm[r] = nullptr;
    }
    stream.clear();
  }
};

// One case on every rank: buffers prepared on each rank's device, the calls in one group, each rank checked.
template <class C>
bool runAllRanks(Ranks& R, const C& c, double limit, bool* hung) {
  if (verbose()) printf("case: %s\n", c.name().c_str()), fflush(stdout);
  std::vector<typename BufsOf<C>::type> b(R.n);
  for (int r = 0; r < R.n; ++r) {
    GT_CUDA(cudaSetDevice(R.dev[r]));
    if (!prepare(c, r, R.n, &b[r])) return false;
  }
  GT_NCCL(ncclGroupStart());
  bool enq = true;
  for (int r = 0; r < R.n && enq; ++r) {
    enq = cudaSetDevice(R.dev[r]) == cudaSuccess && enqueue(c, r, R.n, R.comm[r], R.stream[r], b[r]);
  }
  GT_NCCL(ncclGroupEnd());
  if (!enq) return false;
  if (!R.finish(c.name(), limit, hung)) return false;
  bool ok = true;
  for (int r = 0; r < R.n; ++r) {
    GT_CUDA(cudaSetDevice(R.dev[r]));
    ok = check(c, r, R.n, &b[r]) && ok;
  }
  return ok;
}

// The child's body: 0 passed, 1 failed, kSkipExit where ncclCommInitAll refuses a device listed twice.
int oneProcessMain(int n, int gpus) {
  Ranks R;
  R.n = n;
  R.comm.assign(n, nullptr);
  std::string list;
  for (int r = 0; r < n; ++r) {
    R.dev.push_back(r % gpus);
    list += (r ? ", " : "") + std::to_string(r % gpus);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ncclResult_t init = ncclCommInitAll(R.comm.data(), n, R.dev.data());
  if (init != ncclSuccess) {
    if (n > gpus && init == ncclInvalidUsage) {
      fprintf(stderr,
              "skip: ncclCommInitAll refuses a device listed twice (devlist {%s}: %s); %d ranks in one "
              "process need %d GPUs, %d visible\n",
              list.c_str(), ncclGetLastError(nullptr), n, n, gpus);
      return kSkipExit;
    }
    fprintf(stderr, "ncclCommInitAll(%d, {%s}) failed: %s (%s)\n", n, list.c_str(), ncclGetErrorString(init),
            ncclGetLastError(nullptr));
    return 1;
  }
  if (!R.makeStreams()) return 1;
  const Sweep sw = defaultSweep(n, true);
  const double limit = caseLimit(gpus < n);
  int failures = 0, cases = 0;
  bool hung = false;
  auto one = [&](const auto& c) {
    ++cases;
    if (!runAllRanks(R, c, limit, &hung)) {
      fprintf(stderr, "FAILED %s\n", c.name().c_str());
      ++failures;
    }
    return !hung && failures <= 20;  // after an abort the comms are gone
  };
  bool going = true;
  for (size_t k = 0; going && k < sw.colls.size(); ++k) going = one(sw.colls[k]);
  for (size_t k = 0; going && k < sw.p2p.size(); ++k) going = one(sw.p2p[k]);
  if (!hung) R.destroy();
  printf("%d ranks in one process on devices {%s}: %d of %zu cases run, %d failed, %.1f s\n", n, list.c_str(), cases,
         sw.colls.size() + sw.p2p.size(), failures, secondsSince(t0));
  return failures == 0 && going ? 0 : 1;
}

void oneProcess(int n) {
  const int g = gpus();
  const auto res = runChildren(
      1, [&](int) { return oneProcessMain(n, g); }, envSeconds("BRAID_MULTIRANK_LIMIT", 280));
  if (allSkipped(res)) GTEST_SKIP() << skipReason(res);
  report(std::to_string(n) + " ranks in one process", res, "process");
}

}  // namespace

// The tuner's own choice of algorithm and protocol (LL, LL128, Simple by size): allCases(n, quick) and the p2p
// cases, in n processes.
TEST(DeviceMultiRank, Processes3) {
  NEED_A_GPU();
  multiProcess(3, nullptr);
}
TEST(DeviceMultiRank, Processes4) {
  NEED_A_GPU();
  multiProcess(4, nullptr);
}

// The same sweep with the rings in another order than rank order (BRAID_RING_ORDER, src/runtime/ring_order.h):
// ring connections, the schedules' positions and owners, the kernels' position -> rank table, and p2p and the
// one-shot over every peer reusing the ring's connections for the order's neighbours.
TEST(DeviceMultiRank, Processes4RingOrder) {
  NEED_A_GPU();
  multiProcess(4, nullptr, "0,2,1,3");
}

// Several rings (BRAID_RING_ORDER with '|'): channel c connects to and walks ring c % nRings, so every collective
// runs each channel's share on its own ring (positions, the root's, the owners of blocks), and send/recv, all-to-all,
// gather and scatter reach a peer over the ring connections of the channels whose ring has it as neighbour and over
// its own connections otherwise; the one-shot over every peer likewise. Each child checks its channels' rings
// (ranOnEveryRing). At 3 ranks the third ring is the first rotated: the same neighbours at other positions.
const char* const kRings3x2 = "0,1,2|0,2,1";
const char* const kRings3x3 = "0,1,2|0,2,1|1,2,0";
const char* const kRings4x2 = "0,1,2,3|0,2,1,3";
const char* const kRings4x3 = "0,1,2,3|0,2,1,3|0,3,2,1";
void everyProto(int n, const char* rings) {
  for (const char* proto : {"LL", "LL128", "Simple"}) multiProcess(n, proto, rings);
}
TEST(DeviceMultiRank, Processes3Rings2) {
  NEED_A_GPU();
  multiProcess(3, nullptr, kRings3x2);
}
TEST(DeviceMultiRank, Processes3Rings3) {
  NEED_A_GPU();
  multiProcess(3, nullptr, kRings3x3);
}
TEST(DeviceMultiRank, Processes4Rings2) {
  NEED_A_GPU();
  multiProcess(4, nullptr, kRings4x2);
}
TEST(DeviceMultiRank, Processes4Rings3) {
  NEED_A_GPU();
  multiProcess(4, nullptr, kRings4x3);
}
TEST(DeviceMultiRank, Processes3Rings2Protos) {
  NEED_A_GPU();
  everyProto(3, kRings3x2);
}
TEST(DeviceMultiRank, Processes3Rings3Protos) {
  NEED_A_GPU();
  everyProto(3, kRings3x3);
}
TEST(DeviceMultiRank, Processes4Rings2Protos) {
  NEED_A_GPU();
  everyProto(4, kRings4x2);
}
TEST(DeviceMultiRank, Processes4Rings3Protos) {
  NEED_A_GPU();
  everyProto(4, kRings4x3);
}

// Each protocol forced for every collective and p2p transfer (where a protocol has no kernel for a case, e.g.
// LL128 for int8 or products or without NVLink, Braid falls back to Simple with a warning).
TEST(DeviceMultiRank, Processes3ProtoLL) {
  NEED_A_GPU();
  multiProcess(3, "LL");
}
TEST(DeviceMultiRank, Processes3ProtoLL128) {
  NEED_A_GPU();
  multiProcess(3, "LL128");
}
TEST(DeviceMultiRank, Processes3ProtoSimple) {
  NEED_A_GPU();
  multiProcess(3, "Simple");
}
TEST(DeviceMultiRank, Processes4ProtoLL) {
  NEED_A_GPU();
  multiProcess(4, "LL");
}
TEST(DeviceMultiRank, Processes4ProtoLL128) {
  NEED_A_GPU();
  multiProcess(4, "LL128");
}
TEST(DeviceMultiRank, Processes4ProtoSimple) {
  NEED_A_GPU();
  multiProcess(4, "Simple");
}

// One process driving every rank: allCases(n, false) and the p2p cases, the ranks' calls grouped.
TEST(DeviceMultiRank, OneProcess3) {
  NEED_A_GPU();
  oneProcess(3);
}
TEST(DeviceMultiRank, OneProcess4) {
  NEED_A_GPU();
  oneProcess(4);
}
