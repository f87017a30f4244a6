// Connections of the socket backend (net_socket.cc): the connection handle and per-socket preamble that set a
// connection up, the setup helpers both sides use, and factories for the send and listen comms (a listen
// comm's accept() makes the receive comm).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/socket.h"
#include "transport/net/net_backend.h"

namespace braid {

constexpr uint32_t kSockHandleMagic = 0x534f434b;        // "SOCK"
constexpr uint64_t kPreambleMagic = 0x4272616964536b31;  // "BraidSk1"

// What listen() puts in the NetHandle: where to connect, how many sockets, and a nonce each socket presents.
struct SocketHandle {
  uint32_t magic;
  uint32_t nSocks;
  uint64_t nonce;
  SockAddr addr;
};
static_assert(sizeof(SocketHandle) <= kNetHandleBytes, "socket handle fits");

// The first bytes on every socket of a connection: which connection and which of its sockets this is.
struct Preamble {
  uint64_t magic;
  uint64_t nonce;
  NetConnIdent ident;
  uint32_t sockIndex;
  uint32_t nSocks;
};

// Setup waits on the peer in slices this long, and checks between them that no rank has died: a rank that
// died after the bootstrap never connects (and its listener refuses us), which would otherwise cost the whole
// timeout and end in a message that names only the neighbour.
constexpr double kLivenessSliceSec = 0.1;

// Up to kLivenessSliceSec of `left`.
inline double livenessSlice(double left) { return std::max(0.01, std::min(left, kLivenessSliceSec)); }

// ncclRemoteError naming every dead rank ("rank R (pid P on host H) is gone ..."), or ncclSuccess.
ncclResult_t checkSetupPeers(const NetSetupParams& p, const char* doing);

// Replaces the pending message with one that says which step failed and with whom.
ncclResult_t rewrapError(ncclResult_t code, const char* fmt, int peer);

// The sockets of a connection (nonblocking, in socket-index order). A two-way connection carries a peer and tag's
// messages both ways: its send and receive comm share the set, and the last of them to go closes the sockets.
struct SockSet final : NetLink {
  explicit SockSet(std::vector<Socket> s) : socks(std::move(s)) {}
  std::vector<Socket> socks;
  std::atomic<bool> otherWay{false};  // a comm of the other direction runs over these sockets too
};

// A listener of one connection (NetLinks::Kind::Listen): where the peer connects, or, where this rank has a
// connection to the peer on the tag already, where the peer says on it that it sends the other way there.
struct SockListen final : NetLink {
  Socket listener;
  uint64_t nonce = 0;
  int nSocks = 1;
  std::shared_ptr<SockSet> early;  // taken before accept() by this rank's send comm to the peer (net_socket.cc)
};

// The nSocks sockets that connect to `l` presenting `expect`, waiting (bounded by `p`) and dropping strays. Where
// `otherWay` is given, the peer may instead say on its socket 0 that it sends over those sockets (the preamble
// writeOtherWayPreamble writes): *out is then `otherWay`.
ncclResult_t acceptSockets(SockListen* l, const NetConnIdent& expect, const NetSetupParams& p,
                           const std::shared_ptr<SockSet>& otherWay, std::shared_ptr<SockSet>* out);
// Says on `set` (the sockets of this rank's connection from or to the peer) that `ident`'s messages go over it
// from now on; nonce is the peer's listener's.
ncclResult_t writeOtherWayPreamble(SockSet* set, uint64_t nonce, const NetConnIdent& ident, const NetSetupParams& p);

// A connected sender over `set`; bulkBytes > 0 gives it a bulk helper.
std::unique_ptr<NetSendComm> newSocketSendComm(std::shared_ptr<SockSet> set, int peer, size_t bulkBytes);
// A listener whose accept() takes the connection `l` listens for and makes the receive comm.
std::unique_ptr<NetListenComm> newSocketListenComm(std::shared_ptr<SockListen> l);

}  // namespace braid
