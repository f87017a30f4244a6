// The NET transport's backend over an NCCL network plugin (net_plugin.h). A plugin's connect() and accept() may
// return before the connection exists and must be called again, and some plugins finish a connect only once the
// peer accepts; ranks connect all their sends before they accept, so setup never waits on the plugin: a comm comes
// back at once and makes its connection in the engine's progress calls, within the setup timeout.
//
// A Braid message carries flags (conn_info.h: end of message, LL, the step's tag) that a plugin message cannot, so
// each goes as two plugin messages on the connection: a 16-byte header (size, flags, sequence) and the payload. The
// receiver posts both receives at once, so they cost one network latency, not two. The first message of a
// connection is the sender's identity (ranks and tag), which the receiver checks before any payload counts.
//
// The engine keeps a connection's nSteps receives posted ahead, and some plugins refuse to close a connection with
// requests outstanding. So a communicator that ends cleanly ends its connections first (NetProxy::settleCloses):
// each sender sends nSteps empty "bye" messages, which match the receives its peer holds, and each receiver takes
// byes until it has nSteps and nothing is outstanding.
#include "transport/net/net_plugin.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/log.h"
#include "core/result.h"
#include "transport/p2p/p2p_level.h"

namespace braid {
namespace {

constexpr uint32_t kIdentMagic = 0x42524944;   // "BRID"
constexpr uint32_t kHeaderMagic = 0x42524844;  // "BRHD"
constexpr uint32_t kByeMagic = 0x42524259;     // "BRBY": an empty message of a clean close (startClose)
constexpr uint64_t kQueue = 64;                // messages in flight per comm
// Plugin requests outstanding per comm at most (NCCL_NET_MAX_REQUESTS): NCCL's own plugins fail a post past it.
constexpr int kMaxPluginRequests = 32;

// A connection's first message (magic, sendRank, recvRank, tag) or a message's header (magic, size, flags, seq).
struct Wire {
  uint32_t magic;
  uint32_t a;
  uint32_t b;
  uint32_t c;
};

using Clock = std::chrono::steady_clock;

std::atomic<uint64_t> gUncleanCloses{0};

// One Braid message: its header's and its payload's plugin requests (the identity has only a header).
struct Msg final : NetRequest {
  void* hdrReq = nullptr;
  void* dataReq = nullptr;
  bool hdrPosted = false;
  bool dataPosted = false;
  bool hdrDone = false;
  bool dataDone = false;
  char* data = nullptr;
  size_t size = 0;  // the payload (send) or the room for it (receive)
  int got = 0;      // bytes the payload's receive reports
};

// What a send and a receive comm share: making the connection, registrations, posting in order, testing, and the
// NetComm calls (Base: NetSendComm or NetRecvComm). A plugin has no descriptor to offer: the engine polls.
template <typename Base>
class PluginConn : public Base {
 public:
  PluginConn(const PluginNet* net, bool send, int peer, int tag, const NetSetupParams& p)
      : net_(net), send_(send), peer_(peer), tag_(tag), wires_(new Wire[kQueue + 1]()) {
    // Without a setup timeout (0: none), the engine still gives up on a connection never made after an hour.
    timeoutSec_ = p.timeoutSec > 0 ? p.timeoutSec : 3600;
    depth_ = static_cast<uint32_t>(std::min<uint64_t>(p.nSteps, kQueue));
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSec_));
  }
  ~PluginConn() override { shut(); }

  void pollFds(std::vector<pollfd>*) override {}
  ncclResult_t pollResult(const pollfd*, size_t) override { return failed_ == ncclSuccess ? ncclSuccess : sticky(); }
  ncclResult_t registerBuffer(void* data, size_t bytes) override {
    if (bytes == 0) return ncclSuccess;
    regions_.push_back(Region{static_cast<char*>(data), bytes, nullptr});
    return comm_ ? reg(&regions_.back()) : ncclSuccess;
  }
  // Polled while the connection is being made and while sends are in flight (a refused send post is one);
  // receives, posted or refused, move when the executor next asks for them (a launch or a host executor's wait
  // drives the engine then), so an idle communicator's thread may block.
  bool needsPolling() const override {
    return !closed_ && failed_ == ncclSuccess && recvFailure_ == ncclSuccess && (!comm_ || (send_ && head_ != tail_));
  }
  ncclResult_t advance() override { return pump(); }
  void close() override { shut(); }

  void shut() {
    if (closed_) return;
    closed_ = true;
    if (comm_) {
      for (Region& r : regions_)
        if (r.mh) net_->deregMr(comm_, r.mh);
      if (wireMh_) net_->deregMr(comm_, wireMh_);
      const ncclResult_t r = send_ ? net_->closeSend(comm_) : net_->closeRecv(comm_);
      if (r != ncclSuccess) {  // e.g. a plugin that refuses a close with requests outstanding: it keeps the comm
        gUncleanCloses.fetch_add(1, std::memory_order_relaxed);
        BRAID_INFO(kSubNet, "NET/%s: the plugin refused to close the connection %s rank %d (%s)", net_->name.c_str(),
                   send_ ? "to" : "from", peer_, ncclGetErrorString(r));
      }
      comm_ = nullptr;
    }
    listen_.reset();
  }

 protected:
  struct Region {
    char* base;
    size_t bytes;
    void* mh;
  };

  // Makes the connection (connect or accept, which a plugin may need called many times), then registers memory
  // and posts the identity. Without a connection yet, returns ncclSuccess with comm_ still null.
  virtual ncclResult_t establish(void** comm) = 0;

  // remote: a call on the connection (connect, accept, isend, irecv, test), whose system or remote error is the
  // network's or the peer's: ncclRemoteError, naming the peer. A local call's (regMr: a memlock limit) keeps its code.
  ncclResult_t fail(ncclResult_t r, const char* what, bool remote = true) {
    if (failed_ != ncclSuccess) return failed_;
    failed_ = remote && (r == ncclSystemError || r == ncclRemoteError) ? ncclRemoteError : r;
    // A receive that fails before any byte of its message came is how a plugin shows the sender closing, which ends
    // every communicator (its receives are posted ahead): worded as the socket backend's clean close, so the engine
    // fails only this connection. An executor that still needs it gets this message.
    if (failed_ == ncclRemoteError && !send_ && (head_ == tail_ || !msgs_[head_ % kQueue].hdrDone))
      return recordError(failed_, "NET/%s: rank %d closed the connection, or it failed between messages (%s: %s)",
                         net_->name.c_str(), peer_, what, ncclGetErrorString(r));
    return recordError(failed_, "NET/%s: %s failed (%s) on the connection %s rank %d", net_->name.c_str(), what,
                       ncclGetErrorString(r), send_ ? "to" : "from", peer_);
  }
  // A clean end that cannot finish (the connection failed): closed as it is, its message not left for the caller.
  static bool gaveUp() {
    clearPendingError();
    return true;
  }
  ncclResult_t sticky() {
    return recordError(failed_, "NET/%s: the connection %s rank %d failed earlier", net_->name.c_str(),
                       send_ ? "to" : "from", peer_);
  }

  ncclResult_t reg(Region* r) {
    const ncclResult_t res = net_->regMr(comm_, r->base, r->bytes, &r->mh);
    return res == ncclSuccess ? ncclSuccess : fail(res, "registering memory (regMr)", false);
  }

  // The registration holding [p, p + n), or the header slots' for an empty payload.
  void* mhFor(const char* p, size_t n) const {
    if (n == 0) return wireMh_;
    for (const Region& r : regions_)
      if (p >= r.base && p + n <= r.base + r.bytes) return r.mh;
    return nullptr;
  }

  // Everything queued, posted in order (identity; then each message's header and payload) as far as the plugin
  // takes it now. Makes the connection first.
  ncclResult_t pump() {
    if (failed_ != ncclSuccess) return sticky();
    if (recvFailure_ != ncclSuccess) return ncclSuccess;  // nothing more is posted; test() reports it when due
    if (!comm_) {
      void* c = nullptr;
      const ncclResult_t r = establish(&c);
      if (r != ncclSuccess) return failed_ != ncclSuccess ? failed_ : fail(r, send_ ? "connect" : "accept");
      if (!c) {
        if (Clock::now() < deadline_) return ncclSuccess;
        failed_ = ncclRemoteError;
        return recordError(ncclRemoteError, "NET/%s: the connection %s rank %d was not made within %.0f s",
                           net_->name.c_str(), send_ ? "to" : "from", peer_, timeoutSec_);
      }
      comm_ = c;
      listen_.reset();
      const ncclResult_t w = net_->regMr(comm_, wires_.get(), sizeof(Wire) * (kQueue + 1), &wireMh_);
      if (w != ncclSuccess) return fail(w, "registering memory (regMr)", false);
      for (Region& r : regions_) BRAID_CHECK(reg(&r));
      BRAID_INFO(kSubNet, "NET/%s: %s rank %d connected", net_->name.c_str(), send_ ? "send to" : "receive from",
                 peer_);
    }
    if (!ident_.hdrPosted && !post(&ident_, &wires_[kQueue], true)) return failed_;
    for (; postCur_ < tail_; ++postCur_) {
      Msg& m = msgs_[postCur_ % kQueue];
      if (!m.hdrPosted && (inPlugin_ + 2 > kMaxPluginRequests || !post(&m, &wires_[postCur_ % kQueue], true)))
        return failed_;
      if (!m.dataPosted && !post(&m, nullptr, false)) return failed_;
    }
    return ncclSuccess;
  }

  // Posts one part; false where the plugin cannot take it now (or failed: failed_ says).
  bool post(Msg* m, Wire* wire, bool header) {
    void** req = header ? &m->hdrReq : &m->dataReq;
    char* p = header ? reinterpret_cast<char*>(wire) : m->data;
    const size_t n = header ? sizeof(Wire) : m->size;
    void* mh = header ? wireMh_ : mhFor(p, n);
    if (!mh) {
      failed_ = ncclInternalError;
      recordError(ncclInternalError, "NET/%s: %zu bytes at %p for rank %d lie outside the registered memory",
                  net_->name.c_str(), n, static_cast<void*>(p), peer_);
      return false;
    }
    if (n == 0) p = reinterpret_cast<char*>(&wires_[0]);
    const ncclResult_t r =
        send_ ? net_->isend(comm_, p, n, tag_, mh, req) : net_->irecv(comm_, p, n, tag_, mh, req);
    if (r != ncclSuccess) {
      // A receive posted ahead may find the sender gone (it closed after its last message): the messages posted
      // before it may still have come whole, so the failure waits until a message needs this post (recvFailure_).
      if (!send_) {
        recvFailure_ = r;
      } else {
        fail(r, "isend");
      }
      return false;
    }
    if (!*req) return false;
    (header ? m->hdrPosted : m->dataPosted) = true;
    ++inPlugin_;
    return true;
  }

  // Tests m's posted parts, oldest first as NCCL tests (a plugin may move a stream's bytes inside test()): the
  // payload once the header is done. *done once every part it has is done.
  ncclResult_t testMsg(Msg* m, bool hasData, bool* done) {
    int d = 0, size = 0;
    *done = false;
    if (m->hdrPosted && !m->hdrDone) {
      const ncclResult_t r = net_->test(m->hdrReq, &d, &size);
      if (r != ncclSuccess) return fail(r, "test");
      m->hdrDone = d != 0;
      if (m->hdrDone) --inPlugin_;
    }
    if (!m->hdrDone) return ncclSuccess;
    if (hasData && m->dataPosted && !m->dataDone) {
      d = 0;
      const ncclResult_t r = net_->test(m->dataReq, &d, &size);
      if (r != ncclSuccess) return fail(r, "test");
      if (d) {
        m->dataDone = true;
        m->got = size;
        --inPlugin_;
      }
    }
    *done = m->hdrDone && (!hasData || m->dataDone);
    return ncclSuccess;
  }

  // A new message at the queue's tail; null where kQueue are in flight.
  Msg* enqueue(const void* data, size_t size) {
    if (tail_ - head_ >= kQueue) return nullptr;
    Msg* m = &msgs_[tail_ % kQueue];
    *m = Msg{};
    m->data = const_cast<char*>(static_cast<const char*>(data));
    m->size = size;
    ++tail_;
    return m;
  }

  // The oldest message, which test() must be asked about first (the engine completes in posting order).
  ncclResult_t checkOldest(NetRequest* req) {
    if (head_ == tail_ || req != &msgs_[head_ % kQueue]) {
      failed_ = ncclInternalError;
      return recordError(ncclInternalError, "NET/%s: a message to or from rank %d was tested out of order",
                         net_->name.c_str(), peer_);
    }
    return ncclSuccess;
  }

  const PluginNet* net_;
  const bool send_;
  const int peer_;
  const int tag_;  // the sending rank, on both sides (as NCCL tags its messages)
  std::shared_ptr<void> listen_;  // a receive comm's listen comm until it accepts
  void* comm_ = nullptr;
  std::vector<Region> regions_;
  std::unique_ptr<Wire[]> wires_;  // [kQueue]: the messages' headers; [kQueue]: the identity
  void* wireMh_ = nullptr;
  Msg ident_;
  Msg msgs_[kQueue];
  uint64_t head_ = 0, tail_ = 0, postCur_ = 0;
  int inPlugin_ = 0;  // plugin requests posted and not yet tested done
  uint32_t depth_ = 0;     // the receives the engine posts ahead (NetSetupParams::nSteps, at most kQueue): the byes
  bool closing_ = false;   // startClose came: the engine's messages are over
  uint32_t byes_ = 0;      // byes sent (send comm) or taken (receive comm)
  ncclResult_t recvFailure_ = ncclSuccess;  // an irecv's failure, not yet due
  ncclResult_t failed_ = ncclSuccess;
  bool closed_ = false;
  Clock::time_point deadline_;
  double timeoutSec_ = 0;
};

class PluginSendComm final : public PluginConn<NetSendComm> {
 public:
  PluginSendComm(const PluginNet* net, int dev, const NetHandle& handle, const NetConnIdent& ident,
                 const NetSetupParams& p)
      : PluginConn(net, true, p.peer, ident.sendRank, p), dev_(dev), handle_(handle) {
    wires_[kQueue] = Wire{kIdentMagic, static_cast<uint32_t>(ident.sendRank), static_cast<uint32_t>(ident.recvRank),
                          ident.tag};
  }
  ncclResult_t isend(const void* data, size_t size, uint32_t flags, NetRequest** req) override {
    *req = nullptr;
    if (failed_ != ncclSuccess) return sticky();
    if (closing_) return ncclSuccess;
    const uint64_t seq = tail_;
    Msg* m = enqueue(data, size);
    if (!m) return pump();
    wires_[seq % kQueue] = Wire{kHeaderMagic, static_cast<uint32_t>(size), flags, static_cast<uint32_t>(seq)};
    *req = m;
    return pump();
  }

  // Every message has gone (the engine drained its sends): the byes go out. With messages of the engine still in
  // flight the queue stays the engine's, and no bye is sent.
  void startClose() override {
    if (closing_) return;
    closing_ = true;
    byesOwned_ = comm_ && failed_ == ncclSuccess && head_ == tail_;
    if (byesOwned_) queueByes();
  }

  bool closeSettled() override {
    if (!byesOwned_ || failed_ != ncclSuccess) return true;
    queueByes();
    bool d = ident_.hdrDone;
    if (!d && testMsg(&ident_, false, &d) != ncclSuccess) return gaveUp();
    if (!d) return false;
    while (head_ != tail_) {
      if (testMsg(&msgs_[head_ % kQueue], true, &d) != ncclSuccess) return gaveUp();
      if (!d) return false;
      ++head_;
    }
    return byes_ == depth_;
  }

  ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t*) override {
    *done = false;
    BRAID_CHECK(pump());
    BRAID_CHECK(checkOldest(req));
    bool d = ident_.hdrDone;
    if (!d) BRAID_CHECK(testMsg(&ident_, false, &d));
    if (!d) return ncclSuccess;  // the identity went first: tested first
    Msg* m = static_cast<Msg*>(req);
    BRAID_CHECK(testMsg(m, true, &d));
    if (!d) return ncclSuccess;
    ++head_;
    *done = true;
    if (size) *size = m->size;
    return ncclSuccess;
  }

 private:
  // As many byes as the queue takes, up to depth_ in all, then posted as far as the plugin takes them.
  void queueByes() {
    while (byes_ < depth_) {
      const uint64_t seq = tail_;
      if (!enqueue(nullptr, 0)) break;
      wires_[seq % kQueue] = Wire{kByeMagic, 0, 0, static_cast<uint32_t>(seq)};
      ++byes_;
    }
    if (pump() != ncclSuccess) clearPendingError();  // failed_ says it; closeSettled gives up
  }

  bool byesOwned_ = false;  // startClose queued the byes: the queue is the clean end's

  ncclResult_t establish(void** comm) override { return net_->connect(dev_, handle_.data, comm); }
  const int dev_;
  NetHandle handle_;
};

class PluginRecvComm final : public PluginConn<NetRecvComm> {
 public:
  PluginRecvComm(const PluginNet* net, std::shared_ptr<void> listen, const NetConnIdent& expect,
                 const NetSetupParams& p)
      : PluginConn(net, false, p.peer, expect.sendRank, p), expect_(expect) {
    listen_ = std::move(listen);
  }
  ncclResult_t irecv(void* data, size_t maxSize, NetRequest** req) override {
    *req = nullptr;
    if (failed_ != ncclSuccess) return sticky();
    if (closing_) return ncclSuccess;
    *req = enqueue(data, maxSize);
    return pump();
  }

  void startClose() override { closing_ = true; }

  // Takes the byes into the receives outstanding, posting empty ones for any byes beyond them, until depth_ came and
  // nothing is outstanding.
  bool closeSettled() override {
    if (!closing_ || !comm_ || failed_ != ncclSuccess || depth_ == 0) return true;
    bool seen = false;
    if (identity(&seen) != ncclSuccess) return gaveUp();
    if (!seen) return false;
    for (;;) {
      while (byes_ + (tail_ - head_) < depth_ && enqueue(nullptr, 0)) {
      }
      if (pump() != ncclSuccess) return gaveUp();
      if (head_ == tail_) return byes_ >= depth_;
      Msg* m = &msgs_[head_ % kQueue];
      if (recvFailure_ != ncclSuccess && !(m->hdrPosted && m->dataPosted)) return true;  // cannot finish
      bool d = false;
      if (testMsg(m, true, &d) != ncclSuccess) return gaveUp();
      if (!d) return false;
      if (wires_[head_ % kQueue].magic == kByeMagic) ++byes_;
      ++head_;
    }
  }

  ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) override {
    *done = false;
    // The communicator is ending: its executors want nothing more, and closeSettled owns the queue now.
    if (closing_)
      return recordError(ncclRemoteError, "NET/%s: rank %d closed the connection (the communicator ends)",
                         net_->name.c_str(), peer_);
    BRAID_CHECK(pump());
    BRAID_CHECK(checkOldest(req));
    bool seen = false;
    BRAID_CHECK(identity(&seen));
    if (!seen) return ncclSuccess;
    Msg* m = static_cast<Msg*>(req);
    if (recvFailure_ != ncclSuccess && !(m->hdrPosted && m->dataPosted)) return fail(recvFailure_, "irecv");
    bool d = false;
    BRAID_CHECK(testMsg(m, true, &d));
    if (!d) return ncclSuccess;
    const uint64_t seq = head_;
    const Wire& w = wires_[seq % kQueue];
    if (w.magic == kByeMagic && w.c == static_cast<uint32_t>(seq)) {  // the peer's communicator ended first
      ++byes_;
      ++head_;
      return recordError(ncclRemoteError, "NET/%s: rank %d closed the connection", net_->name.c_str(), peer_);
    }
    if (w.magic != kHeaderMagic || w.c != static_cast<uint32_t>(seq) || w.a > m->size ||
        static_cast<int>(w.a) != m->got) {
      failed_ = ncclInternalError;
      return recordError(ncclInternalError,
                         "NET/%s: message %llu from rank %d arrived damaged (header magic %#x, sequence %u, %u bytes; "
                         "%d bytes of payload came, room for %zu)",
                         net_->name.c_str(), static_cast<unsigned long long>(seq), peer_, w.magic, w.c, w.a, m->got,
                         m->size);
    }
    ++head_;
    *done = true;
    if (size) *size = w.a;
    if (flags) *flags = w.b;
    return ncclSuccess;
  }

 private:
  // Tests the identity (the connection's first message) until it came, then checks it: *seen once it did.
  ncclResult_t identity(bool* seen) {
    *seen = identSeen_;
    if (identSeen_) return ncclSuccess;
    if (recvFailure_ != ncclSuccess && !ident_.hdrPosted) return fail(recvFailure_, "irecv");
    bool d = false;
    BRAID_CHECK(testMsg(&ident_, false, &d));
    if (!d) return ncclSuccess;
    const Wire& w = wires_[kQueue];
    if (w.magic != kIdentMagic || static_cast<int>(w.a) != expect_.sendRank ||
        static_cast<int>(w.b) != expect_.recvRank || w.c != expect_.tag) {
      failed_ = ncclInternalError;
      return recordError(ncclInternalError,
                         "NET/%s: the connection from rank %d presents rank %d -> %d tag %u (magic %#x); expected "
                         "rank %d -> %d tag %u: every rank must load the same network plugin",
                         net_->name.c_str(), peer_, static_cast<int>(w.a), static_cast<int>(w.b), w.c, w.magic,
                         expect_.sendRank, expect_.recvRank, expect_.tag);
    }
    identSeen_ = true;
    *seen = true;
    return ncclSuccess;
  }

  ncclResult_t establish(void** comm) override { return net_->accept(listen_.get(), comm); }
  const NetConnIdent expect_;
  bool identSeen_ = false;
};

class PluginListenComm final : public NetListenComm {
 public:
  PluginListenComm(const PluginNet* net, void* lc)
      : net_(net), lc_(lc, [net](void* c) { net->closeListen(c); }) {}
  ncclResult_t accept(const NetConnIdent& expect, const NetSetupParams& p,
                      std::unique_ptr<NetRecvComm>* out) override {
    if (!lc_)
      return recordError(ncclInternalError, "NET/%s: a second accept on one listen comm (rank %d)",
                         net_->name.c_str(), p.peer);
    out->reset(new PluginRecvComm(net_, std::move(lc_), expect, p));
    return ncclSuccess;
  }
  void close() override { lc_.reset(); }

 private:
  const PluginNet* net_;
  std::shared_ptr<void> lc_;  // closed by the last holder: this, or the receive comm until it has accepted
};

class PluginBackend final : public NetBackend {
 public:
  explicit PluginBackend(const PluginNet* net) : net_(net) {}
  const char* name() const override { return net_->name.c_str(); }

  bool nicPlace(int64_t gpuBusId, NetNicPlace* out) override {
    const PluginNet::Device& d = net_->devices[nearest(gpuBusId)];
    if (d.pciPath.empty()) return false;
    out->name = d.name;
    out->sysfsDevice = d.pciPath;
    return true;
  }

  ncclResult_t listen(NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    return listenFor(NetSetupParams{}, handle, out);
  }

  ncclResult_t listenFor(const NetSetupParams& p, NetHandle* handle, std::unique_ptr<NetListenComm>* out) override {
    static_assert(sizeof(handle->data) == netabi::kHandleMaxSize, "a plugin handle fills a NetHandle");
    std::memset(handle, 0, sizeof(*handle));
    void* lc = nullptr;
    const ncclResult_t r = net_->listen(deviceFor(p.gpuBusId), handle->data, &lc);
    if (r != ncclSuccess || !lc)
      return recordError(r == ncclSuccess ? ncclInternalError : r, "NET/%s: listen for rank %d failed (%s)",
                         net_->name.c_str(), p.peer, ncclGetErrorString(r));
    out->reset(new PluginListenComm(net_, lc));
    return ncclSuccess;
  }

  ncclResult_t connect(const NetHandle& handle, const NetConnIdent& ident, const NetSetupParams& p,
                       std::unique_ptr<NetSendComm>* out) override {
    out->reset(new PluginSendComm(net_, deviceFor(p.gpuBusId), handle, ident, p));
    return ncclSuccess;
  }

 private:
  // The plugin device the host topology puts nearest GPU `busId` (matched by name, as the IB backend matches its
  // ports); the first for host communicators and where the topology does not say.
  int deviceFor(int64_t busId) const { return net_->devices[nearest(busId)].index; }
  size_t nearest(int64_t busId) const {
    if (net_->devices.size() <= 1) return 0;
    for (const auto& nic : hostNicsNearestGpu(busId)) {
      for (size_t d = 0; d < net_->devices.size(); ++d)
        if (net_->devices[d].name == nic.first) return d;
    }
    return 0;
  }

  const PluginNet* net_;
};

}  // namespace

std::unique_ptr<NetBackend> makeNetPluginBackend(const PluginNet* net) {
  return std::unique_ptr<NetBackend>(new PluginBackend(net));
}

uint64_t netPluginRefusedCloses() { return gUncleanCloses.load(std::memory_order_relaxed); }

NetBackend* netPluginBackend(const PluginNet* net) {
  static std::mutex mu;
  static std::unique_ptr<NetBackend> backend;
  std::lock_guard<std::mutex> lk(mu);
  if (!backend) backend = makeNetPluginBackend(net);
  return backend.get();
}

}  // namespace braid
