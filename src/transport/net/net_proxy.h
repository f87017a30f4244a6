// NetProxy: the per-communicator progress thread of the NET transport. For a send connection it watches
// the local FIFO's tail, posts each new slot to the backend and, when the backend is done with it, returns
// the slot to the executor by advancing head. For a receive connection it posts a receive into every free
// local slot (head + nSteps > step), and on completion writes sizes[slot] and publishes tail. A broken
// connection gets its errorFlag set (so executors fail fast) and is logged with the peer rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "nccl.h"
#include "transport/conn_info.h"
#include "transport/net/net_backend.h"

namespace braid {

class NetProxy {
 public:
  explicit NetProxy(int rank);
  ~NetProxy();
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  // Hands a connected comm to the proxy; `info` points at a process-local FIFO that must stay allocated
  // until remove(*id) returns. Starts the thread on first use.
  ncclResult_t addSend(std::unique_ptr<NetSendComm> comm, const ConnInfo& info, uint64_t* id);
  ncclResult_t addRecv(std::unique_ptr<NetRecvComm> comm, const ConnInfo& info, uint64_t* id);
  // Unregisters and closes the connection; afterwards the proxy never touches its FIFO again.
  void remove(uint64_t id);
  // Waits (bounded) until every live send connection has handed all published slots to the backend, so
  // closing right after a collective loses nothing. False on timeout or abort.
  bool drain(double timeoutSec, const std::atomic<uint32_t>* abortFlag);
  // Stops and joins the thread; idempotent, never blocks on a peer. Registered connections are no
  // longer progressed (their errorFlag is left to the caller: abort sets it).
  void stop();
  int connections() const;

 private:
  struct Conn;
  ncclResult_t add(std::unique_ptr<Conn> c, uint64_t* id);
  void run();
  bool progress(Conn* c);
  void markDead(Conn* c, ncclResult_t res);
  // Retires c's posted requests in step order while they test complete (done++, then published(size));
  // false when the connection failed and was marked dead. Defined in net_proxy.cc, its only user.
  template <typename Comm, typename Published>
  bool completeInOrder(Conn* c, Comm* comm, Published published, bool* moved);
  void wake();

  const int rank_;
  int eventFd_ = -1;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;  // guarded by mu_
  uint64_t nextId_ = 1;
  std::atomic<bool> stop_{false};
  bool stopped_ = false;  // stop() ran: no restart
  std::thread thread_;
};

}  // namespace braid
