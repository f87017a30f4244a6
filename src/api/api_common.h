// Shared plumbing of the C entry points: the BRAID_API macro that defines pnccl<Name> and makes
// ncclName a weak alias of it (as NCCL does, so profilers can interpose), the entry guard that opens an
// error scope and catches everything, and argument checks that record a message naming the argument.
#pragma once

#include <cstring>
#include <exception>
#include <memory>
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
// Taken by reference and read as an int (rawEnumValue): a caller may pass any value.
ncclResult_t checkDtype(const ncclDataType_t& t, const char* fn);

// An enum argument as the int the caller passed, read without loading it as the enum: C callers may pass any
// int, and a bad value is an argument error to report, not undefined behaviour inside the library.
template <typename E>
int rawEnumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "NCCL's enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}
ncclResult_t checkRank(int r, int nranks, const char* arg, const char* fn);

// Takes the windows (ncclCommWindowRegister) that `comm` still has out of the registry; they are freed when the
// returned holder goes. Destroy and abort hold it until the comm is gone: freeing GPU memory waits for the GPU,
// so it must not come before an abort has stopped the comm's kernels.
std::shared_ptr<void> detachCommWindows(const ncclComm* comm);

}  // namespace braid
