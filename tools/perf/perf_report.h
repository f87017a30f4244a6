// Output of the perf tools: nccl-tests' table (header, rows, footer) and the -J JSON document. The MPI
// reference benchmark prints through the same functions, so `compare` and `plot` read both alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf_args.h"

namespace braid {
namespace perf {

struct Placement {
  double timeUs = 0;
  double algBw = 0;
  double busBw = 0;
  int64_t wrong = -1;  // -1: not checked (printed N/A)
};

struct ResultRow {
  size_t size = 0;
  size_t count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  Placement outOfPlace;
  Placement inPlace;
};

struct RunInfo {
  std::string tool;        // e.g. all_reduce_perf
  std::string collective;  // e.g. AllReduce
  std::string library;     // "Braid", "NCCL" or "Open MPI"
  std::string libraryPath;
  std::string libraryVersion;
  std::string launcher;  // single, braidrun, mpi
  std::string buffers;   // host or device
  std::string hostname;
  std::string date;  // ISO 8601, UTC
  int nranks = 1;
  int nprocs = 1;
  std::vector<std::string> devices;  // one "Rank ..." line per rank
  std::vector<std::string> commandLine;
};

// nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, none above.
std::string formatTime(double us);

// "# nThread ..." line (without the leading "# ").
std::string paramsLine(const PerfArgs& a);

// The three column-header lines, each starting with "#".
std::string tableHeader(bool cputime);

std::string formatRow(const ResultRow& row);

// "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X" (+ OK/FAILED against minBw > 0).
std::string tableFooter(int64_t outOfBounds, double avgBusBw, double minBw);

std::string isoDateUtc();

bool writeJson(const std::string& path, const RunInfo& info, const PerfArgs& args, const std::vector<ResultRow>& rows,
               int64_t outOfBounds, double avgBusBw, std::string* error);

}  // namespace perf
}  // namespace braid
