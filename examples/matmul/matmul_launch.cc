// matmul_demo: launcher detection and unique-id sharing (see matmul_launch.h).
#include "matmul_launch.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#ifdef BRAID_MATMUL_HAVE_MPI
#include <mpi.h>
#endif

namespace matmul {
namespace {

const char* envStr(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

int envInt(const char* name, int fallback) {
  const char* v = envStr(name);
  return v ? std::atoi(v) : fallback;
}

// Started by an MPI launcher? (Open MPI, MPICH/Hydra, PMIx, MVAPICH.)
const char* mpiSizeVar() {
  for (const char* n : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"})
    if (envStr(n)) return n;
  return nullptr;
}
bool mpiEnvPresent() { return mpiSizeVar() || envStr("PMIX_RANK"); }

}  // namespace

bool mpiSupportBuilt() {
#ifdef BRAID_MATMUL_HAVE_MPI
  return true;
#else
  return false;
#endif
}

Launch startLaunch(int* argc, char*** argv) {
  Launch l;
  if (envStr("BRAID_NRANKS")) {
    l.launcher = "braidrun";
    l.nranks = envInt("BRAID_NRANKS", 1);
    l.rank = envInt("BRAID_RANK", -1);
    l.localRank = envInt("BRAID_LOCAL_RANK", l.rank);
    if (l.nranks < 1 || l.rank < 0 || l.rank >= l.nranks)
      throw std::runtime_error("bad BRAID_RANK / BRAID_NRANKS (" + std::to_string(l.rank) + " of " +
                               std::to_string(l.nranks) + ")");
    if (l.nranks > 1 && !envStr("NCCL_COMM_ID"))
      throw std::runtime_error("BRAID_NRANKS > 1 but NCCL_COMM_ID is not set: start the ranks with braidrun");
    return l;
  }
  if (mpiEnvPresent()) {
#ifdef BRAID_MATMUL_HAVE_MPI
    MPI_Init(argc, argv);
    l.mpi = true;
    l.launcher = "mpirun";
    MPI_Comm_size(MPI_COMM_WORLD, &l.nranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &l.rank);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, l.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &l.localRank);
    MPI_Comm_free(&node);
    return l;
#else
    const char* var = mpiSizeVar();
    if (var && std::atoi(envStr(var)) > 1)
      throw std::runtime_error(std::string("started by an MPI launcher (") + var + "=" + envStr(var) +
                               ") but this build has no MPI support (MPI was not found at configure time); "
                               "use build/bin/braidrun -n N -- matmul_demo");
#endif
  }
  return l;
}

ncclResult_t shareUniqueId(const Launch& l, ncclUniqueId* id) {
#ifdef BRAID_MATMUL_HAVE_MPI
  if (l.mpi) {
    ncclResult_t res = ncclSuccess;
    if (l.rank == 0) res = ncclGetUniqueId(id);
    int ok = res == ncclSuccess ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) return l.rank == 0 ? res : ncclSystemError;
    MPI_Bcast(id, sizeof(*id), MPI_BYTE, 0, MPI_COMM_WORLD);
    return ncclSuccess;
  }
#endif
  (void)l;
  return ncclGetUniqueId(id);
}

void finishLaunch(const Launch& l) {
#ifdef BRAID_MATMUL_HAVE_MPI
  if (l.mpi) MPI_Finalize();
#endif
  (void)l;
}

void abortLaunch(const Launch& l, int code) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef BRAID_MATMUL_HAVE_MPI
  if (l.mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  (void)l;
  std::_Exit(code);
}

}  // namespace matmul
