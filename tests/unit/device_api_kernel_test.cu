// NCCL 2.28.9's device API as a program written against it uses it, compiled by nvcc on a machine without a
// GPU: a kernel of the shape nccl-tests' LSA all-reduce has (teams, an ncclLsaBarrierSession, LSA pointer
// arithmetic, ncclSymPtr, an LL all-to-all, cooperative broadcasts, and the GIN and multicast calls that
// trap) must compile for float, half and bf16; the layouts are checked at compile time; the team arithmetic
// and the window pointer arithmetic run on the host against brute force.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <vector>

#include "nccl_device.h"

// The C++-only types of the device API (NCCL 2.28.9 sizes on LP64). The C structs are checked in the header.
static_assert(sizeof(ncclDevComm) == 200 && offsetof(ncclDevComm, resourceWindow_inlined) == 40 &&
                  offsetof(ncclDevComm, ginSignalShadows) == 192,
              "ncclDevComm layout");
static_assert(sizeof(ncclWindow_vidmem) == 72 && offsetof(ncclWindow_vidmem, ginWins) == 40, "window layout");
static_assert(sizeof(ncclDevCommRequirements) == 56 && offsetof(ncclDevCommRequirements, ginForceEnable) == 40,
              "requirements layout");
static_assert(sizeof(ncclSymPtr<char>) == 16 && sizeof(ncclSymPtr<double>) == 16, "ncclSymPtr layout");
static_assert(sizeof(ncclGin) == 32, "ncclGin layout");
static_assert(sizeof(ncclCoopWarpSpan) == 4 && sizeof(ncclCoopLanes) == 4, "coop layouts");
static_assert(sizeof(ncclGinDescriptorSmem) == 64 && alignof(ncclGinDescriptorSmem) == 16, "GIN descriptor");

// The LSA all-reduce of nccl-tests (-D 1), with the rest of the device API exercised around it. Compiling it (the
// explicit instantiations below) is the check; tests/gpu/device_api_lsa_test.cu runs the LSA code on a GPU.
template <typename T>
__global__ void lsaAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset, ncclWindow_t recvwin, size_t recvoffset,
                                   size_t count, bool useGin, ncclDevComm devComm) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm, ncclTeamLsa(devComm), devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
  const int rank = devComm.rank, nRanks = devComm.nRanks;
  const size_t chunk = (count + nRanks - 1) / nRanks;
  const size_t begin = chunk * rank, end = begin + chunk < count ? begin + chunk : count;
  for (size_t i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += gridDim.x * blockDim.x) {
    float sum = 0;
    for (int peer = 0; peer < devComm.lsaSize; peer++) {
      sum += float(static_cast<T*>(ncclGetLsaPointer(sendwin, sendoffset, peer))[i]);
    }
    for (int peer = 0; peer < devComm.lsaSize; peer++) {
      static_cast<T*>(ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = T(sum);
    }
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);

  // Teams and symmetric pointers.
  ncclTeam world = ncclTeamWorld(devComm), lsa = ncclTeamLsa(devComm), rail = ncclTeamRail(devComm);
  ncclSymPtr<T> p(recvwin, recvoffset);
  p += threadIdx.x;
  T* mine = p.localPtr();
  T* peers = (p + 1).peerPtr(rail, ncclTeamRankToTeam(rail, world, rank));
  if (ncclTeamRankIsMember(lsa, world, (rank + 1) % nRanks)) *mine = *peers;
  *static_cast<T*>(ncclGetPeerPointer(recvwin, recvoffset, ncclTeamRankToWorld(devComm, lsa, 0))) = T(1.0f);

  // The same barrier named by its tag, inside ncclBarrierSession; an LL all-to-all over the LSA team.
  {
    ncclBarrierSession<ncclCoopCta> lsaOnly{ncclCoopCta(), ncclTeamTagLsa(), devComm, blockIdx.x};
    lsaOnly.sync(ncclCoopCta(), cuda::memory_order_acq_rel, ncclGinFenceLevel::Relaxed);
  }
  {
    ncclLLA2AHandle handle{0, 64};
    ncclLLA2ASession<ncclCoopWarp> a2a{ncclCoopWarp(), devComm, lsa, handle, blockIdx.x, 32};
    a2a.send((lsa.rank + 1) % lsa.nRanks, threadIdx.x % 32, *mine);
    a2a.bcast(threadIdx.x % 32, make_float2(1.0f, 2.0f));
    T got = a2a.template recv<T>(threadIdx.x % 32);
    float total = a2a.template recvReduce<4, float>(
        0, lsa.nRanks, 1, [](float v) { return v; }, [](float a, float b) { return a + b; });
    a2a.endEpoch(ncclCoopWarp());
    *mine = T(float(got) + total);
  }
  int span = ncclCoopBcast(ncclCoopWarpSpan(0, 2, 3), int(threadIdx.x), 5);
  int warp = ncclCoopBcast(ncclCoopWarp(), span, 7);
  int lanes = ncclCoopBcast(ncclCoopLanes(0x0000ffffu), warp, 2);
  *mine = T(float(lanes + ncclTeamRankInDifference(world, lsa, 0)));

  // Present but trapping on Braid: GPU-initiated networking and multicast.
  if (useGin) {
    ncclGin gin{devComm, 0};
    uint64_t before = gin.readSignal(blockIdx.x);
    ncclBarrierSession<ncclCoopCta> all{ncclCoopCta(), ncclTeamTagWorld(), gin, blockIdx.x};
    all.sync(ncclCoopCta(), cuda::memory_order_acquire, ncclGinFenceLevel::Relaxed);
    gin.put(world, (rank + 1) % nRanks, recvwin, recvoffset, sendwin, sendoffset, sizeof(T),
            ncclGin_SignalInc{blockIdx.x});
    gin.waitSignal(ncclCoopCta(), blockIdx.x, before + 1);
    gin.flush(ncclCoopCta());
    *static_cast<T*>(ncclGetLsaMultimemPointer(recvwin, recvoffset, devComm)) = *mine;
  }
}

template __global__ void lsaAllReduceKernel<float>(ncclWindow_t, size_t, ncclWindow_t, size_t, size_t, bool,
                                                   ncclDevComm);
template __global__ void lsaAllReduceKernel<half>(ncclWindow_t, size_t, ncclWindow_t, size_t, size_t, bool,
                                                  ncclDevComm);
template __global__ void lsaAllReduceKernel<__nv_bfloat16>(ncclWindow_t, size_t, ncclWindow_t, size_t, size_t, bool,
                                                           ncclDevComm);

namespace {

// World ranks of a team as seen from world rank `me` (teams are arithmetic progressions through `me`).
std::vector<int> worldRanks(ncclTeam t, int me) {
  std::vector<int> out;
  for (int r = 0; r < t.nRanks; r++) out.push_back(me + (r - t.rank) * t.stride);
  return out;
}

ncclDevComm devCommOf(int rank, int nRanks, int lsaSize) {
  ncclDevComm c{};
  c.rank = rank;
  c.nRanks = nRanks;
  c.lsaSize = lsaSize;
  c.lsaRank = rank % lsaSize;
  c.nRanks_rcp32 = nccl::utility::idivRcp32(nRanks);
  c.lsaSize_rcp32 = nccl::utility::idivRcp32(lsaSize);
  return c;
}

// Every world size up to 12, every LSA size dividing it, every rank: the built-in teams hold the right world
// ranks, and rank conversion, membership and set difference agree with brute force over those sets.
TEST(DeviceApiKernel, TeamArithmeticMatchesBruteForce) {
  int checked = 0;
  for (int n = 1; n <= 12; n++) {
    for (int lsaSize = 1; lsaSize <= n; lsaSize++) {
      if (n % lsaSize != 0) continue;
      for (int me = 0; me < n; me++) {
        ncclDevComm c = devCommOf(me, n, lsaSize);
        ncclTeam world = ncclTeamWorld(c), lsa = ncclTeamLsa(c), rail = ncclTeamRail(c);
        std::vector<int> lsaWant, railWant, worldWant;
        for (int r = 0; r < n; r++) {
          worldWant.push_back(r);
          if (r / lsaSize == me / lsaSize) lsaWant.push_back(r);
          if (r % lsaSize == me % lsaSize) railWant.push_back(r);
        }
        ASSERT_EQ(worldRanks(world, me), worldWant);
        ASSERT_EQ(worldRanks(lsa, me), lsaWant) << "n " << n << " lsa " << lsaSize << " rank " << me;
        ASSERT_EQ(worldRanks(rail, me), railWant) << "n " << n << " lsa " << lsaSize << " rank " << me;
        // lsa and rail are world's inner and outer factors.
        ncclTeam inner = ncclTeamInnerFactor(world, lsaSize), outer = ncclTeamOuterFactor(world, lsaSize);
        ASSERT_EQ(worldRanks(inner, me), lsaWant);
        ASSERT_EQ(worldRanks(outer, me), railWant);
        const ncclTeam teams[] = {world, lsa, rail};
        for (const ncclTeam& a : teams) {
          for (const ncclTeam& b : teams) {
            std::vector<int> aw = worldRanks(a, me), bw = worldRanks(b, me);
            for (int br = 0; br < b.nRanks; br++) {
              const int w = bw[br];
              int aIndex = -1;
              for (int ar = 0; ar < a.nRanks; ar++)
                if (aw[ar] == w) aIndex = ar;
              ASSERT_EQ(ncclTeamRankIsMember(a, b, br), aIndex >= 0) << "world rank " << w;
              if (aIndex >= 0) ASSERT_EQ(ncclTeamRankToTeam(a, b, br), aIndex);
              ASSERT_EQ(ncclTeamRankToWorld(c, b, br), w);
              for (int l = 0; l < (int)lsaWant.size(); l++)
                if (lsaWant[l] == w) ASSERT_EQ(ncclTeamRankToLsa(c, b, br), l) << "world rank " << w;
            }
          }
          // world minus a team, in world order.
          const std::vector<int> members = worldRanks(a, me);
          std::set<int> in(members.begin(), members.end());
          std::vector<int> diff;
          for (int r = 0; r < n; r++)
            if (!in.count(r)) diff.push_back(r);
          for (int i = 0; i < (int)diff.size(); i++) ASSERT_EQ(ncclTeamRankInDifference(world, a, i), diff[i]);
          checked++;
        }
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// Rank i's copy of a window lies i * stride4G * 4 GiB past the flat base; the local one at lsaRank.
TEST(DeviceApiKernel, WindowPointerArithmetic) {
  ncclWindow_vidmem w{};
  w.lsaFlatBase = reinterpret_cast<char*>(uintptr_t(0x7f0000000000ull));
  w.stride4G = 3;
  w.lsaRank = 2;
  for (int i = 0; i < 8; i++) {
    const uintptr_t want = 0x7f0000000000ull + uintptr_t(i) * 3 * (uintptr_t(1) << 32) + 4096 + 5;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(braidWindowLsaCopy(&w, 4096 + 5, i)), want) << i;
  }
  // A resource handle counts 128-byte units.
  EXPECT_EQ(ncclGetResourceBufferOffset(3), 384u);
  // Symmetric pointers count elements.
  ncclSymPtr<double> p(&w, 64);
  ncclSymPtr<double> q = p + 5;
  EXPECT_EQ(q.offset, 64u + 40u);
  EXPECT_EQ(q - p, 5);
  q -= 2;
  EXPECT_EQ(q.offset, 64u + 24u);
  EXPECT_TRUE(q != p);
  EXPECT_TRUE((q - 3) == p);
  ncclSymPtr<char> bytes = q;
  EXPECT_EQ(bytes.offset, q.offset);
  EXPECT_EQ(bytes.window, &w);
}

}  // namespace
