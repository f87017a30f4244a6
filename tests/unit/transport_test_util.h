// Helpers for the transport tests: a "rank" (PeerInfo + wait/transport context), a scoped environment
// variable, a transport-level connect of one sender/receiver pair, and the two halves of the ConnInfo FIFO
// protocol, run as an executor would, checking every byte of every slot.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/env_guard.h"
#include "core/peer_info.h"
#include "core/result.h"
#include "core/wait.h"
#include "transport/conn_info.h"
#include "transport/transport.h"

namespace braid {
namespace testutil {

struct TestRank {
  PeerInfo info{};
  std::atomic<uint32_t> abortFlag{0};
  WaitContext wait;
  TransportContext ctx;

  explicit TestRank(int rank) {
    fillLocalPeerInfo(&info);
    info.rank = rank;
    info.cudaDev = -1;
    info.busId = -1;
    info.isHost = 1;
    wait.abortFlag = &abortFlag;
    wait.timeoutSec = 20;
    wait.self = &info;
    ctx.wait = &wait;
    ctx.self = &info;
  }
};

// Scoped environment variable (tests run one at a time, before threads read it); nullptr unsets it.
using EnvVar = braid_test::EnvGuard;

// Waits up to `sec` seconds for a host flag (a connection's errorFlag) to become nonzero.
inline bool waitFlag(const uint32_t* flag, double sec) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(sec);
  while (std::chrono::steady_clock::now() < deadline) {
    if (__atomic_load_n(flag, __ATOMIC_ACQUIRE)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Sets up and connects sender (rank s) -> receiver (rank r) through `t`, in the order ConnectionManager
// uses: both setups, then send connect, then recv connect.
inline void connectPair(Transport* t, TestRank& s, TestRank& r, int channel, size_t buffBytes, Connector* sc,
                        Connector* rc) {
  sc->ctx = &s.ctx;
  rc->ctx = &r.ctx;
  ConnectHandle hs, hr;
  ASSERT_EQ(t->setup(Direction::Recv, r.info, s.info, channel, buffBytes, rc, &hr), ncclSuccess) << pendingError();
  ASSERT_EQ(t->setup(Direction::Send, s.info, r.info, channel, buffBytes, sc, &hs), ncclSuccess) << pendingError();
  ASSERT_EQ(t->connect(Direction::Send, hr, sc), ncclSuccess) << pendingError();
  ASSERT_EQ(t->connect(Direction::Recv, hs, rc), ncclSuccess) << pendingError();
  ASSERT_TRUE(sc->connected && rc->connected);
  EXPECT_EQ(sc->info.peer, r.info.rank);
  EXPECT_EQ(rc->info.peer, s.info.rank);
  EXPECT_EQ(sc->info.nSteps, rc->info.nSteps);
  EXPECT_EQ(sc->info.stepBytes, rc->info.stepBytes);
}

// For each of this process's threads named `name`: the value of its /proc status line `field` (e.g. "State:").
inline std::vector<std::string> threadStatus(const std::string& name, const std::string& field) {
  std::vector<std::string> out;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string dir = std::string("/proc/self/task/") + e->d_name;
      std::string comm;
      std::getline(std::ifstream(dir + "/comm"), comm);
      if (comm != name) continue;
      std::ifstream status(dir + "/status");
      for (std::string line; std::getline(status, line);)
        if (line.rfind(field, 0) == 0) out.push_back(line.substr(line.find_first_not_of(" \t", field.size())));
    }
    closedir(d);
  }
  return out;
}

inline uint8_t patternByte(uint32_t seed, uint64_t step, size_t i) {
  return static_cast<uint8_t>(seed * 17 + step * 131 + i * 7 + (i >> 8) * 13);
}

// Slot sizes cycle through 0, a full step, 1 byte and pseudo-random sizes.
inline size_t stepSize(uint64_t step, uint32_t stepBytes) {
  switch (step % 5) {
    case 0:
      return 0;
    case 1:
      return stepBytes;
    case 2:
      return 1;
    default:
      return static_cast<size_t>((step * 2654435761ull) % (stepBytes + 1ull));
  }
}

// Spins (yielding) until cond() holds; false on the connection's errorFlag or after `timeoutSec`.
template <typename Cond>
bool spinUntil(const ConnInfo& c, Cond cond, double timeoutSec, std::string* why) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  for (uint64_t i = 0;; i++) {
    if (cond()) return true;
    if (__atomic_load_n(c.errorFlag, __ATOMIC_ACQUIRE)) {
      *why = "errorFlag set on the connection with rank " + std::to_string(c.peer);
      return false;
    }
    if ((i & 255) == 0 && std::chrono::steady_clock::now() > deadline) {
      *why = "timed out waiting on the connection with rank " + std::to_string(c.peer);
      return false;
    }
    sched_yield();
  }
}

// Producer side of the protocol, from step c.step on: returns "" on success, else what went wrong.
inline std::string sendSteps(ConnInfo c, uint32_t seed, uint64_t steps, double timeoutSec = 15) {
  std::string why;
  for (uint64_t s = c.step; s < c.step + steps; s++) {
    if (!spinUntil(
            c, [&] { return loadAcquire(c.head) + c.nSteps > s; }, timeoutSec, &why)) {
      return "send step " + std::to_string(s) + ": " + why;
    }
    uint32_t slot = static_cast<uint32_t>(s % c.nSteps);
    char* dst = c.buff + static_cast<size_t>(slot) * c.stepBytes;
    size_t size = stepSize(s, c.stepBytes);
    for (size_t i = 0; i < size; i++) dst[i] = static_cast<char>(patternByte(seed, s, i));
    c.sizes[slot] = static_cast<int32_t>(size);
    storeRelease(c.tail, s + 1);
  }
  return "";
}

// Consumer side: checks sizes[slot] and every payload byte.
inline std::string recvSteps(ConnInfo c, uint32_t seed, uint64_t steps, double timeoutSec = 15) {
  std::string why;
  for (uint64_t s = c.step; s < c.step + steps; s++) {
    if (!spinUntil(
            c, [&] { return loadAcquire(c.tail) > s; }, timeoutSec, &why)) {
      return "recv step " + std::to_string(s) + ": " + why;
    }
    uint32_t slot = static_cast<uint32_t>(s % c.nSteps);
    const char* src = c.buff + static_cast<size_t>(slot) * c.stepBytes;
    size_t want = stepSize(s, c.stepBytes);
    if (c.sizes[slot] != static_cast<int32_t>(want)) {
      return "step " + std::to_string(s) + ": size " + std::to_string(c.sizes[slot]) + ", expected " +
             std::to_string(want);
    }
    for (size_t i = 0; i < want; i++) {
      if (static_cast<uint8_t>(src[i]) != patternByte(seed, s, i)) {
        return "step " + std::to_string(s) + ": byte " + std::to_string(i) + " is " +
               std::to_string(static_cast<uint8_t>(src[i])) + ", expected " + std::to_string(patternByte(seed, s, i));
      }
    }
    storeRelease(c.head, s + 1);
  }
  return "";
}

// Runs both halves at once on two threads.
inline std::string pump(const ConnInfo& send, const ConnInfo& recv, uint32_t seed, uint64_t steps) {
  std::string sendErr, recvErr;
  std::thread t([&] { sendErr = sendSteps(send, seed, steps); });
  recvErr = recvSteps(recv, seed, steps);
  t.join();
  return sendErr.empty() ? recvErr : sendErr + (recvErr.empty() ? "" : "; " + recvErr);
}

}  // namespace testutil
}  // namespace braid
