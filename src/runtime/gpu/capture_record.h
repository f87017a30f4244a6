// capture_record: graph mixing's record node (NCCL_GRAPH_MIXING_SUPPORT), and the capture's end nodes that
// order a communicator's batches captured into one graph on different streams. A capture holding a communicator's
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

// The current end nodes of `stream`'s active capture (empty where it is not active or holds nothing yet).
ncclResult_t captureEndNodes(cudaStream_t stream, std::vector<cudaGraphNode_t>* ends, int rank);
// Makes the next node captured on `stream` depend on `nodes` too (nodes of the same capture): a batch captured on
// another stream of the graph follows the previous one without an event record node between the kernels.
ncclResult_t followCaptureNodes(cudaStream_t stream, const std::vector<cudaGraphNode_t>& nodes, int rank);

}  // namespace braid
