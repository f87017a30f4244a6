// cudaArchFit: parses the CMake CUDA architecture list this library was built with (see cuda_arch.h).
#include "runtime/gpu/cuda_arch.h"

#include <cstdlib>
#include <cstring>
#include <string>

#ifndef BRAID_CUDA_ARCHS
#define BRAID_CUDA_ARCHS ""
#endif

namespace braid {

const char* builtCudaArchs() { return BRAID_CUDA_ARCHS; }

ArchFit cudaArchFit(const char* list, int major, int minor) {
  if (list == nullptr) return ArchFit::None;
  const int dev = major * 10 + minor;
  ArchFit best = ArchFit::None;
  std::string s(list);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find_first_of(",;", pos);
    if (end == std::string::npos) end = s.size();
    const std::string e = s.substr(pos, end - pos);
    pos = end + 1;
    if (e.empty()) continue;
    if (e == "all" || e == "all-major" || e == "native") return ArchFit::Native;
    char* rest = nullptr;
    const long cc = std::strtol(e.c_str(), &rest, 10);
    if (rest == e.c_str() || cc <= 0) continue;
    const bool archSpecific = *rest == 'a';
    if (*rest == 'a' || *rest == 'f') ++rest;
    const bool sass = std::strcmp(rest, "-virtual") != 0;
    const bool ptx = std::strcmp(rest, "-real") != 0 && !archSpecific;
    if (sass && cc / 10 == major && (archSpecific ? cc == dev : cc % 10 <= minor)) return ArchFit::Native;
    if (ptx && cc <= dev) best = ArchFit::PtxOnly;
  }
  return best;
}

}  // namespace braid
