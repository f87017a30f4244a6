// mpi_allreduce_bench: the host-buffer reference for Braid's host all-reduce. MPI_Allreduce measured exactly
// as all_reduce_perf measures ncclAllReduce: same flags, same sizes, same shifting buffer windows, same inputs
// and exact check, same table, busbw formula (algbw * 2(n-1)/n) and -J JSON. Run under mpirun.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perf_args.h"
#include "perf_coll.h"
#include "perf_data.h"
#include "perf_report.h"
#include "perf_types.h"

namespace {

using namespace braid::perf;

const char* kTool = "mpi_allreduce_bench";

bool mpiType(ncclDataType_t t, MPI_Datatype* out) {
  switch (t) {
    case ncclInt8:
      *out = MPI_INT8_T;
      return true;
    case ncclUint8:
      *out = MPI_UINT8_T;
      return true;
    case ncclInt32:
      *out = MPI_INT32_T;
      return true;
    case ncclUint32:
      *out = MPI_UINT32_T;
      return true;
    case ncclInt64:
      *out = MPI_INT64_T;
      return true;
    case ncclUint64:
      *out = MPI_UINT64_T;
      return true;
    case ncclFloat32:
      *out = MPI_FLOAT;
      return true;
    case ncclFloat64:
      *out = MPI_DOUBLE;
      return true;
    default:
      return false;
  }
}

bool mpiOp(OpKind o, MPI_Op* out) {
  switch (o) {
    case OpKind::Sum:
      *out = MPI_SUM;
      return true;
    case OpKind::Prod:
      *out = MPI_PROD;
      return true;
    case OpKind::Max:
      *out = MPI_MAX;
      return true;
    case OpKind::Min:
      *out = MPI_MIN;
      return true;
    default:
      return false;
  }
}

struct Bench {
  PerfArgs a;
  int rank = 0;
  int nranks = 1;
  char* send = nullptr;
  char* recv = nullptr;
  size_t bufBytes = 0;
  int64_t outOfBounds = 0;
  double bwSum = 0;
  int bwCount = 0;
  uint64_t rep = 0;

  void allreduce(const CollCounts& k, size_t es, MPI_Datatype dt, MPI_Op op, bool inPlace, int iter) {
    const size_t total = k.recvCount * es;
    const size_t steps = total ? std::max<size_t>(bufBytes / total, 1) : 1;
    const size_t shift = total * (static_cast<size_t>(iter) % steps);
    const int count = static_cast<int>(k.paramCount);
    if (inPlace) {
      MPI_Allreduce(MPI_IN_PLACE, recv + shift, count, dt, op, MPI_COMM_WORLD);
    } else {
      MPI_Allreduce(send + shift, recv + shift, count, dt, op, MPI_COMM_WORLD);
    }
  }

  DataSpec spec(const CollCounts& k, ncclDataType_t type, OpKind op, bool inPlace, uint64_t seed) const {
    DataSpec s;
    s.coll = Coll::AllReduce;
    s.type = type;
    s.op = op;
    s.nranks = nranks;
    s.root = -1;
    s.seed = seed;
    s.counts = k;
    s.inPlace = inPlace;
    return s;
  }

  void initData(const DataSpec& s) {
    const size_t es = typeSize(s.type);
    std::memset(recv, kSentinelByte, s.counts.recvCount * es);
    fillInput(s, rank, s.inPlace ? recv : send, s.counts.sendCount);
  }

  Placement bench(const CollCounts& k, ncclDataType_t type, OpKind opKind, bool inPlace) {
    MPI_Datatype dt = MPI_FLOAT;
    MPI_Op op = MPI_SUM;
    mpiType(type, &dt);
    mpiOp(opKind, &op);
    const size_t es = typeSize(type);
    if (a.check) initData(spec(k, type, opKind, inPlace, 99));
    allreduce(k, es, dt, op, inPlace, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < a.iters; ++i) allreduce(k, es, dt, op, inPlace, i);
    double sec = (MPI_Wtime() - t0) / a.iters;

    int64_t wrongTotal = 0;
    ++rep;
    for (int c = 0; c < a.check; ++c) {
      DataSpec s = spec(k, type, opKind, inPlace, rep * 1000003ull + static_cast<uint64_t>(c));
      initData(s);
      allreduce(k, es, dt, op, inPlace, 0);
      if (std::getenv("BRAID_PERF_CORRUPT") && std::atoi(std::getenv("BRAID_PERF_CORRUPT")) && k.recvCount &&
          rank == nranks - 1)
        corruptElement(s, recv);
      long long mine = checkOutput(s, rank, recv, std::string(kTool) + ": " + (inPlace ? "in-place" : "out-of-place"));
      long long sum = 0, ranksWrong = 0, flag = mine > 0;
      MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      MPI_Allreduce(&flag, &ranksWrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      wrongTotal += sum;
      if (sum) {
        outOfBounds += ranksWrong;
        break;
      }
    }

    double agg = sec;
    if (a.average == 0) {
      MPI_Bcast(&agg, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    } else {
      MPI_Op red = a.average == 1 ? MPI_SUM : a.average == 2 ? MPI_MIN : MPI_MAX;
      MPI_Allreduce(&sec, &agg, 1, MPI_DOUBLE, red, MPI_COMM_WORLD);
      if (a.average == 1) agg /= nranks;
    }
    Placement p;
    p.timeUs = agg * 1e6;
    collBandwidth(Coll::AllReduce, k.paramCount, es, agg, nranks, &p.algBw, &p.busBw);
    p.wrong = a.check ? wrongTotal : -1;
    bwSum += p.busBw;
    bwCount++;
    return p;
  }
};

}  // namespace

int main(int argc, char** argv) {
  setlinebuf(stdout);
  Bench b;
  std::string error;
  switch (parsePerfArgs(argc, argv, &b.a, &error)) {
    case ParseOutcome::kHelp:
      std::printf(
          "%s(MPI_Allreduce on host buffers; -t, -g, -m, -G, -R, -p, -y, -z, -r and -o avg/mulsum do not "
          "apply)\n",
          perfUsage(argv[0]).c_str());
      return 0;
    case ParseOutcome::kError:
      std::fprintf(stderr, "%s: %s\n", kTool, error.c_str());
      return 2;
    case ParseOutcome::kRun:
      break;
  }
  const PerfArgs& a = b.a;
  if (a.nThreads != 1 || a.nGpus != 1 || a.aggIters != 1 || a.graphLaunches || a.localRegister || a.blocking ||
      a.parallelInit) {
    std::fprintf(stderr, "%s: -t, -g, -m, -G, -R, -z and -p do not apply to MPI_Allreduce on host buffers\n", kTool);
    return 2;
  }
  for (ncclDataType_t t : a.types) {
    MPI_Datatype dt;
    if (!mpiType(t, &dt)) {
      std::fprintf(stderr, "%s: type %s has no MPI equivalent\n", kTool, typeName(t));
      return 2;
    }
  }
  for (OpKind o : a.ops) {
    MPI_Op op;
    if (!mpiOp(o, &op)) {
      std::fprintf(stderr, "%s: op %s has no MPI equivalent\n", kTool, opKindName(o));
      return 2;
    }
  }

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string ver = version;
  ver = ver.substr(0, ver.find_first_of(",\n"));
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);

  RunInfo info;
  info.tool = kTool;
  info.collective = "AllReduce";
  // "Open MPI v4.1.4" -> name "Open MPI", version "4.1.4"; other MPIs keep their whole string.
  info.library = "MPI";
  info.libraryVersion = ver;
  size_t v = ver.find(" v");
  if (v != std::string::npos && v + 2 < ver.size() && std::isdigit(static_cast<unsigned char>(ver[v + 2]))) {
    info.library = ver.substr(0, v);
    info.libraryVersion = ver.substr(v + 2);
  }
  info.libraryPath = "MPI_Allreduce";
  info.launcher = "mpi";
  info.buffers = "host";
  info.hostname = host;
  info.date = isoDateUtc();
  info.nranks = b.nranks;
  info.nprocs = b.nranks;
  for (int i = 0; i < argc; ++i) info.commandLine.push_back(argv[i]);

  b.bufBytes = std::max<size_t>(a.maxBytes, 64);
  b.send = static_cast<char*>(std::malloc(b.bufBytes));
  b.recv = static_cast<char*>(std::malloc(b.bufBytes));
  if (!b.send || !b.recv) {
    std::fprintf(stderr, "%s: rank %d: cannot allocate 2 x %zu bytes\n", kTool, b.rank, b.bufBytes);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  std::memset(b.send, 0, b.bufBytes);
  std::memset(b.recv, 0, b.bufBytes);

  if (b.rank == 0) {
    std::printf("# Collective test starting: %s\n", kTool);
    std::printf("# Library: MPI %s (MPI_Allreduce)\n", ver.c_str());
    std::printf("# %s\n", paramsLine(a).c_str());
    std::printf("# Launcher: mpi, %d processes\n", b.nranks);
    std::printf("# Using host buffers (MPI_Allreduce)\n#\n# Using devices\n");
  }
  for (int r = 0; r < b.nranks; ++r) {
    if (r == b.rank) {
      char line[512];
      std::snprintf(line, sizeof(line), "#  Rank %2d Group %2d Pid %6d on %10s device  - [host] host buffers", r, 0,
                    static_cast<int>(getpid()), host);
      // Lines from other ranks reach rank 0 through MPI so they print in order.
      if (b.rank == 0) {
        std::printf("%s\n", line);
        info.devices.push_back(line);
      } else {
        MPI_Send(line, sizeof(line), MPI_CHAR, 0, 7, MPI_COMM_WORLD);
      }
    } else if (b.rank == 0) {
      char line[512];
      MPI_Recv(line, sizeof(line), MPI_CHAR, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      std::printf("%s\n", line);
      info.devices.push_back(line);
    }
  }
  if (b.rank == 0) std::printf("#\n%s", tableHeader(false).c_str());

  std::vector<ResultRow> rows;
  const std::vector<size_t> sizes = sweepSizes(a);
  for (ncclDataType_t type : a.types) {
    for (OpKind op : a.ops) {
      const size_t es = typeSize(type);
      MPI_Datatype dt = MPI_FLOAT;
      MPI_Op mop = MPI_SUM;
      mpiType(type, &dt);
      mpiOp(op, &mop);
      for (size_t size : {a.maxBytes, a.minBytes}) {
        CollCounts k = collCounts(Coll::AllReduce, size / es, es, b.nranks);
        for (int i = 0; i < a.warmupIters; ++i) b.allreduce(k, es, dt, mop, false, i);
      }
      long repeat = a.runCycles;
      do {
        for (size_t size : sizes) {
          CollCounts k = collCounts(Coll::AllReduce, size / es, es, b.nranks);
          ResultRow row;
          row.size = collBytes(k, es);
          row.count = k.paramCount;
          row.type = typeName(type);
          row.redop = opKindName(op);
          row.root = -1;
          row.outOfPlace = b.bench(k, type, op, false);
          row.inPlace = b.bench(k, type, op, true);
          if (b.rank == 0) {
            std::printf("%s\n", formatRow(row).c_str());
            rows.push_back(row);
          }
        }
      } while (--repeat != 0);
    }
  }
  const double avg = b.bwCount ? b.bwSum / b.bwCount : 0;
  if (b.rank == 0) {
    std::printf("%s", tableFooter(b.outOfBounds, avg, -1).c_str());
    if (!a.jsonPath.empty()) {
      if (writeJson(a.jsonPath, info, a, rows, b.outOfBounds, avg, &error)) {
        std::printf("# Results written to %s\n", a.jsonPath.c_str());
      } else {
        std::fprintf(stderr, "%s: -J: %s\n", kTool, error.c_str());
      }
    }
  }
  std::free(b.send);
  std::free(b.recv);
  MPI_Finalize();
  return b.outOfBounds ? 1 : 0;
}
