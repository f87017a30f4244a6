// Internal to the device communicator (gpu_comm.cc, gpu_executor.cc): the per-communicator device
// state behind the GPU executor (mapped status/abort words, DevConn copies of the connections in device
// memory, host FIFOs registered for device access) and the CUDA error helper.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/peer_watch.h"
#include "device/dev_work.h"
#include "runtime/executor.h"
#include "runtime/gpu/gpu_comm.h"
#include "tuner/tuner.h"
#include "tuner/tuner_plugin.h"
#include "nccl.h"
#include "transport/conn_info.h"

struct ncclComm;

namespace braid {

// Records "<what>: <CUDA error name> (<string>)" as ncclUnhandledCudaError and clears CUDA's sticky
// last error. `fmt` says what was attempted, naming rank/peer.
ncclResult_t cudaError(cudaError_t e, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define BRAID_CUDA_CHECK(call, ...)                                           \
  do {                                                                        \
    cudaError_t braid_cuda_err_ = (call);                                     \
    if (braid_cuda_err_ != cudaSuccess) return ::braid::cudaError(braid_cuda_err_, __VA_ARGS__); \
  } while (0)

// Sets the device for a scope and restores the caller's on exit (API calls must not move the user's
// current device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int dev) {
    if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
    if (dev != prev_) cudaSetDevice(dev);
  }
  ~DeviceGuard() {
    int cur = -1;
    if (prev_ >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != prev_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

// Lets this thread make allocation calls while it (or, in global mode, any thread) captures a graph: for
// buffers made once, on first use, that no capture involves (the p2p table, the one-shot's connection table).
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class DeviceState {
 public:
  ~DeviceState();
  int dev = -1;
  int rank = 0;
  int nranks = 1;
  int nChannels = 1;
  int nThreads = kDevThreads;
  DevStatus* statusHost = nullptr;  // mapped pinned memory
  DevStatus* statusDev = nullptr;   // the same, as the kernels see it
  DevConn* ringConns = nullptr;     // device memory: [0, nChannels) send, [nChannels, 2 nChannels) recv
  uint64_t* splitGuard = nullptr;   // device memory, one zeroed word per channel: CollLaunchArgs::splitGuard
  // The rings' order agreed at init (ring_order.h): this rank's position, rank -> position (for roots), and the
  // position -> rank table in device memory (CollLaunchArgs::ringOrder), left null while the order is rank order.
  int ringPos = 0;
  std::vector<int> ringPosOf;
  int32_t* ringOrderDev = nullptr;
  // Several distinct rings (channel c on ring c % nRings): their tables in device memory (CollLaunchArgs::ringTables;
  // null with one ring, which the fields above describe).
  int nRings = 1;
  int32_t* ringTablesDev = nullptr;
  // Per direction (0: send, 1: receive) and peer: the channels whose ring connection goes to (comes from) that peer
  // (ringChannelsWith), which a point-to-point transfer with it runs on; empty for a peer that is no channel's ring
  // neighbour (it gets connections of its own). With one ring: every channel for the two neighbours.
  std::vector<std::vector<int>> ringChannelsOf[2];
  // Device memory, kP2pMaxBalanced zeroed pairs: a balanced send's claim counter and finished-CTA count (p2p_plan.h;
  // the last CTA of the transfer zeroes both again, so every launch and graph replay finds them zero).
  uint32_t* p2pClaims = nullptr;
  // Non-neighbour peers' connections by (peer, channel), connected lazily.
  std::map<std::pair<int, int>, DevConn*> p2pSend, p2pRecv;
  std::vector<void*> registered;    // host FIFO bases registered with cudaHostRegister
  // Agreed by every rank at init (agreeOnSelection), because neighbours that chose differently would wait on
  // each other's FIFOs forever: LL is possible (every ring connection of every rank has LL slots: P2P or SHM), and
  // the tuner configuration every call is decided from (tuning_agreement.h), the ring's transport class
  // and whether the tuner plans calls at all.
  int64_t deviceTimeoutSec = 0;  // BRAID_DEVICE_TIMEOUT at init (DevConn::timeoutNs of every connection)
  bool llPath = false;
  bool ll128Path = false;  // every rank's ring is NVLink P2P with LL128 slots on sm_90+ (agreed)
  TunerConfig tuning;
  TransportClass transport = TransportClass::P2pNvlink;  // the ring's class for the tuner's rows
  bool tunerOn = true;                                    // BRAID_DEVICE_TUNER, rank 0's
  uint32_t p2pLlThreshold = 0;  // NCCL_P2P_LL_THRESHOLD, rank 0's: p2p transfers up to this run LL
  bool p2pLlOnNet = false;       // NCCL_PROTO forces LL (and no Simple): p2p shares over NET run LL too
  uint32_t p2pChannelBytes = 65536;  // BRAID_P2P_CHANNEL_BYTES, rank 0's: the unit of p2pChannelsForBytes
  bool p2pPair = false;               // every rank can pair p2p CTAs (TuningFacts::p2pPair, agreed; p2pCtaBudget)
  uint32_t p2pPieces = 4;            // BRAID_P2P_PIECES, rank 0's: SIMPLE shares in up to this many steps (>= 128 KiB)
  uint32_t p2pBalanceBytes = 0;      // BRAID_P2P_BALANCE_BYTES, rank 0's: ring transfers balanced from this share size
  int pdl = 0;                       // BRAID_PDL, this rank's (launch attributes only: no cross-rank effect)
  int cluster = 0;                   // clusterSetting: NCCL_CGA_CLUSTER_SIZE / config, this rank's (likewise)
  bool clusterUserSet = false;       // NCCL_CGA_CLUSTER_SIZE or config.cgaClusterSize chose `cluster`
  bool clusterThreeFits = false;     // clusters of 3 fit for kThreeClusterMaxChannels channels (clusterForLaunch)
  bool clusterRing = false;          // every rank's ring launches clustered (TuningFacts::clusterRing, agreed)
  bool clusterThree = false;         // ... in clusters of 3 on 24-32 channels (TuningFacts::clusterThree, agreed)
  int p2pPeerChannels = 1;            // a peer's p2p connections and a collective's cap at n > 2 (p2pPeerChannels)
  uint32_t oneShotPeersBytes = 0;    // all-reduce up to this runs the one-shot of > 2 ranks (0: never; agreed)
  uint32_t twoShotPeersBytes = 0;    // ... and the two-shot up to this (0: never; agreed)
  uint32_t peersChannelBytes = 4096; // ... both one channel per this many bytes (agreed)
  int oneShotPeerChannels = 1;       // ... on at most this many channels (agreed)
  DevConn** oneShotPeers = nullptr;  // device memory: its connection table (CollLaunchArgs::peerConns), made at init
  DevConn* collPeerConns = nullptr;  // device memory: the DevConn of each of its own peer connections
  // The double binary tree across nodes (gpu_comm.cc: connectDeviceTrees): channel c's tree t connections in
  // CollLaunchArgs::treeConns's layout (device memory), on treeChannels channels; null and 0 where the communicator
  // spans one node or NCCL_ALGO leaves Tree out (agreed).
  DevConn* treeConns = nullptr;
  int treeChannels = 0;
  int nNodes = 1;  // nodes the ranks span (PeerInfo::hostHash, NCCL_HOSTID)
  // The tuner plugin every rank loaded (TuningFacts::tunerPlugin agreed), its context for this communicator; null
  // where none serves every rank (gpu_comm.cc: openTunerPlugin).
  uint32_t tunerPluginId = 0;
  std::unique_ptr<TunerPluginComm> tunerPlugin;
  bool treeLlPath = false;  // every tree connection of every rank has LL slots (agreed): the tree may run on LL
  TransportClass treeIntra = TransportClass::P2pNvlink;  // the slowest tree hop inside a node on any rank (agreed)
  TransportClass ringIntra = TransportClass::P2pNvlink;  // the slowest ring hop inside a node on any rank (agreed)
  int p2pCopyCtas = 32;              // BRAID_P2P_COPY_CTAS, this rank's (read at init: getenv is no per-call cost)


  DevConn* ringSend(int c) const { return ringConns + c; }
  DevConn* ringRecv(int c) const { return ringConns + nChannels + c; }
  // Device-side copy of a connection (registers host FIFOs), uploaded to `dst` in device memory. isSend: the
  // side this rank plays (BRAID_TEST_STEP_BASE presets the counter that side owns).
  ncclResult_t upload(const ConnInfo& info, bool isSend, DevConn* dst);
  void raiseAbort() {
    if (statusHost) __atomic_store_n(&statusHost->abort, 1u, __ATOMIC_SEQ_CST);
  }
  // The peer watch saw peer `deadRank` die: records why and tells the kernels (DevStatus::deadPeer), so one
  // spinning on that rank stops (a kernel whose data already arrived, or waiting on live peers, goes on; a
  // finished peer exiting at job end is normal). New collectives then fail naming the rank.
  void peerGone(int deadRank, const std::string& message);
  bool peerIsGone() const { return goneSeen_.load(); }
  int goneRank() const { return goneRank_.load(); }  // the dead rank peerGone was told of, -1: none
  std::string goneMessage() const;

  std::unique_ptr<PeerWatch> watch;  // GPU comms with peers (BRAID_PEER_WATCH_MS); stopped first on destruction

 private:
  mutable std::mutex goneMu_;
  std::string goneMessage_;  // guarded by goneMu_
  std::atomic<bool> goneSeen_{false};
  std::atomic<int> goneRank_{-1};
};

std::unique_ptr<Executor> makeGpuExecutor(ncclComm* comm, std::unique_ptr<DeviceState> state);

}  // namespace braid
