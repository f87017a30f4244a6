// Buffer registration, windows and the device-communicator API. Host communicators need no registration
// (ncclCommRegister hands back a handle that records the range, so Deregister can check it); windows and
// device communicators are not built yet and say so.
#include <mutex>
#include <set>

#include "api/api_common.h"
#include "nccl_device.h"

namespace braid {
namespace {
struct RegHandle {
  uint64_t magic = 0x5265674861ull;
  ncclComm* comm;
  void* buff;
  size_t size;
};
}  // namespace
}  // namespace braid

using namespace braid;

BRAID_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return apiCall("ncclCommRegister", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommRegister"));
    BRAID_CHECK(checkPtr(buff, "buff", "ncclCommRegister"));
    BRAID_CHECK(checkPtr(handle, "handle", "ncclCommRegister"));
    *handle = new RegHandle{0x5265674861ull, comm, buff, size};
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return apiCall("ncclCommDeregister", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommDeregister"));
    BRAID_CHECK(checkPtr(handle, "handle", "ncclCommDeregister"));
    auto* h = static_cast<RegHandle*>(handle);
    if (h->magic != 0x5265674861ull || h->comm != comm)
      return recordError(ncclInvalidArgument, "ncclCommDeregister: handle %p was not registered on this comm", handle);
    h->magic = 0;
    delete h;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
          int winFlags) {
  return apiCall("ncclCommWindowRegister", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommWindowRegister"));
    return recordError(ncclInvalidUsage, "ncclCommWindowRegister: symmetric windows are not supported by Braid yet");
  });
}

BRAID_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return apiCall("ncclCommWindowDeregister", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommWindowDeregister"));
    return recordError(ncclInvalidUsage,
                       "ncclCommWindowDeregister: symmetric windows are not supported by Braid yet");
  });
}

BRAID_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
          ncclDevComm_t* outDevComm) {
  return apiCall("ncclDevCommCreate", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclDevCommCreate"));
    return recordError(ncclInvalidUsage, "ncclDevCommCreate: the device communicator API is not supported by Braid yet");
  });
}

BRAID_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  return apiCall("ncclDevCommDestroy", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclDevCommDestroy"));
    return recordError(ncclInvalidUsage,
                       "ncclDevCommDestroy: the device communicator API is not supported by Braid yet");
  });
}
