// ncclRedOpCreatePreMulSum / ncclRedOpDestroy: per-communicator user ops, handed out from ncclNumOps up.
#include <cstring>

#include "algo/op_desc.h"
#include "api/api_common.h"

using namespace braid;

BRAID_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
          ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiCall("ncclRedOpCreatePreMulSum", comm, [&]() -> ncclResult_t {
    const char* fn = "ncclRedOpCreatePreMulSum";
    BRAID_CHECK(checkComm(comm, fn));
    BRAID_CHECK(checkPtr(op, "op", fn));
    BRAID_CHECK(checkPtr(scalar, "scalar", fn));
    BRAID_CHECK(checkDtype(datatype, fn));
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
      return recordError(ncclInvalidArgument, "%s: residence %d is invalid", fn, static_cast<int>(residence));
    UserRedOp u;
    u.inUse = true;
    u.dtype = datatype;
    u.residence = residence;
    if (residence == ncclScalarHostImmediate)
      memcpy(u.value, scalar, dtypeSize(datatype));
    else
      u.ptr = scalar;
    std::lock_guard<std::mutex> lock(comm->redOpMu);
    size_t idx = 0;
    while (idx < comm->userOps.size() && comm->userOps[idx].inUse) ++idx;
    if (idx == comm->userOps.size()) comm->userOps.push_back(u);
    else comm->userOps[idx] = u;
    *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(idx));
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return apiCall("ncclRedOpDestroy", comm, [&]() -> ncclResult_t {
    const char* fn = "ncclRedOpDestroy";
    BRAID_CHECK(checkComm(comm, fn));
    int o = static_cast<int>(op);
    if (o >= 0 && o < ncclNumOps)
      return recordError(ncclInvalidArgument, "%s: op %d is a built-in op and cannot be destroyed", fn, o);
    std::lock_guard<std::mutex> lock(comm->redOpMu);
    size_t idx = static_cast<size_t>(o - ncclNumOps);
    if (o < ncclNumOps || idx >= comm->userOps.size() || !comm->userOps[idx].inUse)
      return recordError(ncclInvalidArgument, "%s: op %d was not created on this communicator", fn, o);
    comm->userOps[idx].inUse = false;
    return ncclSuccess;
  });
}
