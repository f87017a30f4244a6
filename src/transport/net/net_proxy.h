// NetProxy: the per-communicator progress threads of the NET transport (BRAID_NET_PROXY_THREADS, default 1;
// connections are dealt out round-robin in the order they are added, so with 2 a ring's sends and receives
// progress on separate threads; each connection is only ever touched by its own thread). For a send connection it watches
// the local FIFO's tail, posts each new slot to the backend and, when the backend is done with it, returns
// the slot to the executor by advancing head. For a receive connection it posts a receive into every free
// local slot (head + nSteps > step), and on completion writes sizes[slot] and publishes tail. A GPU LL step
// (sizes[] word marked kStepLlMark) travels as its lines, from and into the LL slots (conn_info.h). A broken
// connection gets its errorFlag set (so executors fail fast) and is logged with the peer rank; unless the peer merely
// closed it, every other connection of the proxy is then marked broken too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "transport/conn_info.h"
#include "transport/net/net_backend.h"
#include "transport/net/proxy_affinity.h"

namespace braid {

class NetProxy {
 public:
  // defaultThreads (capped by placement.maxThreads) applies unless BRAID_NET_PROXY_THREADS is set (> 0).
  // After anything moved, a thread keeps polling (yielding the CPU between passes) for spinUs before it naps:
  // steps a GPU publishes (tail/head in mapped host memory) wake no file descriptor, so a napping thread sees
  // them late. Each thread pins itself to placement.cpus (when not empty) as it starts.
  // executorDriven: the executors drive the connections while they wait (driveInline) and flush at the end of an
  // operation (host communicators), so a thread watches only what they leave: send connections' sockets (room to
  // write, errors) and its eventfd, never incoming data, which would only have it race the waiting executor for
  // the connections (and, on a rank bound to one core, for the core).
  NetProxy(int rank, int defaultThreads, int spinUs = 50, ProxyPlacement placement = {}, bool executorDriven = false);
  ~NetProxy();
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  // Hands a connected comm to the proxy; `info` points at a process-local FIFO that must stay allocated
  // until remove(*id) returns. Starts the connection's thread on first use.
  ncclResult_t addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint64_t* id);
  ncclResult_t addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint64_t* id);
  // Unregisters and closes the connection; afterwards the proxy never touches its FIFO again.
  void remove(uint64_t id);
  // One pass over the connections of every thread that is not running one right now (try-lock), on the caller's
  // thread: an executor waiting on a NET connection moves its steps itself instead of waiting for a thread to
  // wake. True when anything moved. *sendsPending (may be null): a send connection of a thread passed here still
  // has steps the backend has not finished (its thread must finish them).
  bool driveInline(bool* sendsPending = nullptr);
  // Wakes every thread that sleeps (in ppoll): a GPU launch, whose kernels publish steps in mapped memory, which
  // wakes no descriptor; an executor leaving steps behind at the end of an operation.
  void wakeSleeping();
  // Waits (bounded) until every live send connection has handed all published slots to the backend, so
  // closing right after a collective loses nothing. False on timeout or abort.
  bool drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  // Stops and joins the threads; idempotent, never blocks on a peer. Registered connections are no
  // longer progressed (their errorFlag is left to the caller: abort sets it).
  void stop();
  int connections() const;
  int threads() const { return static_cast<int>(workers_.size()); }

 private:
  struct Conn;
  // One progress thread and the connections it owns.
  struct Worker {
    int eventFd = -1;
    // Set while the thread sleeps in ppoll; it stores this, then looks at the FIFOs once more, so a step published
    // before it was set is found and one published after sees it set (wakeSleeping).
    std::atomic<uint32_t> sleeping{0};
    mutable std::mutex mu;
    std::map<uint64_t, std::unique_ptr<Conn>> conns;  // guarded by mu
    std::atomic<bool> stop{false};
    std::thread thread;
  };
  ncclResult_t add(std::unique_ptr<Conn> c, uint64_t* id);
  Worker& workerOf(uint64_t id) { return *workers_[(id - 1) % workers_.size()]; }
  void run(Worker& w);
  bool progress(Conn* c);
  void markDead(Conn* c, ncclResult_t res);
  // Retires c's posted requests in step order while they test complete (done++, then published(size));
  // false when the connection failed and was marked dead. Defined in net_proxy.cc, its only user.
  template <typename Comm, typename Published>
  bool completeInOrder(Conn* c, Comm* comm, Published published, bool* moved);
  static void wake(Worker& w);
  // Time accounting of a connection (NET logging at INFO): charges dt seconds to its current state (after a
  // nap, only backend time).
  static void account(Conn* c, double dt, bool napped);
  static void logStats(const Conn& c);

  const int rank_;
  const std::chrono::microseconds spin_;
  const bool executorDriven_;
  const ProxyPlacement placement_;
  std::vector<std::unique_ptr<Worker>> workers_;  // fixed at construction
  std::mutex mu_;                                  // guards nextId_, stopped_
  uint64_t nextId_ = 1;
  bool stopped_ = false;  // stop() ran: no restart
  std::atomic<bool> failed_{false};  // a connection failed (not a clean close): every connection is marked dead
  std::mutex failMu_;                // guards failCode_, failWhy_ (the first failure, which the others report)
  ncclResult_t failCode_ = ncclSuccess;
  std::string failWhy_;
};

}  // namespace braid
