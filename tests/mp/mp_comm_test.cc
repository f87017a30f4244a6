// Communicator lifecycle on host communicators: split (color, key order, NCCL_SPLIT_NOCOLOR), nonblocking
// init (ncclInProgress polled through ncclCommGetAsyncError), ncclCommInitAll in one process driven from
// one thread, queries, version, finalize-then-destroy, configs from older headers.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <cstddef>
#include <cstring>
#include <vector>

#include "mp/common/coll_check.h"
#include "mp/common/dtypes.h"
#include "mp/common/harness.h"
#include "nccl.h"

namespace {

using mp::Case;
using mp::Coll;

using mp::waitAsync;

TEST(Comm, VersionAndErrorStrings) {
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_GE(v, 22800);
  EXPECT_LT(v, 22900) << "Braid reports NCCL 2.28.x";
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  for (int r = 0; r < (int)ncclNumResults; r++) {
    const char* s = ncclGetErrorString((ncclResult_t)r);
    ASSERT_NE(s, nullptr) << r;
    EXPECT_GT(std::strlen(s), 0u) << r;
  }
}

// Split of 5 ranks: even/odd colors, keys reversing the order, rank 4 opting out with NCCL_SPLIT_NOCOLOR.
TEST(Comm, SplitColorKeyNoColor) {
  mp::Options o;
  o.timeoutSec = 90;
  o.env = {{"BRAID_TIMEOUT", "60"}};
  auto r = mp::runRanks(5, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    const int n = ctx.nranks, me = ctx.rank;
    int color = (me == n - 1) ? NCCL_SPLIT_NOCOLOR : me % 2;
    ncclComm_t sub = (ncclComm_t)0x1;  // must be overwritten (NULL for NOCOLOR)
    mp::setStatus("ncclCommSplit");
    MP_NCCL_ASSERT_COMM(ncclCommSplit(comm, color, n - me, &sub, nullptr), comm);
    if (color == NCCL_SPLIT_NOCOLOR) {
      EXPECT_EQ(sub, nullptr) << "NCCL_SPLIT_NOCOLOR must give a NULL newcomm";
    } else {
      ASSERT_NE(sub, nullptr);
      std::vector<int> members;  // parent ranks of my color, in new-rank order (descending: key = n - rank)
      for (int q = n - 2; q >= 0; q--)
        if (q % 2 == color) members.push_back(q);
      int cnt = -1, ur = -1, dev = 0;
      MP_NCCL_ASSERT(ncclCommCount(sub, &cnt));
      MP_NCCL_ASSERT(ncclCommUserRank(sub, &ur));
      MP_NCCL_ASSERT(ncclCommCuDevice(sub, &dev));
      EXPECT_EQ(cnt, (int)members.size());
      int expectRank = -1;
      for (size_t i = 0; i < members.size(); i++)
        if (members[i] == me) expectRank = (int)i;
      EXPECT_EQ(ur, expectRank) << "keys n-rank reverse the order inside a color";
      EXPECT_EQ(dev, -1);
      // All-gather of parent ranks shows the new order; all-reduce sums them.
      std::vector<int32_t> mine = {me}, all(members.size(), -7);
      mp::setStatus("allgather on split comm");
      MP_NCCL_ASSERT_COMM(ncclAllGather(mine.data(), all.data(), 1, ncclInt32, sub, nullptr), sub);
      EXPECT_EQ(all, std::vector<int32_t>(members.begin(), members.end()));
      int64_t v = me + 1, sum = -1, want = 0;
      for (int q : members) want += q + 1;
      MP_NCCL_ASSERT_COMM(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, sub, nullptr), sub);
      EXPECT_EQ(sum, want);
      // The full case machinery on the sub-communicator too.
      Case c;
      c.coll = Coll::kReduceScatter;
      c.dt = ncclFloat16;
      c.opKind = ncclSum;
      c.count = 333;
      EXPECT_TRUE(mp::runCase(sub, ur, cnt, c));
    }
    // The parent still works, and can be split again (everyone, same color, keys = rank: a duplicate).
    int64_t v = me, sum = -1;
    mp::setStatus("allreduce on parent after split");
    MP_NCCL_ASSERT_COMM(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclSum, comm, nullptr), comm);
    EXPECT_EQ(sum, (int64_t)n * (n - 1) / 2);
    ncclComm_t dup = nullptr;
    mp::setStatus("second ncclCommSplit");
    MP_NCCL_ASSERT_COMM(ncclCommSplit(comm, 7, me, &dup, nullptr), comm);
    ASSERT_NE(dup, nullptr);
    int ur = -1;
    MP_NCCL_ASSERT(ncclCommUserRank(dup, &ur));
    EXPECT_EQ(ur, me);
    MP_NCCL_ASSERT_COMM(ncclAllReduce(&v, &sum, 1, ncclInt64, ncclMax, dup, nullptr), dup);
    EXPECT_EQ(sum, n - 1);
    mp::setStatus("destroy");
    if (sub && color != NCCL_SPLIT_NOCOLOR) MP_NCCL_ASSERT(ncclCommDestroy(sub));
    MP_NCCL_ASSERT(ncclCommDestroy(dup));
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

TEST(Comm, NonblockingInitConfig) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "30"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    cfg.commName = "mp-nonblocking";
    ncclComm_t comm = nullptr;
    mp::setStatus("ncclCommInitRankConfig(blocking=0)");
    ncclResult_t res = ncclCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &cfg);
    ASSERT_TRUE(res == ncclSuccess || res == ncclInProgress)
        << ncclGetErrorString(res) << ": " << ncclGetLastError(nullptr);
    ASSERT_NE(comm, nullptr) << "a nonblocking init returns the comm handle at once";
    mp::note("nonblocking init returned %s", ncclGetErrorString(res));
    ASSERT_EQ(waitAsync(comm, 30), ncclSuccess) << mp::lastError(comm);
    std::vector<float> in(5000), out(5000, -1.f);
    for (size_t i = 0; i < in.size(); i++) in[i] = (float)(ctx.rank * 10 + (int)(i % 7));
    res = ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat32, ncclSum, comm, nullptr);
    ASSERT_TRUE(res == ncclSuccess || res == ncclInProgress) << ncclGetErrorString(res) << mp::lastError(comm);
    ASSERT_EQ(waitAsync(comm, 30), ncclSuccess) << mp::lastError(comm);
    for (size_t i = 0; i < in.size(); i++) {
      float want = 0;
      for (int q = 0; q < ctx.nranks; q++) want += (float)(q * 10 + (int)(i % 7));
      ASSERT_EQ(out[i], want) << "element " << i;
    }
    mp::setStatus("ncclCommFinalize (nonblocking)");
    res = ncclCommFinalize(comm);
    ASSERT_TRUE(res == ncclSuccess || res == ncclInProgress) << ncclGetErrorString(res) << mp::lastError(comm);
    ASSERT_EQ(waitAsync(comm, 30), ncclSuccess) << mp::lastError(comm);
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// A config from an older header: a smaller size means fields past it are not read (here: garbage).
TEST(Comm, OlderConfigSizeAndFinalizeDestroy) {
  mp::Options o;
  o.timeoutSec = 60;
  auto r = mp::runRanks(2, o, [](mp::RankCtx& ctx) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.size = offsetof(ncclConfig_t, splitShare);
    cfg.version = NCCL_VERSION(2, 17, 1);
    cfg.blocking = 1;
    cfg.splitShare = 12345;
    cfg.commName = (const char*)0x8;  // must not be read
    cfg.CTAPolicy = -77;
    ncclComm_t comm = nullptr;
    mp::setStatus("init with a 2.17-sized config");
    MP_NCCL_ASSERT(ncclCommInitRankConfig(&comm, ctx.nranks, ctx.id, ctx.rank, &cfg));
    ASSERT_NE(comm, nullptr);
    Case c;
    c.coll = Coll::kAllGather;
    c.dt = ncclBfloat16;
    c.count = 4097;
    EXPECT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
    ncclResult_t st = ncclInternalError;
    MP_NCCL_ASSERT(ncclCommGetAsyncError(comm, &st));
    EXPECT_EQ(st, ncclSuccess);
    mp::setStatus("ncclCommFinalize");
    MP_NCCL_ASSERT_COMM(ncclCommFinalize(comm), comm);
    mp::setStatus("ncclCommDestroy");
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

int countEntries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') n++;
    closedir(d);
  }
  return n;
}

// Init/use/destroy many times: file descriptors and threads come back to where they were (no leaks that
// would exhaust a long-running job that re-creates communicators).
void repeatedInitDestroy(bool sockets) {
  mp::Options o;
  o.timeoutSec = 120;
  o.env = {{"BRAID_TIMEOUT", "30"}, {"BRAID_HOST_NCHANNELS", "2"}};
  if (sockets) o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    // A first comm carries the fresh id of every cycle (made by rank 0) to the others.
    ncclComm_t boot;
    mp::initComm(ctx, &boot);
    if (testing::Test::HasFatalFailure()) return;
    int fds0 = -1, threads0 = -1;
    const int cycles = 15;
    for (int cyc = 0; cyc < cycles; cyc++) {
      ncclUniqueId id;
      if (ctx.rank == 0) MP_NCCL_ASSERT(ncclGetUniqueId(&id));
      MP_NCCL_ASSERT_COMM(ncclBroadcast(&id, &id, sizeof id, ncclUint8, 0, boot, nullptr), boot);
      ncclComm_t comm = nullptr;
      mp::setStatus("cycle %d: init", cyc);
      MP_NCCL_ASSERT(ncclCommInitRank(&comm, ctx.nranks, id, ctx.rank));
      Case c;
      c.coll = Coll::kAllReduce;
      c.dt = ncclFloat32;
      c.count = 50000;
      c.seed = (uint64_t)cyc;
      ASSERT_TRUE(mp::runCase(comm, ctx.rank, ctx.nranks, c));
      // Everyone is done with comm before anyone destroys it (keeps this test about leaks only).
      MP_NCCL_ASSERT_COMM(ncclAllReduce(&c.seed, &c.seed, 1, ncclUint64, ncclMax, boot, nullptr), boot);
      mp::setStatus("cycle %d: destroy", cyc);
      MP_NCCL_ASSERT(ncclCommDestroy(comm));
      MP_NCCL_ASSERT_COMM(ncclAllReduce(&c.seed, &c.seed, 1, ncclUint64, ncclMax, boot, nullptr), boot);
      if (cyc == 1) {
        usleep(200000);
        fds0 = countEntries("/proc/self/fd");
        threads0 = countEntries("/proc/self/task");
      }
    }
    usleep(200000);  // let detached helpers (root threads) finish
    int fds1 = countEntries("/proc/self/fd"), threads1 = countEntries("/proc/self/task");
    mp::note("after cycle 1: %d fds, %d threads; after %d cycles: %d fds, %d threads", fds0, threads0, cycles, fds1,
             threads1);
    EXPECT_LE(fds1, fds0 + 2) << "file descriptors leak across init/destroy cycles";
    EXPECT_LE(threads1, threads0 + 1) << "threads leak across init/destroy cycles";
    MP_NCCL_ASSERT(ncclCommDestroy(boot));
  });
  mp::expectAllPassed(r);
}

TEST(Comm, RepeatedInitDestroyLeaksNothing_shm) { repeatedInitDestroy(false); }
TEST(Comm, RepeatedInitDestroyLeaksNothing_socket) { repeatedInitDestroy(true); }

// Two communicators of the same ranks, each driven by its own thread at the same time.
TEST(Comm, TwoCommsFromTwoThreads) {
  mp::Options o;
  o.timeoutSec = 90;
  o.env = {{"BRAID_TIMEOUT", "30"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclComm_t a;
    mp::initComm(ctx, &a);
    if (testing::Test::HasFatalFailure()) return;
    ncclComm_t b = nullptr;
    MP_NCCL_ASSERT_COMM(ncclCommSplit(a, 0, ctx.rank, &b, nullptr), a);
    ASSERT_NE(b, nullptr);
    std::atomic<int> badA{0}, badB{0};
    std::thread ta([&] {
      std::vector<int32_t> in(20000), out(20000);
      for (int it = 0; it < 200; it++) {
        for (size_t i = 0; i < in.size(); i++) in[i] = (int32_t)(i + it + ctx.rank);
        if (ncclAllReduce(in.data(), out.data(), in.size(), ncclInt32, ncclSum, a, nullptr) != ncclSuccess) {
          badA += 1000000;
          return;
        }
        for (size_t i = 0; i < in.size(); i++) {
          int32_t want = 0;
          for (int q = 0; q < ctx.nranks; q++) want += (int32_t)(i + it + q);
          badA += out[i] != want;
        }
      }
    });
    std::thread tb([&] {
      std::vector<double> in(7000), out(7000 * ctx.nranks);
      for (int it = 0; it < 200; it++) {
        for (size_t i = 0; i < in.size(); i++) in[i] = ctx.rank * 1e6 + i + it * 0.5;
        if (ncclAllGather(in.data(), out.data(), in.size(), ncclFloat64, b, nullptr) != ncclSuccess) {
          badB += 1000000;
          return;
        }
        for (int q = 0; q < ctx.nranks; q++)
          for (size_t i = 0; i < in.size(); i++) badB += out[q * in.size() + i] != q * 1e6 + i + it * 0.5;
      }
    });
    ta.join();
    tb.join();
    EXPECT_EQ(badA.load(), 0) << "all-reduce on comm A (>= 1000000: a call failed: " << mp::lastError(a) << ")";
    EXPECT_EQ(badB.load(), 0) << "all-gather on comm B (>= 1000000: a call failed: " << mp::lastError(b) << ")";
    MP_NCCL_ASSERT(ncclCommDestroy(b));
    MP_NCCL_ASSERT(ncclCommDestroy(a));
  });
  mp::expectAllPassed(r);
}

// ncclCommInitAll makes 3 communicators in one process; one thread drives all three through groups.
TEST(Comm, InitAllOneProcessOneThread) {
  mp::Options o;
  o.idSource = mp::IdSource::kNone;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "30"}};
  auto r = mp::runRanks(1, o, [](mp::RankCtx&) {
    const int n = 3;
    ncclComm_t comms[n] = {nullptr, nullptr, nullptr};
    mp::setStatus("ncclCommInitAll");
    MP_NCCL_ASSERT(ncclCommInitAll(comms, n, nullptr));
    for (int i = 0; i < n; i++) {
      ASSERT_NE(comms[i], nullptr);
      int cnt = -1, ur = -1, dev = 0;
      MP_NCCL_ASSERT(ncclCommCount(comms[i], &cnt));
      MP_NCCL_ASSERT(ncclCommUserRank(comms[i], &ur));
      MP_NCCL_ASSERT(ncclCommCuDevice(comms[i], &dev));
      EXPECT_EQ(cnt, n);
      EXPECT_EQ(ur, i);
      EXPECT_EQ(dev, -1);
    }
    const size_t count = 70001;
    std::vector<std::vector<int32_t>> in(n), out(n), gath(n), ring(n);
    for (int i = 0; i < n; i++) {
      in[i].resize(count);
      for (size_t j = 0; j < count; j++) in[i][j] = (int32_t)(j * 7 + i * 1000003);
      out[i].assign(count, -1);
      gath[i].assign(n * 100, -1);
      ring[i].assign(count, -1);
    }
    mp::setStatus("group over 3 comms");
    MP_NCCL_ASSERT(ncclGroupStart());
    for (int i = 0; i < n; i++) {
      MP_NCCL_ASSERT(ncclAllReduce(in[i].data(), out[i].data(), count, ncclInt32, ncclSum, comms[i], nullptr));
      MP_NCCL_ASSERT(ncclAllGather(in[i].data(), gath[i].data(), 100, ncclInt32, comms[i], nullptr));
      MP_NCCL_ASSERT(ncclSend(in[i].data(), count, ncclInt32, (i + 1) % n, comms[i], nullptr));
      MP_NCCL_ASSERT(ncclRecv(ring[i].data(), count, ncclInt32, (i + n - 1) % n, comms[i], nullptr));
    }
    MP_NCCL_ASSERT(ncclGroupEnd());
    for (int i = 0; i < n; i++) {
      for (size_t j = 0; j < count; j++) {
        int32_t want = 0;
        for (int q = 0; q < n; q++) want = (int32_t)((uint32_t)want + (uint32_t)in[q][j]);
        ASSERT_EQ(out[i][j], want) << "comm " << i << " all-reduce element " << j;
        ASSERT_EQ(ring[i][j], in[(i + n - 1) % n][j]) << "comm " << i << " recv element " << j;
      }
      for (int q = 0; q < n; q++)
        for (size_t j = 0; j < 100; j++)
          ASSERT_EQ(gath[i][q * 100 + j], in[q][j]) << "comm " << i << " all-gather block " << q;
    }
    // Another round with a broadcast from the last comm, to see the comms stay usable.
    std::vector<double> b[n];
    for (int i = 0; i < n; i++) b[i].assign(1000, i == n - 1 ? 3.25 : -1);
    MP_NCCL_ASSERT(ncclGroupStart());
    for (int i = 0; i < n; i++) MP_NCCL_ASSERT(ncclBcast(b[i].data(), 1000, ncclFloat64, n - 1, comms[i], nullptr));
    MP_NCCL_ASSERT(ncclGroupEnd());
    for (int i = 0; i < n; i++) EXPECT_EQ(b[i], std::vector<double>(1000, 3.25)) << "comm " << i;
    mp::setStatus("destroy the 3 comms one after another");
    for (int i = 0; i < n; i++) MP_NCCL_ASSERT(ncclCommDestroy(comms[i]));
  });
  mp::expectAllPassed(r);
}

}  // namespace

// Two application threads, each driving its own set of communicators through multi-comm groups at the same
// time: the shared group workers must keep the two threads' batches apart (each waits only for its own).
TEST(Comm, TwoThreadsEachDrivingSeveralComms) {
  mp::Options o;
  o.idSource = mp::IdSource::kNone;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "30"}};
  auto r = mp::runRanks(1, o, [](mp::RankCtx&) {
    const int n = 2;
    ncclComm_t a[n] = {nullptr, nullptr}, b[n] = {nullptr, nullptr};
    MP_NCCL_ASSERT(ncclCommInitAll(a, n, nullptr));
    MP_NCCL_ASSERT(ncclCommInitAll(b, n, nullptr));
    std::atomic<int> failures{0};
    auto drive = [&](ncclComm_t* comms, int salt) {
      const size_t count = 4099;
      std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(count)), out(n);
      for (int iter = 0; iter < 50; iter++) {
        for (int i = 0; i < n; i++) {
          for (size_t j = 0; j < count; j++) in[i][j] = (int32_t)(j * 3 + i * 101 + iter * 7 + salt);
          out[i].assign(count, -1);
        }
        if (ncclGroupStart() != ncclSuccess) failures++;
        for (int i = 0; i < n; i++)
          if (ncclAllReduce(in[i].data(), out[i].data(), count, ncclInt32, ncclSum, comms[i], nullptr) != ncclSuccess)
            failures++;
        if (ncclGroupEnd() != ncclSuccess) failures++;
        for (int i = 0; i < n; i++)
          for (size_t j = 0; j < count; j++)
            if (out[i][j] != in[0][j] + in[1][j]) {
              failures++;
              break;
            }
      }
    };
    std::thread t1(drive, a, 0), t2(drive, b, 1000000);
    t1.join();
    t2.join();
    EXPECT_EQ(failures.load(), 0);
    for (int i = 0; i < n; i++) {
      MP_NCCL_ASSERT(ncclCommDestroy(a[i]));
      MP_NCCL_ASSERT(ncclCommDestroy(b[i]));
    }
  });
  mp::expectAllPassed(r);
}
