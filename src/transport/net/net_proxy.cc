// NetProxy: deals a communicator's NET connections out over its progress threads and fans the engine's calls
// out to them.
#include "transport/net/net_proxy.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace braid {

NetProxy::NetProxy(int rank, int spinUs, ProxyPlacement placement, bool executorDriven, int threads)
    : fail_(std::make_shared<NetFailure>()) {
  const int n = std::max(1, std::min(threads, kMaxThreads));
  for (int i = 0; i < n; ++i)
    threads_.push_back(std::make_unique<NetProxyThread>(rank, fail_, spinUs, placement, executorDriven));
  // A failure on one thread's connection wakes the others, whose connections then fail with it. The threads
  // outlive the failure's use: they stop (and stop waking) before threads_ goes.
  fail_->wakeAll = [this] {
    for (auto& t : threads_) t->wakeSleeping();
  };
}

NetProxy::~NetProxy() {
  stop();
  threads_.clear();
}

size_t NetProxy::threadFor(uint64_t pair, bool send, bool shared, size_t usual) {
  std::lock_guard<std::mutex> lk(placedMu_);
  size_t t = usual;
  if (shared) {  // with the other direction's comm: on two threads they would contend for the socket
    auto it = placed_.find({pair, !send});
    if (it != placed_.end()) t = it->second;
  }
  placed_[{pair, send}] = t;
  return t;
}

ncclResult_t NetProxy::addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint32_t lane, uint64_t pair,
                               uint64_t* id) {
  uint64_t local = 0;
  const size_t t = threadFor(pair, true, comm->sharesConnection(), lane % threads_.size());
  ncclResult_t r = threads_[t]->addSend(std::move(comm), info, &local);
  *id = r == ncclSuccess ? globalId(t, local) : 0;
  return r;
}

ncclResult_t NetProxy::addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint32_t lane, uint64_t pair,
                               uint64_t* id) {
  uint64_t local = 0;
  // Across the threads from the lane's send.
  const size_t t =
      threadFor(pair, false, comm->sharesConnection(), (lane + threads_.size() / 2) % threads_.size());
  ncclResult_t r = threads_[t]->addRecv(std::move(comm), info, &local);
  *id = r == ncclSuccess ? globalId(t, local) : 0;
  return r;
}

void NetProxy::remove(uint64_t id) {
  if (id == 0) return;
  const size_t t = id % kMaxThreads;
  if (t < threads_.size()) threads_[t]->remove(id / kMaxThreads);
}

bool NetProxy::driveInline(bool* sendsPending, bool sendsOnly) {
  bool moved = false, pending = false;
  for (auto& t : threads_) {
    bool p = false;
    moved |= t->driveInline(&p, sendsOnly);
    pending = pending || p;
  }
  if (sendsPending) *sendsPending = pending;
  return moved;
}

void NetProxy::wakeSleeping() {
  for (auto& t : threads_) t->wakeSleeping();
}

void NetProxy::setWorkProbe(const std::function<NetWork()>& probe) {
  if (!probe || threads_.size() == 1) {
    for (auto& t : threads_) t->setWorkProbe(probe);
    return;
  }
  // While a batch is in flight every polling thread asks every kProbeEvery (a cudaEventQuery each): a Busy answer
  // is shared for kProbeEvery, so the threads together ask about as often as one. Only Busy: a thread about to block
  // must see Idle fresh, after its sleeping flag (NetProxyThread::run), or a launch in between could go unnoticed.
  struct Shared {
    std::function<NetWork()> probe;
    std::atomic<int64_t> busyUntilNs{0};
  };
  auto shared = std::make_shared<Shared>();
  shared->probe = probe;
  auto asked = [shared]() {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    if (now < shared->busyUntilNs.load(std::memory_order_relaxed)) return NetWork::Busy;
    const NetWork w = shared->probe();
    if (w == NetWork::Busy) shared->busyUntilNs.store(
          now + std::chrono::duration_cast<std::chrono::nanoseconds>(NetProxyThread::kProbeEvery).count(),
          std::memory_order_relaxed);
    return w;
  };
  for (auto& t : threads_) t->setWorkProbe(asked);
}

bool NetProxy::drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  for (auto& t : threads_) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (!t->drain(std::max(0.0, left), abortFlag)) return false;
  }
  return true;
}

bool NetProxy::settleCloses(double timeoutSec, const std::atomic<uint32_t>* abortFlag) {
  if (fail_->failed.load(std::memory_order_acquire)) return true;
  for (auto& t : threads_) t->startCloses();  // every send's part goes out before anyone waits
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  for (;;) {
    bool all = true;
    for (auto& t : threads_) all = t->closesSettled() && all;
    if (all) return true;
    if ((abortFlag && abortFlag->load()) || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void NetProxy::stop() {
  for (auto& t : threads_) t->stop();
}

int NetProxy::connections() const {
  int n = 0;
  for (const auto& t : threads_) n += t->connections();
  return n;
}

uint64_t NetProxy::blockedWaits() const {
  uint64_t n = 0;
  for (const auto& t : threads_) n += t->blockedWaits();
  return n;
}

}  // namespace braid
