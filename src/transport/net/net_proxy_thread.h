// NetProxyThread: one progress thread of the NET transport's engine (net_proxy.h) and the connections dealt to
// it. For a send connection it watches the local FIFO's tail, posts each new slot to the backend and, when the
// backend is done with it, returns the slot to the executor by advancing head. For a receive connection it posts a
// receive into every free local slot (head + nSteps > step), and on completion writes sizes[slot] and publishes
// tail. A GPU LL step (sizes[] word marked kStepLlMark) travels as its lines, from and into the LL slots
// (conn_info.h). A broken connection gets its errorFlag set (so executors fail fast) and is logged with the peer
// rank; unless the peer merely closed it, every connection of the engine, on this thread or another, is then
// marked broken too (NetFailure). The thread blocks in epoll_wait on the backends' descriptors and an eventfd that
// whoever posts work writes; it polls the FIFOs only while work that publishes steps in mapped memory (a GPU batch)
// may be in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nccl.h"
#include "transport/conn_info.h"
#include "transport/net/net_backend.h"
#include "transport/net/proxy_affinity.h"

namespace braid {

// What the poster of work (the GPU executor) says about the work it posted so far: Busy while a batch that may
// publish NET steps in mapped memory has not completed, Idle once everything posted has, Unknown when it cannot
// tell (CUDA graph replays post work without telling anyone).
enum class NetWork { Busy, Idle, Unknown };

// The first failure among an engine's connections, shared by its threads: once `failed`, each thread marks its
// own connections broken with `why`. wakeAll (set before any thread starts) wakes the engine's sleeping threads.
struct NetFailure {
  std::atomic<bool> failed{false};
  std::mutex mu;  // guards code, why
  ncclResult_t code = ncclSuccess;
  std::string why;
  std::function<void()> wakeAll;
};

class NetProxyThread {
 public:
  // While the probe says Busy, it is asked again after this long.
  static constexpr std::chrono::microseconds kProbeEvery{20};

  // spinUs: after anything moved, the thread keeps polling this long before it considers blocking.
  // executorDriven: the executors drive the connections while they wait (driveInline) and flush at the end of an
  // operation (host communicators), so the thread watches only what they leave: send connections' sockets (room
  // to write, errors) and its eventfd, never incoming data, which would only have it race the waiting executor
  // for the connections (and, on a rank bound to one core, for the core). The thread pins itself to
  // placement.cpus (when not empty) as it starts.
  NetProxyThread(int rank, std::shared_ptr<NetFailure> failure, int spinUs = 50, ProxyPlacement placement = {},
                 bool executorDriven = false);
  ~NetProxyThread();
  NetProxyThread(const NetProxyThread&) = delete;
  NetProxyThread& operator=(const NetProxyThread&) = delete;

  // Hands a connected comm to the engine; `info` points at a process-local FIFO that must stay allocated
  // until remove(*id) returns. Starts the thread on first use.
  ncclResult_t addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint64_t* id);
  ncclResult_t addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint64_t* id);
  // Unregisters and closes the connection; afterwards the engine never touches its FIFO again.
  void remove(uint64_t id);
  // One pass over the connections on the caller's thread unless the engine is in one right now (try-lock): an
  // executor waiting on a NET connection moves its steps itself instead of waiting for the thread to wake. True
  // when anything moved. *sendsPending (may be null): a send connection still has steps the backend has not
  // finished (the thread must finish them). sendsOnly: only the send connections (the flush at the end of a host
  // operation: a receive has nothing to hand over, and looking for data that is not there costs a recv each).
  bool driveInline(bool* sendsPending = nullptr, bool sendsOnly = false);
  // Work was posted (a GPU launch, whose kernels publish steps in mapped memory and wake no descriptor; an
  // executor leaving steps behind at the end of an operation): wakes the thread if it is blocked.
  void wakeSleeping();
  // Who tells the engine whether posted work is still in flight (see NetWork); null: nobody, and outside
  // executorDriven mode the thread then naps (bounded) instead of blocking. Called on the engine's thread only
  // while it is about to block or polls for such work; clearing it waits for a call in progress.
  void setWorkProbe(std::function<NetWork()> probe);
  // Waits (bounded) until every live send connection has handed all published slots to the backend, so
  // closing right after a collective loses nothing. False on timeout or abort.
  bool drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  void startCloses();                        // NetComm::startClose on every live connection
  bool closesSettled();                      // one pass of NetComm::closeSettled over them: all settled
  // Stops and joins the thread; idempotent, never blocks on a peer. Registered connections are no
  // longer progressed (their errorFlag is left to the caller: abort sets it).
  void stop();
  int connections() const;
  // Times the thread blocked in epoll_wait without a timeout (for the tests: idle means blocked, not napping).
  uint64_t blockedWaits() const { return blockedWaits_.load(std::memory_order_relaxed); }

 private:
  struct Conn;
  // One of sendComm, recvComm (the other null).
  ncclResult_t add(std::unique_ptr<NetSendComm> sendComm, std::unique_ptr<NetRecvComm> recvComm, const ConnInfo& info,
                   uint64_t* id);
  void run();
  bool passAll();
  bool progress(Conn* c);
  // After a post into `slot`: records the request (1), or says the backend had no room (0), or that the post failed
  // and the connection is marked dead (-1).
  int recordPost(Conn* c, ncclResult_t r, NetRequest* const* req, uint32_t slot);
  void markDead(Conn* c, ncclResult_t res);
  // Retires c's posted requests in step order while they test complete (done++, then published(size));
  // false when the connection failed and was marked dead. Defined in net_proxy_thread.cc, its only user.
  template <typename Comm, typename Published>
  bool completeInOrder(Conn* c, Comm* comm, Published published, bool* moved);
  // Brings the epoll set in line with what the connections want watched, waits up to timeoutMs (-1: no limit)
  // and hands the results to the connections' pollResult. Called with mu_ held; unlocks it while waiting.
  void waitEvents(std::unique_lock<std::mutex>& lk, int timeoutMs);
  void syncInterest();
  void unwatch(Conn* c);
  NetWork probeWork();
  void wake();
  // Time accounting of a connection (NET logging at INFO): charges dt seconds to its current state (after a
  // block, only backend time).
  static void account(Conn* c, double dt, bool waited);
  static void logStats(const Conn& c);

  const int rank_;
  const std::chrono::microseconds spin_;
  const bool executorDriven_;
  const ProxyPlacement placement_;
  int eventFd_ = -1;
  int epollFd_ = -1;
  // Set while the thread is about to block; it stores this, then asks the probe and looks at the FIFOs once more,
  // so work posted before it was set is found and work posted after sees it set (wakeSleeping).
  std::atomic<uint32_t> sleeping_{0};
  mutable std::mutex mu_;                         // guards conns_, the epoll bookkeeping, nextId_, stopped_
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<int, uint32_t> watched_;     // fd -> events registered in epollFd_
  std::vector<pollfd> fds_;                       // the last interest, per connection in ranges_
  struct Range {
    uint64_t id;
    size_t start, count;
  };
  std::vector<Range> ranges_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  uint64_t nextId_ = 1;
  bool stopped_ = false;  // stop() ran: no restart
  std::mutex probeMu_;
  std::function<NetWork()> probe_;  // guarded by probeMu_
  std::atomic<uint64_t> blockedWaits_{0};
  const std::shared_ptr<NetFailure> fail_;  // a connection failed (not a clean close): every connection is marked dead
};

}  // namespace braid
