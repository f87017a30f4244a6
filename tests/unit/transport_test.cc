// Transports exercised directly (no ConnectionManager): setup/connect handshakes, data pumped through the
// ConnInfo FIFO protocol for many steps (slot wrap-around, sizes 0..stepBytes) over SHM and over sockets
// (1 and 2 sockets per peer), the /dev/shm-too-small error, and peer failure setting errorFlag.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <fstream>
#include <sstream>
#include <signal.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/result.h"
#include "core/socket.h"
#include "transport/host_fifo.h"
#include "transport/net/net_backend.h"
#include "transport/net/net_internal.h"
#include "transport/net/net_proxy.h"
#include "transport/net/proxy_affinity.h"
#include "transport/net/net_socket.h"
#include "transport/shm/shm_internal.h"
#include "transport_test_util.h"

namespace braid {
namespace {

using testutil::TestRank;

using testutil::connectPair;
using testutil::EnvVar;

int countShmSegmentsOfThisProcess() {
  std::string prefix = "braid-" + std::to_string(getpid()) + "-";
  int n = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
    closedir(d);
  }
  return n;
}

TEST(HostFifo, StepBytes) {
  EXPECT_EQ(hostFifoStepBytes(4 << 20, 8), 512u << 10);
  EXPECT_EQ(hostFifoStepBytes(0, 8), 4096u);
  EXPECT_EQ(hostFifoStepBytes(1000, 8), 4096u);
  EXPECT_EQ(hostFifoStepBytes(8 * 4097, 8), 8192u);
  // Huge NCCL_BUFFSIZE: steps stay below 1 GiB, so a full step's size never sets kStepLastOfMessage (bit 30).
  EXPECT_EQ(hostFifoStepBytes(size_t(64) << 30, 8), (1u << 30) - 4096u);
  EXPECT_EQ(static_cast<int32_t>(hostFifoStepBytes(size_t(64) << 30, 8)) & kStepLastOfMessage, 0);
  EXPECT_EQ(hostFifoBytes(8, 4096), 4096u + 8 * 4096);
}

TEST(ShmTransport, CanConnectFollowsHostAndEnv) {
  TestRank a(0), b(1);
  Transport* t = shmTransport();
  EXPECT_TRUE(t->canConnect(a.info, b.info));
  b.info.hostHash ^= 1;
  EXPECT_FALSE(t->canConnect(a.info, b.info));
  EXPECT_FALSE(t->canConnect(b.info, a.info));
  b.info.hostHash ^= 1;
  EnvVar off("NCCL_SHM_DISABLE", "1");
  EXPECT_FALSE(t->canConnect(a.info, b.info));
}

TEST(ShmTransport, PumpSmallStepsManyWraps) {
  TestRank a(0), b(1);
  Connector s, r;
  connectPair(shmTransport(), a, b, 0, 64 << 10, &s, &r);
  EXPECT_EQ(s.info.kind, TransportKind::Shm);
  EXPECT_EQ(s.info.nSteps, 8u);
  EXPECT_EQ(s.info.stepBytes, 8192u);
  EXPECT_EQ(s.info.buff, s.info.buff) << "mapped";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.info.buff) % 4096, 0u);
  EXPECT_EQ(testutil::pump(s.info, r.info, 1, 4000), "");
}

TEST(ShmTransport, PumpDefaultBuffer) {
  TestRank a(0), b(1);
  Connector s, r;
  connectPair(shmTransport(), a, b, 3, 4 << 20, &s, &r);
  EXPECT_EQ(s.info.stepBytes, 512u << 10);
  EXPECT_EQ(testutil::pump(s.info, r.info, 2, 120), "");
}

TEST(ShmTransport, SelfConnection) {
  TestRank a(0);
  Connector s, r;
  connectPair(shmTransport(), a, a, 0, 64 << 10, &s, &r);
  EXPECT_EQ(testutil::pump(s.info, r.info, 3, 500), "");
}

TEST(ShmTransport, NamesUnlinkedOnceMapped) {
  int before = countShmSegmentsOfThisProcess();
  TestRank a(0), b(1);
  {
    Connector s, r;
    s.ctx = &a.ctx;
    r.ctx = &b.ctx;
    ConnectHandle hs, hr;
    ASSERT_EQ(shmTransport()->setup(Direction::Recv, b.info, a.info, 0, 64 << 10, &r, &hr), ncclSuccess);
    ASSERT_EQ(shmTransport()->setup(Direction::Send, a.info, b.info, 0, 64 << 10, &s, &hs), ncclSuccess);
    EXPECT_EQ(countShmSegmentsOfThisProcess(), before + 1);
    ASSERT_EQ(shmTransport()->connect(Direction::Send, hr, &s), ncclSuccess);
    EXPECT_EQ(countShmSegmentsOfThisProcess(), before) << "the sender unlinks the name after mapping";
    ASSERT_EQ(shmTransport()->connect(Direction::Recv, hs, &r), ncclSuccess);
  }
  {
    // A receiver whose sender never came still removes its name.
    Connector r;
    r.ctx = &b.ctx;
    ConnectHandle hr;
    ASSERT_EQ(shmTransport()->setup(Direction::Recv, b.info, a.info, 0, 64 << 10, &r, &hr), ncclSuccess);
    EXPECT_EQ(countShmSegmentsOfThisProcess(), before + 1);
  }
  EXPECT_EQ(countShmSegmentsOfThisProcess(), before);
}

// What a survivor runs for a peer found dead during setup: that pid's names go, and only those (pid 12's
// sweep must spare pid 123's segments).
TEST(ShmTransport, UnlinkSegmentsOfRemovesOnlyThatPidsNames) {
  ShmSegment mine;
  ASSERT_EQ(ShmSegment::create(4096, 1, &mine), ncclSuccess);
  const std::string other = "/braid-" + std::to_string(getpid()) + "0-0-unlinktest";
  int fd = shm_open(other.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << strerror(errno);
  close(fd);
  EXPECT_GE(countShmSegmentsOfThisProcess(), 1);
  EXPECT_GE(unlinkSegmentsOf(getpid()), 1);
  EXPECT_EQ(countShmSegmentsOfThisProcess(), 0);
  EXPECT_NE(mine.base(), nullptr) << "the mapping outlives its name";
  fd = shm_open(other.c_str(), O_RDWR, 0);
  EXPECT_GE(fd, 0) << "another pid's segment was removed";
  if (fd >= 0) close(fd);
  shm_unlink(other.c_str());
  EXPECT_EQ(unlinkSegmentsOf(0), 0);
}

// A GPU communicator's segment goes on its GPU's NUMA node: the pages land on the node asked for (here the
// machine's last online node), and the thread's own policy is back afterwards.
TEST(ShmTransport, SegmentPagesLandOnTheNodeAsked) {
  int last = 0;
  if (FILE* f = fopen("/sys/devices/system/node/online", "r")) {
    char buf[256] = {};
    if (fgets(buf, sizeof(buf), f)) {
      const char* p = buf;
      for (const char* q = buf; *q; ++q)
        if (*q == ',' || *q == '-') p = q + 1;
      last = atoi(p);
    }
    fclose(f);
  }
  int modeBefore = -1;
  ASSERT_EQ(syscall(SYS_get_mempolicy, &modeBefore, nullptr, 0ul, nullptr, 0ul), 0) << strerror(errno);
  ShmSegment seg;
  const size_t bytes = size_t(4) << 20;
  ASSERT_EQ(ShmSegment::create(bytes, 1, &seg, last), ncclSuccess) << pendingError();
  static_cast<volatile char*>(seg.base())[0] = 1;  // mapped in this process (the pages were reserved already)
  if (pageNumaNode(seg.base()) < 0) GTEST_SKIP() << "get_mempolicy does not report page nodes here";
  for (size_t off : {size_t(0), bytes / 2, bytes - 4096}) {
    static_cast<volatile char*>(seg.base())[off] = 1;
    EXPECT_EQ(pageNumaNode(static_cast<char*>(seg.base()) + off), last) << "page at " << off;
  }
  int modeAfter = -1;
  ASSERT_EQ(syscall(SYS_get_mempolicy, &modeAfter, nullptr, 0ul, nullptr, 0ul), 0);
  EXPECT_EQ(modeAfter, modeBefore);
  EXPECT_EQ(gpuNumaNode(-1), -1);
  EXPECT_EQ(gpuNumaNode(int64_t(0xfff) << 20), -1) << "a bus id with no device";
}

TEST(ShmTransport, TooLargeSegmentGivesClearError) {
  clearPendingError();
  ShmSegment seg;
  ncclResult_t r = ShmSegment::create(1ull << 50, 5, &seg);
  EXPECT_EQ(r, ncclSystemError);
  const std::string& msg = pendingError();
  EXPECT_NE(msg.find("/dev/shm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1125899906842624"), std::string::npos) << msg;
  EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 5"), std::string::npos) << msg;
  EXPECT_EQ(seg.base(), nullptr);
  clearPendingError();
}

TEST(ShmTransport, ErrorFlagIsShared) {
  TestRank a(0), b(1);
  Connector s, r;
  connectPair(shmTransport(), a, b, 0, 64 << 10, &s, &r);
  __atomic_store_n(r.info.errorFlag, 1u, __ATOMIC_RELEASE);
  EXPECT_EQ(__atomic_load_n(s.info.errorFlag, __ATOMIC_ACQUIRE), 1u);
}

// SHM segments end with LL slots that both sides see (GPU communicators run LL through them): the receiver's
// and the sender's views point at the same zeroed memory after the data, one slot per step.
TEST(ShmTransport, LlSlotsShared) {
  TestRank a(0), b(1);
  a.ctx.llSlots = b.ctx.llSlots = true;  // as GPU communicators set it
  Connector s, r;
  connectPair(shmTransport(), a, b, 0, 64 << 10, &s, &r);
  ASSERT_NE(s.info.llBuff, nullptr);
  ASSERT_NE(r.info.llBuff, nullptr);
  EXPECT_EQ(s.info.llSlotBytes, kShmLlSlotBytes);
  EXPECT_EQ(r.info.llSlotBytes, kShmLlSlotBytes);
  // After the data, in the receiver's segment.
  EXPECT_EQ(r.info.llBuff, r.info.buff + static_cast<size_t>(r.info.nSteps) * r.info.stepBytes);
  const size_t bytes = static_cast<size_t>(r.info.nSteps) * kShmLlSlotBytes;
  for (size_t i = 0; i < bytes; i += 4096) EXPECT_EQ(r.info.llBuff[i], 0) << i;
  for (uint32_t k = 0; k < s.info.nSteps; ++k) {
    const size_t at = static_cast<size_t>(k) * kShmLlSlotBytes + kShmLlSlotBytes - 16;
    __atomic_store_n(reinterpret_cast<uint64_t*>(s.info.llBuff + at), 0x1234000000000000ull + k, __ATOMIC_RELEASE);
    EXPECT_EQ(__atomic_load_n(reinterpret_cast<uint64_t*>(r.info.llBuff + at), __ATOMIC_ACQUIRE),
              0x1234000000000000ull + k);
  }
  // Host communicators' segments have none (no /dev/shm spent on slots nobody reads).
  TestRank c(0), d(1);
  Connector hs, hr;
  connectPair(shmTransport(), c, d, 0, 64 << 10, &hs, &hr);
  EXPECT_EQ(hs.info.llBuff, nullptr);
  EXPECT_EQ(hr.info.llBuff, nullptr);
}

// BRAID_TEST_STEP_BASE (tests only) starts a GPU communicator's SHM segment at that step, seen by both sides,
// so the GPU tests can run LL's flag wrap over SHM; host communicators' segments stay at 0 (their executors
// start at 0).
TEST(ShmTransport, TestStepBasePresetsGpuSegments) {
  EnvVar stepBase("BRAID_TEST_STEP_BASE", "4294967000");
  TestRank a(0), b(1);
  a.ctx.llSlots = b.ctx.llSlots = true;
  Connector s, r;
  connectPair(shmTransport(), a, b, 0, 64 << 10, &s, &r);
  for (const Connector* side : {&s, &r}) {
    EXPECT_EQ(loadAcquire(side->info.head), 4294967000ull);
    EXPECT_EQ(loadAcquire(side->info.tail), 4294967000ull);
  }
  ConnInfo si = s.info, ri = r.info;
  si.step = ri.step = 4294967000ull;  // the executors' counters start there too
  EXPECT_EQ(testutil::pump(si, ri, 3, 400), "");
  TestRank c(0), d(1);
  Connector hs, hr;
  connectPair(shmTransport(), c, d, 0, 64 << 10, &hs, &hr);
  EXPECT_EQ(loadAcquire(hs.info.head), 0u);
  EXPECT_EQ(loadAcquire(hr.info.tail), 0u);
  // A negative base presets nothing (the GPU side starts at 0 then too).
  EnvVar negative("BRAID_TEST_STEP_BASE", "-5");
  TestRank e(0), f(1);
  e.ctx.llSlots = f.ctx.llSlots = true;
  Connector ns, nr;
  connectPair(shmTransport(), e, f, 0, 64 << 10, &ns, &nr);
  EXPECT_EQ(loadAcquire(ns.info.head), 0u);
  EXPECT_EQ(loadAcquire(nr.info.tail), 0u);
}

TEST(NetSocket, Partition) {
  size_t off[kNetMaxSocks], len[kNetMaxSocks];
  for (int socks : {1, 2, 3, 16}) {
    for (size_t size : {size_t(0), size_t(1), size_t(4096), kNetMinPart * 2 - 1, kNetMinPart * 2, size_t(512 << 10),
                        size_t(1000003)}) {
      netSocketPartition(size, socks, off, len);
      size_t covered = 0;
      for (int i = 0; i < socks; i++) {
        if (len[i] == 0) continue;
        EXPECT_EQ(off[i], covered) << size << " over " << socks;
        covered += len[i];
      }
      EXPECT_EQ(covered, size) << size << " over " << socks;
      if (size < 2 * kNetMinPart) EXPECT_EQ(len[0], size);
    }
  }
  netSocketPartition(512 << 10, 2, off, len);
  EXPECT_EQ(len[0], 256u << 10);
  EXPECT_EQ(len[1], 256u << 10);
}

TEST(NetTransport, PumpOneSocketSmallSteps) {
  EnvVar socks("BRAID_NSOCKS_PERPEER", "1");
  TestRank a(0), b(1);
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &s, &r);
  EXPECT_EQ(s.info.kind, TransportKind::Net);
  EXPECT_NE(s.info.buff, r.info.buff) << "each side has its own FIFO";
  EXPECT_EQ(testutil::pump(s.info, r.info, 4, 3000), "");
}

TEST(NetTransport, PumpOneSocketDefaultBuffer) {
  EnvVar socks("BRAID_NSOCKS_PERPEER", "1");
  TestRank a(0), b(1);
  Connector s, r;
  connectPair(netTransport(), a, b, 1, 4 << 20, &s, &r);
  EXPECT_EQ(testutil::pump(s.info, r.info, 5, 100), "");
}

TEST(NetTransport, PumpTwoSocketsPerPeer) {
  EnvVar socks("BRAID_NSOCKS_PERPEER", "2");
  TestRank a(0), b(1);
  Connector s, r;
  connectPair(netTransport(), a, b, 2, 4 << 20, &s, &r);
  EXPECT_EQ(testutil::pump(s.info, r.info, 6, 100), "");
  // And small slots, which stay on the first socket, interleaved with split ones.
  Connector s2, r2;
  connectPair(netTransport(), a, b, 3, 1 << 20, &s2, &r2);
  EXPECT_EQ(testutil::pump(s2.info, r2.info, 7, 400), "");
}

// GPU communicators' NET FIFOs carry LL slots on both sides, and the proxies forward LL steps as their lines:
// the sender side writes a step's 16-byte lines (two data/flag pairs, flag = step + 1) into its LL slot,
// marks sizes[] with kStepLlMark and publishes tail, as a GPU LL sender over NET does (prims_ll.h); the
// receiver side polls the flags of its own LL slot, as a GPU LL receiver does, and finds every line. SIMPLE
// steps are interleaved on the same connection, as LL and SIMPLE transfers alternate there.
// From step 0, and from BRAID_TEST_STEP_BASE = 2^32 - 1500 (both FIFOs and both proxies start there, as the
// GPU kernels' counters do; the flags cross the 32-bit wrap mid-run).
void gpuLlStepsTravelAsLines(uint64_t base) {
  EnvVar socks("BRAID_NSOCKS_PERPEER", "1");
  EnvVar stepBase("BRAID_TEST_STEP_BASE", std::to_string(base).c_str());
  TestRank a(0), b(1);
  a.ctx.llSlots = b.ctx.llSlots = true;  // as GPU communicators set it
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 4 << 20, &s, &r);
  for (const Connector* side : {&s, &r}) {
    ASSERT_EQ(loadAcquire(side->info.head), base) << "preset head";
    ASSERT_EQ(loadAcquire(side->info.tail), base) << "preset tail";
  }
  ASSERT_NE(s.info.llBuff, nullptr);
  ASSERT_NE(r.info.llBuff, nullptr);
  ASSERT_EQ(s.info.llSlotBytes, kShmLlSlotBytes);
  ASSERT_EQ(r.info.llSlotBytes, kShmLlSlotBytes);
  EXPECT_EQ(r.info.llBuff, r.info.buff + static_cast<size_t>(r.info.nSteps) * r.info.stepBytes);
  for (size_t i = 0; i < static_cast<size_t>(r.info.nSteps) * kShmLlSlotBytes; i += 8)
    ASSERT_EQ(*reinterpret_cast<uint64_t*>(r.info.llBuff + i), 0u) << "LL slots start zeroed";
  const uint64_t kSteps = base + 3000;
  auto isLl = [](uint64_t st) { return st % 3 != 1; };
  // Every 50th a whole slot's data (32 KiB), as the kernels' cleaning steps send.
  auto llBytes = [](uint64_t st) { return st % 50 == 0 ? 32768u : static_cast<uint32_t>((st * 2654435761ull) % 32768); };
  auto word = [](uint64_t st, size_t i) { return (st * 0x9e3779b97f4a7c15ull) ^ (i * 0x100000001b3ull); };
  std::string sendErr;
  std::thread sender([&] {
    ConnInfo c = s.info;
    std::string why;
    for (uint64_t st = base; st < kSteps && sendErr.empty(); ++st) {
      if (!testutil::spinUntil(c, [&] { return loadAcquire(c.head) + c.nSteps > st; }, 15, &why)) {
        sendErr = "send step " + std::to_string(st) + ": " + why;
        break;
      }
      const uint32_t slot = static_cast<uint32_t>(st % c.nSteps);
      if (!isLl(st)) {
        char* dst = c.buff + static_cast<size_t>(slot) * c.stepBytes;
        const size_t size = testutil::stepSize(st, c.stepBytes);
        for (size_t i = 0; i < size; ++i) dst[i] = static_cast<char>(testutil::patternByte(7, st, i));
        c.sizes[slot] = static_cast<int32_t>(size);
      } else {
        const uint32_t flag = static_cast<uint32_t>(st + 1);
        auto* line = reinterpret_cast<uint64_t*>(c.llBuff + static_cast<size_t>(slot) * c.llSlotBytes);
        for (size_t i = 0; i < (llBytes(st) + 7) / 8; ++i) {
          const uint64_t w = word(st, i);
          line[2 * i] = (w & 0xffffffffu) | (uint64_t(flag) << 32);
          line[2 * i + 1] = (w >> 32) | (uint64_t(flag) << 32);
        }
        c.sizes[slot] = static_cast<int32_t>(llBytes(st) | kStepLlMark);
      }
      storeRelease(c.tail, st + 1);
    }
  });
  std::string recvErr;
  ConnInfo c = r.info;
  for (uint64_t st = base; st < kSteps && recvErr.empty(); ++st) {
    const uint32_t slot = static_cast<uint32_t>(st % c.nSteps);
    std::string why;
    if (isLl(st)) {
      // Lines first, by their flags alone (a GPU LL receiver reads no tail).
      const uint32_t flag = static_cast<uint32_t>(st + 1);
      const auto* line = reinterpret_cast<const uint64_t*>(c.llBuff + static_cast<size_t>(slot) * c.llSlotBytes);
      const size_t lines = (llBytes(st) + 7) / 8;
      for (size_t i = 0; i < lines && recvErr.empty(); ++i) {
        uint64_t lo = 0, hi = 0;
        if (!testutil::spinUntil(c, [&] {
              lo = __atomic_load_n(line + 2 * i, __ATOMIC_ACQUIRE);
              hi = __atomic_load_n(line + 2 * i + 1, __ATOMIC_ACQUIRE);
              return (lo >> 32) == flag && (hi >> 32) == flag;
            }, 15, &why)) {
          recvErr = "LL step " + std::to_string(st) + " line " + std::to_string(i) + ": " + why;
        } else if (((lo & 0xffffffffu) | (hi << 32)) != word(st, i)) {
          recvErr = "LL step " + std::to_string(st) + " line " + std::to_string(i) + ": wrong data";
        }
      }
      if (!recvErr.empty()) break;
      if (!testutil::spinUntil(c, [&] { return loadAcquire(c.tail) > st; }, 15, &why)) {
        recvErr = "tail of LL step " + std::to_string(st) + ": " + why;
        break;
      }
      const int32_t want = static_cast<int32_t>(kStepLlMark | static_cast<uint32_t>(lines * 8));
      if (c.sizes[slot] != want) {
        recvErr = "LL step " + std::to_string(st) + ": sizes word " + std::to_string(c.sizes[slot]) + ", expected " +
                  std::to_string(want);
        break;
      }
    } else {
      if (!testutil::spinUntil(c, [&] { return loadAcquire(c.tail) > st; }, 15, &why)) {
        recvErr = "SIMPLE step " + std::to_string(st) + ": " + why;
        break;
      }
      const size_t size = testutil::stepSize(st, c.stepBytes);
      if (c.sizes[slot] != static_cast<int32_t>(size)) {
        recvErr = "SIMPLE step " + std::to_string(st) + ": size " + std::to_string(c.sizes[slot]);
        break;
      }
      const char* src = c.buff + static_cast<size_t>(slot) * c.stepBytes;
      for (size_t i = 0; i < size; ++i)
        if (static_cast<uint8_t>(src[i]) != testutil::patternByte(7, st, i)) {
          recvErr = "SIMPLE step " + std::to_string(st) + ": byte " + std::to_string(i);
          break;
        }
    }
    storeRelease(c.head, st + 1);
  }
  if (!recvErr.empty()) __atomic_store_n(s.info.errorFlag, 1u, __ATOMIC_RELEASE);  // unblock the sender
  sender.join();
  EXPECT_EQ(recvErr, "");
  EXPECT_EQ(sendErr, "");
}

TEST(NetTransport, GpuLlStepsTravelAsLines) {
  gpuLlStepsTravelAsLines(0);
  if (HasFatalFailure()) return;
  gpuLlStepsTravelAsLines((uint64_t{1} << 32) - 1500);
  if (HasFatalFailure()) return;

  // A step too small for an LL slot (NCCL_BUFFSIZE 64 KiB: 8 KiB steps): no LL slots, SIMPLE only.
  TestRank c2(0), d2(1);
  c2.ctx.llSlots = d2.ctx.llSlots = true;
  Connector s2, r2;
  connectPair(netTransport(), c2, d2, 1, 64 << 10, &s2, &r2);
  EXPECT_EQ(s2.info.llBuff, nullptr);
  EXPECT_EQ(r2.info.llBuff, nullptr);
  // Host communicators: none either.
  TestRank e2(0), f2(1);
  Connector s3, r3;
  connectPair(netTransport(), e2, f2, 2, 4 << 20, &s3, &r3);
  EXPECT_EQ(s3.info.llBuff, nullptr);
  EXPECT_EQ(r3.info.llBuff, nullptr);
}

// Two ranks running an LL ring over NET as the GPU kernels would: each step receives the peer's previous
// step and sends its own (recvReduceSend's shape), full 32 KiB LL steps, both directions through each rank's
// one proxy, thousands of steps in flight 8 deep. A model of the 16 MB LL all-reduce that stalled on the GPUs.
TEST(NetTransport, LlRingOverNetKeepsMoving) {
  EnvVar socks("BRAID_NSOCKS_PERPEER", "1");
  TestRank a(0), b(1);
  a.ctx.llSlots = b.ctx.llSlots = true;
  Connector ab, ba_recv, ba, ab_recv;  // a -> b (sender on a, receiver on b), b -> a
  connectPair(netTransport(), a, b, 0, 4 << 20, &ab, &ab_recv);
  connectPair(netTransport(), b, a, 0, 4 << 20, &ba, &ba_recv);
  const uint64_t kSteps = 4000;
  const uint32_t kBytes = 32768;
  auto word = [](int rank, uint64_t st, size_t i) { return (st * 0x9e3779b97f4a7c15ull) ^ (i * 0x100000001b3ull) ^ rank; };
  auto rank = [&](int me, ConnInfo snd, ConnInfo rcv, std::string* err) {
    std::string why;
    auto sendStep = [&](uint64_t st) {
      if (!testutil::spinUntil(snd, [&] { return loadAcquire(snd.head) + snd.nSteps > st; }, 20, &why)) {
        *err = "rank " + std::to_string(me) + " credit for step " + std::to_string(st) + ": " + why;
        return false;
      }
      const uint32_t slot = static_cast<uint32_t>(st % snd.nSteps);
      snd.sizes[slot] = static_cast<int32_t>(kBytes | kStepLlMark);
      auto* line = reinterpret_cast<uint64_t*>(snd.llBuff + static_cast<size_t>(slot) * snd.llSlotBytes);
      const uint64_t flag = st + 1;
      for (size_t i = 0; i < kBytes / 8; ++i) {
        const uint64_t w = word(me, st, i);
        line[2 * i] = (w & 0xffffffffu) | (flag << 32);
        line[2 * i + 1] = (w >> 32) | (flag << 32);
      }
      storeRelease(snd.tail, st + 1);
      return true;
    };
    auto recvStep = [&](uint64_t st) {
      const uint32_t slot = static_cast<uint32_t>(st % rcv.nSteps);
      const auto* line = reinterpret_cast<const uint64_t*>(rcv.llBuff + static_cast<size_t>(slot) * rcv.llSlotBytes);
      const uint32_t flag = static_cast<uint32_t>(st + 1);
      for (size_t i = 0; i < kBytes / 8; ++i) {
        uint64_t lo = 0, hi = 0;
        if (!testutil::spinUntil(rcv, [&] {
              lo = __atomic_load_n(line + 2 * i, __ATOMIC_ACQUIRE);
              hi = __atomic_load_n(line + 2 * i + 1, __ATOMIC_ACQUIRE);
              return (lo >> 32) == flag && (hi >> 32) == flag;
            }, 20, &why)) {
          *err = "rank " + std::to_string(me) + " step " + std::to_string(st) + " line " + std::to_string(i) + ": " + why;
          return false;
        }
        if (((lo & 0xffffffffu) | (hi << 32)) != word(1 - me, st, i)) {
          *err = "rank " + std::to_string(me) + " step " + std::to_string(st) + " line " + std::to_string(i) + ": data";
          return false;
        }
      }
      storeRelease(rcv.head, st + 1);
      return true;
    };
    if (!sendStep(0)) return;
    for (uint64_t st = 1; st < kSteps; ++st)
      if (!recvStep(st - 1) || !sendStep(st)) return;
    recvStep(kSteps - 1);
  };
  std::string errA, errB;
  std::thread ta([&] { rank(0, ab.info, ba_recv.info, &errA); });
  std::thread tb([&] { rank(1, ba.info, ab_recv.info, &errB); });
  ta.join();
  tb.join();
  EXPECT_EQ(errA, "");
  EXPECT_EQ(errB, "");
}

// An empty LL step (a ring segment of 0 elements): the GPU receiver has no line to poll and hands the slot
// back at once, before the step's frame has reached its proxy. The proxy must still keep one receive per
// slot: posting on head alone took the slot of a step still in flight, and the next step never arrived.
TEST(NetTransport, EmptyLlStepsDoNotRunTheReceiverAhead) {
  EnvVar socks("BRAID_NSOCKS_PERPEER", "1");
  TestRank a(0), b(1);
  a.ctx.llSlots = b.ctx.llSlots = true;
  Connector s, r;
  connectPair(netTransport(), a, b, 0, 4 << 20, &s, &r);
  const uint64_t kSteps = 600;
  auto bytesOf = [](uint64_t st) { return st % 4 == 1 ? 0u : static_cast<uint32_t>(64 + (st * 977) % 32000); };
  auto word = [](uint64_t st, size_t i) { return (st << 20) ^ (i * 0x9e3779b97f4a7c15ull); };
  std::string sendErr;
  std::thread sender([&] {
    ConnInfo c = s.info;
    std::string why;
    for (uint64_t st = 0; st < kSteps; ++st) {
      if (!testutil::spinUntil(c, [&] { return loadAcquire(c.head) + c.nSteps > st; }, 15, &why)) {
        sendErr = "send step " + std::to_string(st) + ": " + why;
        return;
      }
      if (bytesOf(st) == 0) {
        // The worst order: the receiver has handed this step's slot back before its frame leaves; give its
        // proxy time to see that head.
        if (!testutil::spinUntil(r.info, [&] { return loadAcquire(r.info.head) > st; }, 15, &why)) {
          sendErr = "empty step " + std::to_string(st) + ": " + why;
          return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
      const uint32_t slot = static_cast<uint32_t>(st % c.nSteps);
      const uint64_t flag = st + 1;
      auto* line = reinterpret_cast<uint64_t*>(c.llBuff + static_cast<size_t>(slot) * c.llSlotBytes);
      for (size_t i = 0; i < (bytesOf(st) + 7) / 8; ++i) {
        const uint64_t w = word(st, i);
        line[2 * i] = (w & 0xffffffffu) | (flag << 32);
        line[2 * i + 1] = (w >> 32) | (flag << 32);
      }
      c.sizes[slot] = static_cast<int32_t>(bytesOf(st) | kStepLlMark);
      storeRelease(c.tail, st + 1);
    }
  });
  std::string recvErr;
  ConnInfo c = r.info;
  for (uint64_t st = 0; st < kSteps && recvErr.empty(); ++st) {
    // As the GPU: poll the step's lines (none for an empty step), then hand the slot back; no tail.
    const uint32_t slot = static_cast<uint32_t>(st % c.nSteps);
    const uint32_t flag = static_cast<uint32_t>(st + 1);
    const auto* line = reinterpret_cast<const uint64_t*>(c.llBuff + static_cast<size_t>(slot) * c.llSlotBytes);
    for (size_t i = 0; i < (bytesOf(st) + 7) / 8 && recvErr.empty(); ++i) {
      std::string why;
      uint64_t lo = 0, hi = 0;
      if (!testutil::spinUntil(c, [&] {
            lo = __atomic_load_n(line + 2 * i, __ATOMIC_ACQUIRE);
            hi = __atomic_load_n(line + 2 * i + 1, __ATOMIC_ACQUIRE);
            return (lo >> 32) == flag && (hi >> 32) == flag;
          }, 10, &why)) {
        recvErr = "LL step " + std::to_string(st) + " line " + std::to_string(i) + ": " + why;
      } else if (((lo & 0xffffffffu) | (hi << 32)) != word(st, i)) {
        recvErr = "LL step " + std::to_string(st) + " line " + std::to_string(i) + ": wrong data";
      }
    }
    storeRelease(c.head, st + 1);
  }
  if (!recvErr.empty()) __atomic_store_n(s.info.errorFlag, 1u, __ATOMIC_RELEASE);
  sender.join();
  EXPECT_EQ(recvErr, "");
  EXPECT_EQ(sendErr, "");
}

TEST(NetTransport, BothDirectionsShareOneProxyPerRank) {
  TestRank a(0), b(1);
  Connector ab, ba_r, ba, ab_r;
  connectPair(netTransport(), a, b, 0, 64 << 10, &ab, &ab_r);
  connectPair(netTransport(), b, a, 0, 64 << 10, &ba, &ba_r);
  ASSERT_TRUE(a.ctx.proxy && b.ctx.proxy);
  EXPECT_EQ(a.ctx.proxy->connections(), 2);
  std::string e1, e2;
  std::thread t([&] { e1 = testutil::pump(ab.info, ab_r.info, 8, 1500); });
  e2 = testutil::pump(ba.info, ba_r.info, 9, 1500);
  t.join();
  EXPECT_EQ(e1, "");
  EXPECT_EQ(e2, "");
}

// With NET logging at INFO, each connection logs on close how many bytes it moved and where its thread's
// active time went (the socket-path diagnosis on the GPU machine reads these lines).
TEST(NetTransport, ConnectionStatsLoggedOnClose) {
  if (std::getenv("NCCL_DEBUG_FILE")) GTEST_SKIP() << "NCCL_DEBUG_FILE is set: this test would redirect and truncate it";
  char path[] = "/tmp/braid_netstats_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  char want[64];
  {
    EnvVar d("NCCL_DEBUG", "INFO"), s("NCCL_DEBUG_SUBSYS", "NET"), f("NCCL_DEBUG_FILE", path);
    resetLogging();
    TestRank a(0), b(1);
    Connector snd, rcv;
    connectPair(netTransport(), a, b, 0, 64 << 10, &snd, &rcv);
    EXPECT_EQ(testutil::pump(snd.info, rcv.info, 5, 200), "");
    uint64_t bytes = 0;
    for (uint64_t st = 0; st < 200; ++st) bytes += testutil::stepSize(st, snd.info.stepBytes);
    snprintf(want, sizeof(want), "closed: %.1f MB", static_cast<double>(bytes) / 1e6);
  }  // closing both ends logs their stats
  resetLogging();  // NCCL_DEBUG_FILE is unset again: closes the file without reopening it
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  unlink(path);
  EXPECT_NE(text.find(std::string("send connection with rank 1 ") + want), std::string::npos) << text;
  EXPECT_NE(text.find(std::string("recv connection with rank 0 ") + want), std::string::npos) << text;
  EXPECT_NE(text.find("waiting for the executor"), std::string::npos) << text;
}

// The CPUs of this process's threads named braid-netproxy (the NET proxy's), one entry per thread.
std::vector<std::string> proxyThreadCpus() { return testutil::threadStatus("braid-netproxy", "Cpus_allowed_list:"); }

// With BRAID_PROXY_CPUS=env, a real NET pair moves data and every braid-netproxy thread runs on `want`.
void expectProxyThreadsOn(const char* env, const std::string& want) {
  EnvVar cpus("BRAID_PROXY_CPUS", env);
  TestRank a(0), b(1);
  Connector snd, rcv;
  connectPair(netTransport(), a, b, 0, 64 << 10, &snd, &rcv);
  EXPECT_EQ(testutil::pump(snd.info, rcv.info, 3, 50), "");
  const std::vector<std::string> seen = proxyThreadCpus();
  ASSERT_FALSE(seen.empty()) << "no braid-netproxy thread";
  for (const std::string& s : seen) EXPECT_EQ(s, want) << "BRAID_PROXY_CPUS=" << env;
}

TEST(NetTransport, ProxyThreadsRunWhereBraidProxyCpusSays) {
  // One CPU of this process named: every proxy thread that moved data is pinned there (and named, for top -H).
  const CpuList mine = threadCpus();
  ASSERT_FALSE(mine.empty());
  const std::string one = std::to_string(mine.back());
  expectProxyThreadsOn(one.c_str(), one);
  EXPECT_EQ(threadCpus(), mine) << "the test's own thread is not moved";
  // A list this host cannot honour (CPU 1000 is not ours): the connection works, the threads keep the
  // binding (a warning says so; other hosts of the job may have that CPU).
  if (std::find(mine.begin(), mine.end(), 1000) == mine.end()) expectProxyThreadsOn("1000", formatCpuList(mine));
}

TEST(NetTransport, KindForNamesTheTransportBeforeConnecting) {
  // Two ranks of one host: with SHM first the pair would use SHM; with only NET, NET. kindFor agrees with
  // what the connection then gets (transportName), and refuses an out-of-range peer with a message.
  EnvVar shm("NCCL_SHM_DISABLE", "0");
  TestRank a(0), b(1);
  std::vector<PeerInfo> peers{a.info, b.info};
  ConnectionManager m(&a.wait, nullptr, &a.info, &peers);
  TransportKind k = TransportKind::P2p;
  ASSERT_EQ(m.kindFor(1, &k), ncclSuccess);  // host order: SHM first, and both ranks share this host
  EXPECT_EQ(k, TransportKind::Shm);
  EXPECT_STREQ(m.transportName(1), "SHM");
  ConnectionManager n(&a.wait, nullptr, &a.info, &peers);
  n.setTransports({netTransport()});
  ASSERT_EQ(n.kindFor(1, &k), ncclSuccess);
  EXPECT_EQ(k, TransportKind::Net);
  EXPECT_STREQ(n.transportName(1), "NET");
  // A new order forgets choices made under the old one.
  m.setTransports({netTransport()});
  ASSERT_EQ(m.kindFor(1, &k), ncclSuccess);
  EXPECT_EQ(k, TransportKind::Net);
  EXPECT_EQ(n.kindFor(7, &k), ncclInternalError);
  EXPECT_NE(pendingError().find("peer 7"), std::string::npos) << pendingError();
  clearPendingError();
}

TEST(NetTransport, SelfConnection) {
  TestRank a(0);
  Connector s, r;
  connectPair(netTransport(), a, a, 0, 64 << 10, &s, &r);
  EXPECT_EQ(testutil::pump(s.info, r.info, 10, 500), "");
}

}  // namespace
}  // namespace braid
