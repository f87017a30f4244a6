// Bootstrap internals shared by the rank side (bootstrap.cc) and the root (bootstrap_root.cc), and
// visible to white-box tests: the wire format of the root protocol and of rank-to-rank connections.
// Both ends are the same build, so frames are plain trivially copyable structs sent as bytes.
#pragma once

#include <atomic>
#include <chrono>
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

// Authentication. The key (UniqueIdData::key) never travels. Every listener (the root, each rank's)
// opens a connection with a challenge: a fresh random nonce. The connecting side answers with its own
// nonce and a keyed hash (SipHash-2-4, bootstrapMac) over both nonces and what it claims (rank, nranks,
// listen address...); the listener checks it before it believes or answers anything, and proves itself
// back with a keyed hash over both nonces (the table frame of the root, the PeerAck of a rank). So the
// peer table goes only to a rank that proved it holds the key, and a rank sends data only to a listener
// that proved it holds it too.
struct AuthChallenge {
  uint64_t magic;  // kRootFrameMagic or kPeerFrameMagic
  uint64_t nonce;  // the listener's
};

// What a keyed hash is for; part of its input so that one proof can never stand in for another.
enum AuthPurpose : uint32_t {
  kAuthRootHello = 1,
  kAuthRootReply = 2,
  kAuthPeerHello = 3,
  kAuthPeerAck = 4,
  kAuthCommHash = 5
};

// Every root frame (both directions) starts with this.
struct RootFrameHeader {
  uint64_t magic;  // kRootFrameMagic
  uint64_t mac;    // hello: kAuthRootHello proof; table: kAuthRootReply proof; error: 0 or a kAuthRootReply proof
  int32_t type;    // RootMsgType
  int32_t rank;    // sender's rank (hello) or recipient's rank (reply)
  uint64_t size;   // payload bytes that follow
};

struct HelloPayload {
  int32_t nranks;
  int32_t reserved;
  uint64_t nonce;       // the rank's, for the root's proof in its reply
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

// The connecting rank's answer to a rank listener's challenge; a connection that gets it wrong is dropped.
struct PeerPreamble {
  uint64_t magic;  // kPeerFrameMagic
  uint64_t mac;    // kAuthPeerHello proof over (challenge nonce, nonce, srcRank, dstRank)
  int32_t srcRank;
  int32_t dstRank;
  uint64_t nonce;  // the connecting rank's
};

// The listener's answer once the preamble checks out; only then does the connecting rank send messages.
struct PeerAck {
  uint64_t magic;  // kPeerFrameMagic
  uint64_t mac;    // kAuthPeerAck proof over (challenge nonce, preamble nonce, srcRank, dstRank)
};

// Then any number of messages: this header followed by `size` bytes.
struct MsgHeader {
  int32_t srcRank;
  int32_t tag;
  uint64_t size;
};

static_assert(std::is_trivially_copyable<HelloPayload>::value, "hello travels as bytes");
static_assert(sizeof(RootFrameHeader) == 32 && sizeof(PeerPreamble) == 32 && sizeof(MsgHeader) == 16 &&
                  sizeof(AuthChallenge) == 16 && sizeof(PeerAck) == 16,
              "wire structs have no hidden padding");

// SipHash-2-4 of `purpose`, both nonces and `len` bytes of `data` under the 16-byte key.
uint64_t bootstrapMac(const uint8_t key[kBootstrapKeyBytes], AuthPurpose purpose, uint64_t listenerNonce,
                      uint64_t connectorNonce, const void* data, size_t len);
// Proofs of the peer protocol (both ends compute them alike).
uint64_t peerHelloMac(const uint8_t key[kBootstrapKeyBytes], uint64_t listenerNonce, const PeerPreamble& p);
uint64_t peerAckMac(const uint8_t key[kBootstrapKeyBytes], uint64_t listenerNonce, const PeerPreamble& p);
// Proofs of the root protocol: over the header (its mac field zeroed) and the payload.
uint64_t rootFrameMac(const uint8_t key[kBootstrapKeyBytes], AuthPurpose purpose, uint64_t rootNonce,
                      uint64_t rankNonce, const RootFrameHeader& h, const void* payload, size_t len);
// Constant-time equality of two proofs.
bool macEqual(uint64_t a, uint64_t b);
// Random bytes from getrandom (or /dev/urandom); ncclSystemError if neither works.
ncclResult_t bootstrapRandomBytes(void* out, size_t len);
// A fresh nonce (random; falls back to a clock-and-counter mix that never repeats in this process).
uint64_t bootstrapNonce();
// Sends a challenge on a freshly accepted nonblocking socket (16 bytes always fit its empty send buffer).
bool sendChallenge(int fd, uint64_t magic, uint64_t nonce);

// How long a listener (root or rank) keeps a connection that has not authenticated, and how many such
// connections it holds at once: a flood of idle connections must not exhaust descriptors. Beyond the cap,
// a new connection is closed at once; the connecting rank retries, since nothing was exchanged yet.
constexpr double kAuthDeadlineSec = 2.0;
constexpr size_t kMaxUnauthConns = 64;
// accept() failed for want of a local resource (EMFILE, ENFILE, ENOBUFS, ENOMEM).
bool isLocalResourceErrno(int err);

// Warnings anyone who can reach a listener can cause once per connection (bad magic, no proof of the key,
// a connection closed early): a flood must not bury the log. The first kBurst print as they come; after
// that at most one per interval, saying how many were held back. Used by one thread (a listener's).
class DropWarnings {
 public:
  static constexpr int kBurst = 5;
  // Whether to print this warning; *held: how many were held back since the last one printed.
  bool allow(uint64_t* held) {
    const auto now = std::chrono::steady_clock::now();
    if (printed_ < kBurst || now - last_ >= std::chrono::seconds(1)) {
      ++printed_;
      last_ = now;
      *held = held_;
      held_ = 0;
      return true;
    }
    ++held_;
    return false;
  }

 private:
  int printed_ = 0;
  uint64_t held_ = 0;
  std::chrono::steady_clock::time_point last_{};
};
// What a printed DropWarnings line adds about the ones held back before it.
inline std::string heldText(uint64_t held) {
  return held ? " (and " + std::to_string(held) + " similar connections since the last such warning)" : "";
}

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

// Key for NCCL_COMM_ID mode, where every rank must derive the same value without talking: a hash of the root
// address NCCL_COMM_ID names (as parsed, so every spelling of it agrees) and of BRAID_JOB_SECRET (braidrun's). Without BRAID_JOB_SECRET anyone who knows
// the address can compute it: such a job is unauthenticated (said at init).
void commIdKey(const SockAddr& root, const std::string& jobSecret, uint8_t key[kBootstrapKeyBytes]);

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
// NCCL_COMM_ID, until the bootstrap timeout) and starts a detached root thread with `key`. `stop`, if
// given, receives the root's BootstrapRootStop.
ncclResult_t startBootstrapRoot(SockAddr* addr, const uint8_t key[kBootstrapKeyBytes],
                                const std::atomic<uint32_t>* abortFlag,
                                std::shared_ptr<BootstrapRootStop>* stop = nullptr);

}  // namespace braid
