// /dev/shm hygiene when a rank dies during SHM connection setup: the victim SIGKILLs itself right after it
// creates an SHM segment (BRAID_TEST_SHM_KILL_AFTER), before its peer has mapped the segment, once during
// init and once during a split. Once every rank has ended, no segment made by any rank of the job may remain
// in /dev/shm. Segments are named /braid-<creator pid>-..., so the check looks only at this job's pids.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "mp/common/harness.h"
#include "nccl.h"

namespace {

constexpr int kMaxRanks = 8;

struct Pids {
  pid_t pid[kMaxRanks];
};

// Names in /dev/shm that a process of `pids` created.
std::vector<std::string> segmentsOf(const Pids& pids, int nranks) {
  std::vector<std::string> found;
  DIR* d = opendir("/dev/shm");
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    for (int r = 0; r < nranks; r++) {
      if (pids.pid[r] <= 0) continue;
      std::string prefix = "braid-" + std::to_string(pids.pid[r]) + "-";
      if (std::string(e->d_name).compare(0, prefix.size(), prefix) == 0) found.push_back(e->d_name);
    }
  }
  closedir(d);
  return found;
}

// Runs `nranks` host-communicator ranks; `victim` dies right after creating its `killAfter`-th SHM segment.
// Survivors run `body` (which must fail cleanly); then checks the victim died and nothing of the job is left.
void runAndCheck(int nranks, int victim, int killAfter, const std::function<void(mp::RankCtx&)>& body) {
  auto* pids = static_cast<Pids*>(mp::sharedAlloc(sizeof(Pids)));
  ASSERT_NE(pids, nullptr);
  ASSERT_LE(nranks, kMaxRanks);
  mp::Options o;
  o.timeoutSec = 30;
  o.env = {{"BRAID_HOST_COMM", "1"},
           {"BRAID_HOST_NCHANNELS", "1"},
           {"NCCL_BUFFSIZE", "65536"},
           {"BRAID_BOOTSTRAP_TIMEOUT", "10"},
           {"BRAID_TIMEOUT", "10"}};
  o.childSetup = [&](int rank) {
    pids->pid[rank] = getpid();
    if (rank == victim) setenv("BRAID_TEST_SHM_KILL_AFTER", std::to_string(killAfter).c_str(), 1);
  };
  auto r = mp::runRanks(nranks, o, body);
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks) {
    if (rr.timedOut) ok = false;
    if (rr.rank == victim ? rr.termSignal != SIGKILL : !(rr.exited && rr.exitCode == 0)) ok = false;
  }
  EXPECT_TRUE(ok) << r.describe();
  std::vector<std::string> left = segmentsOf(*pids, nranks);
  std::string names;
  for (auto& n : left) names += " /dev/shm/" + n;
  EXPECT_TRUE(left.empty()) << left.size() << " SHM segment(s) of the job outlived it:" << names;
  for (auto& n : left) shm_unlink(("/" + n).c_str());  // leave the machine clean even when failing
}

// The victim dies while the ring of ncclCommInitRank is set up: every survivor's init fails.
TEST(ShmLeak, RankKilledDuringInitSetupLeavesNoSegment) {
  const int victim = 1;
  runAndCheck(3, victim, 1, [&](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    mp::setStatus("init; rank %d dies in SHM setup", victim);
    ncclResult_t res = ncclCommInitRank(&comm, ctx.nranks, ctx.id, ctx.rank);
    ASSERT_NE(ctx.rank, victim) << "the victim should have died in init";
    mp::note("rank %d: init -> %s: %s", ctx.rank, ncclGetErrorString(res), mp::lastError(nullptr).c_str());
    EXPECT_NE(res, ncclSuccess) << "init must fail with rank " << victim << " dead";
    if (res == ncclSuccess && comm) ncclCommAbort(comm);
  });
}

// Init connects one ring channel (one segment per rank); the victim dies at its second segment, inside the
// split's setup. Every survivor's split fails; the parent is aborted.
TEST(ShmLeak, RankKilledDuringSplitSetupLeavesNoSegment) {
  const int victim = 2;
  runAndCheck(3, victim, 2, [&](mp::RankCtx& ctx) {
    ncclComm_t comm = nullptr;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    ncclComm_t sub = nullptr;
    mp::setStatus("split; rank %d dies in SHM setup", victim);
    ncclResult_t res = ncclCommSplit(comm, 0, ctx.rank, &sub, nullptr);
    ASSERT_NE(ctx.rank, victim) << "the victim should have died in the split";
    mp::note("rank %d: split -> %s: %s", ctx.rank, ncclGetErrorString(res), mp::lastError(comm).c_str());
    EXPECT_NE(res, ncclSuccess) << "the split must fail with rank " << victim << " dead";
    if (res == ncclSuccess && sub) ncclCommAbort(sub);
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  });
}

}  // namespace
