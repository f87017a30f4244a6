// Waiter: spin, then yield, then nap; every few milliseconds check abort, deadline and peer liveness.
#include "core/wait.h"

#include <sched.h>
#include <time.h>

#include "core/result.h"

namespace braid {
namespace {
constexpr uint64_t kSpinsBeforeYield = 256;
constexpr auto kYieldPeriod = std::chrono::milliseconds(5);
constexpr auto kCheckPeriod = std::chrono::milliseconds(20);
constexpr auto kDeadGrace = std::chrono::milliseconds(500);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

Waiter::Waiter(const WaitContext* ctx, int peer, const char* what) : ctx_(ctx), peer_(peer), what_(what) {
  start_ = std::chrono::steady_clock::now();
  nextCheck_ = start_ + kCheckPeriod;
}

void Waiter::reset() {
  spins_ = 0;
  deadSeen_ = false;
  start_ = std::chrono::steady_clock::now();
  nextCheck_ = start_ + kCheckPeriod;
}

ncclResult_t Waiter::poll() {
  ++spins_;
  if (spins_ < kSpinsBeforeYield) {
    cpuRelax();
    if ((spins_ & 63) != 0) return ncclSuccess;
  } else if (std::chrono::steady_clock::now() - start_ < kYieldPeriod) {
    // Yielding keeps latency low when ranks outnumber cores (the peer we wait for gets our core).
    sched_yield();
  } else {
    // Long waits nap so an idle rank does not burn a core; 50 us keeps the wake-up latency modest.
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, nullptr);
  }
  if (ctx_ && ctx_->abortFlag && ctx_->abortFlag->load(std::memory_order_relaxed))
    return recordError(ncclInvalidUsage, "%s: communicator aborted while waiting for %s", ctx_->commName, what_);
  auto now = std::chrono::steady_clock::now();
  if (now < nextCheck_) return ncclSuccess;
  nextCheck_ = now + kCheckPeriod;
  return slowCheck();
}

ncclResult_t Waiter::slowCheck() {
  if (ctx_ == nullptr) return ncclSuccess;
  // A peer that exited may still have data in flight to us (socket buffers, a proxy thread): it only
  // counts as dead when the wait has also made no progress for kDeadGrace after we noticed.
  int dead = -1;
  if (ctx_->self && ctx_->peers) {
    const auto& peers = *ctx_->peers;
    if (peer_ >= 0 && peer_ < static_cast<int>(peers.size()) && !peerProcessAlive(*ctx_->self, peers[peer_]))
      dead = peer_;
    for (size_t r = 0; dead < 0 && r < peers.size(); ++r) {
      if (static_cast<int>(r) == ctx_->self->rank) continue;
      if (ctx_->ignore && r < ctx_->ignore->size() && (*ctx_->ignore)[r]) continue;
      if (!peerProcessAlive(*ctx_->self, peers[r])) dead = static_cast<int>(r);
    }
  }
  auto now = std::chrono::steady_clock::now();
  if (dead < 0) {
    deadSeen_ = false;
  } else if (!deadSeen_) {
    deadSeen_ = true;
    deadSince_ = now;
  } else if (now - deadSince_ > kDeadGrace) {
    const PeerInfo& p = (*ctx_->peers)[dead];
    return recordError(ncclRemoteError, "rank %d (pid %d on host %s) is gone: it exited or was killed while we waited for %s",
                       dead, p.pid, p.hostName, what_);
  }
  double waited = std::chrono::duration<double>(now - start_).count();
  if (ctx_->timeoutSec > 0 && waited > ctx_->timeoutSec) {
    if (peer_ >= 0)
      return recordError(ncclRemoteError, "timed out after %.0f s waiting for %s (rank %d made no progress; BRAID_TIMEOUT=%g)",
                         waited, what_, peer_, ctx_->timeoutSec);
    return recordError(ncclRemoteError, "timed out after %.0f s waiting for %s", waited, what_);
  }
  return ncclSuccess;
}

ncclResult_t checkPeersAlive(const WaitContext* ctx) {
  if (ctx == nullptr || ctx->self == nullptr || ctx->peers == nullptr) return ncclSuccess;
  const auto& peers = *ctx->peers;
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) == ctx->self->rank) continue;
    if (ctx->ignore && r < ctx->ignore->size() && (*ctx->ignore)[r]) continue;
    if (!peerProcessAlive(*ctx->self, peers[r]))
      return recordError(ncclRemoteError, "rank %zu (pid %d on host %s) is gone: it exited or was killed", r,
                         peers[r].pid, peers[r].hostName);
  }
  return ncclSuccess;
}

}  // namespace braid
