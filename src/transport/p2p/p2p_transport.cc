// P2P transport (see p2p_internal.h): FIFOs in the receiver's GPU memory (write mode) or the sender's
// (read mode), counters where their reader polls them, reached through peer pointers (same process) or
// CUDA IPC (other processes).
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "transport/host_fifo.h"
#include "transport/p2p/p2p_internal.h"
#include "transport/p2p/p2p_level.h"

namespace braid {
namespace {

constexpr uint32_t kP2pHandleMagic = 0x50325031;  // "P2P1"

struct P2pHandle {
  uint32_t magic;
  int32_t rank;
  int32_t pid;
  int32_t dev;          // the owner's device ordinal (meaningful in the same process only)
  uint64_t pidNsHash;
  uint64_t hostHash;
  uint64_t ptr;         // base of the owner's allocation: control page, then the FIFO on the side that holds it
  uint32_t nSteps;      // FIFO shape (the side that holds the FIFO decides)
  uint32_t stepBytes;
  uint32_t readMode;    // both sides must agree
  uint32_t ll128;       // receiver: LL128 slots follow its LL slots (its GPUs share an NVLink)
  cudaIpcMemHandle_t ipc;
};
static_assert(sizeof(P2pHandle) <= sizeof(ConnectHandle), "P2P handle fits");

class P2pResources final : public ConnResources {
 public:
  ~P2pResources() override {
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(dev);
    if (remoteIpc) cudaIpcCloseMemHandle(remoteIpc);
    if (local) cudaFree(local);
    cudaGetLastError();  // teardown at exit may find the context gone; nothing to report
    if (prev >= 0) cudaSetDevice(prev);
  }
  int dev = -1;
  int me = -1;
  int peer = -1;
  int peerDev = -1;
  bool sameProcess = false;
  Direction dir = Direction::Send;
  void* local = nullptr;      // cudaMalloc'd here
  void* remoteIpc = nullptr;  // opened from the peer's IPC handle
  uint64_t peerPidNs = 0;
  bool readMode = false;
};

ncclResult_t cudaFail(cudaError_t e, const char* what, int me, int peer) {
  cudaGetLastError();
  return recordError(ncclUnhandledCudaError, "P2P: %s (rank %d <-> rank %d) failed: %s (%s)", what, me, peer,
                     cudaGetErrorString(e), cudaGetErrorName(e));
}

int localOrdinalOf(int64_t busId) {
  char s[32];
  p2pBusIdToString(busId, s, sizeof(s));
  int dev = -1;
  if (cudaDeviceGetByPCIBusId(&dev, s) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return dev;
}

}  // namespace

bool p2pReadMode(const PeerInfo&, const PeerInfo&) {
  const int64_t v = params::P2pReadEnable();
  if (v == 0 || v == 1) return v == 1;
  return kP2pReadDefault;
}

int64_t p2pBusIdFromString(const char* s) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (sscanf(s, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) < 3) return -1;
  return (static_cast<int64_t>(dom) << 16) | (bus << 8) | dev;
}

void p2pBusIdToString(int64_t busId, char* out, size_t size) {
  snprintf(out, size, "%04x:%02x:%02x.0", static_cast<unsigned>(busId >> 16), static_cast<unsigned>((busId >> 8) & 0xff),
           static_cast<unsigned>(busId & 0xff));
}

bool P2pTransport::canConnect(const PeerInfo& me, const PeerInfo& peer) const {
  if (params::P2pDisable() != 0) return false;
  if (me.isHost || peer.isHost || me.cudaDev < 0 || peer.cudaDev < 0) return false;
  if (me.hostHash != peer.hostHash) return false;
  if (me.busId == peer.busId) return false;  // two ranks on one GPU: SHM handles it
  // NCCL_P2P_LEVEL (or NCCL's default for the host's CPUs) against the path the host's topology gives the pair.
  PathClass cls;
  if (!p2pPathAllowed(me.busId, peer.busId, &cls)) return false;
  const int mine = localOrdinalOf(me.busId);
  const int theirs = localOrdinalOf(peer.busId);
  if (mine < 0) return false;
  // A peer GPU hidden from this process (CUDA_VISIBLE_DEVICES) cannot be checked; IPC still reaches it.
  if (theirs < 0) return true;
  int ok = 0;
  if (cudaDeviceCanAccessPeer(&ok, mine, theirs) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return ok != 0;
}

ncclResult_t P2pTransport::setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel,
                                 size_t buffBytes, Connector* conn, ConnectHandle* myHandle) {
  auto res = std::make_unique<P2pResources>();
  res->dev = me.cudaDev;
  res->me = me.rank;
  res->peer = peer.rank;
  res->peerDev = peer.cudaDev;
  res->dir = dir;
  res->sameProcess = me.pid == peer.pid && me.pidNsHash == peer.pidNsHash && me.hostHash == peer.hostHash;
  cudaError_t e = cudaSetDevice(me.cudaDev);
  if (e != cudaSuccess) return cudaFail(e, "cudaSetDevice", me.rank, peer.rank);
  P2pHandle h{};
  h.magic = kP2pHandleMagic;
  h.rank = me.rank;
  h.pid = me.pid;
  h.dev = me.cudaDev;
  h.pidNsHash = me.pidNsHash;
  h.hostHash = me.hostHash;
  size_t bytes = kP2pCtrlBytes;
  res->readMode = p2pReadMode(me, peer);
  h.readMode = res->readMode ? 1u : 0u;
  h.nSteps = kHostFifoSteps;
  h.stepBytes = hostFifoStepBytes(buffBytes, kHostFifoSteps);
  const bool holdsFifo = (dir == Direction::Recv) != res->readMode;
  if (holdsFifo) bytes += static_cast<size_t>(h.nSteps) * h.stepBytes;
  const size_t llOffset = bytes;  // receiver only: the LL slots, then (over NVLink) the LL128 slots
  const size_t ll128Offset = llOffset + static_cast<size_t>(h.nSteps) * kP2pLlSlotBytes;
  if (dir == Direction::Recv) {
    bytes = ll128Offset;
    h.ll128 = !isP2pConnChannel(channel) && p2pNvlinkBetween(me.busId, peer.busId) ? 1u : 0u;
    if (h.ll128) bytes += static_cast<size_t>(h.nSteps) * kP2pLl128SlotBytes;
  }
  e = cudaMalloc(&res->local, bytes);
  if (e != cudaSuccess) return cudaFail(e, "cudaMalloc of the FIFO", me.rank, peer.rank);
  e = cudaMemset(res->local, 0, kP2pCtrlBytes);
  if (e != cudaSuccess) return cudaFail(e, "cudaMemset of the FIFO control page", me.rank, peer.rank);
  if (dir == Direction::Recv) {  // LL flags start at 0, which no step's flag equals before 2^32 steps (LL128: ever)
    e = cudaMemset(static_cast<char*>(res->local) + llOffset, 0, bytes - llOffset);
    if (e != cudaSuccess) return cudaFail(e, "cudaMemset of the LL/LL128 slots", me.rank, peer.rank);
  }
  h.ptr = reinterpret_cast<uint64_t>(res->local);
  if (!res->sameProcess) {
    e = cudaIpcGetMemHandle(&h.ipc, res->local);
    if (e != cudaSuccess) return cudaFail(e, "cudaIpcGetMemHandle", me.rank, peer.rank);
  }
  conn->info = ConnInfo{};
  conn->info.peer = peer.rank;
  conn->info.kind = TransportKind::P2p;
  char* base = static_cast<char*>(res->local);
  if (holdsFifo) {
    conn->info.buff = base + kP2pCtrlBytes;
    conn->info.nSteps = h.nSteps;
    conn->info.stepBytes = h.stepBytes;
  }
  if (dir == Direction::Recv) {
    conn->info.tail = reinterpret_cast<uint64_t*>(base + kP2pTailOffset);
    conn->info.sizes = reinterpret_cast<int32_t*>(base + kP2pSizesOffset);
    conn->info.llBuff = base + llOffset;
    conn->info.llSlotBytes = kP2pLlSlotBytes;
    if (h.ll128) {
      conn->info.ll128Buff = base + ll128Offset;
      conn->info.ll128SlotBytes = kP2pLl128SlotBytes;
    }
  } else {
    conn->info.head = reinterpret_cast<uint64_t*>(base + kP2pHeadOffset);
  }
  BRAID_INFO(kSubInit, "P2P: channel %d %s rank %d: %zu bytes on device %d%s, %s mode", channel,
             dir == Direction::Recv ? "recv from" : "send to", peer.rank, bytes, me.cudaDev,
             res->sameProcess ? " (same process)" : " (CUDA IPC)", res->readMode ? "read" : "write");
  std::memset(myHandle, 0, sizeof(*myHandle));
  std::memcpy(myHandle->data, &h, sizeof(h));
  conn->res = std::move(res);
  conn->connected = false;
  return ncclSuccess;
}

ncclResult_t P2pTransport::connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) {
  auto* res = dynamic_cast<P2pResources*>(conn->res.get());
  if (!res) return recordError(ncclInternalError, "P2P: connect without setup");
  P2pHandle h;
  std::memcpy(&h, peerHandle.data, sizeof(h));
  if (h.magic != kP2pHandleMagic || h.rank != res->peer)
    return recordError(ncclInternalError, "P2P: rank %d got a bad connection handle from rank %d (magic 0x%x rank %d)",
                       res->me, res->peer, h.magic, h.rank);
  if ((h.readMode != 0) != res->readMode)
    return recordError(ncclInvalidUsage,
                       "P2P: rank %d uses %s mode but rank %d uses %s mode: set NCCL_P2P_READ_ENABLE the same on all ranks",
                       res->me, res->readMode ? "read" : "write", res->peer, h.readMode ? "read" : "write");
  cudaError_t e = cudaSetDevice(res->dev);
  if (e != cudaSuccess) return cudaFail(e, "cudaSetDevice", res->me, res->peer);
  char* remote = nullptr;
  if (res->sameProcess) {
    e = cudaDeviceEnablePeerAccess(h.dev, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
    } else if (e != cudaSuccess) {
      return cudaFail(e, "cudaDeviceEnablePeerAccess", res->me, res->peer);
    }
    remote = reinterpret_cast<char*>(h.ptr);
  } else {
    void* p = nullptr;
    e = cudaIpcOpenMemHandle(&p, h.ipc, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) return cudaFail(e, "cudaIpcOpenMemHandle of the peer's buffer", res->me, res->peer);
    res->remoteIpc = p;
    remote = static_cast<char*>(p);
  }
  if ((dir == Direction::Send) != res->readMode) {  // the peer holds the FIFO
    conn->info.buff = remote + kP2pCtrlBytes;
    conn->info.nSteps = h.nSteps;
    conn->info.stepBytes = h.stepBytes;
  }
  if (dir == Direction::Send) {
    conn->info.tail = reinterpret_cast<uint64_t*>(remote + kP2pTailOffset);
    conn->info.sizes = reinterpret_cast<int32_t*>(remote + kP2pSizesOffset);
    // The receiver's LL slots follow its control page and, in write mode, its SIMPLE FIFO.
    conn->info.llBuff = remote + kP2pCtrlBytes + (res->readMode ? 0 : static_cast<size_t>(h.nSteps) * h.stepBytes);
    conn->info.llSlotBytes = kP2pLlSlotBytes;
    // The receiver decided (and allocated): LL128 slots follow its LL slots.
    if (h.ll128) {
      conn->info.ll128Buff = conn->info.llBuff + static_cast<size_t>(h.nSteps) * kP2pLlSlotBytes;
      conn->info.ll128SlotBytes = kP2pLl128SlotBytes;
    }
  } else {
    conn->info.head = reinterpret_cast<uint64_t*>(remote + kP2pHeadOffset);
  }
  conn->connected = true;
  return ncclSuccess;
}

Transport* p2pTransport() {
  static P2pTransport t;
  return &t;
}

}  // namespace braid
