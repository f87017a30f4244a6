// braidrun's supervisor: starts the ranks, forwards their output and signals, and ends the job as soon as
// one rank fails or the timeout passes. Plain POSIX (plus Linux's parent-death signal); no libbraid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "launch_options.h"
#include "line_forwarder.h"
#include "mp/common/netbed.h"

namespace braid {

class Launcher {
 public:
  explicit Launcher(LaunchOptions opts);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Runs the job to the end; returns braidrun's exit status.
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  struct Rank {
    pid_t pid = -1;
    bool alive = false;
    std::unique_ptr<LineForwarder> out, err;  // only with --prefix
  };

  bool prepareJobEnv();
  bool pickPortInNode0(int* port);
  int nodeOf(int rank) const;
  int firstRankOf(int node) const;
  bool spawn(int rank);
  [[noreturn]] void execRank(int rank, int outFd, int errFd);
  void loop();
  void reapChildren();
  void onSignal(int sig);
  void beginTermination();
  void killLive(int sig);
  int pollTimeoutMs() const;

  LaunchOptions opts_;
  std::vector<Rank> ranks_;
  int liveCount_ = 0;
  std::string commId_;
  std::string secret_;
  std::unique_ptr<mp::NetBed> bed_;  // --netns: the nodes' namespaces, removed when braidrun ends
  pid_t parentPid_ = 0;

  bool terminating_ = false;  // SIGTERM sent to everyone; the first failure is already recorded
  bool haveFailure_ = false;
  int exitStatus_ = 0;
  int forwardedSignals_ = 0;
  Clock::time_point timeoutAt_ = Clock::time_point::max();
  Clock::time_point killAt_ = Clock::time_point::max();
};

}  // namespace braid
