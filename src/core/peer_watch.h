// PeerWatch: a background thread that notices when a peer process of a communicator dies while nobody is
// waiting on the host (GPU communicators: the kernels spin on device memory, the host returned long ago).
// Every `period` it checks the observable peers (same-host pids, as Waiter does); a peer seen dead on two
// checks at least `grace` apart fires onDead(rank, message) once (rank: the lowest dead one; the message
// names every dead rank) and the thread ends. Once the process is exiting (atexit) it never fires: the
// owner's memory may already be gone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/wait.h"

namespace braid {

class PeerWatch {
 public:
  using OnDead = std::function<void(int deadRank, const std::string& message)>;
  // ctx must outlive the watch. The thread starts at once.
  PeerWatch(const WaitContext* ctx, OnDead onDead, std::chrono::milliseconds period = std::chrono::milliseconds(100),
            std::chrono::milliseconds grace = std::chrono::milliseconds(500));
  ~PeerWatch();  // stops and joins
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  bool fired() const;
  // Runs f while no check is in progress (for changing what ctx points at, e.g. the ignored ranks).
  void exclusive(const std::function<void()>& f);
  // True when ctx has a peer whose liveness this process can observe (same pid namespace, other pid).
  static bool observable(const WaitContext* ctx);

 private:
  void run();
  const WaitContext* ctx_;
  OnDead onDead_;
  const std::chrono::milliseconds period_, grace_;
  mutable std::mutex mu_;
  std::mutex checkMu_;  // held during each check; exclusive() takes it
  std::condition_variable cv_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace braid
