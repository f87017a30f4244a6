// ConnectionManager: a communicator's connections (ring per channel, point-to-point per peer) and the
// order of host transports. Connecting runs in phases over a batch so no pair of ranks can deadlock: set up
// every connection (receivers create FIFOs / listen), send every handle, receive every peer handle, then
// connect all senders (which need nothing from the peer but its handle) before all receivers (which may
// wait for their sender, e.g. a socket accept).
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "transport/host_fifo.h"
#include "transport/net/ib/ib_devices.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_proxy.h"
#include "transport/net/proxy_affinity.h"
#include "transport/p2p/p2p_internal.h"
#include "transport/p2p/p2p_level.h"
#include "transport/shm/shm_internal.h"
#include "transport/transport.h"

namespace braid {
namespace {

// Bootstrap tags (below kBootstrapInternalTag). A handle travels with the tag of the direction of the
// connection side that wrote it, so with two ranks the ring's send and recv handles do not mix.
constexpr int kRingTagBase = 0x10000000;
constexpr int kP2pTagBase = 0x20000000;
constexpr int kMaxRingChannels = 1 << 20;
constexpr double kDrainTimeoutSec = 10;
// How long a close waits for its peers' connections to end cleanly where a backend asks for it (NetProxy::settleCloses).
constexpr double kSettleTimeoutSec = 2;
static_assert(kP2pTagBase + 4 * kMaxP2pPeerChannels < kBootstrapInternalTag, "tags stay clear of the bootstrap's own");

int tagFor(bool p2p, int channel, Direction dir) {
  int d = dir == Direction::Send ? 0 : 1;
  return p2p ? kP2pTagBase + (kP2pConnChannel - channel) * 2 + d : kRingTagBase + channel * 2 + d;
}

const char* dirName(Direction d) { return d == Direction::Send ? "send to" : "recv from"; }

// ncclInvalidArgument naming the variable where its value lies outside [lo, hi].
ncclResult_t checkRange(const char* name, int64_t value, int64_t lo, int64_t hi, const char* what) {
  if (value >= lo && value <= hi) return ncclSuccess;
  return recordError(ncclInvalidArgument, "%s=%lld: %s is %lld to %lld", name, static_cast<long long>(value), what,
                     static_cast<long long>(lo), static_cast<long long>(hi));
}

}  // namespace

// A ring may mix P2P and SHM links: LL's step size (the send side's LL slot) must be the same on both, or
// neighbours would cut LL steps differently.
static_assert(kShmLlSlotBytes == kP2pLlSlotBytes, "P2P and SHM LL slots must be the same size");

ncclResult_t checkTransportParams() {
  PathClass level;
  std::string why;
  if (!p2pLevelLimit(nullptr, &level, &why)) return recordError(ncclInvalidArgument, "%s", why.c_str());
  BRAID_CHECK(checkRange("BRAID_NET_PROXY_THREADS", params::NetProxyThreads(), 1, NetProxy::kMaxThreads,
                         "the network proxy's thread count"));
  BRAID_CHECK(checkRange("BRAID_NET_SOCKET_TWO_WAY", params::NetSocketTwoWay(), 0, 2,
                         "the setting (0 never, 1 host communicators, 2 every communicator)"));
  BRAID_CHECK(checkRange("NCCL_IB_SL", params::IbSl(), 0, 15, "a service level"));
  BRAID_CHECK(checkRange("NCCL_IB_TC", params::IbTc(), 0, 255, "a traffic class"));
  BRAID_CHECK(checkRange("NCCL_IB_PKEY", params::IbPkey(), 0, 65535, "a partition key index"));
  IbGidPrefs gidPrefs;
  BRAID_CHECK(ibGidPrefsFromParams(&gidPrefs));
  return checkProxyCpusSyntax(params::ProxyCpus());
}

std::vector<Transport*> hostTransports() { return {shmTransport(), netTransport()}; }
std::vector<Transport*> deviceTransports() { return {p2pTransport(), shmTransport(), netTransport()}; }

struct ConnectionManager::Impl {
  const WaitContext* wait = nullptr;
  Bootstrap* bootstrap = nullptr;
  const PeerInfo* self = nullptr;
  const std::vector<PeerInfo>* peers = nullptr;
  TransportContext ctx;
  std::vector<std::unique_ptr<Connector>> ringSend, ringRecv;
  std::vector<std::pair<int, int>> ringPeers;  // per ring channel: (next, prev)
  // Per peer, its point-to-point connections by channel.
  std::map<int, std::vector<std::unique_ptr<Connector>>> p2pSend, p2pRecv;
  std::map<int, std::vector<std::unique_ptr<Connector>>> collSend, collRecv;  // connectCollPeers
  // connectTrees: by (tree, channel, peer); a peer is at most one link of a tree.
  using TreeKey = std::tuple<int, int, int>;
  std::map<TreeKey, std::unique_ptr<Connector>> treeSend, treeRecv;
  int treeChannels = 0;
  int peerChannels = 1;              // setP2pChannels
  std::map<int, Transport*> chosen;  // per peer, for transportName and logging once
  std::vector<Transport*> order = hostTransports();
  std::function<void()> abortHook;
  bool aborted = false;
  // Guards the four connection containers against abort() from another thread (a watchdog) while a connect
  // on the calling thread inserts into them; never held during the blocking part of a connect.
  std::mutex containersMu;

  struct Pending {
    Direction dir;
    int peer;
    int channel;
    bool p2p;
    Transport* transport;
    std::unique_ptr<Connector> conn;
    ConnectHandle mine;
    ConnectHandle theirs;
    size_t buffBytes = 0;  // FIFO bytes of this connection (0: the communicator's)
  };

  int rank() const { return self->rank; }
  int nranks() const { return static_cast<int>(peers->size()); }

  // A peer's point-to-point connections (p2pChannelsOn its path; one to the rank itself).
  ncclResult_t p2pChannelsOf(int peer, int* k) {
    if (peer == rank()) return *k = 1, ncclSuccess;
    Transport* t = nullptr;
    BRAID_CHECK(pick(peer, &t));
    *k = p2pChannelsOn(t->kind(), peerChannels);
    return ncclSuccess;
  }

  ncclResult_t pick(int peer, Transport** out) {
    auto it = chosen.find(peer);
    if (it != chosen.end()) {
      *out = it->second;
      return ncclSuccess;
    }
    const PeerInfo& p = (*peers)[peer];
    for (Transport* t : order) {
      if (t->canConnect(*self, p)) {
        chosen[peer] = t;
        *out = t;
        BRAID_INFO(kSubInit, "rank %d <-> rank %d (%s, pid %d): via %s", rank(), peer, p.hostName, p.pid, t->name());
        return ncclSuccess;
      }
    }
    return recordError(ncclSystemError, "no transport can connect rank %d to rank %d (host %s)", rank(), peer,
                       p.hostName);
  }

  // Setup, exchange and connect one batch; connectors land in `batch` (connected) on success.
  ncclResult_t run(std::vector<Pending>& batch) {
    const int64_t want = ctx.buffBytes >= 0 ? ctx.buffBytes : buffSizeBytes(false);
    const size_t buffBytes = static_cast<size_t>(std::max<int64_t>(want, 0));
    for (auto& b : batch) {
      BRAID_CHECK(pick(b.peer, &b.transport));
      b.conn = std::make_unique<Connector>();
      b.conn->ctx = &ctx;
      ncclResult_t r = b.transport->setup(b.dir, *self, (*peers)[b.peer], b.channel, b.buffBytes ? b.buffBytes : buffBytes,
                                          b.conn.get(), &b.mine);
      if (r != ncclSuccess) return failed(r, b, "setup");
    }
    // Connections to ourselves (a one-rank ring, a send to self) pair up locally.
    for (auto& b : batch) {
      if (b.peer != rank()) continue;
      Direction other = b.dir == Direction::Send ? Direction::Recv : Direction::Send;
      auto mate = std::find_if(batch.begin(), batch.end(), [&](const Pending& o) {
        return o.peer == b.peer && o.dir == other && o.channel == b.channel && o.p2p == b.p2p;
      });
      if (mate == batch.end()) {
        return recordError(ncclInvalidUsage, "rank %d: a %s to itself needs the matching %s in the same group", rank(),
                           b.dir == Direction::Send ? "send" : "recv", b.dir == Direction::Send ? "recv" : "send");
      }
      b.theirs = mate->mine;
    }
    for (auto& b : batch) {
      if (b.peer == rank()) continue;
      ncclResult_t r = bootstrap->send(b.peer, tagFor(b.p2p, b.channel, b.dir), &b.mine, sizeof(b.mine));
      if (r != ncclSuccess) return failed(r, b, "sending the connection handle");
    }
    for (auto& b : batch) {
      if (b.peer == rank()) continue;
      Direction other = b.dir == Direction::Send ? Direction::Recv : Direction::Send;
      ncclResult_t r = bootstrap->recv(b.peer, tagFor(b.p2p, b.channel, other), &b.theirs, sizeof(b.theirs));
      if (r != ncclSuccess) return failed(r, b, "receiving the connection handle");
    }
    for (Direction d : {Direction::Send, Direction::Recv}) {
      for (auto& b : batch) {
        if (b.dir != d) continue;
        ncclResult_t r = b.transport->connect(b.dir, b.theirs, b.conn.get());
        if (r != ncclSuccess) return failed(r, b, "connect");
      }
    }
    return ncclSuccess;
  }

  // Runs a batch of peer connections and keeps them by peer; a peer's channels were queued in order, so they land at
  // their index.
  using PeerConns = std::map<int, std::vector<std::unique_ptr<Connector>>>;
  ncclResult_t runAndKeep(std::vector<Pending>& batch, PeerConns* send, PeerConns* recv) {
    if (batch.empty()) return ncclSuccess;
    BRAID_CHECK(run(batch));
    std::lock_guard<std::mutex> lock(containersMu);
    for (auto& b : batch) (*(b.dir == Direction::Send ? send : recv))[b.peer].push_back(std::move(b.conn));
    return ncclSuccess;
  }

  // The transport recorded the precise cause; the log line adds which connection it was.
  ncclResult_t failed(ncclResult_t r, const Pending& b, const char* phase) {
    if (pendingError().empty()) {
      recordError(r, "%s: %s of the %s connection (%s rank %d, channel %d) failed", b.transport->name(), phase,
                  b.p2p ? "p2p" : "ring", dirName(b.dir), b.peer, b.p2p ? kP2pConnChannel - b.channel : b.channel);
    }
    BRAID_WARN("rank %d: %s %s of the %s connection %s rank %d (channel %d) failed: %s", rank(), b.transport->name(),
               phase, b.p2p ? "p2p" : "ring", dirName(b.dir), b.peer, b.p2p ? kP2pConnChannel - b.channel : b.channel,
               pendingError().c_str());
    return r;
  }

  void forEach(void (*fn)(Connector*)) {
    for (auto& c : ringSend) fn(c.get());
    for (auto& c : ringRecv) fn(c.get());
    for (auto& kv : p2pSend)
      for (auto& c : kv.second) fn(c.get());
    for (auto& kv : p2pRecv)
      for (auto& c : kv.second) fn(c.get());
    for (auto& kv : collSend)
      for (auto& c : kv.second) fn(c.get());
    for (auto& kv : collRecv)
      for (auto& c : kv.second) fn(c.get());
    for (auto& kv : treeSend) fn(kv.second.get());
    for (auto& kv : treeRecv) fn(kv.second.get());
  }
};

ConnectionManager::ConnectionManager(const WaitContext* wait, Bootstrap* bootstrap, const PeerInfo* self,
                                     const std::vector<PeerInfo>* peers)
    : impl_(new Impl) {
  impl_->wait = wait;
  impl_->bootstrap = bootstrap;
  impl_->self = self;
  impl_->peers = peers;
  impl_->ctx.wait = wait;
  impl_->ctx.bootstrap = bootstrap;
  impl_->ctx.self = self;
  impl_->ctx.peers = peers;
}

ConnectionManager::~ConnectionManager() {
  impl_->ctx.proxyRaw.store(nullptr, std::memory_order_release);
  if (auto& proxy = impl_->ctx.proxy) {
    // Slots published by the last operation may still sit in a local send FIFO; let them leave (the peer
    // may still be receiving them), unless the communicator was aborted.
    if (!impl_->aborted && !proxy->drain(kDrainTimeoutSec, impl_->wait ? impl_->wait->abortFlag : nullptr)) {
      BRAID_WARN("rank %d: NET send connections did not drain within %.0f s at close; peers may miss data",
                 impl_->self ? impl_->self->rank : -1, kDrainTimeoutSec);
    } else if (!impl_->aborted &&
               !proxy->settleCloses(kSettleTimeoutSec, impl_->wait ? impl_->wait->abortFlag : nullptr)) {
      BRAID_INFO(kSubNet, "rank %d: NET connections did not end cleanly within %.0f s at close (a peer not closing)",
                 impl_->self ? impl_->self->rank : -1, kSettleTimeoutSec);
    }
    // Join the proxy before connectors free the FIFOs it reads.
    proxy->stop();
  }
  impl_->ringSend.clear();
  impl_->ringPeers.clear();
  impl_->ringRecv.clear();
  impl_->p2pSend.clear();
  impl_->p2pRecv.clear();
  impl_->collSend.clear();
  impl_->collRecv.clear();
  impl_->treeSend.clear();
  impl_->treeRecv.clear();
  impl_->ctx.proxy.reset();
}

ncclResult_t ConnectionManager::connectRing(int nChannels, int next, int prev) {
  const int n = impl_->peers ? impl_->nranks() : 0, r = impl_->self ? impl_->rank() : 0;
  if (n > 0 && next < 0) next = (r + 1) % n;
  if (n > 0 && prev < 0) prev = (r - 1 + n) % n;
  return connectRings(nChannels, std::vector<int>{next}, std::vector<int>{prev});
}

ncclResult_t ConnectionManager::connectRings(int nChannels, const std::vector<int>& next,
                                             const std::vector<int>& prev) {
  Impl& m = *impl_;
  if (!m.self || !m.peers || m.peers->empty() || (m.nranks() > 1 && !m.bootstrap)) {
    return recordError(ncclInternalError, "connectRing: connection manager has no peers/bootstrap");
  }
  if (nChannels < 1 || nChannels > kMaxRingChannels) {
    return recordError(ncclInvalidArgument, "connectRing: %d channels (must be 1..%d)", nChannels, kMaxRingChannels);
  }
  const int n = m.nranks(), r = m.rank();
  if (next.empty() || next.size() != prev.size())
    return recordError(ncclInternalError, "connectRing: rank %d got %zu next and %zu previous neighbours", r,
                       next.size(), prev.size());
  for (size_t k = 0; k < next.size(); ++k)
    if (next[k] < 0 || next[k] >= n || prev[k] < 0 || prev[k] >= n)
      return recordError(ncclInternalError, "connectRing: rank %d's ring neighbours %d and %d are not ranks of %d", r,
                         next[k], prev[k], n);
  const int have = static_cast<int>(m.ringSend.size());
  for (int c = 0; c < have && c < nChannels; ++c)
    if (m.ringPeers[static_cast<size_t>(c)] != std::make_pair(next[c % next.size()], prev[c % prev.size()]))
      return recordError(ncclInternalError, "connectRing: rank %d's channel %d already runs another ring", r, c);
  if (nChannels <= have) return ncclSuccess;
  std::vector<Impl::Pending> batch;
  for (int c = have; c < nChannels; c++) {
    const int to = next[static_cast<size_t>(c) % next.size()], from = prev[static_cast<size_t>(c) % prev.size()];
    batch.push_back(Impl::Pending{Direction::Send, to, c, false, nullptr, nullptr, {}, {}});
    batch.push_back(Impl::Pending{Direction::Recv, from, c, false, nullptr, nullptr, {}, {}});
  }
  BRAID_CHECK(m.run(batch));
  {
    std::lock_guard<std::mutex> lock(m.containersMu);
    for (auto& b : batch) (b.dir == Direction::Send ? m.ringSend : m.ringRecv).push_back(std::move(b.conn));
    for (int c = have; c < nChannels; c++)
      m.ringPeers.emplace_back(next[static_cast<size_t>(c) % next.size()], prev[static_cast<size_t>(c) % prev.size()]);
  }
  for (size_t k = 0; k < next.size() && static_cast<int>(k) < nChannels; ++k) {
    const std::string which =
        next.size() > 1 ? " of ring " + std::to_string(k) + " (every " + std::to_string(next.size()) + "th)" : "";
    BRAID_INFO(kSubInit, "rank %d: ring channels %d..%d%s connected (send to %d via %s, recv from %d via %s)", r, have,
               nChannels - 1, which.c_str(), next[k], transportName(next[k]), prev[k], transportName(prev[k]));
  }
  return ncclSuccess;
}

int ConnectionManager::ringSendPeer(int channel) const {
  if (channel < 0 || static_cast<size_t>(channel) >= impl_->ringPeers.size()) return -1;
  return impl_->ringPeers[static_cast<size_t>(channel)].first;
}

int ConnectionManager::ringRecvPeer(int channel) const {
  if (channel < 0 || static_cast<size_t>(channel) >= impl_->ringPeers.size()) return -1;
  return impl_->ringPeers[static_cast<size_t>(channel)].second;
}

ncclResult_t ConnectionManager::connectP2p(const int* sendPeers, int nSend, const int* recvPeers, int nRecv) {
  Impl& m = *impl_;
  if (!m.self || !m.peers || m.peers->empty()) {
    return recordError(ncclInternalError, "connectP2p: connection manager has no peers");
  }
  const int n = m.nranks();
  std::vector<Impl::Pending> batch;
  std::set<int> seenSend, seenRecv;
  auto add = [&](const int* list, int count, Direction dir) -> ncclResult_t {
    auto& have = dir == Direction::Send ? m.p2pSend : m.p2pRecv;
    auto& seen = dir == Direction::Send ? seenSend : seenRecv;
    for (int i = 0; i < count; i++) {
      int p = list[i];
      if (p < 0 || p >= n) {
        return recordError(ncclInvalidArgument, "connectP2p: peer %d out of range (nranks %d)", p, n);
      }
      if (have.count(p) || !seen.insert(p).second) continue;
      if (p != m.rank() && !m.bootstrap) return recordError(ncclInternalError, "connectP2p: no bootstrap");
      int k = 1;
      BRAID_CHECK(m.p2pChannelsOf(p, &k));
      for (int c = 0; c < k; ++c)
        batch.push_back(Impl::Pending{dir, p, p2pConnChannel(c), true, nullptr, nullptr, {}, {}});
    }
    return ncclSuccess;
  };
  BRAID_CHECK(add(sendPeers, nSend, Direction::Send));
  BRAID_CHECK(add(recvPeers, nRecv, Direction::Recv));
  return m.runAndKeep(batch, &m.p2pSend, &m.p2pRecv);
}

ncclResult_t ConnectionManager::connectCollPeers(const int* sendPeers, int nSend, const int* recvPeers, int nRecv,
                                                 int channels, size_t fifoBytes) {
  Impl& m = *impl_;
  if (!m.self || !m.peers || m.peers->empty() || !m.bootstrap)
    return recordError(ncclInternalError, "connectCollPeers: connection manager has no peers/bootstrap");
  if (channels < 1 || channels > kMaxP2pPeerChannels)
    return recordError(ncclInternalError, "connectCollPeers: %d channels (1..%d)", channels, kMaxP2pPeerChannels);
  const int n = m.nranks();
  std::vector<Impl::Pending> batch;
  auto add = [&](const int* list, int count, Direction dir) -> ncclResult_t {
    auto& have = dir == Direction::Send ? m.collSend : m.collRecv;
    for (int i = 0; i < count; i++) {
      const int p = list[i];
      if (p < 0 || p >= n || p == m.rank())
        return recordError(ncclInternalError, "connectCollPeers: peer %d (rank %d of %d)", p, m.rank(), n);
      if (have.count(p)) continue;
      for (int c = 0; c < channels; ++c) {
        batch.push_back(Impl::Pending{dir, p, collPeerConnChannel(c), true, nullptr, nullptr, {}, {}});
        batch.back().buffBytes = fifoBytes;
      }
    }
    return ncclSuccess;
  };
  BRAID_CHECK(add(sendPeers, nSend, Direction::Send));
  BRAID_CHECK(add(recvPeers, nRecv, Direction::Recv));
  return m.runAndKeep(batch, &m.collSend, &m.collRecv);
}

ncclResult_t ConnectionManager::connectTrees(int nChannels, const TreeLinks trees[kNumTrees]) {
  Impl& m = *impl_;
  if (!m.self || !m.peers || m.peers->empty() || (m.nranks() > 1 && !m.bootstrap))
    return recordError(ncclInternalError, "connectTrees: connection manager has no peers/bootstrap");
  if (nChannels < 1 || nChannels > kMaxTreeChannels)
    return recordError(ncclInternalError, "connectTrees: %d channels (1..%d)", nChannels, kMaxTreeChannels);
  const int have = m.treeChannels;
  if (nChannels <= have) return ncclSuccess;
  const int n = m.nranks();
  std::vector<Impl::Pending> batch;
  std::vector<Impl::TreeKey> keys;
  for (int t = 0; t < kNumTrees; ++t) {
    const int links[3] = {trees[t].up, trees[t].down[0], trees[t].down[1]};
    for (int p : links) {
      if (p < 0) continue;
      if (p >= n || p == m.rank())
        return recordError(ncclInternalError, "connectTrees: rank %d's tree %d link %d is not a peer of %d", m.rank(),
                           t, p, n);
      for (int c = have; c < nChannels; ++c)
        for (Direction d : {Direction::Send, Direction::Recv}) {
          batch.push_back(Impl::Pending{d, p, treeConnChannel(t, c), true, nullptr, nullptr, {}, {}});
          keys.push_back(Impl::TreeKey{t, c, p});
        }
    }
  }
  if (!batch.empty()) BRAID_CHECK(m.run(batch));
  {
    std::lock_guard<std::mutex> lock(m.containersMu);
    for (size_t i = 0; i < batch.size(); ++i)
      (batch[i].dir == Direction::Send ? m.treeSend : m.treeRecv)[keys[i]] = std::move(batch[i].conn);
    m.treeChannels = nChannels;
  }
  BRAID_INFO(kSubInit, "rank %d: tree channels %d..%d connected (tree 0 up %d down %d,%d; tree 1 up %d down %d,%d)",
             m.rank(), have, nChannels - 1, trees[0].up, trees[0].down[0], trees[0].down[1], trees[1].up,
             trees[1].down[0], trees[1].down[1]);
  return ncclSuccess;
}

ConnInfo* ConnectionManager::treeSend(int tree, int channel, int peer) {
  auto it = impl_->treeSend.find(Impl::TreeKey{tree, channel, peer});
  return it == impl_->treeSend.end() ? nullptr : &it->second->info;
}

ConnInfo* ConnectionManager::treeRecv(int tree, int channel, int peer) {
  auto it = impl_->treeRecv.find(Impl::TreeKey{tree, channel, peer});
  return it == impl_->treeRecv.end() ? nullptr : &it->second->info;
}

int ConnectionManager::treeChannels() const { return impl_->treeChannels; }

ConnInfo* ConnectionManager::ringSend(int channel) {
  auto& v = impl_->ringSend;
  return channel >= 0 && channel < static_cast<int>(v.size()) ? &v[channel]->info : nullptr;
}

ConnInfo* ConnectionManager::ringRecv(int channel) {
  auto& v = impl_->ringRecv;
  return channel >= 0 && channel < static_cast<int>(v.size()) ? &v[channel]->info : nullptr;
}

namespace {
ConnInfo* p2pFind(std::map<int, std::vector<std::unique_ptr<Connector>>>& m, int peer, int channel) {
  auto it = m.find(peer);
  if (it == m.end() || channel < 0 || channel >= static_cast<int>(it->second.size())) return nullptr;
  return &it->second[channel]->info;
}
}  // namespace

ConnInfo* ConnectionManager::p2pSend(int peer, int channel) { return p2pFind(impl_->p2pSend, peer, channel); }
ConnInfo* ConnectionManager::collPeerSend(int peer, int channel) { return p2pFind(impl_->collSend, peer, channel); }
ConnInfo* ConnectionManager::collPeerRecv(int peer, int channel) { return p2pFind(impl_->collRecv, peer, channel); }
ConnInfo* ConnectionManager::p2pRecv(int peer, int channel) { return p2pFind(impl_->p2pRecv, peer, channel); }

int ConnectionManager::p2pChannels(int peer) {
  int k = 0;
  if (peer < 0 || peer >= impl_->nranks() || impl_->p2pChannelsOf(peer, &k) != ncclSuccess) return 0;
  return k;
}

void ConnectionManager::setP2pChannels(int peerChannels) {
  impl_->peerChannels = std::max(1, std::min(peerChannels, kMaxP2pPeerChannels));
}

int ConnectionManager::ringChannels() const { return static_cast<int>(impl_->ringSend.size()); }

const char* ConnectionManager::transportName(int peer) const {
  auto it = impl_->chosen.find(peer);
  return it == impl_->chosen.end() ? "none" : it->second->name();
}

ncclResult_t ConnectionManager::kindFor(int peer, TransportKind* kind) {
  if (peer < 0 || peer >= impl_->nranks())
    return recordError(ncclInternalError, "kindFor: peer %d out of range (nranks %d)", peer, impl_->nranks());
  Transport* t = nullptr;
  BRAID_CHECK(impl_->pick(peer, &t));
  *kind = t->kind();
  return ncclSuccess;
}

void ConnectionManager::setLlSlots(bool on) { impl_->ctx.llSlots = on; }
void ConnectionManager::setBuffBytes(int64_t bytes) { impl_->ctx.buffBytes = bytes; }

void ConnectionManager::setNetProxy(int spinUs, bool executorDriven, size_t bulkBytes, int threads) {
  impl_->ctx.proxyBulkBytes = bulkBytes;
  impl_->ctx.proxyThreads = threads;
  impl_->ctx.proxySpinUs = spinUs;
  impl_->ctx.proxyExecutorDriven = executorDriven;
}

void ConnectionManager::setNetWorkProbe(std::function<NetWork()> probe) {
  std::lock_guard<std::mutex> lock(impl_->ctx.proxyMu);
  impl_->ctx.proxyWorkProbe = probe;
  if (impl_->ctx.proxy) impl_->ctx.proxy->setWorkProbe(std::move(probe));
}

bool ConnectionManager::driveNet() {
  NetProxy* p = impl_->ctx.proxyRaw.load(std::memory_order_acquire);
  return p != nullptr && p->driveInline();
}

void ConnectionManager::wakeNet() {
  if (NetProxy* p = impl_->ctx.proxyRaw.load(std::memory_order_acquire)) p->wakeSleeping();
}

void ConnectionManager::flush() {
  NetProxy* p = impl_->ctx.proxyRaw.load(std::memory_order_acquire);
  if (p == nullptr) return;
  bool pending = false;
  p->driveInline(&pending, true);
  if (pending) p->wakeSleeping();
}

void ConnectionManager::setTransports(std::vector<Transport*> order) {
  impl_->order = std::move(order);
  impl_->chosen.clear();  // choices (kindFor, earlier connections) were made from the old order
}

void ConnectionManager::setAbortHook(std::function<void()> hook) { impl_->abortHook = std::move(hook); }

void ConnectionManager::abort(double drainSec) {
  if (impl_->abortHook) impl_->abortHook();
  impl_->aborted = true;
  std::shared_ptr<NetProxy> proxy;
  {
    std::lock_guard<std::mutex> lock(impl_->ctx.proxyMu);
    proxy = impl_->ctx.proxy;
  }
  // Completed work first: its last steps may still wait in a NET send FIFO, or half-written in the socket,
  // and a peer still receiving them would see the connection break. The flags below stop the proxy
  // mid-message, and the close after them drops whatever it had not yet handed to the socket.
  if (proxy && drainSec > 0 && !proxy->drain(drainSec, nullptr)) {
    BRAID_INFO(kSubNet, "rank %d: NET send connections did not drain within %.1f s at abort; peers may miss data",
               impl_->self ? impl_->self->rank : -1, drainSec);
  }
  // Flags first, so executors stop waiting at once; then the proxy, which may be mid-transfer.
  {
    std::lock_guard<std::mutex> lock(impl_->containersMu);
    impl_->forEach([](Connector* c) {
      if (c && c->info.errorFlag) __atomic_store_n(c->info.errorFlag, 1u, __ATOMIC_RELEASE);
    });
  }
  if (proxy) proxy->stop();
}

}  // namespace braid
