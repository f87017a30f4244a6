// NET transport: setup/connect of a connection through the selected NetBackend, and the hand-over of the
// connected comm to the communicator's NetProxy. The receiver listens at setup and sends the backend's
// handle with its FIFO geometry; the sender connects at connect() with a local FIFO of the same geometry.
// GPU communicators' FIFOs carry LL slots on both sides (the proxies forward LL steps, conn_info.h).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "transport/host_fifo.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_proxy.h"

namespace braid {
namespace {

constexpr uint32_t kNetConnMagic = 0x4e455431;  // "NET1"

struct NetConnHandle {
  uint32_t magic;
  int32_t rank;     // the side that wrote it
  uint32_t tag;     // channel (or the p2p tag): both sides must agree
  uint32_t nSteps;  // receiver's FIFO geometry; the sender mirrors it
  uint32_t stepBytes;
  uint32_t llSlotBytes;  // receiver's LL slots (0: none); the sender mirrors them
  char backend[32];      // the writer's NetBackend::name(): a peer over another backend is refused before its handle
                         // reaches a backend (a plugin may not survive another's handle)
  NetHandle net;
};
static_assert(sizeof(NetConnHandle) <= sizeof(ConnectHandle), "NET handle fits");

struct NetResources final : ConnResources {
  Direction dir = Direction::Send;
  int me = -1;
  int peer = -1;
  uint32_t tag = 0;
  NetBackend* backend = nullptr;
  TransportContext* ctx = nullptr;
  std::unique_ptr<NetListenComm> listen;
  HostFifoMem fifo;
  std::shared_ptr<NetProxy> proxy;
  uint64_t proxyId = 0;

  // The proxy lets go of the FIFO before the members (fifo included) are destroyed.
  ~NetResources() override {
    if (proxy && proxyId) proxy->remove(proxyId);
  }
};

NetSetupParams setupParams(const NetResources& res) {
  NetSetupParams p;
  p.timeoutSec = static_cast<double>(params::BootstrapTimeout());
  p.abortFlag = res.ctx->wait ? res.ctx->wait->abortFlag : nullptr;
  p.peer = res.peer;
  p.wait = res.ctx->wait;
  p.gpuBusId = res.ctx->self ? res.ctx->self->busId : -1;
  p.bulkHelperBytes = res.ctx->proxyBulkBytes;
  p.tag = res.tag;
  {
    std::lock_guard<std::mutex> lock(res.ctx->proxyMu);
    if (!res.ctx->netLinks) res.ctx->netLinks = std::make_shared<NetLinks>();
    p.links = res.ctx->netLinks.get();
  }
  // A two-way connection saves each small message its bare ACK, but large messages streaming both ways over one
  // socket were slower, and GPU communicators over it are unmeasured (docs/TUNING.md, "A socket hop"): on request.
  const int64_t twoWay = params::NetSocketTwoWay();
  p.twoWay = twoWay >= 2 || (twoWay == 1 && res.ctx->proxyExecutorDriven);
  // Rings and trees connect both directions in batches that match over the ranks, so a rank may wait for the peer's
  // connection there; point-to-point connections are made per group, and two ranks' groups need not match.
  p.twoWayEarly = p.twoWay && !isP2pConnChannel(static_cast<int>(res.tag));
  return p;
}

// The engine's lane of a connection (NetProxy deals threads by it): a ring's channel; for connections of one tag to
// many peers (point-to-point, a schedule's peers, the trees' links) the tag plus the peer, so each peer's traffic
// gets its own thread instead of every peer's sharing one.
uint32_t laneOf(const NetResources& res) {
  return res.tag + (isPeerSharedConnChannel(static_cast<int>(res.tag)) ? static_cast<uint32_t>(res.peer) : 0u);
}

// The connection's peer and tag, the same for both directions (NetProxy puts a two-way connection's comms together).
uint64_t pairOf(const NetResources& res) {
  return static_cast<uint64_t>(static_cast<uint32_t>(res.peer)) << 32 | res.tag;
}

ncclResult_t allocFifo(NetResources* res, uint32_t nSteps, uint32_t stepBytes, uint32_t llSlotBytes, Connector* conn) {
  if (!res->fifo.allocate(nSteps, stepBytes, llSlotBytes)) {
    return recordError(ncclSystemError, "NET: cannot allocate %zu bytes of FIFO for the connection with rank %d",
                       hostFifoBytes(nSteps, stepBytes) + static_cast<size_t>(nSteps) * llSlotBytes, res->peer);
  }
  res->fifo.view(&conn->info);
  if (conn->ctx->llSlots) hostFifoPresetSteps(conn->info, params::TestStepBase());  // GPU comms: tests only
  conn->info.peer = res->peer;
  conn->info.kind = TransportKind::Net;
  return ncclSuccess;
}

// The communicator's proxy, created on first use with its threads placed near the backend's NIC (proxy_affinity.h).
ncclResult_t proxyOf(TransportContext* ctx, NetBackend* backend, int me, std::shared_ptr<NetProxy>* out) {
  std::lock_guard<std::mutex> lock(ctx->proxyMu);
  if (!ctx->proxy) {
    const int rank = ctx->self ? ctx->self->rank : me;
    const int64_t busId = ctx->self ? ctx->self->busId : -1;
    NetNicPlace nic;
    if (!backend->nicPlace(busId, &nic)) nic = NetNicPlace{};
    ProxyPlacement place;
    BRAID_CHECK(proxyPlacementFor(busId, nic.name, nic.sysfsDevice, &place));
    // At most one thread per CPU they may run on: polling threads beyond that only take turns.
    const size_t cpus = place.cpus.empty() ? threadCpus().size() : place.cpus.size();
    const int threads = std::max(1, std::min<int>(ctx->proxyThreads, static_cast<int>(cpus)));
    ctx->proxy = std::make_shared<NetProxy>(rank, ctx->proxySpinUs, place, ctx->proxyExecutorDriven, threads);
    if (ctx->proxyWorkProbe) ctx->proxy->setWorkProbe(ctx->proxyWorkProbe);
    ctx->proxyRaw.store(ctx->proxy.get(), std::memory_order_release);
    const int n = ctx->proxy->threads();
    if (place.warn) {
      BRAID_WARN("NET proxy of rank %d: up to %d progress threads; CPUs: %s", rank, n, place.why.c_str());
    } else {
      BRAID_INFO(kSubNet | kSubInit, "NET proxy of rank %d: up to %d progress threads; CPUs: %s", rank, n,
                 place.why.c_str());
    }
  }
  *out = ctx->proxy;
  return ncclSuccess;
}

// The FIFO's slots, and its LL slots where it has them: everything the proxy hands the backend.
ncclResult_t registerFifo(NetComm* comm, const ConnInfo& info) {
  BRAID_CHECK(comm->registerBuffer(info.buff, static_cast<size_t>(info.nSteps) * info.stepBytes));
  if (info.llBuff) BRAID_CHECK(comm->registerBuffer(info.llBuff, static_cast<size_t>(info.nSteps) * info.llSlotBytes));
  return ncclSuccess;
}

// BRAID_TEST_NET_KILL_AT_CONNECT: die the way a killed rank does (no cleanup) after the handles were exchanged,
// while the peers connect to us or wait for us.
void testKillAtConnect() {
  static std::atomic<int64_t> started{0};
  testKillOnCall(started, params::TestNetKillAtConnect());
}

}  // namespace

ncclResult_t NetTransport::setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel, size_t buffBytes,
                                 Connector* conn, ConnectHandle* myHandle) {
  if (!conn->ctx) {
    return recordError(ncclInternalError, "NET: connection with rank %d set up without a TransportContext", peer.rank);
  }
  auto res = std::make_unique<NetResources>();
  res->dir = dir;
  res->me = me.rank;
  res->peer = peer.rank;
  res->tag = static_cast<uint32_t>(channel);
  res->ctx = conn->ctx;
  BRAID_CHECK(selectNetBackend(&res->backend));
  conn->info = ConnInfo{};
  conn->info.peer = peer.rank;
  conn->info.kind = TransportKind::Net;

  NetConnHandle h{};
  h.magic = kNetConnMagic;
  h.rank = me.rank;
  h.tag = res->tag;
  std::strncpy(h.backend, res->backend->name(), sizeof(h.backend) - 1);
  if (dir == Direction::Recv) {
    h.nSteps = kHostFifoSteps;
    h.stepBytes = hostFifoStepBytes(buffBytes, kHostFifoSteps);
    // LL slots for GPU communicators, where a received LL step (at most a slot of lines) fits the SIMPLE
    // slot the proxy receives it into.
    h.llSlotBytes = conn->ctx->llSlots && h.stepBytes >= kShmLlSlotBytes ? kShmLlSlotBytes : 0;
    BRAID_CHECK(allocFifo(res.get(), h.nSteps, h.stepBytes, h.llSlotBytes, conn));
    BRAID_CHECK(res->backend->listenFor(setupParams(*res), &h.net, &res->listen));
  }
  std::memset(myHandle, 0, sizeof(*myHandle));
  std::memcpy(myHandle->data, &h, sizeof(h));
  conn->res = std::move(res);
  conn->connected = false;
  return ncclSuccess;
}

ncclResult_t NetTransport::connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) {
  auto* res = dynamic_cast<NetResources*>(conn->res.get());
  if (!res) return recordError(ncclInternalError, "NET: connect before setup (rank %d)", conn->info.peer);
  testKillAtConnect();
  NetConnHandle h;
  std::memcpy(&h, peerHandle.data, sizeof(h));
  if (h.magic != kNetConnMagic || h.rank != res->peer || h.tag != res->tag) {
    return recordError(ncclInternalError,
                       "NET: bad connection handle from rank %d (magic %#x, rank %d, tag %u; expected tag %u): both "
                       "sides must pick NET",
                       res->peer, h.magic, h.rank, h.tag, res->tag);
  }
  h.backend[sizeof(h.backend) - 1] = '\0';
  if (std::strcmp(h.backend, res->backend->name()) != 0) {
    return recordError(ncclInvalidUsage,
                       "NET: rank %d connects over the %s network backend, this rank (%d) over %s: every rank must "
                       "make the same choice (NCCL_NET, NCCL_NET_PLUGIN, NCCL_IB_DISABLE)",
                       res->peer, h.backend, res->me, res->backend->name());
  }
  NetSetupParams p = setupParams(*res);
  BRAID_CHECK(proxyOf(res->ctx, res->backend, res->me, &res->proxy));
  if (dir == Direction::Send) {
    if (h.nSteps == 0 || h.nSteps > kHostFifoMaxSteps || h.stepBytes == 0 || h.stepBytes > kHostFifoMaxStepBytes ||
        (h.llSlotBytes != 0 && (h.llSlotBytes != kShmLlSlotBytes || h.stepBytes < h.llSlotBytes))) {
      return recordError(ncclInternalError, "NET: rank %d sent a FIFO of %u x %u bytes (LL slots of %u)", res->peer,
                         h.nSteps, h.stepBytes, h.llSlotBytes);
    }
    BRAID_CHECK(allocFifo(res, h.nSteps, h.stepBytes, h.llSlotBytes, conn));
    std::unique_ptr<NetSendComm> comm;
    NetConnIdent ident{res->me, res->peer, res->tag, 0};
    p.nSteps = h.nSteps;
    BRAID_CHECK(res->backend->connect(h.net, ident, p, &comm));
    BRAID_CHECK(registerFifo(comm.get(), conn->info));
    BRAID_CHECK(res->proxy->addSend(std::move(comm), conn->info, laneOf(*res), pairOf(*res), &res->proxyId));
  } else {
    std::unique_ptr<NetRecvComm> comm;
    NetConnIdent expect{res->peer, res->me, res->tag, 0};
    p.nSteps = conn->info.nSteps;
    BRAID_CHECK(res->listen->accept(expect, p, &comm));
    res->listen.reset();
    BRAID_CHECK(registerFifo(comm.get(), conn->info));
    BRAID_CHECK(res->proxy->addRecv(std::move(comm), conn->info, laneOf(*res), pairOf(*res), &res->proxyId));
  }
  BRAID_INFO(kSubNet, "NET/%s: %s rank %d tag %u connected, %u x %u bytes", res->backend->name(),
             dir == Direction::Send ? "send to" : "recv from", res->peer, res->tag, conn->info.nSteps,
             conn->info.stepBytes);
  conn->connected = true;
  return ncclSuccess;
}

Transport* netTransport() {
  static NetTransport t;
  return &t;
}

}  // namespace braid
