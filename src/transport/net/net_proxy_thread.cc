// NetProxyThread implementation: one progress thread drives the NET connections dealt to it through the backends'
// nonblocking calls, SIMPLE steps from the FIFO slots and GPU LL steps from the LL slots. While anything moves it
// loops; then it polls for spinUs more, and on while the work probe says a GPU batch is in flight (its kernels
// publish steps in mapped memory, which wakes no descriptor). Otherwise it blocks in epoll_wait, without a
// timeout, on the backends' descriptors (incoming data, room to send, errors) and its eventfd, which add,
// remove, stop, GPU launches and host executors leaving steps behind write (wakeSleeping). Only where nobody can
// say when posted work is done (no probe, or CUDA graphs) does it nap, 20 us growing to 1 ms. Host executors
// that wait also drive the connections themselves (driveInline), so a step does not wait for this thread.
#include "transport/net/net_proxy_thread.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "transport/conn_failure.h"
#include "transport/host_fifo.h"

namespace braid {
namespace {
// Naps where nobody says when posted work is done (NetWork::Unknown): they grow from kMinNapUs to kMaxNapUs,
// and to kLongNapUs after kLongIdle without activity (many idle comms stay cheap).
constexpr int kMinNapUs = 20;
constexpr int kMaxNapUs = 250;
constexpr auto kLongIdle = std::chrono::milliseconds(20);
constexpr int kLongNapUs = 1000;
// While polling, the descriptors are looked at this often (a send connection's peer closing shows only there),
// and a busy probe is asked again after kProbeEvery (a cudaEventQuery each).
constexpr auto kPollCheck = std::chrono::milliseconds(1);
constexpr int kMaxEvents = 64;
constexpr uint64_t kEventFdTag = ~0ull;
}  // namespace

struct NetProxyThread::Conn {
  uint64_t id = 0;
  bool send = false;
  int peer = -1;
  std::unique_ptr<NetSendComm> sendComm;
  std::unique_ptr<NetRecvComm> recvComm;
  NetComm* comm = nullptr;
  ConnInfo info;
  uint64_t posted = 0;  // slots handed to the backend
  uint64_t done = 0;    // slots the backend finished
  NetRequest* reqs[kHostFifoMaxSteps] = {};
  bool dead = false;
  std::vector<int> watchedFds;  // its descriptors in the last epoll interest
  // Where the connection's active time went (kept only with NET logging at INFO; logged when it closes):
  // steps in the backend (send: handed to the socket, not yet gone; recv: receives posted, data not yet
  // in), and nothing to move because of the executor (send: no step published; recv: every slot full).
  uint64_t bytes = 0;
  double inBackendSec = 0, waitExecutorSec = 0;
};

NetProxyThread::NetProxyThread(int rank, std::shared_ptr<NetFailure> failure, int spinUs, ProxyPlacement placement,
                               bool executorDriven)
    : rank_(rank),
      spin_(std::max(0, spinUs)),
      executorDriven_(executorDriven),
      placement_(std::move(placement)),
      fail_(std::move(failure)) {
  eventFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epollFd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ >= 0 && eventFd_ >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kEventFdTag;
    if (epoll_ctl(epollFd_, EPOLL_CTL_ADD, eventFd_, &ev) != 0) {
      ::close(epollFd_);
      epollFd_ = -1;
    }
  }
}

NetProxyThread::~NetProxyThread() {
  stop();
  {
    std::lock_guard<std::mutex> lk(mu_);
    conns_.clear();
  }
  if (epollFd_ >= 0) ::close(epollFd_);
  if (eventFd_ >= 0) ::close(eventFd_);
}

void NetProxyThread::wake() {
  if (eventFd_ >= 0) {
    uint64_t one = 1;
    ssize_t r = write(eventFd_, &one, sizeof(one));
    (void)r;  // a full counter already wakes the wait
  }
}

ncclResult_t NetProxyThread::addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint64_t* id) {
  return add(std::move(comm), nullptr, info, id);
}

ncclResult_t NetProxyThread::addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint64_t* id) {
  return add(nullptr, std::move(comm), info, id);
}

ncclResult_t NetProxyThread::add(std::unique_ptr<NetSendComm> sendComm, std::unique_ptr<NetRecvComm> recvComm,
                                 const ConnInfo& info, uint64_t* id) {
  auto c = std::make_unique<Conn>();
  c->send = sendComm != nullptr;
  c->comm = c->send ? static_cast<NetComm*>(sendComm.get()) : static_cast<NetComm*>(recvComm.get());
  c->sendComm = std::move(sendComm);
  c->recvComm = std::move(recvComm);
  c->info = info;
  c->peer = info.peer;
  if (c->info.nSteps == 0 || c->info.nSteps > kHostFifoMaxSteps) {
    return recordError(ncclInternalError, "NET proxy: connection with rank %d has %u steps", c->peer, c->info.nSteps);
  }
  if (epollFd_ < 0 || eventFd_ < 0) {
    return recordError(ncclSystemError, "NET proxy of rank %d: cannot create its epoll set or eventfd: %s", rank_,
                       strerror(errno));
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (stopped_) {
    return recordError(ncclInvalidUsage, "NET proxy of rank %d is stopped (communicator aborted); cannot add rank %d",
                       rank_, c->peer);
  }
  // A new FIFO has head == tail: 0, or BRAID_TEST_STEP_BASE's preset (hostFifoPresetSteps).
  c->posted = c->done = __atomic_load_n(c->info.head, __ATOMIC_ACQUIRE);
  c->id = nextId_++;
  *id = c->id;
  conns_[c->id] = std::move(c);
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      conns_.erase(*id);
      return recordError(ncclSystemError, "NET proxy: cannot start the progress thread of rank %d: %s", rank_,
                         e.what());
    }
  }
  wake();
  return ncclSuccess;
}

void NetProxyThread::unwatch(Conn* c) {
  // Its sockets close next; a descriptor number the kernel then reuses must not look registered already.
  for (int fd : c->watchedFds) {
    auto it = watched_.find(fd);
    if (it == watched_.end()) continue;
    epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
    watched_.erase(it);  // shared with another connection (an IB device's async fd): re-added at the next sync
  }
  c->watchedFds.clear();
}

void NetProxyThread::remove(uint64_t id) {
  if (id == 0) return;
  std::unique_ptr<Conn> victim;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    victim = std::move(it->second);
    conns_.erase(it);
    unwatch(victim.get());
  }
  // Closed outside the lock: the engine is already past it.
  clearConnFailure(victim->info.errorFlag);
  logStats(*victim);  // BRAID_INFO: nothing unless NET logging is at INFO
  victim.reset();
  wake();
}

bool NetProxyThread::driveInline(bool* sendsPending, bool sendsOnly) {
  // An executor's thread: a connection failing here takes the backend's message with it (markDead reads and clears
  // the pending message), and the message the executor already holds for its own failure must survive that (an
  // operation that failed and then flushes its sockets would otherwise report a bare error code).
  ErrorScope keepCallers;
  bool moved = false, pending = false;
  std::unique_lock<std::mutex> lk(mu_, std::try_to_lock);
  if (lk.owns_lock()) {  // else the thread is in a pass: it moves the steps
    for (auto& kv : conns_) {
      Conn* c = kv.second.get();
      if (c->dead || (sendsOnly && !c->send)) continue;
      moved |= progress(c);
      pending = pending || (c->send && !c->dead && c->done < loadAcquire(c->info.tail));
    }
  }
  if (sendsPending) *sendsPending = pending;
  return moved;
}

void NetProxyThread::wakeSleeping() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the caller's FIFO (and probe) stores before the flag's load
  if (sleeping_.load(std::memory_order_relaxed) != 0) wake();
}

void NetProxyThread::setWorkProbe(std::function<NetWork()> probe) {
  {
    std::lock_guard<std::mutex> g(probeMu_);
    probe_ = std::move(probe);
  }
  wake();  // a thread napping for want of a probe may block now
}

NetWork NetProxyThread::probeWork() {
  std::lock_guard<std::mutex> g(probeMu_);
  if (!probe_) return executorDriven_ ? NetWork::Idle : NetWork::Unknown;
  return probe_();
}

void NetProxyThread::stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopped_ = true;
    stop_.store(true);
    t = std::move(thread_);
  }
  wake();
  if (!t.joinable()) return;
  if (t.get_id() == std::this_thread::get_id()) {
    t.detach();  // cannot happen today; never self-join
  } else {
    t.join();
  }
}

bool NetProxyThread::drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  for (;;) {
    bool pending = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      // Stopped with connections left: nothing will move them.
      if (!thread_.joinable()) return conns_.empty();
      for (auto& kv : conns_) {
        const Conn& c = *kv.second;
        if (c.send && !c.dead && !__atomic_load_n(c.info.errorFlag, __ATOMIC_ACQUIRE) &&
            c.done < loadAcquire(c.info.tail)) {
          pending = true;
          break;
        }
      }
    }
    if (!pending) return true;
    wake();
    if ((abortFlag && abortFlag->load()) || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void NetProxyThread::startCloses() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& kv : conns_) kv.second->comm->startClose();
}

bool NetProxyThread::closesSettled() {
  std::lock_guard<std::mutex> lk(mu_);
  bool all = true;
  for (auto& kv : conns_) all = kv.second->comm->closeSettled() && all;
  return all;
}

int NetProxyThread::connections() const {
  std::lock_guard<std::mutex> lk(mu_);
  return static_cast<int>(conns_.size());
}

void NetProxyThread::markDead(Conn* c, ncclResult_t res) {
  c->dead = true;
  std::string msg = pendingError();
  clearPendingError();
  setConnFailure(c->info.errorFlag, res, msg);  // the reason before the flag: an executor seeing the flag reads it
  __atomic_store_n(c->info.errorFlag, 1u, __ATOMIC_RELEASE);
  // A peer closing between messages is how communicators end; anything else is a failure worth a warning.
  bool clean = msg.find("closed the connection") != std::string::npos && msg.find("middle") == std::string::npos;
  if (clean) {
    BRAID_INFO(kSubNet | kSubProxy, "NET proxy: %s connection with rank %d ended: %s", c->send ? "send" : "recv",
               c->peer, msg.c_str());
  } else {
    // The communicator's operations cannot complete: every connection fails, so no executor waits on another
    // connection (one a peer still keeps open) until its timeout.
    {
      std::lock_guard<std::mutex> lk(fail_->mu);
      if (fail_->why.empty()) {
        fail_->code = res;
        fail_->why = "the connection with rank " + std::to_string(c->peer) + " failed: " + msg;
      }
    }
    fail_->failed.store(true, std::memory_order_release);
    if (fail_->wakeAll) fail_->wakeAll();  // the other threads' connections, wherever those threads block
    BRAID_WARN("NET proxy: %s connection with rank %d failed (%s): %s", c->send ? "send" : "recv", c->peer,
               errorString(res), msg.c_str());
  }
}

template <typename Comm, typename Published>
bool NetProxyThread::completeInOrder(Conn* c, Comm* comm, Published published, bool* moved) {
  const uint32_t n = c->info.nSteps;
  while (c->done < c->posted) {
    bool done = false;
    size_t size = 0;
    uint32_t flags = 0;
    ncclResult_t r = comm->test(c->reqs[c->done % n], &done, &size, &flags);
    if (r != ncclSuccess) {
      markDead(c, r);
      return false;
    }
    if (!done) break;
    c->done++;
    published(size, flags);
    *moved = true;
  }
  return true;
}

int NetProxyThread::recordPost(Conn* c, ncclResult_t r, NetRequest* const* req, uint32_t slot) {
  if (r != ncclSuccess) {
    markDead(c, r);
    return -1;
  }
  if (*req == nullptr) return 0;
  c->reqs[slot] = *req;
  c->posted++;
  return 1;
}

// One pass over one connection; true when anything moved.
bool NetProxyThread::progress(Conn* c) {
  ConnInfo& in = c->info;
  if (__atomic_load_n(in.errorFlag, __ATOMIC_ACQUIRE)) {
    c->dead = true;  // aborted, or the executor gave up on it
    return false;
  }
  if (fail_->failed.load(std::memory_order_acquire)) {  // another connection failed (markDead warned of it)
    c->dead = true;
    {
      std::lock_guard<std::mutex> lk(fail_->mu);
      setConnFailure(in.errorFlag, fail_->code, fail_->why);
    }
    __atomic_store_n(in.errorFlag, 1u, __ATOMIC_RELEASE);
    return true;
  }
  if (c->comm->needsPolling()) {  // a backend that learns of progress only when called (net_backend.h)
    const ncclResult_t r = c->comm->advance();
    if (r != ncclSuccess) {
      markDead(c, r);
      return true;
    }
  }
  bool moved = false;
  const uint32_t n = in.nSteps;
  if (c->send) {
    uint64_t tail = loadAcquire(in.tail);
    while (c->posted < tail && c->posted < c->done + n) {
      uint32_t slot = static_cast<uint32_t>(c->posted % n);
      const int32_t word = in.sizes[slot];
      uint32_t flags = (stepIsLastOf(word) ? static_cast<uint32_t>(kStepLastOfMessage) : 0u) |
                       (in.tags ? in.tags[slot] & kNetFlagTagMask : 0u);
      int32_t size = stepSizeOf(word);
      const char* data = in.buff + static_cast<size_t>(slot) * in.stepBytes;
      if (stepIsLl(word) && !in.llBuff) {
        markDead(c, recordError(ncclInternalError,
                                "slot %u for rank %d holds an LL step, but this connection has no LL slots", slot,
                                c->peer));
        return true;
      }
      if (stepIsLl(word)) {
        // A GPU LL step: its lines, from the LL slot (conn_info.h).
        const uint32_t wire = llWireBytes(static_cast<uint32_t>(word) & ~kStepLlMark);
        size = wire <= in.llSlotBytes ? static_cast<int32_t>(wire) : -1;
        data = in.llBuff + static_cast<size_t>(slot) * in.llSlotBytes;
        flags = kNetFlagLl;
      }
      if (size < 0 || static_cast<uint32_t>(size) > in.stepBytes) {
        markDead(c, recordError(ncclInternalError, "slot %u for rank %d holds %d bytes (step is %u)", slot, c->peer,
                                size, in.stepBytes));
        return true;
      }
      NetRequest* req = nullptr;
      const int got = recordPost(c, c->sendComm->isend(data, size, flags, &req), &req, slot);
      if (got < 0) return true;
      if (got == 0) break;
      c->bytes += static_cast<uint32_t>(size);
      moved = true;
    }
    if (!completeInOrder(c, c->sendComm.get(), [&](size_t, uint32_t) {
          storeRelease(in.head, c->done);  // the slot is free again for the executor
        }, &moved))
      return true;
  } else {
    uint64_t head = loadAcquire(in.head);
    // Never more than n receives outstanding, whatever head says: a GPU LL receiver hands back the slot of
    // an empty step (no lines to poll) before its frame has arrived, and a receive posted on head alone
    // then took the slot, and the request entry, of a step still in flight (the 16 MB LL all-reduce over
    // sockets: a 0-element ring segment stalled the next step for good).
    while (c->posted < head + n && c->posted < c->done + n) {
      uint32_t slot = static_cast<uint32_t>(c->posted % n);
      NetRequest* req = nullptr;
      const int got =
          recordPost(c, c->recvComm->irecv(in.buff + static_cast<size_t>(slot) * in.stepBytes, in.stepBytes, &req),
                     &req, slot);
      if (got < 0) return true;
      if (got == 0) break;
      moved = true;
    }
    bool bad = false;  // an LL step this side cannot take: nothing after it is published
    size_t badSize = 0;
    if (!completeInOrder(c, c->recvComm.get(), [&](size_t size, uint32_t flags) {
          c->bytes += size;
          const uint32_t slot = static_cast<uint32_t>((c->done - 1) % n);
          if (bad) return;
          if (flags & kNetFlagLl) {
            // An LL step's lines: into the LL slot the GPU polls, 8 bytes at a time (each data/flag pair lands
            // whole), before tail. sizes[] carries the mark, so a SIMPLE receiver of this step reports it.
            if (!in.llBuff || size > in.llSlotBytes || size % 16 != 0) {
              bad = true;
              badSize = size;
              return;
            }
            const auto* src = reinterpret_cast<const uint64_t*>(in.buff + static_cast<size_t>(slot) * in.stepBytes);
            auto* dst = reinterpret_cast<uint64_t*>(in.llBuff + static_cast<size_t>(slot) * in.llSlotBytes);
            for (size_t i = 0; i < size / 8; ++i) __atomic_store_n(dst + i, src[i], __ATOMIC_RELAXED);
            in.sizes[slot] = static_cast<int32_t>(kStepLlMark | static_cast<uint32_t>(size / 16 * 8));
          } else {
            in.sizes[slot] = static_cast<int32_t>(size) | static_cast<int32_t>(flags & kStepLastOfMessage);
          }
          if (in.tags) in.tags[slot] = flags & kNetFlagTagMask;
          storeRelease(in.tail, c->done);  // sizes[] (and LL lines) are visible before the new tail
        }, &moved))
      return true;
    if (bad) {
      markDead(c, recordError(ncclInternalError, "rank %d sent an LL step of %zu bytes where this side has %s", c->peer,
                              badSize, in.llBuff ? "LL slots of fewer bytes" : "no LL slots"));
      return true;
    }
  }
  return moved;
}

void NetProxyThread::account(Conn* c, double dt, bool napped) {
  if (c->dead) return;
  if (c->done < c->posted) {
    c->inBackendSec += dt;
  } else if (!napped) {
    const bool executorBehind = c->send ? c->posted >= loadAcquire(c->info.tail)
                                        : c->posted >= loadAcquire(c->info.head) + c->info.nSteps;
    if (executorBehind) c->waitExecutorSec += dt;
  }
}

void NetProxyThread::logStats(const Conn& c) {
  BRAID_INFO(kSubNet,
             "NET proxy: %s connection with rank %d closed: %.1f MB; while its thread was active, %.3f s with steps in "
             "the backend (%s), %.3f s waiting for the executor (%s)",
             c.send ? "send" : "recv", c.peer, static_cast<double>(c.bytes) / 1e6, c.inBackendSec,
             c.send ? "handed to the socket, not yet sent" : "receives posted, data not yet in", c.waitExecutorSec,
             c.send ? "no step published" : "every slot full, not yet consumed");
}

bool NetProxyThread::passAll() {
  bool moved = false;
  for (auto& kv : conns_)
    if (!kv.second->dead) moved |= progress(kv.second.get());
  return moved;
}

void NetProxyThread::syncInterest() {
  fds_.clear();
  ranges_.clear();
  for (auto& kv : conns_) {
    Conn* c = kv.second.get();
    c->watchedFds.clear();
    if (c->dead || (executorDriven_ && !c->send)) continue;
    const size_t start = fds_.size();
    c->comm->pollFds(&fds_);
    ranges_.push_back(Range{kv.first, start, fds_.size() - start});
    for (size_t i = start; i < fds_.size(); ++i)
      if (fds_[i].fd >= 0) c->watchedFds.push_back(fds_[i].fd);
  }
  // One registration per descriptor (connections may share one: an IB device's async fd), watching the union.
  std::unordered_map<int, uint32_t> want;
  for (const pollfd& p : fds_)
    if (p.fd >= 0) want[p.fd] |= static_cast<uint32_t>(p.events);
  for (auto it = watched_.begin(); it != watched_.end();) {
    if (want.count(it->first) == 0) {
      epoll_ctl(epollFd_, EPOLL_CTL_DEL, it->first, nullptr);
      it = watched_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& kv : want) {
    auto it = watched_.find(kv.first);
    if (it != watched_.end() && it->second == kv.second) continue;
    epoll_event ev{};
    ev.events = kv.second;  // POLLIN/POLLOUT are EPOLLIN/EPOLLOUT; errors and hang-ups are always reported
    ev.data.u64 = static_cast<uint64_t>(kv.first);
    const int op = it == watched_.end() ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(epollFd_, op, kv.first, &ev) != 0) {
      const int alt = errno == EEXIST ? EPOLL_CTL_MOD : errno == ENOENT ? EPOLL_CTL_ADD : -1;
      if (alt < 0 || epoll_ctl(epollFd_, alt, kv.first, &ev) != 0) continue;  // closed meanwhile: nothing to watch
    }
    watched_[kv.first] = kv.second;
  }
}

void NetProxyThread::waitEvents(std::unique_lock<std::mutex>& lk, int timeoutUs) {
  syncInterest();
  lk.unlock();
  epoll_event evs[kMaxEvents];
  int n;
  if (timeoutUs < 0) {
    blockedWaits_.fetch_add(1, std::memory_order_relaxed);
    do {
      n = epoll_wait(epollFd_, evs, kMaxEvents, -1);
    } while (n < 0 && errno == EINTR && !stop_.load(std::memory_order_relaxed));
  } else if (timeoutUs == 0) {
    n = epoll_wait(epollFd_, evs, kMaxEvents, 0);
  } else {
    // epoll_wait counts in milliseconds: a nap shorter than that waits on the epoll descriptor itself.
    pollfd p{epollFd_, POLLIN, 0};
    timespec ts{0, static_cast<long>(timeoutUs) * 1000};
    n = ppoll(&p, 1, &ts, nullptr) > 0 ? epoll_wait(epollFd_, evs, kMaxEvents, 0) : 0;
  }
  // Where executors drive the connections, one of them may hold the lock for a pass: blocking on it would make
  // that executor's unlock a futex wake on its hot path, so yield until the pass is over instead.
  if (executorDriven_) {
    while (!lk.try_lock()) sched_yield();
  } else {
    lk.lock();
  }
  if (n <= 0) return;
  bool io = false;
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 == kEventFdTag) {
      uint64_t v;
      ssize_t r = read(eventFd_, &v, sizeof(v));
      (void)r;
    } else {
      io = true;
    }
  }
  if (!io) return;
  // A pass first: what the backends can already complete (data before a hang-up, a failed work request's own
  // completion before the peer's reaction to it) is reported before what the descriptors say of the peer.
  passAll();
  // Hand each connection its descriptors' results, as poll would have filled them.
  for (pollfd& p : fds_) {
    p.revents = 0;
    for (int i = 0; i < n; ++i)
      if (evs[i].data.u64 == static_cast<uint64_t>(p.fd) && p.fd >= 0)
        p.revents = static_cast<short>(evs[i].events & (static_cast<uint32_t>(p.events) | EPOLLERR | EPOLLHUP));
  }
  for (const Range& rg : ranges_) {
    auto it = conns_.find(rg.id);
    if (it == conns_.end() || it->second->dead) continue;  // removed while we waited
    ncclResult_t r = it->second->comm->pollResult(fds_.data() + rg.start, rg.count);
    if (r != ncclSuccess) markDead(it->second.get(), r);
  }
}

void NetProxyThread::run() {
  using Clock = std::chrono::steady_clock;
  RankTag tag(rank_);
  if (!pinThisThread(placement_.cpus)) {
    BRAID_WARN("NET proxy of rank %d: cannot pin a progress thread to CPUs %s; it shares the rank's binding", rank_,
               formatCpuList(placement_.cpus).c_str());
  }
  pthread_setname_np(pthread_self(), "braid-netproxy");  // after pinning: for top -H / ps -L and the tests
  // Time accounting (NET logging at INFO): each pass's interval is charged to every connection's state; an
  // interval that contains a wait only to connections with steps in the backend (a wait on a slow socket is
  // backend time; a wait between operations is nobody's).
  const bool stats = logEnabled(LogLevel::Info, kSubNet);
  auto lastPass = Clock::now();
  bool waited = false;
  auto lastMove = Clock::now(), lastCheck = Clock::now(), nextProbe = Clock::now();
  int napUs = kMinNapUs;
  auto yield = [&](std::unique_lock<std::mutex>& lk) {
    lk.unlock();
    sched_yield();
    if (executorDriven_) {
      while (!lk.try_lock()) sched_yield();
    } else {
      lk.lock();
    }
  };
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_.load(std::memory_order_relaxed)) {
    if (stats) {
      const auto now = Clock::now();
      const double dt = std::chrono::duration<double>(now - lastPass).count();
      lastPass = now;
      for (auto& kv : conns_) account(kv.second.get(), dt, waited);
      waited = false;
    }
    auto now = Clock::now();
    if (passAll()) {
      lastMove = now;
      napUs = kMinNapUs;
      continue;
    }
    // Polling: a send connection's peer closing, or room in a full socket, shows only on the descriptors. A
    // backend without descriptors for what it waits on keeps the thread polling (NetComm::needsPolling).
    auto polled = [&] {
      for (auto& kv : conns_)
        if (!kv.second->dead && kv.second->comm->needsPolling()) return true;
      return false;
    };
    const bool spinning = now - lastMove < spin_ || polled();
    if (spinning || now < nextProbe) {
      if (now - lastCheck > kPollCheck) {
        waitEvents(lk, 0);
        lastCheck = now;
      } else {
        yield(lk);
      }
      continue;
    }
    // About to block: say so, then ask the probe and look once more (sleeping_).
    sleeping_.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const NetWork work = probeWork();
    if (work == NetWork::Busy) {  // a GPU batch in flight: its steps appear in mapped memory only
      sleeping_.store(0, std::memory_order_relaxed);
      nextProbe = now + kProbeEvery;
      continue;
    }
    if (passAll()) {
      sleeping_.store(0, std::memory_order_relaxed);
      lastMove = Clock::now();
      napUs = kMinNapUs;
      continue;
    }
    int timeoutUs = -1;
    if (work == NetWork::Unknown) {
      timeoutUs = napUs;
      napUs = std::min(napUs * 2, Clock::now() - lastMove > kLongIdle ? kLongNapUs : kMaxNapUs);
    }
    waitEvents(lk, timeoutUs);
    sleeping_.store(0, std::memory_order_relaxed);
    waited = true;
    lastCheck = Clock::now();
  }
}

}  // namespace braid
