// Buffer registration and windows. Braid's collectives need no registration: ncclCommRegister hands back a
// handle that records the range (so Deregister can check it), and ncclCommWindowRegister a window that
// describes the buffer for NCCL's device API as an LSA team of one rank (this one; see device_api.cc), so
// programs that register buffers for ordinary collectives run, and collectives on those buffers work as
// on any other.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

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

constexpr int kKnownWindowFlags = NCCL_WIN_COLL_SYMMETRIC;

// One window given out by ncclCommWindowRegister. `desc` is what the handle points at on a host comm; on a
// GPU comm the handle is a copy of it in the comm's GPU memory, where device code reads it.
struct WindowRecord {
  ncclComm* comm = nullptr;
  void* buff = nullptr;
  size_t size = 0;
  ncclWindow_vidmem desc{};
  ncclWindow_vidmem* devDesc = nullptr;  // cudaMalloc'ed; null on host comms

  WindowRecord() = default;
  WindowRecord(const WindowRecord&) = delete;
  WindowRecord& operator=(const WindowRecord&) = delete;
  ~WindowRecord() {
    if (devDesc != nullptr) cudaFree(devDesc);  // any current device will do: the pointer is unified
  }
  ncclWindow_t handle() { return devDesc != nullptr ? devDesc : &desc; }
};

// The live windows of the process, by handle. A comm's destroy or abort frees those it still has
// (detachCommWindows). The table itself is never destroyed: windows left registered at exit are not freed
// after the CUDA runtime has shut down.
struct WindowTable {
  std::mutex mu;
  std::map<ncclWindow_t, std::unique_ptr<WindowRecord>> byHandle;
};
WindowTable& windows() {
  static WindowTable* table = new WindowTable;
  return *table;
}

// Sets the current device for a scope; the caller's current device is restored on exit.
class CurrentDevice {
 public:
  explicit CurrentDevice(int dev) {
    if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
    if (dev != prev_) cudaSetDevice(dev);
  }
  ~CurrentDevice() {
    if (prev_ >= 0) cudaSetDevice(prev_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int prev_ = -1;
};

ncclResult_t cudaFailure(cudaError_t e, const char* what, int rank) {
  cudaGetLastError();
  return recordError(ncclUnhandledCudaError, "ncclCommWindowRegister: rank %d: %s failed: %s", rank, what,
                     cudaGetErrorString(e));
}

// A GPU comm's window must be memory of that GPU (device or managed): device code of this GPU reads it.
ncclResult_t checkWindowBuffer(const ncclComm* comm, const void* buff) {
  if (comm->hostComm) return ncclSuccess;
  cudaPointerAttributes attr{};
  cudaError_t e = cudaPointerGetAttributes(&attr, buff);
  if (e != cudaSuccess) cudaGetLastError();
  if (e == cudaSuccess && attr.type == cudaMemoryTypeManaged) return ncclSuccess;
  if (e != cudaSuccess || attr.type != cudaMemoryTypeDevice)
    return recordError(ncclInvalidArgument,
                       "ncclCommWindowRegister: rank %d: buff %p is not GPU memory (allocate it with ncclMemAlloc "
                       "or cudaMalloc)",
                       comm->rank, buff);
  if (attr.device != comm->cudaDev)
    return recordError(ncclInvalidArgument,
                       "ncclCommWindowRegister: rank %d: buff %p is memory of GPU %d, the communicator's GPU is %d",
                       comm->rank, buff, attr.device, comm->cudaDev);
  return ncclSuccess;
}

ncclResult_t makeWindow(ncclComm* comm, void* buff, size_t size, std::unique_ptr<WindowRecord>* out) {
  auto rec = std::make_unique<WindowRecord>();
  rec->comm = comm;
  rec->buff = buff;
  rec->size = size;
  // An LSA team of one: this rank's copy is the buffer itself, at LSA index 0.
  rec->desc.winHost = rec.get();
  rec->desc.lsaFlatBase = static_cast<char*>(buff);
  rec->desc.lsaRank = 0;
  rec->desc.worldRank = comm->rank;
  rec->desc.stride4G = 0;
  if (!comm->hostComm) {
    CurrentDevice dev(comm->cudaDev);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, sizeof(ncclWindow_vidmem));
    if (e != cudaSuccess) return cudaFailure(e, "cudaMalloc of the window descriptor", comm->rank);
    rec->devDesc = static_cast<ncclWindow_vidmem*>(p);
    e = cudaMemcpy(rec->devDesc, &rec->desc, sizeof(ncclWindow_vidmem), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return cudaFailure(e, "cudaMemcpy of the window descriptor", comm->rank);
  }
  *out = std::move(rec);
  return ncclSuccess;
}
}  // namespace

std::shared_ptr<void> detachCommWindows(const ncclComm* comm) {
  auto gone = std::make_shared<std::vector<std::unique_ptr<WindowRecord>>>();
  WindowTable& table = windows();
  std::lock_guard<std::mutex> lock(table.mu);
  for (auto it = table.byHandle.begin(); it != table.byHandle.end();) {
    if (it->second->comm == comm) {
      gone->push_back(std::move(it->second));
      it = table.byHandle.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}
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
    static const char* fn = "ncclCommWindowRegister";
    BRAID_CHECK(checkComm(comm, fn));
    CommUse use(comm);
    BRAID_CHECK(checkInitDone(comm, fn));
    BRAID_CHECK(checkPtr(win, "win", fn));
    if ((winFlags & ~kKnownWindowFlags) != 0)
      return recordError(ncclInvalidArgument, "%s: winFlags 0x%x has unknown bits (known: NCCL_WIN_COLL_SYMMETRIC)", fn,
                         static_cast<unsigned>(winFlags));
    // As NCCL: an empty range registers nothing and yields a NULL window, which Deregister accepts.
    if (size == 0) {
      *win = nullptr;
      return ncclSuccess;
    }
    BRAID_CHECK(checkPtr(buff, "buff", fn));
    BRAID_CHECK(checkWindowBuffer(comm, buff));
    std::unique_ptr<WindowRecord> rec;
    BRAID_CHECK(makeWindow(comm, buff, size, &rec));
    ncclWindow_t handle = rec->handle();
    WindowTable& table = windows();
    std::lock_guard<std::mutex> lock(table.mu);
    table.byHandle[handle] = std::move(rec);
    *win = handle;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return apiCall("ncclCommWindowDeregister", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommWindowDeregister"));
    if (win == nullptr) return ncclSuccess;
    std::unique_ptr<WindowRecord> rec;
    {
      WindowTable& table = windows();
      std::lock_guard<std::mutex> lock(table.mu);
      auto it = table.byHandle.find(win);
      if (it == table.byHandle.end())
        return recordError(ncclInvalidArgument,
                           "ncclCommWindowDeregister: win %p is not a window of ncclCommWindowRegister (or was "
                           "deregistered already)",
                           static_cast<void*>(win));
      if (it->second->comm != comm)
        return recordError(ncclInvalidArgument,
                           "ncclCommWindowDeregister: win %p was registered on another communicator",
                           static_cast<void*>(win));
      rec = std::move(it->second);
      table.byHandle.erase(it);
    }
    return ncclSuccess;  // rec frees the descriptor here, outside the lock
  });
}
