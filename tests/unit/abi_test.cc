// ABI facts of docs/ABI.md checked at compile time and run time: enum values, struct layouts, sentinels,
// version macros, and the exported symbol set of libbraid.so (only nccl*/pnccl*/braid*; every function of
// the API and its p-twin; the 38 symbols PyTorch imports). The device API's layouts are checked in its header.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include <unistd.h>

#include "nccl.h"
#include "nccl_device.h"

static_assert(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 && ncclInternalError == 3 &&
                  ncclInvalidArgument == 4 && ncclInvalidUsage == 5 && ncclRemoteError == 6 && ncclInProgress == 7 &&
                  ncclNumResults == 8,
              "ncclResult_t values");
static_assert(ncclInt8 == 0 && ncclChar == 0 && ncclUint8 == 1 && ncclInt32 == 2 && ncclInt == 2 && ncclUint32 == 3 &&
                  ncclInt64 == 4 && ncclUint64 == 5 && ncclFloat16 == 6 && ncclHalf == 6 && ncclFloat32 == 7 &&
                  ncclFloat == 7 && ncclFloat64 == 8 && ncclDouble == 8 && ncclBfloat16 == 9 &&
                  ncclFloat8e4m3 == 10 && ncclFloat8e5m2 == 11 && ncclNumTypes == 12,
              "ncclDataType_t values");
static_assert(ncclSum == 0 && ncclProd == 1 && ncclMax == 2 && ncclMin == 3 && ncclAvg == 4 && ncclNumOps == 5 &&
                  ncclMaxRedOp == 0x7fffffff && sizeof(ncclRedOp_t) == 4,
              "ncclRedOp_t values");
static_assert(ncclScalarDevice == 0 && ncclScalarHostImmediate == 1, "residence");
static_assert(sizeof(ncclUniqueId) == 128 && NCCL_UNIQUE_ID_BYTES == 128, "unique id size");
static_assert(NCCL_VERSION(2, 8, 4) == 2804 && NCCL_VERSION(2, 28, 9) == 22809, "version macro");
static_assert(NCCL_CONFIG_UNDEF_INT == INT_MIN && NCCL_SPLIT_NOCOLOR == -1, "sentinels");
static_assert(NCCL_WIN_COLL_SYMMETRIC == 1 && NCCL_WIN_REQUIRED_ALIGNMENT == 4096 && NCCL_CTA_POLICY_ZERO == 2 &&
                  NCCL_SHRINK_ABORT == 1 && NCCL_REVOKE_DEFAULT == 0,
              "flags");
// ncclConfig_v22800 field order on LP64.
static_assert(offsetof(ncclConfig_t, size) == 0 && offsetof(ncclConfig_t, magic) == 8 &&
                  offsetof(ncclConfig_t, version) == 12 && offsetof(ncclConfig_t, blocking) == 16 &&
                  offsetof(ncclConfig_t, cgaClusterSize) == 20 && offsetof(ncclConfig_t, minCTAs) == 24 &&
                  offsetof(ncclConfig_t, maxCTAs) == 28 && offsetof(ncclConfig_t, netName) == 32 &&
                  offsetof(ncclConfig_t, splitShare) == 40 && offsetof(ncclConfig_t, trafficClass) == 44 &&
                  offsetof(ncclConfig_t, commName) == 48 && offsetof(ncclConfig_t, collnetEnable) == 56 &&
                  offsetof(ncclConfig_t, CTAPolicy) == 60 && offsetof(ncclConfig_t, shrinkShare) == 64 &&
                  offsetof(ncclConfig_t, nvlsCTAs) == 68 && offsetof(ncclConfig_t, nChannelsPerNetPeer) == 72 &&
                  offsetof(ncclConfig_t, nvlinkCentricSched) == 76 && sizeof(ncclConfig_t) == 80,
              "ncclConfig_t layout");
static_assert(offsetof(ncclSimInfo_t, estimatedTime) == 16, "ncclSimInfo_t layout");

TEST(Abi, ConfigInitializer) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(c.size, sizeof(ncclConfig_t));
  EXPECT_EQ(c.magic, 0xcafebeefu);
  EXPECT_EQ(c.version, static_cast<unsigned>(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)));
  EXPECT_EQ(c.blocking, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(c.netName, nullptr);
  EXPECT_EQ(c.nvlinkCentricSched, NCCL_CONFIG_UNDEF_INT);
  ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(s.magic, 0x74685283u);
  EXPECT_EQ(s.estimatedTime, NCCL_UNDEF_FLOAT);
}

namespace {
// Test binaries live in build/bin, the library in build/lib.
std::string libPath() {
  if (const char* bin = getenv("BRAID_BIN_DIR")) return std::string(bin) + "/../lib/libnccl.so.2";
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string("build/bin/x");
  return dir.substr(0, dir.rfind('/')) + "/../lib/libnccl.so.2";
}
std::set<std::string> exportedSymbols() {
  std::set<std::string> out;
  std::string cmd = "nm -D --defined-only " + libPath() + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[512];
  while (fgets(line, sizeof(line), p)) {
    char addr[64], type[8], name[400];
    if (sscanf(line, "%63s %7s %399s", addr, type, name) == 3) out.insert(name);
  }
  pclose(p);
  return out;
}
}  // namespace

TEST(Abi, ExportedSymbols) {
  std::set<std::string> syms = exportedSymbols();
  if (syms.empty()) GTEST_SKIP() << "cannot read symbols of " << libPath() << " (nm missing or library not built)";
  for (const std::string& s : syms) {
    bool ok = s.rfind("nccl", 0) == 0 || s.rfind("pnccl", 0) == 0 || s.rfind("braid", 0) == 0;
    // Version-script nodes and loader bookkeeping are not code.
    if (s == "BRAID" || s.find('@') != std::string::npos) ok = true;
    EXPECT_TRUE(ok) << "unexpected exported symbol " << s;
  }
  const char* pytorch[] = {
      "ncclAllGather", "ncclAllReduce", "ncclAlltoAll", "ncclBcast", "ncclBroadcast", "ncclCommAbort",
      "ncclCommCount", "ncclCommDeregister", "ncclCommDestroy", "ncclCommFinalize", "ncclCommGetAsyncError",
      "ncclCommInitAll", "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable",
      "ncclCommRegister", "ncclCommShrink", "ncclCommSplit", "ncclCommUserRank", "ncclCommWindowDeregister",
      "ncclCommWindowRegister", "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGetErrorString", "ncclGetLastError",
      "ncclGetUniqueId", "ncclGetVersion", "ncclGroupEnd", "ncclGroupSimulateEnd", "ncclGroupStart", "ncclMemAlloc",
      "ncclMemFree", "ncclRecv", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclReduce", "ncclReduceScatter",
      "ncclSend"};
  EXPECT_EQ(sizeof(pytorch) / sizeof(pytorch[0]), 38u);
  const char* others[] = {"ncclCommCuDevice", "ncclCommRevoke", "ncclResetDebugInit", "ncclGather", "ncclScatter",
                          // NCCL 2.28.9's device-API host helpers (nccl_device.h)
                          "ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail", "ncclTeamRankToWorld", "ncclTeamRankToLsa",
                          "ncclLsaBarrierCreateRequirement", "ncclGinBarrierCreateRequirement",
                          "ncclLLA2ACreateRequirement", "ncclLLA2ACalcSlots"};
  for (const char* s : pytorch) {
    EXPECT_TRUE(syms.count(s)) << s << " is not exported";
    EXPECT_TRUE(syms.count(std::string("p") + s)) << "p" << s << " is not exported";
  }
  for (const char* s : others) {
    EXPECT_TRUE(syms.count(s)) << s << " is not exported";
    EXPECT_TRUE(syms.count(std::string("p") + s)) << "p" << s << " is not exported";
  }
}
