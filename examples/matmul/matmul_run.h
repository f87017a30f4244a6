// matmul_demo: the distributed multiply itself. rows: scatter uneven row blocks of A with grouped
// ncclSend/ncclRecv, broadcast B, multiply locally, gather the row blocks of C with grouped send/recv.
// inner: split K unevenly, send each rank its column panel of A and row panel of B (grouped send/recv),
// multiply to a partial C, all-reduce (sum) the partials. Phases are separated by barriers so that each
// phase's time is its own; times are the mean per timed iteration, the maximum over ranks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "matmul_compute.h"
#include "matmul_options.h"
#include "nccl.h"

namespace matmul {

struct RunSetup {
  Options opt;  // sizes resolved (non-zero)
  int rank = 0, nranks = 1;
  ncclComm_t comm = nullptr;
  Compute* commMem = nullptr;     // where the collectives' buffers live
  Compute* computeMem = nullptr;  // where the multiply runs (differs from commMem only when staged)
  int corruptRank = -1;           // BRAID_MATMUL_CORRUPT
};

// The root's matrices, host memory, row-major, elements of the chosen type.
struct RootData {
  std::vector<char> a, b, c;
};

struct PhaseTime {
  std::string name;
  double sec = 0;        // max over ranks, per iteration
  double bytes = 0;      // payload moved per iteration (0 for the multiply)
  double busFactor = 0;  // busbw = algbw * busFactor (all-reduce: 2(P-1)/P), 0 if not reported
  bool multiply = false;
};

struct RunReport {
  std::vector<PhaseTime> phases;
  double multiplyMinSec = 0;  // fastest rank's multiply (load balance)
  double totalSec = 0;        // root's wall time per iteration, barriers included
  double stagingSec = 0;      // host<->device copies around the collectives (gpu-staged), max over ranks
  double setupSec = 0;        // root: upload/pack of A and B before the iterations
  double downloadSec = 0;     // root: copying C back to the host after the iterations
  std::vector<size_t> split;  // rows (rows mode) or K columns (inner mode) per rank
};

// Runs warm-up and timed iterations; on the root, `root` holds A and B and receives C.
// Throws std::runtime_error on failure.
RunReport runDistributed(const RunSetup& s, RootData* root);

ncclDataType_t ncclTypeOf(ElemType t);
// Throws with NCCL's message and the library's last error when res is not ncclSuccess.
void ncclCheck(ncclResult_t res, ncclComm_t comm, const char* what);

}  // namespace matmul
