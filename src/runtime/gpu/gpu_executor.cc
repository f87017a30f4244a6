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
// uncaptured batch waits for it and records it. The p2p launch itself is in gpu_p2p_launch.cc.
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
#include "runtime/gpu/gpu_executor.h"
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
  f.threads = st.nThreads;
  f.threadsAuto = params::NThreads() <= 0;
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
  f.tunerPlugin = st.tunerPlugin.get();
  f.treeLlPath = st.treeLlPath;
  f.treeIntra = st.treeIntra;
  f.ringIntra = st.ringIntra;
  if (st.nranks > 1 && comm->conns) {
    const ConnInfo* c0 = comm->conns->ringSend(0);
    f.ringStepBytes = c0->stepBytes;
    f.ringSteps = c0->nSteps;
  }
  return f;
}

}  // namespace

GpuExecutor::GpuExecutor(ncclComm* comm, std::unique_ptr<DeviceState> st)
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
      *tail = CaptureTail{captureId, nullptr, 0, {}, {}};
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

cudaError_t GpuExecutor::launchKernel(const void* kernel, int nCta, void** args, cudaStream_t s, int cluster,
                                      int threads) {
  launched_.fetch_add(1, std::memory_order_seq_cst);  // before the wake: the proxy's probe sees it (netWork)
  if (comm_->conns) comm_->conns->wakeNet();  // kernels publish NET steps in mapped memory, which rings no bell
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attrs[2];
  cfg.gridDim = dim3(nCta);
  cfg.blockDim = dim3(threads > 0 ? threads : st_->nThreads);
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
  if (plan.error != ncclSuccess) return plan.error;  // the tuner plugin failed (recorded, naming it)
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
  a.redKind = static_cast<int32_t>(op.op.kind);
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
  a.nRings = st_->nRings;
  a.ringTables = st_->ringTablesDev;
  a.peerConns = peerConns;
  a.treeConns = st_->treeConns;
  a.pdlTrigger = launchAttrsFor(st_->pdl, capturing_).earlyTrigger ? 1 : 0;
  void* args[] = {&a};
  BRAID_CUDA_CHECK(launchKernel(kernel, plan.nCta, args, s, plan.cluster, plan.nThreads),
                   "rank %d: launching the %s kernel (%zu x %s, %d channels)", st_->rank, collName(op.coll), op.count,
                   dtypeName(op.dtype), a.nChannels);
  return ncclSuccess;
}

std::unique_ptr<Executor> makeGpuExecutor(ncclComm* comm, std::unique_ptr<DeviceState> state) {
  return std::make_unique<GpuExecutor>(comm, std::move(state));
}

}  // namespace braid

