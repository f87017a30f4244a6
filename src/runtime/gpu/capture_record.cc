// capture_record: moves a capture's one record node after each new batch (see capture_record.h).
//
// One record node per capture, not one per batch: a record node captured into the stream sits between
// consecutive kernels and cost each all-reduce ~0.95 us in a graph of 50 (2xH100: docs/TUNING.md, "Device
// primitives"). The node is added beside the stream, so the stream's next node does not wait for it, and
// as later batches come its edges move to their ends: a capture's graph may gain nodes and change edges while the
// capture runs, but not lose nodes. The executor runs the batches of one capture in turn, so once the last has
// ended all have.
#include "runtime/gpu/capture_record.h"

#include <algorithm>

#include "runtime/gpu/gpu_state.h"

namespace braid {

namespace {

// CUDA 13 gave the capture query and the edge calls edge data; CUDA 12 has them without (and `_v3`/`_v2` forms with).
// Braid's edges carry none: PDL is off under capture (launch_attrs.h), and the record waits for full completion.
cudaError_t captureEnds(cudaStream_t s, cudaStreamCaptureStatus* cap, cudaGraph_t* graph, const cudaGraphNode_t** ends,
                        size_t* n) {
#if CUDART_VERSION >= 13000
  const cudaGraphEdgeData* edgeData = nullptr;  // asked for only so that the query is not lossy; unused
  return cudaStreamGetCaptureInfo(s, cap, nullptr, graph, ends, &edgeData, n);
#else
  return cudaStreamGetCaptureInfo(s, cap, nullptr, graph, ends, n);
#endif
}
cudaError_t addEdges(cudaGraph_t g, const cudaGraphNode_t* from, const cudaGraphNode_t* to, size_t n) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddDependencies(g, from, to, nullptr, n);
#else
  return cudaGraphAddDependencies(g, from, to, n);
#endif
}
cudaError_t removeEdges(cudaGraph_t g, const cudaGraphNode_t* from, const cudaGraphNode_t* to, size_t n) {
#if CUDART_VERSION >= 13000
  return cudaGraphRemoveDependencies(g, from, to, nullptr, n);
#else
  return cudaGraphRemoveDependencies(g, from, to, n);
#endif
}

// The entries of `a` not in `b`.
std::vector<cudaGraphNode_t> missingFrom(const std::vector<cudaGraphNode_t>& a, const std::vector<cudaGraphNode_t>& b) {
  std::vector<cudaGraphNode_t> out;
  for (cudaGraphNode_t n : a)
    if (std::find(b.begin(), b.end(), n) == b.end()) out.push_back(n);
  return out;
}

}  // namespace

ncclResult_t moveCaptureRecord(CaptureRecord* rec, cudaStream_t stream, cudaEvent_t event, int rank) {
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* ends = nullptr;
  size_t n = 0;
  BRAID_CUDA_CHECK(captureEnds(stream, &cap, &graph, &ends, &n), "rank %d: the capture's nodes after a batch", rank);
  // An invalidated capture (another call broke it) gives no graph; it fails at its end, and nothing replays it.
  // No end nodes: nothing was captured, and the node stays where it is (a record with no dependency would fire at
  // the replay's start).
  if (cap != cudaStreamCaptureStatusActive || n == 0) return ncclSuccess;
  std::vector<cudaGraphNode_t> after(ends, ends + n);
  if (!rec->node) {
    BRAID_CUDA_CHECK(cudaGraphAddEventRecordNode(&rec->node, graph, after.data(), after.size(), event),
                     "rank %d: recording a captured batch's end for later replays and operations", rank);
  } else {
    // Add the new edges before removing the old, so the node never hangs on nothing.
    std::vector<cudaGraphNode_t> from = missingFrom(after, rec->after), to(from.size(), rec->node);
    if (!from.empty())
      BRAID_CUDA_CHECK(addEdges(graph, from.data(), to.data(), from.size()),
                       "rank %d: moving the capture's record node after its last batch", rank);
    from = missingFrom(rec->after, after);
    to.assign(from.size(), rec->node);
    if (!from.empty())
      BRAID_CUDA_CHECK(removeEdges(graph, from.data(), to.data(), from.size()),
                       "rank %d: moving the capture's record node after its last batch", rank);
  }
  rec->after = std::move(after);
  return ncclSuccess;
}

ncclResult_t captureEndNodes(cudaStream_t stream, std::vector<cudaGraphNode_t>* ends, int rank) {
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* nodes = nullptr;
  size_t n = 0;
  ends->clear();
  BRAID_CUDA_CHECK(captureEnds(stream, &cap, &graph, &nodes, &n), "rank %d: the capture's nodes after a batch", rank);
  if (cap == cudaStreamCaptureStatusActive) ends->assign(nodes, nodes + n);
  return ncclSuccess;
}

ncclResult_t followCaptureNodes(cudaStream_t stream, const std::vector<cudaGraphNode_t>& nodes, int rank) {
  if (nodes.empty()) return ncclSuccess;
  std::vector<cudaGraphNode_t> deps(nodes);
#if CUDART_VERSION >= 13000
  const cudaError_t e =
      cudaStreamUpdateCaptureDependencies(stream, deps.data(), nullptr, deps.size(), cudaStreamAddCaptureDependencies);
#else
  const cudaError_t e =
      cudaStreamUpdateCaptureDependencies(stream, deps.data(), deps.size(), cudaStreamAddCaptureDependencies);
#endif
  BRAID_CUDA_CHECK(e, "rank %d: ordering after the previous batch captured into this graph on another stream", rank);
  return ncclSuccess;
}

}  // namespace braid
