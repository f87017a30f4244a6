// The transport interface and the per-communicator connection manager. A Transport sets up one side of a
// connection (send or recv) and exchanges an opaque handle with the peer through the bootstrap; both
// sides pick the same transport because the choice is a pure function of the two PeerInfo values.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "algo/tree_topology.h"
#include "core/bootstrap.h"
#include "core/peer_info.h"
#include "core/wait.h"
#include "nccl.h"
#include "transport/conn_info.h"

namespace braid {

// Opaque bytes a side sends to its peer during connection setup.
struct ConnectHandle {
  uint8_t data[256];
};

// Resources behind one side of a connection (segments, sockets, proxy registration). RAII.
class ConnResources {
 public:
  virtual ~ConnResources() = default;
};

struct TransportContext;

struct Connector {
  ConnInfo info;                           // what executors read (copy it; pointers stay valid)
  std::unique_ptr<ConnResources> res;      // freed with the connector
  bool connected = false;
  // The communicator's transport state (abort flag, timeouts, the NET proxy). Set by whoever drives
  // setup/connect (ConnectionManager, tests) before setup(); must outlive the connector.
  TransportContext* ctx = nullptr;
};

enum class Direction { Send, Recv };

// Both sides of a point-to-point (send/recv) connection present kP2pConnChannel - c as their "channel" c to
// setup() (NET ident, handle check; P2P gives such connections no LL128 slots: only ring collectives run LL128).
// A peer has up to kMaxP2pPeerChannels of them (ConnectionManager::setP2pChannels).
constexpr int kP2pConnChannel = 0xfffff;
constexpr int kMaxP2pPeerChannels = 64;
inline int p2pConnChannel(int c) { return kP2pConnChannel - c; }
// A collective schedule's own connections to peers (ConnectionManager::connectCollPeers) present the range below.
inline int collPeerConnChannel(int c) { return kP2pConnChannel - kMaxP2pPeerChannels - c; }
// The tree all-reduce's connections (ConnectionManager::connectTrees) present the range below: tree t's channel c.
constexpr int kMaxTreeChannels = 64;
constexpr int treeConnChannel(int tree, int c) { return kP2pConnChannel - 2 * kMaxP2pPeerChannels - (2 * c + tree); }
// Either kind of peer connection (neither gets LL128 slots).
inline bool isP2pConnChannel(int channel) {
  return channel <= kP2pConnChannel && channel > kP2pConnChannel - 2 * kMaxP2pPeerChannels;
}
// A channel that connections to several peers share (point-to-point, a schedule's peers, the trees' links), where
// a ring channel has one peer each way.
constexpr bool isPeerSharedConnChannel(int channel) {
  return channel <= kP2pConnChannel && channel > kP2pConnChannel - 2 * kMaxP2pPeerChannels - 2 * kMaxTreeChannels;
}
static_assert(isPeerSharedConnChannel(treeConnChannel(1, kMaxTreeChannels - 1)) &&
                  isPeerSharedConnChannel(kP2pConnChannel) && !isPeerSharedConnChannel(63),
              "every peer connection's channel, and no ring channel, is peer-shared");
// The point-to-point connections a peer gets on a path of `kind` where GPU P2P peers get `peerChannels`: a
// pure function of the two PeerInfo values (through the kind) and the agreed count, so both sides connect alike.
// SHM segments are pinned host memory (4 MiB a connection by default), so at most kMaxShmP2pChannels; a socket
// carries one (the proxy's threads, not the CTAs, set the pace).
constexpr int kMaxShmP2pChannels = 4;
inline int p2pChannelsOn(TransportKind kind, int peerChannels) {
  const int p = peerChannels < 1 ? 1 : (peerChannels > kMaxP2pPeerChannels ? kMaxP2pPeerChannels : peerChannels);
  if (kind == TransportKind::Shm) return p < kMaxShmP2pChannels ? p : kMaxShmP2pChannels;
  if (kind == TransportKind::Net) return 1;
  return p;
}

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual TransportKind kind() const = 0;
  // Must be symmetric: canConnect(a, b) == canConnect(b, a).
  virtual bool canConnect(const PeerInfo& me, const PeerInfo& peer) const = 0;
  // Phase 1: allocate this side's resources, produce the handle to send to the peer.
  virtual ncclResult_t setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel,
                             size_t buffBytes, Connector* conn, ConnectHandle* myHandle) = 0;
  // Phase 2: with the peer's handle, finish the connection and fill conn->info.
  virtual ncclResult_t connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) = 0;
};

class NetProxy;  // the NET transport's progress engine (transport/net)
class NetLinks;  // its connections' registry (transport/net/net_backend.h)
enum class NetWork;

// Per-communicator shared state for transports (e.g., the NET transport's progress engine).
struct TransportContext {
  const WaitContext* wait = nullptr;
  Bootstrap* bootstrap = nullptr;
  const PeerInfo* self = nullptr;
  const std::vector<PeerInfo>* peers = nullptr;
  std::shared_ptr<NetProxy> proxy;  // created on first use, under proxyMu
  std::mutex proxyMu;               // abort() may read `proxy` from another thread while a connect creates it
  std::atomic<NetProxy*> proxyRaw{nullptr};  // `proxy`, set once: read without proxyMu by waits (driveNet)
  bool llSlots = false;  // SHM segments and NET FIFOs carry LL slots (GPU communicators; host executors never use them)
  int64_t buffBytes = -1;  // FIFO bytes per connection, agreed over the ranks (-1: this rank's NCCL_BUFFSIZE)
  int proxySpinUs = 50;  // NET proxy: how long its thread polls after activity before it may block
  std::function<NetWork()> proxyWorkProbe;  // NetProxy::setWorkProbe, kept for a proxy created later (proxyMu)
  bool proxyExecutorDriven = false;  // NetProxy's executorDriven (host communicators)
  size_t proxyBulkBytes = 0;  // NetSetupParams::bulkHelperBytes of the connections (0: no bulk helpers)
  int proxyThreads = 1;  // NetProxy's progress threads
  std::shared_ptr<NetLinks> netLinks;  // NetSetupParams::links of the NET connections (made with the first, proxyMu)
};

// Connections of one communicator: ring connections per channel and point-to-point connections per peer.
class ConnectionManager final : public ConnProvider {
 public:
  ConnectionManager(const WaitContext* wait, Bootstrap* bootstrap, const PeerInfo* self,
                    const std::vector<PeerInfo>* peers);
  ~ConnectionManager();

  // Collective over all ranks: send to `next`, recv from `prev` on channels [0, nChannels), the neighbours in
  // the ring order every rank agreed (ring_order.h); -1: rank order ((rank+1)%n, (rank-1+n)%n). Later calls
  // (more channels) must name the same neighbours.
  ncclResult_t connectRing(int nChannels, int next = -1, int prev = -1);
  // The same with a ring per channel: channel c sends to next[c % next.size()] and receives from
  // prev[c % prev.size()] (the agreed rings' neighbours, channel c on ring c % nRings; both lists the same length,
  // at least one entry). Later calls (more channels) must name the same neighbours.
  ncclResult_t connectRings(int nChannels, const std::vector<int>& next, const std::vector<int>& prev);
  // The neighbours channel c's ring connections go to and come from (-1 where not connected).
  int ringSendPeer(int channel) const;
  int ringRecvPeer(int channel) const;
  // Called by the ranks taking part: connects any of the listed connections not connected yet. Peer pairs
  // must call it in the same group (A's send to B pairs with B's recv from A).
  ncclResult_t connectP2p(const int* sendPeers, int nSend, const int* recvPeers, int nRecv) override;

  ConnInfo* ringSend(int channel) override;
  ConnInfo* ringRecv(int channel) override;
  // A collective schedule's connections to peers off its ring (the one-shot over every peer), apart from the
  // point-to-point ones: user sends and receives, which two ranks may group differently around a collective, never
  // share a FIFO with it (collectives run in the same order on every rank). Channels [0, channels) of each listed
  // peer, FIFOs of fifoBytes (the LL slots come with them); all ranks call it together.
  ncclResult_t connectCollPeers(const int* sendPeers, int nSend, const int* recvPeers, int nRecv, int channels,
                                size_t fifoBytes);
  // Collective over all ranks: the connections of both trees (tree_topology.h) on channels [0, nChannels), both
  // directions with the parent and each child of trees[t] (this rank's links). Later calls (more channels) must
  // name the same links.
  ncclResult_t connectTrees(int nChannels, const TreeLinks trees[kNumTrees]);
  ConnInfo* treeSend(int tree, int channel, int peer) override;
  ConnInfo* treeRecv(int tree, int channel, int peer) override;
  int treeChannels() const override;
  ConnInfo* collPeerSend(int peer, int channel);
  ConnInfo* collPeerRecv(int peer, int channel);
  ConnInfo* p2pSend(int peer, int channel = 0) override;
  ConnInfo* p2pRecv(int peer, int channel = 0) override;
  // The point-to-point connections a listed peer gets (p2pChannelsOn its path); 0 for an unknown peer.
  int p2pChannels(int peer) override;
  int ringChannels() const override;
  // Which transport serves a peer (for logs and tests).
  const char* transportName(int peer) const;
  // The kind of transport a connection with `peer` gets (or already has): the first in the order whose
  // canConnect holds, a pure function of the two PeerInfo values, so callable before connecting (e.g. to
  // size the channel count by the ring's slowest link). An error (recorded) when none can connect.
  ncclResult_t kindFor(int peer, TransportKind* kind);

  // Marks every connection broken and stops proxies; used by abort. drainSec > 0: first, for at most that
  // long, let the NET send slots already published leave (the caller knows they belong to operations this
  // rank completed, which peers may still be receiving); a broken connection ends its own wait at once.
  void abort(double drainSec = 0);

  // The transports tried, in order, for connections made from now on (default: hostTransports()).
  // Device communicators pass deviceTransports().
  void setTransports(std::vector<Transport*> order);
  // SHM segments made from now on carry LL slots (GPU communicators, before connectRing).
  void setLlSlots(bool on);
  // FIFO bytes of connections made from now on: the value agreed over the ranks (agreeOnChannels), since a
  // ring whose ranks cut steps from different NCCL_BUFFSIZE values would mismatch every step.
  void setBuffBytes(int64_t bytes);
  // How long the NET proxy's threads poll after activity before they may block, whether the executors drive
  // the connections themselves (NetProxy's executorDriven), from what message size socket connections move
  // bytes on a helper thread (NetSetupParams::bulkHelperBytes; 0: never), and over how many progress threads the
  // connections are dealt by channel; before connecting.
  void setNetProxy(int spinUs, bool executorDriven = false, size_t bulkBytes = 0, int threads = 1);
  // Who tells the NET proxy whether posted GPU work is still in flight (NetProxy::setWorkProbe); null clears it,
  // waiting for a call in progress (before what the probe reads is freed).
  void setNetWorkProbe(std::function<NetWork()> probe);
  // One pass of the NET proxy over its connections on the caller's thread (NetProxy::driveInline): what a host
  // executor's waits do (WaitContext::drive). True when anything moved; false without NET connections.
  bool driveNet();
  // Wakes the NET proxy's sleeping threads: a GPU launch, whose kernels publish steps that wake no descriptor.
  void wakeNet();
  // At the end of a host operation: hands what its last steps left in the send FIFOs to the sockets on this
  // thread, and wakes the proxy where some of it could not leave yet (ConnProvider::flush).
  void flush() override;
  // GPU P2P peers get this many point-to-point connections (p2pChannelsOn; default 1), connected together on
  // first use: a value agreed over the ranks (set before any connectP2p).
  void setP2pChannels(int peerChannels);
  // Runs first thing in abort(), e.g. to raise a device-visible abort flag so kernels stop spinning.
  void setAbortHook(std::function<void()> hook);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The transports' environment that must be well formed before any rank waits on another (BRAID_PROXY_CPUS):
// ncclInvalidArgument naming the variable when it is malformed.
ncclResult_t checkTransportParams();

// The ordered list of transports tried (SHM > NET for host communicators; P2P first for device).
std::vector<Transport*> hostTransports();
// For device buffers: P2P > SHM > NET (SHM and NET FIFOs are host memory the kernels reach mapped).
std::vector<Transport*> deviceTransports();

}  // namespace braid
