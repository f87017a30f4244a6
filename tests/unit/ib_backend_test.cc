// The IB backend's pieces that need no second process: NCCL_IB_HCA parsing and matching, GID choice, port speeds,
// the real libibverbs loading with every entry point resolved, and discovery over the emulated provider (device and
// port filtering, link layers, the RoCE GID, the NIC nearest a GPU in a canned topology, the registration cache).
// Discovery runs once per process, so each discovery case runs in a child (EXPECT_EXIT).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "topology_files.h"
#include "transport/net/ib/ib_backend.h"
#include "transport/net/ib/ib_devices.h"
#include "transport/net/ib/verbs_api.h"
#include "transport/net/net_internal.h"
#include "transport/p2p/p2p_level.h"
#include "transport_test_util.h"

namespace braid {
namespace {

TEST(IbHca, ParsesNcclSyntax) {
  IbHcaFilter f;
  std::string why;
  ASSERT_TRUE(parseIbHca("mlx5", &f, &why)) << why;
  EXPECT_FALSE(f.exclude);
  EXPECT_FALSE(f.exact);
  ASSERT_EQ(f.items.size(), 1u);
  EXPECT_EQ(f.items[0].name, "mlx5");
  EXPECT_EQ(f.items[0].port, -1);

  ASSERT_TRUE(parseIbHca("^=mlx5_0:1,mlx5_3", &f, &why)) << why;
  EXPECT_TRUE(f.exclude);
  EXPECT_TRUE(f.exact);
  ASSERT_EQ(f.items.size(), 2u);
  EXPECT_EQ(f.items[0].name, "mlx5_0");
  EXPECT_EQ(f.items[0].port, 1);
  EXPECT_EQ(f.items[1].name, "mlx5_3");
  EXPECT_EQ(f.items[1].port, -1);

  ASSERT_TRUE(parseIbHca("", &f, &why));
  EXPECT_TRUE(f.items.empty());

  for (const char* bad : {":1", "mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256", "a,,b", "^"}) {
    why.clear();
    EXPECT_FALSE(parseIbHca(bad, &f, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(IbHca, MatchesPrefixesExactNamesPortsAndExclusion) {
  IbHcaFilter f;
  std::string why;
  ASSERT_TRUE(parseIbHca("mlx5_1", &f, &why));
  EXPECT_TRUE(ibHcaAllows(f, "mlx5_1", 1));
  EXPECT_TRUE(ibHcaAllows(f, "mlx5_10", 2));  // a prefix
  EXPECT_FALSE(ibHcaAllows(f, "mlx5_0", 1));

  ASSERT_TRUE(parseIbHca("=mlx5_1:2", &f, &why));
  EXPECT_TRUE(ibHcaAllows(f, "mlx5_1", 2));
  EXPECT_FALSE(ibHcaAllows(f, "mlx5_1", 1));
  EXPECT_FALSE(ibHcaAllows(f, "mlx5_10", 2));

  ASSERT_TRUE(parseIbHca("^mlx5_1,bnxt:1", &f, &why));
  EXPECT_FALSE(ibHcaAllows(f, "mlx5_1", 1));
  EXPECT_FALSE(ibHcaAllows(f, "mlx5_12", 1));
  EXPECT_FALSE(ibHcaAllows(f, "bnxt_re0", 1));
  EXPECT_TRUE(ibHcaAllows(f, "bnxt_re0", 2));
  EXPECT_TRUE(ibHcaAllows(f, "mlx5_0", 1));

  EXPECT_TRUE(ibHcaAllows(IbHcaFilter{}, "anything", 7));
}

TEST(IbPort, SpeedFromCodes) {
  EXPECT_DOUBLE_EQ(ibPortGbps(128, 2), 400);  // NDR 4x
  EXPECT_DOUBLE_EQ(ibPortGbps(64, 2), 200);   // HDR 4x
  EXPECT_DOUBLE_EQ(ibPortGbps(32, 1), 25);    // EDR 1x
  EXPECT_DOUBLE_EQ(ibPortGbps(16, 8), 168);   // FDR 12x
  EXPECT_DOUBLE_EQ(ibPortGbps(3, 2), 0);
  EXPECT_DOUBLE_EQ(ibPortGbps(128, 3), 0);
}

#if BRAID_HAVE_IBVERBS

IbGidCandidate gid(int index, IbGidType type, bool v4, bool linkLocal) {
  IbGidCandidate c;
  c.index = index;
  c.type = type;
  if (v4) {
    c.gid.raw[10] = c.gid.raw[11] = 0xff;
    c.gid.raw[12] = 192;
    c.gid.raw[15] = static_cast<uint8_t>(index);
  } else if (linkLocal) {
    c.gid.raw[0] = 0xfe;
    c.gid.raw[1] = 0x80;
    c.gid.raw[15] = static_cast<uint8_t>(index);
  } else {
    c.gid.raw[0] = 0x20;
    c.gid.raw[1] = 0x01;
    c.gid.raw[15] = static_cast<uint8_t>(index);
  }
  return c;
}

TEST(IbGid, PrefersRoceV2WithIpv4ThenV2ThenV1) {
  using T = IbGidType;
  std::vector<IbGidCandidate> t = {gid(0, T::RoceV1, false, true), gid(1, T::RoceV2, false, true),
                                   gid(2, T::RoceV1, true, false), gid(3, T::RoceV2, false, false),
                                   gid(4, T::RoceV2, true, false)};
  EXPECT_EQ(ibPickGid(t, -1), 4);
  t.pop_back();
  EXPECT_EQ(ibPickGid(t, -1), 3);  // global v2 before link-local v2
  t.pop_back();
  EXPECT_EQ(ibPickGid(t, -1), 1);  // any v2 before v1
  t.erase(t.begin() + 1);
  EXPECT_EQ(ibPickGid(t, -1), 2);  // v1 with IPv4
  // NCCL_IB_GID_INDEX wins where the table holds a GID there; a zero GID or a missing index is refused.
  t = {gid(0, T::RoceV1, false, true), gid(1, T::RoceV2, true, false), IbGidCandidate{}};
  t[2].index = 2;
  EXPECT_EQ(ibPickGid(t, 0), 0);
  EXPECT_EQ(ibPickGid(t, 2), -1);
  EXPECT_EQ(ibPickGid(t, 9), -1);
  EXPECT_EQ(ibPickGid({}, -1), -1);
}

// A GID holding IPv4 address a.b.c.d (IPv4-mapped).
IbGidCandidate gidV4(int index, IbGidType type, uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IbGidCandidate g;
  g.index = index;
  g.type = type;
  g.gid.raw[10] = g.gid.raw[11] = 0xff;
  g.gid.raw[12] = a;
  g.gid.raw[13] = b;
  g.gid.raw[14] = c;
  g.gid.raw[15] = d;
  return g;
}

// The preferences from NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE, as a comm reads them.
IbGidPrefs prefsFrom(const char* version, const char* family, const char* range) {
  testutil::EnvVar v("NCCL_IB_ROCE_VERSION_NUM", version), f("NCCL_IB_ADDR_FAMILY", family),
      r("NCCL_IB_ADDR_RANGE", range);
  IbGidPrefs p;
  EXPECT_EQ(ibGidPrefsFromParams(&p), ncclSuccess) << pendingError();
  return p;
}

// NCCL's GID knobs on a table of RoCE v1 and v2 GIDs, IPv4 and IPv6: the preferred version and family come first,
// and a range leaves out every GID outside it (none left: no GID, so the port is not used).
TEST(IbGid, VersionFamilyAndRangeAsNcclNamesThem) {
  using T = IbGidType;
  const std::vector<IbGidCandidate> t = {gidV4(0, T::RoceV2, 192, 168, 1, 5), gidV4(1, T::RoceV1, 192, 168, 1, 5),
                                         gid(2, T::RoceV2, false, false), gid(3, T::RoceV1, false, false),
                                         gidV4(4, T::RoceV2, 10, 1, 2, 3)};
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom(nullptr, nullptr, nullptr)), 0);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom("1", nullptr, nullptr)), 1);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom(nullptr, "AF_INET6", nullptr)), 2);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom("1", "AF_INET6", nullptr)), 3);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom(nullptr, nullptr, "10.0.0.0/8")), 4);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom("1", nullptr, "10.0.0.0/8")), 4);  // the range first, then the version
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom(nullptr, nullptr, "192.168.1.5/32")), 0);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom(nullptr, nullptr, "2001::/16")), 2);
  EXPECT_EQ(ibPickGid(t, -1, prefsFrom(nullptr, nullptr, "172.16.0.0/12")), -1);
  EXPECT_EQ(ibPickGid(t, 1, prefsFrom(nullptr, nullptr, "10.0.0.0/8")), 1);  // NCCL_IB_GID_INDEX still wins
  // Malformed values are refused, naming the variable.
  for (const auto& bad : std::vector<std::pair<const char*, const char*>>{{"NCCL_IB_ROCE_VERSION_NUM", "3"},
                                                                           {"NCCL_IB_ADDR_FAMILY", "AF_UNIX"},
                                                                           {"NCCL_IB_ADDR_RANGE", "10.0.0.0"},
                                                                           {"NCCL_IB_ADDR_RANGE", "10.0.0.0/33"},
                                                                           {"NCCL_IB_ADDR_RANGE", "fd00::/8x"}}) {
    testutil::EnvVar e(bad.first, bad.second);
    IbGidPrefs p;
    EXPECT_EQ(ibGidPrefsFromParams(&p), ncclInvalidArgument) << bad.first << "=" << bad.second;
    EXPECT_NE(pendingError().find(bad.first), std::string::npos) << pendingError();
    clearPendingError();
  }
}

// In a child: loads libibverbs.so.1 through the loader, checks the table, exits 0 when all is well.
[[noreturn]] void realLibibverbsChild() {
  unsetenv("BRAID_TEST_VERBS_PROVIDER");
  const VerbsLoad& l = loadVerbs();
  if (!l.ok) {
    fprintf(stderr, "load failed: %s\n", l.why.c_str());
    _exit(1);
  }
  const VerbsApi& v = verbs();
  const void* entries[] = {(void*)v.getDeviceList,
                           (void*)v.freeDeviceList,
                           (void*)v.getDeviceName,
                           (void*)v.openDevice,
                           (void*)v.closeDevice,
                           (void*)v.queryDevice,
                           (void*)v.queryPort,
                           (void*)v.queryGid,
                           (void*)v.queryGidType,
                           (void*)v.allocPd,
                           (void*)v.deallocPd,
                           (void*)v.regMr,
                           (void*)v.deregMr,
                           (void*)v.createCompChannel,
                           (void*)v.destroyCompChannel,
                           (void*)v.createCq,
                           (void*)v.destroyCq,
                           (void*)v.reqNotifyCq,
                           (void*)v.getCqEvent,
                           (void*)v.ackCqEvents,
                           (void*)v.createQp,
                           (void*)v.modifyQp,
                           (void*)v.destroyQp,
                           (void*)v.postSend,
                           (void*)v.postRecv,
                           (void*)v.pollCq,
                           (void*)v.getAsyncEvent,
                           (void*)v.ackAsyncEvent,
                           (void*)v.wcStatusStr,
                           (void*)v.eventTypeStr};
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
    if (!entries[i]) {
      fprintf(stderr, "entry %zu is null\n", i);
      _exit(2);
    }
  }
  if (strcmp(v.wcStatusStr(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded") != 0) _exit(3);
  int n = -1;
  ibv_device** list = v.getDeviceList(&n);
  if (list) v.freeDeviceList(list);
  std::string why;
  NetBackend* b = ibNetBackend(&why);
  fprintf(stderr, "devices: %d; backend: %s (%s)\n", n, b ? b->name() : "none", why.c_str());
  if (n <= 0 && (b != nullptr || why.find("no RDMA devices") == std::string::npos)) _exit(4);
  _exit(0);
}

// The library links no verbs: it loads libibverbs.so.1 at run time and resolves every call it makes. Where rdma-core
// is installed (CI installs libibverbs-dev), that must succeed; where there is no RDMA device, the IB backend says
// so and the network uses sockets.
TEST(IbVerbs, RealLibibverbsLoadsEveryEntryPoint) {
  void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) GTEST_SKIP() << "libibverbs.so.1 is not installed here: " << dlerror();
  dlclose(h);
  EXPECT_EXIT(realLibibverbsChild(), testing::ExitedWithCode(0), "");
}

#ifdef BRAID_VERBS_EMU_PATH

// Runs `body` in a child whose verbs come from the emulator with `devices` (BRAID_VERBS_EMU_DEVICES) and NCCL_IB_HCA
// `hca`; the child exits 0 when body returns true.
template <typename Body>
void inEmulator(const char* devices, const char* hca, Body body) {
  EXPECT_EXIT(
      {
        setenv("BRAID_TEST_VERBS_PROVIDER", BRAID_VERBS_EMU_PATH, 1);
        setenv("BRAID_VERBS_EMU_DEVICES", devices, 1);
        setenv("NCCL_IB_HCA", hca, 1);
        _exit(body() ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

std::string portNames() {
  std::string s;
  for (const IbPort& p : ibPorts(nullptr)) s += p.name + ":" + std::to_string(p.port) + (p.roce ? "/roce " : "/ib ");
  return s;
}

TEST(IbDiscovery, ActivePortsThatNcclIbHcaAllows) {
  inEmulator("mlx5_0:ib,mlx5_1:roce,mlx5_2:ib:down,mlx5_10:ib", "", [] {
    const std::string got = portNames();
    fprintf(stderr, "ports: %s\n", got.c_str());
    return got == "mlx5_0:1/ib mlx5_1:1/roce mlx5_10:1/ib ";  // the port that is down is left out
  });
  inEmulator("mlx5_0:ib,mlx5_1:roce,mlx5_10:ib", "mlx5_1", [] { return portNames() == "mlx5_1:1/roce mlx5_10:1/ib "; });
  inEmulator("mlx5_0:ib,mlx5_1:roce,mlx5_10:ib", "=mlx5_1:1", [] { return portNames() == "mlx5_1:1/roce "; });
  inEmulator("mlx5_0:ib,mlx5_1:roce,mlx5_10:ib", "^=mlx5_1", [] { return portNames() == "mlx5_0:1/ib mlx5_10:1/ib "; });
  inEmulator("mlx5_0:ib", "mlx5_0:2", [] {
    std::string why;
    const bool none = ibPorts(&why).empty() && ibNetBackend(nullptr) == nullptr;
    fprintf(stderr, "why: %s\n", why.c_str());
    return none && why.find("NCCL_IB_HCA") != std::string::npos;
  });
}

TEST(IbDiscovery, RocePortUsesTheIpv4RoceV2Gid) {
  inEmulator("mlx5_0:roce", "", [] {
    const auto& ports = ibPorts(nullptr);
    return ports.size() == 1 && ports[0].roce && ports[0].gidIndex == 3 && ports[0].gidType == IbGidType::RoceV2 &&
           ports[0].gid.raw[10] == 0xff && ports[0].gbps == 400;
  });
  inEmulator("mlx5_0:roce", "", [] {
    setenv("NCCL_IB_GID_INDEX", "1", 1);  // read at discovery, which has not run yet in this child
    const auto& ports = ibPorts(nullptr);
    return ports.size() == 1 && ports[0].gidIndex == 1 && ports[0].gid.raw[0] == 0xfe;
  });
}

TEST(IbDiscovery, EachGpuGetsItsNearestNic) {
  inEmulator("mlx5_0:ib,mlx5_1:ib", "", [] {
    auto host = std::make_shared<HostTopology>();
    if (loadTopologyFile(topologyDir() + "/two_socket_nics.xml", &host->topo) != ncclSuccess) return false;
    if (computePaths(host->topo, &host->paths) != ncclSuccess) return false;
    setHostTopology(host);
    const IbPort* a = ibPortFor(0x4100);  // GPU 0000:41:00.0, beside mlx5_0
    const IbPort* b = ibPortFor(0xc100);  // GPU 0000:c1:00.0, beside mlx5_1
    const IbPort* h = ibPortFor(-1);      // no GPU: the first port
    fprintf(stderr, "%s %s %s\n", a ? a->name.c_str() : "-", b ? b->name.c_str() : "-", h ? h->name.c_str() : "-");
    return a && b && h && a->name == "mlx5_0" && b->name == "mlx5_1" && h->name == "mlx5_0";
  });
}

TEST(IbDiscovery, RegistrationCacheSharesAndReleases) {
  inEmulator("mlx5_0:ib", "", [] {
    const auto& ports = ibPorts(nullptr);
    if (ports.size() != 1) return false;
    IbDevice* d = ports[0].dev;
    std::vector<char> buf(1 << 20);
    ibv_mr *a = nullptr, *b = nullptr, *c = nullptr;
    if (d->acquireMr(buf.data(), 65536, &a) != ncclSuccess) return false;
    if (d->acquireMr(buf.data() + 4096, 1000, &b) != ncclSuccess) return false;  // inside a: shared
    if (a != b || d->cachedMrs() != 1) return false;
    if (d->acquireMr(buf.data(), buf.size(), &c) != ncclSuccess) return false;  // longer: a new registration
    if (c == a || d->cachedMrs() != 2) return false;
    const auto start = reinterpret_cast<uintptr_t>(c->addr);
    if (start > reinterpret_cast<uintptr_t>(buf.data()) ||
        start + c->length < reinterpret_cast<uintptr_t>(buf.data()) + buf.size())
      return false;
    d->releaseMr(a);
    d->releaseMr(b);
    if (d->cachedMrs() != 1) return false;
    d->releaseMr(c);
    return d->cachedMrs() == 0;
  });
}

// The NET transport over the IB backend, both ranks in this process, verbs from the emulator: SIMPLE steps of every
// size through one queue pair and through three (a 4 MiB FIFO: 512 KiB steps split in parts), then GPU LL steps
// (lines from the LL slots, as GPU communicators send them) interleaved with SIMPLE ones. Each check returns "" or
// what went wrong.
std::string pumpOverIb(int qps, size_t buffBytes, int channel, uint64_t steps) {
  testutil::EnvVar q("NCCL_IB_QPS_PER_CONNECTION", std::to_string(qps).c_str());
  testutil::TestRank a(0), b(1);
  Connector s, r;
  testutil::connectPair(netTransport(), a, b, channel, buffBytes, &s, &r);
  if (!s.connected || !r.connected) return "connect failed: " + pendingError();
  const std::string err = testutil::pump(s.info, r.info, static_cast<uint32_t>(channel), steps);
  // Each side registered its FIFO once and its control memory once, however many sizes the steps had.
  const size_t mrs = ibPorts(nullptr)[0].dev->cachedMrs();
  if (err.empty() && mrs != 4) return "the connection holds " + std::to_string(mrs) + " registrations, expected 4";
  return err;
}

std::string llStepsOverIb() {
  testutil::TestRank a(0), b(1);
  a.ctx.llSlots = b.ctx.llSlots = true;  // as GPU communicators set it
  Connector s, r;
  testutil::connectPair(netTransport(), a, b, 9, 4 << 20, &s, &r);
  if (!s.connected || !r.connected || !s.info.llBuff || !r.info.llBuff) return "no LL connection: " + pendingError();
  const uint64_t kSteps = 600;
  auto isLl = [](uint64_t st) { return st % 3 != 1; };
  auto llBytes = [](uint64_t st) {
    return st % 50 == 0 ? 32768u : static_cast<uint32_t>((st * 2654435761ull) % 32768);
  };
  auto word = [](uint64_t st, size_t i) { return (st * 0x9e3779b97f4a7c15ull) ^ (i * 0x100000001b3ull); };
  std::string sendErr;
  std::thread sender([&] {
    ConnInfo c = s.info;
    for (uint64_t st = 0; st < kSteps && sendErr.empty(); ++st) {
      if (!testutil::spinUntil(
              c, [&] { return loadAcquire(c.head) + c.nSteps > st; }, 15, &sendErr))
        break;
      const uint32_t slot = static_cast<uint32_t>(st % c.nSteps);
      if (!isLl(st)) {
        char* dst = c.buff + static_cast<size_t>(slot) * c.stepBytes;
        const size_t size = testutil::stepSize(st, c.stepBytes);
        for (size_t i = 0; i < size; ++i) dst[i] = static_cast<char>(testutil::patternByte(3, st, i));
        c.sizes[slot] = static_cast<int32_t>(size);
      } else {
        const uint64_t flag = static_cast<uint32_t>(st + 1);
        auto* line = reinterpret_cast<uint64_t*>(c.llBuff + static_cast<size_t>(slot) * c.llSlotBytes);
        for (size_t i = 0; i < (llBytes(st) + 7) / 8; ++i) {
          line[2 * i] = (word(st, i) & 0xffffffffu) | (flag << 32);
          line[2 * i + 1] = (word(st, i) >> 32) | (flag << 32);
        }
        c.sizes[slot] = static_cast<int32_t>(llBytes(st) | kStepLlMark);
      }
      storeRelease(c.tail, st + 1);
    }
  });
  std::string err, why;
  ConnInfo c = r.info;
  for (uint64_t st = 0; st < kSteps && err.empty(); ++st) {
    const uint32_t slot = static_cast<uint32_t>(st % c.nSteps);
    if (isLl(st)) {
      const uint64_t flag = static_cast<uint32_t>(st + 1);
      const auto* line = reinterpret_cast<const uint64_t*>(c.llBuff + static_cast<size_t>(slot) * c.llSlotBytes);
      for (size_t i = 0; i < (llBytes(st) + 7) / 8 && err.empty(); ++i) {
        uint64_t lo = 0, hi = 0;
        if (!testutil::spinUntil(
                c,
                [&] {
                  lo = __atomic_load_n(line + 2 * i, __ATOMIC_ACQUIRE);
                  hi = __atomic_load_n(line + 2 * i + 1, __ATOMIC_ACQUIRE);
                  return (lo >> 32) == flag && (hi >> 32) == flag;
                },
                15, &why)) {
          err = "LL step " + std::to_string(st) + " line " + std::to_string(i) + ": " + why;
        } else if (((lo & 0xffffffffu) | (hi << 32)) != word(st, i)) {
          err = "LL step " + std::to_string(st) + " line " + std::to_string(i) + ": wrong data";
        }
      }
      if (err.empty() && !testutil::spinUntil(
                             c, [&] { return loadAcquire(c.tail) > st; }, 15, &why))
        err = "tail of LL step " + std::to_string(st) + ": " + why;
    } else if (!testutil::spinUntil(
                   c, [&] { return loadAcquire(c.tail) > st; }, 15, &why)) {
      err = "SIMPLE step " + std::to_string(st) + ": " + why;
    } else {
      const size_t size = testutil::stepSize(st, c.stepBytes);
      const char* src = c.buff + static_cast<size_t>(slot) * c.stepBytes;
      if (c.sizes[slot] != static_cast<int32_t>(size)) err = "SIMPLE step " + std::to_string(st) + ": wrong size";
      for (size_t i = 0; i < size && err.empty(); ++i)
        if (static_cast<uint8_t>(src[i]) != testutil::patternByte(3, st, i))
          err = "SIMPLE step " + std::to_string(st) + ": byte " + std::to_string(i);
    }
    storeRelease(c.head, st + 1);
  }
  if (!err.empty()) __atomic_store_n(s.info.errorFlag, 1u, __ATOMIC_RELEASE);  // unblock the sender
  sender.join();
  return err.empty() ? sendErr : err;
}

// GPU communicators' engines deal their connections over several progress threads, which then post and poll
// connections of one device (its registration cache, its protection domain) at once: 4 channels each way over 2
// threads a rank, every byte checked.
std::string channelsOverIbOnThreads() {
  testutil::TestRank a(0), b(1);
  a.ctx.proxyThreads = b.ctx.proxyThreads = 2;
  constexpr int kChannels = 4;
  Connector s[2 * kChannels], r[2 * kChannels];
  for (int ch = 0; ch < kChannels; ++ch) {
    testutil::connectPair(netTransport(), a, b, ch, 256 << 10, &s[2 * ch], &r[2 * ch]);
    testutil::connectPair(netTransport(), b, a, ch, 256 << 10, &s[2 * ch + 1], &r[2 * ch + 1]);
  }
  for (int i = 0; i < 2 * kChannels; ++i)
    if (!s[i].connected || !r[i].connected) return "connect failed: " + pendingError();
  std::string err[2 * kChannels];
  std::vector<std::thread> ts;
  for (int i = 0; i < 2 * kChannels; ++i)
    ts.emplace_back([&, i] { err[i] = testutil::pump(s[i].info, r[i].info, 40 + i, 300); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 2 * kChannels; ++i)
    if (!err[i].empty()) return "connection " + std::to_string(i) + ": " + err[i];
  return "";
}

TEST(IbTransport, SimpleAndLlStepsOverEmulatedVerbs) {
  inEmulator("emu_0:ib", "", [] {
    setenv("NCCL_NET", "IB", 1);
    NetBackend* backend = nullptr;
    if (selectNetBackend(&backend) != ncclSuccess || strcmp(backend->name(), "IB") != 0) return false;
    const std::string one = pumpOverIb(1, 64 << 10, 1, 3000);
    const std::string three = pumpOverIb(3, 4 << 20, 2, 200);
    const std::string ll = llStepsOverIb();
    const std::string threads = channelsOverIbOnThreads();
    fprintf(stderr, "1 QP: %s\n3 QPs: %s\nLL: %s\nthreads: %s\n", one.c_str(), three.c_str(), ll.c_str(),
            threads.c_str());
    return one.empty() && three.empty() && ll.empty() && threads.empty();
  });
}

// NCCL_IB_SL, NCCL_IB_TC and NCCL_IB_PKEY reach every queue pair: with the emulator expecting service level 3,
// traffic class 106 and partition key index 2 (BRAID_VERBS_EMU_EXPECT_AV), a RoCE connection set to them carries
// steps, and one left at the defaults is refused, so the check is live.
bool connectsOverRoce(bool setAv, std::string* err) {
  setenv("NCCL_NET", "IB", 1);
  setenv("BRAID_VERBS_EMU_EXPECT_AV", "3:106:2", 1);
  if (setAv) {
    setenv("NCCL_IB_SL", "3", 1);
    setenv("NCCL_IB_TC", "106", 1);
    setenv("NCCL_IB_PKEY", "2", 1);
  }
  testutil::TestRank a(0), b(1);
  Connector s, r;
  ConnectHandle hs, hr;
  s.ctx = &a.ctx;
  r.ctx = &b.ctx;
  if (netTransport()->setup(Direction::Recv, b.info, a.info, 0, 64 << 10, &r, &hr) != ncclSuccess ||
      netTransport()->setup(Direction::Send, a.info, b.info, 0, 64 << 10, &s, &hs) != ncclSuccess ||
      netTransport()->connect(Direction::Send, hr, &s) != ncclSuccess ||
      netTransport()->connect(Direction::Recv, hs, &r) != ncclSuccess) {
    *err = pendingError();
    return false;
  }
  *err = testutil::pump(s.info, r.info, 5, 100);
  return err->empty();
}

TEST(IbTransport, QosAndPartitionReachTheQueuePairs) {
  inEmulator("emu_0:roce", "", [] {
    std::string err;
    const bool ok = connectsOverRoce(true, &err);
    fprintf(stderr, "set: %s\n", err.c_str());
    return ok;
  });
  inEmulator("emu_0:roce", "", [] {
    std::string err;
    const bool ok = connectsOverRoce(false, &err);
    fprintf(stderr, "defaults: %s\n", err.c_str());
    return !ok && err.find("queue pair 0 to INIT") != std::string::npos;
  });
}

#endif  // BRAID_VERBS_EMU_PATH
#endif  // BRAID_HAVE_IBVERBS

}  // namespace
}  // namespace braid
