// What BRAID_PDL asks of a kernel launch (device_executor.cc applies it): plain functions, so the rule is
// unit-tested without a GPU (tests/unit/launch_attrs_test.cc).
#pragma once

namespace braid {

// The communicator's setting from BRAID_PDL and the GPU's compute capability: programmatic launches exist from
// sm_90 on, and only the three defined bits of a non-negative value count (a negative one: plain launches).
inline int pdlSetting(long long param, int ccMajor) {
  return ccMajor >= 9 && param > 0 ? static_cast<int>(param & 7) : 0;
}

struct LaunchAttrs {
  bool programmatic = false;      // cudaLaunchAttributeProgrammaticStreamSerialization
  bool earlyTrigger = false;      // CollLaunchArgs::pdlTrigger: each CTA lets the next launch begin at its start
  bool remoteSyncDomain = false;  // cudaLaunchAttributeMemSyncDomain = remote
};

// One launch's attributes. None under a capture: a graph already launches its kernels back to back, and the
// plain edges keep captured work ordered as it was captured. The early trigger only with bit 0 (without a
// programmatic launch after it, nothing would use it).
inline LaunchAttrs launchAttrsFor(int pdl, bool capturing) {
  LaunchAttrs a;
  if (capturing) return a;
  a.programmatic = (pdl & 1) != 0;
  a.earlyTrigger = (pdl & 3) == 3;
  a.remoteSyncDomain = (pdl & 4) != 0;
  return a;
}

}  // namespace braid
