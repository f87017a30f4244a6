// PeerWatch: a background thread that notices when a peer process of a communicator dies while nobody is
// waiting on the host (GPU communicators: the kernels spin on device memory, the host returned long ago).
// Every `period` it checks the observable peers (same-host pids, as Waiter does); a peer seen dead on two
// checks at least `grace` apart fires onDead(message) once, with the message naming every dead rank, and the
// thread ends. The owner stops the kernels from the callback and reports ncclRemoteError at its next call.
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
  using OnDead = std::function<void(const std::string& message)>;
  // ctx must outlive the watch. The thread starts at once.
  PeerWatch(const WaitContext* ctx, OnDead onDead, std::chrono::milliseconds period = std::chrono::milliseconds(100),
            std::chrono::milliseconds grace = std::chrono::milliseconds(500));
  ~PeerWatch();  // stops and joins
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  bool fired() const;

 private:
  void run();
  const WaitContext* ctx_;
  OnDead onDead_;
  const std::chrono::milliseconds period_, grace_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace braid
