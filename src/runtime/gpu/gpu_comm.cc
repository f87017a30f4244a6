// Device communicators: describing the local GPU before the bootstrap, and after it connecting the ring
// channels (and, across nodes, the trees) for device buffers (P2P > SHM > NET) and building the device-side
// connection state (DeviceState) that the GPU executor launches kernels over.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "algo/ll_protocol.h"
#include "algo/p2p_plan.h"
#include "algo/tree_topology.h"
#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "device/dev_kernels.h"
#include "runtime/comm.h"
#include "runtime/gpu/cuda_arch.h"
#include "runtime/gpu/gpu_state.h"
#include "runtime/gpu/gpu_topology.h"
#include "runtime/ring_order.h"
#include "topology/topology.h"
#include "runtime/tuning_agreement.h"
#include "transport/host_fifo.h"
#include "transport/p2p/nvlink.h"
#include "transport/transport.h"
#include "tuner/launch_attrs.h"
#include "tuner/tuner.h"

namespace braid {

ncclResult_t cudaError(cudaError_t e, const char* fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  cudaGetLastError();
  return recordError(ncclUnhandledCudaError, "%s failed: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

DeviceState::~DeviceState() {
  watch.reset();  // its callback touches statusHost
  DeviceGuard g(dev);
  for (void* p : registered) cudaHostUnregister(p);
  for (auto& kv : p2pSend) cudaFree(kv.second);
  for (auto& kv : p2pRecv) cudaFree(kv.second);
  if (ringConns) cudaFree(ringConns);
  if (treeConns) cudaFree(treeConns);
  if (oneShotPeers) cudaFree(oneShotPeers);
  if (collPeerConns) cudaFree(collPeerConns);
  if (splitGuard) cudaFree(splitGuard);
  if (ringOrderDev) cudaFree(ringOrderDev);
  if (ringTablesDev) cudaFree(ringTablesDev);
  if (p2pClaims) cudaFree(p2pClaims);
  if (statusHost) cudaFreeHost(statusHost);
  cudaGetLastError();
}

void DeviceState::peerGone(int deadRank, const std::string& message) {
  {
    std::lock_guard<std::mutex> lk(goneMu_);
    goneMessage_ = message;
  }
  goneRank_.store(deadRank);
  goneSeen_.store(true);
  if (statusHost) __atomic_store_n(&statusHost->deadPeer, static_cast<uint32_t>(deadRank + 1), __ATOMIC_SEQ_CST);
  BRAID_WARN("rank %d: %s; kernels waiting on rank %d stop, and new collectives on this communicator fail", rank,
             message.c_str(), deadRank);
}

std::string DeviceState::goneMessage() const {
  std::lock_guard<std::mutex> lk(goneMu_);
  return goneMessage_;
}

// The NET proxies recognise an LL step by the kernels' mark and ship its lines (conn_info.h).
static_assert(kDevLlStepMark == kStepLlMark, "one LL mark in sizes[]");
static_assert(kDevStepLastMark == static_cast<uint32_t>(kStepLastOfMessage), "one last-step mark in sizes[]");
static_assert(kLlLineBytes == 16 && kLlDataPerLine == 8, "llWireBytes (conn_info.h) assumes 8 data bytes per 16");

ncclResult_t DeviceState::upload(const ConnInfo& info, bool isSend, DevConn* dst) {
  DevConn d{};
  d.buff = info.buff;
  d.head = info.head;
  d.tail = info.tail;
  d.sizes = info.sizes;
  d.errorFlag = info.errorFlag;
  d.step = 0;
  d.stepBytes = info.stepBytes;
  d.nSteps = info.nSteps;
  d.peer = info.peer;
  d.flags = 0;
  d.llBuff = llSlotsOf(&info);
  d.llSlotBytes = d.llBuff ? info.llSlotBytes : 0;
  d.ll128Buff = info.kind == TransportKind::P2p ? info.ll128Buff : nullptr;
  d.ll128SlotBytes = d.ll128Buff ? info.ll128SlotBytes : 0;
  d.timeoutNs = deviceTimeoutSec > 0 ? static_cast<uint64_t>(deviceTimeoutSec) * 1000000000ull : 0;
  if (info.kind != TransportKind::P2p) {
    // A host FIFO (SHM segment or NET staging FIFO, host_fifo.h): map the whole of it for the GPU.
    // SHM segments end with their LL slots (host_fifo.h), mapped with the rest.
    char* base = info.buff - kHostFifoPage;
    // NET staging FIFOs of GPU communicators carry the same LL slots (HostFifoMem::allocate).
    const size_t bytes = info.llBuff ? shmSegmentBytes(info.nSteps, info.stepBytes) : hostFifoBytes(info.nSteps, info.stepBytes);
    BRAID_CUDA_CHECK(cudaHostRegister(base, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable),
                     "rank %d: cudaHostRegister of the %zu-byte host FIFO shared with rank %d", rank, bytes, info.peer);
    registered.push_back(base);
    void* devBase = nullptr;
    BRAID_CUDA_CHECK(cudaHostGetDevicePointer(&devBase, base, 0),
                     "rank %d: cudaHostGetDevicePointer of the host FIFO shared with rank %d", rank, info.peer);
    auto map = [&](void* p) -> char* {
      return p ? static_cast<char*>(devBase) + (static_cast<char*>(p) - base) : nullptr;
    };
    d.buff = map(info.buff);
    d.head = reinterpret_cast<uint64_t*>(map(info.head));
    d.tail = reinterpret_cast<uint64_t*>(map(info.tail));
    d.sizes = reinterpret_cast<int32_t*>(map(info.sizes));
    d.errorFlag = reinterpret_cast<uint32_t*>(map(info.errorFlag));
    d.llBuff = d.llBuff ? map(d.llBuff) : nullptr;
    d.flags = kDevConnHostFifo | (info.kind == TransportKind::Net && d.llBuff ? kDevConnNetLl : 0u);
  }
  const int64_t base = params::TestStepBase();
  if (base > 0) d.step = static_cast<uint64_t>(base);  // tests only: every connection starts at `base`
  if (base > 0 && info.kind != TransportKind::P2p && __atomic_load_n(info.head, __ATOMIC_ACQUIRE) != d.step) {
    return recordError(ncclInternalError, "rank %d: BRAID_TEST_STEP_BASE: the host FIFO shared with rank %d was not "
                       "preset (head %llu)", rank, info.peer,
                       static_cast<unsigned long long>(__atomic_load_n(info.head, __ATOMIC_ACQUIRE)));
  }
  if (base > 0 && info.kind == TransportKind::P2p) {
    // Both sides of a P2P connection start at `base`. Each side owns (and polls) one counter in its own
    // memory: the sender its head, the receiver its tail; the peer does the same for the other. Host FIFOs
    // (SHM, NET) were preset when they were made (hostFifoPresetSteps).
    uint64_t* own = isSend ? info.head : info.tail;
    BRAID_CUDA_CHECK(cudaMemcpy(own, &d.step, sizeof(uint64_t), cudaMemcpyHostToDevice),
                     "rank %d: presetting a step counter of the connection with rank %d", rank, info.peer);
  }
  BRAID_CUDA_CHECK(cudaMemcpy(dst, &d, sizeof(d), cudaMemcpyHostToDevice),
                   "rank %d: uploading the connection state for rank %d", rank, info.peer);
  return ncclSuccess;
}

// The one-shot over every peer's connections (kDevAllReduceOneShotPeers), at init while every rank is in step
// (made at a collective's first use instead, a capture on a blocking stream would fail on the uploads): per channel
// and peer in rank order, the send connection (the ring's to its next rank, else the collective's own) and the
// receive connection (the ring's from its previous rank, else its own). Its own connections are apart from the
// point-to-point ones, so sends and receives grouped differently on two ranks never share a FIFO with it, and their
// FIFOs are minimal: the schedule runs on their LL slots.
namespace {
// The agreed ring orders into the DeviceState (ring_order.h): ring 0's position of this rank, rank -> position,
// and position -> rank table in device memory; with several rings, every ring's tables (ringTablesFor) for the
// kernels to pick by channel; and, per peer, the channels whose ring connections reach it. One ring in rank order
// keeps every table null, so the kernels read none.
ncclResult_t uploadRingOrder(ncclComm* comm, DeviceState* st) {
  const int n = comm->nranks;
  st->ringPos = comm->rank;
  for (int dir = 0; dir < 2; ++dir) {
    st->ringChannelsOf[dir].assign(static_cast<size_t>(n), std::vector<int>());
    for (int p = 0; p < n; ++p) {
      std::vector<int>& chans = st->ringChannelsOf[dir][static_cast<size_t>(p)];
      if (!comm->ringOrders.empty()) {
        chans = ringChannelsWith(comm->ringOrders, comm->rank, p, dir == 0, st->nChannels);
      } else if (p != comm->rank && p == (dir == 0 ? ringNextRank(comm) : ringPrevRank(comm))) {
        for (int c = 0; c < st->nChannels; ++c) chans.push_back(c);
      }
    }
  }
  st->nRings = ringCount(comm);
  if (st->nRings > 1) {
    const std::vector<int32_t> tables = ringTablesFor(comm->ringOrders);
    BRAID_CUDA_CHECK(cudaMalloc(&st->ringTablesDev, sizeof(int32_t) * tables.size()),
                     "rank %d: cudaMalloc of the tables of %d rings", comm->rank, st->nRings);
    BRAID_CUDA_CHECK(
        cudaMemcpy(st->ringTablesDev, tables.data(), sizeof(int32_t) * tables.size(), cudaMemcpyHostToDevice),
        "rank %d: uploading the tables of %d rings", comm->rank, st->nRings);
  }
  if (static_cast<int>(comm->ringOrder.size()) != n) return ncclSuccess;
  bool identity = true;
  for (int p = 0; p < n; ++p) identity = identity && comm->ringOrder[static_cast<size_t>(p)] == p;
  if (identity) return ncclSuccess;
  st->ringPos = comm->ringPos;
  st->ringPosOf.assign(static_cast<size_t>(n), 0);
  std::vector<int32_t> table(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    table[static_cast<size_t>(p)] = comm->ringOrder[static_cast<size_t>(p)];
    st->ringPosOf[static_cast<size_t>(comm->ringOrder[static_cast<size_t>(p)])] = p;
  }
  BRAID_CUDA_CHECK(cudaMalloc(&st->ringOrderDev, sizeof(int32_t) * table.size()),
                   "rank %d: cudaMalloc of the ring order table (%d ranks)", comm->rank, n);
  BRAID_CUDA_CHECK(cudaMemcpy(st->ringOrderDev, table.data(), sizeof(int32_t) * table.size(), cudaMemcpyHostToDevice),
                   "rank %d: uploading the ring order table", comm->rank);
  return ncclSuccess;
}

constexpr size_t kOneShotPeerFifoBytes = size_t(32) << 10;
ncclResult_t connectOneShotPeers(ncclComm* comm, DeviceState* st) {
  if ((st->oneShotPeersBytes == 0 && st->twoShotPeersBytes == 0) || !comm->conns) return ncclSuccess;
  const int n = st->nranks, me = st->rank;
  const int k = st->oneShotPeerChannels;
  // Channel c's ring connection serves a peer where channel c's ring has it as neighbour (the same channel on both
  // ends: ringChannelsWith); a peer that some channel of the k misses gets the collective's own connections.
  std::vector<int> sendPeers, recvPeers;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (int c = 0; c < k; ++c)
      if (ringNextRank(comm, c) != p) {
        sendPeers.push_back(p);
        break;
      }
    for (int c = 0; c < k; ++c)
      if (ringPrevRank(comm, c) != p) {
        recvPeers.push_back(p);
        break;
      }
  }
  BRAID_CHECK(comm->conns->connectCollPeers(sendPeers.data(), static_cast<int>(sendPeers.size()), recvPeers.data(),
                                            static_cast<int>(recvPeers.size()), k, kOneShotPeerFifoBytes));
  const size_t own = static_cast<size_t>(k) * (sendPeers.size() + recvPeers.size());
  BRAID_CUDA_CHECK(cudaMalloc(&st->collPeerConns, sizeof(DevConn) * own),
                   "rank %d: cudaMalloc of %zu one-shot connection states", me, own);
  std::vector<DevConn*> table;
  size_t used = 0;
  for (int c = 0; c < k; ++c) {
    const int next = ringNextRank(comm, c), prev = ringPrevRank(comm, c);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      for (bool send : {true, false}) {
        const bool ring = send ? p == next : p == prev;
        if (ring) {
          table.push_back(send ? st->ringSend(c) : st->ringRecv(c));
          continue;
        }
        const ConnInfo* info = send ? comm->conns->collPeerSend(p, c) : comm->conns->collPeerRecv(p, c);
        if (!info)
          return recordError(ncclInternalError, "rank %d: the one-shot's connection %s rank %d (channel %d) is missing",
                             me, send ? "to" : "from", p, c);
        DevConn* d = st->collPeerConns + used++;
        BRAID_CHECK(st->upload(*info, send, d));
        table.push_back(d);
      }
    }
  }
  BRAID_CUDA_CHECK(cudaMalloc(&st->oneShotPeers, sizeof(DevConn*) * table.size()),
                   "rank %d: cudaMalloc of the one-shot's connection table", me);
  BRAID_CUDA_CHECK(cudaMemcpy(st->oneShotPeers, table.data(), sizeof(DevConn*) * table.size(), cudaMemcpyHostToDevice),
                   "rank %d: uploading the one-shot's connection table", me);
  BRAID_INFO(kSubInit,
             "rank %d: all-reduce over every peer: the one-shot up to %u bytes, the two-shot up to %u, on up to %d "
             "channels (one per %u bytes)",
             me, st->oneShotPeersBytes, st->twoShotPeersBytes, k, st->peersChannelBytes);
  return ncclSuccess;
}
}  // namespace

ncclResult_t describeLocalDevice(ncclComm* comm) {
  int dev = -1;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return cudaError(e, "rank %d: cudaGetDevice", comm->rank);
  char bus[32] = {};
  e = cudaDeviceGetPCIBusId(bus, sizeof(bus), dev);
  if (e != cudaSuccess) return cudaError(e, "rank %d: cudaDeviceGetPCIBusId of device %d", comm->rank, dev);
  comm->cudaDev = dev;
  comm->self.cudaDev = dev;
  comm->self.busId = p2pBusIdFromString(bus);
  return ncclSuccess;
}

namespace {

// 64 channels: on 2xH200 64 channels moved 10-15% more than 32 at 2 GB (all-reduce busbw 352 GB/s against
// 313) and were no slower at 2 MB (docs/TUNING.md, "Channel counts"). Small ops still use few of them
// (channelsForBytes: 64 KiB per channel).
constexpr int kDefaultDevChannels = 64;
// Channels of a ring with a socket (NET) link. NCCL runs 2 there. On 2xH200 with P2P and SHM off, large
// all-reduces moved as much or more on 4 channels as on 1, 2, 8, 16 or 64 (docs/TUNING.md, "Channel counts"),
// and 64 channels would cost 512 MiB of pinned FIFOs and 128 TCP connections per rank.
constexpr int kNetDevChannels = 4;

// Checks that this library holds code the GPU can run: refuses a GPU with neither SASS nor PTX for it, and
// warns (once per process) when only PTX fits, since the driver then JIT-compiles each kernel at its first
// use (seconds each, per GPU and process: the first collectives look hung).
ncclResult_t checkDeviceCode(ncclComm* comm) {
  int major = 0, minor = 0;
  BRAID_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, comm->cudaDev),
                   "rank %d: compute capability of GPU %d", comm->rank, comm->cudaDev);
  BRAID_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, comm->cudaDev),
                   "rank %d: compute capability of GPU %d", comm->rank, comm->cudaDev);
  const char* archs = builtCudaArchs();
  if (archs[0] == '\0') return ncclSuccess;  // built without the list: nothing to check against
  switch (cudaArchFit(archs, major, minor)) {
    case ArchFit::Native:
      return ncclSuccess;
    case ArchFit::PtxOnly: {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        BRAID_WARN("GPU %d is sm_%d%d but this library has native code only for CUDA architectures %s: every kernel "
                   "is JIT-compiled from PTX at its first use (slow start, slower kernels); rebuild with "
                   "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                   comm->cudaDev, major, minor, archs, major, minor);
      return ncclSuccess;
    }
    case ArchFit::None:
      break;
  }
  return recordError(ncclInvalidUsage,
                     "rank %d: GPU %d is sm_%d%d and this library was built for CUDA architectures %s only; rebuild "
                     "with -DCMAKE_CUDA_ARCHITECTURES=%d%d",
                     comm->rank, comm->cudaDev, major, minor, archs, major, minor);
}

// How many clusters of `cluster` CTAs of `threads` threads can be resident at once on the current GPU, for the
// launch of `grid` CTAs that the widest clustered collective makes: the least over every SIMPLE ring kernel of
// this build (their registers differ by datatype and reduction, and so may their CTAs per SM), one query per
// distinct kernel. Kernels are loaded at init (BRAID_PRELOAD_KERNELS), so the queries load nothing.
cudaError_t maxActiveClusters(int cluster, int grid, int threads, int* fit) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  std::vector<const void*> seen;
  int least = -1;
  for (CollType c : {CollType::AllReduce, CollType::Reduce, CollType::ReduceScatter, CollType::Broadcast,
                     CollType::AllGather})
    for (int t = 0; t < ncclNumTypes; ++t)
      for (RedKind k : {RedKind::Sum, RedKind::Prod, RedKind::Max, RedKind::Min, RedKind::PreMulSum,
                        RedKind::SumPostDiv}) {
        const void* kernel = devCollKernel(c, static_cast<ncclDataType_t>(t), k);
        if (!kernel || std::find(seen.begin(), seen.end(), kernel) != seen.end()) continue;
        seen.push_back(kernel);
        int n = 0;
        const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, kernel, &cfg);
        if (e != cudaSuccess) {
          cudaGetLastError();
          return e;
        }
        if (least < 0 || n < least) least = n;
      }
  *fit = least < 0 ? 0 : least;
  return cudaSuccess;
}

// This communicator's tuner plugin context, where every rank loaded the same plugin (agreed) and every rank's
// init of it succeeded: a rank asking its plugin while another tunes alone could plan a collective differently.
ncclResult_t openTunerPlugin(ncclComm* comm, DeviceState* st) {
  if (!st->tunerPluginId || comm->nranks < 2) return ncclSuccess;
  st->tunerPlugin = TunerPluginComm::open(tunerPlugin(), static_cast<size_t>(comm->nranks),
                                          static_cast<size_t>(st->nNodes), comm->commHash);
  std::vector<int32_t> ok(static_cast<size_t>(comm->nranks), 0);
  ok[static_cast<size_t>(comm->rank)] = st->tunerPlugin ? 1 : 0;
  BRAID_CHECK(comm->bootstrap->allGather(ok.data(), sizeof(int32_t)));
  for (int32_t v : ok)
    if (!v) {
      if (st->tunerPlugin)
        BRAID_WARN("rank %d: another rank's tuner plugin failed to start: this communicator tunes without it",
                   comm->rank);
      st->tunerPlugin.reset();
      return ncclSuccess;
    }
  BRAID_INFO(kSubInit | kSubTuning, "rank %d: tuner plugin %s (v%d) tunes this communicator's collectives", comm->rank,
             st->tunerPlugin->lib().name.c_str(), st->tunerPlugin->lib().version);
  return ncclSuccess;
}

// The tuning agreement of a GPU communicator (tuning_agreement.h), with the GPU facts: whether every ring
// connection of every rank has LL slots, the ring's transport class (the slowest of any rank's ring
// connections, so a ring mixing P2P with SHM or NET plans like its slowest path on every rank), whether every
// rank's ring launches in thread-block clusters, and BRAID_DEVICE_TUNER.
ncclResult_t agreeOnSelection(ncclComm* comm, DeviceState* st) {
  TuningFacts facts;
  if (const TunerPluginLib* t = tunerPlugin()) facts.tunerPlugin = tunerPluginId(t->name.c_str(), t->version);
  facts.llPath = comm->nranks > 1 && comm->conns ? 1u : 0u;
  // LL128 needs whole 128-byte stores: NVLink P2P (the transport gives those connections LL128 slots) on sm_90+.
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, comm->cudaDev) != cudaSuccess) {
    cudaGetLastError();
    major = 0;
  }
  facts.ll128Path = facts.llPath && major >= 9 ? 1u : 0u;
  facts.transport = facts.ringIntra = static_cast<int32_t>(TransportClass::P2pNvlink);
  for (int c = 0; comm->nranks > 1 && comm->conns && c < st->nChannels; ++c) {
    for (const ConnInfo* ci : {comm->conns->ringSend(c), comm->conns->ringRecv(c)}) {
      if (!llSlotsOf(ci)) facts.llPath = 0;
      if (!ci || ci->kind != TransportKind::P2p || !ci->ll128Buff) facts.ll128Path = 0;
      TransportClass t = TransportClass::P2pNvlink;
      if (ci && ci->kind == TransportKind::Shm) t = TransportClass::Shm;
      if (!ci || ci->kind == TransportKind::Net) t = TransportClass::NetSocket;
      facts.transport = std::max(facts.transport, static_cast<int32_t>(t));
      const size_t peer = ci ? static_cast<size_t>(ci->peer) : comm->peers.size();
      if (peer < comm->peers.size() && comm->peers[peer].hostHash == comm->self.hostHash)
        facts.ringIntra = std::max(facts.ringIntra, static_cast<int32_t>(t));
    }
  }
  facts.tunerOn = params::DeviceTuner() != 0 ? 1 : 0;
  facts.p2pLlThreshold = static_cast<uint32_t>(std::max<int64_t>(0, std::min<int64_t>(params::P2pLlThreshold(), 1 << 30)));
  facts.p2pChannelBytes =
      static_cast<uint32_t>(std::max<int64_t>(4096, std::min<int64_t>(params::P2pChannelBytes(), int64_t(1) << 30)));
  facts.p2pPieces = static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(params::P2pPieces(), 64)));
  facts.p2pPair = p2pCanPair(st->nThreads) ? 1u : 0u;
  facts.p2pPeerChannels = static_cast<int32_t>(std::max<int64_t>(0, std::min<int64_t>(params::P2pPeerChannels(), 64)));
  // The one-shot of more than two ranks writes into every peer's LL slots: every peer over P2P or SHM (their
  // kinds are pure functions of the two ranks, known before any connection).
  facts.oneShotPeersBytes =
      static_cast<uint32_t>(std::max<int64_t>(0, std::min<int64_t>(params::OneShotPeersBytes(), int64_t(1) << 30)));
  facts.twoShotPeersBytes =
      static_cast<uint32_t>(std::max<int64_t>(0, std::min<int64_t>(params::TwoShotPeersBytes(), int64_t(1) << 30)));
  facts.peersChannelBytes =
      static_cast<uint32_t>(std::max<int64_t>(256, std::min<int64_t>(params::PeersChannelBytes(), int64_t(16) << 20)));
  facts.peersReachable = comm->nranks > 2 && comm->nranks - 1 <= kDevMaxOneShotPeers && comm->conns ? 1u : 0u;
  for (int p = 0; facts.peersReachable && p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    // A peer no transport reaches only rules the one-shot out here: this rank alone failing before the agreement
    // would leave the others waiting in it (a connection that needs the peer fails later, on every rank).
    TransportKind kind = TransportKind::None;
    if (comm->conns->kindFor(p, &kind) != ncclSuccess) clearPendingError();
    if (kind == TransportKind::Shm) facts.peersShm = 1;
    if (kind != TransportKind::P2p && kind != TransportKind::Shm) facts.peersReachable = 0;
  }
  facts.p2pBalanceBytes =
      static_cast<uint32_t>(std::max<int64_t>(0, std::min<int64_t>(params::P2pBalanceBytes(), 1 << 30)));
  // Programmatic launches need kernels that wait for their predecessor: the PTX they came from decides (every
  // kernel is built with the same architecture list, so one tells).
  cudaFuncAttributes kattr{};
  int kernelPtx = 0;
  if (const void* k = devP2pKernel(kMaxP2pBlocks)) {
    if (cudaFuncGetAttributes(&kattr, k) == cudaSuccess) kernelPtx = kattr.ptxVersion;
    else cudaGetLastError();
  }
  st->pdl = pdlSetting(params::Pdl(), major, kernelPtx);
  BRAID_INFO(kSubInit, "rank %d: programmatic dependent launches %s (BRAID_PDL=%lld, sm_%d, kernels from compute_%d)",
             comm->rank, st->pdl ? "on" : "off", static_cast<long long>(params::Pdl()), major * 10, kernelPtx);
  st->cluster = clusterSetting(params::CgaClusterSize(), comm->config.cgaClusterSize, major, kernelPtx);
  if (st->cluster >= 2) {
    int fit = 0;
    const cudaError_t e = maxActiveClusters(st->cluster, clusteredGrid(st->nChannels, st->cluster), st->nThreads, &fit);
    if (e != cudaSuccess) {
      BRAID_INFO(kSubInit, "rank %d: cannot ask how many thread-block clusters of %d fit on GPU %d (%s); launching "
                 "plainly", comm->rank, st->cluster, comm->cudaDev, cudaGetErrorString(e));
      st->cluster = 0;
    } else if (clusterIfFits(st->cluster, st->nChannels, fit) == 0) {
      BRAID_INFO(kSubInit, "rank %d: %d channels in thread-block clusters of %d need %d clusters at once, but GPU %d "
                 "fits %d; launching plainly", comm->rank, st->nChannels, st->cluster,
                 clusteredGrid(st->nChannels, st->cluster) / st->cluster, comm->cudaDev, fit);
      st->cluster = 0;
    }
  }
  st->clusterUserSet = params::CgaClusterSize() >= 0 || comm->config.cgaClusterSize >= 0;
  if (st->cluster >= 2 && !st->clusterUserSet && st->nChannels >= kThreeClusterMinChannels) {
    const int nch = std::min(st->nChannels, kThreeClusterMaxChannels);
    int fit = 0;
    st->clusterThreeFits = maxActiveClusters(3, clusteredGrid(nch, 3), st->nThreads, &fit) == cudaSuccess &&
                           clusterIfFits(3, nch, fit) == 3;
    cudaGetLastError();
  }
  BRAID_INFO(kSubInit,
             "rank %d: ring collectives on Simple over NVLink from %zu MiB launch in thread-block clusters of %d "
             "(0: none; NCCL_CGA_CLUSTER_SIZE=%lld, config.cgaClusterSize %d)%s",
             comm->rank, kClusterMinBytes >> 20, st->cluster, static_cast<long long>(params::CgaClusterSize()),
             comm->config.cgaClusterSize,
             st->clusterThreeFits ? "; all-gather, reduce-scatter and the ring all-reduce on 24-32 channels in 3" : "");
  // The clustered ring may replace the unsplit one-shot all-reduce (tuner.h) only where every rank's ring
  // launches clustered: a fact agreed below.
  facts.clusterRing = comm->nranks > 1 && st->cluster >= 2 &&
                      facts.transport == static_cast<int32_t>(TransportClass::P2pNvlink) ? 1u : 0u;
  // (clusterForLaunch answers alike for every channel count in its range: asking at one tells.)
  facts.clusterThree = facts.clusterRing != 0 && clusterForLaunch(st->cluster, st->clusterUserSet, st->clusterThreeFits,
                                                                  kThreeClusterMinChannels, true) == 3
                           ? 1u
                           : 0u;
  TunerConfig local;
  BRAID_CHECK(loadTunerConfig(&local));  // validated in commInit already
  // config.maxCTAs bounds CTAs as NCCL_MAX_CTAS does (param.h)
  local.maxCtas = static_cast<int>(foldBounds(local.maxCtas, comm->config.maxChannels));
  local.buffSize = comm->buffBytes;  // the FIFOs' size, agreed in agreeOnChannels (which warns of differences)
  TuningFacts agreed;
  BRAID_CHECK(agreeTuning(comm, local, facts, &st->tuning, &agreed));
  st->llPath = agreed.llPath != 0;
  st->ll128Path = agreed.ll128Path != 0;
  st->transport = static_cast<TransportClass>(agreed.transport);
  st->ringIntra = static_cast<TransportClass>(agreed.ringIntra);
  st->tunerOn = agreed.tunerOn != 0;
  st->tunerPluginId = agreed.tunerPlugin;
  st->p2pLlThreshold = agreed.p2pLlThreshold;
  st->p2pChannelBytes = agreed.p2pChannelBytes;
  st->p2pPieces = agreed.p2pPieces;
  st->p2pBalanceBytes = agreed.p2pBalanceBytes;
  st->p2pPair = agreed.p2pPair != 0;
  st->p2pPeerChannels = p2pPeerChannels(comm->nranks, st->nChannels, p2pMaxCtas(st->tuning), agreed.p2pPeerChannels);
  // The one-shot's channels: each needs a connection pair with every peer (the ring's, or the peer's p2p ones).
  st->oneShotPeersBytes = agreed.peersReachable && st->llPath ? agreed.oneShotPeersBytes : 0;
  st->twoShotPeersBytes = agreed.peersReachable && st->llPath ? agreed.twoShotPeersBytes : 0;
  st->peersChannelBytes = agreed.peersChannelBytes;
  st->oneShotPeerChannels = std::max(
      1, std::min(st->nChannels, p2pChannelsOn(agreed.peersShm ? TransportKind::Shm : TransportKind::P2p,
                                               st->p2pPeerChannels)));
  if (comm->conns) comm->conns->setP2pChannels(st->p2pPeerChannels);
  st->clusterRing = agreed.clusterRing != 0;
  st->clusterThree = agreed.clusterThree != 0;
  st->p2pCopyCtas = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(params::P2pCopyCtas(), kMaxP2pCtas)));

  // NCCL_PROTO without LL for any collective (e.g. "Simple" or "^LL") keeps send/recv off LL too.
  uint32_t anyProto = 0;
  for (int c = 0; c < kNumCollTypes; ++c) anyProto |= st->tuning.protos.mask[c];
  if (!(anyProto & bit(Proto::LL))) st->p2pLlThreshold = 0;
  st->p2pLlOnNet = (anyProto & bit(Proto::LL)) && !(anyProto & bit(Proto::Simple));
  if (facts.llPath && !agreed.llPath)
    BRAID_INFO(kSubInit, "rank %d: another rank's ring has a connection without LL slots; LL is off for this "
               "communicator", comm->rank);
  if (p2pMaxCtas(st->tuning) > 0 && !st->p2pPair)
    BRAID_INFO(kSubInit,
               "rank %d: %s cannot run a p2p channel's send and receive in one CTA (NCCL_NTHREADS=%d: "
               "pairing needs a multiple of 64 from 128); under the CTA bound of %d, point-to-point transfers take "
               "half of it, a CTA per direction (p2p_plan.h)",
               comm->rank, facts.p2pPair ? "another rank" : "this rank", st->nThreads, p2pMaxCtas(st->tuning));
  if (facts.clusterRing && !agreed.clusterRing)
    BRAID_INFO(kSubInit, "rank %d: another rank's ring launches without thread-block clusters; 2-rank all-reduces "
               "keep the one-shot where it runs unsplit (tuner_model.def)", comm->rank);
  return ncclSuccess;
}

// The double binary tree's connections (tree_topology.h) for the all-reduce across nodes: per channel, the parent
// and children of each tree, over whatever transport the pair gets (P2P or SHM inside a node, NET between nodes),
// and their device copies in CollLaunchArgs::treeConns's layout. Made only where the ranks span two or more nodes
// and NCCL_ALGO allows Tree for all-reduce: every input (hosts, ring order, the agreed tuning) is the same on every
// rank, so all connect together or none. On one node the trees would be chains, which the ring outruns.
ncclResult_t connectDeviceTrees(ncclComm* comm, DeviceState* st) {
  const int n = comm->nranks;
  if (n < 2 || !comm->conns) return ncclSuccess;
  std::vector<int> order = comm->ringOrder;
  if (static_cast<int>(order.size()) != n) {
    order.resize(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) order[static_cast<size_t>(p)] = p;
  }
  std::vector<uint64_t> hostOf(static_cast<size_t>(n), 0);
  for (int r = 0; r < n && static_cast<size_t>(r) < comm->peers.size(); ++r)
    hostOf[static_cast<size_t>(r)] = comm->peers[static_cast<size_t>(r)].hostHash;
  int nNodes = 1;
  const std::vector<int> nodeOf = nodesOfRanks(order, hostOf, &nNodes);
  st->nNodes = nNodes;
  const uint32_t allowed = st->tuning.algos.mask[static_cast<int>(CollType::AllReduce)];
  if (!(allowed & bit(Algo::Tree))) return ncclSuccess;
  if (nNodes < 2) {
    if (!(allowed & bit(Algo::Ring)))
      BRAID_INFO(kSubInit, "rank %d: NCCL_ALGO asks for Tree, but the %d ranks are on one node (NCCL_HOSTID and host "
                 "names alike): all-reduce runs on the ring", comm->rank, n);
    return ncclSuccess;
  }
  std::vector<TreeLinks> trees[kNumTrees];
  buildRankTrees(order, nodeOf, nNodes, &trees);
  TreeLinks mine[kNumTrees];
  for (int t = 0; t < kNumTrees; ++t) mine[t] = trees[t][static_cast<size_t>(comm->rank)];
  const int nch = std::min(st->nChannels, kMaxTreeChannels);
  BRAID_CHECK(comm->conns->connectTrees(nch, mine));
  const ConnInfo* ring = comm->conns->ringSend(0);
  const size_t entries = static_cast<size_t>(nch) * kNumTrees * kDevTreeConns;
  BRAID_CUDA_CHECK(cudaMalloc(&st->treeConns, sizeof(DevConn) * entries),
                   "rank %d: cudaMalloc of %zu tree connection states", comm->rank, entries);
  BRAID_CUDA_CHECK(cudaMemset(st->treeConns, 0, sizeof(DevConn) * entries),
                   "rank %d: zeroing the tree connection states", comm->rank);
  for (int c = 0; c < nch; ++c) {
    for (int t = 0; t < kNumTrees; ++t) {
      DevConn* base = st->treeConns + static_cast<size_t>(2 * c + t) * kDevTreeConns;
      // Parent first, then the children packed from slot 2 (the kernel counts them by their buffers).
      int links[3] = {mine[t].up, -1, -1};
      int k = 1;
      for (int d : mine[t].down)
        if (d >= 0) links[k++] = d;
      for (int i = 0; i < 3; ++i) {
        if (links[i] < 0) continue;
        const ConnInfo* send = comm->conns->treeSend(t, c, links[i]);
        const ConnInfo* recv = comm->conns->treeRecv(t, c, links[i]);
        if (!send || !recv || !send->buff || !recv->buff)
          return recordError(ncclInternalError, "rank %d: tree %d channel %d is not connected to rank %d", comm->rank,
                             t, c, links[i]);
        // Parent and child cut their chunks from their own connections' steps: they must be the same everywhere.
        if (send->stepBytes != ring->stepBytes || recv->stepBytes != ring->stepBytes)
          return recordError(ncclInternalError, "rank %d: tree %d channel %d's FIFO steps with rank %d (%u/%u bytes) "
                             "differ from the ring's (%u)", comm->rank, t, c, links[i], send->stepBytes,
                             recv->stepBytes, ring->stepBytes);
        BRAID_CHECK(st->upload(*send, true, base + 2 * i));
        BRAID_CHECK(st->upload(*recv, false, base + 2 * i + 1));
      }
    }
  }
  st->treeChannels = nch;
  // The tree runs on LL only where every tree connection of every rank has LL slots (NET FIFOs have them where
  // their steps hold a slot: net_transport.cc), and the model prices its chain hops by the slowest class inside a
  // node on any rank: both agreed, as every rank's planner must pick the same schedule.
  struct TreeFacts {
    int32_t ll;
    int32_t intra;
  };
  TreeFacts local{1, static_cast<int32_t>(TransportClass::P2pNvlink)};
  for (int c = 0; c < nch; ++c)
    for (int t = 0; t < kNumTrees; ++t)
      for (int p : {mine[t].up, mine[t].down[0], mine[t].down[1]}) {
        if (p < 0) continue;
        for (const ConnInfo* ci : {comm->conns->treeSend(t, c, p), comm->conns->treeRecv(t, c, p)}) {
          if (!llSlotsOf(ci)) local.ll = 0;
          const bool sameNode = nodeOf[static_cast<size_t>(p)] == nodeOf[static_cast<size_t>(comm->rank)];
          if (sameNode && ci->kind != TransportKind::P2p) local.intra = static_cast<int32_t>(TransportClass::Shm);
        }
      }
  std::vector<TreeFacts> all(static_cast<size_t>(n));
  all[static_cast<size_t>(comm->rank)] = local;
  BRAID_CHECK(comm->bootstrap->allGather(all.data(), sizeof(TreeFacts)));
  st->treeLlPath = true;
  for (const TreeFacts& f : all) {
    st->treeLlPath = st->treeLlPath && f.ll != 0;
    st->treeIntra = std::max(st->treeIntra, static_cast<TransportClass>(f.intra));
  }
  BRAID_INFO(kSubInit,
             "rank %d: all-reduce may run on the double binary tree over %d nodes (%d channels, %s; tree 0 "
             "up %d down %d,%d; tree 1 up %d down %d,%d)",
             comm->rank, nNodes, nch, st->treeLlPath ? "Simple or LL" : "Simple: a tree connection has no LL slots",
             mine[0].up, mine[0].down[0], mine[0].down[1], mine[1].up, mine[1].down[0], mine[1].down[1]);
  return ncclSuccess;
}

// INFO, with several rings: where each channel's ring connections go, as connected (what the kernels' DevConn
// copies), so a log shows every ring in use.
void logRingChannels(ncclComm* comm) {
  std::string shown;
  for (int c = 0; c < comm->nChannels; ++c) {
    const ConnInfo* send = comm->conns->ringSend(c);
    const ConnInfo* recv = comm->conns->ringRecv(c);
    shown += (c ? " " : "") + std::to_string(send ? send->peer : -1) + "/" + std::to_string(recv ? recv->peer : -1);
  }
  BRAID_INFO(kSubInit,
             "rank %d: %d rings on %d channels (channel c on ring c %% %d); each channel's next/previous "
             "rank: %s",
             comm->rank, ringCount(comm), comm->nChannels, ringCount(comm), shown.c_str());
}

int chooseThreads() {
  int64_t t = params::NThreads();
  if (t <= 0) return kDevThreads;
  t = std::max<int64_t>(64, std::min<int64_t>(t, kDevMaxThreads));
  return static_cast<int>(t / 32 * 32);
}

}  // namespace

ncclResult_t initDeviceComm(ncclComm* comm) {
  DeviceGuard guard(comm->cudaDev);
  auto st = std::make_unique<DeviceState>();
  st->dev = comm->cudaDev;
  st->rank = comm->rank;
  st->nranks = comm->nranks;
  st->deviceTimeoutSec = std::max<int64_t>(0, params::DeviceTimeout());
  st->nThreads = chooseThreads();
  BRAID_CHECK(checkDeviceCode(comm));
  if (params::PreloadKernels() != 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const cudaError_t e = devPreloadKernels();
    if (e != cudaSuccess) return cudaError(e, "rank %d: loading the device kernels on GPU %d", comm->rank, comm->cudaDev);
    BRAID_INFO(kSubInit, "rank %d: device kernels loaded on GPU %d in %.1f ms", comm->rank, comm->cudaDev,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  void* status = nullptr;
  BRAID_CUDA_CHECK(cudaHostAlloc(&status, sizeof(DevStatus), cudaHostAllocMapped | cudaHostAllocPortable),
                   "rank %d: cudaHostAlloc of the device status word", comm->rank);
  st->statusHost = static_cast<DevStatus*>(status);
  std::memset(st->statusHost, 0, sizeof(DevStatus));
  void* statusDev = nullptr;
  BRAID_CUDA_CHECK(cudaHostGetDevicePointer(&statusDev, status, 0), "rank %d: mapping the device status word",
                   comm->rank);
  st->statusDev = static_cast<DevStatus*>(statusDev);

  if (comm->nranks > 1 && params::PeerWatchMs() > 0 && PeerWatch::observable(&comm->wait)) {
    // Kernels spin on device memory long after the host returned: a peer process that dies would leave them
    // (and the user's stream) waiting forever. The watch tells them; the next call reports the rank.
    DeviceState* raw = st.get();
    try {
      st->watch = std::make_unique<PeerWatch>(
          &comm->wait, [raw](int r, const std::string& m) { raw->peerGone(r, m); },
          std::chrono::milliseconds(params::PeerWatchMs()));
    } catch (const std::system_error& e) {
      BRAID_WARN("rank %d: cannot start the peer watch thread (%s); a dead peer will not be detected", comm->rank,
                 e.what());
    }
  }
  int preferredChannels = kDefaultDevChannels;
  bool nvlinkRing = comm->nranks > 1;  // both ring neighbours GPUs joined by NVLink (agreedFifoBytes)
  bool shmRing = false, netRing = false;  // a ring neighbour through host shared memory, over the network
  if (comm->nranks > 1) {
    // The host's topology first: P2P between two GPUs follows its paths (NCCL_P2P_LEVEL).
    BRAID_CHECK(ensureHostTopology(comm));
    comm->conns = std::make_unique<ConnectionManager>(&comm->wait, comm->bootstrap.get(), &comm->self, &comm->peers);
    comm->conns->setTransports(deviceTransports());
    // A ring with a socket link runs at that link's pace: few channels (agreed as the minimum over ranks). Every
    // ring's neighbours count: the channels are dealt over all of them.
    bool allP2p = true;
    std::vector<int> neighbours, prevs;
    ringNeighbours(comm, &neighbours, &prevs);
    neighbours.insert(neighbours.end(), prevs.begin(), prevs.end());
    for (int peer : neighbours) {
      TransportKind kind;
      BRAID_CHECK(comm->conns->kindFor(peer, &kind));
      if (kind == TransportKind::Net) preferredChannels = kNetDevChannels;
      allP2p = allP2p && kind == TransportKind::P2p;
      shmRing = shmRing || kind == TransportKind::Shm;
      netRing = netRing || kind == TransportKind::Net;
      nvlinkRing = nvlinkRing && kind == TransportKind::P2p &&
                   p2pNvlinkBetween(comm->self.busId, comm->peers[peer].busId);
    }
    if (shmRing && !netRing) {
      int local = 0;
      for (const PeerInfo& p : comm->peers) local += p.hostHash == comm->self.hostHash ? 1 : 0;
      preferredChannels = std::min(preferredChannels, shmRingChannels(local));
    }
    // A P2P ring runs at its slowest hop's pace: as many channels as that hop's bandwidth feeds (ringChannelsFor).
    // Channels are dealt to the rings in turn (channel c on ring c % nRings), so every ring gets as many, the count
    // the slowest hop of any ring feeds: the least over the rings, once per ring.
    const double slowest = allP2p ? ringSlowestHopGBs(comm) : -1;
    if (slowest > 0) {
      const int perRing = ringChannelsFor(slowest, preferredChannels);
      const int fed = std::min(preferredChannels, perRing * ringCount(comm));
      if (fed < preferredChannels) {
        BRAID_INFO(kSubInit, "rank %d: the rings' slowest hop moves %.1f GB/s (topology): %d channels (%d ring(s))",
                   comm->rank, slowest, fed, ringCount(comm));
        preferredChannels = fed;
      }
    }
  }
  // By default at most half the GPU's SMs (the minimum over ranks, as every channel count): a p2p launch runs
  // a send and a receive CTA per channel of the ring neighbour, one CTA per SM (__launch_bounds__(512, 1)),
  // and CTAs that cannot all be resident can stall when the peer grouped its transfers differently (see
  // p2p_plan.h; copies and other peers' CTAs can still pass the SM count). NCCL_MIN_NCHANNELS and the
  // config's minimum still raise it. No change on H200 and H100 SXM (132 SMs); H100 PCIe (114) gets 57, a
  // 40-SM GPU 20.
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, comm->cudaDev) == cudaSuccess && sms >= 2 &&
      sms / 2 < preferredChannels)
    preferredChannels = sms / 2;
  const FifoPath fifoPath = netRing    ? FifoPath::kNet
                            : shmRing    ? FifoPath::kShm
                            : nvlinkRing ? FifoPath::kNvlink
                                         : FifoPath::kOther;
  BRAID_CHECK(agreeOnChannels(comm, preferredChannels, kMaxDevChannels, fifoPath));
  BRAID_INFO(kSubInit, "rank %d: %d channels (GPU %d has %d SMs), FIFOs of %lld KiB per connection%s", comm->rank,
             comm->nChannels, comm->cudaDev, sms, static_cast<long long>(comm->buffBytes >> 10),
             comm->buffBytesDefaulted ? " (NCCL_BUFFSIZE unset on rank 0: agreedFifoBytes)" : "");
  st->nChannels = comm->nChannels;
  if (comm->conns) comm->conns->setBuffBytes(comm->buffBytes);

  if (comm->nranks > 1) {
    comm->conns->setLlSlots(true);
    // The kernels publish NET steps in mapped host memory, which wakes no descriptor: the proxy's threads poll
    // while the executor's probe says a batch is in flight (GpuExecutor::netWork) and 2 ms after activity, so
    // back-to-back operations find them polling rather than blocked (docs/TUNING.md, "Socket path"). Channels are
    // dealt over BRAID_NET_PROXY_THREADS threads, so one thread's system calls do not set the pace.
    comm->conns->setNetProxy(2000, false, static_cast<size_t>(std::max<int64_t>(0, params::NetBulkBytes())),
                             static_cast<int>(std::max<int64_t>(1, params::NetProxyThreads())));
    DeviceState* raw = st.get();
    comm->conns->setAbortHook([raw] { raw->raiseAbort(); });
    std::vector<int> next, prev;
    ringNeighbours(comm, &next, &prev);
    BRAID_CHECK(comm->conns->connectRings(comm->nChannels, next, prev));
    BRAID_CHECK(reportRings(comm));
    if (next.size() > 1) logRingChannels(comm);
    BRAID_CUDA_CHECK(cudaMalloc(&st->ringConns, sizeof(DevConn) * 2 * st->nChannels),
                     "rank %d: cudaMalloc of %d ring connection states", comm->rank, 2 * st->nChannels);
    BRAID_CUDA_CHECK(cudaMalloc(&st->splitGuard, sizeof(uint64_t) * st->nChannels),
                     "rank %d: cudaMalloc of the split one-shot's guard words", comm->rank);
    BRAID_CUDA_CHECK(cudaMemset(st->splitGuard, 0, sizeof(uint64_t) * st->nChannels),
                     "rank %d: zeroing the split one-shot's guard words", comm->rank);
    BRAID_CHECK(uploadRingOrder(comm, st.get()));
    BRAID_CUDA_CHECK(cudaMalloc(&st->p2pClaims, sizeof(uint32_t) * 2 * kP2pMaxBalanced),
                     "rank %d: cudaMalloc of the balanced transfers' claim words", comm->rank);
    BRAID_CUDA_CHECK(cudaMemset(st->p2pClaims, 0, sizeof(uint32_t) * 2 * kP2pMaxBalanced),
                     "rank %d: zeroing the balanced transfers' claim words", comm->rank);
    for (int c = 0; c < st->nChannels; ++c) {
      BRAID_CHECK(st->upload(*comm->conns->ringSend(c), true, st->ringSend(c)));
      BRAID_CHECK(st->upload(*comm->conns->ringRecv(c), false, st->ringRecv(c)));
    }
  }
  BRAID_CHECK(agreeOnSelection(comm, st.get()));
  BRAID_CHECK(connectOneShotPeers(comm, st.get()));
  BRAID_CHECK(connectDeviceTrees(comm, st.get()));
  BRAID_CHECK(openTunerPlugin(comm, st.get()));
  BRAID_INFO(kSubInit, "comm %p rank %d nranks %d: device communicator on GPU %d ready, %d channel(s) x %d threads%s%s",
             (void*)comm, comm->rank, comm->nranks, comm->cudaDev, comm->nChannels, st->nThreads,
             comm->nranks > 1 ? ", ring next via " : "",
             comm->nranks > 1 ? comm->conns->transportName(ringNextRank(comm)) : "");
  comm->exec = makeGpuExecutor(comm, std::move(st));
  return ncclSuccess;
}

}  // namespace braid
