// SHM transport: connections between processes of one host that share /dev/shm. The receiver owns the
// FIFO (a POSIX shm segment it creates at setup); the sender maps it at connect and unlinks the name. If a
// side dies before that (SIGKILL runs no cleanup), the survivor's teardown of the unfinished connection
// unlinks what the dead process created: its own name may not even have reached the survivor yet.
// Both sides' ConnInfo point into the same mapping, so executors move data with plain loads and stores.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "core/wait.h"
#include "transport/host_fifo.h"
#include "transport/p2p/nvlink.h"
#include "transport/shm/shm_internal.h"

namespace braid {
namespace {

constexpr uint32_t kShmHandleMagic = 0x53484d31;  // "SHM1"
constexpr const char* kShmDir = "/dev/shm";

struct ShmHandle {
  uint32_t magic;
  int32_t rank;  // the side that wrote the handle
  uint32_t nSteps;
  uint32_t stepBytes;
  uint64_t bytes;
  char name[96];
};
static_assert(sizeof(ShmHandle) <= sizeof(ConnectHandle), "SHM handle fits");

struct ShmResources final : ConnResources {
  ShmSegment seg;
  int me = -1;
  int peer = -1;
  int channel = 0;
  Direction dir = Direction::Send;
  PeerInfo selfInfo{};
  PeerInfo peerInfo{};
  bool connected = false;

  // A connection torn down before it connected, with its peer dead: the peer may have died between creating
  // a segment and the sender mapping it (for this connection or another of its connections), leaving names
  // nobody else knows of or will remove. Its own segment, if any, goes with `seg`.
  ~ShmResources() override {
    if (connected || peerProcessAlive(selfInfo, peerInfo)) return;
    int n = unlinkSegmentsOf(peerInfo.pid);
    if (n > 0) {
      BRAID_WARN("SHM: rank %d (pid %d) died while connecting to rank %d; removed %d segment(s) it left in %s", peer,
                 peerInfo.pid, me, n, kShmDir);
    }
  }
};

uint64_t randomBits() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    // No entropy yet (early boot): the pid and counter already make the name unique on this host.
    v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&v)) ^ static_cast<uint64_t>(time(nullptr));
  }
  return v;
}

// "N bytes free of M in /dev/shm", or why that is unknown.
std::string shmSpaceText() {
  struct statvfs vfs;
  if (statvfs(kShmDir, &vfs) != 0) return std::string("free space unknown: statvfs: ") + strerror(errno);
  char buf[128];
  snprintf(buf, sizeof(buf), "%llu bytes free of %llu", static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize,
           static_cast<unsigned long long>(vfs.f_blocks) * vfs.f_frsize);
  return buf;
}

// BRAID_TEST_SHM_KILL_AFTER: die the way a killed rank does (no cleanup at all) at a precise point of setup.
void testKillAfterCreate() {
  static std::atomic<int64_t> created{0};
  testKillOnCall(created, params::TestShmKillAfter());
}

}  // namespace

std::string makeShmName() {
  static std::atomic<uint64_t> counter{0};
  char buf[96];
  snprintf(buf, sizeof(buf), "/braid-%d-%llu-%016llx", static_cast<int>(getpid()),
           static_cast<unsigned long long>(counter.fetch_add(1)), static_cast<unsigned long long>(randomBits()));
  return buf;
}

int unlinkSegmentsOf(int pid) {
  if (pid <= 0) return 0;
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "braid-%d-", pid);  // makeShmName's, without the leading '/'
  const size_t len = strlen(prefix);
  std::vector<std::string> names;
  if (DIR* d = opendir(kShmDir)) {
    while (const dirent* e = readdir(d)) {
      if (strncmp(e->d_name, prefix, len) == 0) names.push_back(std::string("/") + e->d_name);
    }
    closedir(d);
  }
  int n = 0;
  for (const std::string& name : names) n += shm_unlink(name.c_str()) == 0;  // ENOENT: another survivor's
  return n;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    reset();
    base_ = o.base_;
    size_ = o.size_;
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    unlinked_ = o.unlinked_;
    o.base_ = nullptr;
    o.size_ = 0;
    o.owner_ = false;
    o.unlinked_ = true;
  }
  return *this;
}

void ShmSegment::unlink() {
  if (!unlinked_ && !name_.empty()) {
    shm_unlink(name_.c_str());  // ENOENT when the other side got there first: fine
  }
  unlinked_ = true;
}

void ShmSegment::reset() {
  if (owner_) unlink();
  if (base_) munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
  owner_ = false;
  unlinked_ = false;
  name_.clear();
}

namespace {
// The memory-policy syscalls' values (linux/mempolicy.h), so no libnuma is needed.
constexpr int kMpolDefault = 0;
constexpr int kMpolPreferred = 1;
constexpr unsigned kMpolFNode = 1u << 0;
constexpr unsigned kMpolFAddr = 1u << 1;
constexpr unsigned long kMaxNumaNodes = 1024;

// For its lifetime, the calling thread's page allocations prefer `node` (none: node < 0 or the kernel
// refuses); then the thread's previous policy is back.
class PreferNode {
 public:
  explicit PreferNode(int node) {
    if (node < 0 || static_cast<unsigned long>(node) >= kMaxNumaNodes) return;
    if (syscall(SYS_get_mempolicy, &oldMode_, oldMask_, kMaxNumaNodes, nullptr, 0ul) != 0) return;
    unsigned long mask[kMaxNumaNodes / (8 * sizeof(unsigned long))] = {};
    mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
    set_ = syscall(SYS_set_mempolicy, kMpolPreferred, mask, kMaxNumaNodes) == 0;
  }
  ~PreferNode() {
    if (set_) syscall(SYS_set_mempolicy, oldMode_, oldMode_ == kMpolDefault ? nullptr : oldMask_, kMaxNumaNodes);
  }
  PreferNode(const PreferNode&) = delete;
  PreferNode& operator=(const PreferNode&) = delete;

 private:
  int oldMode_ = kMpolDefault;
  unsigned long oldMask_[kMaxNumaNodes / (8 * sizeof(unsigned long))] = {};
  bool set_ = false;
};
}  // namespace

int gpuNumaNode(int64_t busId) {
  if (busId < 0) return -1;
  char bus[32];
  p2pBusIdToString(busId, bus, sizeof(bus));
  const std::string path = std::string("/sys/bus/pci/devices/") + bus + "/numa_node";
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return -1;
  int node = -1;
  if (std::fscanf(f, "%d", &node) != 1) node = -1;
  std::fclose(f);
  return node;
}

int pageNumaNode(const void* addr) {
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, nullptr, 0ul, addr, kMpolFNode | kMpolFAddr) != 0) return -1;
  return node;
}

ncclResult_t ShmSegment::create(size_t bytes, int peer, ShmSegment* out, int numaNode) {
  out->reset();
  std::string name = makeShmName();
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    int e = errno;
    return recordError(ncclSystemError, "SHM: cannot create segment %s%s for rank %d: shm_open: %s (errno %d)", kShmDir,
                       name.c_str(), peer, strerror(e), e);
  }
  // posix_fallocate returns the error instead of setting errno. It reserves the pages, so they land on the
  // node the thread prefers now.
  int rc;
  {
    PreferNode prefer(numaNode);
    rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  }
  if (rc != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return recordError(ncclSystemError,
                       "SHM: cannot reserve %zu bytes in %s for the connection with rank %d (%s): %s (errno %d); "
                       "enlarge %s (e.g. docker --shm-size) or set NCCL_SHM_DISABLE=1",
                       bytes, kShmDir, peer, shmSpaceText().c_str(), strerror(rc), rc, kShmDir);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    return recordError(ncclSystemError, "SHM: cannot map %zu bytes of %s%s for rank %d: mmap: %s (errno %d)", bytes,
                       kShmDir, name.c_str(), peer, strerror(e), e);
  }
  out->base_ = base;
  out->size_ = bytes;
  out->name_ = std::move(name);
  out->owner_ = true;
  out->unlinked_ = false;
  return ncclSuccess;
}

ncclResult_t ShmSegment::open(const char* name, size_t bytes, int peer, ShmSegment* out) {
  out->reset();
  int fd = shm_open(name, O_RDWR, 0);
  if (fd < 0) {
    int e = errno;
    return recordError(ncclSystemError,
                       "SHM: cannot open segment %s%s created by rank %d: shm_open: %s (errno %d) (is %s shared "
                       "between the two processes?)",
                       kShmDir, name, peer, strerror(e), e, kShmDir);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    return recordError(ncclInternalError, "SHM: segment %s%s from rank %d is %lld bytes, expected %zu", kShmDir, name,
                       peer, static_cast<long long>(st.st_size), bytes);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) {
    return recordError(ncclSystemError, "SHM: cannot map %zu bytes of %s%s from rank %d: mmap: %s (errno %d)", bytes,
                       kShmDir, name, peer, strerror(e), e);
  }
  out->base_ = base;
  out->size_ = bytes;
  out->name_ = name;
  out->owner_ = false;
  out->unlinked_ = false;
  return ncclSuccess;
}

bool ShmTransport::canConnect(const PeerInfo& me, const PeerInfo& peer) const {
  return params::ShmDisable() == 0 && sameShmDomain(me, peer);
}

ncclResult_t ShmTransport::setup(Direction dir, const PeerInfo& me, const PeerInfo& peer, int channel, size_t buffBytes,
                                 Connector* conn, ConnectHandle* myHandle) {
  auto res = std::make_unique<ShmResources>();
  res->selfInfo = me;
  res->peerInfo = peer;
  res->me = me.rank;
  res->peer = peer.rank;
  res->dir = dir;
  res->channel = channel;
  ShmHandle h{};
  h.magic = kShmHandleMagic;
  h.rank = me.rank;
  conn->info = ConnInfo{};
  conn->info.peer = peer.rank;
  conn->info.kind = TransportKind::Shm;
  if (dir == Direction::Recv) {
    h.nSteps = kHostFifoSteps;
    h.stepBytes = hostFifoStepBytes(buffBytes, kHostFifoSteps);
    const bool ll = conn->ctx && conn->ctx->llSlots;
    h.bytes = ll ? shmSegmentBytes(h.nSteps, h.stepBytes) : hostFifoBytes(h.nSteps, h.stepBytes);
    // A GPU communicator's segment on the receiving GPU's NUMA node: its kernels read every step from it.
    const int node = me.cudaDev >= 0 && !me.isHost ? gpuNumaNode(me.busId) : -1;
    BRAID_CHECK(ShmSegment::create(h.bytes, peer.rank, &res->seg, node));
    testKillAfterCreate();
    snprintf(h.name, sizeof(h.name), "%s", res->seg.name().c_str());
    // fallocate handed us zeroed pages: head = tail = 0, no error, nothing attached.
    hostFifoView(res->seg.base(), h.nSteps, h.stepBytes, &conn->info);
    if (ll) hostFifoLlView(res->seg.base(), h.nSteps, h.stepBytes, kShmLlSlotBytes, &conn->info);
    if (ll) hostFifoPresetSteps(conn->info, params::TestStepBase());  // GPU comms: tests only
    conn->info.peer = peer.rank;
    conn->info.kind = TransportKind::Shm;
    BRAID_INFO(kSubShm, "SHM: channel %d recv from rank %d: segment %s, %u x %u bytes, NUMA node %d (GPU's %d)",
               channel, peer.rank, h.name, h.nSteps, h.stepBytes, pageNumaNode(res->seg.base()), node);
  }
  std::memset(myHandle, 0, sizeof(*myHandle));
  std::memcpy(myHandle->data, &h, sizeof(h));
  conn->res = std::move(res);
  conn->connected = false;
  return ncclSuccess;
}

ncclResult_t ShmTransport::connect(Direction dir, const ConnectHandle& peerHandle, Connector* conn) {
  auto* res = dynamic_cast<ShmResources*>(conn->res.get());
  if (!res) return recordError(ncclInternalError, "SHM: connect before setup (rank %d)", conn->info.peer);
  ShmHandle h;
  std::memcpy(&h, peerHandle.data, sizeof(h));
  if (h.magic != kShmHandleMagic || h.rank != res->peer) {
    return recordError(ncclInternalError,
                       "SHM: bad connection handle from rank %d (magic %#x, rank %d): both sides must pick SHM",
                       res->peer, h.magic, h.rank);
  }
  if (dir == Direction::Send) {
    if (h.nSteps == 0 || h.nSteps > kHostFifoMaxSteps || h.stepBytes == 0 ||
        (h.bytes != shmSegmentBytes(h.nSteps, h.stepBytes) && h.bytes != hostFifoBytes(h.nSteps, h.stepBytes)) ||
        memchr(h.name, 0, sizeof(h.name)) == nullptr) {
      return recordError(ncclInternalError, "SHM: malformed segment description from rank %d", res->peer);
    }
    BRAID_CHECK(ShmSegment::open(h.name, h.bytes, res->peer, &res->seg));
    // Both sides have it mapped now: drop the name so nothing outlives the processes.
    res->seg.unlink();
    hostFifoView(res->seg.base(), h.nSteps, h.stepBytes, &conn->info);
    // The receiver decided whether the segment has LL slots (its size says so).
    if (h.bytes == shmSegmentBytes(h.nSteps, h.stepBytes))
      hostFifoLlView(res->seg.base(), h.nSteps, h.stepBytes, kShmLlSlotBytes, &conn->info);
    conn->info.peer = res->peer;
    conn->info.kind = TransportKind::Shm;
    __atomic_store_n(&static_cast<HostFifoCtrl*>(res->seg.base())->attached, 1u, __ATOMIC_RELEASE);
    BRAID_INFO(kSubShm, "SHM: send to rank %d: mapped %s, %u x %u bytes", res->peer, h.name, h.nSteps, h.stepBytes);
  } else {
    // Wait for the sender to map the segment: returning earlier would let this side tear down (an init
    // failing elsewhere, an abort) and unlink the name under a sender about to open it. Cannot deadlock:
    // every rank connects all its senders before any receiver.
    const uint32_t* attached = &static_cast<HostFifoCtrl*>(res->seg.base())->attached;
    WaitContext wc;
    if (conn->ctx && conn->ctx->wait) wc = *conn->ctx->wait;
    double setupTimeout = static_cast<double>(params::BootstrapTimeout());
    if (wc.timeoutSec <= 0 || wc.timeoutSec > setupTimeout) wc.timeoutSec = setupTimeout;
    char what[96];
    snprintf(what, sizeof(what), "rank %d to map its SHM segment (channel %d)", res->peer, res->channel);
    Waiter waiter(&wc, res->peer, what);
    while (!__atomic_load_n(attached, __ATOMIC_ACQUIRE)) BRAID_CHECK(waiter.poll());
    res->seg.unlink();  // the sender did; nothing left for our destructor to remove
  }
  res->connected = true;
  conn->connected = true;
  return ncclSuccess;
}

Transport* shmTransport() {
  static ShmTransport t;
  return &t;
}

}  // namespace braid
