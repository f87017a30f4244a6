// Multi-process test harness: runs a test body in N forked rank processes and turns what happens in them
// into gtest results of the parent.
//
// runRanks() forks N children first (so no library thread exists in the parent at fork time), then makes
// a unique id (in the parent, or in rank 0 for tests that need the root in a rank's environment or network
// namespace) and hands it to every child through a pipe. Each child sets its environment, runs the body,
// and _exit()s; gtest failures inside a child (EXPECT_*/ASSERT_*/ADD_FAILURE) are forwarded to the parent
// through a pipe by a gtest listener. The parent waits with a deadline, kills every child still running when
// it expires (or, with Options::killStopped, a stopped child once all others ended), and reports each rank's outcome (exit code, signal, forwarded messages, last status line).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nccl.h"

namespace mp {

enum class IdSource {
  kParent,  // the gtest process calls ncclGetUniqueId (after forking) and sends it to every rank
  kRank0,   // rank 0 calls ncclGetUniqueId after its env/setup; the parent relays it to the others
  kNone,    // no id (the body makes its own, or needs none)
};

struct RankCtx {
  int rank = 0;
  int nranks = 0;
  ncclUniqueId id{};
};

struct Options {
  std::vector<std::pair<std::string, std::string>> env;  // setenv'd in each child before anything else
  int timeoutSec = 60;
  IdSource idSource = IdSource::kParent;
  std::function<void(int rank)> childSetup;             // in the child after env, before the id
  std::function<void(const ncclUniqueId&)> parentHook;  // in the parent once the id is out (kParent/kRank0)
  // A rank that stops itself (raise(SIGSTOP), a stall under test) would sit until the deadline: with this set,
  // the parent SIGKILLs the stopped ranks as soon as every other rank has ended (RankResult::stopped).
  bool killStopped = false;
};

struct RankResult {
  int rank = 0;
  bool exited = false;  // exited normally (exitCode valid)
  int exitCode = -1;
  int termSignal = 0;  // killed by this signal
  bool timedOut = false;
  bool stopped = false;  // was seen stopped (SIGSTOP); with Options::killStopped, then SIGKILLed
  std::string messages;  // gtest failures and notes forwarded by the child
  std::string status;    // the child's last setStatus() line
};

struct RunResult {
  std::vector<RankResult> ranks;
  double seconds = 0;
  std::string harnessError;  // problems of the harness itself (fork, id)
  bool allPassed() const;
  std::string describe() const;  // one paragraph per rank
};

// Forks nranks children running body. Must be called from a gtest test body in the parent.
RunResult runRanks(int nranks, const Options& opts, const std::function<void(RankCtx&)>& body);

// Adds a gtest failure to the parent's current test unless every rank exited 0 without failures.
void expectAllPassed(const RunResult& r);

// ---- helpers for child bodies ----

// Records the current step in shared memory; shown by the parent for ranks that time out.
void setStatus(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Sends a note line to the parent (shown only when the test fails, or always with MP_VERBOSE=1).
void note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// ncclGetLastError(comm) as a std::string ("" for NULL).
std::string lastError(ncclComm_t comm);
// Seconds on CLOCK_MONOTONIC (the same clock in every process of the machine).
double nowSec();
// Polls a nonblocking comm until its async state leaves ncclInProgress; returns that state (ncclInProgress
// when `seconds` passed first, or ncclCommGetAsyncError's own error).
ncclResult_t waitAsync(ncclComm_t comm, double seconds);
// True if msg mentions "rank" and has the decimal number r as a separate token.
bool mentionsRank(const std::string& msg, int r);
bool containsCI(const std::string& hay, const std::string& needle);

// Inits comm for ctx (ncclCommInitRank) with a gtest assertion on the result.
void initComm(const RankCtx& ctx, ncclComm_t* comm);

// The id layout (mirrors src/core/bootstrap.h UniqueIdData; this test uses the public API only).
struct UniqueIdLayout {
  uint64_t magic;
  uint8_t key[16];  // random (ncclGetUniqueId), or derived from NCCL_COMM_ID
  uint8_t addr[28];
  uint32_t addrLen;
  uint32_t flags;  // bit 0: derived from NCCL_COMM_ID without BRAID_JOB_SECRET (unauthenticated)
};

// Shared anonymous memory that survives fork (for cross-rank timestamps etc.); never freed.
void* sharedAlloc(size_t bytes);

// A temporary folder for the ranks' logs (NCCL_DEBUG_FILE=path(rank) in childSetup), removed with its files.
class LogDir {
 public:
  LogDir();
  ~LogDir();
  LogDir(const LogDir&) = delete;
  LogDir& operator=(const LogDir&) = delete;
  bool ok() const { return !dir_.empty(); }
  std::string path(int rank) const { return dir_ + "/rank" + std::to_string(rank) + ".log"; }
  std::string read(int rank) const;  // the whole log ("" where there is none)
  // How often `what` occurs in the logs of ranks 0..nranks-1 together.
  int count(int nranks, const std::string& what) const;

 private:
  std::string dir_;
};

}  // namespace mp

// In a child: fail the body (fatal) if an NCCL call does not succeed, printing the library's message.
#define MP_NCCL_ASSERT(call)                                                          \
  do {                                                                                \
    ncclResult_t mp_res_ = (call);                                                    \
    ASSERT_EQ(mp_res_, ncclSuccess) << #call << " -> " << ncclGetErrorString(mp_res_) \
                                    << "; last error: " << ncclGetLastError(nullptr); \
  } while (0)

#define MP_NCCL_ASSERT_COMM(call, comm)                                               \
  do {                                                                                \
    ncclResult_t mp_res_ = (call);                                                    \
    ASSERT_EQ(mp_res_, ncclSuccess) << #call << " -> " << ncclGetErrorString(mp_res_) \
                                    << "; last error: " << ::mp::lastError(comm);     \
  } while (0)
