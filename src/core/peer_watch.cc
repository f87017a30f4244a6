// PeerWatch: periodic liveness checks of a communicator's peers on a background thread (see peer_watch.h).
#include "core/peer_watch.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/log.h"
#include "core/result.h"

namespace braid {
namespace {
std::atomic<bool> gExiting{false};
void markExiting() { gExiting.store(true); }
}  // namespace

PeerWatch::PeerWatch(const WaitContext* ctx, OnDead onDead, std::chrono::milliseconds period,
                     std::chrono::milliseconds grace)
    : ctx_(ctx), onDead_(std::move(onDead)), period_(period), grace_(grace) {
  static const bool registered = std::atexit(markExiting) == 0;
  (void)registered;
  thread_ = std::thread([this] { run(); });  // may throw std::system_error: the caller decides
}

void PeerWatch::exclusive(const std::function<void()>& f) {
  std::lock_guard<std::mutex> lk(checkMu_);
  f();
}

bool PeerWatch::observable(const WaitContext* ctx) {
  if (ctx == nullptr || ctx->self == nullptr || ctx->peers == nullptr) return false;
  for (const PeerInfo& p : *ctx->peers)
    if (p.rank != ctx->self->rank && p.pidNsHash == ctx->self->pidNsHash && p.pid > 0 && p.pid != ctx->self->pid)
      return true;
  return false;
}

PeerWatch::~PeerWatch() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PeerWatch::fired() const {
  std::lock_guard<std::mutex> lk(mu_);
  return fired_;
}

void PeerWatch::run() {
  using Clock = std::chrono::steady_clock;
  bool seen = false;
  Clock::time_point since{};
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, period_, [this] { return stop_; });
    if (stop_) break;
    lk.unlock();
    int dead = -1;
    std::string msg;
    {
      std::lock_guard<std::mutex> check(checkMu_);
      dead = firstDeadPeer(ctx_);
      // checkPeersAlive records its message in this thread's pending error; take it and leave nothing behind.
      if (dead >= 0 && checkPeersAlive(ctx_) != ncclSuccess) msg = pendingError();
      clearPendingError();
    }
    lk.lock();
    if (gExiting.load()) return;
    if (dead < 0) {
      seen = false;
      continue;
    }
    const auto now = Clock::now();
    if (!seen) {
      seen = true;
      since = now;
      continue;
    }
    if (now - since < grace_) continue;
    fired_ = true;
    lk.unlock();
    if (msg.empty()) msg = "rank " + std::to_string(dead) + " is gone: exited or killed";
    onDead_(dead, msg);
    return;
  }
}

}  // namespace braid
