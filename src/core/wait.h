// Bounded waiting. Every spin loop in Braid's host code goes through a Waiter: it spins briefly, then
// yields, then sleeps in short naps (ranks may outnumber cores), and every few milliseconds checks the
// abort flag, the deadline and whether the peer it waits on (or any observable peer) is still alive.
// On failure it records a message naming the peer and what was awaited, and returns the error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/peer_info.h"
#include "nccl.h"

namespace braid {

// Says, when a wait times out, which ranks did not reach this rank's operation and what each peer did last,
// from state the peers publish without a message (the runtime's progress table). A stalled rank (SIGSTOP, a
// debugger, a long host-side stall) blocks its neighbours first, so the neighbour a wait names is often not
// the rank to look at. Must be safe to call from any thread at any time.
class StallReporter {
 public:
  virtual ~StallReporter() = default;
  // Appended to the timeout message: "" when there is nothing to add.
  virtual std::string describe() const = 0;
  // Whether rank r's last operation failed on its own side (it reported an error, then may have exited): a
  // survivor that exits after its error is not the cause of a failure, and is not named as one.
  virtual bool failedOwnOp(int r) const { return false; }
};

// What a wait needs to know about its communicator. Owned by the comm; cheap to copy by pointer.
struct WaitContext {
  const std::atomic<uint32_t>* abortFlag = nullptr;  // non-zero: abort now (ncclCommAbort)
  double timeoutSec = 300;                           // per wait
  const PeerInfo* self = nullptr;
  const std::vector<PeerInfo>* peers = nullptr;      // all ranks, indexed by rank; may be null
  const char* commName = "";
  // Ranks not to watch for liveness (e.g. ranks excluded by ncclCommShrink); indexed by rank, may be null.
  const std::vector<uint8_t>* ignore = nullptr;
  // Set by the runtime where it can tell which ranks reached the current operation; may be null.
  const StallReporter* stall = nullptr;
  // Called at each poll of a wait, where set: moves the communicator's network steps on the waiting thread (host
  // communicators: ConnectionManager::driveNet). True when it moved anything: the wait then spins again rather
  // than napping, since more is likely to follow at once.
  bool (*drive)(void* arg) = nullptr;
  void* driveArg = nullptr;
};

class Waiter {
 public:
  // `peer`: the rank whose action we await (-1: none in particular); `what`: e.g. "data from rank 3".
  Waiter(const WaitContext* ctx, int peer, const char* what);
  // Call once per failed poll of the condition. Returns ncclSuccess to keep waiting, or the error
  // (ncclRemoteError for a dead peer or timeout, ncclInvalidUsage... for abort) with a recorded message.
  ncclResult_t poll();
  // Forget elapsed spinning (progress was made).
  void reset();

 private:
  ncclResult_t slowCheck();
  const WaitContext* ctx_;
  int peer_;
  const char* what_;
  uint64_t spins_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point phaseStart_;  // the spin/yield/nap schedule restarts here
  std::chrono::steady_clock::time_point nextCheck_;
  bool deadSeen_ = false;
  std::chrono::steady_clock::time_point deadSince_;
};

// Scan all observable peers; if one is dead, record "rank R (pid P on host H) is gone" and return
// ncclRemoteError. Used when a connection broke, to name the rank that died rather than the neighbour
// that reported it.
ncclResult_t checkPeersAlive(const WaitContext* ctx);
// ". <ctx->stall's description>", or "" without one: appended to every message that blames a peer for a
// failed wait (timeout, dead peer, broken connection), so it also names the ranks that never arrived.
std::string stallReport(const WaitContext* ctx);
// The lowest observable dead rank (ignored ranks skipped), or -1.
int firstDeadPeer(const WaitContext* ctx);

}  // namespace braid
