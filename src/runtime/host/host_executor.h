// The host executor: runs a communicator's batch of operations on host buffers with CPU primitives over
// the transports' host FIFOs. Collectives run in issue order (every rank issues the same sequence), each
// split across channels, one CPU thread per channel; point-to-point operations of the batch (send/recv,
// and all-to-all/gather/scatter, which are built from them) progress together without blocking on any one
// peer, so any pairing order across ranks completes.
#pragma once

#include <memory>
#include <vector>

#include "algo/op_desc.h"
#include "algo/tree_topology.h"
#include "core/wait.h"
#include "nccl.h"
#include "runtime/executor.h"
#include "tuner/tuner.h"

struct ncclComm;

namespace braid {

class ConnProvider;
class ProgressTable;

class HostExecutor final : public Executor {
 public:
  HostExecutor(ConnProvider* conns, const WaitContext* wait, int rank, int nranks, int nChannels);
  ~HostExecutor() override;
  // From now on each collective's channel count is the tuner's choice (tuner.h; logged under
  // NCCL_DEBUG_SUBSYS=TUNING, NCCL_MIN/MAX_NCHANNELS honoured) within the connected channels. Without it,
  // every collective uses all of them. Every rank must use the same configuration (as NCCL requires of
  // its environment): ranks that pick different channel counts report a size mismatch.
  // `transport`: the ring's path class, the same on every rank (agreed at init: a ring mixing SHM and
  // socket links must plan like its slowest on every rank).
  void setTuning(const TunerConfig& cfg, TransportClass transport = TransportClass::HostShm);
  // The rings' order (position -> rank, a permutation of the ranks, the same on every rank; ring_order.h), which
  // the connections given to the constructor follow. Without it, rank order.
  ncclResult_t setRingOrder(const std::vector<int>& order);
  // Several rings: channel c walks orders[c % orders.size()] (the connections follow the same rule). Empty: one
  // ring in rank order.
  ncclResult_t setRingOrders(const std::vector<std::vector<int>>& orders);
  // All-reduce may run on the double binary tree (tree_topology.h): this rank's links in each tree, connected on
  // the connection provider's tree channels, over nNodes nodes. The tuner then picks ring or tree per call.
  void setTrees(const TreeLinks trees[kNumTrees], int nNodes);
  // Each batch is published in `table` (may be null): its sequence number and collective, at start and end.
  void setProgress(ProgressTable* table);
  // Runs the batch to completion (or the first error, with a recorded message naming the peer).
  ncclResult_t run(const std::vector<OpDesc>& ops) override;
  // The cost model's time (us) of `op` as this executor would run it (ncclGroupSimulateEnd).
  double predictUs(const OpDesc& op) override;

 private:
  ncclResult_t runOps(const std::vector<OpDesc>& ops);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// After the bootstrap: agrees on channels, connects the ring over host transports (SHM, sockets), agrees on
// the tuning and sets comm->exec to a host executor.
ncclResult_t initHostComm(ncclComm* comm);

}  // namespace braid
