// The executor interface: what a communicator runs its batches on. The host executor (runtime/host) runs a
// batch to completion on CPU threads over host FIFOs; the GPU executor (runtime/gpu) enqueues it as kernel
// launches on the callers' streams and returns. Groups, the API and ncclGroupSimulateEnd see only this.
#pragma once

#include <functional>
#include <vector>

#include "algo/op_desc.h"
#include "nccl.h"

namespace braid {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one communicator's batch (every rank issues the same sequence of collectives). A failure has a
  // recorded message naming the peer or argument.
  virtual ncclResult_t run(const std::vector<OpDesc>& ops) = 0;
  // The cost model's time (us) of `op` as this executor would run it (ncclGroupSimulateEnd).
  virtual double predictUs(const OpDesc& op) = 0;
  // An error found since the last batch without blocking (a kernel's abort, broken connection or size
  // mismatch), with a recorded message; ncclSuccess otherwise. For ncclCommGetAsyncError.
  virtual ncclResult_t asyncError() { return ncclSuccess; }
  // Runs f while the executor's peer watch (if any) is between checks: for changing the ranks it ignores.
  virtual void withPeerWatchPaused(const std::function<void()>& f) { f(); }
};

}  // namespace braid
