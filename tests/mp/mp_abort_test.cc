// ncclCommAbort right after a collective that completed: a collective that completed on every rank must
// complete for every rank, whatever one of them does next. Over sockets, the aborting rank's last sends may
// still sit in its NET proxy's queue when its own part is done; abort must let them leave (bounded), not
// drop them and break the peers' copy of the collective.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "mp/common/harness.h"
#include "nccl.h"

namespace {

constexpr int kCycles = 40;
constexpr int kRanks = 3;

// What the ranks share across cycles: rank 0 makes each cycle's id once it is done with the previous one.
struct Shared {
  std::atomic<int> idsReady;  // ids[0 .. idsReady) are valid
  ncclUniqueId ids[kCycles];
};

float inputOf(int rank, size_t i) { return static_cast<float>(rank * 1000 + static_cast<int>(i % 251)); }

// Every cycle: a fresh host comm over sockets, one 4 MiB all-reduce (several FIFO steps per connection),
// then rank 0 aborts at once while the others check their result and destroy. Every rank's all-reduce
// must succeed with the right values in every cycle. While abort dropped the sends still queued, the peers'
// all-reduce broke ("ring connection with rank 0 broke") in a large share of the cycles.
TEST(Abort, RightAfterAllReduceOverSocketsLosesNothing) {
  auto* shared = static_cast<Shared*>(mp::sharedAlloc(sizeof(Shared)));
  ASSERT_NE(shared, nullptr);
  mp::Options o;
  o.idSource = mp::IdSource::kNone;
  o.timeoutSec = 120;
  o.env = {
      {"NCCL_SHM_DISABLE", "1"}, {"BRAID_HOST_COMM", "1"}, {"BRAID_TIMEOUT", "20"}, {"BRAID_BOOTSTRAP_TIMEOUT", "20"}};
  auto r = mp::runRanks(kRanks, o, [shared](mp::RankCtx& ctx) {
    const size_t count = size_t{1} << 20;  // 4 MiB of float
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; i++) in[i] = inputOf(ctx.rank, i);
    int failedCycles = 0;
    for (int cycle = 0; cycle < kCycles; cycle++) {
      if (ctx.rank == 0) {
        MP_NCCL_ASSERT(ncclGetUniqueId(&shared->ids[cycle]));
        shared->idsReady.store(cycle + 1);
      } else {
        mp::setStatus("cycle %d: waiting for rank 0's id", cycle);
        const double t0 = mp::nowSec();
        while (shared->idsReady.load() <= cycle) {
          ASSERT_LT(mp::nowSec() - t0, 30.0) << "cycle " << cycle << ": rank 0 made no id";
          usleep(200);
        }
      }
      ctx.id = shared->ids[cycle];
      ncclComm_t comm;
      mp::initComm(ctx, &comm);
      if (testing::Test::HasFatalFailure()) return;
      std::fill(out.begin(), out.end(), std::nanf(""));  // poison: an unwritten element cannot pass
      mp::setStatus("cycle %d: all-reduce", cycle);
      ncclResult_t res = ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      std::string msg = res == ncclSuccess ? "" : mp::lastError(comm);
      if (ctx.rank == 0) {
        mp::setStatus("cycle %d: ncclCommAbort", cycle);
        const double t0 = mp::nowSec();
        EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
        EXPECT_LT(mp::nowSec() - t0, 3.0) << "cycle " << cycle << ": ncclCommAbort must return promptly";
      }
      EXPECT_EQ(res, ncclSuccess) << "cycle " << cycle << ": rank " << ctx.rank << "'s all-reduce: " << msg;
      size_t bad = 0, firstBad = 0;
      for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int p = 0; p < ctx.nranks; p++) want += inputOf(p, i);
        if (!(out[i] == want)) {
          if (bad++ == 0) firstBad = i;
        }
      }
      EXPECT_EQ(bad, 0u) << "cycle " << cycle << ": rank " << ctx.rank << " has " << bad
                         << " wrong elements, the first at " << firstBad;
      if (res != ncclSuccess || bad != 0) failedCycles++;
      if (ctx.rank != 0) {
        mp::setStatus("cycle %d: ncclCommDestroy", cycle);
        // The aborted peer is gone: the destroy's drain may find a broken connection, never a hang.
        ncclCommDestroy(comm);
      }
    }
    mp::note("rank %d: %d of %d cycles failed", ctx.rank, failedCycles, kCycles);
  });
  mp::expectAllPassed(r);
  if (getenv("MP_VERBOSE")) std::cout << r.describe();
}

}  // namespace
