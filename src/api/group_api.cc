// ncclGroupStart, ncclGroupEnd and ncclGroupSimulateEnd: the entry guard around the runtime's groups.
#include "api/api_common.h"
#include "runtime/group.h"

using namespace braid;

BRAID_API(ncclResult_t, ncclGroupStart, void) {
  return apiCall("ncclGroupStart", nullptr, []() -> ncclResult_t {
    groupStart();
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclGroupEnd, void) {
  return apiCall("ncclGroupEnd", nullptr, [] { return groupEnd(); });
}

BRAID_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return apiCall("ncclGroupSimulateEnd", nullptr, [&] { return groupSimulateEnd(simInfo); });
}
