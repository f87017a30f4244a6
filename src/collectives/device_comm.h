// Device communicators (GPU buffers): the hooks the API layer calls. initDeviceComm runs after the
// bootstrap has exchanged PeerInfo; it connects the transports for device buffers and creates the
// DeviceExecutor, which turns each batch of ops into kernel launches on the callers' streams.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "collectives/op_desc.h"
#include "nccl.h"

struct ncclComm;

namespace braid {

class DeviceExecutor {
 public:
  virtual ~DeviceExecutor() = default;
  // Enqueues the batch on the ops' streams and returns without waiting for completion.
  virtual ncclResult_t run(const std::vector<OpDesc>& ops) = 0;
  // An error a kernel reported since (abort seen, size mismatch, broken host connection), with a recorded
  // message; ncclSuccess otherwise. Non-blocking: for ncclCommGetAsyncError.
  virtual ncclResult_t asyncError() { return ncclSuccess; }
  // Runs f while the peer watch (if any) is between checks: for changing the ranks it ignores.
  virtual void withPeerWatchPaused(const std::function<void()>& f) { f(); }
  // The cost model's time (us) of `op` as this communicator would run it (ncclGroupSimulateEnd); < 0: none.
  virtual double predictUs(const OpDesc&) { return -1; }
};

// Fills comm->cudaDev, comm->self.cudaDev/busId for this thread's current device (before the bootstrap).
ncclResult_t describeLocalDevice(ncclComm* comm);
// After the bootstrap: connects channels for device buffers and creates comm->devExec.
ncclResult_t initDeviceComm(ncclComm* comm);

}  // namespace braid
