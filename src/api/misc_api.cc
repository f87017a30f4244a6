// Entry points that need no communicator work: version, unique id, error strings, last error, debug
// reset, memory allocation, and the argument checks shared by the other API files.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/api_common.h"
#include "core/bootstrap.h"
#include "core/library_info.h"
#include "core/log.h"
#include "core/param.h"

namespace braid {

ncclResult_t checkComm(const ncclComm* comm, const char* fn) {
  if (comm == nullptr) return recordError(ncclInvalidArgument, "%s: comm is NULL", fn);
  if (comm->magic == kCommMagic) return ncclSuccess;
  // A program that holds two NCCL libraries (one loaded by path, Braid by name or preload) can hand Braid a
  // handle the other one made: say so, and name that library, since "invalid" alone hides the cause.
  const std::vector<std::string> others = otherNcclLibraries();
  if (!others.empty()) {
    std::string names;
    for (const auto& o : others) names += (names.empty() ? "" : ", ") + o;
    const std::string own = ownLibraryPath();
    return recordError(ncclInvalidArgument,
                       "%s: comm %p was not created by Braid (%s); this process also has %s loaded, which likely "
                       "created it. Give the program one NCCL library (LD_PRELOAD Braid's libnccl.so.2)",
                       fn, static_cast<const void*>(comm), own.empty() ? "this library" : own.c_str(), names.c_str());
  }
  return recordError(ncclInvalidArgument, "%s: comm %p is not a valid communicator (destroyed or corrupt)", fn,
                     static_cast<const void*>(comm));
}

ncclResult_t checkPtr(const void* p, const char* arg, const char* fn) {
  if (p == nullptr) return recordError(ncclInvalidArgument, "%s: %s is NULL", fn, arg);
  return ncclSuccess;
}

ncclResult_t checkDtype(const ncclDataType_t& t, const char* fn) {
  const int raw = rawEnumValue(t);
  if (raw < 0 || raw >= ncclNumTypes)
    return recordError(ncclInvalidArgument, "%s: datatype %d is invalid (valid: 0..%d)", fn, raw, ncclNumTypes - 1);
  return ncclSuccess;
}

ncclResult_t checkRank(int r, int nranks, const char* arg, const char* fn) {
  if (r < 0 || r >= nranks)
    return recordError(ncclInvalidArgument, "%s: %s %d is out of range (communicator has %d ranks)", fn, arg, r,
                       nranks);
  return ncclSuccess;
}

}  // namespace braid

using namespace braid;

BRAID_API(ncclResult_t, ncclGetVersion, int* version) {
  return apiCall("ncclGetVersion", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(version, "version", "ncclGetVersion"));
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return apiCall("ncclGetUniqueId", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(uniqueId, "uniqueId", "ncclGetUniqueId"));
    return bootstrapGetUniqueId(uniqueId);
  });
}

BRAID_API(const char*, ncclGetErrorString, ncclResult_t result) { return errorString(result); }

BRAID_API(const char*, ncclGetLastError, ncclComm_t comm) {
  // The string must outlive the call: keep a per-thread copy.
  static thread_local std::string copy;
  if (comm != nullptr && comm->magic == kCommMagic) {
    copy = comm->getLastError();
    if (!copy.empty()) return copy.c_str();
  }
  copy = threadLastError();
  return copy.c_str();
}

BRAID_API(void, ncclResetDebugInit, void) { resetLogging(); }

BRAID_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return apiCall("ncclMemAlloc", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(ptr, "ptr", "ncclMemAlloc"));
    if (size == 0) return recordError(ncclInvalidArgument, "ncclMemAlloc: size is 0");
    int ndev = 0;
    // BRAID_HOST_COMM=1 makes every comm a host-buffer comm even beside GPUs: its buffers must be host memory.
    if (params::HostComm() == 0 && cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
      cudaError_t e = cudaMalloc(ptr, size);
      if (e != cudaSuccess)
        return recordError(ncclUnhandledCudaError, "ncclMemAlloc: cudaMalloc(%zu) failed: %s", size,
                           cudaGetErrorString(e));
      return ncclSuccess;
    }
    cudaGetLastError();
    // No GPU (or host comms forced): host memory, page aligned (host communicators use plain host buffers).
    void* p = nullptr;
    if (posix_memalign(&p, 4096, size) != 0)
      return recordError(ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes of host memory", size);
    *ptr = p;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclMemFree, void* ptr) {
  return apiCall("ncclMemFree", nullptr, [&]() -> ncclResult_t {
    if (ptr == nullptr) return ncclSuccess;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
      cudaPointerAttributes attr{};
      if (cudaPointerGetAttributes(&attr, ptr) == cudaSuccess && attr.type == cudaMemoryTypeDevice) {
        cudaError_t e = cudaFree(ptr);
        if (e != cudaSuccess)
          return recordError(ncclUnhandledCudaError, "ncclMemFree: cudaFree failed: %s", cudaGetErrorString(e));
        return ncclSuccess;
      }
      cudaGetLastError();
    }
    free(ptr);
    return ncclSuccess;
  });
}
