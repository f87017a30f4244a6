// GpuExecutor (gpu_executor.cc): a GPU communicator's executor, declared here for the files that implement it:
// gpu_executor.cc (batches, collective launches, errors, captures) and gpu_p2p_launch.cc (the p2p launch).
// Internal to src/runtime/gpu: the rest of the library makes one through makeGpuExecutor (gpu_state.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "algo/p2p_plan.h"
#include "runtime/executor.h"
#include "runtime/gpu/capture_record.h"
#include "runtime/gpu/coll_plan.h"
#include "runtime/gpu/gpu_state.h"
#include "runtime/gpu/p2p_table.h"
#include "transport/net/net_proxy.h"

struct ncclComm;

namespace braid {

class GpuExecutor final : public Executor {
 public:
  GpuExecutor(ncclComm* comm, std::unique_ptr<DeviceState> st);
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
  // `threads` a CTA where the plan sets them (0: st_->nThreads).
  cudaError_t launchKernel(const void* kernel, int nCta, void** args, cudaStream_t s, int cluster = 0,
                           int threads = 0);
  ncclResult_t launchP2p(const std::vector<const OpDesc*>& ops, cudaStream_t s);
  ncclResult_t p2pConn(int peer, int channel, bool send, DevConn** out);
  ncclResult_t event(size_t i, cudaEvent_t* out);
  uint32_t lowLatencyKernels(const OpDesc& op) const;
  // For the NET proxy's threads (NetProxy::setWorkProbe; several may call at once): Busy while a batch launched so
  // far may still run, so they poll the FIFOs the kernels publish NET steps in; Unknown once a capture exists
  // (replays tell nobody).
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
  // batch was ever captured: read by the NET proxy's threads (netWork).
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

}  // namespace braid
