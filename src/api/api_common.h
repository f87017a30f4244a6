// Shared plumbing of the C entry points: the BRAID_API macro that defines pnccl<Name> and makes
// ncclName a weak alias of it (as NCCL does, so profilers can interpose), the entry guard that opens an
// error scope and catches everything, and argument checks that record a message naming the argument.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "core/log.h"
#include "core/result.h"
#include "nccl.h"
#include "runtime/comm.h"

#define BRAID_API(ret, func, ...)                                                                     \
  extern "C" __attribute__((visibility("default"))) ret p##func(__VA_ARGS__);                       \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #func))) ret func(__VA_ARGS__); \
  extern "C" ret p##func(__VA_ARGS__)

namespace braid {

// Runs `body` (a callable returning ncclResult_t) inside an ErrorScope; never lets an exception out. On
// failure the recorded message (or a generic one) becomes the thread's last error and, when `comm` is a
// live communicator, the comm's last error too.
template <typename F>
ncclResult_t apiCall(const char* name, ncclComm* comm, F&& body) noexcept {
  ErrorScope scope;
  ncclResult_t res;
  try {
    res = body();
  } catch (const std::bad_alloc&) {
    res = recordError(ncclSystemError, "%s: out of host memory", name);
  } catch (const std::exception& e) {
    res = recordError(ncclInternalError, "%s: unexpected exception: %s", name, e.what());
  } catch (...) {
    res = recordError(ncclInternalError, "%s: unexpected exception", name);
  }
  if (res != ncclSuccess && res != ncclInProgress) {
    std::string msg = pendingError().empty() ? std::string(name) + " failed: " + errorString(res) : pendingError();
    setThreadLastError(msg);
    if (comm != nullptr && comm->magic == kCommMagic) comm->setLastError(msg);
    BRAID_WARN("%s", msg.c_str());
  }
  return res;
}

// A usable communicator handle: non-null, ours, not destroyed.
ncclResult_t checkComm(const ncclComm* comm, const char* fn);
// Not null when count > 0 (or always when `always`).
ncclResult_t checkPtr(const void* p, const char* arg, const char* fn);
ncclResult_t checkDtype(ncclDataType_t t, const char* fn);
ncclResult_t checkRank(int r, int nranks, const char* arg, const char* fn);

}  // namespace braid
