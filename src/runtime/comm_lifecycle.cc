// Communicator lifecycle below the C API: the config, init (blocking, nonblocking, inside a group), split,
// shrink, revoke, destroy and abort, and the async error query. The API layer checks arguments, then calls in.
#include "runtime/comm_lifecycle.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/library_info.h"
#include "core/log.h"
#include "core/param.h"
#include "core/peer_info.h"
#include "core/peer_watch.h"
#include "core/result.h"
#include "runtime/executor.h"
#include "runtime/gpu/gpu_comm.h"
#include "runtime/gpu/gpu_topology.h"
#include "runtime/group.h"
#include "runtime/host/host_executor.h"
#include "runtime/ring_order.h"
#include "runtime/tuning_agreement.h"
#include "transport/transport.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

constexpr int kTagSplitId = 0x5000;      // + split sequence, over the parent's bootstrap
constexpr int kTagShrinkId = 0x6000;
// How long ncclCommAbort lets a completed collective's queued sends leave before it closes the connections.
constexpr double kAbortDrainSec = 1.0;

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
}  // namespace

ncclResult_t parseCommConfig(const ncclConfig_t* cfg, const char* fn, CommConfig* out) {
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

namespace {
// The bootstrap's wait context follows the comm's, except for its abort flag (ncclComm::bootWait).
void syncBootWait(ncclComm* comm) {
  comm->bootWait = comm->wait;
  comm->bootWait.abortFlag = &comm->bootstrapAbort;
}

// BRAID_TEST_KILL_AT_BOOTSTRAP: die the way a killed rank does (no cleanup) as a chosen bootstrap begins.
void testKillAtBootstrap() {
  static std::atomic<int64_t> started{0};
  testKillOnCall(started, params::TestKillAtBootstrap());
}

// A split's or shrink's child: watch its members (as the parent knows them) while its bootstrap runs; one that
// dies aborts the bootstrap (MemberWatch).
void startMemberWatch(ncclComm* comm) {
  MemberWatch* mw = comm->memberWatch.get();
  if (mw == nullptr) return;
  mw->ctx.self = &mw->self;
  mw->ctx.peers = &mw->peers;
  mw->ctx.ignore = &mw->ignore;
  mw->ctx.commName = comm->wait.commName;
  if (!PeerWatch::observable(&mw->ctx)) return;
  try {
    mw->watch = std::make_unique<PeerWatch>(
        &mw->ctx,
        [comm, mw](int, const std::string& message) {
          {
            std::lock_guard<std::mutex> lock(mw->mu);
            mw->message = message;
          }
          mw->fired.store(true);
          comm->bootstrapAbort.store(1);
          comm->abortFlag.store(1);
        },
        std::chrono::milliseconds(std::max<int64_t>(10, std::min<int64_t>(params::PeerWatchMs(), 100))));
  } catch (const std::system_error& e) {
    BRAID_WARN("rank %d: cannot watch the members of the new communicator (%s): a member that dies during its "
               "bootstrap is found only at BRAID_BOOTSTRAP_TIMEOUT", comm->rank, e.what());
  }
}

// Stops the watch. A member seen dead fails the init (even where the bootstrap completed just before: the
// communicator's connections could not be made), naming it in the parent's ranks.
ncclResult_t endMemberWatch(ncclComm* comm, ncclResult_t boot) {
  MemberWatch* mw = comm->memberWatch.get();
  if (mw == nullptr) return boot;
  mw->watch.reset();  // joins its thread
  if (mw->fired.load()) {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(mw->mu);
      message = mw->message;
    }
    clearPendingError();  // the aborted bootstrap's own message says less than the watch's
    return recordError(ncclRemoteError, "rank %d: a member of the new communicator died during its bootstrap: %s "
                       "(ranks of the parent communicator)", comm->rank, message.c_str());
  }
  comm->memberWatch.reset();
  return boot;
}

// The parent's view of a child's members (parent ranks), the others ignored.
std::unique_ptr<MemberWatch> memberWatchOf(const ncclComm* parent, const std::vector<int>& members) {
  auto mw = std::make_unique<MemberWatch>();
  mw->self = parent->self;
  mw->peers = parent->peers;
  mw->ignore.assign(parent->peers.size(), 1);
  for (int r : members)
    if (r >= 0 && r < static_cast<int>(mw->ignore.size())) mw->ignore[r] = 0;
  return mw;
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
  testKillAtBootstrap();
  startMemberWatch(comm);
  const ncclResult_t boot =
      Bootstrap::create(id, comm->rank, comm->nranks, comm->self, &comm->bootWait, &comm->bootstrap);
  BRAID_CHECK(endMemberWatch(comm, boot));
  comm->peers = comm->bootstrap->peers();
  comm->wait.peers = &comm->peers;
  syncBootWait(comm);
  for (const PeerInfo& p : comm->peers)
    if (p.isHost != comm->self.isHost)
      return recordError(ncclInvalidUsage,
                         "rank %d: rank %d is a %s communicator but this rank is a %s one (set BRAID_HOST_COMM the "
                         "same way on every rank)",
                         comm->rank, p.rank, p.isHost ? "host-buffer" : "GPU", comm->hostComm ? "host-buffer" : "GPU");
  // GPU rings follow the host's topology: each rank's place in the ring searched over its host's GPUs. A rank
  // whose topology fails (a bad NCCL_TOPO_FILE) still joins the agreement, so its peers fail with it at once.
  // Host communicators run the rings BRAID_RING_ORDER names (else rank order), as many as it names.
  std::vector<int> hostPos;
  const ncclResult_t topo = comm->hostComm ? ncclSuccess : hostRingPositions(comm, kDeviceRingOrders, &hostPos);
  const ncclResult_t agreed = agreeRingOrder(comm, topo == ncclSuccess ? hostPos : std::vector<int>{kRingPosFailed},
                                             comm->hostComm ? kMaxRingOrders : kDeviceRingOrders);
  if (topo != ncclSuccess) return topo;
  BRAID_CHECK(agreed);
  if (!comm->hostComm) {
    BRAID_CHECK(initDeviceComm(comm));
    comm->wait.timeoutSec = static_cast<double>(params::Timeout());
    syncBootWait(comm);
    return ncclSuccess;
  }

  BRAID_CHECK(initHostComm(comm));
  comm->wait.timeoutSec = static_cast<double>(params::Timeout());
  syncBootWait(comm);
  return ncclSuccess;
}
}  // namespace

ncclResult_t commInit(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* cfg,
                      const char* fn, std::unique_ptr<MemberWatch> members) {
  showVersionOnce();          // once per process, as NCCL does
  warnUnimplementedParams();  // once per process
  if (out == nullptr) return recordError(ncclInvalidArgument, "%s: comm is NULL", fn);
  *out = nullptr;
  if (nranks < 1) return recordError(ncclInvalidArgument, "%s: nranks %d is invalid (must be >= 1)", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return recordError(ncclInvalidArgument, "%s: rank %d is out of range (nranks %d)", fn, rank, nranks);
  UniqueIdData idData;
  BRAID_CHECK(bootstrapParseId(id, &idData));
  CommConfig config;
  BRAID_CHECK(parseCommConfig(cfg, fn, &config));
  // A malformed NCCL_PROTO/NCCL_ALGO is refused here, before any rank waits on the others.
  TunerConfig tuning;
  BRAID_CHECK(loadTunerConfig(&tuning));
  BRAID_CHECK(checkTransportParams());

  auto comm = std::make_unique<ncclComm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->config = config;
  comm->commHash = bootstrapCommHash(idData);
  comm->memberWatch = std::move(members);
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
    // A host communicator with no call running and no error has completed all its work, yet its last sends
    // may still be on their way out through the NET proxy; peers may be receiving them. They leave first
    // (bounded: kAbortDrainSec). Anything else (a call in flight, a failed operation, a nonblocking init
    // not done, a GPU communicator whose kernels may still run) is aborted at once.
    const bool completed = comm->hostComm && comm->activeCalls.load() == 0 && comm->asyncError.load() == ncclSuccess;
    comm->abortFlag.store(1);
    comm->bootstrapAbort.store(1);
    if (comm->conns) comm->conns->abort(completed ? kAbortDrainSec : 0);
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
  return commInit(newcomm, static_cast<int>(members.size()), id, newRank, config ? config : &tmp, "ncclCommSplit",
                  memberWatchOf(comm, members));
}

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
  if (comm->exec) {
    comm->exec->withPeerWatchPaused(ignore);  // a peer watch's thread reads the ignored ranks
  } else {
    ignore();
  }
  int seq = comm->shrinkCount++;
  ncclUniqueId id;
  BRAID_CHECK(shareNewId(comm, members, kTagShrinkId + (seq & 0xfff), &id));
  ncclConfig_t tmp;
  BRAID_CHECK(inheritConfig(comm, const_cast<ncclConfig_t*>(config), &tmp));
  return commInit(newcomm, static_cast<int>(members.size()), id, newRank, config ? config : &tmp, "ncclCommShrink",
                  memberWatchOf(comm, members));
}
}  // namespace

ncclResult_t commSplit(ncclComm* comm, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
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
}

ncclResult_t commShrink(ncclComm* comm, const std::vector<uint8_t>& excluded, ncclComm_t* newcomm,
                        const ncclConfig_t* config) {
  std::vector<int> members;
  int newRank = -1;
  for (int r = 0; r < comm->nranks; ++r)
    if (!excluded[r]) {
      if (r == comm->rank) newRank = static_cast<int>(members.size());
      members.push_back(r);
    }
  if (inGroup()) {
    // As a split: one thread may shrink several ranks' comms in one group; they run at its end.
    DeferredConfig cfg(config);
    deferGroupJob(comm, [comm, excluded, members, newRank, newcomm, cfg]() mutable {
      return shrinkBody(comm, excluded, members, newRank, newcomm, cfg.get());
    });
    return ncclSuccess;
  }
  return shrinkBody(comm, excluded, members, newRank, newcomm, config);
}

ncclResult_t commRevoke(ncclComm* comm) {
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
}

ncclResult_t commAsyncError(ncclComm* comm, ncclResult_t* asyncError) {
  *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
  if (*asyncError == ncclSuccess && comm->exec) {
    // GPU kernels report aborts, broken connections and mismatched sizes through their executor.
    ncclResult_t found = comm->exec->asyncError();
    if (found != ncclSuccess) {
      if (!pendingError().empty()) comm->setLastError(pendingError());
      int expected = ncclSuccess;
      comm->asyncError.compare_exchange_strong(expected, found);
      *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
    }
  }
  if (*asyncError != ncclInProgress) {
    std::lock_guard<std::mutex> lock(comm->initMu);
    if (comm->initThread.joinable()) comm->initThread.join();
  }
  return ncclSuccess;
}

}  // namespace braid
