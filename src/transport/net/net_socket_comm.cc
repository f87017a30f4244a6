// The connections of the socket backend. A connection is 1..16 TCP sockets (BRAID_NSOCKS_PERPEER, chosen by the
// receiver). A message is a frame {size, seq} on socket 0 followed by its payload, which is split in contiguous
// parts over the sockets when it is large; every socket carries its parts in message order, so the receiver
// knows each part's place from the size alone. After setup every socket is nonblocking and the proxy thread
// never waits on one connection; large messages may move on the connection's bulk helper.
#include "transport/net/net_socket_comm.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "core/log.h"
#include "core/result.h"
#include "core/socket.h"
#include "core/wait.h"
#include "transport/net/net_socket.h"

namespace braid {

ncclResult_t checkSetupPeers(const NetSetupParams& p, const char* doing) {
  if (p.wait == nullptr || firstDeadPeer(p.wait) < 0) return ncclSuccess;
  ncclResult_t r = checkPeersAlive(p.wait);
  if (r == ncclSuccess) return ncclSuccess;  // it came back: a pid reused between the two looks is not dead
  std::string inner = pendingError();
  clearPendingError();
  return recordError(r, "NET/Socket: %s rank %d: %s", doing, p.peer, inner.c_str());
}

ncclResult_t rewrapError(ncclResult_t code, const char* fmt, int peer) {
  std::string inner = pendingError();
  clearPendingError();
  return recordError(code, fmt, peer, inner.c_str());
}

namespace {

constexpr int kMaxSockRequests = 32;

struct FrameHeader {
  uint32_t size;
  uint32_t seq;    // low bits of the message number: catches a desynchronised stream
  uint32_t flags;  // the sender's isend flags, handed to the receiver's test()
  uint32_t reserved;
};

struct SockRequest final : NetRequest {
  bool used = false;
  std::atomic<bool> done{false};  // set by whichever thread moves the bytes (the proxy's, or the bulk helper)
  bool sized = false;  // recv: header read, parts known (send: always)
  char* data = nullptr;
  size_t size = 0;
  size_t maxSize = 0;
  uint64_t seq = 0;
  FrameHeader hdr{};
  size_t hdrDone = 0;
  int partsLeft = 0;
  size_t partOff[kNetMaxSocks] = {};
  size_t partLen[kNetMaxSocks] = {};
  size_t partDone[kNetMaxSocks] = {};

  void setParts(int nSocks) {
    netSocketPartition(size, nSocks, partOff, partLen);
    partsLeft = 1;  // part 0 always exists: it carries the header
    for (int i = 1; i < nSocks; i++) partsLeft += partLen[i] > 0;
    for (int i = 0; i < nSocks; i++) partDone[i] = 0;
  }
};

bool wouldBlock(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// State shared by both directions: the sockets, the request ring, the sticky failure, and the bulk helper.
// The bulk helper (bulkBytes > 0; GPU communicators): a thread of the connection that moves the bytes of messages
// of at least bulkBytes, so the connection's proxy thread only decides (posts, completes, publishes) while the
// copies of several connections run at once. Whoever moves bytes holds ioMu_; the proxy never waits for it
// (try-lock), and while the helper has the connection (helperBusy_) the proxy leaves the sockets alone and watches
// notifyFd_, which the helper writes when it hands the connection back.
class SocketCommBase {
 protected:
  SocketCommBase(std::shared_ptr<SockSet> set, int peer, size_t bulkBytes)
      : set_(std::move(set)), socks_(set_->socks), peer_(peer), bulkBytes_(bulkBytes) {
    nSocks_ = static_cast<int>(socks_.size());
    for (int i = 0; i < kNetMaxSocks; i++) cur_[i] = 0;
    if (bulkBytes_ > 0) {
      helperFd_ = eventfd(0, EFD_CLOEXEC);
      notifyFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (helperFd_ < 0 || notifyFd_ < 0) bulkBytes_ = 0;  // no helper: the proxy moves everything
    }
  }
  ~SocketCommBase() {
    stopHelper();
    if (helperFd_ >= 0) ::close(helperFd_);
    if (notifyFd_ >= 0) ::close(notifyFd_);
  }

  ncclResult_t fail(ncclResult_t code, const std::string& msg) {
    if (!failed_.load(std::memory_order_acquire)) {
      failCode_ = code;
      failMsg_ = msg;
      failed_.store(true, std::memory_order_release);
    }
    return recordError(failCode_, "%s", failMsg_.c_str());
  }
  ncclResult_t failErrno(const char* op, int sock, int e) {
    char buf[256];
    snprintf(buf, sizeof(buf), "NET/Socket: connection with rank %d broke: %s on socket %d: %s (errno %d)", peer_, op,
             sock, strerror(e), e);
    return fail(ncclRemoteError, buf);
  }
  ncclResult_t failClosed(int sock, bool midFrame) {
    char buf[256];
    snprintf(buf, sizeof(buf), "NET/Socket: rank %d closed the connection (socket %d%s)", peer_, sock,
             midFrame ? ", in the middle of a message" : "");
    return fail(ncclRemoteError, buf);
  }
  // Reads the socket's pending error for a POLLERR.
  ncclResult_t failSoError(int sock) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(socks_[sock].fd(), SOL_SOCKET, SO_ERROR, &err, &len);
    return failErrno("poll", sock, err ? err : ECONNRESET);
  }
  ncclResult_t checkFailed() {
    return failed_.load(std::memory_order_acquire) ? recordError(failCode_, "%s", failMsg_.c_str()) : ncclSuccess;
  }

  SockRequest* slotFor(uint64_t seq) { return &reqs_[seq % kMaxSockRequests]; }
  bool sharedSet() const { return set_->otherWay.load(std::memory_order_acquire); }

  // The proxy's progress: moves what it may (not a bulk message's bytes) unless the helper has the connection
  // or holds the lock, and hands the connection to the helper when it reaches a bulk message.
  ncclResult_t progressFromProxy() {
    if (helperBusy_.load(std::memory_order_acquire)) return checkFailed();
    std::unique_lock<std::mutex> lk(ioMu_, std::try_to_lock);
    if (!lk.owns_lock()) return checkFailed();
    bool progressed = false, bulk = false;
    ncclResult_t res = progressLocked(&progressed, false, &bulk);
    if (res == ncclSuccess && bulk) {
      if (!startHelper()) return progressLocked(&progressed, true, &bulk);  // no thread: move it here
      helperBusy_.store(true, std::memory_order_release);
      bump(helperFd_);
    }
    return res;
  }

  // Shared by send and receive: progress the sockets unless `r` is already complete, then report it.
  ncclResult_t testRequest(SockRequest* r, bool* done, size_t* size, uint32_t* flags) {
    *done = false;
    if (!r->done.load(std::memory_order_acquire)) {
      ncclResult_t res = progressFromProxy();
      // progress may complete this request and then hit EOF on a later one: report this one first;
      // the failure is sticky and surfaces on the next test().
      if (res != ncclSuccess && !r->done.load(std::memory_order_acquire)) return res;
      if (res != ncclSuccess) clearPendingError();
    }
    if (r->done.load(std::memory_order_acquire)) {
      *done = true;
      if (size) *size = r->size;
      if (flags) *flags = r->hdr.flags;
      r->used = false;
    }
    return ncclSuccess;
  }

  // The proxy's descriptors: the sockets (socketFds) and notifyFd_, or only notifyFd_ while the helper has the
  // connection (its sockets' readiness is the helper's business).
  void pollFdsBase(std::vector<pollfd>* fds) {
    std::unique_lock<std::mutex> lk(ioMu_, std::defer_lock);
    lastFdsHelper_ = helperBusy_.load(std::memory_order_acquire) || !lk.try_lock();
    if (!lastFdsHelper_) socketFds(fds);
    if (notifyFd_ >= 0) fds->push_back(pollfd{notifyFd_, POLLIN, 0});
  }
  // The notify entry's results (last of what pollFdsBase gave); true when the sockets' entries came first.
  bool pollNotify(const pollfd* fds, size_t n) {
    if (notifyFd_ >= 0 && n > 0 && (fds[n - 1].revents & POLLIN)) {
      uint64_t v;
      ssize_t r = read(notifyFd_, &v, sizeof(v));
      (void)r;
    }
    return !lastFdsHelper_;
  }

  void closeAll() {
    stopHelper();
    // Sockets that a comm of the other direction also runs over close with the last of the two (~SockSet).
    if (set_.use_count() == 1)
      for (auto& s : socks_) s.close();
  }

  // Moves bytes (caller holds ioMu_). bulk: everything posted; else it stops at a message of at least bulkBytes_
  // (*reachedBulk), leaving it for the helper.
  virtual ncclResult_t progressLocked(bool* progressed, bool bulk, bool* reachedBulk) = 0;
  // What the sockets wait for (caller holds ioMu_), as pollfd entries, one per socket.
  virtual void socketFds(std::vector<pollfd>* fds) = 0;
  // Nothing left for the helper (caller holds ioMu_): it hands the connection back.
  virtual bool helperDone() = 0;
  bool isBulk(const SockRequest& r) const { return bulkBytes_ > 0 && r.size >= bulkBytes_; }

  std::mutex ioMu_;

  std::shared_ptr<SockSet> set_;
  std::vector<Socket>& socks_;  // set_->socks
  int nSocks_ = 1;
  int peer_ = -1;
  SockRequest reqs_[kMaxSockRequests];
  std::atomic<uint64_t> posted_{0};  // written by the proxy (a new message's fields first), read by the helper
  uint64_t cur_[kNetMaxSocks];       // per socket: next message whose part it carries (under ioMu_)
  std::atomic<bool> failed_{false};  // set once, after failCode_ and failMsg_
  ncclResult_t failCode_ = ncclSuccess;
  std::string failMsg_;

 private:
  bool startHelper() {
    if (helper_.joinable()) return true;
    try {
      helper_ = std::thread([this] { helperMain(); });
    } catch (const std::system_error&) {
      return false;
    }
    return true;
  }
  void stopHelper() {
    if (!helper_.joinable()) return;
    helperStop_.store(true, std::memory_order_release);
    bump(helperFd_);
    helper_.join();
  }
  static void bump(int fd) {  // an eventfd
    const uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof(one));
    (void)w;
  }
  void helperMain() {
    pthread_setname_np(pthread_self(), "braid-netio");
    std::vector<pollfd> fds;
    for (;;) {
      uint64_t v;
      ssize_t r = read(helperFd_, &v, sizeof(v));  // blocks until handed the connection, or stopped
      (void)r;
      if (helperStop_.load(std::memory_order_acquire)) return;
      if (!helperBusy_.load(std::memory_order_acquire)) continue;
      std::unique_lock<std::mutex> lk(ioMu_);
      while (!helperStop_.load(std::memory_order_acquire)) {
        bool progressed = false, unused = false;
        if (progressLocked(&progressed, true, &unused) != ncclSuccess) {
          clearPendingError();  // sticky: the proxy's next test() reports it
          break;
        }
        if (helperDone()) break;
        if (progressed) continue;
        fds.clear();
        socketFds(&fds);
        fds.push_back(pollfd{helperFd_, POLLIN, 0});  // stop
        lk.unlock();
        poll(fds.data(), fds.size(), -1);
        lk.lock();
      }
      helperBusy_.store(false, std::memory_order_release);
      lk.unlock();
      bump(notifyFd_);  // the proxy may be blocked on it
    }
  }

  size_t bulkBytes_ = 0;  // 0: no helper
  int helperFd_ = -1;     // proxy -> helper: the connection is handed over, or stop
  int notifyFd_ = -1;     // helper -> proxy: handed back (in the proxy's epoll set)
  std::atomic<bool> helperBusy_{false};
  std::atomic<bool> helperStop_{false};
  bool lastFdsHelper_ = false;  // the last pollFdsBase gave only notifyFd_
  std::thread helper_;
};

class SocketSendComm final : public NetSendComm, SocketCommBase {
 public:
  SocketSendComm(std::shared_ptr<SockSet> set, int peer, size_t bulkBytes)
      : SocketCommBase(std::move(set), peer, bulkBytes) {
    for (bool& w : wantOut_) w = false;
  }
  ~SocketSendComm() override { closeAll(); }

  ncclResult_t isend(const void* data, size_t size, uint32_t flags, NetRequest** req) override {
    *req = nullptr;
    BRAID_CHECK(checkFailed());
    if (size > UINT32_MAX) return recordError(ncclInternalError, "NET/Socket: message of %zu bytes too large", size);
    const uint64_t seq = posted_.load(std::memory_order_relaxed);
    SockRequest* r = slotFor(seq);
    if (r->used) return ncclSuccess;
    r->used = true;
    r->done.store(false, std::memory_order_relaxed);
    r->sized = true;
    r->data = static_cast<char*>(const_cast<void*>(data));
    r->size = size;
    r->seq = seq;
    r->hdr = FrameHeader{static_cast<uint32_t>(size), static_cast<uint32_t>(seq), flags, 0};
    r->hdrDone = 0;
    r->setParts(nSocks_);
    posted_.store(seq + 1, std::memory_order_release);  // the fields above first (a running helper reads them)
    *req = r;
    return progressFromProxy();  // start right away: most small messages leave in this call
  }

  ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) override {
    return testRequest(static_cast<SockRequest*>(req), done, size, flags);
  }

  void pollFds(std::vector<pollfd>* fds) override { pollFdsBase(fds); }
  bool sharesConnection() const override { return sharedSet(); }

  ncclResult_t pollResult(const pollfd* fds, size_t n) override {
    BRAID_CHECK(checkFailed());
    if (!pollNotify(fds, n)) return ncclSuccess;
    for (size_t i = 0; i < n && i < static_cast<size_t>(nSocks_); i++) {
      if (fds[i].revents & POLLERR) return failSoError(static_cast<int>(i));
      if (fds[i].revents & (POLLRDHUP | POLLHUP)) return failClosed(static_cast<int>(i), false);
    }
    return ncclSuccess;
  }

  void close() override { closeAll(); }

 private:
  ncclResult_t progressLocked(bool* progressed, bool bulk, bool* reachedBulk) override {
    BRAID_CHECK(checkFailed());
    for (int i = 0; i < nSocks_; i++) BRAID_CHECK(progressSock(i, progressed, bulk, reachedBulk));
    return ncclSuccess;
  }

  void socketFds(std::vector<pollfd>* fds) override {
    // The peer's end of the stream (POLLRDHUP) is the sign of its closing: data coming the other way on a two-way
    // connection is its receive comm's.
    for (int i = 0; i < nSocks_; i++) {
      fds->push_back(pollfd{socks_[i].fd(), static_cast<short>(POLLRDHUP | (wantOut_[i] ? POLLOUT : 0)), 0});
    }
  }

  bool helperDone() override {
    const uint64_t posted = posted_.load(std::memory_order_acquire);
    for (int i = 0; i < nSocks_; i++)
      if (cur_[i] < posted) return false;
    return true;
  }

  ncclResult_t progressSock(int i, bool* progressed, bool bulk, bool* reachedBulk) {
    while (cur_[i] < posted_.load(std::memory_order_acquire)) {
      SockRequest& r = *slotFor(cur_[i]);
      if (!bulk && isBulk(r)) {  // its bytes are the helper's (none of them moved yet: the helper finishes what it starts)
        *reachedBulk = true;
        return ncclSuccess;
      }
      bool hdrPending = i == 0 && r.hdrDone < sizeof(FrameHeader);
      size_t left = r.partLen[i] - r.partDone[i];
      if (!hdrPending && left == 0) {
        if (i == 0 || r.partLen[i] > 0) {
          if (--r.partsLeft == 0) r.done.store(true, std::memory_order_release);
        }
        cur_[i]++;
        continue;
      }
      iovec iov[2];
      int n = 0;
      if (hdrPending) {
        iov[n++] = iovec{reinterpret_cast<char*>(&r.hdr) + r.hdrDone, sizeof(FrameHeader) - r.hdrDone};
      }
      if (left > 0) iov[n++] = iovec{r.data + r.partOff[i] + r.partDone[i], left};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = n;
      ssize_t w = sendmsg(socks_[i].fd(), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (wouldBlock(errno)) {
          wantOut_[i] = true;
          return ncclSuccess;
        }
        return failErrno("send", i, errno);
      }
      wantOut_[i] = false;
      *progressed = true;
      size_t got = static_cast<size_t>(w);
      if (hdrPending) {
        size_t h = std::min(got, sizeof(FrameHeader) - r.hdrDone);
        r.hdrDone += h;
        got -= h;
      }
      r.partDone[i] += got;
    }
    return ncclSuccess;
  }

  bool wantOut_[kNetMaxSocks];
};

class SocketRecvComm final : public NetRecvComm, SocketCommBase {
 public:
  SocketRecvComm(std::shared_ptr<SockSet> set, int peer, size_t bulkBytes)
      : SocketCommBase(std::move(set), peer, bulkBytes) {
    for (bool& h : hup_) h = false;
  }
  ~SocketRecvComm() override { closeAll(); }

  ncclResult_t irecv(void* data, size_t maxSize, NetRequest** req) override {
    *req = nullptr;
    BRAID_CHECK(checkFailed());
    const uint64_t seq = posted_.load(std::memory_order_relaxed);
    SockRequest* r = slotFor(seq);
    if (r->used) return ncclSuccess;
    r->used = true;
    r->done.store(false, std::memory_order_relaxed);
    r->sized = false;
    r->data = static_cast<char*>(data);
    r->size = 0;
    r->maxSize = maxSize;
    r->seq = seq;
    r->hdrDone = 0;
    posted_.store(seq + 1, std::memory_order_release);  // the fields above first (a running helper reads them)
    *req = r;
    return ncclSuccess;
  }

  ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) override {
    return testRequest(static_cast<SockRequest*>(req), done, size, flags);
  }

  void pollFds(std::vector<pollfd>* fds) override { pollFdsBase(fds); }
  bool sharesConnection() const override { return sharedSet(); }

  ncclResult_t pollResult(const pollfd* fds, size_t n) override {
    BRAID_CHECK(checkFailed());
    if (!pollNotify(fds, n)) return ncclSuccess;
    for (size_t i = 0; i < n && i < static_cast<size_t>(nSocks_); i++) {
      if (fds[i].revents & POLLERR) return failSoError(static_cast<int>(i));
      if (fds[i].revents & POLLHUP) hup_[i] = true;
    }
    return ncclSuccess;
  }

  void close() override { closeAll(); }

 private:
  void socketFds(std::vector<pollfd>* fds) override {
    const uint64_t posted = posted_.load(std::memory_order_acquire);
    for (int i = 0; i < nSocks_; i++) {
      // Read only what a posted receive can hold; a hung-up socket is left out (it would always be
      // ready) until progress reads its remaining data and then the EOF.
      // Sockets after the first can take their part only once socket 0 has sized the message.
      bool want = cur_[i] < posted && (i == 0 || slotFor(cur_[i])->sized);
      fds->push_back(pollfd{hup_[i] && !want ? -1 : socks_[i].fd(), static_cast<short>(want ? POLLIN : 0), 0});
    }
  }

  // Handed back once no sized message is unfinished: the next header is the proxy's to read (a small message then
  // needs no hop through this thread).
  bool helperDone() override {
    const uint64_t posted = posted_.load(std::memory_order_acquire);
    for (int i = 0; i < nSocks_; i++)
      if (cur_[i] < posted && slotFor(cur_[i])->sized) return false;
    return true;
  }

  ncclResult_t progressLocked(bool* progressed, bool bulk, bool* reachedBulk) override {
    BRAID_CHECK(checkFailed());
    // Socket 0 first: its headers size the parts the other sockets carry.
    for (int i = 0; i < nSocks_; i++) BRAID_CHECK(progressSock(i, progressed, bulk, reachedBulk));
    return ncclSuccess;
  }

  // recv() that maps EOF and errors onto the comm's failure; returns bytes read, 0 for "would block". Socket 0's
  // reads of less than kStageBytes go through stage_: one recv takes a frame's header together with a small
  // payload (and whatever follows it), where reading the header and then the payload would cost two system calls
  // per message; what was read ahead is handed out before the socket is read again.
  ncclResult_t readSome(int i, void* dst, size_t len, bool midFrame, size_t* got) {
    *got = 0;
    if (i == 0 && stageOff_ < stageLen_) {
      const size_t n = std::min(len, stageLen_ - stageOff_);
      std::memcpy(dst, stage_.get() + stageOff_, n);
      stageOff_ += n;
      *got = n;
      return ncclSuccess;
    }
    const bool staged = i == 0 && len < kStageBytes && stage_;
    for (;;) {
      ssize_t n = recv(socks_[i].fd(), staged ? stage_.get() : dst, staged ? kStageBytes : len, MSG_DONTWAIT);
      if (n > 0) {
        *got = static_cast<size_t>(n);
        if (staged) {
          stageLen_ = *got;
          *got = std::min(len, stageLen_);
          std::memcpy(dst, stage_.get(), *got);
          stageOff_ = *got;
        }
        return ncclSuccess;
      }
      if (n == 0) return failClosed(i, midFrame);
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) return ncclSuccess;
      return failErrno("recv", i, errno);
    }
  }

  ncclResult_t progressSock(int i, bool* progressed, bool bulk, bool* reachedBulk) {
    while (cur_[i] < posted_.load(std::memory_order_acquire)) {
      SockRequest& r = *slotFor(cur_[i]);
      if (!r.sized) {
        if (i != 0) return ncclSuccess;  // socket 0 has not told us this message's size yet
        size_t got = 0;
        BRAID_CHECK(readSome(0, reinterpret_cast<char*>(&r.hdr) + r.hdrDone, sizeof(FrameHeader) - r.hdrDone,
                             r.hdrDone > 0, &got));
        if (got == 0) return ncclSuccess;
        *progressed = true;
        r.hdrDone += got;
        if (r.hdrDone < sizeof(FrameHeader)) continue;
        if (r.hdr.seq != static_cast<uint32_t>(r.seq) || r.hdr.size > r.maxSize) {
          char buf[256];
          snprintf(buf, sizeof(buf),
                   "NET/Socket: bad frame from rank %d: message %u of %u bytes, expected message %u of at most %zu "
                   "bytes (protocol error)",
                   peer_, r.hdr.seq, r.hdr.size, static_cast<uint32_t>(r.seq), r.maxSize);
          return fail(ncclRemoteError, buf);
        }
        r.size = r.hdr.size;
        r.setParts(nSocks_);
        r.sized = true;
      }
      if (!bulk && isBulk(r)) {  // its payload is the helper's
        *reachedBulk = true;
        return ncclSuccess;
      }
      size_t left = r.partLen[i] - r.partDone[i];
      if (left == 0) {
        if (i == 0 || r.partLen[i] > 0) {
          if (--r.partsLeft == 0) r.done.store(true, std::memory_order_release);
        }
        cur_[i]++;
        // With nothing read ahead, the next header waits for the next pass (the waits and the proxy pass again after
        // progress): probing for it now would mostly cost a recv that finds nothing. The bulk helper reads on, so a
        // run of large messages stays with it rather than going back to the proxy after each.
        if (i == 0 && !bulk && stageOff_ == stageLen_) return ncclSuccess;
        continue;
      }
      size_t got = 0;
      BRAID_CHECK(readSome(i, r.data + r.partOff[i] + r.partDone[i], left, true, &got));
      if (got == 0) return ncclSuccess;
      *progressed = true;
      r.partDone[i] += got;
    }
    return ncclSuccess;
  }

  bool hup_[kNetMaxSocks];
  // Socket 0's read-ahead (readSome), under ioMu_ like the rest of the receive state.
  static constexpr size_t kStageBytes = 4096;
  std::unique_ptr<char[]> stage_{new (std::nothrow) char[kStageBytes]};  // null: every read goes to its place
  size_t stageOff_ = 0, stageLen_ = 0;
};

class SocketListenComm final : public NetListenComm {
 public:
  explicit SocketListenComm(std::shared_ptr<SockListen> l) : l_(std::move(l)) {}

  ncclResult_t accept(const NetConnIdent& expect, const NetSetupParams& p, std::unique_ptr<NetRecvComm>* out) override {
    std::shared_ptr<SockSet> set = l_->early;
    if (!set) {
      // This rank's connection to the peer on the tag, which the peer may answer over (whatever this rank's
      // BRAID_NET_SOCKET_TWO_WAY: the connecting side decides).
      std::shared_ptr<SockSet> otherWay;
      if (p.links) {
        otherWay = std::dynamic_pointer_cast<SockSet>(p.links->find(p.peer, expect.tag, NetLinks::Kind::Send));
      }
      if (otherWay && (otherWay->socks.size() != static_cast<size_t>(l_->nSocks) || otherWay->otherWay.load()))
        otherWay.reset();
      BRAID_CHECK(acceptSockets(l_.get(), expect, p, otherWay, &set));
    }
    out->reset(new SocketRecvComm(set, p.peer, p.bulkHelperBytes));
    if (p.links) p.links->put(p.peer, expect.tag, NetLinks::Kind::Recv, set);
    l_->listener.close();  // one connection per listener
    return ncclSuccess;
  }

  void close() override { l_->listener.close(); }

 private:
  std::shared_ptr<SockListen> l_;
};

// Whether a preamble presents this listener's nonce and socket count and the connection expected.
bool preambleFor(const Preamble& pre, const SockListen& l, const NetConnIdent& expect) {
  return pre.magic == kPreambleMagic && pre.nonce == l.nonce && pre.nSocks == static_cast<uint32_t>(l.nSocks) &&
         pre.sockIndex < static_cast<uint32_t>(l.nSocks) && pre.ident.sendRank == expect.sendRank &&
         pre.ident.recvRank == expect.recvRank && pre.ident.tag == expect.tag;
}

// The preamble the peer writes on socket 0 of `set` to say it sends over it: *taken once read. Where the socket
// ends or fails first (the peer closed it after connecting the usual way, as an abort does) *taken stays false; a
// preamble that presents anything but this listener's nonce and the connection expected is an error.
ncclResult_t takeOtherWayPreamble(SockListen* l, const NetConnIdent& expect, const NetSetupParams& p, double left,
                                  SockSet* set, bool* taken) {
  *taken = false;
  Preamble pre{};
  if (set->socks[0].recvAll(&pre, sizeof(pre), std::min(left, 5.0), p.abortFlag, "the connected side") !=
      ncclSuccess) {
    if (p.abortFlag && p.abortFlag->load()) {
      return rewrapError(ncclInvalidUsage, "NET/Socket: setup with rank %d aborted: %s", p.peer);
    }
    clearPendingError();
    return ncclSuccess;
  }
  if (!preambleFor(pre, *l, expect) || pre.sockIndex != 0) {
    return recordError(ncclRemoteError,
                       "NET/Socket: rank %d presented rank %d -> %d tag %u on the connection both ways (expected rank "
                       "%d -> %d tag %u, nonce %s; protocol error)",
                       p.peer, pre.ident.sendRank, pre.ident.recvRank, pre.ident.tag, expect.sendRank, expect.recvRank,
                       expect.tag, pre.nonce == l->nonce ? "ok" : "wrong");
  }
  set->otherWay.store(true);
  *taken = true;
  return ncclSuccess;
}

}  // namespace

ncclResult_t acceptSockets(SockListen* l, const NetConnIdent& expect, const NetSetupParams& p,
                           const std::shared_ptr<SockSet>& otherWay, std::shared_ptr<SockSet>* out) {
  using Clock = std::chrono::steady_clock;
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(p.timeoutSec));
  std::vector<Socket> socks(l->nSocks);
  std::shared_ptr<SockSet> watch = otherWay;
  int got = 0;
  while (got < l->nSocks) {
    double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      return recordError(ncclRemoteError,
                         "NET/Socket: rank %d did not connect within %.0f s (%d of %d sockets arrived)", p.peer,
                         p.timeoutSec, got, l->nSocks);
    }
    const double slice = p.wait == nullptr ? left : livenessSlice(left);
    if (watch && got == 0) {  // until the peer's first socket arrives, it may answer over ours instead
      pollfd fds[2] = {{l->listener.fd(), POLLIN, 0}, {watch->socks[0].fd(), POLLIN, 0}};
      const int n = poll(fds, 2, static_cast<int>(std::min(slice, 0.1) * 1000) + 1);
      if (n > 0 && !(fds[0].revents & POLLIN) && fds[1].revents) {
        bool taken = false;
        BRAID_CHECK(takeOtherWayPreamble(l, expect, p, left, watch.get(), &taken));
        if (taken) {
          *out = watch;
          return ncclSuccess;
        }
        watch.reset();  // our socket ended: the peer connected here, or the waits below find it gone
        continue;
      }
      if (n <= 0) {
        if (p.abortFlag && p.abortFlag->load()) {
          return recordError(ncclInvalidUsage, "NET/Socket: setup with rank %d aborted", p.peer);
        }
        BRAID_CHECK(checkSetupPeers(p, "waiting for"));
        continue;
      }
    }
    Socket s;
    ncclResult_t r = l->listener.accept(&s, slice, p.abortFlag);
    if (r == ncclRemoteError) {  // nobody connected within the slice (the deadline is checked above)
      clearPendingError();
      BRAID_CHECK(checkSetupPeers(p, "waiting for"));
      continue;
    }
    if (r != ncclSuccess) return rewrapError(r, "NET/Socket: waiting for rank %d to connect: %s", p.peer);
    Preamble pre{};
    // A stray client that never speaks must not hold us past a short grace period: connections are read one
    // at a time. The peer writes its preamble right after connecting; 5 s leaves room for a peer descheduled
    // on a loaded machine (dropping a real peer would fail the whole setup).
    if (s.recvAll(&pre, sizeof(pre), std::min(left, 5.0), p.abortFlag, "the connecting side") != ncclSuccess) {
      if (p.abortFlag && p.abortFlag->load()) {
        return rewrapError(ncclInvalidUsage, "NET/Socket: setup with rank %d aborted: %s", p.peer);
      }
      BRAID_WARN("NET/Socket: dropped a connection that sent no valid preamble while waiting for rank %d: %s", p.peer,
                 pendingError().c_str());
      clearPendingError();
      continue;
    }
    if (!preambleFor(pre, *l, expect) || socks[pre.sockIndex].valid()) {
      BRAID_WARN(
          "NET/Socket: dropped a connection presenting rank %d -> %d tag %u socket %u (expected rank %d -> %d "
          "tag %u, nonce %s)",
          pre.ident.sendRank, pre.ident.recvRank, pre.ident.tag, pre.sockIndex, expect.sendRank, expect.recvRank,
          expect.tag, pre.nonce == l->nonce ? "ok" : "wrong");
      continue;
    }
    socks[pre.sockIndex] = std::move(s);
    got++;
  }
  for (auto& s : socks) {
    BRAID_CHECK(s.setNonBlocking(true));
    BRAID_CHECK(s.setNoDelay());
  }
  *out = std::make_shared<SockSet>(std::move(socks));
  return ncclSuccess;
}

ncclResult_t writeOtherWayPreamble(SockSet* set, uint64_t nonce, const NetConnIdent& ident, const NetSetupParams& p) {
  Preamble pre{kPreambleMagic, nonce, ident, 0, static_cast<uint32_t>(set->socks.size())};
  ncclResult_t r = set->socks[0].sendAll(&pre, sizeof(pre), p.timeoutSec, p.abortFlag, "the receiving rank");
  if (r != ncclSuccess) return rewrapError(r, "NET/Socket: sending the preamble to rank %d failed: %s", p.peer);
  return ncclSuccess;
}

std::unique_ptr<NetSendComm> newSocketSendComm(std::shared_ptr<SockSet> set, int peer, size_t bulkBytes) {
  return std::unique_ptr<NetSendComm>(new SocketSendComm(std::move(set), peer, bulkBytes));
}

std::unique_ptr<NetListenComm> newSocketListenComm(std::shared_ptr<SockListen> l) {
  return std::unique_ptr<NetListenComm>(new SocketListenComm(std::move(l)));
}

}  // namespace braid
