// Communicator lifecycle: init (rank, config, all, scalable; blocking and nonblocking), split, shrink,
// finalize, destroy, abort, revoke, async error, and the queries. Owns ncclComm's out-of-line members
// because the parts it holds (connections, executor) are complete only here.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/api_common.h"
#include "api/group.h"
#include "collectives/device_comm.h"
#include "collectives/host_executor.h"
#include "collectives/tuner.h"
#include "collectives/tuning_agreement.h"
#include "core/bootstrap.h"
#include "core/param.h"
#include "core/peer_info.h"
#include "transport/net/proxy_affinity.h"
#include "transport/transport.h"

ncclComm::ncclComm() = default;

ncclComm::~ncclComm() {
  if (initThread.joinable()) initThread.join();
  devExec.reset();
  exec.reset();
  conns.reset();
  if (bootstrap) bootstrap->close();
  bootstrap.reset();
  magic = braid::kCommDeadMagic;
}

void ncclComm::setLastError(const std::string& msg) {
  std::lock_guard<std::mutex> lock(errMu);
  lastError = msg;
}

std::string ncclComm::getLastError() {
  std::lock_guard<std::mutex> lock(errMu);
  return lastError;
}

namespace braid {
namespace {

constexpr int kMaxHostChannels = 32;     // CPU threads per host communicator
constexpr int kTagSplitId = 0x5000;      // + split sequence, over the parent's bootstrap
constexpr int kTagShrinkId = 0x6000;

// NCCL_CTA_POLICY overrides config.CTAPolicy (as NCCL's environment does); then the policy's bound on CTAs
// (kEfficiencyPolicyCtas, comm.h).
void applyCtaPolicy(CommConfig* out) {
  const int64_t env = params::CtaPolicy();
  if (env >= 0) {
    if ((env & ~int64_t{NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO}) != 0) {
      BRAID_WARN("NCCL_CTA_POLICY=%lld has unknown bits (0 default, 1 efficiency, 2 zero); ignored",
                 static_cast<long long>(env));
    } else {
      out->ctaPolicy = static_cast<int>(env);
    }
  }
  if (out->ctaPolicy == NCCL_CTA_POLICY_DEFAULT) return;
  const int cap = std::max(kEfficiencyPolicyCtas, out->minChannels);
  if (out->maxChannels != -1 && out->maxChannels <= cap) return;
  if (out->maxChannels != -1)
    BRAID_INFO(kSubInit, "CTA policy 0x%x: config.maxCTAs %d lowered to %d", out->ctaPolicy, out->maxChannels, cap);
  out->maxChannels = cap;
}

// Reads the config the caller passed, honouring its size (older headers carry fewer fields).
ncclResult_t parseConfig(const ncclConfig_t* cfg, const char* fn, CommConfig* out) {
  int64_t envBlocking = params::CommBlocking();
  out->blocking = envBlocking == 0 ? 0 : 1;
  if (cfg == nullptr) {
    applyCtaPolicy(out);
    return ncclSuccess;
  }
  if (cfg->magic != 0xcafebeef)
    return recordError(ncclInvalidArgument,
                       "%s: config magic 0x%x is wrong (initialise it with NCCL_CONFIG_INITIALIZER)", fn, cfg->magic);
  size_t size = cfg->size;
  auto has = [&](size_t offset, size_t len) { return size >= offset + len; };
  if (has(offsetof(ncclConfig_t, blocking), sizeof(int)) && cfg->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (cfg->blocking != 0 && cfg->blocking != 1)
      return recordError(ncclInvalidArgument, "%s: config.blocking must be 0 or 1, not %d", fn, cfg->blocking);
    out->blocking = cfg->blocking;
  }
  if (has(offsetof(ncclConfig_t, minCTAs), sizeof(int)) && cfg->minCTAs != NCCL_CONFIG_UNDEF_INT) {
    if (cfg->minCTAs <= 0)
      return recordError(ncclInvalidArgument, "%s: config.minCTAs must be positive, not %d", fn, cfg->minCTAs);
    out->minChannels = cfg->minCTAs;
  }
  if (has(offsetof(ncclConfig_t, maxCTAs), sizeof(int)) && cfg->maxCTAs != NCCL_CONFIG_UNDEF_INT) {
    if (cfg->maxCTAs <= 0)
      return recordError(ncclInvalidArgument, "%s: config.maxCTAs must be positive, not %d", fn, cfg->maxCTAs);
    out->maxChannels = cfg->maxCTAs;
  }
  if (out->minChannels != -1 && out->maxChannels != -1 && out->minChannels > out->maxChannels)
    return recordError(ncclInvalidArgument, "%s: config.minCTAs %d > config.maxCTAs %d", fn, out->minChannels,
                       out->maxChannels);
  if (has(offsetof(ncclConfig_t, CTAPolicy), sizeof(int)) && cfg->CTAPolicy != NCCL_CONFIG_UNDEF_INT) {
    if ((cfg->CTAPolicy & ~(NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO)) != 0)
      return recordError(ncclInvalidArgument, "%s: config.CTAPolicy 0x%x has unknown bits", fn, cfg->CTAPolicy);
    out->ctaPolicy = cfg->CTAPolicy;
  }
  if (has(offsetof(ncclConfig_t, commName), sizeof(char*)) && cfg->commName != nullptr) out->name = cfg->commName;
  if (has(offsetof(ncclConfig_t, splitShare), sizeof(int)) && cfg->splitShare != NCCL_CONFIG_UNDEF_INT) {
    if (cfg->splitShare != 0 && cfg->splitShare != 1)
      return recordError(ncclInvalidArgument, "%s: config.splitShare must be 0 or 1, not %d", fn, cfg->splitShare);
    out->splitShare = cfg->splitShare;
  }
  // config.cgaClusterSize: thread-block clusters for the ring collectives (launch_attrs.h); NCCL takes sizes
  // above its limit as the limit, and so does clusterSetting.
  if (has(offsetof(ncclConfig_t, cgaClusterSize), sizeof(int)) && cfg->cgaClusterSize != NCCL_CONFIG_UNDEF_INT) {
    if (cfg->cgaClusterSize < 0)
      return recordError(ncclInvalidArgument, "%s: config.cgaClusterSize must be >= 0, not %d", fn,
                         cfg->cgaClusterSize);
    out->cgaClusterSize = cfg->cgaClusterSize;
  }
  // Fields Braid accepts but does not act on (no CollNet or NVLS here) are still checked, so a wrong value
  // fails here as it would with NCCL instead of being silently taken.
  auto flag01 = [&](size_t off, int v, const char* field) -> ncclResult_t {
    if (has(off, sizeof(int)) && v != NCCL_CONFIG_UNDEF_INT && v != 0 && v != 1)
      return recordError(ncclInvalidArgument, "%s: config.%s must be 0 or 1, not %d", fn, field, v);
    return ncclSuccess;
  };
  BRAID_CHECK(flag01(offsetof(ncclConfig_t, collnetEnable), cfg->collnetEnable, "collnetEnable"));
  BRAID_CHECK(flag01(offsetof(ncclConfig_t, shrinkShare), cfg->shrinkShare, "shrinkShare"));
  if (has(offsetof(ncclConfig_t, nvlsCTAs), sizeof(int)) && cfg->nvlsCTAs != NCCL_CONFIG_UNDEF_INT &&
      cfg->nvlsCTAs <= 0)
    return recordError(ncclInvalidArgument, "%s: config.nvlsCTAs must be positive, not %d", fn, cfg->nvlsCTAs);
  applyCtaPolicy(out);
  return ncclSuccess;
}

bool gpusVisible() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

// The bootstrap's wait context follows the comm's, except for its abort flag (ncclComm::bootWait).
void syncBootWait(ncclComm* comm) {
  comm->bootWait = comm->wait;
  comm->bootWait.abortFlag = &comm->bootstrapAbort;
}

// Everything after argument checks; runs on the caller's thread or the nonblocking init thread.
ncclResult_t initBody(ncclComm* comm, const ncclUniqueId& id) {
  RankTag tag(comm->rank);
  comm->hostComm = params::HostComm() != 0 || !gpusVisible();
  fillLocalPeerInfo(&comm->self);
  comm->self.rank = comm->rank;
  comm->self.cudaDev = -1;
  comm->self.busId = -1;
  comm->self.isHost = comm->hostComm ? 1 : 0;
  comm->cudaDev = -1;
  if (!comm->hostComm) BRAID_CHECK(describeLocalDevice(comm));
  comm->wait.abortFlag = &comm->abortFlag;
  comm->wait.timeoutSec = static_cast<double>(params::BootstrapTimeout());
  comm->wait.self = &comm->self;
  comm->wait.commName = comm->config.name.empty() ? "braid" : comm->config.name.c_str();
  syncBootWait(comm);
  BRAID_CHECK(Bootstrap::create(id, comm->rank, comm->nranks, comm->self, &comm->bootWait, &comm->bootstrap));
  comm->peers = comm->bootstrap->peers();
  comm->wait.peers = &comm->peers;
  syncBootWait(comm);
  for (const PeerInfo& p : comm->peers)
    if (p.isHost != comm->self.isHost)
      return recordError(ncclInvalidUsage,
                         "rank %d: rank %d is a %s communicator but this rank is a %s one (set BRAID_HOST_COMM the "
                         "same way on every rank)",
                         comm->rank, p.rank, p.isHost ? "host-buffer" : "GPU", comm->hostComm ? "host-buffer" : "GPU");
  if (!comm->hostComm) {
    BRAID_CHECK(initDeviceComm(comm));
    comm->wait.timeoutSec = static_cast<double>(params::Timeout());
    syncBootWait(comm);
    return ncclSuccess;
  }

  BRAID_CHECK(agreeOnChannels(comm, params::HostChannels(), kMaxHostChannels));

  comm->conns = std::make_unique<ConnectionManager>(&comm->wait, comm->bootstrap.get(), &comm->self, &comm->peers);
  comm->conns->setBuffBytes(comm->buffBytes);
  BRAID_CHECK(comm->conns->connectRing(comm->nChannels));
  comm->wait.timeoutSec = static_cast<double>(params::Timeout());
  syncBootWait(comm);
  comm->exec = std::make_unique<HostExecutor>(comm->conns.get(), &comm->wait, comm->rank, comm->nranks,
                                              comm->nChannels);
  TunerConfig local, tuning;
  BRAID_CHECK(loadTunerConfig(&local));  // already validated in commInit; read again on this thread
  local.buffSize = comm->buffBytes;  // the FIFOs' size, agreed in agreeOnChannels (which warns of differences)
  // The ring's class: socket if any of this rank's ring links is; agreed as the slowest over ranks.
  TuningFacts facts, agreedFacts;
  facts.transport = static_cast<int32_t>(TransportClass::HostShm);
  for (int c = 0; c < comm->nChannels && comm->nranks > 1; ++c)
    for (const ConnInfo* ci : {comm->conns->ringSend(c), comm->conns->ringRecv(c)})
      if (!ci || ci->kind == TransportKind::Net) facts.transport = static_cast<int32_t>(TransportClass::HostSocket);
  BRAID_CHECK(agreeTuning(comm, local, facts, &tuning, &agreedFacts));
  comm->exec->setTuning(tuning, static_cast<TransportClass>(agreedFacts.transport));
  BRAID_INFO(kSubInit, "comm %p rank %d nranks %d: host communicator ready, %d channel(s), ring next %s", (void*)comm,
             comm->rank, comm->nranks, comm->nChannels, comm->conns->transportName((comm->rank + 1) % comm->nranks));
  return ncclSuccess;
}

ncclResult_t commInit(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* cfg,
                      const char* fn) {
  BRAID_CHECK(checkPtr(out, "comm", fn));
  *out = nullptr;
  if (nranks < 1) return recordError(ncclInvalidArgument, "%s: nranks %d is invalid (must be >= 1)", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return recordError(ncclInvalidArgument, "%s: rank %d is out of range (nranks %d)", fn, rank, nranks);
  UniqueIdData idData;
  BRAID_CHECK(bootstrapParseId(id, &idData));
  CommConfig config;
  BRAID_CHECK(parseConfig(cfg, fn, &config));
  // A malformed NCCL_PROTO/NCCL_ALGO is refused here, before any rank waits on the others.
  TunerConfig tuning;
  BRAID_CHECK(loadTunerConfig(&tuning));
  BRAID_CHECK(checkProxyCpusSyntax(params::ProxyCpus()));

  auto comm = std::make_unique<ncclComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->config = config;
  comm->commHash = idData.secret;
  if (config.blocking && !inGroup()) {
    BRAID_CHECK(initBody(comm.get(), id));
    *out = comm.release();
    return ncclSuccess;
  }
  // Nonblocking, or inside a group: the handle is valid at once; ncclCommGetAsyncError reports
  // ncclInProgress until the init thread is done.
  ncclComm* c = comm.release();
  c->asyncError.store(ncclInProgress);
  // The comm belongs to the caller's current device, not to whatever device the init thread starts on.
  int callerDev = -1;
  if (!params::HostComm() && gpusVisible() && cudaGetDevice(&callerDev) != cudaSuccess) {
    cudaGetLastError();
    callerDev = -1;
  }
  auto start = [c, id, callerDev]() {
    std::lock_guard<std::mutex> lock(c->initMu);  // a group's handle is already out: others may look at it
    c->initThread = std::thread([c, id, callerDev]() {
      ErrorScope scope;
      if (callerDev >= 0) cudaSetDevice(callerDev);
      ncclResult_t res = initBody(c, id);
      if (res != ncclSuccess) {
        std::string msg = pendingError().empty() ? errorString(res) : pendingError();
        c->setLastError(msg);
        setThreadLastError(msg);
      }
      c->asyncError.store(res);
    });
  };
  *out = c;
  if (inGroup()) {
    // NCCL's one-thread-many-GPUs pattern (ncclGroupStart; ncclCommInitRank per GPU; ncclGroupEnd): the
    // inits start together at the outermost ncclGroupEnd (one waiting here would block the thread that must
    // start its peers), which also waits for blocking ones.
    ncclResult_t res = deferGroupInit(c, config.blocking != 0, [c, start]() {
      c->deferredInit.store(false);
      start();
    });
    if (res != ncclSuccess) {
      *out = nullptr;
      delete c;
      return res;
    }
    return config.blocking ? ncclSuccess : ncclInProgress;
  }
  start();
  return ncclInProgress;
}

void destroyComm(ncclComm* comm, bool abort) {
  if (abort) {
    comm->abortFlag.store(1);
    comm->bootstrapAbort.store(1);
    if (comm->conns) comm->conns->abort();
    if (comm->bootstrap) comm->bootstrap->close();
  }
  {
    std::lock_guard<std::mutex> lock(comm->initMu);
    if (comm->initThread.joinable()) comm->initThread.join();
  }
  // An abort while another thread's open group holds ops or the deferred init of this comm: that group's end
  // will still look at it (and report the abort), so it stays allocated. Read before waiting for calls to
  // leave: a group end marks the comm in use before it releases its queued count (runQueued).
  const bool heldByAGroup = comm->groupQueued.load() > 0 || comm->deferredInit.load();
  // A collective still running on another thread (abort from a watchdog) returns promptly once the abort
  // flag is up; wait for it to leave. Should one not leave, leak the comm rather than free it under it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (comm->activeCalls.load() > 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      BRAID_WARN("rank %d: %d call(s) still running on the communicator 30 s after %s; not freeing it", comm->rank,
                 comm->activeCalls.load(), abort ? "ncclCommAbort" : "ncclCommDestroy");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (heldByAGroup) {
    BRAID_WARN("rank %d: ncclCommAbort while another thread's open group holds operations or the init of the "
               "communicator; not freeing it",
               comm->rank);
    return;
  }
  delete comm;
}

}  // namespace
}  // namespace braid

using namespace braid;

namespace braid {
namespace {
// An init that fails inside a group fails the group too (its other inits would wait for this rank).
ncclResult_t noteInGroup(ncclResult_t res) {
  if (res != ncclSuccess && res != ncclInProgress && inGroup()) noteGroupError(res);
  return res;
}
}  // namespace
}  // namespace braid

BRAID_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
          ncclConfig_t* config) {
  return apiCall("ncclCommInitRankConfig", nullptr,
                 [&] { return noteInGroup(commInit(comm, nranks, commId, rank, config, "ncclCommInitRankConfig")); });
}

BRAID_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return apiCall("ncclCommInitRank", nullptr,
                 [&] { return noteInGroup(commInit(comm, nranks, commId, rank, nullptr, "ncclCommInitRank")); });
}

BRAID_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
          ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiCall("ncclCommInitRankScalable", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(commIds, "commIds", "ncclCommInitRankScalable"));
    if (nId < 1 || nId > nranks)
      return recordError(ncclInvalidArgument, "ncclCommInitRankScalable: nId %d is invalid (must be 1..nranks %d)",
                         nId, nranks);
    // One root serves any number of ranks here; the first id is the one every rank shares.
    return noteInGroup(commInit(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable"));
  });
}

BRAID_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return apiCall("ncclCommInitAll", nullptr, [&]() -> ncclResult_t {
    BRAID_CHECK(checkPtr(comms, "comms", "ncclCommInitAll"));
    if (ndev < 1) return recordError(ncclInvalidArgument, "ncclCommInitAll: ndev %d is invalid (must be >= 1)", ndev);
    // Every entry is written (a comm or NULL) whatever happens, so the cleanup below and the caller never see
    // what the array held before.
    for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
    // Devices are checked before any rank starts: a rank that cannot start would leave the others waiting
    // for it in the bootstrap until its timeout.
    const bool devices = !params::HostComm() && gpusVisible();
    int nDevices = 0;
    if (devices && cudaGetDeviceCount(&nDevices) != cudaSuccess) {
      cudaGetLastError();
      nDevices = 0;
    }
    for (int i = 0; i < ndev; ++i) {
      const int d = devlist ? devlist[i] : i;
      if (d < 0 || (devices && d >= nDevices)) {
        if (devlist)
          return recordError(ncclInvalidArgument, "ncclCommInitAll: devlist[%d] = %d is not a device (%d visible)", i,
                             d, nDevices);
        return recordError(ncclInvalidArgument,
                           "ncclCommInitAll: ndev %d with devlist NULL needs %d devices, %d are visible", ndev, ndev,
                           nDevices);
      }
    }
    if (devlist != nullptr)
      for (int i = 0; i < ndev; ++i)
        for (int j = 0; j < i; ++j)
          if (devlist[i] == devlist[j])
            return recordError(ncclInvalidUsage, "ncclCommInitAll: devlist[%d] and devlist[%d] are both device %d", j,
                               i, devlist[i]);
    ncclUniqueId id;
    BRAID_CHECK(bootstrapCreateRootId(&id));
    std::vector<ncclResult_t> results(ndev, ncclSuccess);
    std::vector<std::string> messages(ndev);
    std::vector<std::thread> threads;
    for (int i = 0; i < ndev; ++i)
      threads.emplace_back([&, i]() {
        ErrorScope scope;
        // Rank i drives device devlist[i] (or i): the device is chosen by the thread that creates the comm.
        if (devices) {
          cudaError_t e = cudaSetDevice(devlist ? devlist[i] : i);
          if (e != cudaSuccess) {
            results[i] = recordError(ncclInvalidArgument, "ncclCommInitAll: cannot use device %d (devlist[%d]): %s",
                                     devlist ? devlist[i] : i, i, cudaGetErrorString(e));
            messages[i] = pendingError();
            return;
          }
        }
        results[i] = commInit(&comms[i], ndev, id, i, nullptr, "ncclCommInitAll");
        messages[i] = pendingError();
      });
    for (auto& t : threads) t.join();
    for (int i = 0; i < ndev; ++i)
      if (results[i] != ncclSuccess) {
        for (int j = 0; j < ndev; ++j)
          if (comms[j]) destroyComm(comms[j], true), comms[j] = nullptr;
        return recordError(results[i], "ncclCommInitAll: rank %d: %s", i, messages[i].c_str());
      }
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return apiCall("ncclCommFinalize", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommFinalize"));
    BRAID_CHECK(checkInitDone(comm, "ncclCommFinalize"));
    // Host communicators complete every operation before returning, so there is nothing left to flush.
    comm->finalized = true;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return apiCall("ncclCommDestroy", nullptr, [&]() -> ncclResult_t {
    if (comm == nullptr) return ncclSuccess;
    BRAID_CHECK(checkComm(comm, "ncclCommDestroy"));
    // Freeing it would leave the group's ncclGroupEnd with a dangling communicator.
    if (int mine = groupOpsOf(comm))
      return recordError(ncclInvalidUsage,
                         "ncclCommDestroy: %d operation(s) of this communicator are queued in an open group on this "
                         "thread (ncclGroupStart without ncclGroupEnd); end the group first, or use ncclCommAbort",
                         mine);
    if (comm->deferredInit.load())
      return recordError(ncclInvalidUsage,
                         "ncclCommDestroy: the communicator's init is queued in an open group (ncclCommInitRank inside "
                         "ncclGroupStart, no ncclGroupEnd yet); end the group first, or use ncclCommAbort");
    if (int queued = comm->groupQueued.load())
      return recordError(ncclInvalidUsage,
                         "ncclCommDestroy: %d operation(s) of this communicator are queued in another thread's open "
                         "group; end that group first",
                         queued);
    destroyComm(comm, false);
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return apiCall("ncclCommAbort", nullptr, [&]() -> ncclResult_t {
    if (comm == nullptr) return ncclSuccess;
    BRAID_CHECK(checkComm(comm, "ncclCommAbort"));
    // Ops of this comm in the caller's open group are dropped; that group's end then fails and runs nothing.
    char reason[160];
    snprintf(reason, sizeof(reason), "rank %d: its communicator was aborted (ncclCommAbort) while queued", comm->rank);
    if (int dropped = dropGroupOps(comm, reason))
      BRAID_INFO(kSubInit, "ncclCommAbort: dropped %d operation(s) queued in this thread's open group", dropped);
    if (dropGroupInit(comm))
      BRAID_INFO(kSubInit, "ncclCommAbort: dropped the communicator's init queued in this thread's open group");
    destroyComm(comm, true);
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return apiCall("ncclCommRevoke", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommRevoke"));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return recordError(ncclInvalidArgument, "ncclCommRevoke: revokeFlags %d is invalid", revokeFlags);
    // Stop whatever is in flight; the comm can only be destroyed or shrunk afterwards. The bootstrap stays
    // usable (its own abort flag) so that the members can agree on the shrunk comm.
    comm->revoked.store(true);
    comm->abortFlag.store(1);
    comm->bootstrapAbort.store(1);  // also stops a collective waiting in the bootstrap (on-demand connects)
    if (comm->conns) comm->conns->abort();
    // Once the calls in flight have left, the bootstrap is usable again for ncclCommShrink.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (comm->activeCalls.load() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (comm->activeCalls.load() == 0) {
      comm->bootstrapAbort.store(0);
    } else {
      BRAID_WARN("rank %d: ncclCommRevoke: %d call(s) still running on the communicator after 10 s; its bootstrap "
                 "stays aborted, so ncclCommShrink on it will fail",
                 comm->rank, comm->activeCalls.load());
    }
    int expected = ncclSuccess;
    comm->asyncError.compare_exchange_strong(expected, ncclInvalidUsage);
    comm->setLastError("communicator was revoked");
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return apiCall("ncclCommGetAsyncError", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommGetAsyncError"));
    BRAID_CHECK(checkPtr(asyncError, "asyncError", "ncclCommGetAsyncError"));
    *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
    if (*asyncError == ncclSuccess && comm->devExec) {
      // Kernels report aborts, broken connections and mismatched sizes through the device executor.
      ncclResult_t dev = comm->devExec->asyncError();
      if (dev != ncclSuccess) {
        if (!pendingError().empty()) comm->setLastError(pendingError());
        int expected = ncclSuccess;
        comm->asyncError.compare_exchange_strong(expected, dev);
        *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
      }
    }
    if (*asyncError != ncclInProgress) {
      std::lock_guard<std::mutex> lock(comm->initMu);
      if (comm->initThread.joinable()) comm->initThread.join();
    }
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return apiCall("ncclCommCount", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommCount"));
    BRAID_CHECK(checkPtr(count, "count", "ncclCommCount"));
    *count = comm->nranks;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return apiCall("ncclCommCuDevice", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommCuDevice"));
    BRAID_CHECK(checkPtr(device, "device", "ncclCommCuDevice"));
    *device = comm->cudaDev;
    return ncclSuccess;
  });
}

BRAID_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return apiCall("ncclCommUserRank", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommUserRank"));
    BRAID_CHECK(checkPtr(rank, "rank", "ncclCommUserRank"));
    *rank = comm->rank;
    return ncclSuccess;
  });
}

namespace braid {
namespace {

// Members of a derived communicator agree on an id: the leader (new rank 0) makes one and sends it to the
// others over the parent's bootstrap.
ncclResult_t shareNewId(ncclComm* parent, const std::vector<int>& members, int tag, ncclUniqueId* id) {
  if (members[0] == parent->rank) {
    BRAID_CHECK(bootstrapCreateRootId(id));
    for (size_t i = 1; i < members.size(); ++i) BRAID_CHECK(parent->bootstrap->send(members[i], tag, id, sizeof(*id)));
    return ncclSuccess;
  }
  return parent->bootstrap->recv(members[0], tag, id, sizeof(*id));
}

// No config: the child takes the parent's (as NCCL): blocking, the CTA bounds and policy, splitShare, the
// cluster size.
ncclResult_t inheritConfig(ncclComm* parent, ncclConfig_t* cfg, ncclConfig_t* tmp) {
  if (cfg != nullptr) return ncclSuccess;
  *tmp = NCCL_CONFIG_INITIALIZER;
  const CommConfig& p = parent->config;
  tmp->blocking = p.blocking;
  if (p.minChannels > 0) tmp->minCTAs = p.minChannels;
  if (p.maxChannels > 0) tmp->maxCTAs = p.maxChannels;
  tmp->CTAPolicy = p.ctaPolicy;
  tmp->splitShare = p.splitShare;
  if (p.cgaClusterSize >= 0) tmp->cgaClusterSize = p.cgaClusterSize;
  // The name too (it labels the child's errors and waits); the parent outlives the split, so its string does.
  if (!p.name.empty()) tmp->commName = p.name.c_str();
  return ncclSuccess;
}

}  // namespace
}  // namespace braid

namespace braid {
namespace {
// A caller's config kept for a split or shrink that runs at the group's end: the bytes its size covers (an
// older header's struct is shorter) and its strings, which the caller may free before ncclGroupEnd.
class DeferredConfig {
 public:
  explicit DeferredConfig(const ncclConfig_t* c) : has_(c != nullptr) {
    if (!c) return;
    cfg_ = NCCL_CONFIG_INITIALIZER;
    std::memcpy(&cfg_, c, std::min(c->size, sizeof(cfg_)));
    cfg_.size = std::min(c->size, sizeof(cfg_));
    const bool hasName = cfg_.size >= offsetof(ncclConfig_t, commName) + sizeof(char*) && cfg_.commName;
    const bool hasNet = cfg_.size >= offsetof(ncclConfig_t, netName) + sizeof(char*) && cfg_.netName;
    if (hasName) name_ = cfg_.commName;
    if (hasNet) net_ = cfg_.netName;
    hasName_ = hasName;
    hasNet_ = hasNet;
  }
  // The config to use, its strings pointing at the copies (valid while this object lives).
  const ncclConfig_t* get() {
    if (!has_) return nullptr;
    if (hasName_) cfg_.commName = name_.c_str();
    if (hasNet_) cfg_.netName = net_.c_str();
    return &cfg_;
  }

 private:
  bool has_ = false, hasName_ = false, hasNet_ = false;
  ncclConfig_t cfg_{};
  std::string name_, net_;
};

// The split itself: the color/key exchange over the parent's bootstrap, the new id, the child's init.
ncclResult_t splitBody(ncclComm* comm, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
  RankTag tag(comm->rank);
  struct Entry {
    int color, key, rank;
  };
  std::vector<Entry> all(comm->nranks);
  all[comm->rank] = {color, key, comm->rank};
  BRAID_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Entry)));
  int seq = comm->splitCount++;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  std::vector<Entry> mine;
  for (const Entry& e : all)
    if (e.color == color) mine.push_back(e);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  std::vector<int> members;
  int newRank = -1;
  for (const Entry& e : mine) {
    if (e.rank == comm->rank) newRank = static_cast<int>(members.size());
    members.push_back(e.rank);
  }
  ncclUniqueId id;
  BRAID_CHECK(shareNewId(comm, members, kTagSplitId + (seq & 0xfff), &id));
  ncclConfig_t tmp;
  BRAID_CHECK(inheritConfig(comm, const_cast<ncclConfig_t*>(config), &tmp));
  return commInit(newcomm, static_cast<int>(members.size()), id, newRank, config ? config : &tmp, "ncclCommSplit");
}
}  // namespace
}  // namespace braid

BRAID_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
          ncclConfig_t* config) {
  return apiCall("ncclCommSplit", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommSplit"));
    BRAID_CHECK(checkInitDone(comm, "ncclCommSplit"));
    if (comm->revoked.load())
      return recordError(ncclInvalidUsage,
                         "ncclCommSplit: rank %d: the communicator was revoked; it can only be shrunk or destroyed",
                         comm->rank);
    BRAID_CHECK(checkPtr(newcomm, "newcomm", "ncclCommSplit"));
    *newcomm = nullptr;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return recordError(ncclInvalidArgument, "ncclCommSplit: color %d is invalid (>= 0 or NCCL_SPLIT_NOCOLOR)",
                         color);
    if (!comm->bootstrap) return recordError(ncclInvalidUsage, "ncclCommSplit: communicator is not initialised");
    CommConfig checked;
    BRAID_CHECK(parseConfig(config, "ncclCommSplit", &checked));  // a bad config fails at the call, in a group too
    if (inGroup()) {
      // One thread may drive several ranks' splits in one group: each split's exchange waits for the other
      // ranks', so they run together at the group's end (splits of one parent in call order). *newcomm is
      // written then; the config is copied now.
      DeferredConfig cfg(config);
      deferGroupJob(comm, [comm, color, key, newcomm, cfg]() mutable {
        return splitBody(comm, color, key, newcomm, cfg.get());
      });
      return ncclSuccess;
    }
    return splitBody(comm, color, key, newcomm, config);
  });
}

namespace braid {
namespace {
// The shrink itself: stop watching the excluded ranks, agree on the new id among the members, init the child.
ncclResult_t shrinkBody(ncclComm* comm, const std::vector<uint8_t>& excluded, const std::vector<int>& members,
                        int newRank, ncclComm_t* newcomm, const ncclConfig_t* config) {
  RankTag tag(comm->rank);
  // Excluded ranks may be dead: stop watching them, and clear a sticky error they caused.
  auto ignore = [&] {
    comm->shrinkIgnore = excluded;
    comm->wait.ignore = &comm->shrinkIgnore;
    comm->bootWait.ignore = &comm->shrinkIgnore;
  };
  if (comm->devExec) {
    comm->devExec->withPeerWatchPaused(ignore);  // its thread reads the ignored ranks
  } else {
    ignore();
  }
  int seq = comm->shrinkCount++;
  ncclUniqueId id;
  BRAID_CHECK(shareNewId(comm, members, kTagShrinkId + (seq & 0xfff), &id));
  ncclConfig_t tmp;
  BRAID_CHECK(inheritConfig(comm, const_cast<ncclConfig_t*>(config), &tmp));
  return commInit(newcomm, static_cast<int>(members.size()), id, newRank, config ? config : &tmp, "ncclCommShrink");
}
}  // namespace
}  // namespace braid

BRAID_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
          ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return apiCall("ncclCommShrink", comm, [&]() -> ncclResult_t {
    BRAID_CHECK(checkComm(comm, "ncclCommShrink"));
    BRAID_CHECK(checkInitDone(comm, "ncclCommShrink"));
    BRAID_CHECK(checkPtr(newcomm, "newcomm", "ncclCommShrink"));
    RankTag tag(comm->rank);
    *newcomm = nullptr;
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr))
      return recordError(ncclInvalidArgument, "ncclCommShrink: excludeRanksList/excludeRanksCount (%d) are invalid",
                         excludeRanksCount);
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
      return recordError(ncclInvalidArgument, "ncclCommShrink: shrinkFlags %d is invalid", shrinkFlags);
    std::vector<uint8_t> excluded(comm->nranks, 0);
    for (int i = 0; i < excludeRanksCount; ++i) {
      BRAID_CHECK(checkRank(excludeRanksList[i], comm->nranks, "excludeRanksList entry", "ncclCommShrink"));
      excluded[excludeRanksList[i]] = 1;
    }
    if (excluded[comm->rank])
      return recordError(ncclInvalidArgument, "ncclCommShrink: this rank (%d) is in excludeRanksList", comm->rank);
    std::vector<int> members;
    int newRank = -1;
    for (int r = 0; r < comm->nranks; ++r)
      if (!excluded[r]) {
        if (r == comm->rank) newRank = static_cast<int>(members.size());
        members.push_back(r);
      }
    CommConfig checked;
    BRAID_CHECK(parseConfig(config, "ncclCommShrink", &checked));  // a bad config fails at the call, in a group too
    if (inGroup()) {
      // As ncclCommSplit: one thread may shrink several ranks' comms in one group; they run at its end.
      DeferredConfig cfg(config);
      deferGroupJob(comm, [comm, excluded, members, newRank, newcomm, cfg]() mutable {
        return shrinkBody(comm, excluded, members, newRank, newcomm, cfg.get());
      });
      return ncclSuccess;
    }
    return shrinkBody(comm, excluded, members, newRank, newcomm, config);
  });
}
