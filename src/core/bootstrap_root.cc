// The bootstrap root: unique ids (random key + root address, or NCCL_COMM_ID), and the detached root
// thread that gathers one authenticated hello per rank and hands every rank the table. The thread serves
// exactly one communicator init and exits, or exits after BRAID_BOOTSTRAP_TIMEOUT, telling the ranks that
// did connect which ranks never arrived. It multiplexes all connections with poll(), so a silent or bogus
// connection (wrong magic, no proof of the key) is dropped without delaying the real ranks, and it holds at
// most kMaxUnauthConns unauthenticated connections, each for at most kAuthDeadlineSec.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
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

// How long the root spends handing one rank its reply before giving up on that rank.
constexpr double kReplySendTimeoutSec = 10;

struct RootConn {
  Socket sock;
  std::string peer;  // remote address, for logs
  RootFrameHeader hdr{};
  HelloPayload hello{};
  size_t got = 0;  // bytes of hdr+hello received so far
  int rank = -1;
  uint64_t nonce = 0;  // our challenge
  bool authenticated = false;
  Clock::time_point acceptedAt;
};

// "2" / "2,3" / "2-9,12" for long runs, so a 1000-rank report stays short.
std::string formatRankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ranks[i]);
    if (j >= i + 2)
      s += "-" + std::to_string(ranks[j]);
    else if (j == i + 1)
      s += "," + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

class RootServer {
 public:
  RootServer(Socket listener, const SockAddr& addr, const uint8_t key[kBootstrapKeyBytes], double timeoutSec,
             std::shared_ptr<BootstrapRootStop> stop)
      : listener_(std::move(listener)),
        where_(sockAddrToString(addr)),
        timeoutSec_(timeoutSec),
        stop_(std::move(stop)) {
    memcpy(key_, key, sizeof(key_));
  }

  void run() {
    serve();
    closeListener();  // the timeout's exit too
  }

 private:
  // Closes the listener and tells a waiting BootstrapRootStop (idempotent).
  void closeListener() {
    listener_.close();
    if (stop_) stop_->listenerClosed();
  }

  void serve() {
    BRAID_INFO(kSubBootstrap, "bootstrap root listening at %s (timeout %.0f s)", where_.c_str(), timeoutSec_);
    deadline_ = Clock::now() + toDuration(timeoutSec_);
    while (nranks_ < 0 || arrived_ < nranks_) {
      if (stop_ && stop_->requested()) {
        reportStopped();
        closeListener();
        logLeftovers();
        return;
      }
      if (Clock::now() >= deadline_) {
        reportTimeout();
        logLeftovers();
        return;
      }
      pollOnce();
    }
    closeListener();  // a late duplicate is refused rather than left hanging
    sendTable();
    logLeftovers();
  }

  static Clock::duration toDuration(double sec) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(sec));
  }

  void pollOnce() {
    std::vector<pollfd> fds;
    // Out of descriptors: leave the listener alone a moment rather than spin on it.
    const bool acceptPaused = Clock::now() < acceptPausedUntil_;
    fds.push_back({acceptPaused ? -1 : listener_.fd(), POLLIN, 0});
    // Joined ranks send nothing more; watching them tells us if one dies before the table is out.
    std::vector<int> watched;
    for (size_t r = 0; r < joined_.size(); ++r)
      if (joined_[r]) {
        fds.push_back({joined_[r]->sock.fd(), POLLIN, 0});
        watched.push_back(static_cast<int>(r));
      }
    for (auto& c : pending_) fds.push_back({c->sock.fd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), 50);
    if (n <= 0) return;
    size_t k = 1;
    // Joined first: reading hellos below may add to joined_.
    for (int r : watched) {
      short ev = fds[k++].revents;
      if (ev == 0) continue;
      auto& c = joined_[r];
      char b;
      ssize_t got = ::recv(c->sock.fd(), &b, 1, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        BRAID_WARN("bootstrap root %s: rank %d (%s) disconnected before the table was sent; waiting for it again",
                   where_.c_str(), c->rank, c->peer.c_str());
        --arrived_;
        c.reset();
      }
    }
    std::vector<std::unique_ptr<RootConn>> stillPending;
    const auto now = Clock::now();
    const auto authLimit = toDuration(std::min(kAuthDeadlineSec, timeoutSec_));
    for (auto& c : pending_) {
      short ev = fds[k++].revents;
      if (ev != 0 && !readHello(c)) continue;
      if (now - c->acceptedAt > authLimit) {
        BRAID_INFO(kSubBootstrap,
                   "bootstrap root %s: closed a connection from %s: no authenticated hello within %.1f s",
                   where_.c_str(), c->peer.c_str(), std::min(kAuthDeadlineSec, timeoutSec_));
        continue;
      }
      stillPending.push_back(std::move(c));
    }
    pending_.swap(stillPending);
    if (fds[0].revents != 0) acceptAll();
  }

  void acceptAll() {
    for (;;) {
      int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        int err = errno;
        if (isLocalResourceErrno(err)) {
          BRAID_WARN("bootstrap root %s: accept failed: %s; pausing accepts for 50 ms", where_.c_str(), strerror(err));
          acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(50);
        }
        return;  // EAGAIN: drained; anything else: retried at the next poll
      }
      Socket sock(fd);
      // Past the cap, close at once: a real rank retries (it has sent nothing yet), a flood holds nothing.
      if (pending_.size() >= kMaxUnauthConns) {
        if (uint64_t held; dropWarnings_.allow(&held))
          BRAID_WARN("bootstrap root %s: %zu connections are waiting to authenticate; closing new ones%s",
                     where_.c_str(), pending_.size(), heldText(held).c_str());
        continue;
      }
      auto c = std::make_unique<RootConn>();
      c->nonce = bootstrapNonce();
      if (!sendChallenge(fd, kRootFrameMagic, c->nonce)) continue;
      c->sock = std::move(sock);
      c->peer = socketPeerAddr(fd);
      c->acceptedAt = Clock::now();
      pending_.push_back(std::move(c));
    }
  }

  // Reads what is available. Returns true to keep the connection pending, false when it is done with
  // (joined, answered with an error, or dropped).
  bool readHello(std::unique_ptr<RootConn>& c) {
    constexpr size_t kTotal = sizeof(RootFrameHeader) + sizeof(HelloPayload);
    while (c->got < kTotal) {
      char* dst;
      size_t want;
      if (c->got < sizeof(RootFrameHeader)) {
        dst = reinterpret_cast<char*>(&c->hdr) + c->got;
        want = sizeof(RootFrameHeader) - c->got;
      } else {
        size_t off = c->got - sizeof(RootFrameHeader);
        dst = reinterpret_cast<char*>(&c->hello) + off;
        want = sizeof(HelloPayload) - off;
      }
      ssize_t r = ::recv(c->sock.fd(), dst, want, MSG_DONTWAIT);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (r <= 0) {
        if (uint64_t held; dropWarnings_.allow(&held))
          BRAID_WARN("bootstrap root %s: connection from %s closed before a complete hello (%zu of %zu bytes)%s",
                     where_.c_str(), c->peer.c_str(), c->got, kTotal, heldText(held).c_str());
        return false;
      }
      c->got += static_cast<size_t>(r);
      if (c->got == sizeof(RootFrameHeader)) {
        // Check the header before reading on; nothing it says is believed before the proof is checked.
        if (c->hdr.magic != kRootFrameMagic) {
          if (uint64_t held; dropWarnings_.allow(&held))
            BRAID_WARN("bootstrap root %s: dropped a connection from %s: not a Braid bootstrap hello (bad magic)%s",
                       where_.c_str(), c->peer.c_str(), heldText(held).c_str());
          return false;
        }
        if (c->hdr.type != kRootHello || c->hdr.size != sizeof(HelloPayload)) {
          if (uint64_t held; dropWarnings_.allow(&held))
            BRAID_WARN(
                "bootstrap root %s: dropped a connection from %s: unexpected frame type %d size %llu "
                "(different Braid versions?)%s",
                where_.c_str(), c->peer.c_str(), c->hdr.type, static_cast<unsigned long long>(c->hdr.size),
                heldText(held).c_str());
          return false;
        }
      }
    }
    uint64_t want = rootFrameMac(key_, kAuthRootHello, c->nonce, c->hello.nonce, c->hdr, &c->hello, sizeof(c->hello));
    if (!macEqual(c->hdr.mac, want)) {
      // A Braid rank holding an id of another root (or a stale one), or a forger: tell it, so a real rank
      // fails at once with a clear message instead of timing out. The reply carries nothing of ours.
      if (uint64_t held; dropWarnings_.allow(&held))
        BRAID_WARN("bootstrap root %s: rejected a hello as rank %d from %s: no proof of this root's key%s",
                   where_.c_str(), c->hdr.rank, c->peer.c_str(), heldText(held).c_str());
      sendError(*c, ncclInvalidArgument,
                "bootstrap: the unique id (commId) given to rank " + std::to_string(c->hdr.rank) +
                    " does not belong to the root at " + where_ +
                    " (key mismatch: an id from another ncclGetUniqueId, or a stale one)");
      return false;
    }
    c->authenticated = true;
    processHello(c);
    return false;
  }

  void processHello(std::unique_ptr<RootConn>& c) {
    int rank = c->hdr.rank;
    int n = c->hello.nranks;
    SockAddr la;
    if (n < 1 || n > kMaxBootstrapRanks || rank < 0 || rank >= n) {
      replyError(*c, ncclInvalidArgument, "bootstrap root %s: rank %d is out of range for nranks %d", where_.c_str(),
                 rank, n);
      return;
    }
    if (!fromWireAddr(c->hello.listenAddr, &la)) {
      replyError(*c, ncclInternalError, "bootstrap root %s: rank %d sent an invalid listen address", where_.c_str(),
                 rank);
      return;
    }
    if (nranks_ < 0) {
      nranks_ = n;
      firstRank_ = rank;
      joined_.resize(n);
      // The clock of the init starts with its first rank, not with ncclGetUniqueId.
      deadline_ = Clock::now() + toDuration(timeoutSec_);
    } else if (n != nranks_) {
      replyError(*c, ncclInvalidUsage,
                 "bootstrap: rank %d called init with nranks=%d, but rank %d called it with nranks=%d (root %s)", rank,
                 n, firstRank_, nranks_, where_.c_str());
      return;
    }
    if (joined_[rank]) {
      replyError(*c, ncclInvalidUsage, "bootstrap: rank %d joined twice (from %s and from %s; root %s)", rank,
                 joined_[rank]->peer.c_str(), c->peer.c_str(), where_.c_str());
      return;
    }
    c->rank = rank;
    BRAID_INFO(kSubBootstrap, "bootstrap root %s: rank %d of %d arrived from %s", where_.c_str(), rank, n,
               c->peer.c_str());
    joined_[rank] = std::move(c);
    ++arrived_;
  }

  __attribute__((format(printf, 4, 5))) void replyError(RootConn& c, ncclResult_t code, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    BRAID_WARN("%s", msg);
    sendError(c, code, msg);
  }

  // To an authenticated rank the error carries our proof; to anyone else, mac 0.
  void sendError(RootConn& c, ncclResult_t code, const std::string& msg) {
    std::vector<char> buf(sizeof(RootFrameHeader) + sizeof(ErrorPayloadHeader) + msg.size());
    RootFrameHeader h{kRootFrameMagic, 0, kRootError, c.hdr.rank,
                      static_cast<uint64_t>(sizeof(ErrorPayloadHeader) + msg.size())};
    ErrorPayloadHeader e{static_cast<int32_t>(code), static_cast<uint32_t>(msg.size())};
    memcpy(buf.data() + sizeof(h), &e, sizeof(e));
    memcpy(buf.data() + sizeof(h) + sizeof(e), msg.data(), msg.size());
    if (c.authenticated)
      h.mac =
          rootFrameMac(key_, kAuthRootReply, c.nonce, c.hello.nonce, h, buf.data() + sizeof(h), buf.size() - sizeof(h));
    memcpy(buf.data(), &h, sizeof(h));
    std::string what = "rank " + std::to_string(c.hdr.rank) + " at " + c.peer;
    if (c.sock.sendAll(buf.data(), buf.size(), kReplySendTimeoutSec, nullptr, what.c_str()) != ncclSuccess) {
      BRAID_WARN("bootstrap root %s: could not send an error to %s: %s", where_.c_str(), what.c_str(),
                 pendingError().c_str());
      clearPendingError();
    }
  }

  void sendTable() {
    std::vector<char> buf(sizeof(RootFrameHeader) + sizeof(TableEntry) * nranks_);
    auto* entries = reinterpret_cast<TableEntry*>(buf.data() + sizeof(RootFrameHeader));
    for (int r = 0; r < nranks_; ++r) {
      entries[r].listenAddr = joined_[r]->hello.listenAddr;
      entries[r].info = joined_[r]->hello.info;
    }
    // Each rank's proof covers its header and a keyed digest of the table (hashing the table once).
    const size_t tableBytes = sizeof(TableEntry) * static_cast<size_t>(nranks_);
    const uint64_t digest = bootstrapMac(key_, kAuthRootReply, 0, 0, entries, tableBytes);
    for (int r = 0; r < nranks_; ++r) {
      RootFrameHeader h{kRootFrameMagic, 0, kRootTable, r, static_cast<uint64_t>(tableBytes)};
      h.mac =
          rootFrameMac(key_, kAuthRootReply, joined_[r]->nonce, joined_[r]->hello.nonce, h, &digest, sizeof(digest));
      memcpy(buf.data(), &h, sizeof(h));
      std::string what = "rank " + std::to_string(r) + " at " + joined_[r]->peer;
      if (joined_[r]->sock.sendAll(buf.data(), buf.size(), kReplySendTimeoutSec, nullptr, what.c_str()) !=
          ncclSuccess) {
        BRAID_WARN("bootstrap root %s: could not send the table to %s: %s", where_.c_str(), what.c_str(),
                   pendingError().c_str());
        clearPendingError();
      }
    }
    BRAID_INFO(kSubBootstrap, "bootstrap root %s: all %d ranks arrived; table sent, root exits", where_.c_str(),
               nranks_);
  }

  void logLeftovers() {
    for (auto& c : pending_)
      BRAID_INFO(kSubBootstrap,
                 "bootstrap root %s: closing a connection from %s that never completed a hello (%zu bytes)",
                 where_.c_str(), c->peer.c_str(), c->got);
  }

  // The rank hosting this root (NCCL_COMM_ID) left before every rank joined (its init was aborted or failed).
  void reportStopped() {
    char msg[512];
    snprintf(msg, sizeof(msg),
             "bootstrap: the root at %s stopped before all ranks joined: the rank hosting it (rank 0, NCCL_COMM_ID) "
             "left its init",
             where_.c_str());
    BRAID_INFO(kSubBootstrap, "%s", msg);
    for (auto& c : joined_)
      if (c) sendError(*c, ncclRemoteError, msg);
  }

  void reportTimeout() {
    if (nranks_ < 0) {
      BRAID_INFO(kSubBootstrap, "bootstrap root %s: no rank connected within %.0f s; root exits", where_.c_str(),
                 timeoutSec_);
      return;
    }
    std::vector<int> missing;
    for (int r = 0; r < nranks_; ++r)
      if (!joined_[r]) missing.push_back(r);
    char msg[1024];
    snprintf(msg, sizeof(msg), "bootstrap: %s %s of %d never connected to the root at %s within %.0f s",
             missing.size() == 1 ? "rank" : "ranks", formatRankList(missing).c_str(), nranks_, where_.c_str(),
             timeoutSec_);
    BRAID_WARN("%s", msg);
    for (auto& c : joined_)
      if (c) sendError(*c, ncclRemoteError, msg);
  }

  Socket listener_;
  std::string where_;
  uint8_t key_[kBootstrapKeyBytes];
  double timeoutSec_;
  Clock::time_point acceptPausedUntil_{};
  DropWarnings dropWarnings_;
  std::shared_ptr<BootstrapRootStop> stop_;  // may be null
  Clock::time_point deadline_;
  int nranks_ = -1;
  int firstRank_ = -1;
  int arrived_ = 0;
  std::vector<std::unique_ptr<RootConn>> pending_;
  std::vector<std::unique_ptr<RootConn>> joined_;  // by rank
};

void fillId(ncclUniqueId* id, const SockAddr& addr, const uint8_t key[kBootstrapKeyBytes], uint32_t flags) {
  memset(id, 0, sizeof(*id));
  UniqueIdData d;
  memset(&d, 0, sizeof(d));
  d.magic = kUniqueIdMagic;
  memcpy(d.key, key, sizeof(d.key));
  d.flags = flags;
  WireAddr w = toWireAddr(addr);
  memcpy(d.addr, w.bytes, sizeof(d.addr));
  d.addrLen = w.len;
  memcpy(id->internal, &d, sizeof(d));
}

}  // namespace

WireAddr toWireAddr(const SockAddr& a) {
  WireAddr w;
  memset(&w, 0, sizeof(w));
  w.len = sockAddrLen(a);
  static_assert(sizeof(sockaddr_in6) <= sizeof(w.bytes), "sockaddr_in6 fits");
  memcpy(w.bytes, &a, w.len);
  return w;
}

bool fromWireAddr(const WireAddr& w, SockAddr* out) {
  if (w.len > sizeof(w.bytes)) return false;
  memset(out, 0, sizeof(*out));
  memcpy(out, w.bytes, w.len);
  return w.len != 0 && sockAddrLen(*out) == w.len;
}

bool sameSockAddr(const SockAddr& a, const SockAddr& b) {
  if (a.sa.sa_family != b.sa.sa_family) return false;
  if (a.sa.sa_family == AF_INET)
    return a.sin.sin_port == b.sin.sin_port && a.sin.sin_addr.s_addr == b.sin.sin_addr.s_addr;
  if (a.sa.sa_family == AF_INET6)
    return a.sin6.sin6_port == b.sin6.sin6_port && memcmp(&a.sin6.sin6_addr, &b.sin6.sin6_addr, 16) == 0;
  return false;
}

double bootstrapTimeoutSec() {
  int64_t t = params::BootstrapTimeout();
  return t < 1 ? 1.0 : static_cast<double>(t);
}

double bootstrapRankGraceSec(double timeoutSec) { return timeoutSec / 4 > 5 ? timeoutSec / 4 : 5; }

void BootstrapRootStop::stopAndWait(double maxSec) {
  stop_.store(true);
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait_for(lk, std::chrono::duration<double>(maxSec), [&] { return closed_; });
}

void BootstrapRootStop::listenerClosed() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

ncclResult_t startBootstrapRoot(SockAddr* addr, const uint8_t key[kBootstrapKeyBytes],
                                const std::atomic<uint32_t>* abortFlag, std::shared_ptr<BootstrapRootStop>* stop) {
  double timeoutSec = bootstrapTimeoutSec();
  Socket listener;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSec));
  for (;;) {
    SockAddr a = *addr;
    ncclResult_t r = listener.listen(&a);
    if (r == ncclSuccess) {
      *addr = a;
      break;
    }
    // A fixed NCCL_COMM_ID port may still be held by the root of the previous communicator.
    bool inUse = r == ncclRemoteError;
    if (!inUse || Clock::now() >= deadline || (abortFlag && abortFlag->load())) {
      std::string inner = pendingError();
      clearPendingError();
      return recordError(inUse ? ncclSystemError : r, "bootstrap: cannot start the root at %s: %s",
                         sockAddrToString(*addr).c_str(), inner.c_str());
    }
    clearPendingError();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  try {
    std::shared_ptr<BootstrapRootStop> flag;
    if (stop) {
      flag = std::make_shared<BootstrapRootStop>();
      *stop = flag;
    }
    auto server = std::make_shared<RootServer>(std::move(listener), *addr, key, timeoutSec, flag);
    std::thread([server] { server->run(); }).detach();
  } catch (const std::exception& e) {
    return recordError(ncclSystemError, "bootstrap: cannot start the root thread for %s: %s",
                       sockAddrToString(*addr).c_str(), e.what());
  }
  return ncclSuccess;
}

ncclResult_t bootstrapCreateRootId(ncclUniqueId* id) {
  if (id == nullptr) return recordError(ncclInvalidArgument, "bootstrapCreateRootId: id is NULL");
  SockAddr addr;
  BRAID_CHECK(findInterfaceAddr(&addr, nullptr));
  uint8_t key[kBootstrapKeyBytes];
  BRAID_CHECK(bootstrapRandomBytes(key, sizeof(key)));
  BRAID_CHECK(startBootstrapRoot(&addr, key, nullptr));
  fillId(id, addr, key, 0);
  return ncclSuccess;
}

ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return recordError(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  std::string commId = params::CommId();
  if (commId.empty()) return bootstrapCreateRootId(id);
  // Every rank may compute this id itself; rank 0 starts the root inside Bootstrap::create.
  SockAddr addr;
  if (parseSockAddr(commId.c_str(), &addr) != ncclSuccess) {
    std::string inner = pendingError();
    clearPendingError();
    return recordError(ncclInvalidArgument, "NCCL_COMM_ID=%s is not <ip>:<port>: %s", commId.c_str(), inner.c_str());
  }
  // Every rank connects to this address as it is: port 0 (any port, for a listener) would be refused forever.
  const bool v4 = addr.sa.sa_family == AF_INET;
  if ((v4 ? addr.sin.sin_port : addr.sin6.sin6_port) == 0)
    return recordError(ncclInvalidArgument, "NCCL_COMM_ID=%s: the port must not be 0 (every rank connects to it)",
                       commId.c_str());
  const std::string jobSecret = readStrEnv("BRAID_JOB_SECRET", "");
  uint8_t key[kBootstrapKeyBytes];
  commIdKey(addr, jobSecret, key);
  fillId(id, addr, key, jobSecret.empty() ? kIdUnauthenticated : 0);
  BRAID_INFO(kSubBootstrap, "unique id from NCCL_COMM_ID=%s (root started by rank 0)%s", commId.c_str(),
             jobSecret.empty() ? "; no BRAID_JOB_SECRET: unauthenticated" : "");
  return ncclSuccess;
}

ncclResult_t bootstrapParseId(const ncclUniqueId& id, UniqueIdData* out) {
  UniqueIdData d;
  memcpy(&d, id.internal, sizeof(d));
  if (d.magic != kUniqueIdMagic)
    return recordError(ncclInvalidArgument,
                       "unique id is not a Braid id (magic 0x%016llx, expected 0x%016llx): pass an id made by "
                       "ncclGetUniqueId of this library",
                       static_cast<unsigned long long>(d.magic), static_cast<unsigned long long>(kUniqueIdMagic));
  WireAddr w;
  memset(&w, 0, sizeof(w));
  memcpy(w.bytes, d.addr, sizeof(w.bytes));
  w.len = d.addrLen;
  SockAddr a;
  if (!fromWireAddr(w, &a))
    return recordError(ncclInvalidArgument, "unique id carries an invalid root address (length %u)", d.addrLen);
  *out = d;
  return ncclSuccess;
}

}  // namespace braid
