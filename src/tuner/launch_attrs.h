// What BRAID_PDL and NCCL_CGA_CLUSTER_SIZE ask of a kernel launch (gpu_executor.cc applies it): plain
// functions, so the rules are unit-tested without a GPU (tests/unit/launch_attrs_test.cc).
#pragma once

#include <cstddef>

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

// Thread-block clusters. The hardware places a cluster's CTAs on one GPC, and how a launch's CTAs spread over
// the GPCs decides what their stores into the peer GPU carry: a plain copy into the peer's memory moves a few
// percent more in clusters of 4, as NCCL launches on sm_90 (NCCL_CGA_CLUSTER_SIZE, config.cgaClusterSize). The
// ring collectives on Simple gain 2-4% from 32 MB up and about nothing at 8-16 MB (so kClusterMinBytes); the
// one-shot all-reduce and send/recv lose, so they launch plainly (measured on 2xH100: docs/TUNING.md,
// "Thread-block clusters").
constexpr int kDefaultCgaCluster = 4;
constexpr int kMaxCgaCluster = 8;               // the portable cluster size limit
constexpr size_t kClusterMinBytes = 16u << 20;  // opBytes of the smallest op launched in clusters

// The communicator's cluster size: NCCL_CGA_CLUSTER_SIZE (`env`, -1 unset) overrides config.cgaClusterSize
// (`config`, -1 unset), as NCCL's environment does; neither set gives kDefaultCgaCluster. Above
// kMaxCgaCluster: kMaxCgaCluster. Clusters exist from sm_90 on, for kernels compiled for it (as pdlSetting).
// 0: no clusters (a size of 1 is none either).
inline int clusterSetting(long long env, int config, int ccMajor, int kernelPtxVersion) {
  if (ccMajor < 9 || kernelPtxVersion < 90) return 0;
  long long v = env >= 0 ? env : config >= 0 ? config : kDefaultCgaCluster;
  if (v > kMaxCgaCluster) v = kMaxCgaCluster;
  return v >= 2 ? static_cast<int>(v) : 0;
}

// One collective launch's cluster size (0: none): the ring schedules on Simple (broadcast, reduce,
// all-gather, reduce-scatter, ring all-reduce; not the one-shot) over NVLink P2P (`eligible`, the caller's
// test; what clusters change is how SM stores cross NVLink), of at least kClusterMinBytes.
inline int collCluster(int setting, bool eligible, size_t opBytes) {
  return setting >= 2 && eligible && opBytes >= kClusterMinBytes ? setting : 0;
}

// The cluster size a communicator keeps (0: none) where at most `maxActiveClusters` clusters of `cluster` CTAs
// can be resident at once (cudaOccupancyMaxActiveClusters; 0 or less: unknown). Every CTA of a ring launch
// must be resident together (each channel waits on the peer's same channel, in any order), and a cluster's
// CTAs must all find room in one GPC at once where a plain CTA takes room on any SM, so clusters stay only
// where the largest clustered launch, nChannels rounded up to whole clusters, fits whole. (On a GPU that
// other kernels share, fewer may fit when the launch comes, as for plain CTAs; CUDA graphs keep the cluster
// size a launch was captured with.)
inline int clusterIfFits(int cluster, int nChannels, int maxActiveClusters) {
  if (cluster < 2) return 0;
  const int needed = (nChannels + cluster - 1) / cluster;
  return maxActiveClusters >= needed ? cluster : 0;
}

// The cluster size of one ring launch on nChannels channels, where the communicator's size is `setting`
// (clusterSetting) and `userSet` says whether NCCL_CGA_CLUSTER_SIZE or config.cgaClusterSize chose it. A size
// the user chose is kept. Otherwise kDefaultCgaCluster, but for the collectives that load both directions of
// the link (all-gather, reduce-scatter, the ring all-reduce: `twoWay`) on kThreeClusterMinChannels to
// kThreeClusterMaxChannels channels, which run in clusters of 3 (`threeFits`: init found 3 fit). On 2xH100 those
// ran 4-11% faster in clusters of 3 than of 4 on 24 and 32 channels; broadcast and reduce lost 1-3% in 3, and on
// 48 channels 4 won, so 4 stays for them and elsewhere; 16-23 and 33-47 channels are unmeasured (docs/TUNING.md,
// "Thread-block clusters").
constexpr int kThreeClusterMinChannels = 24;
constexpr int kThreeClusterMaxChannels = 32;
inline int clusterForLaunch(int setting, bool userSet, bool threeFits, int nChannels, bool twoWay) {
  if (setting < 2 || userSet || !threeFits || !twoWay) return setting;
  return nChannels >= kThreeClusterMinChannels && nChannels <= kThreeClusterMaxChannels ? 3 : setting;
}

// A grid of nCta CTAs launched in clusters of `cluster` (0: none) must be a whole number of clusters: the
// collective kernel's CTAs past its channels return at once.
inline int clusteredGrid(int nCta, int cluster) {
  return cluster >= 2 ? (nCta + cluster - 1) / cluster * cluster : nCta;
}

}  // namespace braid
