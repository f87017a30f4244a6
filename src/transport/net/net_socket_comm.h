// Connections of the socket backend (net_socket.cc): the connection handle and per-socket preamble that set a
// connection up, the setup helpers both sides use, and factories for the send and listen comms (a listen
// comm's accept() makes the receive comm).
#pragma once

#include <algorithm>
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

// A connected sender over `socks` (nonblocking, in socket-index order); bulkBytes > 0 gives it a bulk helper.
std::unique_ptr<NetSendComm> newSocketSendComm(std::vector<Socket> socks, int peer, size_t bulkBytes);
// A listener whose accept() takes the nSocks sockets presenting `nonce` and makes the receive comm.
std::unique_ptr<NetListenComm> newSocketListenComm(Socket listener, uint64_t nonce, int nSocks);

}  // namespace braid
