// Command line of the perf tools: nccl-tests' flags and defaults, parsed strictly (a bad value or an unknown
// flag is an error with a message; the tools exit 2). Header-only so tests/unit can exercise it directly.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf_types.h"

namespace braid {
namespace perf {

// Reduction ops in nccl-tests' order; kMulSum stands for ncclRedOpCreatePreMulSum (created per call).
enum class OpKind { Sum, Prod, Max, Min, Avg, MulSum };
constexpr int kNumOpKinds = 6;

inline const char* opKindName(OpKind o) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
  return kNames[static_cast<int>(o)];
}

struct PerfArgs {
  int nThreads = 1;
  int nGpus = 1;
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  size_t stepFactor = 1;  // > 1: multiply, else add stepBytes
  int iters = 20;
  int warmupIters = 5;
  int aggIters = 1;
  int runCycles = 1;  // 0 = forever
  int parallelInit = 0;
  int check = 1;  // check iterations per measurement
  std::vector<OpKind> ops{OpKind::Sum};
  std::vector<ncclDataType_t> types{ncclFloat32};
  int root = 0;  // -1 = every rank in turn
  int blocking = 0;
  int streamNull = 0;
  int timeoutSec = 0;
  int graphLaunches = 0;
  int reportCputime = 0;
  int average = 1;  // 0 = rank 0, 1 = mean, 2 = min, 3 = max over ranks
  int localRegister = 0;
  std::string jsonPath;
  std::string opArg = "sum";
  std::string typeArg = "float";
  std::string rootArg = "0";
};

enum class ParseOutcome { kRun, kHelp, kError };

// Sizes as nccl-tests takes them: a number (fractions allowed) with an optional K, M or G (powers of 1024,
// either case), optionally followed by B. "1.5M" = 1572864.
inline bool parseSize(const char* s, size_t* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s || errno != 0 || !std::isfinite(v) || v < 0) return false;
  double unit = 1;
  switch (*end) {
    case 'k':
    case 'K':
      unit = 1024.0;
      ++end;
      break;
    case 'm':
    case 'M':
      unit = 1024.0 * 1024;
      ++end;
      break;
    case 'g':
    case 'G':
      unit = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  double bytes = v * unit;
  if (bytes > 1.0e18) return false;
  *out = static_cast<size_t>(bytes);
  return true;
}

inline bool parseIntIn(const char* s, long lo, long hi, int* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

inline bool parseOps(const std::string& s, std::vector<OpKind>* out) {
  out->clear();
  if (s == "all") {
    for (int i = 0; i < kNumOpKinds; ++i) out->push_back(static_cast<OpKind>(i));
    return true;
  }
  for (int i = 0; i < kNumOpKinds; ++i)
    if (s == opKindName(static_cast<OpKind>(i))) {
      out->push_back(static_cast<OpKind>(i));
      return true;
    }
  return false;
}

inline bool parseTypes(const std::string& s, std::vector<ncclDataType_t>* out) {
  out->clear();
  if (s == "all") {
    for (int i = 0; i < kNumTypes; ++i) out->push_back(allTypes()[i]);
    return true;
  }
  struct Alias {
    const char* name;
    ncclDataType_t type;
  };
  static const Alias kAliases[] = {
      {"int8", ncclInt8},       {"char", ncclInt8},         {"uint8", ncclUint8},
      {"int32", ncclInt32},     {"int", ncclInt32},         {"uint32", ncclUint32},
      {"int64", ncclInt64},     {"uint64", ncclUint64},     {"half", ncclFloat16},
      {"float16", ncclFloat16}, {"fp16", ncclFloat16},      {"float", ncclFloat32},
      {"float32", ncclFloat32}, {"fp32", ncclFloat32},      {"double", ncclFloat64},
      {"float64", ncclFloat64}, {"fp64", ncclFloat64},      {"bfloat16", ncclBfloat16},
      {"bf16", ncclBfloat16},   {"f8e4m3", ncclFloat8e4m3}, {"fp8_e4m3", ncclFloat8e4m3},
      {"e4m3", ncclFloat8e4m3}, {"f8e5m2", ncclFloat8e5m2}, {"fp8_e5m2", ncclFloat8e5m2},
      {"e5m2", ncclFloat8e5m2},
  };
  for (const Alias& a : kAliases)
    if (s == a.name) {
      out->push_back(a.type);
      return true;
    }
  return false;
}

inline std::string perfUsage(const char* prog) {
  std::string p = prog ? prog : "perf";
  size_t slash = p.rfind('/');
  if (slash != std::string::npos) p = p.substr(slash + 1);
  return "USAGE: " + p +
         "\n"
         "\t[-t,--nthreads <num threads>]\n"
         "\t[-g,--ngpus <gpus per thread>]\n"
         "\t[-b,--minbytes <min size in bytes, K/M/G suffix allowed>]\n"
         "\t[-e,--maxbytes <max size in bytes>]\n"
         "\t[-i,--stepbytes <increment size>]\n"
         "\t[-f,--stepfactor <increment factor>]\n"
         "\t[-n,--iters <iteration count>]\n"
         "\t[-m,--agg_iters <aggregated iteration count>]\n"
         "\t[-w,--warmup_iters <warmup iteration count>]\n"
         "\t[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)]\n"
         "\t[-p,--parallel_init <0/1>]\n"
         "\t[-c,--check <check iteration count>]\n"
         "\t[-o,--op <sum/prod/min/max/avg/mulsum/all>]\n"
         "\t[-d,--datatype <nccltype/all>]\n"
         "\t[-r,--root <root/all>]\n"
         "\t[-z,--blocking <0/1>]\n"
         "\t[-y,--stream_null <0/1>]\n"
         "\t[-T,--timeout <time in seconds>]\n"
         "\t[-G,--cudagraph <num graph launches>]\n"
         "\t[-C,--report_cputime <0/1>]\n"
         "\t[-J,--output_file <file> write results as JSON]\n"
         "\t[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>]\n"
         "\t[-R,--local_register <0/1/2> register buffers: local (1) or symmetric window (2)]\n"
         "\t[-h,--help]\n"
         "Launch: mpirun -np N " +
         p + " ..., braidrun -n N " + p +
         " ..., or one process with -t/-g.\n"
         "Without GPUs (or with BRAID_HOST_COMM=1) buffers are host memory.\n";
}

// Parses argv[1..]. On kError, *error says what was wrong.
inline ParseOutcome parsePerfArgs(int argc, char** argv, PerfArgs* a, std::string* error) {
  *a = PerfArgs();
  struct Flag {
    char shortName;
    const char* longName;
  };
  static const Flag kFlags[] = {
      {'t', "nthreads"},     {'g', "ngpus"},      {'b', "minbytes"},       {'e', "maxbytes"},
      {'i', "stepbytes"},    {'f', "stepfactor"}, {'n', "iters"},          {'m', "agg_iters"},
      {'w', "warmup_iters"}, {'N', "run_cycles"}, {'p', "parallel_init"},  {'c', "check"},
      {'o', "op"},           {'d', "datatype"},   {'r', "root"},           {'z', "blocking"},
      {'y', "stream_null"},  {'T', "timeout"},    {'G', "cudagraph"},      {'C', "report_cputime"},
      {'J', "output_file"},  {'a', "average"},    {'R', "local_register"}, {'h', "help"},
  };
  const long kIntMax = 0x7fffffff;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    std::string name;
    const char* value = nullptr;
    char flag = 0;
    if (arg[0] == '-' && arg[1] == '-' && arg[2] != '\0') {
      std::string s = arg + 2;
      size_t eq = s.find('=');
      if (eq != std::string::npos) {
        value = arg + 2 + eq + 1;
        s.resize(eq);
      }
      for (const Flag& f : kFlags)
        if (s == f.longName) flag = f.shortName;
      name = std::string("--") + s;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      for (const Flag& f : kFlags)
        if (arg[1] == f.shortName) flag = f.shortName;
      name = std::string("-") + arg[1];
      if (arg[2] != '\0') value = arg + 2;
    } else {
      *error = std::string("unexpected argument '") + arg + "' (all options are flags; see -h)";
      return ParseOutcome::kError;
    }
    if (flag == 0) {
      *error = std::string("unknown option '") + arg + "' (see -h)";
      return ParseOutcome::kError;
    }
    if (flag == 'h') {
      if (value != nullptr) {
        *error = name + " takes no value";
        return ParseOutcome::kError;
      }
      return ParseOutcome::kHelp;
    }
    if (value == nullptr) {
      if (i + 1 >= argc) {
        *error = "missing value after " + name;
        return ParseOutcome::kError;
      }
      value = argv[++i];
    }
    auto bad = [&](const char* want) {
      *error = "bad value '" + std::string(value) + "' for " + name + " (want " + want + ")";
      return ParseOutcome::kError;
    };
    int iv = 0;
    size_t sv = 0;
    switch (flag) {
      case 't':
        if (!parseIntIn(value, 1, 1024, &a->nThreads)) return bad("an integer from 1 to 1024");
        break;
      case 'g':
        if (!parseIntIn(value, 1, 1024, &a->nGpus)) return bad("an integer from 1 to 1024");
        break;
      case 'b':
        if (!parseSize(value, &a->minBytes)) return bad("a size such as 8, 64K, 1M or 2G");
        break;
      case 'e':
        if (!parseSize(value, &a->maxBytes)) return bad("a size such as 8, 64K, 1M or 2G");
        break;
      case 'i':
        if (!parseSize(value, &sv) || sv == 0) return bad("a size > 0");
        a->stepBytes = sv;
        break;
      case 'f':
        if (!parseIntIn(value, 1, 1 << 20, &iv)) return bad("an integer >= 1");
        a->stepFactor = static_cast<size_t>(iv);
        break;
      case 'n':
        if (!parseIntIn(value, 1, kIntMax, &a->iters)) return bad("an integer >= 1");
        break;
      case 'm':
        if (!parseIntIn(value, 1, kIntMax, &a->aggIters)) return bad("an integer >= 1");
        break;
      case 'w':
        if (!parseIntIn(value, 0, kIntMax, &a->warmupIters)) return bad("an integer >= 0");
        break;
      case 'N':
        if (!parseIntIn(value, 0, kIntMax, &a->runCycles)) return bad("an integer >= 0 (0 = forever)");
        break;
      case 'p':
        if (!parseIntIn(value, 0, 1, &a->parallelInit)) return bad("0 or 1");
        break;
      case 'c':
        if (!parseIntIn(value, 0, kIntMax, &a->check)) return bad("an integer >= 0");
        break;
      case 'o':
        if (!parseOps(value, &a->ops)) return bad("sum, prod, max, min, avg, mulsum or all");
        a->opArg = value;
        break;
      case 'd':
        if (!parseTypes(value, &a->types))
          return bad("int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2 or all");
        a->typeArg = value;
        break;
      case 'r':
        if (std::strcmp(value, "all") == 0) {
          a->root = -1;
        } else if (!parseIntIn(value, -1, kIntMax, &a->root)) {
          return bad("a rank >= 0, or all (or -1) for every rank in turn");
        }
        a->rootArg = value;
        break;
      case 'z':
        if (!parseIntIn(value, 0, 1, &a->blocking)) return bad("0 or 1");
        break;
      case 'y':
        if (!parseIntIn(value, 0, 1, &a->streamNull)) return bad("0 or 1");
        break;
      case 'T':
        if (!parseIntIn(value, 0, kIntMax, &a->timeoutSec)) return bad("seconds >= 0 (0 = no timeout)");
        break;
      case 'G':
        if (!parseIntIn(value, 0, kIntMax, &a->graphLaunches)) return bad("an integer >= 0");
        break;
      case 'C':
        if (!parseIntIn(value, 0, 1, &a->reportCputime)) return bad("0 or 1");
        break;
      case 'J':
        if (*value == '\0') return bad("a file name");
        a->jsonPath = value;
        break;
      case 'a':
        if (!parseIntIn(value, 0, 3, &a->average)) return bad("0, 1, 2 or 3");
        break;
      case 'R':
        if (!parseIntIn(value, 0, 2, &a->localRegister)) return bad("0, 1 or 2");
        break;
      default:
        *error = std::string("unknown option '") + arg + "'";
        return ParseOutcome::kError;
    }
  }
  if (a->minBytes > a->maxBytes) {
    *error = "invalid sizes for 'minbytes' and 'maxbytes': " + std::to_string(a->minBytes) + " > " +
             std::to_string(a->maxBytes);
    return ParseOutcome::kError;
  }
  return ParseOutcome::kRun;
}

// The sizes of one sweep: min, then *factor (factor > 1) or +step, while <= max.
inline std::vector<size_t> sweepSizes(const PerfArgs& a) {
  std::vector<size_t> sizes;
  for (size_t s = a.minBytes; s <= a.maxBytes;) {
    sizes.push_back(s);
    size_t next = a.stepFactor > 1 ? s * a.stepFactor : s + a.stepBytes;
    if (next <= s) {  // 0 * factor, or overflow
      if (s == 0 && a.stepFactor > 1) {
        next = 1;
      } else {
        break;
      }
    }
    s = next;
  }
  return sizes;
}

}  // namespace perf
}  // namespace braid
