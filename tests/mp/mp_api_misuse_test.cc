// API misuse and the less common lifecycle patterns on host communicators, each in a child process: comms
// created inside a group from one thread (NCCL's many-GPUs-per-thread pattern), destroy/abort of a comm
// whose ops sit in an open group, ncclGroupSimulateEnd with a null or bad simInfo, using a comm before its
// nonblocking init finished, ncclCommInitAll's device list, and config fields out of range. Each misuse must
// give a clear error naming the argument, and leave the thread and the other comms usable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mp/common/harness.h"
#include "nccl.h"

namespace {

mp::Options oneProcess() {
  mp::Options o;
  o.idSource = mp::IdSource::kNone;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "20"}, {"BRAID_BOOTSTRAP_TIMEOUT", "20"}};
  return o;
}

// A multi-process job over SHM, or over sockets (SHM off), with a short BRAID_TIMEOUT.
mp::Options jobOver(bool sockets) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "20"}};
  if (sockets) o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  return o;
}

// A counter shared by the ranks (forked children) of one job.
std::atomic<int>* sharedCounter() {
  return static_cast<std::atomic<int>*>(mp::sharedAlloc(sizeof(std::atomic<int>)));
}

// Counts this rank in and waits for `n`: over sockets a rank must not abort while its peer's proxy may
// still be delivering what the test looks at.
void arriveAndWait(std::atomic<int>* c, int n) {
  c->fetch_add(1);
  while (c->load() < n) usleep(1000);
}

// All-reduces (sum of int32) over `comms` from this one thread in a group; checks every element.
void allReduceAll(const std::vector<ncclComm_t>& comms, size_t count) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::vector<int32_t>> in(n), out(n);
  for (int i = 0; i < n; i++) {
    in[i].resize(count);
    for (size_t j = 0; j < count; j++) in[i][j] = static_cast<int32_t>(j * 3 + i * 100003);
    out[i].assign(count, -7);
  }
  MP_NCCL_ASSERT(ncclGroupStart());
  for (int i = 0; i < n; i++)
    MP_NCCL_ASSERT(ncclAllReduce(in[i].data(), out[i].data(), count, ncclInt32, ncclSum, comms[i], nullptr));
  MP_NCCL_ASSERT(ncclGroupEnd());
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < count; j++) {
      int32_t want = 0;
      for (int q = 0; q < n; q++)
        want = static_cast<int32_t>(static_cast<uint32_t>(want) + static_cast<uint32_t>(in[q][j]));
      ASSERT_EQ(out[i][j], want) << "comm " << i << " element " << j;
    }
}

// ncclGroupStart; ncclCommInitRank x 3 from one thread; ncclGroupEnd: the inits start together at the group
// end (one blocking inside the group would wait forever for peers this thread has not started). Then the
// same with nonblocking configs: ncclInProgress, ready after polling.
TEST(ApiMisuse, CommInitInsideGroupFromOneThread) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    const int n = 3;
    for (int blocking = 1; blocking >= 0; --blocking) {
      ncclUniqueId id;
      MP_NCCL_ASSERT(ncclGetUniqueId(&id));
      std::vector<ncclComm_t> comms(n, nullptr);
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.blocking = blocking;
      mp::setStatus("group of %d inits (blocking=%d)", n, blocking);
      const double t0 = mp::nowSec();
      MP_NCCL_ASSERT(ncclGroupStart());
      for (int i = 0; i < n; i++) {
        ncclResult_t res = ncclCommInitRankConfig(&comms[i], n, id, i, &cfg);
        ASSERT_EQ(res, blocking ? ncclSuccess : ncclInProgress) << ncclGetLastError(nullptr);
        ASSERT_NE(comms[i], nullptr);
      }
      ncclResult_t end = ncclGroupEnd();
      ASSERT_EQ(end, blocking ? ncclSuccess : ncclInProgress) << ncclGetLastError(nullptr);
      EXPECT_LT(mp::nowSec() - t0, 15.0) << "the inits must not wait for the bootstrap timeout";
      for (int i = 0; i < n; i++) {
        ASSERT_EQ(mp::waitAsync(comms[i], 15), ncclSuccess) << "comm " << i << ": " << ncclGetLastError(comms[i]);
        int rank = -1;
        MP_NCCL_ASSERT(ncclCommUserRank(comms[i], &rank));
        EXPECT_EQ(rank, i);
      }
      allReduceAll(comms, 10007);
      for (ncclComm_t c : comms) MP_NCCL_ASSERT(ncclCommDestroy(c));
    }
  });
  mp::expectAllPassed(r);
}

// Misuse around inits inside a group: mixing blocking and nonblocking comms is refused (and fails the group);
// a comm whose init is still queued cannot be destroyed, and aborting it fails the group at once instead of
// leaving its peers' inits waiting for it; a failing init aborts the group's other inits.
TEST(ApiMisuse, CommInitInsideGroupMisuse) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    ncclUniqueId id;
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    ncclConfig_t blockingCfg = NCCL_CONFIG_INITIALIZER, nonblockingCfg = NCCL_CONFIG_INITIALIZER;
    blockingCfg.blocking = 1;
    nonblockingCfg.blocking = 0;
    ncclComm_t a = nullptr, b = reinterpret_cast<ncclComm_t>(0x1);
    double t0 = mp::nowSec();
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclCommInitRankConfig(&a, 2, id, 0, &blockingCfg));
    EXPECT_EQ(ncclCommInitRankConfig(&b, 2, id, 1, &nonblockingCfg), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "blocking")) << ncclGetLastError(nullptr);
    EXPECT_EQ(b, nullptr);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
    EXPECT_LT(mp::nowSec() - t0, 5.0) << "no init may wait for the refused rank";
    ncclResult_t st = ncclSuccess;
    MP_NCCL_ASSERT(ncclCommGetAsyncError(a, &st));
    EXPECT_EQ(st, ncclInvalidArgument) << "the group's comm reports the group's failure";
    MP_NCCL_ASSERT(ncclCommDestroy(a));

    // Destroy refused while the init is queued; abort drops it and fails the group promptly.
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    a = nullptr;
    b = nullptr;
    t0 = mp::nowSec();
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclCommInitRank(&a, 2, id, 0));
    MP_NCCL_ASSERT(ncclCommInitRank(&b, 2, id, 1));
    EXPECT_EQ(ncclCommDestroy(b), ncclInvalidUsage);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "group")) << ncclGetLastError(nullptr);
    MP_NCCL_ASSERT(ncclCommAbort(b));
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "aborted")) << ncclGetLastError(nullptr);
    EXPECT_LT(mp::nowSec() - t0, 5.0);
    MP_NCCL_ASSERT(ncclCommDestroy(a));

    // Two inits claim rank 0 and none rank 1: one fails, and the other is aborted instead of waiting for
    // rank 1 until the bootstrap timeout (20 s here).
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    ncclComm_t c[2] = {nullptr, nullptr};
    t0 = mp::nowSec();
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclCommInitRank(&c[0], 2, id, 0));
    MP_NCCL_ASSERT(ncclCommInitRank(&c[1], 2, id, 0));
    ncclResult_t end = ncclGroupEnd();
    const double took = mp::nowSec() - t0;
    EXPECT_NE(end, ncclSuccess);
    mp::note("duplicate rank in a group: %s after %.2f s: %s", ncclGetErrorString(end), took,
             ncclGetLastError(nullptr));
    EXPECT_LT(took, 15.0) << "the failure must abort the group's other init";
    for (ncclComm_t x : c) EXPECT_EQ(ncclCommAbort(x), ncclSuccess);
  });
  mp::expectAllPassed(r);
}

// ncclCommSplit of several comms inside one group from one thread: each split's exchange waits for the other
// ranks', so they run together at the group end. Two splits of one parent in the group run in call order.
// ncclCommShrink likewise.
TEST(ApiMisuse, SplitInsideGroupFromOneThread) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    const int n = 3;
    std::vector<ncclComm_t> comms(n, nullptr);
    MP_NCCL_ASSERT(ncclCommInitAll(comms.data(), n, nullptr));
    std::vector<ncclComm_t> byColor(n, nullptr), all(n, nullptr);
    const double t0 = mp::nowSec();
    MP_NCCL_ASSERT(ncclGroupStart());
    for (int i = 0; i < n; i++) {
      // ranks 0 and 2: color 0, keys reversed (rank 2 becomes rank 0); rank 1: no color.
      MP_NCCL_ASSERT(ncclCommSplit(comms[i], i == 1 ? NCCL_SPLIT_NOCOLOR : 0, -i, &byColor[i], nullptr));
      // A config whose name string is gone before ncclGroupEnd: the deferred split keeps its own copy.
      std::string name = "split-" + std::to_string(i) + std::string(40, 'x');
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.commName = name.c_str();
      MP_NCCL_ASSERT(ncclCommSplit(comms[i], 7, i, &all[i], &cfg));
      std::fill(name.begin(), name.end(), '\0');
    }
    EXPECT_EQ(ncclCommDestroy(comms[0]), ncclInvalidUsage) << "its splits are queued in the group";
    MP_NCCL_ASSERT(ncclGroupEnd());
    EXPECT_LT(mp::nowSec() - t0, 15.0);
    EXPECT_EQ(byColor[1], nullptr);
    ASSERT_NE(byColor[0], nullptr);
    ASSERT_NE(byColor[2], nullptr);
    int rank0 = -1, rank2 = -1, cnt = 0;
    MP_NCCL_ASSERT(ncclCommUserRank(byColor[0], &rank0));
    MP_NCCL_ASSERT(ncclCommUserRank(byColor[2], &rank2));
    MP_NCCL_ASSERT(ncclCommCount(byColor[0], &cnt));
    EXPECT_EQ(cnt, 2);
    EXPECT_EQ(rank0, 1);
    EXPECT_EQ(rank2, 0);
    allReduceAll({byColor[2], byColor[0]}, 5001);
    for (int i = 0; i < n; i++) {
      ASSERT_NE(all[i], nullptr);
      int rk = -1;
      MP_NCCL_ASSERT(ncclCommUserRank(all[i], &rk));
      EXPECT_EQ(rk, i);
    }
    allReduceAll(all, 3003);
    // Shrink rank 1 away from the `all` comms, also inside one group from this thread.
    std::vector<ncclComm_t> shrunk(n, nullptr);
    int excl = 1;
    MP_NCCL_ASSERT(ncclGroupStart());
    for (int i : {0, 2}) MP_NCCL_ASSERT(ncclCommShrink(all[i], &excl, 1, &shrunk[i], nullptr, NCCL_SHRINK_DEFAULT));
    MP_NCCL_ASSERT(ncclGroupEnd());
    ASSERT_NE(shrunk[0], nullptr);
    ASSERT_NE(shrunk[2], nullptr);
    MP_NCCL_ASSERT(ncclCommUserRank(shrunk[2], &rank2));
    EXPECT_EQ(rank2, 1);
    allReduceAll({shrunk[0], shrunk[2]}, 2048);
    for (int i : {0, 2}) MP_NCCL_ASSERT(ncclCommDestroy(shrunk[i]));
    for (ncclComm_t c : {byColor[0], byColor[2]}) MP_NCCL_ASSERT(ncclCommDestroy(c));
    for (int i = 0; i < n; i++) {
      MP_NCCL_ASSERT(ncclCommDestroy(all[i]));
      MP_NCCL_ASSERT(ncclCommDestroy(comms[i]));
    }
  });
  mp::expectAllPassed(r);
}

// ncclCommDestroy of a comm whose op is queued in the open group is refused (it would leave the group with a
// freed comm); the group then runs normally. ncclCommAbort drops the comm's queued ops, and the group's end
// reports that instead of touching the freed comm.
TEST(ApiMisuse, DestroyOrAbortWithOpsQueuedInAGroup) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    const int n = 2;
    std::vector<ncclComm_t> comms(n, nullptr);
    MP_NCCL_ASSERT(ncclCommInitAll(comms.data(), n, nullptr));
    const size_t count = 4099;
    std::vector<float> in0(count, 1.5f), in1(count, 2.0f), out0(count, -1.f), out1(count, -1.f);
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), count, ncclFloat32, ncclSum, comms[0], nullptr));
    ncclResult_t res = ncclCommDestroy(comms[0]);
    EXPECT_EQ(res, ncclInvalidUsage);
    std::string msg = ncclGetLastError(nullptr);
    EXPECT_TRUE(mp::containsCI(msg, "queued") && mp::containsCI(msg, "group")) << msg;
    MP_NCCL_ASSERT(ncclAllReduce(in1.data(), out1.data(), count, ncclFloat32, ncclSum, comms[1], nullptr));
    MP_NCCL_ASSERT(ncclGroupEnd());
    for (size_t j = 0; j < count; j++) {
      ASSERT_EQ(out0[j], 3.5f) << "element " << j;
      ASSERT_EQ(out1[j], 3.5f) << "element " << j;
    }
    // Abort with queued ops: dropped, and the group's end fails without running anything.
    std::fill(out1.begin(), out1.end(), -1.f);
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), count, ncclFloat32, ncclSum, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclAllReduce(in1.data(), out1.data(), count, ncclFloat32, ncclSum, comms[1], nullptr));
    MP_NCCL_ASSERT(ncclCommAbort(comms[0]));
    res = ncclGroupEnd();
    EXPECT_EQ(res, ncclInvalidUsage);
    msg = ncclGetLastError(nullptr);
    EXPECT_TRUE(mp::containsCI(msg, "aborted")) << msg;
    EXPECT_EQ(out1[0], -1.f) << "nothing of the failed group may run";
    EXPECT_EQ(out1[count - 1], -1.f);
    // The thread is out of the group: a lone ncclGroupEnd is an error again.
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    MP_NCCL_ASSERT(ncclCommAbort(comms[1]));
  });
  mp::expectAllPassed(r);
}

// ncclGroupSimulateEnd(NULL) ends the group like ncclGroupEnd (the ops run); a bad magic still ends the group
// (discarding its ops) and is ncclInvalidArgument; an invalid op of the group is reported, not simulated.
TEST(ApiMisuse, GroupSimulateEndNullOrBadSimInfo) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    const int n = 2;
    std::vector<ncclComm_t> comms(n, nullptr);
    MP_NCCL_ASSERT(ncclCommInitAll(comms.data(), n, nullptr));
    const size_t count = 3001;
    std::vector<int32_t> in0(count, 5), in1(count, 9), out0(count, -1), out1(count, -1);
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), count, ncclInt32, ncclMax, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclAllReduce(in1.data(), out1.data(), count, ncclInt32, ncclMax, comms[1], nullptr));
    MP_NCCL_ASSERT(ncclGroupSimulateEnd(nullptr));
    for (size_t j = 0; j < count; j++) {
      ASSERT_EQ(out0[j], 9) << "element " << j;
      ASSERT_EQ(out1[j], 9) << "element " << j;
    }

    ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
    bad.magic = 0x1234;
    std::fill(out0.begin(), out0.end(), -1);
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), count, ncclInt32, ncclSum, comms[0], nullptr));
    EXPECT_EQ(ncclGroupSimulateEnd(&bad), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "magic")) << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "the bad simInfo must still have ended the group";
    EXPECT_EQ(out0[0], -1);

    ncclSimInfo_t good = NCCL_SIM_INFO_INITIALIZER;
    MP_NCCL_ASSERT(ncclGroupStart());
    EXPECT_EQ(ncclAllReduce(in0.data(), out0.data(), count, (ncclDataType_t)77, ncclSum, comms[0], nullptr),
              ncclInvalidArgument);
    EXPECT_EQ(ncclGroupSimulateEnd(&good), ncclInvalidArgument) << "the group's invalid op must be reported";
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "datatype")) << ncclGetLastError(nullptr);

    // A valid simulated group estimates a time and runs nothing; the comms still work afterwards.
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), count, ncclInt32, ncclSum, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclGroupSimulateEnd(&good));
    EXPECT_GT(good.estimatedTime, 0.f);
    EXPECT_EQ(out0[0], -1);
    std::fill(out1.begin(), out1.end(), -1);
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), count, ncclInt32, ncclSum, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclAllReduce(in1.data(), out1.data(), count, ncclInt32, ncclSum, comms[1], nullptr));
    MP_NCCL_ASSERT(ncclGroupEnd());
    EXPECT_EQ(out0[count - 1], 14);
    EXPECT_EQ(out1[0], 14);
    for (ncclComm_t c : comms) MP_NCCL_ASSERT(ncclCommDestroy(c));
  });
  mp::expectAllPassed(r);
}

// A nonblocking init whose peer has not arrived yet: split, shrink, finalize and collectives on it are
// ncclInvalidArgument at once (as in NCCL), not a race with the init thread or a block until it ends.
TEST(ApiMisuse, CommUsedBeforeNonblockingInitFinished) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    ncclUniqueId id;
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t c0 = nullptr, c1 = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&c0, 2, id, 0, &cfg), ncclInProgress) << ncclGetLastError(nullptr);
    ncclComm_t sub = nullptr;
    const double t0 = mp::nowSec();
    EXPECT_EQ(ncclCommSplit(c0, 0, 0, &sub, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "initialization")) << ncclGetLastError(nullptr);
    EXPECT_EQ(sub, nullptr);
    int excl = 1;
    EXPECT_EQ(ncclCommShrink(c0, &excl, 1, &sub, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
    float v = 1.f, w = 0.f;
    EXPECT_EQ(ncclAllReduce(&v, &w, 1, ncclFloat32, ncclSum, c0, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "initialization")) << ncclGetLastError(nullptr);
    EXPECT_EQ(ncclCommFinalize(c0), ncclInvalidArgument);
    EXPECT_LT(mp::nowSec() - t0, 2.0) << "misuse must be refused at once";
    // The init itself is unharmed: the peer arrives, both become ready and work.
    std::thread peer([&] { ncclCommInitRankConfig(&c1, 2, id, 1, &cfg); });
    peer.join();
    ASSERT_EQ(mp::waitAsync(c0, 15), ncclSuccess) << ncclGetLastError(c0);
    ASSERT_EQ(mp::waitAsync(c1, 15), ncclSuccess) << ncclGetLastError(c1);
    allReduceAll({c0, c1}, 999);
    MP_NCCL_ASSERT(ncclCommDestroy(c0));
    MP_NCCL_ASSERT(ncclCommDestroy(c1));
  });
  mp::expectAllPassed(r);
}

// A send to the own rank without its receive (or of another size) is refused before anything of the group
// runs, and is not a sticky comm error: the comms stay usable, and the other comm of the group does not wait
// on a peer that never started.
TEST(ApiMisuse, UnmatchedSelfSendIsRefusedAndLeavesTheCommUsable) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    const int n = 2;
    std::vector<ncclComm_t> comms(n, nullptr);
    MP_NCCL_ASSERT(ncclCommInitAll(comms.data(), n, nullptr));
    std::vector<float> a(100, 1.f), b(100, -1.f);
    const double t0 = mp::nowSec();
    EXPECT_EQ(ncclSend(a.data(), 100, ncclFloat32, 0, comms[0], nullptr), ncclInvalidUsage);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "itself")) << ncclGetLastError(nullptr);
    std::vector<float> in0(500, 1.f), in1(500, 2.f), out0(500, -1.f), out1(500, -1.f);
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclAllReduce(in0.data(), out0.data(), 500, ncclFloat32, ncclSum, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclSend(a.data(), 100, ncclFloat32, 1, comms[1], nullptr));
    MP_NCCL_ASSERT(ncclRecv(b.data(), 50, ncclFloat32, 1, comms[1], nullptr));
    MP_NCCL_ASSERT(ncclAllReduce(in1.data(), out1.data(), 500, ncclFloat32, ncclSum, comms[1], nullptr));
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "bytes")) << ncclGetLastError(nullptr);
    EXPECT_LT(mp::nowSec() - t0, 5.0) << "refused at once, no comm waiting on another";
    EXPECT_EQ(out0[0], -1.f) << "nothing of the group may run";
    EXPECT_EQ(b[0], -1.f);
    for (ncclComm_t c : comms) {
      ncclResult_t st = ncclInternalError;
      MP_NCCL_ASSERT(ncclCommGetAsyncError(c, &st));
      EXPECT_EQ(st, ncclSuccess) << "an argument error is not a sticky comm error";
    }
    allReduceAll(comms, 777);
    // A matched send/recv to itself works.
    MP_NCCL_ASSERT(ncclGroupStart());
    MP_NCCL_ASSERT(ncclSend(a.data(), 100, ncclFloat32, 0, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclRecv(b.data(), 100, ncclFloat32, 0, comms[0], nullptr));
    MP_NCCL_ASSERT(ncclGroupEnd());
    EXPECT_EQ(b, a);
    for (ncclComm_t c : comms) MP_NCCL_ASSERT(ncclCommDestroy(c));
  });
  mp::expectAllPassed(r);
}

// Sum-all-reduce of `count` floats (rank r contributes r + 1 + i % 5) over `comm`, every element checked.
void checkAllReduce(ncclComm_t comm, const std::vector<int>& contributors, int me, size_t count) {
  std::vector<float> in(count), out(count, -1.f);
  for (size_t i = 0; i < count; i++) in[i] = static_cast<float>(me + 1 + static_cast<int>(i % 5));
  MP_NCCL_ASSERT(ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr));
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int q : contributors) want += static_cast<float>(q + 1 + static_cast<int>(i % 5));
    ASSERT_EQ(out[i], want) << "element " << i;
  }
}

// ncclCommRevoke then ncclCommShrink (the fault-tolerance sequence): the revoked comm refuses collectives and
// splits, yet its members still agree on the shrunk comm over the bootstrap, which then works.
TEST(ApiMisuse, ShrinkAfterRevoke) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "20"}};
  auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    checkAllReduce(comm, {0, 1, 2}, ctx.rank, 4097);
    mp::setStatus("revoke");
    MP_NCCL_ASSERT(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
    float v = 1.f, w = 0.f;
    EXPECT_NE(ncclAllReduce(&v, &w, 1, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    ncclComm_t sub = nullptr;
    EXPECT_EQ(ncclCommSplit(comm, 0, ctx.rank, &sub, nullptr), ncclInvalidUsage);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "revoked")) << ncclGetLastError(nullptr);
    if (ctx.rank == 2) {
      MP_NCCL_ASSERT(ncclCommDestroy(comm));
      return;
    }
    mp::setStatus("shrink without rank 2");
    int excl = 2;
    ncclComm_t small = nullptr;
    MP_NCCL_ASSERT(ncclCommShrink(comm, &excl, 1, &small, nullptr, NCCL_SHRINK_DEFAULT));
    ASSERT_NE(small, nullptr);
    int n = 0, me = -1;
    MP_NCCL_ASSERT(ncclCommCount(small, &n));
    MP_NCCL_ASSERT(ncclCommUserRank(small, &me));
    EXPECT_EQ(n, 2);
    EXPECT_EQ(me, ctx.rank);
    checkAllReduce(small, {0, 1}, me, 10001);
    MP_NCCL_ASSERT(ncclCommDestroy(small));
    MP_NCCL_ASSERT(ncclCommDestroy(comm));
  });
  mp::expectAllPassed(r);
}

// A rank dies; the survivors see ncclRemoteError, shrink it away with NCCL_SHRINK_ABORT and go on.
TEST(ApiMisuse, ShrinkAwayADeadRank) {
  mp::Options o;
  o.timeoutSec = 60;
  o.env = {{"BRAID_TIMEOUT", "10"}};
  const int dead = 1;
  auto* done = sharedCounter();
  ASSERT_NE(done, nullptr);
  auto r = mp::runRanks(3, o, [&](mp::RankCtx& ctx) {
    ncclComm_t comm;
    mp::initComm(ctx, &comm);
    if (testing::Test::HasFatalFailure()) return;
    checkAllReduce(comm, {0, 1, 2}, ctx.rank, 1000);
    // Every rank has left the first all-reduce before the victim dies (a survivor still inside it would
    // rightly fail it; on a loaded machine that can happen).
    done->fetch_add(1);
    if (ctx.rank == dead) {
      while (done->load() < 3) usleep(1000);
      _exit(1);
    }
    std::vector<float> big(1 << 18, 1.f), out(1 << 18);
    mp::setStatus("all-reduce with rank %d gone", dead);
    ncclResult_t res = ncclAllReduce(big.data(), out.data(), big.size(), ncclFloat32, ncclSum, comm, nullptr);
    EXPECT_EQ(res, ncclRemoteError) << ncclGetLastError(comm);
    mp::setStatus("shrink away rank %d", dead);
    int excl = dead;
    ncclComm_t small = nullptr;
    MP_NCCL_ASSERT(ncclCommShrink(comm, &excl, 1, &small, nullptr, NCCL_SHRINK_ABORT));
    ASSERT_NE(small, nullptr);
    int me = -1;
    MP_NCCL_ASSERT(ncclCommUserRank(small, &me));
    EXPECT_EQ(me, ctx.rank == 0 ? 0 : 1);
    checkAllReduce(small, {0, 1}, me, 3333);
    MP_NCCL_ASSERT(ncclCommDestroy(small));
    MP_NCCL_ASSERT(ncclCommAbort(comm));
  });
  bool ok = r.harnessError.empty();
  for (auto& rr : r.ranks)
    if (rr.rank == dead ? !(rr.exited && rr.exitCode == 1) : !(rr.exited && rr.exitCode == 0)) ok = false;
  EXPECT_TRUE(ok) << r.describe();
}

// Counts whose byte size (times nranks for the gathered buffers) overflows size_t are refused, in a group too.
TEST(ApiMisuse, CountsThatOverflow) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    std::vector<ncclComm_t> comms(2, nullptr);
    MP_NCCL_ASSERT(ncclCommInitAll(comms.data(), 2, nullptr));
    float a = 1.f, b = 0.f;
    const size_t huge = SIZE_MAX / 4 + 1;  // x 4 bytes overflows
    EXPECT_EQ(ncclAllReduce(&a, &b, huge, ncclFloat32, ncclSum, comms[0], nullptr), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "count")) << ncclGetLastError(nullptr);
    // 8 bytes x 2 ranks overflows although 8 bytes alone does not.
    EXPECT_EQ(ncclAllGather(&a, &b, SIZE_MAX / 16 + 1, ncclFloat64, comms[0], nullptr), ncclInvalidArgument);
    MP_NCCL_ASSERT(ncclGroupStart());
    EXPECT_EQ(ncclAlltoAll(&a, &b, SIZE_MAX / 2 + 1, ncclInt8, comms[1], nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
    allReduceAll(comms, 100);
    for (ncclComm_t c : comms) MP_NCCL_ASSERT(ncclCommDestroy(c));
  });
  mp::expectAllPassed(r);
}

// ncclCommInitAll checks the device list before any rank starts, and writes every entry of comms (NULL on
// failure) so neither its cleanup nor the caller sees stale handles.
TEST(ApiMisuse, InitAllBadDeviceList) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    ncclComm_t comms[3];
    std::memset(comms, 0x5a, sizeof(comms));
    int devs[3] = {0, -1, 2};
    EXPECT_EQ(ncclCommInitAll(comms, 3, devs), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "devlist[1]")) << ncclGetLastError(nullptr);
    for (ncclComm_t c : comms) EXPECT_EQ(c, nullptr);
    int dup[2] = {0, 0};  // in range on every machine (with or without GPUs): the duplicate is the error
    std::memset(comms, 0x5a, sizeof(comms));
    EXPECT_EQ(ncclCommInitAll(comms, 2, dup), ncclInvalidUsage);
    EXPECT_EQ(comms[0], nullptr);
    EXPECT_EQ(comms[1], nullptr);
  });
  mp::expectAllPassed(r);
}

// Config fields out of range are ncclInvalidArgument naming the field, before any rank waits on another.
TEST(ApiMisuse, ConfigFieldsOutOfRange) {
  auto r = mp::runRanks(1, oneProcess(), [](mp::RankCtx&) {
    ncclUniqueId id;
    MP_NCCL_ASSERT(ncclGetUniqueId(&id));
    struct Bad {
      const char* field;
      void (*set)(ncclConfig_t*);
    };
    const Bad bads[] = {
        {"minCTAs", [](ncclConfig_t* c) { c->minCTAs = 0; }},
        {"maxCTAs", [](ncclConfig_t* c) { c->maxCTAs = -3; }},
        {"splitShare", [](ncclConfig_t* c) { c->splitShare = 2; }},
        {"collnetEnable", [](ncclConfig_t* c) { c->collnetEnable = 5; }},
        {"shrinkShare", [](ncclConfig_t* c) { c->shrinkShare = -1; }},
        {"cgaClusterSize", [](ncclConfig_t* c) { c->cgaClusterSize = -2; }},
        {"CTAPolicy", [](ncclConfig_t* c) { c->CTAPolicy = 0x10; }},
        {"nvlsCTAs", [](ncclConfig_t* c) { c->nvlsCTAs = 0; }},
    };
    for (const Bad& b : bads) {
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      b.set(&cfg);
      ncclComm_t comm = reinterpret_cast<ncclComm_t>(0x1);
      const double t0 = mp::nowSec();
      EXPECT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &cfg), ncclInvalidArgument) << b.field;
      EXPECT_LT(mp::nowSec() - t0, 2.0) << b.field;
      EXPECT_EQ(comm, nullptr) << b.field;
      EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), b.field)) << ncclGetLastError(nullptr);
    }
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 3, &id, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "nId")) << ncclGetLastError(nullptr);
  });
  mp::expectAllPassed(r);
}

// NCCL_BUFFSIZE set differently per rank: every connection takes rank 0's size (agreed at init), so the ring
// cuts the same steps on every rank. Before, the ranks chunked by their own sizes and failed as "different
// counts" (or timed out with 3+ ranks).
TEST(ApiMisuse, RanksWithDifferentBuffSizeAgree) {
  for (bool sockets : {false, true}) {
    mp::Options o = jobOver(sockets);
    o.childSetup = [](int rank) {
      if (rank == 1) setenv("NCCL_BUFFSIZE", "65536", 1);
      if (rank == 2) setenv("NCCL_BUFFSIZE", "1048576", 1);
    };
    auto r = mp::runRanks(3, o, [](mp::RankCtx& ctx) {
      ncclComm_t comm;
      mp::initComm(ctx, &comm);
      if (testing::Test::HasFatalFailure()) return;
      for (size_t count : {size_t(5000), size_t(300007)}) checkAllReduce(comm, {0, 1, 2}, ctx.rank, count);
      std::vector<int32_t> s(70001), d(70001, -1);
      for (size_t i = 0; i < s.size(); i++) s[i] = static_cast<int32_t>(i * 31 + ctx.rank);
      const int next = (ctx.rank + 1) % ctx.nranks, prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
      MP_NCCL_ASSERT(ncclGroupStart());
      MP_NCCL_ASSERT(ncclSend(s.data(), s.size(), ncclInt32, next, comm, nullptr));
      MP_NCCL_ASSERT(ncclRecv(d.data(), d.size(), ncclInt32, prev, comm, nullptr));
      MP_NCCL_ASSERT(ncclGroupEnd());
      for (size_t i = 0; i < d.size(); i++) ASSERT_EQ(d[i], static_cast<int32_t>(i * 31 + prev)) << "element " << i;
      MP_NCCL_ASSERT(ncclCommDestroy(comm));
    });
    mp::expectAllPassed(r);
  }
}

// A send longer (or shorter) than its receive where both are whole FIFO steps (512 KiB with the default
// NCCL_BUFFSIZE): every step's size agrees, so only the end-of-message flag can tell. The receiver must get
// ncclInvalidUsage, never the first part of the message with the rest left for the next receive.
TEST(ApiMisuse, SendAndRecvOfDifferentWholeStepSizes) {
  for (bool sockets : {false, true}) {
    for (bool longerSend : {true, false}) {
      auto* received = sharedCounter();
      ASSERT_NE(received, nullptr);
      auto r = mp::runRanks(2, jobOver(sockets), [&](mp::RankCtx& ctx) {
        ncclComm_t comm;
        mp::initComm(ctx, &comm);
        if (testing::Test::HasFatalFailure()) return;
        const size_t step = 512 * 1024 / sizeof(float);
        const size_t sendCount = longerSend ? 2 * step : step, recvCount = longerSend ? step : 2 * step;
        std::vector<float> buf(2 * step, 1.f);
        ncclResult_t res;
        if (ctx.rank == 0) {
          res = ncclSend(buf.data(), sendCount, ncclFloat32, 1, comm, nullptr);
          EXPECT_EQ(res, ncclSuccess) << "the sender's steps all fit in the FIFO: " << mp::lastError(comm);
          // Over sockets the proxy is still sending: stay until the receiver has judged the message.
          while (received->load() == 0) usleep(1000);
        } else {
          res = ncclRecv(buf.data(), recvCount, ncclFloat32, 0, comm, nullptr);
          EXPECT_EQ(res, ncclInvalidUsage) << (sockets ? "sockets" : "shm") << ", longer send " << longerSend;
          std::string msg = mp::lastError(comm);
          EXPECT_TRUE(mp::containsCI(msg, "rank 0") && mp::containsCI(msg, "counts")) << msg;
          received->store(1);
        }
        EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      });
      mp::expectAllPassed(r);
    }
  }
}

// Ranks running different collectives whose steps happen to have the same sizes (all-reduce of 2N against
// reduce-scatter of N on 2 ranks), or a broadcast with different roots (which cannot be seen by the broadcast
// itself: each rank only sends) followed by a matched all-reduce. Every step carries its collective's tag, so
// both are ncclInvalidUsage naming the mismatch, not a success with wrong data or a wait for the timeout.
TEST(ApiMisuse, MismatchedCollectivesAreDetected) {
  for (bool sockets : {false, true}) {
    auto* judged = sharedCounter();
    auto* done = sharedCounter();
    ASSERT_NE(judged, nullptr);
    ASSERT_NE(done, nullptr);
    auto r = mp::runRanks(2, jobOver(sockets), [&](mp::RankCtx& ctx) {
      const size_t n = 4096;
      std::vector<float> in(2 * n, 1.f), out(2 * n, -1.f);
      ncclComm_t comm, dup = nullptr;
      mp::initComm(ctx, &comm);
      if (testing::Test::HasFatalFailure()) return;
      MP_NCCL_ASSERT(ncclCommSplit(comm, 0, ctx.rank, &dup, nullptr));  // for the second case
      double t0 = mp::nowSec();
      ncclResult_t res = ctx.rank == 0
                             ? ncclAllReduce(in.data(), out.data(), 2 * n, ncclFloat32, ncclSum, comm, nullptr)
                             : ncclReduceScatter(in.data(), out.data(), n, ncclFloat32, ncclSum, comm, nullptr);
      std::string msg = mp::lastError(comm);
      EXPECT_EQ(res, ncclInvalidUsage) << msg;
      EXPECT_TRUE(mp::containsCI(msg, "another collective")) << msg;
      EXPECT_LT(mp::nowSec() - t0, 10.0) << "BRAID_TIMEOUT=20: detected, not timed out";
      // Both ranks judge before either aborts: an abort closes the connections, and a peer still inside its
      // collective then rightly sees a broken connection instead (1 CI run in ~10 did).
      arriveAndWait(judged, 2);
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);

      comm = dup;
      MP_NCCL_ASSERT(ncclBroadcast(in.data(), out.data(), n, ncclFloat32, ctx.rank, comm, nullptr));
      res = ncclAllReduce(in.data(), out.data(), n, ncclFloat32, ncclSum, comm, nullptr);
      msg = mp::lastError(comm);
      EXPECT_EQ(res, ncclInvalidUsage) << "the broadcasts' stray steps must not pass as the all-reduce's: " << msg;
      EXPECT_TRUE(mp::containsCI(msg, "another collective")) << msg;
      arriveAndWait(done, 2);
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    });
    mp::expectAllPassed(r);
  }
}

// A broadcast whose ranks name different roots leaves a stray step in a FIFO; the next, matched broadcast
// has steps of the same size and the same collective, so only the sequence number in the tag tells the stray
// step from its own; without it the receiver would return success with the earlier call's data.
TEST(ApiMisuse, StrayStepOfAnEarlierMismatchIsNotTakenAsData) {
  for (bool sockets : {false, true}) {
    auto* done = sharedCounter();
    ASSERT_NE(done, nullptr);
    auto r = mp::runRanks(2, jobOver(sockets), [&](mp::RankCtx& ctx) {
      const size_t n = 1000;
      ncclComm_t comm;
      mp::initComm(ctx, &comm);
      if (testing::Test::HasFatalFailure()) return;
      std::vector<float> first(n, 10.f + ctx.rank), second(n, 20.f + ctx.rank), out(n, -1.f);
      MP_NCCL_ASSERT(ncclBroadcast(first.data(), out.data(), n, ncclFloat32, ctx.rank, comm, nullptr));
      std::fill(out.begin(), out.end(), -1.f);
      ncclResult_t res = ncclBroadcast(second.data(), out.data(), n, ncclFloat32, 0, comm, nullptr);
      if (ctx.rank == 1) {
        std::string msg = mp::lastError(comm);
        EXPECT_EQ(res, ncclInvalidUsage) << "rank 1 would have taken the first call's data (" << out[0] << "): " << msg;
        EXPECT_TRUE(mp::containsCI(msg, "another collective")) << msg;
      }
      arriveAndWait(done, 2);
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    });
    mp::expectAllPassed(r);
  }
}

// NCCL_COMM_ID with port 0 names no port anyone can connect to: refused at ncclGetUniqueId.
TEST(ApiMisuse, CommIdWithPortZero) {
  mp::Options o = oneProcess();
  o.env.push_back({"NCCL_COMM_ID", "127.0.0.1:0"});
  auto r = mp::runRanks(1, o, [](mp::RankCtx&) {
    ncclUniqueId id;
    const double t0 = mp::nowSec();
    EXPECT_EQ(ncclGetUniqueId(&id), ncclInvalidArgument);
    EXPECT_TRUE(mp::containsCI(ncclGetLastError(nullptr), "port")) << ncclGetLastError(nullptr);
    EXPECT_LT(mp::nowSec() - t0, 2.0);
  });
  mp::expectAllPassed(r);
}

}  // namespace
