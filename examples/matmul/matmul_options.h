// matmul_demo: the command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "matmul_types.h"

namespace matmul {

enum class Mode { kRows, kInner };
// kAuto: a GPU communicator on GPU buffers when GPUs exist and one can be created, else host buffers.
// kGpuStaged: cuBLAS on GPU buffers, collectives on host buffers of a host communicator (copies around each).
enum class Device { kAuto, kHost, kGpu, kGpuStaged };

struct Options {
  size_t m = 0, n = 0, k = 0;  // 0: the default for the device actually used
  ElemType type = ElemType::kFloat;
  Mode mode = Mode::kRows;
  Device device = Device::kAuto;
  int root = 0;
  int iters = 3;
  int warmup = 1;
  uint64_t seed = 1;
  bool help = false;
};

// Host defaults run in a few seconds on two cores; GPU defaults are large enough for the GPUs to matter.
constexpr size_t kHostDefaultM = 3001, kHostDefaultN = 2053, kHostDefaultK = 1031;
constexpr size_t kGpuDefaultM = 12289, kGpuDefaultN = 8193, kGpuDefaultK = 8191;

// Parses argv (not argv[0]); on failure returns false with the reason in *error.
bool parseOptions(int argc, char** argv, Options* out, std::string* error);
std::string usageText();
const char* modeName(Mode m);
const char* deviceName(Device d);

}  // namespace matmul
