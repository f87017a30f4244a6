// The IB verbs backend of the NET transport (net_backend.h): connection setup and the choice of port. The
// receiver's handle (a TCP address and a nonce) travels over the bootstrap; the sender connects there and sends its
// queue pairs' addresses, the receiver connects its queue pairs to them and answers with its own; the sender then
// connects its queue pairs and confirms (both read in progress, so no side of a ring waits for its peer to reach
// accept). The data path is ib_comm.cc.
#include "transport/net/ib/ib_backend.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "core/socket.h"
#include "core/wait.h"
#include "transport/net/ib/ib_comm.h"
#include "transport/net/ib/ib_devices.h"

namespace braid {

#if BRAID_HAVE_IBVERBS

namespace {

constexpr uint32_t kIbHandleMagic = 0x49425631;  // "IBV1"

struct IbHandle {
  uint32_t magic;
  uint32_t nQps;
  uint64_t nonce;
  SockAddr addr;
};
static_assert(sizeof(IbHandle) <= kNetHandleBytes, "IB handle fits");

uint64_t randomNonce() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<uint64_t>(getpid()) << 32);
  }
  return v;
}

// Setup waits on the peer in slices this long, checking between them that no rank died.
constexpr double kSliceSec = 0.1;

ncclResult_t checkSetupPeers(const NetSetupParams& p, const char* doing) {
  if (p.wait == nullptr || firstDeadPeer(p.wait) < 0) return ncclSuccess;
  ncclResult_t r = checkPeersAlive(p.wait);
  if (r == ncclSuccess) return ncclSuccess;
  std::string inner = pendingError();
  clearPendingError();
  return recordError(r, "NET/IB: %s rank %d: %s", doing, p.peer, inner.c_str());
}

ncclResult_t rewrap(ncclResult_t code, const char* what, int peer) {
  std::string inner = pendingError();
  clearPendingError();
  return recordError(code, "NET/IB: %s rank %d: %s", what, peer, inner.c_str());
}

const IbPort* portOrError(const NetSetupParams& p, ncclResult_t* res) {
  std::string why;
  ibPorts(&why);
  const IbPort* port = ibPortFor(p.gpuBusId);
  if (!port) *res = recordError(ncclSystemError, "NET/IB: no usable RDMA port for rank %d: %s", p.peer, why.c_str());
  return port;
}

class IbListenComm final : public NetListenComm {
 public:
  IbListenComm(Socket listener, uint64_t nonce, int nQps)
      : listener_(std::move(listener)), nonce_(nonce), nQps_(nQps) {}

  ncclResult_t accept(const NetConnIdent& expect, const NetSetupParams& p, std::unique_ptr<NetRecvComm>* out) override {
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(p.timeoutSec));
    ncclResult_t res = ncclSuccess;
    const IbPort* port = portOrError(p, &res);
    if (!port) return res;
    for (;;) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0)
        return recordError(ncclRemoteError, "NET/IB: rank %d did not connect within %.0f s", p.peer, p.timeoutSec);
      Socket s;
      ncclResult_t r = listener_.accept(&s, p.wait ? std::max(0.01, std::min(left, kSliceSec)) : left, p.abortFlag);
      if (r == ncclRemoteError) {
        clearPendingError();
        BRAID_CHECK(checkSetupPeers(p, "waiting for"));
        continue;
      }
      if (r != ncclSuccess) return rewrap(r, "waiting for", p.peer);
      IbPreamble pre{};
      if (s.recvAll(&pre, sizeof(pre), std::min(left, 5.0), p.abortFlag, "the connecting side") != ncclSuccess) {
        if (p.abortFlag && p.abortFlag->load()) return rewrap(ncclInvalidUsage, "setup aborted with", p.peer);
        BRAID_WARN("NET/IB: dropped a connection that sent no valid preamble while waiting for rank %d: %s", p.peer,
                   pendingError().c_str());
        clearPendingError();
        continue;
      }
      const bool ok = pre.magic == kIbSetupMagic && pre.nonce == nonce_ && pre.ident.sendRank == expect.sendRank &&
                      pre.ident.recvRank == expect.recvRank && pre.ident.tag == expect.tag &&
                      pre.qp.nQps == static_cast<uint32_t>(nQps_);
      if (!ok) {
        BRAID_WARN(
            "NET/IB: dropped a connection presenting rank %d -> %d tag %u (expected rank %d -> %d tag %u, "
            "nonce %s)",
            pre.ident.sendRank, pre.ident.recvRank, pre.ident.tag, expect.sendRank, expect.recvRank, expect.tag,
            pre.nonce == nonce_ ? "ok" : "wrong");
        continue;
      }
      return finish(std::move(s), pre, port, p, out);
    }
  }

  void close() override { listener_.close(); }

 private:
  ncclResult_t finish(Socket s, const IbPreamble& pre, const IbPort* port, const NetSetupParams& p,
                      std::unique_ptr<NetRecvComm>* out) {
    IbReply reply{};
    reply.magic = kIbSetupMagic;
    if ((pre.qp.roce != 0) != port->roce) {
      reply.status = 1;
      snprintf(reply.reason, sizeof(reply.reason), "its port %s is %s", port->describe().c_str(),
               port->roce ? "RoCE" : "InfiniBand");
      (void)s.sendAll(&reply, sizeof(reply), 5.0, p.abortFlag, "the connecting side");
      return recordError(ncclSystemError, "NET/IB: rank %d connects over %s, this rank's port %s over %s", p.peer,
                         pre.qp.roce ? "RoCE" : "InfiniBand", port->describe().c_str(),
                         port->roce ? "RoCE" : "InfiniBand");
    }
    std::unique_ptr<IbRecvConn> comm;
    ncclResult_t r = IbRecvConn::create(port, p.peer, nQps_, &comm);
    if (r == ncclSuccess) r = comm->connect(pre.qp);
    if (r != ncclSuccess) {
      reply.status = 2;
      snprintf(reply.reason, sizeof(reply.reason), "the receiving rank could not set up its queue pairs");
      (void)s.sendAll(&reply, sizeof(reply), 5.0, p.abortFlag, "the connecting side");
      return r;
    }
    comm->describe(&reply.qp);
    BRAID_CHECK(s.sendAll(&reply, sizeof(reply), p.timeoutSec, p.abortFlag, "the connecting side") == ncclSuccess
                    ? ncclSuccess
                    : rewrap(ncclRemoteError, "answering", p.peer));
    BRAID_CHECK(s.setNonBlocking(true));
    comm->start(std::move(s));
    listener_.close();
    BRAID_INFO(kSubNet, "NET/IB: receiving from rank %d on %s, %d queue pair(s)", p.peer, port->describe().c_str(),
               nQps_);
    *out = std::move(comm);
    return ncclSuccess;
  }

  Socket listener_;
  uint64_t nonce_;
  int nQps_;
};

class IbBackend final : public NetBackend {
 public:
  bool nicPlace(int64_t gpuBusId, NetNicPlace* out) override {
    const IbPort* port = ibPortFor(gpuBusId);
    if (port == nullptr) return false;
    out->name = port->name;
    out->sysfsDevice = "/sys/class/infiniband/" + port->name + "/device";
    return true;
  }
  const char* name() const override { return "IB"; }

  ncclResult_t listen(NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    IbHandle h{};
    h.magic = kIbHandleMagic;
    h.nQps = static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(kIbMaxQps, params::IbQpsPerConnection())));
    h.nonce = randomNonce();
    std::string ifName;
    BRAID_CHECK(findInterfaceAddr(&h.addr, &ifName));
    Socket listener;
    BRAID_CHECK(listener.listen(&h.addr));
    std::memset(handle, 0, sizeof(*handle));
    std::memcpy(handle->data, &h, sizeof(h));
    out->reset(new IbListenComm(std::move(listener), h.nonce, static_cast<int>(h.nQps)));
    return ncclSuccess;
  }

  ncclResult_t connect(const NetHandle& handle, const NetConnIdent& ident, const NetSetupParams& p,
                       std::unique_ptr<NetSendComm>* out) override {
    IbHandle h;
    std::memcpy(&h, handle.data, sizeof(h));
    if (h.magic != kIbHandleMagic || h.nQps < 1 || h.nQps > static_cast<uint32_t>(kIbMaxQps)) {
      return recordError(ncclInternalError,
                         "NET/IB: bad connection handle from rank %d (magic %#x): both sides must "
                         "use the IB backend",
                         p.peer, h.magic);
    }
    ncclResult_t res = ncclSuccess;
    const IbPort* port = portOrError(p, &res);
    if (!port) return res;
    std::unique_ptr<IbSendConn> comm;
    BRAID_CHECK(IbSendConn::create(port, p.peer, static_cast<int>(h.nQps), &comm));
    Socket s;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      ncclResult_t r = s.connect(h.addr, p.wait ? kSliceSec : p.timeoutSec, p.abortFlag);
      if (r == ncclSuccess) break;
      if (r != ncclRemoteError || p.wait == nullptr) return rewrap(r, "cannot connect to", p.peer);
      clearPendingError();
      BRAID_CHECK(checkSetupPeers(p, "connecting to"));
      // The listener exists before the handle leaves the receiver: refusals end when it accepts.
      if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(p.timeoutSec)) {
        return recordError(ncclRemoteError, "NET/IB: could not connect to rank %d within %.0f s", p.peer, p.timeoutSec);
      }
    }
    IbPreamble pre{};
    pre.magic = kIbSetupMagic;
    pre.nonce = h.nonce;
    pre.ident = ident;
    comm->describe(&pre.qp);
    if (s.sendAll(&pre, sizeof(pre), p.timeoutSec, p.abortFlag, "the receiving rank") != ncclSuccess) {
      return rewrap(ncclRemoteError, "sending the queue pairs to", p.peer);
    }
    BRAID_CHECK(s.setNonBlocking(true));
    comm->start(std::move(s), h.nQps);
    BRAID_INFO(kSubNet, "NET/IB: sending to rank %d on %s, %u queue pair(s)", p.peer, port->describe().c_str(), h.nQps);
    *out = std::move(comm);
    return ncclSuccess;
  }
};

}  // namespace

NetBackend* ibNetBackend(std::string* why) {
  std::string reason;
  const std::vector<IbPort>& ports = ibPorts(&reason);
  if (ports.empty()) {
    if (why) *why = reason;
    return nullptr;
  }
  static IbBackend* b = [] {
    const IbGdrSupport g = ibGdrSupport();
    BRAID_INFO(kSubNet | kSubInit,
               "NET/IB: GPUDirect RDMA %s (%s%s%s); GPU data crosses the network through host "
               "memory",
               g.dmabuf || g.peermem ? "is offered by this system" : "is not available",
               g.dmabuf ? "dma-buf" : "no dma-buf", ", ", g.peermem ? "nvidia-peermem" : "no nvidia-peermem");
    return new IbBackend;
  }();
  return b;
}

#else

NetBackend* ibNetBackend(std::string* why) {
  if (why) *why = loadVerbs().why;
  return nullptr;
}

#endif  // BRAID_HAVE_IBVERBS

}  // namespace braid
