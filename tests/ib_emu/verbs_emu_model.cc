// The emulated verbs provider's model (verbs_emu_model.h); the protocol between queue pairs is described in
// verbs_emu.cc.
#include "verbs_emu_model.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace braid_emu {

std::mutex gMu;
std::vector<EmuDevice*> gDevices;
std::map<uint32_t, EmuMr*> gMrs;
Fault gFault;

namespace {

double nowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

bool processGone(int pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

bool portDown(EmuQp* qp) { return reinterpret_cast<EmuCtx*>(qp->base.context)->dev->down; }

}  // namespace

std::string segName(uint32_t qpn) { return "/braidemu-" + std::to_string(getuid()) + "-qp" + std::to_string(qpn); }

QpShared* mapSeg(const std::string& name, bool create) {
  const int fd = shm_open(name.c_str(), create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
  if (fd < 0) return nullptr;
  if (create && ftruncate(fd, sizeof(QpShared)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return nullptr;
  }
  void* p = mmap(nullptr, sizeof(QpShared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    if (create) shm_unlink(name.c_str());
    return nullptr;
  }
  return static_cast<QpShared*>(p);
}

void pushWc(EmuCq* cq, EmuQp* qp, uint64_t wrId, ibv_wc_status st, ibv_wc_opcode op, uint32_t bytes, uint32_t imm,
            bool withImm) {
  ibv_wc wc{};
  wc.wr_id = wrId;
  wc.status = st;
  wc.opcode = op;
  wc.byte_len = bytes;
  wc.qp_num = qp->base.qp_num;
  wc.imm_data = imm;
  wc.wc_flags = withImm ? IBV_WC_WITH_IMM : 0;
  wc.vendor_err = st == IBV_WC_SUCCESS ? 0 : 0x42;
  cq->wcs.push_back(wc);
}

ibv_wc_opcode sendWcOpcode(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ? IBV_WC_SEND : IBV_WC_RDMA_WRITE;
}

// The queue pair enters the error state: every outstanding work request completes with `first` (the head send, when
// it is an error of its own) and then IBV_WC_WR_FLUSH_ERR.
void toError(EmuQp* qp, ibv_wc_status headStatus) {
  qp->base.state = IBV_QPS_ERR;
  qp->self->state.store(IBV_QPS_ERR);
  bool head = true;
  for (const SendWr& w : qp->sq) {
    const ibv_wc_status st = head && headStatus != IBV_WC_WR_FLUSH_ERR ? headStatus : IBV_WC_WR_FLUSH_ERR;
    pushWc(qp->scq, qp, w.wrId, st, sendWcOpcode(w.opcode), 0, 0, false);
    head = false;
  }
  qp->sq.clear();
  for (const RecvWr& r : qp->rq) pushWc(qp->rcq, qp, r.wrId, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, false);
  qp->rq.clear();
}

EmuMr* findMr(uint32_t key) {
  auto it = gMrs.find(key);
  return it == gMrs.end() ? nullptr : it->second;
}

bool mrCovers(const EmuMr* mr, uint64_t addr, uint64_t len, int access) {
  const auto start = reinterpret_cast<uint64_t>(mr->base.addr);
  return (mr->access & access) == access && addr >= start && addr + len <= start + mr->base.length;
}

void injectPortDown(EmuQp* qp) {
  EmuCtx* ctx = reinterpret_cast<EmuCtx*>(qp->base.context);
  ctx->dev->down = true;
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_PORT_ERR;
  ev.element.port_num = qp->port;
  ctx->events.push_back(ev);
  uint64_t one = 1;
  ssize_t r = write(ctx->base.async_fd, &one, sizeof(one));
  (void)r;
}

// Sender side: pushes what fits of the posted sends into the peer's ring (nothing leaves a port that is down).
void pushSends(EmuQp* qp) {
  QpShared* rem = qp->remote;
  if (!rem || qp->base.state != IBV_QPS_RTS || portDown(qp)) return;
  for (SendWr& w : qp->sq) {
    if (w.dropped) return;  // a lost packet: nothing after it gets through either
    if (w.fullyPushed) continue;
    while (!w.fullyPushed) {
      const uint32_t chunk = std::min<uint32_t>(kMaxChunk, w.len - w.pushed);
      const size_t need = sizeof(RingEntry) + (chunk + 7) / 8 * 8;
      const uint64_t head = rem->inHead.load(std::memory_order_acquire);
      const uint64_t tail = rem->inTail.load(std::memory_order_relaxed);
      const size_t off = tail % kRingBytes;
      // Entries never wrap: a gap too small for one is skipped with a padding entry.
      size_t pad = kRingBytes - off < need ? kRingBytes - off : 0;
      if (tail + pad + need - head > kRingBytes) return;  // full: later
      if (pad) {
        if (pad >= sizeof(RingEntry)) {
          RingEntry e{};
          e.opcode = 0xffffffffu;
          std::memcpy(rem->ring + off, &e, sizeof(e));
        }
      }
      const uint64_t at = tail + pad;
      RingEntry e{};
      e.opcode = w.opcode;
      e.imm = w.imm;
      e.raddr = w.raddr + w.pushed;
      e.rkey = w.rkey;
      e.len = chunk;
      e.totalLen = w.len;
      e.msgSeq = w.msgSeq;
      e.flags = w.pushed + chunk == w.len ? kEntryLast : 0;
      char* dst = rem->ring + at % kRingBytes;
      std::memcpy(dst, &e, sizeof(e));
      const char* src = w.inlineData.empty() ? reinterpret_cast<const char*>(w.addr) : w.inlineData.data();
      if (chunk) std::memcpy(dst + sizeof(e), src + w.pushed, chunk);
      w.pushed += chunk;
      w.fullyPushed = w.pushed == w.len;
      rem->inTail.store(at + need, std::memory_order_release);
      notifyOwner(rem);
    }
  }
}

// Sender side: completes acknowledged sends in order; NAKs and unanswered messages fail the queue pair.
std::string channelAddress(int pid, uint32_t id) {
  return "braidemu-" + std::to_string(getuid()) + "-ch-" + std::to_string(pid) + "-" + std::to_string(id);
}

void notifyOwner(QpShared* seg) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // what was put in is visible before the flag is read
  if (!seg || seg->armed.exchange(0) == 0) return;
  static int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = channelAddress(seg->chanPid.load(), seg->chanId.load());
  std::memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof(a.sun_path) - 2));
  const uint64_t cq = seg->chanCq.load();
  ssize_t r = sendto(sock, &cq, sizeof(cq), 0, reinterpret_cast<sockaddr*>(&a),
                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size()));
  (void)r;  // a full or closed channel: the owner polls anyway
}

static void completeSends(EmuQp* qp) {
  if (qp->base.state == IBV_QPS_ERR) return;
  QpShared* self = qp->self;
  const uint64_t acked = self->acked.load(std::memory_order_acquire);
  const uint32_t nak = self->nakStatus.load(std::memory_order_acquire);
  while (!qp->sq.empty()) {
    SendWr& w = qp->sq.front();
    if (!w.fullyPushed || w.dropped) break;
    if (nak && self->nakSeq.load() == w.msgSeq) {
      toError(qp, static_cast<ibv_wc_status>(nak));
      return;
    }
    if (w.msgSeq >= acked) break;
    if (w.signaled) pushWc(qp->scq, qp, w.wrId, IBV_WC_SUCCESS, sendWcOpcode(w.opcode), w.len, 0, false);
    qp->sq.pop_front();
    qp->stallSince = 0;
  }
  if (qp->sq.empty()) return;
  const SendWr& w = qp->sq.front();
  QpShared* rem = qp->remote;
  const bool peerCannotAnswer = w.dropped || !rem || portDown(qp) || rem->destroyed.load() ||
                                rem->state.load() == IBV_QPS_ERR || processGone(rem->ownerPid.load());
  if (!peerCannotAnswer) {
    qp->stallSince = 0;
    return;
  }
  const double now = nowSec();
  if (qp->stallSince == 0) qp->stallSince = now;
  const double limit = 4.096e-6 * static_cast<double>(1ull << qp->timeout) * (qp->retryCnt + 1);
  if (now - qp->stallSince >= limit) toError(qp, IBV_WC_RETRY_EXC_ERR);
}

static void nak(EmuQp* qp, uint64_t msgSeq, ibv_wc_status st) {
  if (qp->remote) {
    qp->remote->nakSeq.store(msgSeq);
    qp->remote->nakStatus.store(st, std::memory_order_release);
    notifyOwner(qp->remote);
  }
  toError(qp, IBV_WC_WR_FLUSH_ERR);
}

// Receiver side: applies the inbound ring's entries to this process's memory.
static void consumeRing(EmuQp* qp) {
  QpShared* self = qp->self;
  if ((qp->base.state != IBV_QPS_RTR && qp->base.state != IBV_QPS_RTS) || portDown(qp)) return;
  if (!qp->unlinked && self->peerAttached.load()) {
    shm_unlink(qp->name.c_str());  // both sides have it mapped: no name needs to outlive a crash
    qp->unlinked = true;
  }
  for (;;) {
    if (qp->base.state == IBV_QPS_ERR) return;
    const uint64_t head = self->inHead.load(std::memory_order_relaxed);
    const uint64_t tail = self->inTail.load(std::memory_order_acquire);
    if (head == tail) return;
    const size_t off = head % kRingBytes;
    RingEntry e;
    const bool padOnly = kRingBytes - off < sizeof(RingEntry);
    if (!padOnly) std::memcpy(&e, self->ring + off, sizeof(e));
    if (padOnly || e.opcode == 0xffffffffu) {
      self->inHead.store(head + (kRingBytes - off), std::memory_order_release);
      continue;
    }
    const char* data = self->ring + off + sizeof(e);
    const size_t need = sizeof(RingEntry) + (e.len + 7) / 8 * 8;
    const bool last = e.flags & kEntryLast;
    const bool consumesRecv =
        e.opcode == IBV_WR_SEND || e.opcode == IBV_WR_SEND_WITH_IMM || e.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (last && consumesRecv && qp->rq.empty()) return;  // receiver not ready: the sender keeps retrying
    if (e.opcode == IBV_WR_RDMA_WRITE || e.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
      if (e.len > 0) {
        EmuMr* mr = findMr(e.rkey);
        if (!mr || !mrCovers(mr, e.raddr, e.len, IBV_ACCESS_REMOTE_WRITE)) {
          nak(qp, e.msgSeq, IBV_WC_REM_ACCESS_ERR);
          return;
        }
        std::memcpy(reinterpret_cast<void*>(e.raddr), data, e.len);
      }
    } else if (e.opcode == IBV_WR_SEND || e.opcode == IBV_WR_SEND_WITH_IMM) {
      const RecvWr& r = qp->rq.front();
      EmuMr* mr = r.hasSge ? findMr(r.lkey) : nullptr;
      if (e.totalLen > (r.hasSge ? r.len : 0) || e.len != e.totalLen ||
          (e.len && (!mr || !mrCovers(mr, r.addr, e.len, IBV_ACCESS_LOCAL_WRITE)))) {
        pushWc(qp->rcq, qp, r.wrId, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, false);
        qp->rq.pop_front();
        nak(qp, e.msgSeq, IBV_WC_REM_INV_REQ_ERR);
        return;
      }
      if (e.len) std::memcpy(reinterpret_cast<void*>(r.addr), data, e.len);
    } else {
      nak(qp, e.msgSeq, IBV_WC_REM_INV_REQ_ERR);
      return;
    }
    if (last) {
      if (consumesRecv) {
        const RecvWr r = qp->rq.front();
        qp->rq.pop_front();
        const bool withImm = e.opcode != IBV_WR_SEND;
        pushWc(qp->rcq, qp, r.wrId, IBV_WC_SUCCESS,
               e.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, e.totalLen, e.imm,
               withImm);
      }
      if (qp->remote) {
        qp->remote->acked.store(e.msgSeq + 1, std::memory_order_release);
        notifyOwner(qp->remote);
      }
    }
    self->inHead.store(head + need, std::memory_order_release);
  }
}

void progressCq(EmuCq* cq) {
  for (EmuQp* qp : cq->qps) {
    if (qp->rcq == cq) consumeRing(qp);
    if (qp->scq == cq) {
      pushSends(qp);
      completeSends(qp);
    }
  }
}

}  // namespace braid_emu
