// Socket backend of the NET transport: which interface a rank listens on (the one nearest its GPU), listen
// and connect (the connections themselves are net_socket_comm.cc's), and the choice between the socket and IB
// backends (NCCL_NET).
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "core/socket.h"
#include "transport/net/ib/ib_backend.h"
#include "transport/net/net_backend.h"
#include "transport/net/net_plugin.h"
#include "transport/net/net_socket.h"
#include "transport/net/net_socket_comm.h"
#include "transport/net/socket_nic.h"
#include "transport/p2p/nvlink.h"
#include "transport/p2p/p2p_level.h"

namespace braid {
namespace {

uint64_t randomNonce() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<uint64_t>(getpid()) << 32);
  }
  return v;
}

}  // namespace

int netSocketsPerConnection() {
  const int64_t threads = params::SocketNThreads();
  const int64_t perThread = params::NSocksPerThread();
  int64_t n = params::NSocketsPerPeer();
  if (threads > 0 || perThread > 0) n = std::max<int64_t>(1, threads) * std::max<int64_t>(1, perThread);
  static std::atomic<bool> warned{false};
  if (n > kNetMaxSocks && !warned.exchange(true))
    BRAID_WARN("NET/Socket: %lld sockets per connection asked for (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD or "
               "BRAID_NSOCKS_PERPEER); using %d", static_cast<long long>(n), kNetMaxSocks);
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n, kNetMaxSocks)));
}

namespace {

// Where several interfaces match, the one nearest the rank's GPU (socket_nic.h); else the first. *why says why.
size_t pickInterface(int64_t gpuBusId, const std::vector<SockIf>& ifs, std::string* why) {
  size_t pick = 0;
  *why = "the only interface";
  if (ifs.size() > 1) {
    *why = "no GPU";
    const std::shared_ptr<const HostTopology> t = gpuBusId >= 0 ? hostTopologyIfKnown() : nullptr;
    if (t) {
      std::vector<std::string> names;
      for (const SockIf& i : ifs) names.push_back(i.name);
      const int near = nearestSocketInterface(t->topo, t->paths, gpuBusId, names, why);
      if (near >= 0) pick = static_cast<size_t>(near);
    } else if (gpuBusId >= 0) {
      *why = "no topology";
    }
  }
  return pick;
}

class SocketBackend final : public NetBackend {
 public:
  const char* name() const override { return "Socket"; }

  // The interface listenFor takes (progress placement follows its NIC).
  bool nicPlace(int64_t gpuBusId, NetNicPlace* out) override {
    std::vector<SockIf> ifs;
    if (findInterfaces(&ifs) != ncclSuccess || ifs.empty()) {
      clearPendingError();  // listen() reports it
      return false;
    }
    std::string why;
    const std::string& ifName = ifs[pickInterface(gpuBusId, ifs, &why)].name;
    out->name = ifName;
    out->sysfsDevice = "/sys/class/net/" + ifName + "/device";  // absent for loopback and virtual interfaces
    return true;
  }

  ncclResult_t listen(NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    SockIf one;
    BRAID_CHECK(findInterfaceAddr(&one.addr, &one.name));
    std::shared_ptr<SockListen> l;
    BRAID_CHECK(listenOn(one, handle, &l));
    *out = newSocketListenComm(std::move(l));
    return ncclSuccess;
  }

  // Where several interfaces match, the one nearest the rank's GPU (socket_nic.h); else the first.
  // The listener is kept in p.links, where this rank's send comm to the peer on the tag may take the connection.
  ncclResult_t listenFor(const NetSetupParams& p, NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    std::vector<SockIf> ifs;
    BRAID_CHECK(findInterfaces(&ifs));
    std::string why;
    const size_t pick = pickInterface(p.gpuBusId, ifs, &why);
    sayChoice(p.gpuBusId, ifs, pick, why);
    std::shared_ptr<SockListen> l;
    BRAID_CHECK(listenOn(ifs[pick], handle, &l));
    if (p.links) p.links->put(p.peer, p.tag, NetLinks::Kind::Listen, l);
    *out = newSocketListenComm(std::move(l));
    return ncclSuccess;
  }

  ncclResult_t connect(const NetHandle& handle, const NetConnIdent& ident, const NetSetupParams& p,
                       std::unique_ptr<NetSendComm>* out) override {
    SocketHandle h;
    std::memcpy(&h, handle.data, sizeof(h));
    if (h.magic != kSockHandleMagic || h.nSocks < 1 || h.nSocks > static_cast<uint32_t>(kNetMaxSocks)) {
      return recordError(ncclInternalError, "NET/Socket: bad connection handle from rank %d (magic %#x)", p.peer,
                         h.magic);
    }
    if (p.links && p.twoWay) {
      std::shared_ptr<SockSet> set;
      BRAID_CHECK(otherWaySockets(h, ident, p, &set));
      if (set) {
        BRAID_CHECK(writeOtherWayPreamble(set.get(), h.nonce, ident, p));
        BRAID_INFO(kSubNet | kSubInit, "NET/Socket: send to rank %d tag %u over the connection from it", p.peer,
                   ident.tag);
        *out = newSocketSendComm(std::move(set), p.peer, p.bulkHelperBytes);
        return ncclSuccess;
      }
    }
    std::vector<Socket> socks(h.nSocks);
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto left = [&] { return p.timeoutSec - std::chrono::duration<double>(Clock::now() - start).count(); };
    for (uint32_t i = 0; i < h.nSocks; i++) {
      ncclResult_t r;
      for (;;) {
        // Refused connects are retried within a slice; between slices, a dead peer ends the wait.
        double slice = p.timeoutSec > 0 ? livenessSlice(left()) : kLivenessSliceSec;
        if (p.wait == nullptr) slice = p.timeoutSec;  // nothing to check between slices
        const auto attempt = Clock::now();
        r = socks[i].connect(h.addr, slice, p.abortFlag);
        const bool usedSlice = std::chrono::duration<double>(Clock::now() - attempt).count() >= slice * 0.9;
        if (r != ncclRemoteError || !usedSlice || p.wait == nullptr) break;
        const std::string connectErr = pendingError();
        clearPendingError();
        r = checkSetupPeers(p, "connecting to");
        if (r != ncclSuccess) return r;
        if (p.timeoutSec > 0 && left() <= 0) {
          r = recordError(ncclRemoteError, "could not connect to %s within %.0f s (last attempt: %s)",
                          sockAddrToString(h.addr).c_str(), p.timeoutSec, connectErr.c_str());
          break;
        }
      }
      if (r != ncclSuccess) return rewrapError(r, "NET/Socket: cannot connect to rank %d: %s", p.peer);
      Preamble pre{kPreambleMagic, h.nonce, ident, i, h.nSocks};
      r = socks[i].sendAll(&pre, sizeof(pre), p.timeoutSec, p.abortFlag, "the receiving rank");
      if (r != ncclSuccess) return rewrapError(r, "NET/Socket: sending the preamble to rank %d failed: %s", p.peer);
      BRAID_CHECK(socks[i].setNonBlocking(true));
      BRAID_CHECK(socks[i].setNoDelay());
    }
    auto set = std::make_shared<SockSet>(std::move(socks));
    if (p.links) p.links->put(p.peer, ident.tag, NetLinks::Kind::Send, set);
    *out = newSocketSendComm(std::move(set), p.peer, p.bulkHelperBytes);
    return ncclSuccess;
  }

 private:
  ncclResult_t listenOn(const SockIf& where, NetHandle* handle, std::shared_ptr<SockListen>* out) {
    SocketHandle h{};
    h.magic = kSockHandleMagic;
    h.nSocks = static_cast<uint32_t>(netSocketsPerConnection());
    h.nonce = randomNonce();
    h.addr = where.addr;
    auto l = std::make_shared<SockListen>();
    BRAID_CHECK(l->listener.listen(&h.addr));
    l->nonce = h.nonce;
    l->nSocks = static_cast<int>(h.nSocks);
    BRAID_TRACE(kSubNet, "NET/Socket: listening on %s (%s), %u socket(s)", sockAddrToString(h.addr).c_str(),
                where.name.c_str(), h.nSocks);
    std::memset(handle, 0, sizeof(*handle));
    std::memcpy(handle->data, &h, sizeof(h));
    *out = std::move(l);
    return ncclSuccess;
  }

  // The sockets a send comm to the peer on ident.tag may share with this rank's connection from the peer on the tag
  // (null: none; it connects its own): a receive comm's, running already, or (p.twoWayEarly: connections made in
  // batches that match over the ranks) the connection the peer makes in this batch, which the higher rank takes here,
  // before its accept(). The lower rank connects its sends before it accepts anything (ConnectionManager), so within
  // such batches a rank waits here only for lower ones, and never in a cycle.
  ncclResult_t otherWaySockets(const SocketHandle& h, const NetConnIdent& ident, const NetSetupParams& p,
                               std::shared_ptr<SockSet>* out) {
    out->reset();
    auto recv = std::dynamic_pointer_cast<SockSet>(p.links->find(p.peer, ident.tag, NetLinks::Kind::Recv));
    if (recv && recv->socks.size() == h.nSocks && !recv->otherWay.exchange(true)) {
      *out = std::move(recv);
      return ncclSuccess;
    }
    if (!p.twoWayEarly || ident.sendRank <= p.peer) return ncclSuccess;
    auto l = std::dynamic_pointer_cast<SockListen>(p.links->find(p.peer, ident.tag, NetLinks::Kind::Listen));
    if (!l || l->early || !l->listener.valid() || l->nSocks != static_cast<int>(h.nSocks)) return ncclSuccess;
    std::shared_ptr<SockSet> set;
    BRAID_CHECK(acceptSockets(l.get(), NetConnIdent{p.peer, ident.sendRank, ident.tag, 0}, p, nullptr, &set));
    set->otherWay.store(true);
    l->early = set;
    l->listener.close();
    *out = std::move(set);
    return ncclSuccess;
  }

  // The choice at INFO, once per GPU (every connection of a rank makes the same one).
  void sayChoice(int64_t gpuBusId, const std::vector<SockIf>& ifs, size_t pick, const std::string& why) {
    std::lock_guard<std::mutex> lock(saidMu_);
    if (!said_.insert(gpuBusId).second) return;
    std::string names;
    for (const SockIf& i : ifs) names += (names.empty() ? "" : ",") + i.name;
    if (gpuBusId >= 0) {
      char bus[32];
      p2pBusIdToString(gpuBusId, bus, sizeof(bus));
      BRAID_INFO(kSubNet | kSubInit, "NET/Socket: GPU %s listens on %s (%s) of %s (%s)", bus, ifs[pick].name.c_str(),
                 sockAddrToString(ifs[pick].addr).c_str(), names.c_str(), why.c_str());
    } else {
      BRAID_INFO(kSubNet | kSubInit, "NET/Socket: listening on %s (%s) of %s", ifs[pick].name.c_str(),
                 sockAddrToString(ifs[pick].addr).c_str(), names.c_str());
    }
  }

  std::mutex saidMu_;
  std::set<int64_t> said_;
};

}  // namespace

void netSocketPartition(size_t size, int nSocks, size_t* off, size_t* len) {
  int parts = 1;
  if (nSocks > 1 && size >= 2 * kNetMinPart) {
    parts = static_cast<int>(std::min<size_t>(static_cast<size_t>(nSocks), size / kNetMinPart));
  }
  size_t chunk = (size + parts - 1) / parts;
  chunk = (chunk + 4095) / 4096 * 4096;  // page-sized parts keep the copies aligned
  for (int i = 0; i < nSocks; i++) {
    size_t o = std::min(size, static_cast<size_t>(i) * chunk);
    off[i] = o;
    len[i] = i < parts ? std::min(chunk, size - o) : 0;
  }
}

NetBackend* socketNetBackend() {
  static SocketBackend b;
  return &b;
}

ncclResult_t selectNetBackend(NetBackend** out) {
  const std::string want = params::Net();
  const bool socketAsked = strcasecmp(want.c_str(), "Socket") == 0, ibAsked = strcasecmp(want.c_str(), "IB") == 0;
  // NCCL_NET naming one of Braid's own backends loads no plugin (a plugin's init may set variables of its own).
  static const NetPluginStatus kNone;
  const NetPluginStatus& plugin = socketAsked || ibAsked ? kNone : netPlugin();
  const bool pluginAsked = plugin.net && strcasecmp(want.c_str(), plugin.net->name.c_str()) == 0;
  if (!want.empty() && !socketAsked && !ibAsked && !pluginAsked) {
    return recordError(ncclInvalidArgument, "NCCL_NET=%s: unknown network backend (known: Socket, IB%s%s)%s%s",
                       want.c_str(), plugin.net ? ", " : "", plugin.net ? plugin.net->name.c_str() : "",
                       plugin.net ? "" : "; no network plugin is loaded: ", plugin.net ? "" : plugin.why.c_str());
  }
  // A plugin serves unless NCCL_NET asks for one of Braid's own backends, as NCCL puts plugins first.
  if (plugin.net && (pluginAsked || want.empty())) {
    *out = netPluginBackend(plugin.net);
    return ncclSuccess;
  }
  *out = socketNetBackend();
  if (socketAsked) return ncclSuccess;
  std::string why;
  NetBackend* ib = nullptr;
  if (params::IbDisable() == 1) {
    why = "NCCL_IB_DISABLE=1";
  } else {
    ib = ibNetBackend(&why);
  }
  if (ib) {
    *out = ib;
    return ncclSuccess;
  }
  static std::atomic<bool> said{false};  // communicators may connect on several threads at once
  if (!said.exchange(true)) {
    if (ibAsked) {
      BRAID_WARN("NCCL_NET=IB: the IB verbs backend is not usable (%s); using sockets", why.c_str());
    } else {
      BRAID_INFO(kSubNet | kSubInit, "NET: the IB verbs backend is not usable (%s); using sockets", why.c_str());
    }
  }
  return ncclSuccess;
}

}  // namespace braid