// capture_record: graph mixing's record node (NCCL_GRAPH_MIXING_SUPPORT). A capture holding a communicator's
// batches gets one external record node of the communicator's serial event, after its last batch, so that each
// replay records that event once, when the graph's last Braid kernel has ended; the next replay of any graph and the
// next uncaptured batch wait for it.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "nccl.h"

namespace braid {

struct CaptureRecord {
  cudaGraphNode_t node = nullptr;      // none yet: the capture's first batch adds it
  std::vector<cudaGraphNode_t> after;  // the nodes it hangs on: the last batch's end
};

// Hangs `rec`'s record node of `event` on the current end of `stream`'s capture (the batch just captured),
// adding the node at the capture's first batch.
ncclResult_t moveCaptureRecord(CaptureRecord* rec, cudaStream_t stream, cudaEvent_t event, int rank);

}  // namespace braid
