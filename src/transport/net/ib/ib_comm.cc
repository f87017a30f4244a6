// One side of an IB connection (ib_comm.h). A connection is 1..16 reliable-connected queue pairs on one completion
// queue per side. Credits: every receive the proxy posts becomes a clear-to-send message (a SEND on queue pair 0)
// carrying the buffer's address, key and size; the sender writes message `seq` only into the buffer of
// clear-to-send `seq`. A message is a 16-byte header {size, flags, seq, parts} RDMA-written into the receiver's
// header slot, then its payload in contiguous parts, part i an RDMA write with immediate data (the sequence number)
// on queue pair i; the header goes first on queue pair 0, so when part 0's completion arrives the header is in
// place. The receiver is done when every part has arrived, the sender when every part has completed. The setup
// socket stays open: its end is how a peer learns that this side failed or vanished.
#include "transport/net/ib/ib_comm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"

namespace braid {

#if BRAID_HAVE_IBVERBS

namespace {

constexpr int kIbMaxRequests = 64;                // messages in flight per direction of a connection
constexpr size_t kIbMinPart = size_t{128} << 10;  // smaller messages stay on queue pair 0
constexpr int kIbCqBatch = 16;
constexpr uint32_t kIbInline = 64;
// wr_id kinds (top byte); the rest carries the sequence number and part, or the buffer index.
constexpr uint64_t kWrCts = 1ull << 56, kWrData = 2ull << 56, kWrHeader = 3ull << 56, kWrKindMask = 0xffull << 56;

struct IbCts {
  uint64_t addr;
  uint32_t rkey;
  uint32_t maxSize;
  uint64_t seq;
};

struct IbHeader {
  uint32_t size;
  uint32_t flags;
  uint32_t seq;
  uint32_t parts;
};

struct IbReq final : NetRequest {
  bool used = false;
  bool done = false;
  char* data = nullptr;
  size_t size = 0;  // send: bytes; recv: bytes received
  size_t maxSize = 0;
  uint32_t flags = 0;
  uint64_t seq = 0;
  int parts = 0;      // send: parts posted; recv: parts the header announces (0: header not seen)
  int partsDone = 0;  // completions (send) or arrivals (recv)
  ibv_mr* mr = nullptr;
};

std::string vformat(const char* fmt, va_list ap) {
  char buf[768];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

// How the transport's error codes map the completion statuses: the peer's side (it did not answer, refused the
// access or the operation) is ncclRemoteError; this side's resources are ncclSystemError.
ncclResult_t codeOfStatus(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_REM_INV_RD_REQ_ERR:
    case IBV_WC_BAD_RESP_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
      return ncclRemoteError;
    default:
      return ncclSystemError;
  }
}

// The queue pairs, completion queue, setup socket and registrations of one side of a connection.
class IbCommBase {
 protected:
  IbCommBase(const IbPort* port, int peer, bool send) : port_(port), dev_(port->dev), peer_(peer), send_(send) {}

  virtual ~IbCommBase() { destroy(); }

  void destroy() {
    const VerbsApi& v = verbs();
    for (ibv_qp* qp : qps_) v.destroyQp(qp);
    qps_.clear();
    if (cq_) {
      if (cqEvents_) v.ackCqEvents(cq_, cqEvents_);  // destroying a queue with unacknowledged events would block
      v.destroyCq(cq_);
    }
    cq_ = nullptr;
    cqEvents_ = 0;
    if (ch_) v.destroyCompChannel(ch_);
    ch_ = nullptr;
    if (kickFd_ >= 0) ::close(kickFd_);
    kickFd_ = -1;
    for (ibv_mr* mr : held_) dev_->releaseMr(mr);
    held_.clear();
    ctrlMr_ = nullptr;
    free(ctrl_);
    ctrl_ = nullptr;
    sock_.close();
  }

  ncclResult_t fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    if (!failed_) {
      va_list ap;
      va_start(ap, fmt);
      const std::string what = vformat(fmt, ap);
      va_end(ap);
      failed_ = true;
      failCode_ = code;
      char head[256];
      snprintf(head, sizeof(head), "NET/IB: %s:%d, %s rank %d: ", port_->name.c_str(), port_->port,
               send_ ? "sending to" : "receiving from", peer_);
      failMsg_ = head + what;
      // The peer may be waiting on this connection with nothing in flight that could fail on its side: the
      // setup socket's end tells it.
      if (sock_.valid()) shutdown(sock_.fd(), SHUT_RDWR);
    }
    return recordError(failCode_, "%s", failMsg_.c_str());
  }
  ncclResult_t checkFailed() { return failed_ ? recordError(failCode_, "%s", failMsg_.c_str()) : ncclSuccess; }

  // A port that went down fails every connection on it.
  ncclResult_t checkPort() {
    if ((++portChecks_ & 255) == 0) dev_->pollAsyncEvents();
    std::string why;
    if (dev_->portDown(port_->port, &why)) return fail(ncclSystemError, "%s", why.c_str());
    return ncclSuccess;
  }

  ncclResult_t createQps(int nQps, int recvDepth) {
    const VerbsApi& v = verbs();
    nQps_ = nQps;
    const int cqe = kIbMaxRequests * (3 * nQps + 2) + 64;
    // A completion channel lets arriving work wake the proxy thread; without one the connection is only polled.
    ch_ = v.createCompChannel(dev_->ctx());
    if (ch_) {
      const int fl = fcntl(ch_->fd, F_GETFL);
      kickFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (fl < 0 || fcntl(ch_->fd, F_SETFL, fl | O_NONBLOCK) != 0 || kickFd_ < 0) {
        v.destroyCompChannel(ch_);
        ch_ = nullptr;
      }
    }
    cq_ = v.createCq(dev_->ctx(), cqe, nullptr, ch_, 0);
    if (!cq_) return fail(ncclSystemError, "cannot create a completion queue of %d entries: %s", cqe, strerror(errno));
    for (int i = 0; i < nQps; i++) {
      ibv_qp_init_attr a{};
      a.send_cq = cq_;
      a.recv_cq = cq_;
      a.qp_type = IBV_QPT_RC;
      a.cap.max_send_wr = 2 * kIbMaxRequests + 8;
      a.cap.max_recv_wr = recvDepth + 8;
      a.cap.max_send_sge = 1;
      a.cap.max_recv_sge = 1;
      a.cap.max_inline_data = kIbInline;
      ibv_qp* qp = v.createQp(dev_->pd(), &a);
      if (!qp) return fail(ncclSystemError, "cannot create queue pair %d: %s", i, strerror(errno));
      qps_.push_back(qp);
      ibv_qp_attr m{};
      m.qp_state = IBV_QPS_INIT;
      m.pkey_index = static_cast<uint16_t>(params::IbPkey());  // 0-65535, checked at init
      m.port_num = static_cast<uint8_t>(port_->port);
      m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
      const int r = v.modifyQp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      if (r) return fail(ncclSystemError, "queue pair %d to INIT: %s", i, strerror(r));
    }
    return ncclSuccess;
  }

  void describeQps(IbQpInfo* info) const {
    std::memset(info, 0, sizeof(*info));
    info->nQps = static_cast<uint32_t>(nQps_);
    info->mtu = port_->mtu;
    info->lid = port_->lid;
    info->roce = port_->roce ? 1 : 0;
    for (int i = 0; i < nQps_; i++) info->qpn[i] = qps_[i]->qp_num;
    std::memcpy(info->gid, port_->gid.raw, 16);
  }

  // INIT -> RTR -> RTS against the peer's queue pairs (same count, same link layer: checked by the caller).
  ncclResult_t connectQps(const IbQpInfo& remote) {
    const VerbsApi& v = verbs();
    const int64_t timeout = std::max<int64_t>(1, std::min<int64_t>(31, params::IbTimeout()));
    const int64_t retry = std::max<int64_t>(0, std::min<int64_t>(7, params::IbRetryCnt()));
    for (int i = 0; i < nQps_; i++) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_RTR;
      a.path_mtu = static_cast<ibv_mtu>(std::min<uint32_t>(port_->mtu, remote.mtu));
      a.dest_qp_num = remote.qpn[i];
      a.rq_psn = 0;
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 12;
      a.ah_attr.port_num = static_cast<uint8_t>(port_->port);
      a.ah_attr.sl = static_cast<uint8_t>(params::IbSl());  // 0-15, checked at init (checkTransportParams)
      if (port_->roce) {
        a.ah_attr.is_global = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, 16);
        a.ah_attr.grh.sgid_index = static_cast<uint8_t>(port_->gidIndex);
        a.ah_attr.grh.hop_limit = 255;
        a.ah_attr.grh.traffic_class = static_cast<uint8_t>(params::IbTc());  // 0-255, checked at init
      } else {
        a.ah_attr.dlid = remote.lid;
      }
      int r = v.modifyQp(qps_[i], &a,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      if (r) return fail(ncclSystemError, "queue pair %d to RTR (peer QP %u): %s", i, remote.qpn[i], strerror(r));
      ibv_qp_attr s{};
      s.qp_state = IBV_QPS_RTS;
      s.sq_psn = 0;
      s.timeout = static_cast<uint8_t>(timeout);
      s.retry_cnt = static_cast<uint8_t>(retry);
      s.rnr_retry = 7;
      s.max_rd_atomic = 1;
      r = v.modifyQp(qps_[i], &s,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC);
      if (r) return fail(ncclSystemError, "queue pair %d to RTS: %s", i, strerror(r));
    }
    return ncclSuccess;
  }

  // Page-aligned control memory (clear-to-send buffers or header slots), registered.
  ncclResult_t allocCtrl(size_t bytes) {
    if (posix_memalign(&ctrl_, 4096, bytes) != 0) {
      ctrl_ = nullptr;
      return fail(ncclSystemError, "cannot allocate %zu bytes of control memory", bytes);
    }
    std::memset(ctrl_, 0, bytes);
    BRAID_CHECK(holdMr(ctrl_, bytes, &ctrlMr_));
    return ncclSuccess;
  }

  // A registration covering [p, p + len), taken from the ones this comm holds, else from the device's cache.
  ncclResult_t holdMr(const void* p, size_t len, ibv_mr** out) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (ibv_mr* mr : held_) {
      const auto s = reinterpret_cast<uintptr_t>(mr->addr);
      if (a >= s && a + len <= s + mr->length) {
        *out = mr;
        return ncclSuccess;
      }
    }
    if (dev_->acquireMr(const_cast<void*>(p), len, out) != ncclSuccess) {
      std::string inner = pendingError();
      clearPendingError();
      return fail(ncclSystemError, "%s", inner.c_str());
    }
    held_.push_back(*out);
    return ncclSuccess;
  }

  int qpIndex(uint32_t qpNum) const {
    for (int i = 0; i < nQps_; i++) {
      if (qps_[i]->qp_num == qpNum) return i;
    }
    return -1;
  }

  ncclResult_t postRecvs(int qp, int n, uint64_t wrBase, char* buf, uint32_t bufBytes) {
    for (int i = 0; i < n; i++)
      BRAID_CHECK(postRecv(qp, wrBase + static_cast<uint64_t>(i), buf ? buf + i * bufBytes : nullptr, bufBytes));
    return ncclSuccess;
  }

  ncclResult_t postRecv(int qp, uint64_t wrId, char* buf, uint32_t bytes) {
    ibv_sge sge{};
    ibv_recv_wr wr{};
    wr.wr_id = wrId;
    if (buf) {
      sge.addr = reinterpret_cast<uintptr_t>(buf);
      sge.length = bytes;
      sge.lkey = ctrlMr_->lkey;
      wr.sg_list = &sge;
      wr.num_sge = 1;
    }
    ibv_recv_wr* bad = nullptr;
    const int r = verbs().postRecv(qps_[qp], &wr, &bad);
    if (r) return fail(ncclSystemError, "posting a receive on queue pair %d: %s", qp, strerror(r));
    return ncclSuccess;
  }

  ncclResult_t failCompletion(const ibv_wc& wc) {
    // A port that went down fails the work in flight on it: report the cause, not the symptom.
    dev_->pollAsyncEvents();
    BRAID_CHECK(checkPort());
    const int qp = qpIndex(wc.qp_num);
    const char* op = (wc.wr_id & kWrKindMask) == kWrCts      ? "clear-to-send"
                     : (wc.wr_id & kWrKindMask) == kWrData   ? "RDMA write"
                     : (wc.wr_id & kWrKindMask) == kWrHeader ? "header write"
                                                             : "receive";
    const char* why = verbs().wcStatusStr ? verbs().wcStatusStr(wc.status) : "error";
    std::string hint;
    if (wc.status == IBV_WC_RETRY_EXC_ERR) {
      hint = "; the peer did not acknowledge within NCCL_IB_RETRY_CNT=" + std::to_string(params::IbRetryCnt()) +
             " retries of NCCL_IB_TIMEOUT=" + std::to_string(params::IbTimeout()) + ": it is gone or unreachable";
    } else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      hint = "; the queue pair is in the error state (an earlier operation on the connection failed)";
    }
    return fail(codeOfStatus(wc.status), "%s on queue pair %d failed: %s (status %d, vendor error %#x)%s", op, qp, why,
                static_cast<int>(wc.status), wc.vendor_err, hint.c_str());
  }

  // Polls the completion queue, handing each successful completion to onWc; a failed one fails the comm.
  // *handled (may be null) counts them.
  template <typename OnWc>
  ncclResult_t pollCq(OnWc onWc, int* handled = nullptr) {
    BRAID_CHECK(checkFailed());
    BRAID_CHECK(checkPort());
    ibv_wc wcs[kIbCqBatch];
    for (;;) {
      const int n = verbs().pollCq(cq_, kIbCqBatch, wcs);
      if (n < 0) return fail(ncclSystemError, "polling the completion queue failed (%d)", n);
      if (handled) *handled += n;
      for (int i = 0; i < n; i++) {
        if (wcs[i].status != IBV_WC_SUCCESS) return failCompletion(wcs[i]);
        BRAID_CHECK(onWc(wcs[i]));
      }
      if (n < kIbCqBatch) return ncclSuccess;
    }
  }

  virtual ncclResult_t drainCq(int* handled) = 0;

  // The setup socket (a peer that closes it), the device's async events, and the completion channel, armed here:
  // completions that came before the arming signal nothing, so they are taken now, and the kick descriptor (ready
  // at once) makes the proxy come back for what they finished.
  void pollFdsBase(std::vector<pollfd>* fds) {
    fds->push_back(pollfd{sock_.fd(), POLLIN, 0});
    fds->push_back(pollfd{dev_->asyncFd(), POLLIN, 0});
    int chFd = -1;
    if (ch_ && !failed_ && verbs().reqNotifyCq(cq_, 0) == 0) {
      chFd = ch_->fd;
      int handled = 0;
      if (drainCq(&handled) != ncclSuccess) clearPendingError();  // sticky: pollResult reports it
      if (handled > 0 || failed_) {
        const uint64_t one = 1;
        ssize_t r = write(kickFd_, &one, sizeof(one));
        (void)r;
      }
    }
    fds->push_back(pollfd{chFd, POLLIN, 0});
    fds->push_back(pollfd{chFd >= 0 ? kickFd_ : -1, POLLIN, 0});
  }

  // The rest of the setup, after connect/accept returned: the sender reads the receiver's queue pairs and confirms;
  // the receiver reads the confirmation. Nonblocking: called from progress until ready_.
  ncclResult_t pumpHandshake(char* buf, size_t bytes) {
    while (hsGot_ < bytes) {
      const ssize_t r = recv(sock_.fd(), buf + hsGot_, bytes - hsGot_, MSG_DONTWAIT);
      if (r > 0) {
        hsGot_ += static_cast<size_t>(r);
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ncclSuccess;
      return fail(ncclRemoteError, "rank %d closed the connection during setup%s", peer_,
                  r < 0 ? (std::string(": ") + strerror(errno)).c_str() : "");
    }
    return ncclSuccess;
  }

  virtual ncclResult_t advanceHandshake() = 0;

  ncclResult_t pollResultBase(const pollfd* fds, size_t n, bool midMessage) {
    if (n >= 4 && ch_ && (fds[2].revents & POLLIN)) {
      ibv_cq* cq = nullptr;
      void* ctx = nullptr;
      while (verbs().getCqEvent(ch_, &cq, &ctx) == 0) cqEvents_++;
      if (cqEvents_ >= 256) {
        verbs().ackCqEvents(cq_, cqEvents_);
        cqEvents_ = 0;
      }
    }
    if (n >= 4 && kickFd_ >= 0 && (fds[3].revents & POLLIN)) {
      uint64_t v;
      ssize_t r = read(kickFd_, &v, sizeof(v));
      (void)r;
    }
    BRAID_CHECK(checkFailed());
    if (n >= 2 && (fds[1].revents & POLLIN)) {
      dev_->pollAsyncEvents();
      BRAID_CHECK(checkPort());
    }
    if (n >= 1 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (!ready_) {
        BRAID_CHECK(advanceHandshake());
        if (!ready_) return ncclSuccess;
      }
      char b;
      const ssize_t r = recv(sock_.fd(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        return fail(ncclRemoteError, "rank %d closed the connection%s", peer_,
                    midMessage ? ", in the middle of a message" : "");
      }
      if (r > 0) return fail(ncclRemoteError, "rank %d sent data on the setup socket (protocol error)", peer_);
    }
    return ncclSuccess;
  }

  const IbPort* port_;
  IbDevice* dev_;
  int peer_;
  bool send_;
  Socket sock_;
  ibv_cq* cq_ = nullptr;
  ibv_comp_channel* ch_ = nullptr;  // null: polled only
  unsigned cqEvents_ = 0;           // channel events not yet acknowledged
  int kickFd_ = -1;
  std::vector<ibv_qp*> qps_;
  int nQps_ = 0;
  void* ctrl_ = nullptr;
  ibv_mr* ctrlMr_ = nullptr;
  std::vector<ibv_mr*> held_;
  IbReq reqs_[kIbMaxRequests];
  uint64_t posted_ = 0;
  uint32_t portChecks_ = 0;
  bool ready_ = false;  // both sides' queue pairs are in RTS: clear-to-sends may go out
  size_t hsGot_ = 0;    // handshake bytes read
  bool failed_ = false;
  ncclResult_t failCode_ = ncclSuccess;
  std::string failMsg_;
};

ncclResult_t testReq(IbReq* r, bool* done, size_t* size, uint32_t* flags) {
  *done = r->done;
  if (r->done) {
    if (size) *size = r->size;
    if (flags) *flags = r->flags;
    r->used = false;
  }
  return ncclSuccess;
}

class IbSendComm final : public IbSendConn, IbCommBase {
 public:
  IbSendComm(const IbPort* port, int peer) : IbCommBase(port, peer, true) {}
  ~IbSendComm() override = default;
  void describe(IbQpInfo* info) const override { describeQps(info); }
  void start(Socket s, uint32_t nQps) override {
    sock_ = std::move(s);
    expectQps_ = nQps;
  }

  // Queue pairs in INIT with the clear-to-send receives posted: ready for the receiver's first one.
  ncclResult_t init(int nQps) {
    BRAID_CHECK(createQps(nQps, kIbMaxRequests));
    BRAID_CHECK(allocCtrl(sizeof(IbCts) * kIbMaxRequests));
    return postRecvs(0, kIbMaxRequests, kWrCts, static_cast<char*>(ctrl_), sizeof(IbCts));
  }

  ncclResult_t isend(const void* data, size_t size, uint32_t flags, NetRequest** req) override {
    *req = nullptr;
    BRAID_CHECK(checkFailed());
    if (size > UINT32_MAX) return fail(ncclInternalError, "message of %zu bytes too large", size);
    IbReq* r = &reqs_[posted_ % kIbMaxRequests];
    if (r->used) return ncclSuccess;
    *r = IbReq();
    r->used = true;
    r->data = static_cast<char*>(const_cast<void*>(data));
    r->size = size;
    r->flags = flags;
    r->seq = posted_++;
    if (size > 0) BRAID_CHECK(holdMr(data, size, &r->mr));
    *req = r;
    return progress();
  }

  ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) override {
    auto* r = static_cast<IbReq*>(req);
    if (!r->done) {
      ncclResult_t res = progress();
      if (res != ncclSuccess && !r->done) return res;
      if (res != ncclSuccess) clearPendingError();  // sticky: the next test reports it
    }
    return testReq(r, done, size, flags);
  }

  void pollFds(std::vector<pollfd>* fds) override { pollFdsBase(fds); }
  ncclResult_t pollResult(const pollfd* fds, size_t n) override {
    return pollResultBase(fds, n, written_ > completed_);
  }
  ncclResult_t drainCq(int* handled) override {
    return pollCq([this](const ibv_wc& wc) { return onCompletion(wc); }, handled);
  }
  ncclResult_t registerBuffer(void* data, size_t bytes) override {
    ibv_mr* mr = nullptr;
    return bytes ? holdMr(data, bytes, &mr) : ncclSuccess;
  }
  void close() override { destroy(); }

 private:
  ncclResult_t advanceHandshake() override {
    if (ready_) return ncclSuccess;
    BRAID_CHECK(pumpHandshake(reinterpret_cast<char*>(&reply_), sizeof(reply_)));
    if (hsGot_ < sizeof(reply_)) return ncclSuccess;
    if (reply_.magic != kIbSetupMagic)
      return fail(ncclRemoteError, "bad answer to the connection request (protocol error)");
    if (reply_.status != 0) {
      reply_.reason[sizeof(reply_.reason) - 1] = '\0';
      return fail(ncclSystemError, "rank %d refused the connection: %s", peer_, reply_.reason);
    }
    if (reply_.qp.nQps != expectQps_ || (reply_.qp.roce != 0) != port_->roce) {
      return fail(ncclSystemError, "rank %d answered with %u queue pairs over %s (expected %u over %s)", peer_,
                  reply_.qp.nQps, reply_.qp.roce ? "RoCE" : "InfiniBand", expectQps_,
                  port_->roce ? "RoCE" : "InfiniBand");
    }
    BRAID_CHECK(connectQps(reply_.qp));
    headerAddr_ = reply_.qp.headerAddr;
    headerRkey_ = reply_.qp.headerRkey;
    // Eight bytes into an idle socket's buffer: a short wait at most.
    const uint64_t ready = kIbSetupMagic;
    const ncclResult_t r = sock_.sendAll(&ready, sizeof(ready), 10.0, nullptr, "the receiving rank");
    if (r != ncclSuccess) {
      std::string inner = pendingError();
      clearPendingError();
      return fail(ncclRemoteError, "confirming the connection: %s", inner.c_str());
    }
    ready_ = true;
    return ncclSuccess;
  }

  ncclResult_t progress() {
    BRAID_CHECK(checkFailed());
    if (!ready_) {
      BRAID_CHECK(advanceHandshake());
      if (!ready_) return ncclSuccess;
    }
    BRAID_CHECK(pollCq([this](const ibv_wc& wc) { return onCompletion(wc); }));
    while (written_ < posted_ && written_ < ctsCount_) BRAID_CHECK(write(&reqs_[written_ % kIbMaxRequests]));
    return ncclSuccess;
  }

  ncclResult_t onCompletion(const ibv_wc& wc) {
    const uint64_t kind = wc.wr_id & kWrKindMask;
    if (kind == kWrCts) {
      const int i = static_cast<int>(wc.wr_id & 0xffff);
      const auto* c = static_cast<const IbCts*>(ctrl_) + i;
      if (i >= kIbMaxRequests || wc.byte_len != sizeof(IbCts) || c->seq != ctsCount_) {
        return fail(ncclRemoteError, "clear-to-send %llu of %u bytes out of order (expected %llu; protocol error)",
                    static_cast<unsigned long long>(c->seq), wc.byte_len, static_cast<unsigned long long>(ctsCount_));
      }
      cts_[ctsCount_ % kIbMaxRequests] = *c;
      ctsCount_++;
      return postRecv(0, wc.wr_id, reinterpret_cast<char*>(ctrl_) + i * sizeof(IbCts), sizeof(IbCts));
    }
    if (kind == kWrData) {
      const uint64_t seq = (wc.wr_id & ~kWrKindMask) >> 8;
      IbReq* r = &reqs_[seq % kIbMaxRequests];
      if (!r->used || r->seq != seq)
        return fail(ncclInternalError, "completion for unknown message %llu", static_cast<unsigned long long>(seq));
      if (++r->partsDone == r->parts) {
        r->done = true;
        completed_++;
      }
    }
    return ncclSuccess;
  }

  ncclResult_t write(IbReq* r) {
    const IbCts& c = cts_[r->seq % kIbMaxRequests];
    if (r->size > c.maxSize) {
      return fail(ncclInternalError, "message %llu of %zu bytes exceeds the receive of %u bytes posted for it",
                  static_cast<unsigned long long>(r->seq), r->size, c.maxSize);
    }
    int parts = 1;
    if (nQps_ > 1 && r->size >= 2 * kIbMinPart) parts = static_cast<int>(std::min<size_t>(nQps_, r->size / kIbMinPart));
    size_t chunk = (r->size + parts - 1) / parts;
    chunk = (chunk + 4095) / 4096 * 4096;
    parts = r->size == 0 ? 1 : static_cast<int>((r->size + chunk - 1) / chunk);
    r->parts = parts;
    header_ =
        IbHeader{static_cast<uint32_t>(r->size), r->flags, static_cast<uint32_t>(r->seq), static_cast<uint32_t>(parts)};
    // The header, inline and unsignaled, ahead of part 0 on queue pair 0.
    ibv_sge hs{reinterpret_cast<uintptr_t>(&header_), sizeof(IbHeader), 0};
    ibv_send_wr hw{};
    hw.wr_id = kWrHeader | (r->seq << 8);
    hw.sg_list = &hs;
    hw.num_sge = 1;
    hw.opcode = IBV_WR_RDMA_WRITE;
    hw.send_flags = IBV_SEND_INLINE;
    hw.wr.rdma.remote_addr = headerAddr_ + (r->seq % kIbMaxRequests) * sizeof(IbHeader);
    hw.wr.rdma.rkey = headerRkey_;
    BRAID_CHECK(post(0, &hw));
    for (int i = 0; i < parts; i++) {
      const size_t off = static_cast<size_t>(i) * chunk;
      const size_t len = std::min(chunk, r->size - std::min(r->size, off));
      ibv_sge s{reinterpret_cast<uintptr_t>(r->data + off), static_cast<uint32_t>(len), r->mr ? r->mr->lkey : 0};
      ibv_send_wr w{};
      w.wr_id = kWrData | (r->seq << 8) | static_cast<uint64_t>(i);
      w.sg_list = len ? &s : nullptr;
      w.num_sge = len ? 1 : 0;
      w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      w.send_flags = IBV_SEND_SIGNALED;
      w.imm_data = htonl(static_cast<uint32_t>(r->seq));
      w.wr.rdma.remote_addr = c.addr + off;
      w.wr.rdma.rkey = c.rkey;
      BRAID_CHECK(post(i, &w));
    }
    written_++;
    return ncclSuccess;
  }

  ncclResult_t post(int qp, ibv_send_wr* wr) {
    ibv_send_wr* bad = nullptr;
    const int r = verbs().postSend(qps_[qp], wr, &bad);
    if (r) return fail(ncclSystemError, "posting an RDMA write on queue pair %d: %s", qp, strerror(r));
    return ncclSuccess;
  }

  IbCts cts_[kIbMaxRequests] = {};
  uint64_t ctsCount_ = 0;   // clear-to-sends received
  uint64_t written_ = 0;    // messages whose writes are posted
  uint64_t completed_ = 0;  // messages whose writes completed
  uint64_t headerAddr_ = 0;
  uint32_t headerRkey_ = 0;
  IbHeader header_{};  // inline: copied at post time
  IbReply reply_{};
  uint32_t expectQps_ = 0;
};

class IbRecvComm final : public IbRecvConn, IbCommBase {
 public:
  IbRecvComm(const IbPort* port, int peer) : IbCommBase(port, peer, false) {}
  ~IbRecvComm() override = default;
  void describe(IbQpInfo* info) const override {
    describeQps(info);
    info->headerAddr = reinterpret_cast<uintptr_t>(ctrl_);
    info->headerRkey = ctrlMr_->rkey;
  }
  ncclResult_t connect(const IbQpInfo& remote) override { return connectQps(remote); }
  void start(Socket s) override { sock_ = std::move(s); }

  // Queue pairs in INIT with a receive per possible message posted on each (writes with immediate data consume
  // them), and the header slots registered.
  ncclResult_t init(int nQps) {
    BRAID_CHECK(createQps(nQps, kIbMaxRequests));
    BRAID_CHECK(allocCtrl(sizeof(IbHeader) * kIbMaxRequests));
    for (int q = 0; q < nQps; q++) BRAID_CHECK(postRecvs(q, kIbMaxRequests, kWrData, nullptr, 0));
    return ncclSuccess;
  }

  ncclResult_t irecv(void* data, size_t maxSize, NetRequest** req) override {
    *req = nullptr;
    BRAID_CHECK(checkFailed());
    IbReq* r = &reqs_[posted_ % kIbMaxRequests];
    if (r->used) return ncclSuccess;
    if (maxSize > UINT32_MAX) maxSize = UINT32_MAX;
    *r = IbReq();
    r->used = true;
    r->data = static_cast<char*>(data);
    r->maxSize = maxSize;
    r->seq = posted_;
    if (maxSize > 0) BRAID_CHECK(holdMr(data, maxSize, &r->mr));
    posted_++;
    *req = r;
    return postCts();
  }

  ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) override {
    auto* r = static_cast<IbReq*>(req);
    if (!r->done) {
      ncclResult_t res = postCts();
      if (res == ncclSuccess && ready_) res = pollCq([this](const ibv_wc& wc) { return onCompletion(wc); });
      if (res != ncclSuccess && !r->done) return res;
      if (res != ncclSuccess) clearPendingError();
    }
    return testReq(r, done, size, flags);
  }

  void pollFds(std::vector<pollfd>* fds) override { pollFdsBase(fds); }
  ncclResult_t pollResult(const pollfd* fds, size_t n) override { return pollResultBase(fds, n, partial_ > 0); }
  ncclResult_t drainCq(int* handled) override {
    return pollCq([this](const ibv_wc& wc) { return onCompletion(wc); }, handled);
  }
  ncclResult_t registerBuffer(void* data, size_t bytes) override {
    ibv_mr* mr = nullptr;
    return bytes ? holdMr(data, bytes, &mr) : ncclSuccess;
  }
  void close() override { destroy(); }

 private:
  ncclResult_t advanceHandshake() override {
    if (ready_) return ncclSuccess;
    BRAID_CHECK(pumpHandshake(reinterpret_cast<char*>(&readyWord_), sizeof(readyWord_)));
    if (hsGot_ < sizeof(readyWord_)) return ncclSuccess;
    if (readyWord_ != kIbSetupMagic) return fail(ncclRemoteError, "bad connection confirmation (protocol error)");
    ready_ = true;
    return postCts();
  }

  // A clear-to-send for every posted receive that has none yet, once the sender's queue pairs can take them.
  ncclResult_t postCts() {
    if (!ready_) return advanceHandshake();
    for (; ctsPosted_ < posted_; ctsPosted_++) {
      const IbReq* r = &reqs_[ctsPosted_ % kIbMaxRequests];
      IbCts c{reinterpret_cast<uintptr_t>(r->data), r->mr ? r->mr->rkey : 0, static_cast<uint32_t>(r->maxSize), r->seq};
      ibv_sge s{reinterpret_cast<uintptr_t>(&c), sizeof(c), 0};
      ibv_send_wr w{};
      w.wr_id = kWrCts | r->seq;
      w.sg_list = &s;
      w.num_sge = 1;
      w.opcode = IBV_WR_SEND;
      w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
      ibv_send_wr* bad = nullptr;
      const int e = verbs().postSend(qps_[0], &w, &bad);
      if (e) return fail(ncclSystemError, "posting a clear-to-send: %s", strerror(e));
    }
    return ncclSuccess;
  }

  ncclResult_t onCompletion(const ibv_wc& wc) {
    if ((wc.wr_id & kWrKindMask) != kWrData) return ncclSuccess;  // a clear-to-send went out
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
      return fail(ncclRemoteError, "unexpected message (opcode %d) from the peer (protocol error)", wc.opcode);
    }
    const int qp = qpIndex(wc.qp_num);
    BRAID_CHECK(postRecv(qp < 0 ? 0 : qp, kWrData, nullptr, 0));
    const uint32_t seq32 = ntohl(wc.imm_data);
    IbReq* r = &reqs_[seq32 % kIbMaxRequests];
    if (qp < 0 || !r->used || r->done || static_cast<uint32_t>(r->seq) != seq32) {
      return fail(ncclRemoteError, "data for message %u that no receive expects (queue pair %d; protocol error)", seq32,
                  qp);
    }
    if (r->partsDone++ == 0) partial_++;
    if (qp == 0) {
      const IbHeader h = static_cast<const IbHeader*>(ctrl_)[r->seq % kIbMaxRequests];
      if (h.seq != seq32 || h.size > r->maxSize || h.parts < 1 || h.parts > static_cast<uint32_t>(nQps_)) {
        return fail(ncclRemoteError,
                    "bad header for message %u: message %u of %u bytes in %u parts (receive of %zu bytes, %d queue "
                    "pairs; protocol error)",
                    seq32, h.seq, h.size, h.parts, r->maxSize, nQps_);
      }
      r->parts = static_cast<int>(h.parts);
      r->size = h.size;
      r->flags = h.flags;
    }
    if (r->parts > 0 && r->partsDone >= r->parts) {
      if (r->partsDone > r->parts) {
        return fail(ncclRemoteError, "message %u arrived in %d parts, its header says %d (protocol error)", seq32,
                    r->partsDone, r->parts);
      }
      r->done = true;
      partial_--;
    }
    return ncclSuccess;
  }

  int partial_ = 0;  // messages with some parts in
  uint64_t ctsPosted_ = 0;
  uint64_t readyWord_ = 0;
};

}  // namespace

ncclResult_t IbSendConn::create(const IbPort* port, int peer, int nQps, std::unique_ptr<IbSendConn>* out) {
  auto c = std::make_unique<IbSendComm>(port, peer);
  BRAID_CHECK(c->init(nQps));
  *out = std::move(c);
  return ncclSuccess;
}

ncclResult_t IbRecvConn::create(const IbPort* port, int peer, int nQps, std::unique_ptr<IbRecvConn>* out) {
  auto c = std::make_unique<IbRecvComm>(port, peer);
  BRAID_CHECK(c->init(nQps));
  *out = std::move(c);
  return ncclSuccess;
}

#endif  // BRAID_HAVE_IBVERBS

}  // namespace braid
