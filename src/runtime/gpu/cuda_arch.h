// Which GPUs the device code built into this library runs on natively: the CMAKE_CUDA_ARCHITECTURES list
// (passed in as BRAID_CUDA_ARCHS) against a device's compute capability. A GPU with no native code still
// runs kernels JIT-compiled from PTX, but the driver compiles each one at first use (seconds per kernel,
// per GPU, per process), so init says so instead of letting the first collectives look hung.
#pragma once

namespace braid {

enum class ArchFit { Native, PtxOnly, None };

// list: comma-separated CMake architecture entries ("90", "80,90a", "90-real", "75-virtual", "all",
// "native"). SASS for XY runs on compute capability X.Z for Z >= Y (an "a" entry only on X.Y exactly);
// PTX for XY runs (JIT) on any capability >= X.Y. "all", "all-major" and "native" count as native.
ArchFit cudaArchFit(const char* list, int major, int minor);

// The list this library was built with ("" when unknown).
const char* builtCudaArchs();

}  // namespace braid
