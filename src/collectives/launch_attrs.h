// What BRAID_PDL asks of a kernel launch (device_executor.cc applies it): plain functions, so the rule is
// unit-tested without a GPU (tests/unit/launch_attrs_test.cc).
#pragma once

namespace braid {

// The communicator's setting from BRAID_PDL, the GPU's compute capability and the PTX version the loaded
// kernels came from (cudaFuncAttributes::ptxVersion): programmatic launches exist from sm_90 on, and the
// kernels' griddepcontrol.wait is compiled only for compute_90 and up, so a build that runs an older PTX on a
// Hopper GPU (CMAKE_CUDA_ARCHITECTURES=80, JIT-compiled) must launch plainly: its kernels would not wait.
// Only the two defined bits of a positive value count.
inline int pdlSetting(long long param, int ccMajor, int kernelPtxVersion) {
  return ccMajor >= 9 && kernelPtxVersion >= 90 && param > 0 ? static_cast<int>(param & 3) : 0;
}

struct LaunchAttrs {
  bool programmatic = false;  // cudaLaunchAttributeProgrammaticStreamSerialization
  bool earlyTrigger = false;  // CollLaunchArgs::pdlTrigger: each CTA lets the next launch begin at its start
};

// One launch's attributes. None under a capture: a graph already launches its kernels back to back, and the
// plain edges keep captured work ordered as it was captured. The early trigger only with bit 0 (without a
// programmatic launch after it, nothing would use it).
inline LaunchAttrs launchAttrsFor(int pdl, bool capturing) {
  LaunchAttrs a;
  if (capturing) return a;
  a.programmatic = (pdl & 1) != 0;
  a.earlyTrigger = (pdl & 3) == 3;
  return a;
}

}  // namespace braid
