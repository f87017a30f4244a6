// HostExecutor: runs a batch on host buffers. Collectives go first, in issue order, each split over the
// ring channels with one CPU thread per channel (channel 0 on the caller, persistent workers for the
// rest); a barrier between collectives keeps a later op from reading what an earlier one still writes
// on another channel. Then the batch's point-to-point part progresses as one nonblocking set. With a tuner
// configuration (setTuning), the tuner picks each collective's channel count from the host rows of its cost
// model, and for all-reduce where trees are connected (setTrees) whether it runs on the ring or on the double
// binary tree; the protocol is SIMPLE here, whatever NCCL_PROTO asks (the tuner then warns once that it fell back).
#include "runtime/host/host_executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "algo/tree_topology.h"
#include "runtime/comm.h"
#include "runtime/host/host_coll.h"
#include "runtime/host/host_p2p.h"
#include "runtime/host/progress_table.h"
#include "runtime/ring_order.h"
#include "runtime/tuning_agreement.h"
#include "transport/conn_info.h"
#include "transport/transport.h"
#include "tuner/tuner.h"

namespace braid {

// Host all-reduces of 2 ranks over sockets up to this many bytes run the one-shot (runCollective).
constexpr size_t kHostSocketOneShotBytes = 32 << 10;

struct HostExecutor::Impl {
  ConnProvider* conns = nullptr;
  WaitContext defaultWait;
  const WaitContext* wait = nullptr;
  int rank = 0;
  int nranks = 1;
  int nChannels = 1;
  // The rings (setRingOrders), each as position -> rank and rank -> position; views of them for the channels
  // (empty: one ring in rank order).
  std::vector<std::vector<int>> ringOrders, ringPosOfs;
  std::vector<HostRingView> rings;
  std::unique_ptr<TunerConfig> tuning;  // null: every collective on all channels
  TransportClass transport = TransportClass::HostShm;  // the ring's class, agreed over ranks (setTuning)
  ChannelMemo last;                     // the previous decision (tunedRingChannels)
  TreeLinks trees[kNumTrees];           // this rank's tree links (setTrees)
  bool treesOn = false;                 // trees connected: all-reduce may run on them
  int nNodes = 1;
  ChannelMemo lastTree;                 // the previous all-reduce decision where trees are connected
  bool lastTreeChosen = false;
  ProgressTable* progress = nullptr;    // this rank's slot of the host's progress table (setProgress)

  // Worker pool: worker i serves channel i + 1. Guarded by mu.
  std::mutex mu;
  std::condition_variable startCv;
  std::condition_variable doneCv;
  uint64_t generation = 0;
  bool stopping = false;
  int remaining = 0;
  int activeChannels = 0;
  CollChannelFn fn = nullptr;
  const CollChannelWork* work = nullptr;
  std::vector<ncclResult_t> results;
  std::vector<std::string> messages;
  std::atomic<bool> cancel{false};
  uint64_t collSeq = 0;  // ring collectives run so far (the same count on every rank): part of each step's tag
  std::vector<std::thread> workers;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stopping = true;
    }
    startCv.notify_all();
    for (std::thread& t : workers) t.join();
  }

  void workerLoop(int channel) {
    RankTag tag(rank);
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      startCv.wait(lk, [&] { return stopping || generation != seen; });
      if (stopping) return;
      seen = generation;
      if (channel >= activeChannels) continue;
      CollChannelFn f = fn;
      const CollChannelWork* w = work;
      lk.unlock();
      clearPendingError();  // this thread's first message of this op is the one to report
      ncclResult_t r = f(*w, channel);
      std::string msg;
      if (r != ncclSuccess && r != kCancelled) {
        msg = pendingError();
        cancel.store(true, std::memory_order_relaxed);
      }
      clearPendingError();
      lk.lock();
      results[channel] = r;
      messages[channel] = std::move(msg);
      if (--remaining == 0) doneCv.notify_all();
    }
  }

  ncclResult_t ensureWorkers(int nch) {
    while (static_cast<int>(workers.size()) < nch - 1) {
      const int channel = static_cast<int>(workers.size()) + 1;
      try {
        workers.emplace_back([this, channel] { workerLoop(channel); });
      } catch (const std::exception& e) {
        return recordError(ncclSystemError, "rank %d: cannot start the host executor thread for channel %d: %s", rank,
                           channel, e.what());
      }
    }
    return ncclSuccess;
  }

  // The tuner's channel count for `op` on at most `maxCh` channels; the path class comes from the ring's
  // transport (sockets or shared memory).
  int tunedChannels(const OpDesc& op, int maxCh) {
    // Skip the search where it cannot change anything (it costs ~0.1 us of a 0.4 us small all-reduce),
    // unless its decisions are being logged. With NCCL_ALGO/NCCL_PROTO set it runs at least once per size,
    // so an override the host path cannot honour is reported.
    if (maxCh == 1 && !tuning->algos.overridden && !tuning->protos.overridden &&
        !logEnabled(LogLevel::Info, kSubTuning))
      return 1;
    return tunedRingChannels(op, nranks, transport, maxCh, 1, *tuning, &last);
  }

  // The tuner's request for `op` on at most maxCh channels: Ring/Simple, and Tree for all-reduce where trees are
  // connected.
  TuneRequest request(const OpDesc& op, int maxCh) const {
    TuneRequest req = ringSimpleRequest(op, nranks, transport, maxCh, 1);
    req.nNodes = nNodes;
    if (treesOn && op.coll == CollType::AllReduce) req.algosAvailable |= bit(Algo::Tree);
    return req;
  }

  // Ring or tree, and the channels, for an all-reduce where trees are connected: the tuner's choice from the host
  // rows (a pure function of agreed inputs, so every rank runs the same algorithm). Without a tuner configuration,
  // the ring unless the trees alone are allowed.
  bool chooseTree(const OpDesc& op, int maxCh, int* nch) {
    if (!tuning) return false;
    const size_t bytes = opBytes(op, nranks);
    if (!logEnabled(LogLevel::Info, kSubTuning) && lastTree.bytes == bytes && lastTree.maxCh == maxCh &&
        lastTree.nch > 0) {
      *nch = lastTree.nch;
      return lastTreeChosen;
    }
    const TuneDecision d = tune(request(op, maxCh), *tuning);
    *nch = std::max(1, std::min(d.nChannels, maxCh));
    lastTree = ChannelMemo{op.coll, bytes, maxCh, *nch};
    lastTreeChosen = d.algo == Algo::Tree;
    return lastTreeChosen;
  }

  ncclResult_t runCollective(const OpDesc& op) {
    CollChannelFn f;
    BRAID_CHECK(selectCollChannelFn(op, &f));
    if (op.count == 0) return ncclSuccess;  // every rank sees the same count: nothing moves anywhere
    int nch = 1;
    bool useTree = false;
    if (nranks > 1) {
      const int ring = conns ? conns->ringChannels() : 0;
      if (ring < 1)
        return recordError(ncclInternalError, "%s on rank %d: no ring channels are connected", collName(op.coll), rank);
      nch = std::max(1, std::min(nChannels, ring));
      if (treesOn && op.coll == CollType::AllReduce) {
        const int maxCh = std::max(1, std::min(nch, conns->treeChannels()));
        int tch = maxCh;
        if (chooseTree(op, maxCh, &tch)) {
          useTree = true;
          nch = tch;
        } else if (tuning) {
          nch = tunedChannels(op, nch);
        }
      } else if (tuning) {
        nch = tunedChannels(op, nch);
      }
    }
    CollChannelWork w;
    w.op = &op;
    w.tag = hostStepTag(op, collSeq++);
    w.rank = rank;
    w.nranks = nranks;
    w.rings = rings.data();
    w.nRings = static_cast<int>(rings.size());
    w.nChannels = nch;
    w.conns = conns;
    w.wait = wait;
    w.cancel = &cancel;
    // The one-shot runs for reductions that give both ranks the same bits (oneShotExact; on x86 float NaN payloads
    // may still differ by rank), where NCCL_ALGO forces it (agreed over ranks at init, like the GPU path's choices)
    // and, unforced, over sockets up to kHostSocketOneShotBytes: one exchange of the whole buffer instead of the
    // ring's two, where each costs a socket round of tens of microseconds. Over shared memory CPU threads reduce at
    // memory speed either way and the ring stays. The schedule is the one the GPU kernels run. An all-reduce the
    // tuner put on the trees stays there.
    if (useTree) w.trees = trees;
    const uint32_t algoMask = tuning ? tuning->algos.mask[static_cast<int>(op.coll)] : 0;
    const bool forced = tuning && tuning->algos.overridden;
    const bool exact =
        !useTree && op.coll == CollType::AllReduce && nranks == 2 && oneShotExact(op.op.kind, op.dtype);
    w.oneShot = exact && (forced ? (algoMask & bit(Algo::OneShot)) && !(algoMask & bit(Algo::Ring))
                                 : transport == TransportClass::HostSocket &&
                                       op.count * dtypeSize(op.dtype) <= kHostSocketOneShotBytes);
    BRAID_TRACE(kSubColl, "%s count %zu %s root %d on %d channel(s)%s", collName(op.coll), op.count,
                dtypeName(op.dtype), op.root, nch, useTree ? " of the trees" : "");
    cancel.store(false, std::memory_order_relaxed);
    if (nch == 1) return f(w, 0);

    BRAID_CHECK(ensureWorkers(nch));
    {
      std::lock_guard<std::mutex> lk(mu);
      results.assign(nch, ncclSuccess);
      messages.assign(nch, std::string());
      fn = f;
      work = &w;
      activeChannels = nch;
      remaining = nch - 1;
      ++generation;
    }
    startCv.notify_all();
    ncclResult_t r0 = f(w, 0);
    if (r0 != ncclSuccess && r0 != kCancelled) cancel.store(true, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lk(mu);
    doneCv.wait(lk, [&] { return remaining == 0; });
    if (r0 != ncclSuccess && r0 != kCancelled) return r0;  // message already recorded on this thread
    for (int c = 1; c < nch; ++c) {
      if (results[c] != ncclSuccess && results[c] != kCancelled)
        return recordError(results[c], "%s", messages[c].c_str());
    }
    if (r0 == kCancelled) return recordError(ncclInternalError, "%s: channel 0 was cancelled with no failing channel",
                                             collName(op.coll));
    return ncclSuccess;
  }
};

HostExecutor::HostExecutor(ConnProvider* conns, const WaitContext* wait, int rank, int nranks, int nChannels)
    : impl_(new Impl) {
  impl_->conns = conns;
  impl_->wait = wait ? wait : &impl_->defaultWait;
  impl_->rank = rank;
  impl_->nranks = nranks;
  impl_->nChannels = std::max(1, nChannels);
}

HostExecutor::~HostExecutor() = default;

ncclResult_t HostExecutor::setRingOrder(const std::vector<int>& order) {
  return setRingOrders(std::vector<std::vector<int>>{order});
}

ncclResult_t HostExecutor::setRingOrders(const std::vector<std::vector<int>>& orders) {
  const int n = impl_->nranks;
  std::vector<std::vector<int>> posOfs;
  for (const std::vector<int>& order : orders) {
    std::vector<int> posOf(static_cast<size_t>(n), -1);
    bool ok = static_cast<int>(order.size()) == n;
    for (int p = 0; ok && p < n; ++p) {
      const int r = order[static_cast<size_t>(p)];
      ok = r >= 0 && r < n && posOf[static_cast<size_t>(r)] < 0;
      if (ok) posOf[static_cast<size_t>(r)] = p;
    }
    if (!ok)
      return recordError(ncclInternalError,
                         "rank %d: a ring order given to the host executor is not a "
                         "permutation of %d ranks",
                         impl_->rank, n);
    posOfs.push_back(std::move(posOf));
  }
  impl_->ringOrders = orders;
  impl_->ringPosOfs = std::move(posOfs);
  impl_->rings.clear();
  // One ring in rank order: no tables, the schedules index ranks directly.
  bool rankOrder = orders.size() == 1;
  for (int p = 0; rankOrder && p < n; ++p) rankOrder = orders[0][static_cast<size_t>(p)] == p;
  if (rankOrder) return ncclSuccess;
  for (size_t k = 0; k < orders.size(); ++k)
    impl_->rings.push_back(HostRingView{impl_->ringPosOfs[k][static_cast<size_t>(impl_->rank)],
                                        impl_->ringOrders[k].data(), impl_->ringPosOfs[k].data()});
  return ncclSuccess;
}

void HostExecutor::setTuning(const TunerConfig& cfg, TransportClass transport) {
  impl_->tuning = std::make_unique<TunerConfig>(cfg);
  impl_->transport = transport;
}

double HostExecutor::predictUs(const OpDesc& op) {
  if (op.count == 0) return 0;
  const TunerConfig cfg = impl_->tuning ? *impl_->tuning : TunerConfig();
  return tune(impl_->request(op, impl_->nChannels), cfg).predictedUs;
}

void HostExecutor::setTrees(const TreeLinks trees[kNumTrees], int nNodes) {
  for (int t = 0; t < kNumTrees; ++t) impl_->trees[t] = trees[t];
  impl_->treesOn = true;
  impl_->nNodes = std::max(1, nNodes);
}

void HostExecutor::setProgress(ProgressTable* table) { impl_->progress = table; }

ncclResult_t HostExecutor::run(const std::vector<OpDesc>& ops) {
  ProgressTable* table = impl_->progress;
  const bool tracked = table != nullptr && !ops.empty();
  if (tracked) table->begin(ops[0].coll, ops.size() > 1);
  const ncclResult_t res = runOps(ops);
  // The last steps sent may sit in a socket FIFO that only waits drove: a peer still waits for them.
  if (impl_->conns) impl_->conns->flush();
  if (tracked) table->end(res == ncclSuccess);
  return res;
}

ncclResult_t HostExecutor::runOps(const std::vector<OpDesc>& ops) {
  std::vector<const OpDesc*> p2p;
  for (const OpDesc& op : ops) {
    if (!isP2pColl(op.coll)) {
      BRAID_CHECK(impl_->runCollective(op));
    } else {
      p2p.push_back(&op);
    }
  }
  if (p2p.empty()) return ncclSuccess;
  return runHostP2p(impl_->conns, impl_->wait, impl_->rank, impl_->nranks, p2p);
}

namespace {

// The double binary tree's connections, made where all-reduce may run on it: across nodes (PeerInfo::hostHash,
// NCCL_HOSTID) unless NCCL_ALGO leaves Tree out, and on one node only where NCCL_ALGO leaves nothing else (there
// the trees are chains, which the ring outruns). Every input is agreed, so all ranks connect together or none.
ncclResult_t connectHostTrees(ncclComm* comm, const TunerConfig& tuning, HostExecutor* exec) {
  const int n = comm->nranks;
  if (n < 2) return ncclSuccess;
  std::vector<uint64_t> hostOf(static_cast<size_t>(n), 0);
  for (int r = 0; r < n && static_cast<size_t>(r) < comm->peers.size(); ++r)
    hostOf[static_cast<size_t>(r)] = comm->peers[static_cast<size_t>(r)].hostHash;
  int nNodes = 1;
  const std::vector<int> nodeOf = nodesOfRanks(comm->ringOrder, hostOf, &nNodes);
  const uint32_t allowed = tuning.algos.mask[static_cast<int>(CollType::AllReduce)];
  if (!(allowed & bit(Algo::Tree)) || (nNodes < 2 && (allowed & bit(Algo::Ring)))) return ncclSuccess;
  std::vector<TreeLinks> trees[kNumTrees];
  buildRankTrees(comm->ringOrder, nodeOf, nNodes, &trees);
  TreeLinks mine[kNumTrees];
  for (int t = 0; t < kNumTrees; ++t) mine[t] = trees[t][static_cast<size_t>(comm->rank)];
  BRAID_CHECK(comm->conns->connectTrees(std::min(comm->nChannels, kMaxTreeChannels), mine));
  exec->setTrees(mine, nNodes);
  return ncclSuccess;
}

}  // namespace

// CPU threads per host communicator at most.
constexpr int kMaxHostChannels = 32;

ncclResult_t initHostComm(ncclComm* comm) {
  BRAID_CHECK(setupProgressTable(comm));
  BRAID_CHECK(agreeOnChannels(comm, params::HostChannels(), kMaxHostChannels));

  comm->conns = std::make_unique<ConnectionManager>(&comm->wait, comm->bootstrap.get(), &comm->self, &comm->peers);
  comm->conns->setBuffBytes(comm->buffBytes);
  // The executors drive their socket steps (below): the proxy thread does not spin and minds only what they leave.
  comm->conns->setNetProxy(0, true);
  std::vector<int> next, prev;
  for (int k = 0; k < ringCount(comm); ++k) {
    next.push_back(ringNextRank(comm, k));
    prev.push_back(ringPrevRank(comm, k));
  }
  BRAID_CHECK(comm->conns->connectRings(comm->nChannels, next, prev));
  // A waiting executor moves its socket steps itself (a proxy thread woken per step costs a wake-up each time).
  comm->wait.drive = [](void* conns) { return static_cast<ConnectionManager*>(conns)->driveNet(); };
  comm->wait.driveArg = comm->conns.get();
  auto exec = std::make_unique<HostExecutor>(comm->conns.get(), &comm->wait, comm->rank, comm->nranks,
                                             comm->nChannels);
  BRAID_CHECK(exec->setRingOrders(comm->ringOrders));
  TunerConfig local, tuning;
  BRAID_CHECK(loadTunerConfig(&local));  // validated at the init call already; read again on this thread
  local.buffSize = comm->buffBytes;  // the FIFOs' size, agreed in agreeOnChannels (which warns of differences)
  // The ring's class: socket if any of this rank's ring links is; agreed as the slowest over ranks.
  TuningFacts facts, agreedFacts;
  facts.transport = static_cast<int32_t>(TransportClass::HostShm);
  for (int c = 0; c < comm->nChannels && comm->nranks > 1; ++c)
    for (const ConnInfo* ci : {comm->conns->ringSend(c), comm->conns->ringRecv(c)})
      if (!ci || ci->kind == TransportKind::Net) facts.transport = static_cast<int32_t>(TransportClass::HostSocket);
  BRAID_CHECK(agreeTuning(comm, local, facts, &tuning, &agreedFacts));
  exec->setTuning(tuning, static_cast<TransportClass>(agreedFacts.transport));
  BRAID_CHECK(connectHostTrees(comm, tuning, exec.get()));
  exec->setProgress(comm->progress.get());
  comm->exec = std::move(exec);
  BRAID_INFO(kSubInit, "comm %p rank %d nranks %d: host communicator ready, %d channel(s), ring next %s", (void*)comm,
             comm->rank, comm->nranks, comm->nChannels, comm->conns->transportName(ringNextRank(comm)));
  return ncclSuccess;
}

}  // namespace braid
