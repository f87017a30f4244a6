// The rank side of the bootstrap (Bootstrap::create and the messaging that follows). Each rank starts a
// listener and a receive thread, says hello to the root, and gets the peer table. Messages to a peer go
// over one cached outgoing connection per peer (the challenge answered, the peer's proof checked, then
// framed messages); the receive thread drains every incoming connection eagerly into per-(peer, tag) FIFO
// queues, so send never waits for the receiver to post its recv, and a dropped connection is noticed at
// once. The receive thread holds at most kMaxUnauthConns connections that have not authenticated, each for
// at most kAuthDeadlineSec, so a flood of idle connections cannot exhaust this process's descriptors.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_internal.h"
#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "core/socket.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTagAllGather = kBootstrapInternalTag;
constexpr int kTagBroadcast = kBootstrapInternalTag + 1;
constexpr int kTagBarrier = kBootstrapInternalTag + 16;  // + round (at most 31 rounds)
// Error frames from the root carry a message; longer ones are cut (recordError keeps 1 KiB anyway).
constexpr uint32_t kMaxRootErrorLen = 4096;
// Messages up to this size go out with their header in one write (one TCP segment with NODELAY).
constexpr size_t kCoalesceBytes = 16 * 1024;
// How long a rank whose root connection ended tries a fresh one, to tell a dead root from one that dropped it.
constexpr double kRootProbeSec = 1.0;

// Replaces the pending message with `prefix: <pending>`: the inner failure knows the errno, the caller
// knows which rank and what for.
__attribute__((format(printf, 2, 3))) ncclResult_t wrapError(ncclResult_t code, const char* fmt, ...) {
  char prefix[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof(prefix), fmt, ap);
  va_end(ap);
  std::string inner = pendingError();
  clearPendingError();
  if (inner.empty()) return recordError(code, "%s", prefix);
  return recordError(code, "%s: %s", prefix, inner.c_str());
}

class UniqueFd {
 public:
  UniqueFd() = default;
  ~UniqueFd() { reset(-1); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// An incoming connection as the receive thread sees it.
struct InConn {
  enum Stage { kPreamble, kHeader, kPayload };
  Socket sock;
  std::string addr;
  int src = -1;  // set once the preamble checks out
  Stage stage = kPreamble;
  PeerPreamble pre{};
  MsgHeader hdr{};
  std::vector<char> payload;
  size_t got = 0;
  uint64_t nonce = 0;  // our challenge
  Clock::time_point acceptedAt;
};

// An outgoing connection; the mutex lets several threads send to the same peer.
struct OutConn {
  std::mutex mu;
  Socket sock;
  std::string error;  // set once the connection failed; later sends fail fast with it
};

class BootstrapImpl final : public Bootstrap {
 public:
  BootstrapImpl(int rank, int nranks, const uint8_t key[kBootstrapKeyBytes], const WaitContext* ctx)
      : rank_(rank), nranks_(nranks), ctx_(ctx) {
    memcpy(key_, key, sizeof(key_));
    if (ctx_ == nullptr) {
      defaultCtx_.timeoutSec = bootstrapTimeoutSec();
      ctx_ = &defaultCtx_;
    }
  }
  ~BootstrapImpl() override { close(); }

  ncclResult_t init(const UniqueIdData& id, const PeerInfo& mine);

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const std::vector<PeerInfo>& peers() const override { return peers_; }

  ncclResult_t send(int peer, int tag, const void* data, size_t size) override;
  ncclResult_t recv(int peer, int tag, void* data, size_t size) override;
  ncclResult_t allGather(void* data, size_t size) override;
  ncclResult_t barrier() override;
  ncclResult_t broadcast(void* data, size_t size, int root) override;
  void close() override;

 private:
  const std::atomic<uint32_t>* abortFlag() const { return ctx_->abortFlag; }
  bool aborted() const { return ctx_->abortFlag && ctx_->abortFlag->load(std::memory_order_relaxed); }
  double opTimeout() const { return ctx_->timeoutSec > 0 ? ctx_->timeoutSec : -1; }
  ncclResult_t connectToPeer(OutConn& c, int peer, double total);
  ncclResult_t nameDeadAfterBrokenConn(const std::string& cause);
  ncclResult_t openPeerConn(OutConn& c, int peer);
  ncclResult_t peerHandshake(OutConn& c, int peer, double timeoutSec, bool* retry);
  std::string peerName(int peer) const {
    return "rank " + std::to_string(peer) +
           (peer < static_cast<int>(addrs_.size()) ? " at " + sockAddrToString(addrs_[peer]) : "");
  }
  ncclResult_t checkPeer(int peer, const char* op) const;
  ncclResult_t exchangeWithRoot(const SockAddr& rootAddr, const PeerInfo& mine);
  ncclResult_t readRootReply(Socket& root, const SockAddr& rootAddr, double timeoutSec, uint64_t rootNonce,
                             uint64_t myNonce);

  void recvLoop();
  bool readConn(InConn& c);
  void deliver(int src, int tag, std::vector<char>&& payload);
  void connLost(InConn& c, const std::string& why);

  const int rank_;
  const int nranks_;
  uint8_t key_[kBootstrapKeyBytes];
  const WaitContext* ctx_;
  WaitContext defaultCtx_;

  std::vector<PeerInfo> peers_;
  DropWarnings dropWarnings_;  // the receive thread's
  std::vector<SockAddr> addrs_;  // listen address of every rank
  std::vector<std::unique_ptr<OutConn>> out_;

  Socket listener_;
  SockAddr listenAddr_{};
  UniqueFd wakeFd_;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  std::mutex qmu_;
  std::condition_variable qcv_;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> queue_;  // (src, tag) -> FIFO; guarded by qmu_
  std::vector<std::string> peerLost_;                                   // by rank; guarded by qmu_
  std::string threadError_;                                             // guarded by qmu_
  bool closed_ = false;                                                 // guarded by qmu_

  std::mutex closeMu_;
  bool closeDone_ = false;  // guarded by closeMu_
  // NCCL_COMM_ID: the root this rank hosts; closing stops it if it is still waiting for ranks.
  std::shared_ptr<BootstrapRootStop> rootStop_;
};

ncclResult_t BootstrapImpl::checkPeer(int peer, const char* op) const {
  if (peer < 0 || peer >= nranks_)
    return recordError(ncclInvalidArgument, "bootstrap %s: peer %d is out of range (nranks %d, rank %d)", op, peer,
                       nranks_, rank_);
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::init(const UniqueIdData& id, const PeerInfo& mine) {
  WireAddr w;
  memset(&w, 0, sizeof(w));
  memcpy(w.bytes, id.addr, sizeof(w.bytes));
  w.len = id.addrLen;
  SockAddr rootAddr;
  if (!fromWireAddr(w, &rootAddr)) return recordError(ncclInvalidArgument, "unique id carries an invalid root address");

  // NCCL_COMM_ID mode: no root was started by ncclGetUniqueId; rank 0 hosts it (as NCCL does).
  std::string commId = params::CommId();
  if (rank_ == 0 && !commId.empty()) {
    SockAddr envAddr;
    if (parseSockAddr(commId.c_str(), &envAddr) == ncclSuccess && sameSockAddr(envAddr, rootAddr)) {
      BRAID_CHECK(startBootstrapRoot(&envAddr, key_, abortFlag(), &rootStop_));
    } else {
      clearPendingError();  // the id came from elsewhere (e.g. ncclCommSplit): its root is already running
    }
  }

  peerLost_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) out_.emplace_back(new OutConn());

  // Listener and receive thread come before the hello: peers may connect as soon as they have the table.
  BRAID_CHECK(findInterfaceAddr(&listenAddr_, nullptr));
  BRAID_CHECK(listener_.listen(&listenAddr_));
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) {
    int err = errno;
    return recordError(ncclSystemError, "bootstrap rank %d: eventfd failed: %s", rank_, strerror(err));
  }
  wakeFd_.reset(efd);
  try {
    thread_ = std::thread([this] { recvLoop(); });
  } catch (const std::exception& e) {
    return recordError(ncclSystemError, "bootstrap rank %d: cannot start the receive thread: %s", rank_, e.what());
  }
  BRAID_INFO(kSubBootstrap, "bootstrap rank %d of %d: listening at %s, root %s", rank_, nranks_,
             sockAddrToString(listenAddr_).c_str(), sockAddrToString(rootAddr).c_str());
  return exchangeWithRoot(rootAddr, mine);
}

ncclResult_t BootstrapImpl::exchangeWithRoot(const SockAddr& rootAddr, const PeerInfo& mine) {
  const double timeoutSec = bootstrapTimeoutSec();
  const std::string rootName = sockAddrToString(rootAddr);
  const std::string what = "the bootstrap root at " + rootName;
  const auto start = Clock::now();
  auto left = [&] { return timeoutSec - std::chrono::duration<double>(Clock::now() - start).count(); };
  Socket root;
  AuthChallenge ch{};
  for (;;) {
    if (root.connect(rootAddr, std::max(0.01, left()), abortFlag()) != ncclSuccess) {
      if (aborted()) return ncclInvalidUsage;  // the socket layer said "aborted"
      return wrapError(ncclRemoteError, "bootstrap: rank %d of %d could not reach the root at %s within %.0f s", rank_,
                       nranks_, rootName.c_str(), timeoutSec);
    }
    if (root.recvAll(&ch, sizeof(ch), std::max(0.01, left()), abortFlag(), what.c_str()) == ncclSuccess) break;
    if (aborted()) return ncclInvalidUsage;
    // A root busy with other connections closes new ones at once; nothing was sent, so try again.
    if (left() <= 0)
      return wrapError(ncclRemoteError, "bootstrap: rank %d of %d got no challenge from the root at %s within %.0f s",
                       rank_, nranks_, rootName.c_str(), timeoutSec);
    BRAID_INFO(kSubBootstrap,
               "bootstrap rank %d: the root at %s closed the connection before its challenge (%s); "
               "retrying",
               rank_, rootName.c_str(), pendingError().c_str());
    clearPendingError();
    root.close();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (ch.magic != kRootFrameMagic)
    return recordError(ncclRemoteError, "bootstrap: rank %d: %s is not a Braid bootstrap root (bad magic)", rank_,
                       what.c_str());

  struct {
    RootFrameHeader hdr;
    HelloPayload hello;
  } frame;
  memset(&frame, 0, sizeof(frame));
  frame.hdr = RootFrameHeader{kRootFrameMagic, 0, kRootHello, rank_, sizeof(HelloPayload)};
  frame.hello.nranks = nranks_;
  frame.hello.nonce = bootstrapNonce();
  frame.hello.listenAddr = toWireAddr(listenAddr_);
  frame.hello.info = mine;
  frame.hello.info.rank = rank_;
  frame.hdr.mac =
      rootFrameMac(key_, kAuthRootHello, ch.nonce, frame.hello.nonce, frame.hdr, &frame.hello, sizeof(frame.hello));
  BRAID_CHECK(root.sendAll(&frame, sizeof(frame), timeoutSec, abortFlag(), what.c_str()));

  // The root reports missing ranks at its own deadline; waiting a little longer lets that report win.
  return readRootReply(root, rootAddr, timeoutSec + bootstrapRankGraceSec(timeoutSec), ch.nonce, frame.hello.nonce);
}

ncclResult_t BootstrapImpl::readRootReply(Socket& root, const SockAddr& rootAddr, double timeoutSec,
                                          uint64_t rootNonce, uint64_t myNonce) {
  const std::string rootName = sockAddrToString(rootAddr);
  const std::string what = "the bootstrap root at " + rootName;
  RootFrameHeader h;
  if (root.recvAll(&h, sizeof(h), timeoutSec, abortFlag(), what.c_str()) != ncclSuccess) {
    if (aborted()) return ncclInvalidUsage;
    // A root that rejects our key says so in an error frame; a connection that just ends means the root's
    // process went away, which a fresh connect tells apart from a root that is alive but dropped us.
    const std::string cause = pendingError();
    clearPendingError();
    // A live root sends its challenge at once; while its process exits, its listener may still accept.
    Socket probe;
    AuthChallenge probeCh{};
    if (probe.connect(rootAddr, kRootProbeSec, abortFlag()) != ncclSuccess ||
        probe.recvAll(&probeCh, sizeof(probeCh), kRootProbeSec, abortFlag(), what.c_str()) != ncclSuccess) {
      if (aborted()) return ncclInvalidUsage;
      const std::string probeErr = pendingError();
      clearPendingError();
      return recordError(ncclRemoteError,
                         "bootstrap: rank %d of %d cannot reach the bootstrap root at %s: %s; a new connection failed "
                         "too (%s): its process may have died",
                         rank_, nranks_, rootName.c_str(), cause.c_str(), probeErr.c_str());
    }
    return recordError(ncclRemoteError,
                       "bootstrap: rank %d of %d got no peer table from the root at %s, which is still up: %s", rank_,
                       nranks_, rootName.c_str(), cause.c_str());
  }
  if (h.magic != kRootFrameMagic)
    return recordError(ncclRemoteError, "bootstrap: rank %d: %s answered with a frame that is not from our root (%s)",
                       rank_, what.c_str(), "bad magic");
  // An error frame is believed without a proof: the root cannot prove anything to a rank whose id holds
  // another key, and an impostor that could forge an error could as well close the connection.
  if (h.type == kRootError) {
    ErrorPayloadHeader e;
    if (h.size < sizeof(e))
      return recordError(ncclInternalError, "bootstrap: truncated error frame from %s", what.c_str());
    BRAID_CHECK(root.recvAll(&e, sizeof(e), timeoutSec, abortFlag(), what.c_str()));
    std::string msg(e.len < kMaxRootErrorLen ? e.len : kMaxRootErrorLen, '\0');
    BRAID_CHECK(root.recvAll(&msg[0], msg.size(), timeoutSec, abortFlag(), what.c_str()));
    ncclResult_t code = static_cast<ncclResult_t>(e.code);
    if (code == ncclSuccess || code < 0 || code >= ncclNumResults) code = ncclInternalError;
    return recordError(code, "%s", msg.c_str());
  }
  const uint64_t tableBytes = sizeof(TableEntry) * static_cast<uint64_t>(nranks_);
  if (h.type != kRootTable || h.size != tableBytes || h.rank != rank_)
    return recordError(ncclInternalError,
                       "bootstrap: rank %d: unexpected reply from %s (type %d, %llu bytes, for rank %d; expected a "
                       "table of %llu bytes)",
                       rank_, what.c_str(), h.type, static_cast<unsigned long long>(h.size), h.rank,
                       static_cast<unsigned long long>(tableBytes));
  std::vector<TableEntry> table(nranks_);
  BRAID_CHECK(root.recvAll(table.data(), tableBytes, timeoutSec, abortFlag(), what.c_str()));
  const uint64_t digest = bootstrapMac(key_, kAuthRootReply, 0, 0, table.data(), tableBytes);
  if (!macEqual(h.mac, rootFrameMac(key_, kAuthRootReply, rootNonce, myNonce, h, &digest, sizeof(digest))))
    return recordError(ncclRemoteError,
                       "bootstrap: rank %d: %s sent a table without proof of the id's key (not our root)", rank_,
                       what.c_str());
  peers_.resize(nranks_);
  addrs_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    peers_[r] = table[r].info;
    if (!fromWireAddr(table[r].listenAddr, &addrs_[r]))
      return recordError(ncclInternalError, "bootstrap: rank %d: the table holds an invalid address for rank %d", rank_,
                         r);
  }
  BRAID_INFO(kSubBootstrap, "bootstrap rank %d of %d: got the table from %s", rank_, nranks_, rootName.c_str());
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::send(int peer, int tag, const void* data, size_t size) {
  BRAID_CHECK(checkPeer(peer, "send"));
  if (size > 0 && data == nullptr)
    return recordError(ncclInvalidArgument, "bootstrap send: data is NULL for %zu bytes", size);
  {
    std::lock_guard<std::mutex> lk(qmu_);
    if (closed_)
      return recordError(ncclInvalidUsage, "bootstrap send to rank %d: rank %d's bootstrap is closed", peer, rank_);
    if (peer == rank_) {
      const char* p = static_cast<const char*>(data);
      queue_[{peer, tag}].emplace_back(p, p + size);
      qcv_.notify_all();
      return ncclSuccess;
    }
  }
  OutConn& c = *out_[peer];
  std::lock_guard<std::mutex> lk(c.mu);
  const std::string what = "bootstrap " + peerName(peer);
  if (!c.error.empty())
    return recordError(ncclRemoteError, "bootstrap rank %d: the connection to %s failed earlier: %s", rank_,
                       peerName(peer).c_str(), c.error.c_str());
  ncclResult_t r = ncclSuccess;
  if (!c.sock.valid()) r = openPeerConn(c, peer);
  if (r == ncclSuccess) {
    MsgHeader h{rank_, tag, static_cast<uint64_t>(size)};
    if (size <= kCoalesceBytes) {
      char buf[sizeof(MsgHeader) + kCoalesceBytes];
      memcpy(buf, &h, sizeof(h));
      if (size) memcpy(buf + sizeof(h), data, size);
      r = c.sock.sendAll(buf, sizeof(h) + size, opTimeout(), abortFlag(), what.c_str());
    } else {
      r = c.sock.sendAll(&h, sizeof(h), opTimeout(), abortFlag(), what.c_str());
      if (r == ncclSuccess) r = c.sock.sendAll(data, size, opTimeout(), abortFlag(), what.c_str());
    }
  }
  if (r != ncclSuccess) {
    // A half-written frame leaves the stream unusable: later sends to this peer fail with the same cause.
    c.error = pendingError().empty() ? "send failed" : pendingError();
    c.sock.close();
    if (r == ncclRemoteError && !aborted()) r = nameDeadAfterBrokenConn(c.error);
  }
  return r;
}

// A connection that broke under a send usually means its process died (the kernel closes its sockets before
// the process is reaped, so give the exit a moment to show): name the dead rank rather than the pipe.
ncclResult_t BootstrapImpl::nameDeadAfterBrokenConn(const std::string& cause) {
  const auto until = Clock::now() + std::chrono::milliseconds(500);
  while (firstDeadPeer(ctx_) < 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (firstDeadPeer(ctx_) < 0) return ncclRemoteError;  // the pending message stays the cause
  clearPendingError();
  ncclResult_t dead = checkPeersAlive(ctx_);
  if (dead == ncclSuccess) return recordError(ncclRemoteError, "%s", cause.c_str());
  return wrapError(dead, "bootstrap rank %d: %s", rank_, cause.c_str());
}

// Every rank's listener is up before the address table goes out, so a refused connect means the peer's
// process is gone or going: connect in short attempts and, between them, look whether it (or any observable
// peer) died, naming it at once instead of retrying for the whole timeout.
ncclResult_t BootstrapImpl::connectToPeer(OutConn& c, int peer, double total) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    double slice = 1.0;
    if (total > 0) {
      const double left = total - std::chrono::duration<double>(Clock::now() - start).count();
      slice = std::max(0.01, std::min(slice, left));
    }
    const auto attempt = Clock::now();
    ncclResult_t r = c.sock.connect(addrs_[peer], slice, abortFlag());
    if (r == ncclSuccess) return ncclSuccess;
    const std::string connectErr = pendingError();
    const double spent = std::chrono::duration<double>(Clock::now() - start).count();
    // Only a connect that retried for its whole slice (refused, timing out) is worth another slice; one that
    // failed at once (no route to the host, a bad address) fails the same way again.
    const bool usedSlice = std::chrono::duration<double>(Clock::now() - attempt).count() >= slice * 0.9;
    if (r != ncclRemoteError || aborted() || !usedSlice)
      return wrapError(r, "bootstrap rank %d: cannot connect to %s", rank_, peerName(peer).c_str());
    clearPendingError();
    if (total > 0 && spent >= total)
      return recordError(ncclRemoteError, "bootstrap rank %d: could not connect to %s within %.0f s (last attempt: %s)",
                         rank_, peerName(peer).c_str(), total, connectErr.c_str());
    ncclResult_t dead = checkPeersAlive(ctx_);
    if (dead != ncclSuccess)
      return wrapError(dead, "bootstrap rank %d: cannot connect to %s (%s)", rank_, peerName(peer).c_str(),
                       connectErr.c_str());
  }
}

// Answers the peer's challenge and checks its proof. `retry` is set when the connection ended before the
// peer authenticated us (a listener busy with a flood closes new connections at once): nothing was sent
// but our proof, so a new connection may try again.
ncclResult_t BootstrapImpl::peerHandshake(OutConn& c, int peer, double timeoutSec, bool* retry) {
  const std::string what = "bootstrap " + peerName(peer);
  *retry = false;
  AuthChallenge ch{};
  PeerPreamble pre{kPeerFrameMagic, 0, rank_, peer, bootstrapNonce()};
  PeerAck ack{};
  ncclResult_t r = c.sock.recvAll(&ch, sizeof(ch), timeoutSec, abortFlag(), what.c_str());
  if (r == ncclSuccess) {
    if (ch.magic != kPeerFrameMagic)
      return recordError(ncclRemoteError, "bootstrap rank %d: %s is not a Braid bootstrap listener (bad magic)", rank_,
                         peerName(peer).c_str());
    pre.mac = peerHelloMac(key_, ch.nonce, pre);
    r = c.sock.sendAll(&pre, sizeof(pre), timeoutSec, abortFlag(), what.c_str());
  }
  if (r == ncclSuccess) r = c.sock.recvAll(&ack, sizeof(ack), timeoutSec, abortFlag(), what.c_str());
  if (r != ncclSuccess) {
    *retry = r == ncclRemoteError && !aborted();
    return r;
  }
  if (ack.magic != kPeerFrameMagic || !macEqual(ack.mac, peerAckMac(key_, ch.nonce, pre)))
    return recordError(ncclRemoteError, "bootstrap rank %d: %s did not prove it holds the id's key", rank_,
                       peerName(peer).c_str());
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::openPeerConn(OutConn& c, int peer) {
  const double total = opTimeout();
  const auto start = Clock::now();
  auto left = [&] { return total - std::chrono::duration<double>(Clock::now() - start).count(); };
  for (;;) {
    BRAID_CHECK(connectToPeer(c, peer, total > 0 ? std::max(0.01, left()) : total));
    bool retry = false;
    ncclResult_t r = peerHandshake(c, peer, total > 0 ? std::max(0.01, left()) : total, &retry);
    if (r == ncclSuccess) return ncclSuccess;
    c.sock.close();
    if (!retry || (total > 0 && left() <= 0)) return r;
    BRAID_INFO(kSubBootstrap, "bootstrap rank %d: %s closed the connection before authenticating (%s); retrying", rank_,
               peerName(peer).c_str(), pendingError().c_str());
    clearPendingError();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ncclResult_t BootstrapImpl::recv(int peer, int tag, void* data, size_t size) {
  BRAID_CHECK(checkPeer(peer, "recv"));
  char what[128];
  snprintf(what, sizeof(what), "bootstrap message (tag %d, %zu bytes) from rank %d", tag, size, peer);
  Waiter waiter(ctx_, peer, what);
  std::vector<char> msg;
  {
    std::unique_lock<std::mutex> lk(qmu_);
    for (;;) {
      auto it = queue_.find({peer, tag});
      if (it != queue_.end() && !it->second.empty()) {
        msg = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) queue_.erase(it);
        break;
      }
      if (closed_)
        return recordError(ncclInvalidUsage, "bootstrap rank %d was closed while waiting for %s", rank_, what);
      if (!peerLost_[peer].empty()) {
        // The neighbour may only have closed because another rank died and it gave up: name the dead one.
        lk.unlock();
        ncclResult_t dead = checkPeersAlive(ctx_);
        lk.lock();
        if (dead != ncclSuccess)
          return wrapError(dead, "bootstrap rank %d: while waiting for %s (%s)", rank_, what, peerLost_[peer].c_str());
        return recordError(ncclRemoteError, "bootstrap rank %d: %s while waiting for %s", rank_,
                           peerLost_[peer].c_str(), what);
      }
      if (!threadError_.empty())
        return recordError(ncclInternalError, "bootstrap rank %d: receive thread failed (%s) while waiting for %s",
                           rank_, threadError_.c_str(), what);
      if (aborted())
        return recordError(ncclInvalidUsage, "bootstrap rank %d: aborted while waiting for %s", rank_, what);
      qcv_.wait_for(lk, std::chrono::milliseconds(2));
      lk.unlock();
      ncclResult_t r = waiter.poll();
      lk.lock();
      if (r != ncclSuccess) return r;
    }
  }
  if (msg.size() != size)
    return recordError(
        ncclInternalError,
        "bootstrap rank %d: message from rank %d with tag %d has %zu bytes, but the receiver expected %zu", rank_, peer,
        tag, msg.size(), size);
  if (size) memcpy(data, msg.data(), size);
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::allGather(void* data, size_t size) {
  char* base = static_cast<char*>(data);
  const int n = nranks_;
  const int next = (rank_ + 1) % n, prev = (rank_ + n - 1) % n;
  // Step s forwards the slot received at step s-1 (our own at s=0).
  for (int s = 0; s < n - 1; ++s) {
    int sendSlot = (rank_ - s + n) % n;
    int recvSlot = (rank_ - s - 1 + n) % n;
    BRAID_CHECK(send(next, kTagAllGather, base + static_cast<size_t>(sendSlot) * size, size));
    BRAID_CHECK(recv(prev, kTagAllGather, base + static_cast<size_t>(recvSlot) * size, size));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::barrier() {
  // Dissemination barrier: ceil(log2 n) rounds; round k talks to distance 2^k, a distinct peer per round.
  const int n = nranks_;
  char token = 0;
  for (int dist = 1, round = 0; dist < n; dist <<= 1, ++round) {
    BRAID_CHECK(send((rank_ + dist) % n, kTagBarrier + round, &token, 1));
    BRAID_CHECK(recv((rank_ - dist + n) % n, kTagBarrier + round, &token, 1));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapImpl::broadcast(void* data, size_t size, int root) {
  if (root < 0 || root >= nranks_)
    return recordError(ncclInvalidArgument, "bootstrap broadcast: root %d is out of range (nranks %d)", root, nranks_);
  if (rank_ != root) return recv(root, kTagBroadcast, data, size);
  for (int r = 0; r < nranks_; ++r)
    if (r != root) BRAID_CHECK(send(r, kTagBroadcast, data, size));
  return ncclSuccess;
}

void BootstrapImpl::close() {
  std::lock_guard<std::mutex> closeLock(closeMu_);
  if (closeDone_) return;
  closeDone_ = true;
  // The root's poll wakes every 50 ms; waiting for it keeps a retry's ranks off the closing listener.
  if (rootStop_) rootStop_->stopAndWait(2.0);
  {
    std::lock_guard<std::mutex> lk(qmu_);
    closed_ = true;
  }
  qcv_.notify_all();
  stop_.store(true);
  if (wakeFd_.get() >= 0) {
    uint64_t one = 1;
    ssize_t ignored = ::write(wakeFd_.get(), &one, sizeof(one));
    (void)ignored;
  }
  if (thread_.joinable()) thread_.join();
  listener_.close();
  for (auto& c : out_) {
    std::lock_guard<std::mutex> lk(c->mu);
    c->sock.close();
  }
}

void BootstrapImpl::deliver(int src, int tag, std::vector<char>&& payload) {
  {
    std::lock_guard<std::mutex> lk(qmu_);
    queue_[{src, tag}].push_back(std::move(payload));
  }
  qcv_.notify_all();
}

void BootstrapImpl::connLost(InConn& c, const std::string& why) {
  if (c.src < 0) return;  // never authenticated: nobody waits on it
  bool midMessage = c.stage != InConn::kHeader || c.got != 0;
  std::string msg = "the connection from rank " + std::to_string(c.src) + " (" + c.addr + ") " + why +
                    (midMessage ? " in the middle of a message" : "");
  BRAID_INFO(kSubBootstrap, "bootstrap rank %d: %s", rank_, msg.c_str());
  {
    std::lock_guard<std::mutex> lk(qmu_);
    if (peerLost_[c.src].empty()) peerLost_[c.src] = msg;
  }
  qcv_.notify_all();
}

// Reads what is available on `c`. Returns false when the connection is finished with (closed or dropped).
bool BootstrapImpl::readConn(InConn& c) {
  for (;;) {
    char* piece = nullptr;
    size_t pieceSize = 0;
    switch (c.stage) {
      case InConn::kPreamble:
        piece = reinterpret_cast<char*>(&c.pre);
        pieceSize = sizeof(c.pre);
        break;
      case InConn::kHeader:
        piece = reinterpret_cast<char*>(&c.hdr);
        pieceSize = sizeof(c.hdr);
        break;
      case InConn::kPayload:
        piece = c.payload.data();
        pieceSize = c.payload.size();
        break;
    }
    ssize_t r = ::recv(c.sock.fd(), piece + c.got, pieceSize - c.got, MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (r <= 0) {
      connLost(c, r == 0 ? "closed" : std::string("failed: ") + strerror(errno));
      return false;
    }
    c.got += static_cast<size_t>(r);
    if (c.got < pieceSize) continue;
    // The current piece is complete.
    c.got = 0;
    if (c.stage == InConn::kPreamble) {
      const PeerPreamble& p = c.pre;
      const char* bad = p.magic != kPeerFrameMagic ? "not a Braid bootstrap connection (bad magic)"
                        : !macEqual(p.mac, peerHelloMac(key_, c.nonce, p)) ? "no proof of the id's key"
                        : p.dstRank != rank_                               ? "addressed to another rank"
                        : (p.srcRank < 0 || p.srcRank >= nranks_)          ? "source rank out of range"
                                                                           : nullptr;
      if (bad) {
        if (uint64_t held; dropWarnings_.allow(&held))
          BRAID_WARN("bootstrap rank %d: dropped a connection from %s: %s%s", rank_, c.addr.c_str(), bad,
                     heldText(held).c_str());
        return false;
      }
      PeerAck ack{kPeerFrameMagic, peerAckMac(key_, c.nonce, p)};
      // 16 bytes on a connection that has carried nothing back yet: they fit its send buffer.
      if (::send(c.sock.fd(), &ack, sizeof(ack), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(ack))) {
        if (uint64_t held; dropWarnings_.allow(&held))
          BRAID_WARN("bootstrap rank %d: dropped a connection from %s: cannot send the acknowledgement: %s%s", rank_,
                     c.addr.c_str(), strerror(errno), heldText(held).c_str());
        return false;
      }
      c.src = p.srcRank;
      c.stage = InConn::kHeader;
    } else if (c.stage == InConn::kHeader) {
      if (c.hdr.srcRank != c.src) {
        BRAID_WARN("bootstrap rank %d: corrupt frame from rank %d (%s): header says rank %d", rank_, c.src,
                   c.addr.c_str(), c.hdr.srcRank);
        connLost(c, "sent a corrupt frame");
        return false;
      }
      if (c.hdr.size == 0) {
        deliver(c.src, c.hdr.tag, std::vector<char>());
      } else {
        c.payload.resize(c.hdr.size);
        c.stage = InConn::kPayload;
      }
    } else {
      deliver(c.src, c.hdr.tag, std::move(c.payload));
      c.payload = std::vector<char>();
      c.stage = InConn::kHeader;
    }
  }
}

void BootstrapImpl::recvLoop() {
  RankTag tag(rank_);
  std::vector<std::unique_ptr<InConn>> conns;
  const double authSec = std::min(kAuthDeadlineSec, bootstrapTimeoutSec());
  const auto authLimit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(authSec));
  Clock::time_point acceptPausedUntil{};
  try {
    while (!stop_.load()) {
      std::vector<pollfd> fds;
      fds.push_back({wakeFd_.get(), POLLIN, 0});
      // Out of descriptors: leave the listener alone a moment rather than spin on it.
      fds.push_back({Clock::now() < acceptPausedUntil ? -1 : listener_.fd(), POLLIN, 0});
      for (auto& c : conns) fds.push_back({c->sock.fd(), POLLIN, 0});
      int n = ::poll(fds.data(), fds.size(), 100);
      if (stop_.load()) break;
      if (n < 0 && errno != EINTR) {
        std::lock_guard<std::mutex> lk(qmu_);
        threadError_ = std::string("poll failed: ") + strerror(errno);
        break;
      }
      std::vector<std::unique_ptr<InConn>> keep;
      auto now = Clock::now();
      size_t unauth = 0;
      for (size_t i = 0; i < conns.size(); ++i) {
        InConn& c = *conns[i];
        bool alive = fds[i + 2].revents == 0 || readConn(c);
        // A connection that has not authenticated soon after accept is dropped.
        if (alive && c.src < 0 && now - c.acceptedAt > authLimit) {
          BRAID_INFO(kSubBootstrap, "bootstrap rank %d: dropped a connection from %s: not authenticated within %.1f s",
                     rank_, c.addr.c_str(), authSec);
          alive = false;
        }
        if (alive) {
          if (c.src < 0) ++unauth;
          keep.push_back(std::move(conns[i]));
        }
      }
      conns.swap(keep);
      if (fds[1].revents != 0) {
        for (;;) {
          int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) {
            int err = errno;
            if (isLocalResourceErrno(err)) {
              BRAID_WARN("bootstrap rank %d: accept failed: %s; pausing accepts for 50 ms", rank_, strerror(err));
              acceptPausedUntil = Clock::now() + std::chrono::milliseconds(50);
            }
            break;
          }
          Socket sock(fd);
          // Past the cap, close at once: a real peer retries (it has sent nothing yet), a flood holds nothing.
          if (unauth >= kMaxUnauthConns) {
            if (uint64_t held; dropWarnings_.allow(&held))
              BRAID_WARN("bootstrap rank %d: %zu connections are waiting to authenticate; closing new ones%s", rank_,
                         unauth, heldText(held).c_str());
            continue;
          }
          auto c = std::make_unique<InConn>();
          c->nonce = bootstrapNonce();
          if (!sendChallenge(fd, kPeerFrameMagic, c->nonce)) continue;
          c->sock = std::move(sock);
          c->addr = socketPeerAddr(fd);
          c->acceptedAt = now;
          conns.push_back(std::move(c));
          ++unauth;
        }
      }
    }
  } catch (const std::exception& e) {
    // Out of memory for a payload, most likely; waits report it instead of hanging.
    {
      std::lock_guard<std::mutex> lk(qmu_);
      threadError_ = e.what();
    }
    qcv_.notify_all();
  }
}

}  // namespace

ncclResult_t Bootstrap::create(const ncclUniqueId& id, int rank, int nranks, const PeerInfo& mine,
                               const WaitContext* ctx, std::unique_ptr<Bootstrap>* out) {
  if (out == nullptr) return recordError(ncclInvalidArgument, "Bootstrap::create: out is NULL");
  if (nranks < 1) return recordError(ncclInvalidArgument, "bootstrap: nranks %d must be at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    return recordError(ncclInvalidArgument, "bootstrap: rank %d is out of range [0, %d)", rank, nranks);
  UniqueIdData d;
  BRAID_CHECK(bootstrapParseId(id, &d));
  if (d.flags & kIdUnauthenticated)
    BRAID_INFO(kSubInit | kSubBootstrap,
               "bootstrap rank %d: this job is unauthenticated: its unique id was made from NCCL_COMM_ID without "
               "BRAID_JOB_SECRET, so anyone who knows that address can join it as any rank; set BRAID_JOB_SECRET "
               "alike on every rank (braidrun does), or pass an id from ncclGetUniqueId without NCCL_COMM_ID",
               rank);
  std::unique_ptr<BootstrapImpl> b(new (std::nothrow) BootstrapImpl(rank, nranks, d.key, ctx));
  if (!b) return recordError(ncclSystemError, "bootstrap: out of memory");
  BRAID_CHECK(b->init(d, mine));
  *out = std::move(b);
  return ncclSuccess;
}

}  // namespace braid
