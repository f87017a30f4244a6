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
// the GPCs decides what their stores into the peer GPU carry: on 2xH100 a plain copy into the peer's memory
// moved 347 GB/s both ways on 32 CTAs and 360 on 64, but 364 and 365 in clusters of 4; one way, 24 CTAs
// 335 against 349 (tools/cumem_probe.cu, docs/gpu/2026-12-01d). NCCL launches in clusters of 4 on sm_90
// (NCCL_CGA_CLUSTER_SIZE, config.cgaClusterSize), and that is how it moves 364-369 GB/s of broadcast on 24
// CTAs. The ring collectives on Simple gained 2-4% from 32 MB up (broadcast 512 MB 1451 us against 1509-1513,
// NCCL 1474-1483; reduce-scatter 64 MB 118 against 124; ring all-reduce 512 MB 1547-1564 against 1587-1589)
// and about nothing at 8-16 MB, and 32 channels in clusters moved what 64 do without (docs/gpu/2026-12-01e,
// ...f). The one-shot all-reduce lost (8 MB 37.9 us against 34.0-34.4) and so did send/recv (256 MB 778
// against 754), so they launch plainly.
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
// kThreeClusterMaxChannels channels, which run in clusters of 3 (`threeFits`: init found 3 fit). 2xH100,
// docs/gpu/2026-12-02g, h, us, clusters of 3 / 4: on 24 channels all-gather 64 / 256 MB 137.7 / 488.0 against
// 145.6 / 546.1, reduce-scatter 143.4 / 512.3 against 157.2 / 556.7, ring all-reduce 238.2 / 883.3 against
// 248.7 / 936.3; on 32 channels all-gather 129.2 / 449.0 against 134.4 / 506.1, reduce-scatter 138.1 / 458.8
// against 146.5 / 517.2. Broadcast and reduce lose 1-3% in 3 on 24 channels (broadcast 197.1 / 753.6 against
// 194.1 / 740.7, reduce 213.6 / 734.7 against 207.6 / 731.2), and on 48 channels 4 wins (all-gather 256 MB 427.4
// against 486.9), so 4 stays for them and elsewhere. Other channel counts (16-23, 33-47) are unmeasured. As
// landed (docs/gpu/2026-12-03a, NCCL_MAX_CTAS=24 / 32, medians of two rounds, 256 MB, us, 3 / 4): all-gather
// 487.1 / 546.2 and 456.5 / 504.7, reduce-scatter 515.9 / 558.7 and 482.5 / 522.9, all-reduce 889.0 / 916.8
// and 808.1 / 865.0; broadcast the same (740.8 / 740.4).
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
