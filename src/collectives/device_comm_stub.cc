// Placeholder for the GPU data path (issue 4): device communicators are refused with a clear message
// until the device executor lands. Replaced by the real implementation, not extended.
#include "collectives/device_comm.h"

#include "core/comm.h"
#include "core/result.h"

namespace braid {

ncclResult_t describeLocalDevice(ncclComm* comm) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return recordError(ncclUnhandledCudaError, "rank %d: cudaGetDevice failed", comm->rank);
  }
  comm->cudaDev = dev;
  comm->self.cudaDev = dev;
  return ncclSuccess;
}

ncclResult_t initDeviceComm(ncclComm* comm) {
  return recordError(ncclInvalidUsage,
                     "rank %d: communicators on GPU buffers are not implemented yet in this build (GPU data path "
                     "pending); set BRAID_HOST_COMM=1 to use host buffers",
                     comm->rank);
}

}  // namespace braid
