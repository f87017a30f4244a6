// NetProxy: the progress engine of the NET transport, one per communicator. It owns every NET connection of the
// communicator and deals them out over 1..kMaxThreads progress threads (net_proxy_thread.h) by lane (the
// connection's channel): a send on thread lane % T, a receive on (lane + T/2) % T, so with T threads the sends of
// up to T/2 channels and their receives each have a thread. Moving a socket step costs its thread a system call
// or two, and one thread serialises the connections: over loopback (net_engine_bench, 16 cores, 4 channels each
// way, 2 exchanges) 32 KiB steps took 126-157 us on one thread and 50-54 on four. The threads share the first
// failure (NetFailure), so a broken connection fails the whole communicator whichever thread holds it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "nccl.h"
#include "transport/conn_info.h"
#include "transport/net/net_backend.h"
#include "transport/net/net_proxy_thread.h"
#include "transport/net/proxy_affinity.h"

namespace braid {

class NetProxy {
 public:
  static constexpr int kMaxThreads = 16;

  // threads: progress threads (clamped to 1..kMaxThreads), each started when its first connection arrives. The
  // other arguments are every thread's (NetProxyThread).
  NetProxy(int rank, int spinUs = 50, ProxyPlacement placement = {}, bool executorDriven = false, int threads = 1);
  ~NetProxy();
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  // Hands a connected comm to the thread of `lane` (above); `info` points at a process-local FIFO that must stay
  // allocated until remove(*id) returns. `pair` names the connection's peer and tag (the same for both directions):
  // a comm that shares its connection with the other direction's (NetComm::sharesConnection) joins the thread of
  // that direction's comm of the same pair where there is one.
  ncclResult_t addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint32_t lane, uint64_t pair,
                       uint64_t* id);
  ncclResult_t addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint32_t lane, uint64_t pair,
                       uint64_t* id);
  // Unregisters and closes the connection; afterwards the engine never touches its FIFO again.
  void remove(uint64_t id);
  // NetProxyThread::driveInline over every thread's connections.
  bool driveInline(bool* sendsPending = nullptr, bool sendsOnly = false);
  // Wakes every blocked thread (a GPU launch; an executor leaving steps behind).
  void wakeSleeping();
  // Every thread asks `probe` (it may be called from several threads at once).
  void setWorkProbe(const std::function<NetWork()>& probe);
  // Waits (bounded, in all) until every thread's live send connections have handed their slots to the backend.
  bool drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  // After drain, where a backend needs it: every connection's clean end (NetComm::startClose), both directions at
  // once so that no rank waits on a peer that waits on it; false where some did not settle within timeoutSec or the
  // abort flag rose. Skipped (true) where a connection of the communicator failed: its peers may be gone.
  bool settleCloses(double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  // Stops and joins every thread; idempotent.
  void stop();
  int connections() const;
  int connectionsOn(int thread) const { return threads_[static_cast<size_t>(thread)]->connections(); }
  int threads() const { return static_cast<int>(threads_.size()); }
  // Blocking waits without a timeout, summed over the threads, and of one thread (for the tests).
  uint64_t blockedWaits() const;
  uint64_t blockedWaitsOn(int thread) const { return threads_[static_cast<size_t>(thread)]->blockedWaits(); }

 private:
  uint64_t globalId(size_t thread, uint64_t local) const { return local * kMaxThreads + thread; }
  // The thread for a comm of `pair` (send: a send comm) whose own direction would put it on `usual`.
  size_t threadFor(uint64_t pair, bool send, bool shared, size_t usual);

  std::shared_ptr<NetFailure> fail_;
  std::vector<std::unique_ptr<NetProxyThread>> threads_;
  std::mutex placedMu_;
  std::map<std::pair<uint64_t, bool>, size_t> placed_;  // (pair, send) -> the thread its comm went to
};

}  // namespace braid
