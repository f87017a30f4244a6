// Groups: the per-thread queue of operations behind ncclGroupStart/End/SimulateEnd. At the outermost
// ncclGroupEnd the queued ops are split per communicator; one communicator runs on the calling thread, several (one
// thread driving many ranks, e.g. after ncclCommInitAll) run concurrently on helper threads, since each
// rank's ops can only complete together with its peers'.
#include "runtime/group.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/result.h"
#include "runtime/comm.h"
#include "runtime/executor.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::string errorMsg;
  std::vector<std::pair<ncclComm*, OpDesc>> ops;
  struct DeferredInit {
    ncclComm* comm;
    bool blocking;
    std::function<void()> start;
  };
  std::vector<DeferredInit> inits;  // deferGroupInit
  std::vector<std::pair<ncclComm*, std::function<ncclResult_t()>>> jobs;  // deferGroupJob
};
thread_local GroupState tGroup;

// Argument errors that only show across a batch's ops, caught before anything of the group runs: they must
// not become the comm's sticky error, and no rank may have launched part of the group when they fail.
// Today: the comm's init is done (a nonblocking one may still run), and sends to itself are matched, in
// order, by receives from itself of the same size.
ncclResult_t validateBatch(ncclComm* comm, const std::vector<OpDesc>& ops) {
  BRAID_CHECK(checkInitDone(comm, "collective"));
  std::vector<size_t> sends, recvs;
  for (const OpDesc& op : ops) {
    if (op.coll == CollType::Send && op.peer == comm->rank) sends.push_back(op.count * dtypeSize(op.dtype));
    if (op.coll == CollType::Recv && op.peer == comm->rank) recvs.push_back(op.count * dtypeSize(op.dtype));
  }
  if (sends.size() != recvs.size())
    return recordError(ncclInvalidUsage,
                       "rank %d: %zu send(s) to itself but %zu receive(s) from itself in one group (each ncclSend to "
                       "the own rank needs an ncclRecv from it in the same group); nothing was executed",
                       comm->rank, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); ++i)
    if (sends[i] != recvs[i])
      return recordError(ncclInvalidUsage,
                         "rank %d: send %zu to itself has %zu bytes but the matching receive has %zu; nothing was "
                         "executed",
                         comm->rank, i, sends[i], recvs[i]);
  return ncclSuccess;
}

// Runs one communicator's batch; a failure becomes the comm's sticky async error (as in NCCL).
ncclResult_t runBatch(ncclComm* comm, const std::vector<OpDesc>& ops) {
  CommUse use(comm);
  RankTag tag(comm->rank);
  BRAID_CHECK(checkCommUsable(comm));
  ncclResult_t res = comm->exec->run(ops);
  if (res != ncclSuccess) {
    comm->setLastError(pendingError().empty() ? std::string(errorString(res)) : pendingError());
    int expected = ncclSuccess;
    comm->asyncError.compare_exchange_strong(expected, res);
  }
  return res;
}

// Helper threads for groups that span several communicators (one thread driving several ranks). They
// persist across groups: creating a thread per communicator per group cost tens of microseconds a call.
class GroupWorkers {
 public:
  static GroupWorkers& get() {
    static GroupWorkers* w = new GroupWorkers();  // never destroyed: workers may outlive static teardown
    return *w;
  }

  // Runs tasks[1..] on workers and tasks[0] on the caller; returns when all are done. Safe to call from
  // several application threads at once: each call waits only for its own tasks.
  void runAll(std::vector<std::function<void()>>& tasks) {
    Batch batch;
    batch.pending = tasks.size() - 1;
    std::unique_lock<std::mutex> lk(mu_);
    while (idle_ < queue_.size() + tasks.size() - 1) {
      std::thread([this] { loop(); }).detach();
      ++idle_;
    }
    for (size_t i = 1; i < tasks.size(); ++i) queue_.push_back({&tasks[i], &batch});
    cv_.notify_all();
    lk.unlock();
    tasks[0]();
    lk.lock();
    doneCv_.wait(lk, [&] { return batch.pending == 0; });
  }

 private:
  struct Batch {
    size_t pending = 0;
  };
  struct Item {
    std::function<void()>* task;
    Batch* batch;
  };

  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return !queue_.empty(); });
      Item item = queue_.back();
      queue_.pop_back();
      --idle_;
      lk.unlock();
      (*item.task)();
      lk.lock();
      ++idle_;
      if (--item.batch->pending == 0) doneCv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, doneCv_;
  std::vector<Item> queue_;
  size_t idle_ = 0;  // workers not running a task (some may not have picked up a queued one yet)
};

// This thread's group no longer holds its ops (they run or are discarded now): release the communicators'
// counts of queued ops. After this a destroy from another thread waits for a running batch to leave
// (CommUse in runBatch) instead of being refused.
template <typename Queue>
void releaseQueued(const Queue& queued) {
  for (auto& entry : queued) entry.first->groupQueued.fetch_sub(1);
}
void clearQueue(std::vector<std::pair<ncclComm*, OpDesc>>& queued) {
  releaseQueued(queued);
  queued.clear();
}

ncclResult_t flush(std::vector<std::pair<ncclComm*, OpDesc>>& queued) {
  if (queued.empty()) return ncclSuccess;
  // One communicator (every call outside a group, most groups): no split per comm, one allocation.
  ncclComm* const first = queued.front().first;
  if (std::all_of(queued.begin(), queued.end(), [first](const auto& e) { return e.first == first; })) {
    std::vector<OpDesc> ops;
    ops.reserve(queued.size());
    for (auto& e : queued) ops.push_back(e.second);
    queued.clear();
    BRAID_CHECK(validateBatch(first, ops));
    return runBatch(first, ops);
  }
  std::vector<ncclComm*> order;
  std::map<ncclComm*, std::vector<OpDesc>> perComm;
  for (auto& [comm, op] : queued) {
    if (perComm.find(comm) == perComm.end()) order.push_back(comm);
    perComm[comm].push_back(op);
  }
  queued.clear();
  if (order.empty()) return ncclSuccess;
  for (ncclComm* comm : order) BRAID_CHECK(validateBatch(comm, perComm[comm]));
  if (order.size() == 1) return runBatch(order[0], perComm[order[0]]);
  std::vector<ncclResult_t> results(order.size(), ncclSuccess);
  std::vector<std::string> messages(order.size());
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < order.size(); ++i) {
    tasks.emplace_back([&, i]() {
      ErrorScope scope;
      results[i] = runBatch(order[i], perComm[order[i]]);
      messages[i] = pendingError();
    });
  }
  GroupWorkers::get().runAll(tasks);
  for (size_t i = 0; i < order.size(); ++i)
    if (results[i] != ncclSuccess) {
      if (!messages[i].empty()) recordError(results[i], "%s", messages[i].c_str());
      return results[i];
    }
  return ncclSuccess;
}

}  // namespace

ncclResult_t checkCommUsable(ncclComm* comm) {
  BRAID_CHECK(checkInitDone(comm, "collective"));
  int async = comm->asyncError.load();
  if (async != ncclSuccess)
    return recordError(static_cast<ncclResult_t>(async),
                       "rank %d: communicator has an error from earlier (%s): %s; abort or destroy it", comm->rank,
                       errorString(static_cast<ncclResult_t>(async)), comm->getLastError().c_str());
  if (comm->finalized) return recordError(ncclInvalidUsage, "rank %d: communicator was finalized", comm->rank);
  if (!comm->exec)
    return recordError(ncclInvalidUsage, "rank %d: communicator has no executor", comm->rank);
  return ncclSuccess;
}

bool inGroup() { return tGroup.depth > 0; }

namespace {
// Marks this thread's group failed (the first reason wins): its end runs nothing and returns the error.
void failGroup(ncclResult_t res, std::string msg) {
  if (tGroup.error != ncclSuccess) return;
  tGroup.error = res;
  tGroup.errorMsg = std::move(msg);
}

// Removes `comm`'s entries from one of the group's queues, releasing their queued counts; returns how many.
template <typename Queue>
int dropEntriesOf(Queue& q, ncclComm* comm) {
  auto mine = [comm](const auto& e) { return e.first == comm; };
  const auto n = static_cast<int>(std::count_if(q.begin(), q.end(), mine));
  q.erase(std::remove_if(q.begin(), q.end(), mine), q.end());
  comm->groupQueued.fetch_sub(n);
  return n;
}

// Marks each distinct comm of a queue in use (CommUse) for the holder's lifetime. Taken before a group end
// releases the queued counts, so a destroy on another thread is either refused (ops queued) or waits for the
// call (in use), never frees a comm in between.
template <typename Queue>
std::vector<std::unique_ptr<CommUse>> holdComms(const Queue& q, std::vector<ncclComm*>* distinct = nullptr) {
  std::vector<ncclComm*> seen;
  std::vector<std::unique_ptr<CommUse>> uses;
  for (const auto& e : q)
    if (std::find(seen.begin(), seen.end(), e.first) == seen.end()) {
      seen.push_back(e.first);
      uses.push_back(std::make_unique<CommUse>(e.first));
    }
  if (distinct) *distinct = std::move(seen);
  return uses;
}
}  // namespace

void noteGroupError(ncclResult_t res) {
  if (tGroup.depth > 0) failGroup(res, pendingError());
}

ncclResult_t deferGroupInit(ncclComm* comm, bool blocking, std::function<void()> start) {
  for (const auto& d : tGroup.inits)
    if (d.blocking != blocking)
      return recordError(ncclInvalidArgument,
                         "communicator init inside a group: config.blocking=%d, but another init of the group has "
                         "blocking=%d; one group's comms must all be blocking or all nonblocking",
                         blocking ? 1 : 0, d.blocking ? 1 : 0);
  comm->deferredInit.store(true);
  tGroup.inits.push_back({comm, blocking, std::move(start)});
  return ncclSuccess;
}

void deferGroupJob(ncclComm* parent, std::function<ncclResult_t()> job) {
  parent->groupQueued.fetch_add(1);
  tGroup.jobs.emplace_back(parent, std::move(job));
}

bool dropGroupInit(ncclComm* comm) {
  auto& v = tGroup.inits;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].comm == comm) {
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
      comm->deferredInit.store(false);
      // The group's other inits would wait for this rank until the bootstrap timeout: the group fails.
      failGroup(ncclInvalidUsage,
                "rank " + std::to_string(comm->rank) + ": its communicator was aborted before its init ran");
      return true;
    }
  return false;
}

int groupOpsOf(const ncclComm* comm) {
  int n = 0;
  for (auto& entry : tGroup.ops) n += entry.first == comm;
  for (auto& entry : tGroup.jobs) n += entry.first == comm;
  return n;
}

int dropGroupOps(ncclComm* comm, const char* reason) {
  const int n = dropEntriesOf(tGroup.ops, comm) + dropEntriesOf(tGroup.jobs, comm);
  if (n > 0) failGroup(ncclInvalidUsage, reason);
  return n;
}

ncclResult_t enqueueOp(ncclComm* comm, const OpDesc& op) {
  if (tGroup.depth > 0) {
    tGroup.ops.emplace_back(comm, op);
    comm->groupQueued.fetch_add(1);
    return ncclSuccess;
  }
  std::vector<std::pair<ncclComm*, OpDesc>> one{{comm, op}};
  return flush(one);
}

void groupStart() { ++tGroup.depth; }

namespace {
// Runs this thread's queued ops (their comms held in use across the release of their queued counts).
ncclResult_t runQueued() {
  const auto uses = holdComms(tGroup.ops);
  releaseQueued(tGroup.ops);
  return flush(tGroup.ops);
}

// Starts the group's deferred communicator inits (none when the group already failed: their comms then
// report that error) and waits for the blocking ones. Returns the first failure; *inProgress: nonblocking
// inits were started and may still run.
ncclResult_t runGroupInits(const char* fn, bool* inProgress) {
  *inProgress = false;
  auto inits = std::move(tGroup.inits);
  tGroup.inits.clear();
  if (inits.empty()) return ncclSuccess;
  if (tGroup.error != ncclSuccess) {
    for (auto& d : inits) {
      d.comm->setLastError("not initialised: its group failed: " + tGroup.errorMsg);
      d.comm->asyncError.store(tGroup.error);
      d.comm->deferredInit.store(false);
    }
    return ncclSuccess;  // the group's error is returned by the caller
  }
  for (auto& d : inits) d.start();
  if (!inits[0].blocking) {
    *inProgress = true;
    return ncclSuccess;
  }
  // Blocking: wait for all; the first failure aborts the others still running (they would otherwise wait
  // for the failed rank until the bootstrap timeout).
  ncclComm* failed = nullptr;
  for (;;) {
    bool running = false;
    for (auto& d : inits) {
      const int st = d.comm->asyncError.load();
      if (st == ncclInProgress) running = true;
      else if (st != ncclSuccess && failed == nullptr) failed = d.comm;
    }
    if (failed != nullptr || !running) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (failed != nullptr)
    for (auto& d : inits)
      if (d.comm != failed && d.comm->asyncError.load() == ncclInProgress) {
        d.comm->abortFlag.store(1);
        d.comm->bootstrapAbort.store(1);
      }
  for (auto& d : inits) {
    std::lock_guard<std::mutex> lock(d.comm->initMu);
    if (d.comm->initThread.joinable()) d.comm->initThread.join();
  }
  if (failed != nullptr)
    return recordError(static_cast<ncclResult_t>(failed->asyncError.load()),
                       "%s: the init of rank %d in the group failed (the group's other inits were aborted): %s", fn,
                       failed->rank, failed->getLastError().c_str());
  return ncclSuccess;
}

// Runs the group's deferred jobs (deferGroupJob): each parent comm's jobs in call order, different parents'
// concurrently (on the group's helper threads), all finished before it returns. Returns the first failure.
// With a recorded group error they are dropped.
ncclResult_t runGroupJobs(const char* fn, bool* inProgress) {
  auto jobs = std::move(tGroup.jobs);
  tGroup.jobs.clear();
  if (jobs.empty()) return ncclSuccess;
  std::vector<ncclComm*> parents;
  const auto uses = holdComms(jobs, &parents);
  releaseQueued(jobs);
  if (tGroup.error != ncclSuccess) return ncclSuccess;  // the caller returns the group's error
  std::vector<ncclResult_t> results(parents.size(), ncclSuccess);
  std::vector<std::string> messages(parents.size());
  std::atomic<bool> started{false};  // a job whose child comm is nonblocking returns ncclInProgress
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < parents.size(); ++i)
    tasks.emplace_back([&, i] {
      ErrorScope scope;
      for (auto& j : jobs) {
        if (j.first != parents[i] || results[i] != ncclSuccess) continue;
        results[i] = j.second();
        if (results[i] == ncclInProgress) {
          results[i] = ncclSuccess;
          started.store(true);
        }
      }
      messages[i] = pendingError();
    });
  GroupWorkers::get().runAll(tasks);
  *inProgress = started.load();
  for (size_t i = 0; i < parents.size(); ++i)
    if (results[i] != ncclSuccess)
      return recordError(results[i], "%s: a split or shrink of the group failed (rank %d): %s", fn, parents[i]->rank,
                         messages[i].c_str());
  return ncclSuccess;
}

// The outermost end of a group: the group's splits/shrinks, then its comm inits; a recorded argument error
// then discards the ops and is returned; otherwise `finish` consumes them (runs them, or estimates their
// time). A group with nonblocking inits ends in ncclInProgress (poll ncclCommGetAsyncError), as in NCCL.
template <typename Finish>
ncclResult_t endOutermost(const char* fn, Finish finish) {
  bool jobsInProgress = false;
  ncclResult_t jobRes = runGroupJobs(fn, &jobsInProgress);
  if (jobRes != ncclSuccess) failGroup(jobRes, pendingError());
  bool inProgress = false;
  ncclResult_t initRes = runGroupInits(fn, &inProgress);
  inProgress = inProgress || jobsInProgress;
  if (initRes != ncclSuccess) {
    const std::string msg = pendingError();
    tGroup.error = ncclSuccess;
    tGroup.errorMsg.clear();
    clearQueue(tGroup.ops);
    return recordError(initRes, "%s; nothing else of the group was executed", msg.c_str());
  }
  if (tGroup.error != ncclSuccess) {
    ncclResult_t res = tGroup.error;
    std::string msg = tGroup.errorMsg;
    tGroup.error = ncclSuccess;
    tGroup.errorMsg.clear();
    clearQueue(tGroup.ops);
    return recordError(res, "%s: an operation of the group was invalid, nothing was executed: %s", fn, msg.c_str());
  }
  ncclResult_t res = finish();
  return res == ncclSuccess && inProgress ? ncclInProgress : res;
}
}  // namespace

ncclResult_t groupEnd() {
  if (tGroup.depth == 0) return recordError(ncclInvalidUsage, "ncclGroupEnd: called without a matching ncclGroupStart");
  if (--tGroup.depth > 0) return ncclSuccess;
  return endOutermost("ncclGroupEnd", [] { return runQueued(); });
}

// As in NCCL: a null simInfo ends the group normally (its ops run); a simInfo with a wrong magic still ends
// the group (nothing runs) and is ncclInvalidArgument, so the thread never stays stuck inside a group.
ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (tGroup.depth == 0)
    return recordError(ncclInvalidUsage, "ncclGroupSimulateEnd: called without a matching ncclGroupStart");
  const bool badMagic = simInfo != nullptr && simInfo->magic != 0x74685283u;
  if (--tGroup.depth > 0) {
    if (badMagic)
      return recordError(ncclInvalidArgument,
                         "ncclGroupSimulateEnd: simInfo magic 0x%x is wrong (use NCCL_SIM_INFO_INITIALIZER)",
                         simInfo->magic);
    return ncclSuccess;
  }
  if (badMagic) {
    const unsigned magic = simInfo->magic;
    ncclResult_t res = endOutermost("ncclGroupSimulateEnd", [] {
      clearQueue(tGroup.ops);
      return ncclSuccess;
    });
    if (res != ncclSuccess) return res;
    return recordError(ncclInvalidArgument,
                       "ncclGroupSimulateEnd: simInfo magic 0x%x is wrong (use NCCL_SIM_INFO_INITIALIZER); the "
                       "group was ended and its operations discarded",
                       magic);
  }
  if (simInfo == nullptr) return endOutermost("ncclGroupSimulateEnd", [] { return runQueued(); });
  return endOutermost("ncclGroupSimulateEnd", [&]() -> ncclResult_t {
    // The cost model's time of each op as its communicator would plan it (agreed configuration, the ring's
    // path, what the executor can run), put together as the executors run a batch (groupTimeUs).
    TunerConfig cfg;
    ncclResult_t bad = loadTunerConfig(&cfg);  // a bad NCCL_ALGO/NCCL_PROTO is an error here too
    std::vector<TimedOp> timed;
    ncclResult_t notReady = ncclSuccess;  // a comm whose nonblocking init still runs has no plan yet
    for (auto& [comm, op] : tGroup.ops) {
      if ((notReady = checkInitDone(comm, "ncclGroupSimulateEnd")) != ncclSuccess) break;
      double t = comm->exec ? comm->exec->predictUs(op) : -1;
      if (t < 0) {
        TuneRequest r = makeTuneRequest(op, comm->nranks,
                                        comm->hostComm ? TransportClass::HostShm : TransportClass::P2pNvlink);
        r.connectedChannels = comm->nChannels;
        t = tune(r, cfg).predictedUs;
      }
      timed.push_back(TimedOp{comm, isP2pColl(op.coll), t});
    }
    const double us = groupTimeUs(timed);
    clearQueue(tGroup.ops);
    BRAID_CHECK(notReady);
    BRAID_CHECK(bad);
    simInfo->estimatedTime = static_cast<float>(us);
    return ncclSuccess;
  });
}

}  // namespace braid
