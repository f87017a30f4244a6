// matmul_demo: command-line parsing (--name value or --name=value).
#include "matmul_options.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace matmul {
namespace {

bool parseU64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

bool parseInt(const std::string& s, int lo, int* out) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || errno || *end || v < lo || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

const char* modeName(Mode m) { return m == Mode::kRows ? "rows" : "inner"; }

const char* deviceName(Device d) {
  switch (d) {
    case Device::kAuto:
      return "auto";
    case Device::kHost:
      return "host";
    case Device::kGpu:
      return "gpu";
    case Device::kGpuStaged:
      return "gpu-staged";
  }
  return "?";
}

std::string usageText() {
  std::string s =
      "usage: braidrun -n N -- matmul_demo [options]     (or: mpirun -np N matmul_demo [options])\n"
      "Computes C = A x B on N ranks through Braid (nccl.h) collectives, checks C against a single-rank\n"
      "reference on the root and prints a timing breakdown.\n"
      "  --m M --n N --k K     matrix sizes: A is MxK, B is KxN, C is MxN (host default ";
  s += std::to_string(kHostDefaultM) + "x" + std::to_string(kHostDefaultN) + "x" + std::to_string(kHostDefaultK) +
       ", gpu default " + std::to_string(kGpuDefaultM) + "x" + std::to_string(kGpuDefaultN) + "x" +
       std::to_string(kGpuDefaultK) + ")\n";
  s += "  --type T              float | half | bf16 (default float; half/bf16 accumulate in float)\n"
       "  --mode rows|inner     rows: scatter row blocks of A, broadcast B, multiply, gather row blocks of C;\n"
       "                        inner: split K, each rank multiplies its slice, all-reduce (sum) the partial Cs\n"
       "                        (default rows)\n"
       "  --root R              rank that holds A and B and receives C (default 0)\n"
       "  --iters I             timed iterations (default 3); --warmup W untimed ones first (default 1)\n"
       "  --device D            auto | host | gpu | gpu-staged (default auto: gpu when GPUs exist and a GPU\n"
       "                        communicator can be created, else host; gpu-staged multiplies on GPUs and moves\n"
       "                        data through a host communicator)\n"
       "  --seed S              input data seed (default 1)\n"
       "Test hook: BRAID_MATMUL_CORRUPT=<rank> makes that rank corrupt one element of its local result.\n"
       "Exit status: 0 when C is verified, 1 when it is not, 2 for bad arguments, 3 for a runtime failure.\n";
  return s;
}

bool parseOptions(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      o->help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + arg + "'";
      return false;
    }
    std::string name = arg.substr(2), value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argc) {
        *error = "--" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    uint64_t u = 0;
    bool ok = true;
    if (name == "m" || name == "n" || name == "k") {
      ok = parseU64(value, &u) && u > 0 && u <= (1ull << 31);
      if (ok) (name == "m" ? o->m : name == "n" ? o->n : o->k) = static_cast<size_t>(u);
    } else if (name == "type") {
      ok = parseType(value, &o->type);
    } else if (name == "mode") {
      if (value == "rows") {
        o->mode = Mode::kRows;
      } else if (value == "inner") {
        o->mode = Mode::kInner;
      } else {
        ok = false;
      }
    } else if (name == "root") {
      ok = parseInt(value, 0, &o->root);
    } else if (name == "iters") {
      ok = parseInt(value, 1, &o->iters);
    } else if (name == "warmup") {
      ok = parseInt(value, 0, &o->warmup);
    } else if (name == "device") {
      if (value == "auto") {
        o->device = Device::kAuto;
      } else if (value == "host" || value == "cpu") {
        o->device = Device::kHost;
      } else if (value == "gpu") {
        o->device = Device::kGpu;
      } else if (value == "gpu-staged") {
        o->device = Device::kGpuStaged;
      } else {
        ok = false;
      }
    } else if (name == "seed") {
      ok = parseU64(value, &o->seed);
    } else {
      *error = "unknown option --" + name;
      return false;
    }
    if (!ok) {
      *error = "bad value '" + value + "' for --" + name;
      return false;
    }
  }
  // Each matrix must be addressable in bytes (8-byte elements at most): m*k, k*n and m*n elements.
  struct Dims {
    size_t rows, cols;
    const char* what;
  };
  const Dims mats[] = {{o->m, o->k, "A (m x k)"}, {o->k, o->n, "B (k x n)"}, {o->m, o->n, "C (m x n)"}};
  for (const Dims& d : mats) {
    if (static_cast<unsigned __int128>(d.rows) * d.cols > static_cast<unsigned __int128>(SIZE_MAX) / 8) {
      *error = std::string("matrix ") + d.what + " is too large to address";
      return false;
    }
  }
  return true;
}

}  // namespace matmul
