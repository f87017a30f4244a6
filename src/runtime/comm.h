// struct ncclComm: the communicator behind ncclComm_t, with its bootstrap, connections and executor. Created
// and torn down by runtime/comm_lifecycle.cc; the channel agreement every communicator runs at init.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/peer_info.h"
#include "core/peer_watch.h"
#include "core/wait.h"
#include "nccl.h"

namespace braid {
class ConnectionManager;
class Executor;
class ProgressTable;

// A user reduction op made by ncclRedOpCreatePreMulSum.
struct UserRedOp {
  bool inUse = false;
  ncclDataType_t dtype = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  uint8_t value[8] = {};         // host-immediate scalar
  const void* ptr = nullptr;     // device-resident scalar (host memory for host comms)
};

// config.CTAPolicy NCCL_CTA_POLICY_EFFICIENCY ("the fewest CTAs for decent performance", for compute that
// overlaps communication) bounds a communicator's channels, and so its collective launches' CTAs, to this, as
// a config.maxCTAs would (a smaller maxCTAs, or a larger minCTAs, wins; p2p launches: p2pCtaBudget). On
// 2xH200 a 16-64 MB all-reduce on 24 CTAs took NCCL's time and slowed an overlapped stream of compute kernels
// as much as NCCL (6%), where the default 128 slowed it by 9-10% (docs/TUNING.md, "CTA policy").
// NCCL_CTA_POLICY_ZERO (no CTAs where the copy engines can do the work) has no such path here and is taken as
// EFFICIENCY.
constexpr int kEfficiencyPolicyCtas = 24;

struct CommConfig {
  int blocking = 1;
  int minChannels = -1;
  int maxChannels = -1;  // config.maxCTAs, or kEfficiencyPolicyCtas under the efficiency policy
  int ctaPolicy = 0;     // config.CTAPolicy (NCCL_CTA_POLICY_*)
  std::string name;
  int splitShare = 0;
  int cgaClusterSize = -1;  // config.cgaClusterSize (-1: unset); NCCL_CGA_CLUSTER_SIZE overrides it
};

// A split's or shrink's members as the parent knows them, watched while the child's bootstrap runs: until the
// bootstrap's peer table arrives the child's own waits know no peers, so a member that died there would cost
// the whole BRAID_BOOTSTRAP_TIMEOUT. The watch aborts the child's bootstrap at once instead, naming the rank.
struct MemberWatch {
  PeerInfo self{};
  std::vector<PeerInfo> peers;  // the parent's ranks, indexed by parent rank
  std::vector<uint8_t> ignore;  // 1: not a member of the child (or already ignored by the parent)
  WaitContext ctx;              // points at the fields above
  std::mutex mu;
  std::string message;  // guarded by mu: which member died
  std::atomic<bool> fired{false};
  std::unique_ptr<PeerWatch> watch;
};

constexpr uint64_t kCommMagic = 0x427261696443306dull;
constexpr uint64_t kCommDeadMagic = 0xdeadc0ffeedeadull;
}  // namespace braid

struct ncclComm {
  ncclComm();
  ~ncclComm();

  uint64_t magic = braid::kCommMagic;
  int rank = -1;
  int nranks = 0;
  int cudaDev = -1;
  bool hostComm = true;
  int nChannels = 1;
  // The rings' orders (position -> rank) and this rank's position in each, agreed at init (ring_order.h): channel c
  // runs ring c % ringOrders.size(). ringOrder and ringPos repeat ring 0's (the trees use them, and the GPU
  // kernels where there is one ring).
  std::vector<std::vector<int>> ringOrders;
  std::vector<int> ringPositions;
  std::vector<int> ringOrder;
  int ringPos = 0;
  int64_t buffBytes = -1;  // FIFO bytes per connection, agreed at init (rank 0's NCCL_BUFFSIZE)
  bool buffBytesDefaulted = false;  // rank 0 left NCCL_BUFFSIZE unset: buffBytes is agreedFifoBytes's
  uint64_t commHash = 0;
  braid::CommConfig config;

  braid::PeerInfo self{};
  std::vector<braid::PeerInfo> peers;
  braid::WaitContext wait;
  std::atomic<uint32_t> abortFlag{0};
  // The bootstrap's waits: the same as `wait` but with their own abort flag, which ncclCommRevoke leaves
  // down (a revoked comm stops its data path, yet must still agree on ncclCommShrink over the bootstrap).
  braid::WaitContext bootWait;
  std::atomic<uint32_t> bootstrapAbort{0};
  std::atomic<bool> revoked{false};

  // Host communicators: where each rank of this host is (timeouts name the ranks that did not arrive). Declared
  // before what waits through `wait`, so it outlives them; wait.stall points at it.
  std::unique_ptr<braid::ProgressTable> progress;
  std::unique_ptr<braid::Bootstrap> bootstrap;
  std::unique_ptr<braid::ConnectionManager> conns;
  std::unique_ptr<braid::Executor> exec;  // host or GPU executor, by hostComm
  std::unique_ptr<braid::MemberWatch> memberWatch;  // a split's or shrink's child, until its bootstrap is done

  // ncclInProgress while a nonblocking init runs; then its result. Sticky errors from collectives too.
  std::atomic<int> asyncError{ncclSuccess};
  std::thread initThread;
  std::mutex initMu;  // guards joining initThread

  std::mutex errMu;
  std::string lastError;  // guarded by errMu

  std::mutex redOpMu;
  std::vector<braid::UserRedOp> userOps;  // index = op - ncclNumOps

  int splitCount = 0;   // sequence numbers keep successive splits' messages apart
  int shrinkCount = 0;
  std::vector<uint8_t> shrinkIgnore;

  bool finalized = false;
  bool destroyed = false;
  // API calls running on this communicator (a host collective runs inside the call). ncclCommAbort from
  // another thread (a framework's watchdog) waits for them to leave before freeing the communicator.
  std::atomic<int> activeCalls{0};
  // Operations of this communicator queued in open groups (any thread): destroy refuses while any wait, and
  // abort does not free the communicator under them (the groups' ncclGroupEnd then reports the abort).
  std::atomic<int> groupQueued{0};
  // Created by ncclCommInitRank* inside a group whose ncclGroupEnd has not come yet: nothing runs its init
  // until then, so destroy refuses and abort must not free it under that group.
  std::atomic<bool> deferredInit{false};

  void setLastError(const std::string& msg);
  std::string getLastError();
};

namespace braid {
// What a rank's ring links are, for the FIFO default: NVLink P2P both ways, through host shared memory on either
// side (and no network), over the network on either side, or anything else (PCIe P2P, host communicators).
enum class FifoPath : int64_t { kOther = 0, kNvlink = 1, kShm = 2, kNet = 3 };

// FIFO bytes per connection where NCCL_BUFFSIZE is unset: 4 MiB (steps of 512 KiB), but
// - on few channels where every rank's ring neighbours are GPUs joined by NVLink, 8 MiB on 9-16 channels and
//   16 MiB on 8 or fewer: the ring's FIFOs never take more memory than 32 channels of the default (connections
//   to other peers, made for p2p, get the same size). Few channels (a CTA bound: NCCL_MAX_CTAS,
//   config.maxCTAs) leave each CTA a larger share, and each FIFO step ends in a system fence that drains the
//   CTA's NVLink stores: larger steps pay it less often. On 2xH100 under 8 CTAs, 16 MiB FIFOs ran the
//   collectives 12-17% faster than 4 MiB (ahead of NCCL), and under 16, 8 MiB 4-11% faster; 1-2 MiB were slower
//   still (docs/TUNING.md, "FIFO sizes and steps").
// - where some rank's ring goes through host shared memory and none over the network, 512 KiB: every byte crosses host memory twice, and a
//   node's FIFOs in host memory (channels x ranks x size) that stay small keep those copies out of DRAM; with
//   shmRingChannels, 2 and 4 ranks moved 4-256 MB up to 1.5x faster than on 4 MiB FIFOs (docs/TUNING.md, "Shm").
constexpr int64_t kDefaultFifoBytes = int64_t{4} << 20;
constexpr int64_t kShmFifoBytes = int64_t{512} << 10;
constexpr int kBoundedFifoMaxChannels = 16;
inline int64_t agreedFifoBytes(int channels, FifoPath path) {
  if (path == FifoPath::kShm) return kShmFifoBytes;
  if (path != FifoPath::kNvlink || channels > kBoundedFifoMaxChannels) return kDefaultFifoBytes;
  return channels > 8 ? 2 * kDefaultFifoBytes : 4 * kDefaultFifoBytes;
}
// Ring channels where a ring link goes through host shared memory: 64 / (ranks on the host), at least 4, so the
// host-memory FIFOs of the node stay near 32 MiB at the 512 KiB default. 4xH200 with P2P off, all-reduce and
// all-gather of 16-256 MB on 16 channels ran 1.1-1.4x faster than on 64 (docs/TUNING.md, "Shm").
inline int shmRingChannels(int localRanks) { return std::max(4, 64 / std::max(1, localRanks)); }

// What each rank offers in agreeOnChannels (all int64_t: no padding goes over the bootstrap).
struct ChannelOffer {
  int64_t channels;   // this rank's channel count, bounded
  int64_t buffBytes;  // NCCL_BUFFSIZE as the FIFOs would take it; -1: unset here
  int64_t fifoPath;   // this rank's ring links (FifoPath)
};
struct ChannelAgreement {
  int channels = 1;
  int64_t buffBytes = kDefaultFifoBytes;
  bool buffDefaulted = false;  // rank 0 set no size: agreedFifoBytes's
};
// The agreement from every rank's offer (all[0] is rank 0's): the fewest channels; rank 0's FIFO size where it
// set one, else agreedFifoBytes for those channels: kOther where some rank's ring crosses the network, else kShm
// where some rank's goes through host shared memory, kNvlink where every rank's is NVLink, else kOther. A function of the offers only,
// so every rank comes out with the same.
ChannelAgreement mergeChannelOffers(const ChannelOffer* all, int nranks);

// Sets comm->nChannels: `preferred` bounded by NCCL_MIN/MAX_NCHANNELS (or _CTAS), config.minCTAs/maxCTAs and
// [1, maxChannels], then the minimum over all ranks (environments may differ per rank; every rank must run
// the same channels); and comm->buffBytes (mergeChannelOffers: every connection must cut the same steps); a
// rank whose NCCL_BUFFSIZE differs from what was agreed says so. `path`: this rank's ring links (kOther on host
// comms). Collective over the comm's bootstrap.
ncclResult_t agreeOnChannels(ncclComm* comm, int64_t preferred, int maxChannels, FifoPath path = FifoPath::kOther);

// A nonblocking init (or a group's deferred one) has finished: using the comm before is ncclInvalidArgument,
// as in NCCL (poll ncclCommGetAsyncError until it is no longer ncclInProgress).
ncclResult_t checkInitDone(ncclComm* comm, const char* fn);

// Marks an API call as running on `comm` for its lifetime (see ncclComm::activeCalls).
class CommUse {
 public:
  explicit CommUse(ncclComm* comm) : comm_(comm && comm->magic == kCommMagic ? comm : nullptr) {
    if (comm_) comm_->activeCalls.fetch_add(1);
  }
  ~CommUse() {
    if (comm_) comm_->activeCalls.fetch_sub(1);
  }
  CommUse(const CommUse&) = delete;
  CommUse& operator=(const CommUse&) = delete;

 private:
  ncclComm* comm_;
};
}  // namespace braid
