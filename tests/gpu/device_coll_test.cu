// GPU tests, one process driving 2 GPUs (ncclCommInitAll + groups): every collective x datatype x op x
// in/out of place over P2P, SHM (NCCL_P2P_DISABLE=1) and sockets (+NCCL_SHM_DISABLE=1); CUDA graph capture
// with 100 replays; stream ordering with user kernels; two communicators used alternately; every rank's bits
// identical. Skips with a reason where fewer than 2 GPUs exist. Failure paths: device_errors_test.cu.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "gpu_harness.h"

using namespace gpu_test;

namespace {

bool finish(Pair& p, const Case& c, bool* hung) { return finishPair(p, c.name(), hung); }

// Seconds since the first call: verbose lines carry it so a slow start (module loading, init) shows apart
// from slow cases.
double sinceStart() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool runCase(Pair& p, const Case& c, bool* hung) {
  if (std::getenv("BRAID_TEST_VERBOSE")) printf("case: %s [%.3f s]\n", c.name().c_str(), sinceStart()), fflush(stdout);
  RankBufs b[2];
  for (int r = 0; r < 2; ++r) {
    GT_CUDA(cudaSetDevice(r));
    if (!prepare(c, r, 2, &b[r])) return false;
  }
  GT_NCCL(ncclGroupStart());
  for (int r = 0; r < 2; ++r) {
    GT_CUDA(cudaSetDevice(r));
    if (!enqueue(c, r, 2, p.comm[r], p.stream[r], b[r])) return false;
  }
  GT_NCCL(ncclGroupEnd());
  if (!finish(p, c, hung)) return false;
  bool ok = true;
  for (int r = 0; r < 2; ++r) {
    GT_CUDA(cudaSetDevice(r));
    ok = check(c, r, 2, &b[r]) && ok;
  }
  return ok;
}

void runAll(const char* p2pDisable, const char* shmDisable, bool quick) {
  EnvScope env;
  if (p2pDisable) env.set("NCCL_P2P_DISABLE", p2pDisable);
  if (shmDisable) env.set("NCCL_SHM_DISABLE", shmDisable);
  Pair p;
  const double t0 = sinceStart();
  ASSERT_TRUE(p.init());
  if (std::getenv("BRAID_TEST_VERBOSE")) printf("init: %.3f s\n", sinceStart() - t0), fflush(stdout);
  int failures = 0, n = 0;
  bool hung = false;
  for (const Case& c : allCases(2, quick)) {
    ++n;
    if (!runCase(p, c, &hung)) {
      ADD_FAILURE() << c.name();
      if (hung || ++failures > 20) break;  // after an abort the comms are gone
    }
  }
  printf("%d cases, %d failed\n", n, failures);
  p.destroy();
}

}  // namespace

TEST(DeviceColl2Gpu, P2p) {
  NEED_GPUS(2);
  runAll(nullptr, nullptr, false);
}
TEST(DeviceColl2Gpu, Shm) {
  NEED_GPUS(2);
  runAll("1", nullptr, true);
}
TEST(DeviceColl2Gpu, Socket) {
  NEED_GPUS(2);
  runAll("1", "1", true);
}

// NCCL_PROTO=Simple (every case on SIMPLE, which the tuner does not pick for small float ops),
// NCCL_PROTO=LL128 (over NVLink the LL128 kernels run float/half/bf16 sums and every copy collective, the
// rest falls back to Simple with a warning; without NVLink everything falls back), and LL128 for all-reduce
// only, so LL128 all-reduces share connections with the other collectives' LL and Simple steps.
TEST(DeviceColl2Gpu, SimpleAndLl128Forced) {
  NEED_GPUS(2);
  for (const char* proto : {"Simple", "LL128", "allreduce:LL128"}) {
    SCOPED_TRACE(std::string("NCCL_PROTO=") + proto);
    EnvScope env;
    env.set("NCCL_PROTO", proto);
    runAll(nullptr, nullptr, false);
  }
}

// NCCL_PROTO=LL: every case runs the LL kernels over P2P (float/half/bf16 sums their own, every other datatype and
// reduction its type's FuncAnyRed kernel, copies the byte kernel); every case checked as above.
TEST(DeviceColl2Gpu, LlForced) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("NCCL_PROTO", "LL");
  runAll(nullptr, nullptr, false);
}

// NCCL_PROTO=LL with P2P off: the LL kernels run through the SHM segments' LL slots in host memory (every
// case checked); with sockets too, through the NET staging FIFOs' LL slots, the proxies shipping each step's
// lines (LL collectives and LL p2p shares alike).
TEST(DeviceColl2Gpu, LlForcedShm) {
  NEED_GPUS(2);
  EnvScope env;
  env.set("NCCL_PROTO", "LL");
  runAll("1", nullptr, true);
  runAll("1", "1", true);
}

// NCCL_ALGO=allreduce:OneShot with each protocol: every all-reduce case (all types and ops, odd counts,
// unaligned, in and out of place) runs the one-shot schedule (LL or LL128 kernels where they exist, else
// Simple); the other collectives are unaffected. BRAID_DEVICE_TUNER=0 runs the tuner-off path of the same
// choice.
TEST(DeviceColl2Gpu, OneShotForced) {
  NEED_GPUS(2);
  for (const char* proto : {"LL", "LL128", "Simple"})
    for (const char* tuner : {"1", "0"}) {
      SCOPED_TRACE(std::string("NCCL_PROTO=") + proto + " BRAID_DEVICE_TUNER=" + tuner);
      EnvScope env;
      env.set("NCCL_ALGO", "allreduce:OneShot");
      env.set("NCCL_PROTO", proto);
      env.set("BRAID_DEVICE_TUNER", tuner);
      runAll(nullptr, nullptr, true);
    }
  // The split form (BRAID_ONESHOT_SPLIT, on by default; channel shares of 128 KiB and more) in four FIFO steps
  // per channel: in and out of place (in place, the receiving CTAs wait on the guard words for their sending
  // CTAs' reads), odd counts, 8-64 MB.
  EnvScope env;
  env.set("NCCL_ALGO", "allreduce:OneShot");
  env.set("NCCL_PROTO", "Simple");
  Pair p;
  ASSERT_TRUE(p.init());
  bool hung = false;
  const Case split[] = {{kAllReduce, ncclFloat32, ncclSum, 2097155, false, 0},
                        {kAllReduce, ncclFloat32, ncclSum, 2097155, true, 0},
                        {kAllReduce, ncclFloat16, ncclSum, 4194307, true, 0},
                        {kAllReduce, ncclInt32, ncclProd, 4194311, true, 0},
                        {kAllReduce, ncclFloat32, ncclSum, 16000001, true, 0},
                        {kAllReduce, ncclFloat32, ncclSum, 16000001, false, 0}};
  for (const Case& c : split) {
    if (hung) break;
    EXPECT_TRUE(runCase(p, c, &hung)) << c.name();
  }
  p.destroy();
}

// 100,000 back-to-back small LL all-reduces into two alternating outputs (flags of 100,000+ steps per
// connection), checked at the end; then one Simple-sized one on the same connections.
// 100,000 back-to-back small LL all-reduces, once from step 0 and once from 150,000 steps before the 32-bit
// flag wrap (BRAID_TEST_STEP_BASE): the first LL operation there runs the cleaning steps, later ones cross
// the wrap. Three inputs with different values rotate (period 3, coprime with the 8 slots), so a stale line
// taken for a current one gives a wrong sum; each checkpoint checks the last three outputs and re-poisons them.
// LL128 runs the same sequence (its 64-bit flags need no cleaning; the rotation still catches a stale line).
// LL from before the wrap also runs through host memory: over SHM, and over sockets (the proxies ship the
// cleaning steps' lines; both FIFOs and proxies start at the base, hostFifoPresetSteps).
TEST(DeviceColl2Gpu, LlManySmallAllReduces) {
  NEED_GPUS(2);
  struct Variant {
    const char* proto;
    const char* base;
    const char* path;
  };
  const Variant variants[] = {{"LL", "0", "P2P"},           {"LL", "4294817296", "P2P"},  // 2^32 - 150000
                              {"LL128", "0", "P2P"},        {"LL128", "4294817296", "P2P"},
                              {"LL", "4294817296", "SHM"},  {"LL", "4294817296", "socket"}};
  for (const Variant& v : variants) {
    const char* proto = v.proto;
    const char* base = v.base;
    SCOPED_TRACE(std::string("NCCL_PROTO=") + proto + " BRAID_TEST_STEP_BASE=" + base + " over " + v.path);
    EnvScope env;
    env.set("NCCL_PROTO", proto);
    env.set("BRAID_TEST_STEP_BASE", base);
    if (std::string(v.path) != "P2P") env.set("NCCL_P2P_DISABLE", "1");
    if (std::string(v.path) == "socket") env.set("NCCL_SHM_DISABLE", "1");
    Pair p;
    ASSERT_TRUE(p.init());
    constexpr int kRot = 3;
    const size_t n = 37;
    float *in[2][kRot], *out[2][kRot];
    auto value = [](int r, int k, size_t i) { return static_cast<float>((r + 1) * 1000 + 100 * k + i); };
    auto poison = [&](int r, int k) { return cudaMemset(out[r][k], 0xff, n * 4); };
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      for (int k = 0; k < kRot; ++k) {
        ASSERT_EQ(cudaMalloc(&in[r][k], n * 4), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&out[r][k], n * 4), cudaSuccess);
        std::vector<float> h(n);
        for (size_t i = 0; i < n; ++i) h[i] = value(r, k, i);
        ASSERT_EQ(cudaMemcpy(in[r][k], h.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(poison(r, k), cudaSuccess);
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    auto checkAll = [&](int it) {
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        for (int k = 0; k < kRot; ++k) {
          std::vector<float> h(n);
          ASSERT_EQ(cudaMemcpy(h.data(), out[r][k], n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(h[i], value(0, k, i) + value(1, k, i)) << "rank " << r << " buffer " << k << " element " << i
                                                             << " at iteration " << it;
          ASSERT_EQ(poison(r, k), cudaSuccess);
        }
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
    };
    bool hung = false;
    const Case small{kAllReduce, ncclFloat32, ncclSum, n, false, 0};
    for (int it = 0; it < 100000 && !hung; ++it) {
      const int k = it % kRot;
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        ASSERT_EQ(ncclAllReduce(in[r][k], out[r][k], n, ncclFloat32, ncclSum, p.comm[r], p.stream[r]), ncclSuccess);
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      if (it % 999 == 998) {  // a multiple of kRot iterations: all three outputs were just written
        if (!finish(p, small, &hung)) FAIL() << "iteration " << it;  // bounded wait
        checkAll(it);
        if (HasFatalFailure()) return;
      }
    }
    // A large LL all-reduce on the same connections afterwards (NCCL_PROTO is still LL).
    EXPECT_TRUE(runCase(p, Case{kAllReduce, ncclFloat32, ncclSum, (size_t(1) << 20) + 3, false, 0}, &hung));
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      for (int k = 0; k < kRot; ++k) cudaFree(in[r][k]), cudaFree(out[r][k]);
    }
    p.destroy();
  }
}

// Send/recv of sizes on both sides of NCCL_P2P_LL_THRESHOLD (16 KiB) in one group, so LL and SIMPLE
// transfers alternate on one connection, 300 rounds with rotating values (a stale LL line or a skipped step
// gives a wrong byte), over P2P and SHM. Each transfer takes channels by its own size (p2p_plan.h): the small
// ones one channel, so 16384 runs LL and 16385 SIMPLE; even rounds add a 512 KiB + 5 transfer over 8 channels
// (65600-byte shares: SIMPLE; in the P2P-LL64K variant, threshold 64 KiB, 7 SIMPLE shares and a last one of
// 65093 bytes LL, one transfer in both protocols). Buffers are
// offset by one byte (the unaligned paths). Over P2P and SHM also from 1,000 steps before LL's 32-bit flag
// wrap (BRAID_TEST_STEP_BASE): the cleaning steps run mid-sequence. Every byte is
// checked, and the byte past each output stays poisoned.
TEST(DeviceColl2Gpu, P2pLlAndSimpleAlternate) {
  NEED_GPUS(2);
  const size_t sizes[] = {1, 16384, 16385, 3, 1000, 0, 12345, (size_t(512) << 10) + 5};
  constexpr int kN = sizeof(sizes) / sizeof(sizes[0]);
  for (const char* variant : {"P2P", "P2P-wrap", "P2P-LL64K", "SHM", "SHM-wrap"}) {
    SCOPED_TRACE(variant);
    EnvScope env;
    const std::string var(variant);
    if (var.rfind("SHM", 0) == 0) env.set("NCCL_P2P_DISABLE", "1");
    if (var.find("-wrap") != std::string::npos) env.set("BRAID_TEST_STEP_BASE", "4294966296");  // 2^32 - 1000
    if (std::string(variant) == "P2P-LL64K") env.set("NCCL_P2P_LL_THRESHOLD", "65536");
    Pair p;
    ASSERT_TRUE(p.init());
    uint8_t *in[2][kN], *out[2][kN];
    auto value = [](int r, int round, int k, size_t i) { return static_cast<uint8_t>(r * 101 + round * 7 + k * 13 + i * 31); };
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      for (int k = 0; k < kN; ++k) {
        ASSERT_EQ(cudaMalloc(&in[r][k], sizes[k] + 2), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&out[r][k], sizes[k] + 2), cudaSuccess);
        ++in[r][k], ++out[r][k];  // unaligned by one byte
      }
    }
    bool hung = false;
    const Case any{kSendRecv, ncclUint8, ncclSum, 1, false, 0};
    for (int round = 0; round < 300 && !hung; ++round) {
      const int nk = round % 2 ? kN - 1 : kN;  // odd rounds leave out the 512 KiB transfer
      for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
        for (int k = 0; k < nk; ++k) {
          std::vector<uint8_t> h(sizes[k] + 1);
          for (size_t i = 0; i < h.size(); ++i) h[i] = value(r, round, k, i);
          ASSERT_EQ(cudaMemcpy(in[r][k], h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaMemset(out[r][k], 0xa5, sizes[k] + 1), cudaSuccess);
        }
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        for (int k = 0; k < nk; ++k) {
          ASSERT_EQ(ncclSend(in[r][k], sizes[k], ncclUint8, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
          ASSERT_EQ(ncclRecv(out[r][k], sizes[k], ncclUint8, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
        }
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
      if (!finish(p, any, &hung)) FAIL() << "round " << round;
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        for (int k = 0; k < nk; ++k) {
          std::vector<uint8_t> h(sizes[k] + 1);
          ASSERT_EQ(cudaMemcpy(h.data(), out[r][k], h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          for (size_t i = 0; i < sizes[k]; ++i)
            ASSERT_EQ(h[i], value(1 - r, round, k, i)) << "rank " << r << " size " << sizes[k] << " byte " << i
                                                       << " round " << round;
          ASSERT_EQ(h[sizes[k]], 0xa5) << "rank " << r << " size " << sizes[k] << ": wrote past the end, round " << round;
        }
      }
    }
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      for (int k = 0; k < kN; ++k) cudaFree(in[r][k] - 1), cudaFree(out[r][k] - 1);
    }
    p.destroy();
  }
}

// A pipeline schedule's step: several large sends and receives to the ring neighbour in one group (the
// 16 and 64 MB ones at 64 channels alone). Two 64 MB transfers each way take 256 blocks, more than 192, within a
// launch's kMaxP2pBlocks (640, dev_work.h). Five each way (388 blocks), every byte
// checked, over P2P and SHM; then the same transfers with rank 1 posting each pair in a group of its own
// (both sides must cut every transfer alike however they group: p2p_plan.h).
TEST(DeviceColl2Gpu, P2pSeveralLargeTransfersInOneGroup) {
  NEED_GPUS(2);
  const size_t sizes[] = {size_t(64) << 20, (size_t(8) << 20) + 3, size_t(1) << 20, 5, (size_t(16) << 20) + 64};
  constexpr int kN = sizeof(sizes) / sizeof(sizes[0]);
  for (const char* variant : {"P2P", "SHM"}) {
    SCOPED_TRACE(variant);
    EnvScope env;
    if (std::string(variant) == "SHM") env.set("NCCL_P2P_DISABLE", "1");
    Pair p;
    ASSERT_TRUE(p.init());
    uint8_t *in[2][kN], *out[2][kN];
    auto value = [](int r, int k, size_t i) { return static_cast<uint8_t>(r * 89 + k * 17 + i * 13 + (i >> 12)); };
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      for (int k = 0; k < kN; ++k) {
        ASSERT_EQ(cudaMalloc(&in[r][k], sizes[k]), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&out[r][k], sizes[k] + 1), cudaSuccess);
        std::vector<uint8_t> h(sizes[k]);
        for (size_t i = 0; i < h.size(); ++i) h[i] = value(r, k, i);
        ASSERT_EQ(cudaMemcpy(in[r][k], h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemset(out[r][k], 0xa5, sizes[k] + 1), cudaSuccess);
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    const Case any{kSendRecv, ncclUint8, ncclSum, 1, false, 0};
    for (bool split : {false, true}) {
      SCOPED_TRACE(split ? "rank 1 in one group per transfer" : "one group");
      // Rank 0 posts everything in one group; rank 1 too, or (split) its first pair there and each further
      // send/receive pair in a group of its own, while rank 0's launches still run.
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        for (int k = 0; k < (r == 1 && split ? 1 : kN); ++k) {
          ASSERT_EQ(ncclSend(in[r][k], sizes[k], ncclUint8, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
          ASSERT_EQ(ncclRecv(out[r][k], sizes[k], ncclUint8, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
        }
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
      for (int k = 1; split && k < kN; ++k) {
        cudaSetDevice(1);
        ASSERT_EQ(ncclGroupStart(), ncclSuccess);
        ASSERT_EQ(ncclSend(in[1][k], sizes[k], ncclUint8, 0, p.comm[1], p.stream[1]), ncclSuccess);
        ASSERT_EQ(ncclRecv(out[1][k], sizes[k], ncclUint8, 0, p.comm[1], p.stream[1]), ncclSuccess);
        ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
      }
      bool hung = false;
      ASSERT_TRUE(finish(p, any, &hung));
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        for (int k = 0; k < kN; ++k) {
          std::vector<uint8_t> h(sizes[k] + 1);
          ASSERT_EQ(cudaMemcpy(h.data(), out[r][k], h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          for (size_t i = 0; i < sizes[k]; ++i)
            ASSERT_EQ(h[i], value(1 - r, k, i)) << "rank " << r << " transfer " << k << " byte " << i;
          ASSERT_EQ(h[sizes[k]], 0xa5) << "rank " << r << " transfer " << k << ": wrote past the end";
          ASSERT_EQ(cudaMemset(out[r][k], 0xa5, sizes[k] + 1), cudaSuccess);  // poisoned for the next pass
        }
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
    }
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      for (int k = 0; k < kN; ++k) cudaFree(in[r][k]), cudaFree(out[r][k]);
    }
    p.destroy();
  }
}

__global__ void setKernel(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}
__global__ void addKernel(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] += v;
}

static bool allEqual(const float* d, size_t n, float v, int rank, const char* what) {
  std::vector<float> h(n);
  GT_CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i)
    if (h[i] != v) {
      fprintf(stderr, "rank %d %s: element %zu is %g, expected %g\n", rank, what, i, h[i], v);
      return false;
    }
  return true;
}

// Spins ~50 us before writing: a collective that began before this kernel ended would read the old values.
// With `release`, it first lets a programmatic dependent launch begin at once (as PDL-aware libraries' kernels
// do), so a Braid kernel launched after it is resident while it spins and only its wait keeps it back.
__global__ void slowSetKernel(float* p, size_t n, float v, int release) {
#if __CUDA_ARCH__ >= 900
  if (release) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const long long t0 = clock64();
  while (clock64() - t0 < 100000) {
  }
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}

// Stream order around and between Braid's kernels, launched as programmatic dependents (BRAID_PDL 1, the
// default, and 3, whose kernels also release their successors early) or plainly (0): a slow user writer that
// releases its successor at once writes the input; an all-reduce reads it; a second, in place, reads the first's
// output; a user kernel adds the rank to it; a send/recv group swaps the results (different on each rank);
// a user kernel bumps what arrived. No host sync in between; every iteration writes new values; sizes run LL,
// LL128 and Simple by the tuner's default choice.
TEST(DeviceColl2Gpu, StreamOrdering) {
  NEED_GPUS(2);
  for (const char* pdl : {"1", "3", "0"}) {
    EnvScope env;
    env.set("BRAID_PDL", pdl);
    Pair p;
    ASSERT_TRUE(p.init());
    for (const size_t n : {size_t{1025}, size_t{(1 << 17) + 1}, size_t{(1 << 22) + 1}}) {
      float *in[2], *out[2];
      for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&in[r], n * 4), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&out[r], n * 4), cudaSuccess);
      }
      for (int iter = 0; iter < 5; ++iter) {
        for (int r = 0; r < 2; ++r) {
          cudaSetDevice(r);
          slowSetKernel<<<64, 256, 0, p.stream[r]>>>(in[r], n, static_cast<float>(r + 1 + iter), 1);
        }
        for (int pass = 0; pass < 2; ++pass) {
          ncclGroupStart();
          for (int r = 0; r < 2; ++r) {
            cudaSetDevice(r);
            ASSERT_EQ(ncclAllReduce(pass == 0 ? in[r] : out[r], out[r], n, ncclFloat32, ncclSum, p.comm[r],
                                    p.stream[r]),
                      ncclSuccess);
          }
          ncclGroupEnd();
        }
        for (int r = 0; r < 2; ++r) {
          cudaSetDevice(r);
          addKernel<<<64, 256, 0, p.stream[r]>>>(out[r], n, static_cast<float>(r + 1));
        }
        ncclGroupStart();
        for (int r = 0; r < 2; ++r) {
          cudaSetDevice(r);
          ASSERT_EQ(ncclSend(out[r], n, ncclFloat32, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
          ASSERT_EQ(ncclRecv(in[r], n, ncclFloat32, 1 - r, p.comm[r], p.stream[r]), ncclSuccess);
        }
        ncclGroupEnd();
        for (int r = 0; r < 2; ++r) {
          cudaSetDevice(r);
          addKernel<<<64, 256, 0, p.stream[r]>>>(in[r], n, 100.0f);
        }
        const float sum = 2.0f * static_cast<float>(3 + 2 * iter);
        for (int r = 0; r < 2; ++r) {
          cudaSetDevice(r);
          ASSERT_EQ(cudaStreamSynchronize(p.stream[r]), cudaSuccess);
          const std::string what = std::string("BRAID_PDL=") + pdl + ", " + std::to_string(n) + " floats, ";
          EXPECT_TRUE(allEqual(out[r], n, sum + static_cast<float>(r + 1), r,
                               (what + "two all-reduces after a slow writer").c_str()));
          EXPECT_TRUE(allEqual(in[r], n, sum + static_cast<float>(2 - r) + 100.0f, r,
                               (what + "the peer's result by send/recv, then a user kernel").c_str()));
        }
      }
      for (int r = 0; r < 2; ++r) {
        cudaSetDevice(r);
        cudaFree(in[r]);
        cudaFree(out[r]);
      }
    }
    p.destroy();
  }
}

// Capture (all-reduce, then a user kernel bumping the input) once; replay 100 times; each replay must
// have run: the last output is the sum of inputs bumped 99 times.
static void graphReplay(size_t n) {
  Pair p;
  ASSERT_TRUE(p.init());
  float *in[2], *out[2];
  cudaGraph_t graph[2];
  cudaGraphExec_t exec[2];
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaMalloc(&in[r], n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out[r], n * 4), cudaSuccess);
    setKernel<<<64, 256, 0, p.stream[r]>>>(in[r], n, static_cast<float>(r + 1));
    ASSERT_EQ(cudaStreamSynchronize(p.stream[r]), cudaSuccess);
  }
  // Warm-up outside capture (connections are set up at init; this checks the path once).
  ncclGroupStart();
  for (int r = 0; r < 2; ++r) ncclAllReduce(in[r], out[r], n, ncclFloat32, ncclSum, p.comm[r], p.stream[r]);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaStreamSynchronize(p.stream[r]), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(p.stream[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
  }
  ncclGroupStart();
  for (int r = 0; r < 2; ++r) ncclAllReduce(in[r], out[r], n, ncclFloat32, ncclSum, p.comm[r], p.stream[r]);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    addKernel<<<64, 256, 0, p.stream[r]>>>(in[r], n, 1.0f);
    ASSERT_EQ(cudaStreamEndCapture(p.stream[r], &graph[r]), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
  }
  for (int it = 0; it < 100; ++it)
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      ASSERT_EQ(cudaGraphLaunch(exec[r], p.stream[r]), cudaSuccess);
    }
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaStreamSynchronize(p.stream[r]), cudaSuccess);
    EXPECT_TRUE(allEqual(out[r], n, 3.0f + 2 * 99, r, "graph replay"));
    cudaGraphExecDestroy(exec[r]);
    cudaGraphDestroy(graph[r]);
    cudaFree(in[r]);
    cudaFree(out[r]);
  }
  p.destroy();
}

// CUDA graph capture of an all-reduce (with user kernels around it) and 100 replays, with each protocol the
// tuner may pick: LL (the one-shot at 300,007 floats), LL128 and Simple, and the tuner's own choice; then the
// ring all-reduce of 16 MiB + 20 bytes, a launch in thread-block clusters (launch_attrs.h), captured.
TEST(DeviceColl2Gpu, GraphReplay) {
  NEED_GPUS(2);
  for (const char* proto : {"", "LL", "LL128", "Simple"}) {
    SCOPED_TRACE(std::string("NCCL_PROTO=") + proto);
    EnvScope env;
    if (*proto) env.set("NCCL_PROTO", proto);
    graphReplay(300007);
    graphReplay(1000);
  }
  EnvScope env;
  env.set("NCCL_PROTO", "Simple");
  env.set("NCCL_ALGO", "allreduce:Ring");
  graphReplay((size_t(1) << 22) + 5);
}

// The ring collectives of 16 MiB and more launch in thread-block clusters (NCCL_CGA_CLUSTER_SIZE, default 4;
// launch_attrs.h), their grid rounded up to whole clusters, the CTAs past the channels returning at once. Here
// with clusters of 3 (64 channels: a grid of 66) and 8 on 64 channels, and of 4 on 13 channels (a grid of 16);
// all-reduce forced onto the ring. Every ring collective, in and out of place, roots 0 and 1, a shifted
// (unaligned) and a half case, every element checked; then the same with clusters off. (That the launches
// really are clustered, both ranks say at init: cluster_gpu_test.cc.)
TEST(DeviceColl2Gpu, ClusteredRingCollectives) {
  NEED_GPUS(2);
  struct Setting {
    const char* cluster;
    const char* channels;
  };
  const size_t n = (size_t(1) << 22) + 5;  // floats: 16 MiB + 20 bytes
  for (const Setting& s : {Setting{"3", "64"}, Setting{"8", "64"}, Setting{"4", "13"}, Setting{"0", "64"}}) {
    SCOPED_TRACE(std::string("NCCL_CGA_CLUSTER_SIZE=") + s.cluster + " channels " + s.channels);
    EnvScope env;
    env.set("NCCL_CGA_CLUSTER_SIZE", s.cluster);
    env.set("NCCL_ALGO", "allreduce:Ring");
    env.set("NCCL_PROTO", "Simple");
    env.set("NCCL_MIN_NCHANNELS", s.channels);  // pinned: the grid is what the comment says
    env.set("NCCL_MAX_NCHANNELS", s.channels);
    Pair p;
    ASSERT_TRUE(p.init());
    std::vector<Case> cases;
    for (Coll c : {kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce})
      for (bool ip : {false, true})
        for (int root : {0, 1}) {
          if (root == 1 && c != kBroadcast && c != kReduce) continue;
          cases.push_back(Case{c, ncclFloat32, ncclSum, n, ip, root});
        }
    Case shifted{kAllReduce, ncclFloat32, ncclSum, n, false, 0};
    shifted.sendShift = 1;
    shifted.recvShift = 3;
    cases.push_back(shifted);
    cases.push_back(Case{kAllReduce, ncclFloat16, ncclSum, 2 * n + 1, true, 0});
    bool hung = false;
    for (const Case& c : cases) {
      if (hung) break;
      EXPECT_TRUE(runCase(p, c, &hung)) << c.name();
    }
    p.destroy();
  }
}

TEST(DeviceColl2Gpu, TwoCommsAlternately) {
  NEED_GPUS(2);
  Pair a, b;
  ASSERT_TRUE(a.init());
  ASSERT_TRUE(b.init());
  bool hung = false;
  for (int i = 0; i < 6 && !hung; ++i) {
    Pair& p = (i % 2) ? b : a;
    EXPECT_TRUE(runCase(p, Case{kAllReduce, ncclFloat32, ncclSum, 100003, false, 0}, &hung)) << "iteration " << i;
  }
  a.destroy();
  b.destroy();
}

// Every rank must get the same bits from an all-reduce (data-parallel replicas must not drift). Random
// non-integer floats, -0/+0 and a pre-multiplied sum with a scalar of 0.1 at sizes the tuner runs as the
// one-shot (small) and as the ring (large); rank 0's output is compared with rank 1's bit for bit.
TEST(DeviceColl2Gpu, RanksGetIdenticalBits) {
  NEED_GPUS(2);
  Pair p;
  ASSERT_TRUE(p.init());
  for (size_t count : {size_t(1000), size_t(1) << 22}) {
    for (int which = 0; which < 4; ++which) {
      SCOPED_TRACE("count " + std::to_string(count) + " op " + std::to_string(which));
      std::vector<float> host[2];
      uint32_t seed = 12345;
      for (int r = 0; r < 2; ++r) {
        host[r].resize(count);
        for (size_t i = 0; i < count; ++i) {
          seed = seed * 1664525u + 1013904223u;
          host[r][i] = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 20.0f;
          if (which == 2 && i % 7 == 0) host[r][i] = (r == 0) ? -0.0f : 0.0f;
        }
      }
      float* buf[2];
      ncclRedOp_t op[2];
      const float scalar = 0.1f;
      for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&buf[r], count * 2 * sizeof(float)), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(buf[r], host[r].data(), count * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        op[r] = which == 0 ? ncclSum : which == 1 ? ncclProd : which == 2 ? ncclMax : ncclNumOps;
        if (which == 3)
          ASSERT_EQ(ncclRedOpCreatePreMulSum(&op[r], const_cast<float*>(&scalar), ncclFloat32,
                                             ncclScalarHostImmediate, p.comm[r]),
                    ncclSuccess);
      }
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
      for (int r = 0; r < 2; ++r)
        ASSERT_EQ(ncclAllReduce(buf[r], buf[r] + count, count, ncclFloat32, op[r], p.comm[r], p.stream[r]),
                  ncclSuccess);
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      std::vector<uint32_t> out[2];
      for (int r = 0; r < 2; ++r) {
        ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(p.stream[r]), cudaSuccess);
        out[r].resize(count);
        ASSERT_EQ(cudaMemcpy(out[r].data(), buf[r] + count, count * sizeof(float), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        if (which == 3) ncclRedOpDestroy(op[r], p.comm[r]);
        cudaFree(buf[r]);
      }
      size_t differ = 0, first = count;
      for (size_t i = 0; i < count; ++i)
        if (out[0][i] != out[1][i]) {
          ++differ;
          if (first == count) first = i;
        }
      EXPECT_EQ(differ, 0u) << "first differing element " << first;
    }
  }
  p.destroy();
}
