// Waiter: spin, then yield, then nap; every few milliseconds check abort, deadline and peer liveness.
#include "core/wait.h"

#include <sched.h>
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

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

namespace {
// Every observable dead peer, `first` (if dead) listed first: when one rank dies, survivors may abort and
// exit in turn, so the message names all of them rather than whichever was checked first. Ranks that exited
// after an error of their own (StallReporter::failedOwnOp) go to *after instead, unless every dead rank did:
// they reacted to the failure, they did not cause it.
std::string describeDead(const WaitContext* ctx, int first, int* count, std::string* after = nullptr) {
  std::string out;
  *count = 0;
  if (ctx == nullptr || ctx->self == nullptr || ctx->peers == nullptr) return out;
  const auto& peers = *ctx->peers;
  std::vector<int> dead;
  if (first >= 0 && first < static_cast<int>(peers.size()) && first != ctx->self->rank &&
      !peerProcessAlive(*ctx->self, peers[first]))
    dead.push_back(first);
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) == ctx->self->rank || static_cast<int>(r) == first) continue;
    if (ctx->ignore && r < ctx->ignore->size() && (*ctx->ignore)[r]) continue;
    if (!peerProcessAlive(*ctx->self, peers[r])) dead.push_back(static_cast<int>(r));
  }
  std::vector<int> causes, reacted;
  for (int r : dead) (ctx->stall && after && ctx->stall->failedOwnOp(r) ? reacted : causes).push_back(r);
  if (causes.empty()) causes.swap(reacted);
  auto list = [&](const std::vector<int>& ranks) {
    std::string s;
    for (int r : ranks) {
      const PeerInfo& p = peers[r];
      char buf[160];
      snprintf(buf, sizeof(buf), "%srank %d (pid %d on host %s)", s.empty() ? "" : ", ", r, p.pid, p.hostName);
      s += buf;
    }
    return s;
  };
  out = list(causes);
  *count = static_cast<int>(causes.size());
  if (after && !reacted.empty())
    *after = "; " + list(reacted) + (reacted.size() > 1 ? " also exited, each" : " also exited") +
             " after an error of its own";
  return out;
}
}  // namespace

Waiter::Waiter(const WaitContext* ctx, int peer, const char* what) : ctx_(ctx), peer_(peer), what_(what) {
  start_ = phaseStart_ = std::chrono::steady_clock::now();
  nextCheck_ = start_ + kCheckPeriod;
}

void Waiter::reset() {
  spins_ = 0;
  deadSeen_ = false;
  start_ = phaseStart_ = std::chrono::steady_clock::now();
  nextCheck_ = start_ + kCheckPeriod;
}

ncclResult_t Waiter::poll() {
  ++spins_;
  if (ctx_ && ctx_->drive && ctx_->drive(ctx_->driveArg)) {
    spins_ = 1;
    phaseStart_ = std::chrono::steady_clock::now();
  } else if (spins_ < kSpinsBeforeYield) {
    cpuRelax();
    if ((spins_ & 63) != 0) return ncclSuccess;
  } else if (std::chrono::steady_clock::now() - phaseStart_ < kYieldPeriod) {
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
  int nDead = 0;
  std::string after;
  std::string dead = describeDead(ctx_, peer_, &nDead, &after);
  auto now = std::chrono::steady_clock::now();
  if (nDead == 0) {
    deadSeen_ = false;
  } else if (!deadSeen_) {
    deadSeen_ = true;
    deadSince_ = now;
  } else if (now - deadSince_ > kDeadGrace) {
    return recordError(ncclRemoteError, "%s %s gone: exited or killed while we waited for %s%s%s", dead.c_str(),
                       nDead > 1 ? "are" : "is", what_, after.c_str(), stallReport(ctx_).c_str());
  }
  double waited = std::chrono::duration<double>(now - start_).count();
  if (ctx_->timeoutSec > 0 && waited > ctx_->timeoutSec) {
    const std::string stall = stallReport(ctx_);
    if (peer_ >= 0)
      return recordError(ncclRemoteError,
                         "timed out after %.0f s waiting for %s (rank %d made no progress; BRAID_TIMEOUT=%g)%s", waited,
                         what_, peer_, ctx_->timeoutSec, stall.c_str());
    return recordError(ncclRemoteError, "timed out after %.0f s waiting for %s%s", waited, what_, stall.c_str());
  }
  return ncclSuccess;
}

int firstDeadPeer(const WaitContext* ctx) {
  if (ctx == nullptr || ctx->self == nullptr || ctx->peers == nullptr) return -1;
  const auto& peers = *ctx->peers;
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) == ctx->self->rank) continue;
    if (ctx->ignore && r < ctx->ignore->size() && (*ctx->ignore)[r]) continue;
    if (!peerProcessAlive(*ctx->self, peers[r])) return static_cast<int>(r);
  }
  return -1;
}

ncclResult_t checkPeersAlive(const WaitContext* ctx) {
  int nDead = 0;
  std::string after;
  std::string dead = describeDead(ctx, -1, &nDead, &after);
  if (nDead == 0) return ncclSuccess;
  return recordError(ncclRemoteError, "%s %s gone: exited or killed%s%s", dead.c_str(), nDead > 1 ? "are" : "is",
                     after.c_str(), stallReport(ctx).c_str());
}

std::string stallReport(const WaitContext* ctx) {
  if (ctx == nullptr || ctx->stall == nullptr) return std::string();
  std::string s = ctx->stall->describe();
  return s.empty() ? s : ". " + s;
}

}  // namespace braid
