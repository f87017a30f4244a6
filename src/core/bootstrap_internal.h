// Bootstrap internals shared by the rank side (bootstrap.cc) and the root (bootstrap_root.cc), and
// visible to white-box tests: the wire format of the root protocol and of rank-to-rank connections.
// Both ends are the same build, so frames are plain trivially copyable structs sent as bytes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "core/bootstrap.h"
#include "core/peer_info.h"
#include "core/socket.h"
#include "nccl.h"

namespace braid {

constexpr uint64_t kRootFrameMagic = 0x427261696452743aull;  // "BraidRt:"
constexpr uint64_t kPeerFrameMagic = 0x4272616964503250ull;  // "BraidP2P"

enum RootMsgType : int32_t { kRootHello = 1, kRootTable = 2, kRootError = 3 };

struct WireAddr {
  uint8_t bytes[28];  // sockaddr_in or sockaddr_in6
  uint32_t len;
};

// Every root frame (both directions) starts with this; the secret proves the sender belongs to the comm.
struct RootFrameHeader {
  uint64_t magic;   // kRootFrameMagic
  uint64_t secret;  // UniqueIdData::secret
  int32_t type;     // RootMsgType
  int32_t rank;     // sender's rank (hello) or recipient's rank (reply)
  uint64_t size;    // payload bytes that follow
};

struct HelloPayload {
  int32_t nranks;
  int32_t reserved;
  WireAddr listenAddr;  // where this rank accepts bootstrap connections from peers
  PeerInfo info;
};

// The table is nranks of these, indexed by rank.
struct TableEntry {
  WireAddr listenAddr;
  PeerInfo info;
};

// An error frame's payload: this header, then `len` bytes of message (no terminator).
struct ErrorPayloadHeader {
  int32_t code;  // ncclResult_t the rank should return
  uint32_t len;
};

// First bytes on every rank-to-rank connection; a connection that gets them wrong is dropped.
struct PeerPreamble {
  uint64_t magic;  // kPeerFrameMagic
  uint64_t secret;
  int32_t srcRank;
  int32_t dstRank;
};

// Then any number of messages: this header followed by `size` bytes.
struct MsgHeader {
  int32_t srcRank;
  int32_t tag;
  uint64_t size;
};

static_assert(std::is_trivially_copyable<HelloPayload>::value, "hello travels as bytes");
static_assert(sizeof(RootFrameHeader) == 32 && sizeof(PeerPreamble) == 24 && sizeof(MsgHeader) == 16,
              "wire structs have no hidden padding");

// Largest table a root accepts to build (nranks bound); protects the root from garbage hellos.
constexpr int32_t kMaxBootstrapRanks = 1 << 20;

WireAddr toWireAddr(const SockAddr& a);
// False if the bytes are not a valid IPv4/IPv6 socket address.
bool fromWireAddr(const WireAddr& w, SockAddr* out);
bool sameSockAddr(const SockAddr& a, const SockAddr& b);

// Seconds any bootstrap wait may take (BRAID_BOOTSTRAP_TIMEOUT, at least 1).
double bootstrapTimeoutSec();
// How much longer than the root a rank waits for the table, so the root's report of missing ranks (more
// informative than a plain timeout) arrives first.
double bootstrapRankGraceSec(double timeoutSec);

// Secret for NCCL_COMM_ID mode, where every rank must derive the same value without talking:
// a hash of the NCCL_COMM_ID string and of BRAID_JOB_SECRET (set by braidrun), never 0.
uint64_t commIdSecret(const std::string& commId, const std::string& jobSecret);

// Ends a root early (its host rank left: the ranks that joined get an error, and the port is freed for a
// retry instead of being held until the timeout). stopAndWait returns once the root thread has closed its
// listener (bounded): returning earlier let a retry's rank connect to the old, closing listener and get
// reset (BootstrapInit.CommIdRetryAfterAbortedInit failed 4 of 40 runs on a loaded 2-core machine).
class BootstrapRootStop {
 public:
  void stopAndWait(double maxSec);
  bool requested() const { return stop_.load(); }
  void listenerClosed();  // the root thread, once its listener is closed (any exit)

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;  // guarded by mu_
};

// Listens on `addr` (retrying while the port is still held, e.g. by the previous root of a fixed
// NCCL_COMM_ID, until the bootstrap timeout) and starts a detached root thread with `secret`. `stop`, if
// given, receives the root's BootstrapRootStop.
ncclResult_t startBootstrapRoot(SockAddr* addr, uint64_t secret, const std::atomic<uint32_t>* abortFlag,
                               std::shared_ptr<BootstrapRootStop>* stop = nullptr);

}  // namespace braid
