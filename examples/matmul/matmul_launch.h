// matmul_demo: which launcher started this process (braidrun, mpirun, or none), its rank among the job's
// processes, sharing the NCCL unique id, and ending the whole job when one rank fails.
#pragma once

#include <string>

#include "nccl.h"

namespace matmul {

struct Launch {
  int rank = 0;
  int nranks = 1;
  int localRank = 0;
  std::string launcher = "single process";  // "braidrun", "mpirun" or "single process"
  bool mpi = false;
};

// Reads BRAID_RANK/BRAID_NRANKS (braidrun) or initialises MPI when an MPI launcher's environment is present
// and the build has MPI. Throws std::runtime_error with the reason when the launch cannot work.
Launch startLaunch(int* argc, char*** argv);
bool mpiSupportBuilt();

// Every rank gets the same id: under braidrun each rank asks for it (NCCL_COMM_ID makes them equal); under
// MPI rank 0 creates it and broadcasts it. Returns the result of ncclGetUniqueId.
ncclResult_t shareUniqueId(const Launch& l, ncclUniqueId* id);

void finishLaunch(const Launch& l);
// Ends this process and, under MPI, the job (braidrun ends the other ranks itself when one fails).
[[noreturn]] void abortLaunch(const Launch& l, int code);

}  // namespace matmul
