// NetProxy implementation: each progress thread (one by default) drives its NET connections through the
// backend's nonblocking calls, SIMPLE steps from the FIFO slots and GPU LL steps from the LL slots. While busy it
// loops; when idle it yields for a short while, then sleeps in ppoll on the backends' descriptors (so incoming data
// wakes it at once) and its eventfd, which add, remove, stop, GPU launches and host executors leaving steps behind
// write (wakeSleeping). The timeout grows to 250 us, and to 1 ms after a longer lull: GPU kernels publish
// steps in mapped memory, which rings nothing. Host executors that wait also drive the connections themselves
// (driveInline), so a step does not wait for this thread to be scheduled.
#include "transport/net/net_proxy.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
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
constexpr int kMinSleepUs = 20;
constexpr int kMaxSleepUs = 250;
// Idle for this long (between operations), naps may grow to kLongSleepUs: many idle comms stay cheap.
constexpr auto kLongIdle = std::chrono::milliseconds(20);
constexpr int kLongSleepUs = 1000;
constexpr int64_t kMaxProxyThreads = 16;
}  // namespace

struct NetProxy::Conn {
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
  // Where the connection's active time went (kept only with NET logging at INFO; logged when it closes):
  // steps in the backend (send: handed to the socket, not yet gone; recv: receives posted, data not yet
  // in), and nothing to move because of the executor (send: no step published; recv: every slot full).
  uint64_t bytes = 0;
  double inBackendSec = 0, waitExecutorSec = 0;
};

NetProxy::NetProxy(int rank, int defaultThreads, int spinUs, ProxyPlacement placement, bool executorDriven)
    : rank_(rank), spin_(std::max(0, spinUs)), executorDriven_(executorDriven), placement_(std::move(placement)) {
  const int64_t asked = params::NetProxyThreads() > 0 ? params::NetProxyThreads()
                        : placement_.maxThreads > 0  ? std::min(defaultThreads, placement_.maxThreads)
                                                     : defaultThreads;
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(asked, kMaxProxyThreads));
  for (int64_t i = 0; i < n; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->eventFd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // -1: that thread wakes by timeout
  }
}

NetProxy::~NetProxy() {
  stop();
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lk(w->mu);
      w->conns.clear();
    }
    if (w->eventFd >= 0) ::close(w->eventFd);
  }
}

void NetProxy::wake(Worker& w) {
  if (w.eventFd >= 0) {
    uint64_t one = 1;
    ssize_t r = write(w.eventFd, &one, sizeof(one));
    (void)r;  // a full counter already wakes the poll
  }
}

ncclResult_t NetProxy::addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint64_t* id) {
  auto c = std::make_unique<Conn>();
  c->send = true;
  c->comm = comm.get();
  c->sendComm = std::move(comm);
  c->info = info;
  c->peer = info.peer;
  return add(std::move(c), id);
}

ncclResult_t NetProxy::addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint64_t* id) {
  auto c = std::make_unique<Conn>();
  c->send = false;
  c->comm = comm.get();
  c->recvComm = std::move(comm);
  c->info = info;
  c->peer = info.peer;
  return add(std::move(c), id);
}

ncclResult_t NetProxy::add(std::unique_ptr<Conn> c, uint64_t* id) {
  if (c->info.nSteps == 0 || c->info.nSteps > kHostFifoMaxSteps) {
    return recordError(ncclInternalError, "NET proxy: connection with rank %d has %u steps", c->peer, c->info.nSteps);
  }
  std::lock_guard<std::mutex> top(mu_);
  if (stopped_) {
    return recordError(ncclInvalidUsage, "NET proxy of rank %d is stopped (communicator aborted); cannot add rank %d",
                       rank_, c->peer);
  }
  // A new FIFO has head == tail: 0, or BRAID_TEST_STEP_BASE's preset (hostFifoPresetSteps).
  c->posted = c->done = __atomic_load_n(c->info.head, __ATOMIC_ACQUIRE);
  c->id = nextId_++;
  *id = c->id;
  Worker& w = workerOf(c->id);
  std::lock_guard<std::mutex> lk(w.mu);
  w.conns[c->id] = std::move(c);
  if (!w.thread.joinable()) {
    try {
      w.thread = std::thread([this, &w] { run(w); });
    } catch (const std::system_error& e) {
      w.conns.erase(*id);
      return recordError(ncclSystemError, "NET proxy: cannot start a proxy thread of rank %d: %s", rank_, e.what());
    }
  }
  wake(w);
  return ncclSuccess;
}

void NetProxy::remove(uint64_t id) {
  if (id == 0) return;
  Worker& w = workerOf(id);
  std::unique_ptr<Conn> victim;
  {
    std::lock_guard<std::mutex> lk(w.mu);
    auto it = w.conns.find(id);
    if (it == w.conns.end()) return;
    victim = std::move(it->second);
    w.conns.erase(it);
  }
  // Closed outside the lock: the proxy thread is already past it.
  clearConnFailure(victim->info.errorFlag);
  logStats(*victim);  // BRAID_INFO: nothing unless NET logging is at INFO
  victim.reset();
  wake(w);
}

bool NetProxy::driveInline(bool* sendsPending) {
  bool moved = false, pending = false;
  for (auto& w : workers_) {
    std::unique_lock<std::mutex> lk(w->mu, std::try_to_lock);
    if (!lk.owns_lock()) continue;  // its thread is in a pass: it moves the steps
    for (auto& kv : w->conns) {
      Conn* c = kv.second.get();
      if (c->dead) continue;
      moved |= progress(c);
      pending = pending || (c->send && !c->dead && c->done < loadAcquire(c->info.tail));
    }
  }
  if (sendsPending) *sendsPending = pending;
  return moved;
}

void NetProxy::wakeSleeping() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the caller's FIFO stores before the flags' loads
  for (auto& w : workers_)
    if (w->sleeping.load(std::memory_order_relaxed) != 0) wake(*w);
}

void NetProxy::stop() {
  std::vector<std::thread> ts;
  {
    std::lock_guard<std::mutex> top(mu_);
    stopped_ = true;
    for (auto& w : workers_) {
      std::lock_guard<std::mutex> lk(w->mu);
      w->stop.store(true);
      ts.push_back(std::move(w->thread));
    }
  }
  for (auto& w : workers_) wake(*w);
  for (std::thread& t : ts) {
    if (!t.joinable()) continue;
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();  // cannot happen today; never self-join
    } else {
      t.join();
    }
  }
}

bool NetProxy::drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  for (;;) {
    bool pending = false, lost = false;
    for (auto& w : workers_) {
      std::lock_guard<std::mutex> lk(w->mu);
      if (!w->thread.joinable()) {
        lost = lost || !w->conns.empty();  // stopped with connections left: nothing will move them
        continue;
      }
      for (auto& kv : w->conns) {
        const Conn& c = *kv.second;
        if (c.send && !c.dead && !__atomic_load_n(c.info.errorFlag, __ATOMIC_ACQUIRE) &&
            c.done < loadAcquire(c.info.tail)) {
          pending = true;
          break;
        }
      }
    }
    if (lost) return false;
    if (!pending) return true;
    if ((abortFlag && abortFlag->load()) || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

int NetProxy::connections() const {
  int n = 0;
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> lk(w->mu);
    n += static_cast<int>(w->conns.size());
  }
  return n;
}

void NetProxy::markDead(Conn* c, ncclResult_t res) {
  c->dead = true;
  __atomic_store_n(c->info.errorFlag, 1u, __ATOMIC_RELEASE);
  std::string msg = pendingError();
  clearPendingError();
  setConnFailure(c->info.errorFlag, res, msg);
  // A peer closing between messages is how communicators end; anything else is a failure worth a warning.
  bool clean = msg.find("closed the connection") != std::string::npos && msg.find("middle") == std::string::npos;
  if (clean) {
    BRAID_INFO(kSubNet | kSubProxy, "NET proxy: %s connection with rank %d ended: %s", c->send ? "send" : "recv",
               c->peer, msg.c_str());
  } else {
    // The communicator's operations cannot complete: every connection fails, so no executor waits on another
    // connection (one a peer still keeps open) until its timeout.
    {
      std::lock_guard<std::mutex> lk(failMu_);
      if (failWhy_.empty()) {
        failCode_ = res;
        failWhy_ = "the connection with rank " + std::to_string(c->peer) + " failed: " + msg;
      }
    }
    failed_.store(true, std::memory_order_release);
    BRAID_WARN("NET proxy: %s connection with rank %d failed (%s): %s", c->send ? "send" : "recv", c->peer,
               errorString(res), msg.c_str());
  }
}

template <typename Comm, typename Published>
bool NetProxy::completeInOrder(Conn* c, Comm* comm, Published published, bool* moved) {
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

// One pass over one connection; true when anything moved.
bool NetProxy::progress(Conn* c) {
  ConnInfo& in = c->info;
  if (__atomic_load_n(in.errorFlag, __ATOMIC_ACQUIRE)) {
    c->dead = true;  // aborted, or the executor gave up on it
    return false;
  }
  if (failed_.load(std::memory_order_acquire)) {  // another connection failed (markDead warned of it)
    c->dead = true;
    {
      std::lock_guard<std::mutex> lk(failMu_);
      setConnFailure(in.errorFlag, failCode_, failWhy_);
    }
    __atomic_store_n(in.errorFlag, 1u, __ATOMIC_RELEASE);
    return true;
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
        markDead(c, recordError(ncclInternalError, "slot %u for rank %d holds an LL step, but this connection has no LL "
                                "slots", slot, c->peer));
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
      ncclResult_t r = c->sendComm->isend(data, size, flags, &req);
      if (r != ncclSuccess) {
        markDead(c, r);
        return true;
      }
      if (!req) break;
      c->reqs[slot] = req;
      c->posted++;
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
      ncclResult_t r = c->recvComm->irecv(in.buff + static_cast<size_t>(slot) * in.stepBytes, in.stepBytes, &req);
      if (r != ncclSuccess) {
        markDead(c, r);
        return true;
      }
      if (!req) break;
      c->reqs[slot] = req;
      c->posted++;
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

void NetProxy::account(Conn* c, double dt, bool napped) {
  if (c->dead) return;
  if (c->done < c->posted) {
    c->inBackendSec += dt;
  } else if (!napped) {
    const bool executorBehind = c->send ? c->posted >= loadAcquire(c->info.tail)
                                        : c->posted >= loadAcquire(c->info.head) + c->info.nSteps;
    if (executorBehind) c->waitExecutorSec += dt;
  }
}

void NetProxy::logStats(const Conn& c) {
  BRAID_INFO(kSubNet,
             "NET proxy: %s connection with rank %d closed: %.1f MB; while its thread was active, %.3f s with steps in "
             "the backend (%s), %.3f s waiting for the executor (%s)",
             c.send ? "send" : "recv", c.peer, static_cast<double>(c.bytes) / 1e6, c.inBackendSec,
             c.send ? "handed to the socket, not yet sent" : "receives posted, data not yet in", c.waitExecutorSec,
             c.send ? "no step published" : "every slot full, not yet consumed");
}

void NetProxy::run(Worker& w) {
  using Clock = std::chrono::steady_clock;
  RankTag tag(rank_);
  if (!pinThisThread(placement_.cpus)) {
    BRAID_WARN("NET proxy of rank %d: cannot pin a thread to CPUs %s; it keeps the rank's binding", rank_,
               formatCpuList(placement_.cpus).c_str());
  }
  pthread_setname_np(pthread_self(), "braid-netproxy");  // after pinning: for top -H / ps -L and the tests
  struct Range {
    uint64_t id;
    size_t start, count;
  };
  std::vector<pollfd> fds;
  std::vector<Range> ranges;
  auto idleSince = Clock::now();
  int sleepUs = kMinSleepUs;
  // Time accounting (NET logging at INFO): each pass's interval is charged to every connection's state; an
  // interval that contains a nap only to connections with steps in the backend (a nap on a slow socket is
  // backend time; a nap between operations is nobody's).
  const bool stats = logEnabled(LogLevel::Info, kSubNet);
  auto lastPass = Clock::now();
  bool napped = false;
  std::unique_lock<std::mutex> lk(w.mu);
  while (!w.stop.load(std::memory_order_relaxed)) {
    if (stats) {
      const auto now = Clock::now();
      const double dt = std::chrono::duration<double>(now - lastPass).count();
      lastPass = now;
      for (auto& kv : w.conns) account(kv.second.get(), dt, napped);
      napped = false;
    }
    bool moved = false;
    for (auto& kv : w.conns) {
      if (!kv.second->dead) moved |= progress(kv.second.get());
    }
    if (moved) {
      idleSince = Clock::now();
      sleepUs = kMinSleepUs;
      continue;
    }
    if (Clock::now() - idleSince < spin_) {
      lk.unlock();
      sched_yield();
      lk.lock();
      continue;
    }
    // Going to sleep: say so, then look once more (Worker::sleeping).
    w.sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool late = false;
    for (auto& kv : w.conns)
      if (!kv.second->dead) late |= progress(kv.second.get());
    if (late) {
      w.sleeping.store(0, std::memory_order_relaxed);
      idleSince = Clock::now();
      sleepUs = kMinSleepUs;
      continue;
    }
    fds.clear();
    ranges.clear();
    fds.push_back(pollfd{w.eventFd, POLLIN, 0});
    for (auto& kv : w.conns) {
      if (kv.second->dead || (executorDriven_ && !kv.second->send)) continue;
      size_t start = fds.size();
      kv.second->comm->pollFds(&fds);
      ranges.push_back(Range{kv.first, start, fds.size() - start});
    }
    lk.unlock();
    timespec ts{0, static_cast<long>(sleepUs) * 1000};
    int ready = ppoll(fds.data(), fds.size(), &ts, nullptr);
    w.sleeping.store(0, std::memory_order_relaxed);
    napped = true;
    if (ready > 0 && (fds[0].revents & POLLIN)) {
      uint64_t v;
      ssize_t r = read(w.eventFd, &v, sizeof(v));
      (void)r;
    }
    // Where executors drive the connections, one of them may hold the lock for a pass: blocking on it would make
    // that executor's unlock a futex wake on its hot path, so yield until the pass is over instead.
    if (executorDriven_) {
      while (!lk.try_lock()) sched_yield();
    } else {
      lk.lock();
    }
    if (ready > 0) {
      sleepUs = kMinSleepUs;
      for (const Range& rg : ranges) {
        auto it = w.conns.find(rg.id);
        if (it == w.conns.end() || it->second->dead) continue;  // removed while we slept
        ncclResult_t r = it->second->comm->pollResult(fds.data() + rg.start, rg.count);
        if (r != ncclSuccess) markDead(it->second.get(), r);
      }
      idleSince = Clock::now();  // something happened: spin again briefly
    } else {
      sleepUs = std::min(sleepUs * 2, Clock::now() - idleSince > kLongIdle ? kLongSleepUs : kMaxSleepUs);
    }
  }
}

}  // namespace braid
