// tail_latency_bench: the latency distribution of a small all-reduce on host buffers, one call at a time, where the
// perf tools report only a mean. Under mpirun: --lib nccl runs ncclAllReduce (Braid's host communicators with
// BRAID_HOST_COMM=1, or whatever libnccl.so.2 is loaded), --lib mpi runs MPI_Allreduce. Every call is timed on
// every rank; an iteration's time is the slowest rank's. Rank 0 prints p50/p90/p99/max in microseconds, and
// each result is checked (the sum of every rank's distinct values).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

struct Args {
  std::string lib = "nccl";
  size_t bytes = 8;
  int iters = 20000;
  int warmup = 1000;
};

void usage() {
  std::fprintf(stderr,
               "usage: mpirun -np N tail_latency_bench [--lib nccl|mpi] [-b BYTES] [-n ITERS] [-w WARMUP]\n"
               "  BYTES is rounded down to whole floats (at least one).\n");
}

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (k == "--lib") {
      a->lib = v;
      if (a->lib != "nccl" && a->lib != "mpi") return false;
    } else if (k == "-b") {
      a->bytes = std::strtoull(v, nullptr, 10);
    } else if (k == "-n") {
      a->iters = std::atoi(v);
    } else if (k == "-w") {
      a->warmup = std::atoi(v);
    } else {
      return false;
    }
  }
  return a->iters > 0 && a->warmup >= 0 && a->bytes > 0;
}

double percentile(const std::vector<double>& sorted, double p) {
  const size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Args a;
  if (!parse(argc, argv, &a)) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  const size_t count = std::max<size_t>(1, a.bytes / sizeof(float));
  std::vector<float> send(count), recv(count);
  ncclComm_t comm = nullptr;
  if (a.lib == "nccl") {
    ncclUniqueId id;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
    if (r != ncclSuccess) {
      std::fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, ncclGetErrorString(r));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  const int total = a.warmup + a.iters;
  std::vector<double> us(static_cast<size_t>(a.iters));
  long bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int it = 0; it < total; ++it) {
    // Small integers, exact in float: element i of rank r is (r + 1) * 3 + i % 7 + it % 5.
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((rank + 1) * 3 + static_cast<int>(i % 7) + it % 5);
    std::fill(recv.begin(), recv.end(), -1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    if (comm) {
      // Host communicators complete the call before returning (host buffers; the stream is not used).
      ncclResult_t r = ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, nullptr);
      if (r != ncclSuccess) {
        std::fprintf(stderr, "rank %d: ncclAllReduce: %s\n", rank, ncclGetErrorString(r));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    } else {
      MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (it >= a.warmup) us[static_cast<size_t>(it - a.warmup)] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    const int rankSum = 3 * nranks * (nranks + 1) / 2;
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(rankSum + nranks * (static_cast<int>(i % 7) + it % 5));
      if (recv[i] != want) ++bad;
    }
  }
  std::vector<double> all(rank == 0 ? us.size() * static_cast<size_t>(nranks) : 0);
  MPI_Gather(us.data(), a.iters, MPI_DOUBLE, all.data(), a.iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  long badAll = 0;
  MPI_Reduce(&bad, &badAll, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::vector<double> slowest(us.size(), 0.0);
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < us.size(); ++i) slowest[i] = std::max(slowest[i], all[static_cast<size_t>(r) * us.size() + i]);
    double mean = 0;
    for (double v : slowest) mean += v;
    mean /= static_cast<double>(slowest.size());
    std::sort(slowest.begin(), slowest.end());
    const double p50 = percentile(slowest, 50), p90 = percentile(slowest, 90), p99 = percentile(slowest, 99);
    std::printf("%-5s ranks %d bytes %zu iters %d: p50 %.1f us, p90 %.1f, p99 %.1f, max %.1f, mean %.1f; p99/p50 %.2f%s\n",
                a.lib.c_str(), nranks, count * sizeof(float), a.iters, p50, p90, p99, slowest.back(), mean, p99 / p50,
                badAll ? "  WRONG RESULTS" : "");
    if (badAll) std::fprintf(stderr, "%ld wrong elements\n", badAll);
  }
  if (comm) ncclCommDestroy(comm);
  MPI_Finalize();
  return badAll ? 1 : 0;
}
