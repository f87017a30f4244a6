// The network backend interface under the NET transport (docs/DESIGN.md §2): listen / connect / accept set a
// connection up; isend / irecv post a message (one FIFO slot) and test completes it; close (or the
// destructor) releases it. Messages on one comm complete in posting order. Nothing here blocks after setup,
// so a few proxy threads drive every connection of a communicator. Backends: socket (net_socket.cc), IB verbs
// (ib/ib_backend.cc) and NCCL network plugins (net_plugin.cc).
#pragma once

#include <poll.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/wait.h"
#include "nccl.h"

namespace braid {

constexpr size_t kNetHandleBytes = 128;
// Opaque bytes from listen(), carried to the connecting side through the bootstrap.
struct NetHandle {
  uint8_t data[kNetHandleBytes];
};

// Who is connecting to whom: presented by connect(), checked by accept(), so a stray or misrouted
// connection cannot be mistaken for the peer.
struct NetConnIdent {
  int32_t sendRank;
  int32_t recvRank;
  uint32_t tag;  // e.g. the channel
  uint32_t reserved;
};

// What a backend keeps of a connection where the connection of the other direction with the same peer and tag can
// find it (NetLinks).
struct NetLink {
  virtual ~NetLink() = default;
};

// One communicator rank's registry of NetLinks by peer, tag and kind (TransportContext::netLinks). The socket backend
// finds there the other direction's connection to a peer on a tag and runs both over one two-way TCP connection
// (net_socket.cc). Entries are weak: the connections own what they register.
class NetLinks {
 public:
  enum class Kind { Listen, Send, Recv };
  void put(int peer, uint32_t tag, Kind kind, const std::shared_ptr<NetLink>& link) {
    std::lock_guard<std::mutex> lk(mu_);
    links_[std::make_tuple(peer, tag, static_cast<int>(kind))] = link;
  }
  std::shared_ptr<NetLink> find(int peer, uint32_t tag, Kind kind) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = links_.find(std::make_tuple(peer, tag, static_cast<int>(kind)));
    return it == links_.end() ? nullptr : it->second.lock();
  }

 private:
  std::mutex mu_;
  std::map<std::tuple<int, uint32_t, int>, std::weak_ptr<NetLink>> links_;
};

// How long setup may block, and the abort flag it watches; `peer` names the other side in messages.
// `wait` (may be null) lets a blocked connect/accept see that a rank died: a dead peer never connects.
struct NetSetupParams {
  double timeoutSec = 120;
  const std::atomic<uint32_t>* abortFlag = nullptr;
  int peer = -1;
  const WaitContext* wait = nullptr;
  int64_t gpuBusId = -1;  // this rank's GPU (PeerInfo::busId; -1: host): IB and socket backends use the NIC nearest it
  // Socket backend: messages of at least this many bytes are moved by a helper thread of the connection, the proxy's
  // threads only posting and completing them (0: the proxy's threads move every byte).
  size_t bulkHelperBytes = 0;
  uint32_t tag = 0;           // the connection's tag (NetConnIdent::tag)
  NetLinks* links = nullptr;  // this rank's registry (null: every connection stands alone)
  // Socket backend: a send comm may run over this rank's connection from the peer on the tag (a two-way connection)
  // rather than open its own (BRAID_NET_SOCKET_TWO_WAY). Either way the receiving side follows.
  bool twoWay = false;
  // ... also the connection from the peer that this batch makes, taken before accept() (NetTransport: rings and trees).
  bool twoWayEarly = false;
  uint32_t nSteps = 0;  // the connection's FIFO steps (both sides agree): how many receives the engine posts ahead
};

// Base of a backend's request type: owned by its comm, valid until test() reports it done.
class NetRequest {
 protected:
  NetRequest() = default;
  ~NetRequest() = default;
};

class NetComm {
 public:
  virtual ~NetComm() = default;
  // Descriptors the proxy should poll when idle (appended to `fds`); the results come back through
  // pollResult with the same entries. A backend without descriptors appends none and is simply polled.
  virtual void pollFds(std::vector<pollfd>* fds) = 0;
  // Error (e.g. the peer closed the connection) when the poll results show the connection broke.
  virtual ncclResult_t pollResult(const pollfd* fds, size_t n) = 0;
  // The memory this comm's messages will come from or land in (the connection's FIFO slots), given once before the
  // first message: a backend that registers memory with its device does it here, not per message.
  virtual ncclResult_t registerBuffer(void* data, size_t bytes) { return ncclSuccess; }
  // True where the comm of the other direction with the same peer and tag runs over the same connection (a socket
  // backend's two-way connection): the engine then drives both on one thread, as they contend for the socket.
  virtual bool sharesConnection() const { return false; }
  // True while the backend learns of progress only by being called (a network plugin: its connection being made,
  // sends in flight): the engine then keeps polling rather than block on descriptors, and calls advance() on each
  // pass over the comm, which moves what needs no message to be posted or tested (the connection itself).
  virtual bool needsPolling() const { return false; }
  virtual ncclResult_t advance() { return ncclSuccess; }
  // A clean end, before close(), for backends that need one (a network plugin may refuse to close a connection with
  // requests outstanding, and receives are posted ahead): startClose() begins it once the communicator's sends have
  // drained, and closeSettled() moves it and says when it is over (or cannot finish). Not on abort.
  virtual void startClose() {}
  virtual bool closeSettled() { return true; }
  virtual void close() = 0;
};

class NetSendComm : public NetComm {
 public:
  // Posts `size` bytes; `data` must stay untouched until test() says done. *req == nullptr: too many
  // messages in flight, post again later. `flags` travel with the message to the receiver's test() (the NET
  // proxy carries a FIFO step's flag bits, conn_info.h).
  virtual ncclResult_t isend(const void* data, size_t size, uint32_t flags, NetRequest** req) = 0;
  // Progresses the comm; *done once the message has left (its buffer may be reused). `flags` may be null
  // (nothing is reported for sends).
  virtual ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) = 0;
};

class NetRecvComm : public NetComm {
 public:
  // Posts a receive of up to `maxSize` bytes into `data`; *req == nullptr: too many posted already.
  virtual ncclResult_t irecv(void* data, size_t maxSize, NetRequest** req) = 0;
  // Progresses the comm; *done once the message is in `data`, *size its byte count, *flags (if not null)
  // the sender's flags.
  virtual ncclResult_t test(NetRequest* req, bool* done, size_t* size, uint32_t* flags) = 0;
};

class NetListenComm {
 public:
  virtual ~NetListenComm() = default;
  // Waits (bounded by `p`) for the connection presenting `expect`; drops any other connection attempt.
  virtual ncclResult_t accept(const NetConnIdent& expect, const NetSetupParams& p,
                              std::unique_ptr<NetRecvComm>* out) = 0;
  virtual void close() = 0;
};

// The NIC a rank's connections go through, as sysfs knows it (the NET proxy's CPU placement).
struct NetNicPlace {
  std::string name;         // e.g. mlx5_0, eth0
  std::string sysfsDevice;  // its device directory: local_cpulist there lists its NUMA node's CPUs
};

class NetBackend {
 public:
  virtual ~NetBackend() = default;
  virtual const char* name() const = 0;
  // The NIC this rank's connections would use (gpuBusId: its GPU's PeerInfo::busId, -1 for host communicators);
  // false where the backend cannot name one with a device (loopback, a veth): placement then follows the GPU.
  virtual bool nicPlace(int64_t gpuBusId, NetNicPlace* out) { return false; }
  virtual ncclResult_t listen(NetHandle* handle, std::unique_ptr<NetListenComm>* out) = 0;
  // listen() for the connection `p` sets up: a backend that picks its device by the rank's GPU (p.gpuBusId)
  // overrides it; the others listen as listen() does.
  virtual ncclResult_t listenFor(const NetSetupParams& p, NetHandle* handle, std::unique_ptr<NetListenComm>* out) {
    return listen(handle, out);
  }
  virtual ncclResult_t connect(const NetHandle& handle, const NetConnIdent& ident, const NetSetupParams& p,
                               std::unique_ptr<NetSendComm>* out) = 0;
};

NetBackend* socketNetBackend();
// The backend NCCL_NET selects: "Socket", "IB" (sockets, with a warning, where IB is unusable), the loaded network
// plugin's name (net_plugin.h), or empty: the plugin where one is loaded, else IB where it is usable and
// NCCL_IB_DISABLE is not 1, else sockets (said at INFO once).
ncclResult_t selectNetBackend(NetBackend** out);

}  // namespace braid
