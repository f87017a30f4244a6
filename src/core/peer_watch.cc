// PeerWatch: periodic liveness checks of a communicator's peers on a background thread (see peer_watch.h).
#include "core/peer_watch.h"

#include "core/log.h"
#include "core/result.h"

namespace braid {

PeerWatch::PeerWatch(const WaitContext* ctx, OnDead onDead, std::chrono::milliseconds period,
                     std::chrono::milliseconds grace)
    : ctx_(ctx), onDead_(std::move(onDead)), period_(period), grace_(grace) {
  thread_ = std::thread([this] { run(); });
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
    // checkPeersAlive records its message in this thread's pending error; take it and leave nothing behind.
    const ncclResult_t r = checkPeersAlive(ctx_);
    std::string msg = r == ncclSuccess ? std::string() : pendingError();
    clearPendingError();
    lk.lock();
    if (r == ncclSuccess) {
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
    onDead_(msg);
    return;
  }
}

}  // namespace braid
