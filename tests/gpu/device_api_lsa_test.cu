// The load/store-accessible (LSA) device code of nccl_device/ run on one GPU. Two ranks of an LSA team are two
// thread blocks of one kernel, each with its own ncclDevComm; every rank's copy of the windows and of the resource
// buffer is an allocation mapped 4 GiB after the previous rank's in one reserved range, the flat layout
// ncclGetLsaPointer computes in (stride4G 1). Checked: LSA pointers, the LSA barrier (many rounds of
// write-to-peer / sync / read-back, a missing wait shows as a stale value), an nccl-tests-style all-reduce between
// two barriers, and the LL all-to-all (send, bcast, recv, recvReduce, 8- and 16-byte values, many epochs).
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "nccl_device.h"

namespace {

constexpr int kRanks = 2;
constexpr size_t kStride = size_t(1) << 32;  // stride4G = 1
constexpr size_t kCount = 64 * 1024;         // floats per window
// Byte offsets inside each rank's mapping: the resource buffer, then the send and receive windows.
constexpr size_t kResourceOff = 0;
constexpr size_t kSendOff = 1 << 20;
constexpr size_t kRecvOff = 2 << 20;
constexpr size_t kMapBytes = 4 << 20;
// Resource buffer: the LSA barrier at handle 0 (2 barriers), the LL all-to-all at handle 8 (1024 bytes in).
constexpr int kBarriers = 2;
constexpr uint32_t kLlHandle = 8;
constexpr int kLlPerPeer = 4;                 // elements each rank sends to each rank per epoch
constexpr int kLlElts = kRanks * kLlPerPeer;  // the ncclLLA2ASession's maxElts (slot = sender * 4 + e)
constexpr uint32_t kLlSlots = kLlElts * 2;    // ncclLLA2ACalcSlots(kLlElts, 16)
constexpr int kRounds = 40;

// The driver's virtual-memory calls, reached through the runtime so the binary needs no libcuda.so.1 to start
// (test discovery runs it on machines without a driver).
struct Driver {
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) reserve = nullptr;
  decltype(&::cuMemAddressFree) addressFree = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) setAccess = nullptr;
  bool load() {
    return get("cuMemGetAllocationGranularity", &granularity) && get("cuMemAddressReserve", &reserve) &&
           get("cuMemAddressFree", &addressFree) && get("cuMemCreate", &create) && get("cuMemRelease", &release) &&
           get("cuMemMap", &map) && get("cuMemUnmap", &unmap) && get("cuMemSetAccess", &setAccess);
  }

 private:
  template <typename F>
  static bool get(const char* name, F* fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess)
      return false;
    *fn = reinterpret_cast<F>(p);
    return true;
  }
};

#define LSA_CU(call)                                                         \
  do {                                                                       \
    CUresult r_ = (call);                                                    \
    ASSERT_EQ(r_, CUDA_SUCCESS) << #call << " failed: CUresult " << int(r_); \
  } while (0)
#define LSA_CUDA(call)                                                     \
  do {                                                                     \
    cudaError_t e_ = (call);                                               \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)

struct Errors {
  int barrier;    // stale values read after a barrier
  int allReduce;  // wrong all-reduce elements
  int a2a;        // wrong LL all-to-all values
};

__global__ void lsaKernel(const ncclDevComm* comms, ncclWindow_t const* sendWins, ncclWindow_t const* recvWins,
                          Errors* errors) {
  const int r = blockIdx.x;
  const ncclDevComm comm = comms[r];
  const ncclWindow_t sendWin = sendWins[r], recvWin = recvWins[r];
  const ncclTeam lsa = ncclTeamLsa(comm);
  const int peer = 1 - lsa.rank;
  Errors* mine = &errors[r];
  {
    ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), comm, ncclTeamTagLsa(), 0};
    // Barrier rounds: write the round into the peer's receive window, sync, read what the peer wrote here.
    for (int round = 1; round <= kRounds; round++) {
      for (int i = threadIdx.x; i < 1024; i += blockDim.x)
        static_cast<int*>(ncclGetLsaPointer(recvWin, 0, peer))[i] = round * 1000 + lsa.rank;
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
      for (int i = threadIdx.x; i < 1024; i += blockDim.x)
        if (static_cast<int*>(ncclGetLocalPointer(recvWin, 0))[i] != round * 1000 + peer) atomicAdd(&mine->barrier, 1);
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // nobody overwrites before both have read
    }
    // All-reduce as nccl-tests' LSA kernel does: each rank sums its half over the peers' send windows and
    // stores it into every peer's receive window.
    bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
    const size_t half = kCount / kRanks, begin = half * lsa.rank;
    for (size_t i = begin + threadIdx.x; i < begin + half; i += blockDim.x) {
      float sum = 0;
      for (int p = 0; p < lsa.nRanks; p++) sum += static_cast<float*>(ncclGetLsaPointer(sendWin, 0, p))[i];
      for (int p = 0; p < lsa.nRanks; p++) static_cast<float*>(ncclGetLsaPointer(recvWin, 0, p))[i] = sum;
    }
    bar.sync(ncclCoopCta(), cuda::memory_order_release);
  }
  {
    // The second barrier, through ncclBarrierSession's LSA form, then the check of the whole result.
    ncclBarrierSession<ncclCoopCta> bar{ncclCoopCta(), ncclTeamTagLsa(), comm, 1};
    // acq_rel: its arrive releases after this rank's last stores, so the peer's acquire covers them.
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel, ncclGinFenceLevel::Relaxed);
    const float* recv = static_cast<float*>(ncclGetLocalPointer(recvWin, 0));
    for (size_t i = threadIdx.x; i < kCount; i += blockDim.x)
      if (recv[i] != float(3 * (i % 1000)) + 1.0f) atomicAdd(&mine->allReduce, 1);
  }
  {
    ncclLLA2AHandle ll{kLlHandle, kLlSlots};
    ncclLLA2ASession<ncclCoopCta> a2a{ncclCoopCta(), comm, lsa, ll, 0, kLlElts};
    for (int round = 0; round < kRounds; round++) {
      const int e = threadIdx.x;
      if (e < kLlPerPeer) {
        // 16 bytes to the peer, 8 to everyone (self included) through bcast.
        a2a.send(peer, lsa.rank * kLlPerPeer + e, make_int4(round, lsa.rank, e, -round));
      }
      if (e < kLlPerPeer) {
        int4 got = a2a.template recv<int4>(peer * kLlPerPeer + e);
        if (got.x != round || got.y != peer || got.z != e || got.w != -round) atomicAdd(&mine->a2a, 1);
      }
      a2a.endEpoch(ncclCoopCta());
      if (e < kLlPerPeer) a2a.bcast(lsa.rank * kLlPerPeer + e, uint64_t(round) * 100 + lsa.rank * 10 + e);
      if (e < kLlPerPeer) {
        // Both ranks' values for element e sit kLlPerPeer slots apart: their sum.
        uint64_t sum = a2a.template recvReduce<2, uint64_t>(
            e, kRanks, kLlPerPeer, [](uint64_t v) { return v; }, [](uint64_t a, uint64_t b) { return a + b; });
        if (sum != uint64_t(round) * 200 + 10 + 2 * e) atomicAdd(&mine->a2a, 1);
      }
      a2a.endEpoch(ncclCoopCta());
    }
  }
}

// Two ranks' mappings of kMapBytes, kStride apart in one reserved range; released on destruction.
struct FlatLsaRange {
  const Driver* drv = nullptr;
  CUdeviceptr base = 0;
  size_t bytes = 0;
  CUmemGenericAllocationHandle handles[kRanks] = {};
  int mapped = 0;
  ~FlatLsaRange() {
    for (int r = 0; r < mapped; r++) drv->unmap(base + r * kStride, bytes);
    for (CUmemGenericAllocationHandle h : handles)
      if (h != 0) drv->release(h);
    if (base != 0) drv->addressFree(base, kRanks * kStride);
  }
};

ncclWindow_vidmem windowAt(CUdeviceptr base, size_t off, int lsaRank) {
  ncclWindow_vidmem w{};
  w.lsaFlatBase = reinterpret_cast<char*>(base + off);
  w.lsaRank = lsaRank;
  w.worldRank = lsaRank;
  w.stride4G = uint32_t(kStride >> 32);
  return w;
}

TEST(DeviceApiLsa, BarrierAllReduceAndAllToAllOnAFlatLsaRange) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) GTEST_SKIP() << "no GPU visible";
  LSA_CUDA(cudaSetDevice(0));
  LSA_CUDA(cudaFree(nullptr));  // the runtime's primary context is current for the driver calls below
  Driver drv;
  ASSERT_TRUE(drv.load()) << "the CUDA driver's virtual memory calls are not available";
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  LSA_CU(drv.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  FlatLsaRange range;
  range.drv = &drv;
  range.bytes = (kMapBytes + gran - 1) / gran * gran;
  LSA_CU(drv.reserve(&range.base, kRanks * kStride, kStride, 0, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int r = 0; r < kRanks; r++) {
    LSA_CU(drv.create(&range.handles[r], range.bytes, &prop, 0));
    LSA_CU(drv.map(range.base + r * kStride, range.bytes, 0, range.handles[r], 0));
    range.mapped = r + 1;
    LSA_CU(drv.setAccess(range.base + r * kStride, range.bytes, &access, 1));
    LSA_CUDA(cudaMemset(reinterpret_cast<void*>(range.base + r * kStride), 0, range.bytes));
    std::vector<float> send(kCount);
    for (size_t i = 0; i < kCount; i++) send[i] = float((r + 1) * int(i % 1000) + r);
    LSA_CUDA(cudaMemcpy(reinterpret_cast<void*>(range.base + r * kStride + kSendOff), send.data(),
                        kCount * sizeof(float), cudaMemcpyHostToDevice));
  }

  // Per rank: its device communicator and its view (lsaRank) of the two windows, in device memory.
  ncclDevComm comms[kRanks];
  ncclWindow_vidmem wins[2 * kRanks];
  for (int r = 0; r < kRanks; r++) {
    std::memset(&comms[r], 0, sizeof(ncclDevComm));
    comms[r].rank = r;
    comms[r].nRanks = kRanks;
    comms[r].lsaRank = r;
    comms[r].lsaSize = kRanks;
    comms[r].nRanks_rcp32 = comms[r].lsaSize_rcp32 = nccl::utility::idivRcp32(kRanks);
    comms[r].resourceWindow_inlined = windowAt(range.base, kResourceOff, r);
    comms[r].lsaBarrier.bufHandle = 0;
    comms[r].lsaBarrier.nBarriers = kBarriers;
    wins[r] = windowAt(range.base, kSendOff, r);
    wins[kRanks + r] = windowAt(range.base, kRecvOff, r);
  }
  ncclDevComm* dComms = nullptr;
  ncclWindow_vidmem* dWins = nullptr;
  ncclWindow_t* dWinPtrs = nullptr;
  Errors* dErrors = nullptr;
  LSA_CUDA(cudaMalloc(&dComms, sizeof(comms)));
  LSA_CUDA(cudaMalloc(&dWins, sizeof(wins)));
  LSA_CUDA(cudaMalloc(&dWinPtrs, 2 * kRanks * sizeof(ncclWindow_t)));
  LSA_CUDA(cudaMalloc(&dErrors, kRanks * sizeof(Errors)));
  ncclWindow_t winPtrs[2 * kRanks];
  for (int i = 0; i < 2 * kRanks; i++) winPtrs[i] = dWins + i;
  for (int r = 0; r < kRanks; r++) comms[r].resourceWindow = nullptr;  // only the inlined copy is read
  LSA_CUDA(cudaMemcpy(dComms, comms, sizeof(comms), cudaMemcpyHostToDevice));
  LSA_CUDA(cudaMemcpy(dWins, wins, sizeof(wins), cudaMemcpyHostToDevice));
  LSA_CUDA(cudaMemcpy(dWinPtrs, winPtrs, sizeof(winPtrs), cudaMemcpyHostToDevice));
  LSA_CUDA(cudaMemset(dErrors, 0, kRanks * sizeof(Errors)));

  // Both blocks must run at once (each waits for the other): two blocks on one GPU always do. A wait that never
  // ends is a failure after 20 s rather than a hang.
  lsaKernel<<<kRanks, 256>>>(dComms, dWinPtrs, dWinPtrs + kRanks, dErrors);
  LSA_CUDA(cudaGetLastError());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  cudaError_t state;
  while ((state = cudaStreamQuery(nullptr)) == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_NE(state, cudaErrorNotReady) << "the kernel did not finish in 20 s: a barrier or LL wait never ended";
  ASSERT_EQ(state, cudaSuccess) << cudaGetErrorString(state);

  Errors errors[kRanks];
  LSA_CUDA(cudaMemcpy(errors, dErrors, sizeof(errors), cudaMemcpyDeviceToHost));
  for (int r = 0; r < kRanks; r++) {
    EXPECT_EQ(errors[r].barrier, 0) << "rank " << r << ": stale values read after LSA barriers";
    EXPECT_EQ(errors[r].allReduce, 0) << "rank " << r << ": wrong all-reduce elements";
    EXPECT_EQ(errors[r].a2a, 0) << "rank " << r << ": wrong LL all-to-all values";
    // Both ranks' receive windows hold the whole sum (read back through the host too).
    std::vector<float> recv(kCount, -1.0f);
    LSA_CUDA(cudaMemcpy(recv.data(), reinterpret_cast<void*>(range.base + r * kStride + kRecvOff),
                        kCount * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kCount; i++) ASSERT_EQ(recv[i], float(3 * int(i % 1000) + 1)) << "rank " << r << " " << i;
  }
  // The barrier sessions left their epochs in the buffer: barrier 0 ran 2 * kRounds + 2 syncs, barrier 1 one.
  for (int r = 0; r < kRanks; r++) {
    uint32_t words[3 * kBarriers];
    LSA_CUDA(cudaMemcpy(words, reinterpret_cast<void*>(range.base + r * kStride + kResourceOff), sizeof(words),
                        cudaMemcpyDeviceToHost));
    EXPECT_EQ(words[kBarriers + 0], uint32_t(2 * kRounds + 2)) << "rank " << r;
    EXPECT_EQ(words[kBarriers + 1], 1u) << "rank " << r;
  }
  cudaFree(dComms);
  cudaFree(dWins);
  cudaFree(dWinPtrs);
  cudaFree(dErrors);
}

}  // namespace
