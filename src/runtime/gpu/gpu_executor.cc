// GpuExecutor: turns a batch of ops into kernel launches on the callers' streams and returns without
// waiting. Collectives launch one kernel each (one CTA per channel, in batch order); the batch's p2p part
// (send/recv, all-to-all, gather, scatter) is one launch with one CTA per (connection, direction). All of
// a batch runs on the first op's stream; other streams in the batch are joined to it with events before
// and after, and successive batches of one communicator on different streams are ordered by an event too
// (the kernels share connection state). Under CUDA graph capture, batches captured into one graph are ordered
// alike (an edge where they are on different streams of it). Replays are ordered against each other and against
// uncaptured batches through one event (NCCL_GRAPH_MIXING_SUPPORT, on by default, as NCCL): a capture's first batch
// waits for it (an external wait node: at each replay, the event's last record before that launch), a record node
// after the capture's last batch records it (capture_record.h) and, once the communicator has captured, every
// uncaptured batch waits for it and records it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "algo/p2p_plan.h"
#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "device/dev_kernels.h"
#include "runtime/comm.h"
#include "runtime/gpu/capture_record.h"
#include "runtime/gpu/coll_plan.h"
#include "runtime/gpu/gpu_state.h"
#include "runtime/gpu/p2p_table.h"
#include "runtime/ring_order.h"
#include "transport/net/net_proxy.h"
#include "transport/transport.h"
#include "tuner/launch_attrs.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

// The planner's inputs: what init agreed and this rank's launch settings (gpu_comm.cc: agreeOnSelection).
CollPlanFacts planFacts(const DeviceState& st, ncclComm* comm) {
  CollPlanFacts f;
  f.rank = st.rank;
  f.nranks = st.nranks;
  f.nChannels = st.nChannels;
  f.tuning = st.tuning;
  f.transport = st.transport;
  f.tunerOn = st.tunerOn;
  f.llPath = st.llPath;
  f.ll128Path = st.ll128Path;
  f.clusterRing = st.clusterRing;
  f.clusterThree = st.clusterThree;
  f.cluster = st.cluster;
  f.clusterUserSet = st.clusterUserSet;
  f.clusterThreeFits = st.clusterThreeFits;
  f.oneShotPeersBytes = st.oneShotPeersBytes;
  f.oneShotPeerChannels = st.oneShotPeerChannels;
  f.twoShotPeersBytes = st.twoShotPeersBytes;
  f.peersChannelBytes = st.peersChannelBytes;
  f.treeChannels = st.treeChannels;
  f.nNodes = st.nNodes;
  f.treeLlPath = st.treeLlPath;
  f.treeIntra = st.treeIntra;
  if (st.nranks > 1 && comm->conns) {
    const ConnInfo* c0 = comm->conns->ringSend(0);
    f.ringStepBytes = c0->stepBytes;
    f.ringSteps = c0->nSteps;
  }
  return f;
}

class GpuExecutor final : public Executor {
 public:
  GpuExecutor(ncclComm* comm, std::unique_ptr<DeviceState> st)
      : comm_(comm),
        st_(std::move(st)),
        table_(std::make_unique<P2pTableStore>(st_->rank)),
        planner_(planFacts(*st_, comm)) {
    transport_ = st_->transport;
    graphMixing_ = params::GraphMixingSupport() != 0;
    // The batch-end events up front: a communicator's first batch may come inside a global-mode capture. On a
    // failure here run() creates them again and reports it.
    DeviceGuard g(st_->dev);
    cudaEvent_t e = nullptr;
    if (event(kCaptureTails, &e) != ncclSuccess) cudaGetLastError();
    lastDone_ = events_.empty() ? nullptr : events_[0];
    lastPeer_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(st_->nranks));
    for (int r = 0; r < st_->nranks; ++r) lastPeer_[r].store(0, std::memory_order_relaxed);
    // Made here, not in run(): asyncError reads the handle from another thread.
    if (st_->watch && cudaEventCreateWithFlags(&lastStart_, cudaEventDisableTiming) != cudaSuccess) {
      lastStart_ = nullptr;
      cudaGetLastError();
    }
    if (comm_->conns && st_->nranks > 1) comm_->conns->setNetWorkProbe([this] { return netWork(); });
  }
  ~GpuExecutor() override;
  ncclResult_t run(const std::vector<OpDesc>& ops) override;
  ncclResult_t asyncError() override;
  void noteBatchPeers(const std::vector<OpDesc>& ops);  // lastAll_, lastPeer_ for asyncError
  double predictUs(const OpDesc& op) override;
  void withPeerWatchPaused(const std::function<void()>& f) override {
    if (st_->watch) {
      st_->watch->exclusive(f);
    } else {
      f();
    }
  }

 private:
  ncclResult_t checkStatus();
  ncclResult_t launchColl(const OpDesc& op, cudaStream_t s);
  // Every collective and p2p kernel launch, with the launch attributes BRAID_PDL asks for, in thread-block
  // clusters of `cluster` CTAs where the caller asks (collCluster; nCta whole clusters) and the comm allows.
  cudaError_t launchKernel(const void* kernel, int nCta, void** args, cudaStream_t s, int cluster = 0);
  ncclResult_t launchP2p(const std::vector<const OpDesc*>& ops, cudaStream_t s);
  ncclResult_t p2pConn(int peer, int channel, bool send, DevConn** out);
  ncclResult_t event(size_t i, cudaEvent_t* out);
  uint32_t lowLatencyKernels(const OpDesc& op) const;
  // For the NET proxy's thread (NetProxy::setWorkProbe): Busy while a batch launched so far may still run, so it
  // polls the FIFOs the kernels publish NET steps in; Unknown once a capture exists (replays tell nobody).
  NetWork netWork();

  ncclComm* comm_;
  std::unique_ptr<DeviceState> st_;
  std::unique_ptr<P2pTableStore> table_;  // lists of p2p launches past the parameter tiers; freed in ~ on st_->dev
  // [0]: the last batch's completion: an uncaptured batch's, or, with graph mixing, a replayed graph's (recorded by
  // its capture's record node, never as a capture dependency), so the destructor and the next uncaptured batch or
  // replay can wait on it; [1..kCaptureTails]: captureTails_' end events, recorded inside their captures only for
  // batches that span several streams; the rest: joins.
  std::vector<cudaEvent_t> events_;
  // events_[0], kept apart for asyncError, which a watchdog thread may call while run() grows events_.
  cudaEvent_t lastDone_ = nullptr;
  // Recorded where the last uncaptured batch begins, on communicators with a peer watch (asyncError): complete
  // once everything the caller queued before that batch has run.
  cudaEvent_t lastStart_ = nullptr;
  // The ranks the last uncaptured batch exchanges data with (asyncError): every rank when it holds a collective,
  // else its point-to-point peers. Written by run(), read by a watchdog thread: a hint, relaxed.
  std::atomic<bool> lastAll_{true};
  std::atomic<uint64_t> lastBatch_{0};                  // batches noted so far
  std::unique_ptr<std::atomic<uint64_t>[]> lastPeer_;  // per rank: the last noted batch it took part in
  // Kernels launched, and of them those whose batch has recorded its end event (run() returning), and whether a
  // batch was ever captured: read by the NET proxy's thread (netWork).
  std::atomic<uint64_t> launched_{0}, settled_{0};
  std::atomic<bool> anyCapture_{false};
  cudaStream_t lastStream_ = nullptr;
  bool haveLast_ = false;
  // The last batch captured into each of the kCaptureTails most recently used captures: its capture
  // (cudaStreamGetCaptureInfo's id, unique in the process), stream and end event. A batch captured into the same
  // graph on another stream (a fork of it) is ordered after it, as an uncaptured batch is after the last uncaptured
  // one: a communicator's launches share its FIFOs, steps and p2p claim words, so two must never run at once (NCCL
  // keeps a list per graph alike). Captures open at once on one communicator, interleaved, past kCaptureTails lose
  // that order for the least recently used, and with graph mixing its graph gets a second wait and record node, so
  // its replays are no longer ordered either: evicted_ remembers the last ids taken over, to warn when one comes
  // back (a capture still open; an ended one never does).
  static constexpr size_t kCaptureTails = 4;
  static constexpr size_t kEvicted = 16;
  struct CaptureTail {
    unsigned long long id = 0;  // 0: unused
    cudaStream_t stream = nullptr;
    uint64_t used = 0;  // captureUses_ at its last batch
    CaptureRecord record;  // graph mixing: records events_[0] after the capture's last batch
    std::vector<cudaGraphNode_t> ends;  // the capture's end nodes after its last batch here
  };
  CaptureTail captureTails_[kCaptureTails];
  uint64_t captureUses_ = 0;
  unsigned long long evicted_[kEvicted] = {};
  size_t nEvicted_ = 0;
  bool evictWarned_ = false;
  bool capturing_ = false;  // the batch being launched is captured into a graph
  bool graphMixing_ = true;    // NCCL_GRAPH_MIXING_SUPPORT (this rank's)
  bool everCaptured_ = false;  // a batch was captured: uncaptured ones then wait for events_[0] on any stream
  TransportClass transport_;   // the ring's path (agreed): selects the tuner's cost rows
  CollPlanner planner_;  // every collective's plan (coll_plan.h)
  // launchP2p's working lists, kept across calls (cleared, capacity kept; only connection entries beyond the
  // current call's count are freed): planned into fresh vectors, an 8-byte send/recv made ~40 allocations,
  // ~0.8 us of host time on every small call.
  struct P2pScratch {
    std::vector<const OpDesc*> ops;
    std::vector<std::vector<P2pXfer>> sends, recvs;  // per peer, in the plan's form (P2pPlanConn::xs)
    std::vector<P2pXfer> selfSends, selfRecvs;        // local copies go straight into in.copies
    std::vector<int> sendPeers, recvPeers, connPeer;
    std::vector<DevConn*> conns;  // each p2p connection's channels, from connFirst[ci] (ring connections: none)
    std::vector<int> connFirst;
    P2pPlanInput in;
    P2pPlanLaunch plan;
    std::vector<unsigned char> table;  // a launch past the parameter tiers: its lists, as P2pTableStore takes them
    std::vector<uint8_t> ringLl[2];  // [send, recv] per channel: p2p may run LL there (fixed after init)
    std::vector<uint8_t> ringBal[2];  // ... the connection is GPU P2P: transfers may run balanced there
    bool ringLlKnown = false;
  } p2p_;
};

// Where this build has a low-latency kernel for the op (the planner offers only those protocols).
uint32_t GpuExecutor::lowLatencyKernels(const OpDesc& op) const {
  if (st_->nranks < 2) return 0;
  return (devCollKernelLL(op.coll, op.dtype, op.op.kind) ? bit(Proto::LL) : 0u) |
         (devCollKernelLL128(op.coll, op.dtype, op.op.kind) ? bit(Proto::LL128) : 0u);
}

GpuExecutor::~GpuExecutor() {
  DeviceGuard g(st_->dev);
  if (comm_->conns) comm_->conns->setNetWorkProbe(nullptr);  // before the events it queries go
  if (comm_->conns) comm_->conns->setAbortHook(nullptr);
  // Kernels still running read the FIFOs freed next: give them the communicator's timeout to finish (a
  // destroy right after the last op), then stop them through the abort flag and wait for that.
  if (haveLast_ || (graphMixing_ && everCaptured_)) {  // replays record events_[0] too (never recorded: ready)
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(comm_->abortFlag.load() ? 0.0 : 30.0);
    while (cudaEventQuery(events_[0]) == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    st_->raiseAbort();
    cudaEventSynchronize(events_[0]);
  }
  table_.reset();
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  if (lastStart_) cudaEventDestroy(lastStart_);
  cudaGetLastError();
}

ncclResult_t GpuExecutor::event(size_t i, cudaEvent_t* out) {
  while (events_.size() <= i) {
    cudaEvent_t e;
    BRAID_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "rank %d: cudaEventCreate", st_->rank);
    events_.push_back(e);
  }
  *out = events_[i];
  return ncclSuccess;
}

void GpuExecutor::noteBatchPeers(const std::vector<OpDesc>& ops) {
  bool all = false;
  for (const OpDesc& op : ops) {
    all = all || !isP2pColl(op.coll) || op.coll == CollType::AllToAll ||
          ((op.coll == CollType::Gather || op.coll == CollType::Scatter) && op.root == st_->rank);
  }
  // Stamped with the batch's number, so only this batch's peers are written (no pass over every rank).
  const uint64_t batch = lastBatch_.load(std::memory_order_relaxed) + 1;
  if (!all) {
    for (const OpDesc& op : ops) {
      const int peer = op.coll == CollType::Send || op.coll == CollType::Recv ? op.peer : op.root;
      if (peer >= 0 && peer < st_->nranks) lastPeer_[peer].store(batch, std::memory_order_relaxed);
    }
  }
  lastAll_.store(all, std::memory_order_relaxed);
  lastBatch_.store(batch, std::memory_order_relaxed);
}

ncclResult_t GpuExecutor::asyncError() {
  BRAID_CHECK(checkStatus());
  if (!st_->peerIsGone() || lastDone_ == nullptr || lastStart_ == nullptr) return ncclSuccess;
  const int dead = st_->goneRank();
  const bool involved = lastAll_.load(std::memory_order_relaxed) ||
                        (dead >= 0 && dead < st_->nranks &&
                         lastPeer_[dead].load(std::memory_order_relaxed) == lastBatch_.load(std::memory_order_relaxed));
  if (!involved) return ncclSuccess;  // the last batch needs nothing of the dead rank: let it complete
  DeviceGuard g(st_->dev);
  // A peer process died while this communicator's work still runs: that work cannot complete. Kernels waiting on
  // the dead rank stop at once, but one waiting on a live rank that itself stopped would spin until
  // BRAID_DEVICE_TIMEOUT and then name that live rank; say now who died, so the caller can abort. Work that
  // completed before the death (a job's ranks exiting at its end) reports nothing.
  // Only a batch that has started, and needs the dead rank, counts: one queued behind the caller's other work,
  // or whose peers are all alive, may find its data there (a peer that sent its last message and exited) and
  // complete.
  const cudaError_t started = cudaEventQuery(lastStart_);
  const cudaError_t done = started == cudaSuccess ? cudaEventQuery(lastDone_) : cudaSuccess;
  if (started == cudaSuccess && done == cudaErrorNotReady)
    return recordError(ncclRemoteError, "rank %d: %s; the communicator's work in flight cannot complete (abort it)",
                       st_->rank, st_->goneMessage().c_str());
  // A query's own failure (not "not ready") would stay as the thread's sticky error: clear only that.
  if ((started != cudaSuccess && started != cudaErrorNotReady) || (done != cudaSuccess && done != cudaErrorNotReady))
    cudaGetLastError();
  return ncclSuccess;
}

ncclResult_t GpuExecutor::checkStatus() {
  const DevStatus* s = st_->statusHost;
  const uint32_t err = __atomic_load_n(&s->error, __ATOMIC_ACQUIRE);
  if (err == kDevOk) return ncclSuccess;
  switch (err) {
    case kDevAborted:
      return recordError(ncclInvalidUsage, "rank %d: communicator was aborted while a kernel waited on rank %d",
                         st_->rank, s->errorPeer);
    case kDevPeerGone:
      return recordError(ncclRemoteError, "rank %d: a kernel waiting on rank %d stopped: %s", st_->rank, s->errorPeer,
                         st_->goneMessage().c_str());
    case kDevSizeMismatch:
      // Balanced p2p steps (dev_work.h: kDevStepBalMark) on either side: a word the receiver did not expect.
      if ((s->errorBytes | s->expectBytes) & kDevStepBalMark) {
        const uint32_t got = s->errorBytes, want = s->expectBytes;
        const char* how = !(got & kDevStepBalMark) ? "sent a step of fixed size where this rank expected a balanced one"
                          : !(want & kDevStepBalMark)
                              ? "sent a balanced step where this rank expected one of fixed size"
                          : (got & kDevStepLastMark) ? "closed a balanced transfer whose size differs from this rank's"
                                                     : "sent a chunk past this rank's balanced transfer";
        return recordError(
            ncclInvalidUsage,
            "rank %d: rank %d %s (sizes word 0x%08x, this rank's 0x%08x): the ranks called send/recv (or "
            "gather, scatter, all-to-all) with different counts or types",
            st_->rank, s->errorPeer, how, got, want);
      }
      // Across the p2p LL threshold the two sides of a step ran different protocols (dev_work.h).
      if (s->expectBytes == kDevLlStepMark)
        return recordError(ncclInvalidUsage,
                           "rank %d: rank %d sent a SIMPLE step where this rank expected an LL one: the ranks "
                           "called send/recv (or collectives) with different counts, types or order",
                           st_->rank, s->errorPeer);
      if (s->errorBytes & kDevLlStepMark)
        return recordError(ncclInvalidUsage,
                           "rank %d: rank %d sent an LL step of %u bytes where a SIMPLE step of %u bytes was expected: "
                           "the ranks called send/recv (or collectives) with different counts, types or order",
                           st_->rank, s->errorPeer, s->errorBytes & ~kDevLlStepMark, s->expectBytes & ~kDevStepLastMark);
      if ((s->errorBytes ^ s->expectBytes) & kDevStepLastMark)
        return recordError(ncclInvalidUsage,
                           "rank %d: a FIFO step from rank %d of %u bytes %s its transfer where this rank expected %u "
                           "bytes that %s it: the ranks called send/recv (or gather, scatter, all-to-all) with "
                           "different counts or types",
                           st_->rank, s->errorPeer, s->errorBytes & ~kDevStepLastMark,
                           (s->errorBytes & kDevStepLastMark) ? "ended" : "did not end", s->expectBytes & ~kDevStepLastMark,
                           (s->expectBytes & kDevStepLastMark) ? "end" : "do not end");
      return recordError(ncclInvalidUsage,
                         "rank %d: a FIFO step from rank %d carried %u bytes where %u were expected: ranks called "
                         "collectives with different counts, types or order",
                         st_->rank, s->errorPeer, s->errorBytes & ~kDevStepLastMark, s->expectBytes & ~kDevStepLastMark);
    case kDevTimeout:
      return recordError(ncclRemoteError,
                         "rank %d: a kernel waited more than BRAID_DEVICE_TIMEOUT=%lld s for rank %d: that rank is stuck, or "
                         "called this collective with a different count, type or operation (the ranks then plan it "
                         "differently); the communicator must be aborted",
                         st_->rank, static_cast<long long>(st_->deviceTimeoutSec), s->errorPeer);
    default:
      return recordError(ncclRemoteError, "rank %d: the connection with rank %d broke during a kernel", st_->rank,
                         s->errorPeer);
  }
}

ncclResult_t GpuExecutor::run(const std::vector<OpDesc>& ops) {
  if (ops.empty()) return ncclSuccess;
  DeviceGuard g(st_->dev);
  BRAID_CHECK(checkStatus());
  if (st_->peerIsGone())
    return recordError(ncclRemoteError, "rank %d: %s; this communicator cannot run collectives any more", st_->rank,
                       st_->goneMessage().c_str());
  if (comm_->abortFlag.load())
    return recordError(ncclInvalidUsage, "rank %d: communicator was aborted", st_->rank);
  cudaStream_t main = static_cast<cudaStream_t>(ops[0].stream);
  // However run() leaves, the kernels it launched have their end event recorded (or never will): netWork may
  // trust the event again.
  struct Settle {
    GpuExecutor* e;
    ~Settle() { e->settled_.store(e->launched_.load(std::memory_order_relaxed), std::memory_order_release); }
  } settle{this};
  std::vector<cudaStream_t> others;
  for (const OpDesc& op : ops) {
    cudaStream_t s = static_cast<cudaStream_t>(op.stream);
    if (s != main && std::find(others.begin(), others.end(), s) == others.end()) others.push_back(s);
  }
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  unsigned long long captureId = 0;
  BRAID_CUDA_CHECK(cudaStreamGetCaptureInfo(main, &cap, &captureId), "rank %d: cudaStreamGetCaptureInfo", st_->rank);
  const bool capturing = cap != cudaStreamCaptureStatusNone;
  capturing_ = capturing;
  if (capturing) anyCapture_.store(true, std::memory_order_release);
  cudaEvent_t ev = nullptr;
  // The batch's end event: [0] outside a capture; inside an active one (an invalidated one fails the launches, and its
  // id means nothing), its capture's tail, found by id or else the least recently used one taken over.
  CaptureTail* tail = nullptr;
  if (cap == cudaStreamCaptureStatusActive) {
    for (CaptureTail& t : captureTails_)
      if (t.id == captureId) tail = &t;
    if (!tail) {
      tail = &captureTails_[0];
      for (CaptureTail& t : captureTails_)
        if (t.used < tail->used) tail = &t;
      if (tail->id) evicted_[nEvicted_++ % kEvicted] = tail->id;
      if (!evictWarned_ && std::find(evicted_, evicted_ + kEvicted, captureId) != evicted_ + kEvicted) {
        evictWarned_ = true;
        BRAID_WARN(
            "rank %d: more than %zu CUDA graph captures of this communicator were open at once, interleaved: "
            "capture %llu lost its order against its earlier calls%s; capture fewer at once, or order them "
            "with the streams",
            st_->rank, kCaptureTails, captureId,
            graphMixing_ ? " and its replays against other graphs' (NCCL_GRAPH_MIXING_SUPPORT)" : "");
      }
      *tail = CaptureTail{captureId, nullptr, 0, {}};
    }
  }
  // Inside a capture the batch's end is an event only where other streams of the batch must wait for it: a record
  // node between consecutive kernels of a graph costs each replayed collective about a microsecond
  // (capture_record.cc), and a later batch on another stream of the graph follows the end nodes instead.
  cudaEvent_t done = nullptr;
  if (!capturing || (tail && !others.empty()))
    BRAID_CHECK(event(tail ? 1 + static_cast<size_t>(tail - captureTails_) : 0, &done));
  // A graph's replay may have recorded events_[0] since (graph mixing): then wait on every stream.
  if (!capturing && ((haveLast_ && lastStream_ != main) || (graphMixing_ && everCaptured_)))
    BRAID_CUDA_CHECK(cudaStreamWaitEvent(main, done, 0), "rank %d: ordering after the previous batch", st_->rank);
  cudaEvent_t serial = nullptr;
  if (tail && graphMixing_) {
    BRAID_CHECK(event(0, &serial));
    if (!tail->stream)  // the capture's first batch: each replay waits for the communicator's last operation
      BRAID_CUDA_CHECK(cudaStreamWaitEvent(main, serial, cudaEventWaitExternal),
                       "rank %d: ordering a graph's replays after the communicator's other operations", st_->rank);
  }
  if (tail && tail->stream && tail->stream != main) BRAID_CHECK(followCaptureNodes(main, tail->ends, st_->rank));
  for (size_t i = 0; i < others.size(); ++i) {
    BRAID_CHECK(event(kCaptureTails + 1 + i, &ev));
    BRAID_CUDA_CHECK(cudaEventRecord(ev, others[i]), "rank %d: cudaEventRecord on a batch stream", st_->rank);
    BRAID_CUDA_CHECK(cudaStreamWaitEvent(main, ev, 0), "rank %d: joining the batch's streams", st_->rank);
  }
  if (!capturing && lastStart_) {
    noteBatchPeers(ops);
    BRAID_CUDA_CHECK(cudaEventRecord(lastStart_, main), "rank %d: cudaEventRecord before the batch", st_->rank);
  }
  std::vector<const OpDesc*>& p2p = p2p_.ops;
  p2p.clear();
  for (const OpDesc& op : ops) {
    if (!isP2pColl(op.coll)) {
      BRAID_CHECK(launchColl(op, main));
    } else {
      p2p.push_back(&op);
    }
  }
  if (!p2p.empty()) BRAID_CHECK(launchP2p(p2p, main));
  if (serial) BRAID_CHECK(moveCaptureRecord(&tail->record, main, serial, st_->rank));
  if (done) {
    BRAID_CUDA_CHECK(cudaEventRecord(done, main), "rank %d: cudaEventRecord after the batch", st_->rank);
    for (cudaStream_t s : others)
      BRAID_CUDA_CHECK(cudaStreamWaitEvent(s, done, 0), "rank %d: ordering the batch's streams after it", st_->rank);
  }
  if (!capturing) {
    haveLast_ = true;
    lastStream_ = main;
  } else if (tail) {
    BRAID_CHECK(captureEndNodes(main, &tail->ends, st_->rank));
    tail->stream = main;
    tail->used = ++captureUses_;
    everCaptured_ = true;
  }
  return ncclSuccess;
}

double GpuExecutor::predictUs(const OpDesc& op) {
  if (op.count == 0) return 0;
  if (isP2pColl(op.coll)) {  // p2p launches: the model's time of the cut launchP2p makes
    P2pCutFacts f;
    f.cut = p2pCtaBudget(st_->nChannels, st_->p2pCopyCtas, p2pMaxCtas(st_->tuning), st_->p2pPair);
    f.channelBytes = st_->p2pChannelBytes;
    f.llThreshold = st_->p2pLlThreshold;
    f.llSlots = st_->llPath && (transport_ != TransportClass::NetSocket || st_->p2pLlOnNet);
    f.balanceMinShare = st_->p2pBalanceBytes;  // only a GPU P2P path has a balanced row (tuner_model.def)
    f.peerChannels = st_->p2pPeerChannels;
    const TransportKind kind = transport_ == TransportClass::Shm         ? TransportKind::Shm
                               : transport_ == TransportClass::NetSocket ? TransportKind::Net
                                                                         : TransportKind::P2p;
    f.peerConnChannels = p2pChannelsOn(kind, st_->p2pPeerChannels);
    f.ringNext = ringNextRank(comm_);
    f.ringPrev = ringPrevRank(comm_);
    return predictP2pUs(op, st_->nranks, st_->rank, transport_, f);
  }
  return planner_.plan(op, lowLatencyKernels(op)).predictedUs;
}

NetWork GpuExecutor::netWork() {
  if (anyCapture_.load(std::memory_order_acquire)) return NetWork::Unknown;
  const uint64_t launched = launched_.load(std::memory_order_acquire);
  if (settled_.load(std::memory_order_acquire) != launched) return NetWork::Busy;  // its end event is not recorded yet
  if (lastDone_ == nullptr) return NetWork::Unknown;
  thread_local int dev = -1;  // the proxy's own thread: without a device set, the query would make one current
  if (dev != st_->dev && cudaSetDevice(st_->dev) == cudaSuccess) dev = st_->dev;
  const cudaError_t q = cudaEventQuery(lastDone_);
  if (q != cudaSuccess && q != cudaErrorNotReady) {
    cudaGetLastError();  // this thread's sticky error only
    return NetWork::Unknown;
  }
  if (launched_.load(std::memory_order_acquire) != launched) return NetWork::Busy;  // launched meanwhile
  return q == cudaErrorNotReady ? NetWork::Busy : NetWork::Idle;
}

cudaError_t GpuExecutor::launchKernel(const void* kernel, int nCta, void** args, cudaStream_t s, int cluster) {
  launched_.fetch_add(1, std::memory_order_seq_cst);  // before the wake: the proxy's probe sees it (netWork)
  if (comm_->conns) comm_->conns->wakeNet();  // kernels publish NET steps in mapped memory, which rings no bell
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attrs[2];
  cfg.gridDim = dim3(nCta);
  cfg.blockDim = dim3(st_->nThreads);
  cfg.stream = s;
  cfg.attrs = attrs;
  // On a stream (not in a capture, where graphs already launch back to back), a programmatic dependent: the
  // kernel's CTAs get resident as the previous kernel drains and start the moment it ends, instead of after a
  // launch (~1 us per collective on 2xH200: docs/TUNING.md, "PDL"). Every kernel waits for the
  // previous one first (devAwaitPreviousKernel), so stream order holds whatever ran before.
  const bool programmatic = launchAttrsFor(st_->pdl, capturing_).programmatic;
  if (programmatic) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[cfg.numAttrs++].val.programmaticStreamSerializationAllowed = 1;
  }
  // Thread-block clusters (collCluster, launch_attrs.h; the caller made nCta a whole number of them).
  const bool clustered = cluster >= 2 && st_->cluster >= 2;
  if (clustered) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attrs[cfg.numAttrs].val.clusterDim.x = static_cast<unsigned>(cluster);
    attrs[cfg.numAttrs].val.clusterDim.y = 1;
    attrs[cfg.numAttrs++].val.clusterDim.z = 1;
  }
  // A grid that is not whole clusters would be a caller's bug (its tail CTAs must return at once): fail loudly
  // rather than fall back to plain launches below.
  if (clustered && nCta % cluster != 0) return cudaErrorInvalidConfiguration;
  cudaError_t e = cudaLaunchKernelExC(&cfg, kernel, args);
  if (e != cudaSuccess && cfg.numAttrs > 0 &&
      (e == cudaErrorNotSupported || e == cudaErrorInvalidValue || e == cudaErrorInvalidClusterSize)) {
    // Maybe the driver or setup refuses an attribute (hints, not semantics: a clustered grid's extra CTAs
    // return at once). Clusters go first (programmatic launches, on since init, were taken before), then
    // both; whichever launch goes decides what stays off from now on. A launch failing for another reason, or
    // plainly too, fails as before.
    cudaGetLastError();
    if (clustered) {
      cfg.numAttrs -= 1;  // the cluster attribute is the last
      if (cfg.numAttrs > 0 && cudaLaunchKernelExC(&cfg, kernel, args) == cudaSuccess) {
        BRAID_WARN("rank %d: the CUDA driver refused thread-block clusters of %d (%s); launching without them from "
                   "now on (NCCL_CGA_CLUSTER_SIZE=0 does so from the start)",
                   st_->rank, cluster, cudaGetErrorString(e));
        st_->cluster = 0;
        planner_.clustersOff();
        return cudaSuccess;
      }
      cudaGetLastError();
    }
    cfg.numAttrs = 0;
    const cudaError_t plain = cudaLaunchKernelExC(&cfg, kernel, args);
    if (plain != cudaSuccess) return e;
    BRAID_WARN("rank %d: the CUDA driver refused %s (%s); launching plainly from now on (%s)", st_->rank,
               programmatic ? "programmatic dependent launches" : "thread-block clusters", cudaGetErrorString(e),
               programmatic ? "BRAID_PDL=0 does so from the start" : "NCCL_CGA_CLUSTER_SIZE=0 does so from the start");
    if (programmatic) st_->pdl = 0;
    if (clustered) {
      st_->cluster = 0;
      planner_.clustersOff();
    }
    return plain;
  }
  return e;
}

ncclResult_t GpuExecutor::launchColl(const OpDesc& op, cudaStream_t s) {
  const void* kernel = devCollKernel(op.coll, op.dtype, op.op.kind);
  if (!kernel) {
    if (devKernelsMinimal())
      return recordError(ncclInvalidUsage,
                         "%s on datatype %s: this Braid build has only the minimal device kernel set (float and "
                         "copies); reconfigure with -DBRAID_KERNELS=full",
                         collName(op.coll), dtypeName(op.dtype));
    return recordError(ncclInternalError, "%s: no device kernel for datatype %s with reduction kind %d",
                       collName(op.coll), dtypeName(op.dtype), static_cast<int>(op.op.kind));
  }
  if (op.count == 0) return ncclSuccess;
  const CollPlan plan = planner_.plan(op, lowLatencyKernels(op));
  if (plan.proto == Proto::LL) kernel = devCollKernelLL(op.coll, op.dtype, op.op.kind);
  if (plan.proto == Proto::LL128) kernel = devCollKernelLL128(op.coll, op.dtype, op.op.kind);
  DevConn* const* peerConns = nullptr;
  if (plan.devColl == kDevAllReduceOneShotPeers || plan.devColl == kDevAllReduceTwoShotPeers) {
    kernel = devOneShotPeersKernel(op.dtype, op.op.kind);
    peerConns = st_->oneShotPeers;
    if (!kernel || !peerConns)
      return recordError(ncclInternalError, "rank %d: the one-shot or two-shot over every peer was planned without its %s", st_->rank,
                         kernel ? "connections" : "kernel");
  }
  const bool copy = op.coll == CollType::AllGather || op.coll == CollType::Broadcast;
  CollLaunchArgs a;
  std::memset(&a, 0, sizeof(a));
  a.sendbuff = op.sendbuff;
  a.recvbuff = op.recvbuff;
  a.count = copy ? op.count * dtypeSize(op.dtype) : op.count;
  a.scalarPtr = op.op.scalarPtr;
  std::memcpy(&a.scalar, op.op.scalar, sizeof(a.scalar));
  a.divisor = op.op.divisor;
  a.coll = plan.devColl;
  a.splitGuard = plan.splitGuard ? st_->splitGuard : nullptr;
  a.root = op.root;
  a.rank = st_->rank;
  a.nranks = st_->nranks;
  a.ringPos = st_->ringPos;
  a.rootPos = st_->ringPosOf.empty() ? op.root : st_->ringPosOf[static_cast<size_t>(op.root)];
  a.ringOrder = st_->ringOrderDev;
  a.nChannels = plan.nChannels;
  a.stepCap = plan.stepCap;
  a.status = st_->statusDev;
  if (st_->nranks > 1) {
    a.ringConns = st_->ringSend(0);
    a.ringStride = static_cast<int32_t>(st_->ringRecv(0) - st_->ringSend(0));
  }
  a.peerConns = peerConns;
  a.treeConns = st_->treeConns;
  a.pdlTrigger = launchAttrsFor(st_->pdl, capturing_).earlyTrigger ? 1 : 0;
  void* args[] = {&a};
  BRAID_CUDA_CHECK(launchKernel(kernel, plan.nCta, args, s, plan.cluster),
                   "rank %d: launching the %s kernel (%zu x %s, %d channels)", st_->rank, collName(op.coll), op.count,
                   dtypeName(op.dtype), a.nChannels);
  return ncclSuccess;
}

ncclResult_t GpuExecutor::p2pConn(int peer, int channel, bool send, DevConn** out) {
  auto& map = send ? st_->p2pSend : st_->p2pRecv;
  auto it = map.find({peer, channel});
  if (it != map.end()) {
    *out = it->second;
    return ncclSuccess;
  }
  ConnInfo* info = send ? comm_->conns->p2pSend(peer, channel) : comm_->conns->p2pRecv(peer, channel);
  if (!info) return recordError(ncclInternalError, "rank %d: p2p connection %s rank %d (channel %d) is missing",
                                st_->rank, send ? "to" : "from", peer, channel);
  DevConn* d = nullptr;
  BRAID_CUDA_CHECK(cudaMalloc(&d, sizeof(DevConn)), "rank %d: cudaMalloc of a p2p connection state", st_->rank);
  // Cached only once uploaded: a failed upload must not leave a state that was never filled.
  const ncclResult_t r = st_->upload(*info, send, d);
  if (r != ncclSuccess) {
    cudaFree(d);
    return r;
  }
  map[{peer, channel}] = d;
  *out = d;
  return ncclSuccess;
}

ncclResult_t GpuExecutor::launchP2p(const std::vector<const OpDesc*>& ops, cudaStream_t s) {
  const int n = st_->nranks, me = st_->rank;
  P2pScratch& w = p2p_;
  w.sends.resize(n);
  w.recvs.resize(n);
  for (int p = 0; p < n; ++p) w.sends[p].clear(), w.recvs[p].clear();
  w.selfSends.clear();
  w.selfRecvs.clear();
  std::vector<P2pXfer>& copies = w.in.copies;  // (buf: destination, src)
  copies.clear();
  for (const OpDesc* op : ops) {
    const size_t bytes = op->count * dtypeSize(op->dtype);
    const char* sb = static_cast<const char*>(op->sendbuff);
    char* rb = static_cast<char*>(op->recvbuff);
    const bool oneWay = isOneWayColl(op->coll);
    // A collective's transfers at n > 2 share the peers' channels alike (p2pPeerChannels); both ends know.
    const int cap = n > 2 && op->coll != CollType::Send && op->coll != CollType::Recv ? st_->p2pPeerChannels : 0;
    auto snd = [&](int p, const char* b) {
      (p == me ? w.selfSends : w.sends[p]).push_back(P2pXfer{const_cast<char*>(b), bytes, nullptr, oneWay, cap});
    };
    auto rcv = [&](int p, char* b) {
      (p == me ? w.selfRecvs : w.recvs[p]).push_back(P2pXfer{b, bytes, nullptr, oneWay, cap});
    };
    switch (op->coll) {
      case CollType::Send: snd(op->peer, sb); break;
      case CollType::Recv: rcv(op->peer, rb); break;
      case CollType::AllToAll:
        for (int p = 0; p < n; ++p) {
          const size_t off = static_cast<size_t>(p) * bytes;
          if (p == me) {
            copies.push_back(P2pXfer{rb + off, bytes, sb + off});
          } else {
            snd(p, sb + off);
            rcv(p, rb + off);
          }
        }
        break;
      case CollType::Gather:
        if (me == op->root) {
          for (int p = 0; p < n; ++p) {
            if (p == me) copies.push_back(P2pXfer{rb + static_cast<size_t>(p) * bytes, bytes, sb});
            else rcv(p, rb + static_cast<size_t>(p) * bytes);
          }
        } else {
          snd(op->root, sb);
        }
        break;
      case CollType::Scatter:
        if (me == op->root) {
          for (int p = 0; p < n; ++p) {
            if (p == me) copies.push_back(P2pXfer{rb, bytes, sb + static_cast<size_t>(p) * bytes});
            else snd(p, sb + static_cast<size_t>(p) * bytes);
          }
        } else {
          rcv(op->root, rb);
        }
        break;
      default:
        return recordError(ncclInternalError, "%s is not a point-to-point operation", collName(op->coll));
    }
  }
  if (w.selfSends.size() != w.selfRecvs.size())
    return recordError(ncclInvalidUsage, "rank %d posted %zu sends to itself but %zu receives from itself in one group",
                       me, w.selfSends.size(), w.selfRecvs.size());
  for (size_t i = 0; i < w.selfSends.size(); ++i) {
    if (w.selfSends[i].bytes != w.selfRecvs[i].bytes)
      return recordError(ncclInvalidUsage, "rank %d: send to itself of %zu bytes is matched by a receive of %zu bytes",
                         me, w.selfSends[i].bytes, w.selfRecvs[i].bytes);
    copies.push_back(P2pXfer{w.selfRecvs[i].buf, w.selfRecvs[i].bytes, w.selfSends[i].buf});
  }
  copies.erase(std::remove_if(copies.begin(), copies.end(),
                              [](const P2pXfer& c) { return c.bytes == 0 || c.buf == c.src; }),
               copies.end());

  // Ring neighbours go over the ring connections, all channels; other peers over their own p2p connections
  // (p2pPeerChannels of them over P2P: ConnectionManager::setP2pChannels).
  const int next = ringNextRank(comm_), prev = ringPrevRank(comm_);
  w.sendPeers.clear();
  w.recvPeers.clear();
  for (int p = 0; p < n; ++p) {
    if (!w.sends[p].empty() && p != next) w.sendPeers.push_back(p);
    if (!w.recvs[p].empty() && p != prev) w.recvPeers.push_back(p);
  }
  if ((!w.sendPeers.empty() || !w.recvPeers.empty()))
    BRAID_CHECK(comm_->conns->connectP2p(w.sendPeers.data(), static_cast<int>(w.sendPeers.size()),
                                         w.recvPeers.data(), static_cast<int>(w.recvPeers.size())));
  // The cut into the CTAs of one launch (p2p_plan.h). Small transfers run LL where the connection has LL slots
  // (P2P, SHM; NET only when NCCL_PROTO forces LL): one slot-sized step with no fence instead of SIMPLE's FIFO
  // handshake (NCCL_P2P_LL_THRESHOLD, as in NCCL).
  // LL over NET only when NCCL_PROTO forces LL: over sockets it measured no faster than SIMPLE for small
  // shares, the socket round trip setting the time (docs/TUNING.md, "Small transfers").
  auto llOn = [&](const ConnInfo* ci) {
    return llSlotsOf(ci) != nullptr && (ci->kind != TransportKind::Net || st_->p2pLlOnNet);
  };
  auto gpuP2p = [](const ConnInfo* ci) { return ci != nullptr && ci->kind == TransportKind::P2p; };
  P2pPlanInput& in = w.in;
  // The cut and paired CTAs (p2p_plan.h) as the budget says: every rank's threads can pair (agreed at init).
  applyBudget(p2pCtaBudget(st_->nChannels, st_->p2pCopyCtas, p2pMaxCtas(st_->tuning), st_->p2pPair), &in);
  in.llThreshold = st_->p2pLlThreshold;
  in.balanceMinShare = st_->p2pBalanceBytes;
  in.channelBytes = st_->p2pChannelBytes;
  in.maxCtas = kMaxP2pCtas;
  static_assert(kMaxP2pCtas == kP2pLaunchCtas, "p2pPeerChannels sizes collectives to the launch");
  in.maxBlocks = kMaxP2pTableBlocks;
  w.connPeer.clear();
  size_t nConns = 0, nTransfers = copies.size();
  for (int p = 0; p < n; ++p) {
    for (int dir = 0; dir < 2; ++dir) {
      const bool isSend = dir == 0;
      const std::vector<P2pXfer>& xs = isSend ? w.sends[p] : w.recvs[p];
      if (xs.empty()) continue;
      nTransfers += xs.size();
      if (nConns == in.conns.size()) in.conns.emplace_back();
      P2pPlanConn& c = in.conns[nConns++];
      c.isSend = isSend;
      c.ring = isSend ? p == next : p == prev;
      if (c.ring) {
        // Filled on the first ring transfer only: a 1-rank comm has no connections at all (comm_->conns null).
        if (!w.ringLlKnown) {
          for (int ch = 0; ch < st_->nChannels; ++ch) {
            w.ringLl[0].push_back(llOn(comm_->conns->ringSend(ch)));
            w.ringLl[1].push_back(llOn(comm_->conns->ringRecv(ch)));
            w.ringBal[0].push_back(gpuP2p(comm_->conns->ringSend(ch)));
            w.ringBal[1].push_back(gpuP2p(comm_->conns->ringRecv(ch)));
          }
          w.ringLlKnown = true;
        }
        c.channels = st_->nChannels;
        c.ll = w.ringLl[dir];
        c.bal = w.ringBal[dir];
      } else {
        c.channels = std::max(1, comm_->conns->p2pChannels(p));
        c.ll.clear();
        c.bal.clear();
        for (int ch = 0; ch < c.channels; ++ch) {
          const ConnInfo* ci = isSend ? comm_->conns->p2pSend(p, ch) : comm_->conns->p2pRecv(p, ch);
          c.ll.push_back(llOn(ci));
          c.bal.push_back(gpuP2p(ci));
        }
      }
      c.xs = xs;
      w.connPeer.push_back(p);
    }
  }
  in.conns.resize(nConns);
  if (in.conns.empty()) {
    // Nothing crosses a connection: the copy engine does the local copies.
    for (auto& c : copies)
      BRAID_CUDA_CHECK(cudaMemcpyAsync(c.buf, c.src, c.bytes, cudaMemcpyDeviceToDevice, s),
                       "rank %d: local copy of %zu bytes", me, c.bytes);
    return ncclSuccess;
  }
  P2pPlanLaunch& l = w.plan;
  std::string why;
  if (!planP2p(in, &l, &why))
    return recordError(ncclInvalidUsage, "rank %d: one group holds %zu point-to-point transfers (sends, receives and "
                       "local copies): %s; split the group", me, nTransfers, why.c_str());
  // Every connection first, so a failure leaves nothing launched.
  std::vector<DevConn*>& p2pConns = w.conns;
  p2pConns.clear();
  w.connFirst.assign(in.conns.size(), 0);
  for (size_t ci = 0; ci < in.conns.size(); ++ci) {
    w.connFirst[ci] = static_cast<int>(p2pConns.size());
    if (in.conns[ci].ring) continue;
    for (int ch = 0; ch < in.conns[ci].channels; ++ch) {
      p2pConns.push_back(nullptr);
      BRAID_CHECK(p2pConn(w.connPeer[ci], ch, in.conns[ci].isSend, &p2pConns.back()));
    }
  }
  // The lists as the kernel reads them: CTA i runs blocks[ctaFirst[i]] .. + blocks[ctaFirst[i]].nSeg; a
  // paired CTA's receive group starts right after, its first block's nSeg counting it (the kernel finds the
  // CTA's end at the next CTA's first block).
  auto fill = [&](auto* ctaFirst, P2pBlock* blocks) {
    int nb = 0, nc = 0;
    for (const P2pPlanCta& cta : l.ctas) {
      ctaFirst[nc++] = static_cast<std::remove_pointer_t<decltype(ctaFirst)>>(nb);
      const int first = nb;
      for (const P2pPlanBlock& pb : l.blocksOf(cta)) {
        P2pBlock& b = blocks[nb++];
        b.buf = pb.buf;
        b.bytes = pb.bytes;
        b.src = pb.src;
        b.isSend = pb.isSend;
        b.ll = pb.balParts > 0 ? static_cast<int16_t>(-pb.balParts) : static_cast<int16_t>(pb.ll);
        // A balanced send's claim pair, or (no slot; odd, so never a pair's address) its channel for a fixed deal.
        if (pb.balParts > 0 && pb.isSend)
          b.src = pb.balSlot >= 0 ? reinterpret_cast<const char*>(st_->p2pClaims + 2 * pb.balSlot)
                                  : reinterpret_cast<const char*>((static_cast<uintptr_t>(pb.channel) << 1) | 1u);
        b.nSeg = 0;
        b.conn = pb.conn < 0                 ? nullptr
                 : in.conns[pb.conn].ring ? (pb.isSend ? st_->ringSend(pb.channel) : st_->ringRecv(pb.channel))
                                          : p2pConns[w.connFirst[pb.conn] + pb.channel];
      }
      if (cta.split > 0) {
        blocks[first].nSeg = cta.split;
        blocks[first + cta.split].nSeg = cta.count - cta.split;
      } else {
        blocks[first].nSeg = nb - first;
      }
    }
  };
  const int nCta = static_cast<int>(l.ctas.size());
  if (l.blocks > kMaxP2pBlocks) {
    // Past the largest parameter block: the lists go to device memory (p2p_table.h), still one launch.
    const size_t firstBytes = (sizeof(int32_t) * nCta + 15) & ~size_t{15};
    const size_t total = (firstBytes + sizeof(P2pBlock) * l.blocks + 15) & ~size_t{15};
    w.table.assign(total, 0);
    fill(reinterpret_cast<int32_t*>(w.table.data()), reinterpret_cast<P2pBlock*>(w.table.data() + firstBytes));
    const void* dev = nullptr;
    BRAID_CHECK(table_->put(w.table.data(), total, s, &dev));
    P2pTableArgs t;
    t.status = st_->statusDev;
    t.nBlocks = l.blocks;
    t.pieces = st_->p2pPieces;
    t.balCapParts = p2pBalancedCapParts(w.in.pairRing);
    t.ctaFirst = static_cast<const int32_t*>(dev);
    t.blocks = reinterpret_cast<const P2pBlock*>(static_cast<const char*>(dev) + firstBytes);
    void* targs[1] = {&t};
    BRAID_CUDA_CHECK(launchKernel(devP2pKernel(kMaxP2pTableBlocks), nCta, targs, s),
                     "rank %d: launching the p2p kernel (%d CTAs, %d blocks in device memory)", me, nCta, l.blocks);
    return ncclSuccess;
  }
  // Filled up to nCta / nBlocks only: the kernel reads no further, and zeroing the 26 KB block would cost
  // every small launch ~1 us.
  P2pLaunchArgs a;
  a.status = st_->statusDev;
  a.nBlocks = l.blocks;
  a.pieces = st_->p2pPieces;
  a.balCapParts = p2pBalancedCapParts(w.in.pairRing);
  fill(a.ctaFirst, a.blocks);
  // The smallest parameter block that holds the launch (dev_work.h; each a prefix of the same fields).
  P2pLaunchArgsTiny tiny;
  P2pLaunchArgsSmall small;
  P2pLaunchArgsMid mid;
  void* args[1] = {&a};
  int tier = kMaxP2pBlocks;
  auto shrink = [&](auto& to, int maxBlocks) {
    to = std::remove_reference_t<decltype(to)>{};
    to.status = a.status;
    to.nBlocks = a.nBlocks;
    to.pieces = a.pieces;
    to.balCapParts = a.balCapParts;
    std::memcpy(to.ctaFirst, a.ctaFirst, sizeof(a.ctaFirst[0]) * nCta);
    std::memcpy(to.blocks, a.blocks, sizeof(a.blocks[0]) * a.nBlocks);
    args[0] = &to;
    tier = maxBlocks;
  };
  if (a.nBlocks <= kTinyP2pBlocks) shrink(tiny, kTinyP2pBlocks);
  else if (a.nBlocks <= kSmallP2pBlocks) shrink(small, kSmallP2pBlocks);
  else if (a.nBlocks <= kMidP2pBlocks) shrink(mid, kMidP2pBlocks);
  BRAID_CUDA_CHECK(launchKernel(devP2pKernel(tier), nCta, args, s),
                   "rank %d: launching the p2p kernel (%d CTAs, %d blocks)", me, nCta, a.nBlocks);
  return ncclSuccess;
}

}  // namespace

std::unique_ptr<Executor> makeGpuExecutor(ncclComm* comm, std::unique_ptr<DeviceState> state) {
  return std::make_unique<GpuExecutor>(comm, std::move(state));
}

}  // namespace braid
