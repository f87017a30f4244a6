// An emulated verbs provider for the IB backend's tests: fills the backend's VerbsApi table (verbs_api.h) with
// devices, memory regions and reliable-connected queue pairs whose traffic crosses processes through shared memory,
// so the backend runs unmodified between the ranks of a multi-process test on a machine without RDMA hardware.
// Loaded by the library where BRAID_TEST_VERBS_PROVIDER names this shared object. This file is the table and the
// fault plan; verbs_emu_model.cc moves the traffic.
//
// Model. Every queue pair owns a POSIX shared-memory segment, named by its (machine-unique) QP number, holding its
// inbound ring and the acknowledgement counter of the messages it sent. At RTR a queue pair maps its peer's segment
// (dest_qp_num). A posted send is pushed into the peer's ring in chunks, by whichever call of the sending process
// polls the queue pair; the receiving process, when it polls, checks each write's rkey, bounds and access against
// its own memory regions, copies the data, consumes a posted receive for SEND and RDMA_WRITE_WITH_IMM, and
// acknowledges the message in the sender's segment; the sender completes its work requests in order as they are
// acknowledged. A receiver with no receive posted leaves the message in the ring (RNR retried forever). A write
// that fails the checks is NAKed (IBV_WC_REM_ACCESS_ERR at the sender) and moves the receiver's queue pair to the
// error state (its receives flush). A message unacknowledged while its peer is gone (process dead, queue pair
// destroyed or in error) or dropped by a fault fails with IBV_WC_RETRY_EXC_ERR after the queue pair's
// timeout x (retry_cnt + 1); later work requests flush.
//
// Environment (read when the table is filled):
//   BRAID_VERBS_EMU_DEVICES  comma-separated name:ib|roce[:down]; default "emu_0:ib". One port each.
//   BRAID_VERBS_EMU_FAULT    kind:N, acting on this process's N-th RDMA write with data (1-based):
//                            drop (lost: the sender's retries run out), rkey (a wrong rkey: remote access error),
//                            port (port 1 of the device goes down: IBV_EVENT_PORT_ERR), kill (SIGKILL: the peer
//                            vanishes mid-transfer).
//   BRAID_VERBS_EMU_EXPECT_AV sl:tc[:pkey]: a queue pair moved to RTR with another service level, or (on a RoCE
//                            port) another traffic class, or to INIT with another partition key index, fails with
//                            EINVAL.
//   A dead process leaves no segment behind: each queue pair unlinks its segment's name once its peer has mapped it.
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "transport/net/ib/verbs_api.h"
#include "verbs_emu_model.h"

namespace braid_emu {
namespace {

using braid::IbGidType;
using braid::VerbsApi;

uint32_t gNextKey = 0;
long gWrites = 0;
int gExpectSl = -1, gExpectTc = -1, gExpectPkey = -1;  // BRAID_VERBS_EMU_EXPECT_AV; -1: any

// ---- the table ----

ibv_device** emuGetDeviceList(int* num) {
  std::lock_guard<std::mutex> lk(gMu);
  auto** list = static_cast<ibv_device**>(calloc(gDevices.size() + 1, sizeof(ibv_device*)));
  for (size_t i = 0; i < gDevices.size(); i++) list[i] = &gDevices[i]->base;
  if (num) *num = static_cast<int>(gDevices.size());
  return list;
}

void emuFreeDeviceList(ibv_device** list) { free(list); }

const char* emuGetDeviceName(ibv_device* d) { return d->name; }

ibv_context* emuOpenDevice(ibv_device* d) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* dev = reinterpret_cast<EmuDevice*>(d);
  auto* ctx = new EmuCtx;
  std::memset(&ctx->base, 0, sizeof(ctx->base));
  ctx->base.device = d;
  ctx->base.async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ctx->base.cmd_fd = -1;
  ctx->dev = dev;
  dev->ctx = ctx;
  return &ctx->base;
}

int emuCloseDevice(ibv_context* c) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* ctx = reinterpret_cast<EmuCtx*>(c);
  close(ctx->base.async_fd);
  ctx->dev->ctx = nullptr;
  delete ctx;
  return 0;
}

int emuQueryDevice(ibv_context* c, ibv_device_attr* a) {
  std::memset(a, 0, sizeof(*a));
  a->phys_port_cnt = 1;
  a->max_qp = 1 << 16;
  a->max_qp_wr = 1 << 15;
  a->max_sge = 1;
  a->max_cqe = 1 << 22;
  a->max_mr_size = ~0ull;
  return 0;
}

int emuQueryPort(ibv_context* c, uint8_t port, ibv_port_attr* a) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* ctx = reinterpret_cast<EmuCtx*>(c);
  if (port != 1) return EINVAL;
  std::memset(a, 0, sizeof(*a));
  a->state = ctx->dev->down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = ctx->dev->roce ? IBV_MTU_1024 : IBV_MTU_4096;
  a->lid = ctx->dev->roce ? 0 : static_cast<uint16_t>(getpid() % 0xbfff + 1);
  a->link_layer = ctx->dev->roce ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  a->active_speed = 128;  // NDR
  a->active_width = 2;    // 4x
  a->gid_tbl_len = ctx->dev->roce ? 5 : 1;
  return 0;
}

// RoCE table: 0 link-local v1, 1 link-local v2, 2 IPv4-mapped v1, 3 IPv4-mapped v2, 4 all zero. IB: one GID.
int emuQueryGid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  auto* ctx = reinterpret_cast<EmuCtx*>(c);
  std::memset(gid, 0, sizeof(*gid));
  const int n = ctx->dev->roce ? 5 : 1;
  if (port != 1 || index < 0 || index >= n) return EINVAL;
  if (index == 4) return 0;
  if (index <= 1) {
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    gid->raw[15] = static_cast<uint8_t>(index + 1);
  } else {
    gid->raw[10] = gid->raw[11] = 0xff;
    gid->raw[12] = 10;
    gid->raw[15] = static_cast<uint8_t>(index);
  }
  return 0;
}

IbGidType emuQueryGidType(ibv_context* c, uint8_t port, int index) {
  auto* ctx = reinterpret_cast<EmuCtx*>(c);
  if (!ctx->dev->roce) return IbGidType::Ib;
  return index % 2 == 0 ? IbGidType::RoceV1 : IbGidType::RoceV2;
}

ibv_pd* emuAllocPd(ibv_context* c) {
  auto* pd = new ibv_pd{};
  pd->context = c;
  return pd;
}

int emuDeallocPd(ibv_pd* pd) {
  delete pd;
  return 0;
}

ibv_mr* emuRegMr(ibv_pd* pd, void* addr, size_t len, int access) {
  std::lock_guard<std::mutex> lk(gMu);
  if (!addr || len == 0) {
    errno = EINVAL;
    return nullptr;
  }
  auto* mr = new EmuMr;
  std::memset(&mr->base, 0, sizeof(mr->base));
  if (gNextKey == 0) gNextKey = (static_cast<uint32_t>(getpid()) * 2654435761u) | 1u;
  uint32_t key;
  do {
    key = gNextKey;
    gNextKey += 0x100;
  } while (key == 0 || gMrs.count(key));
  mr->base.context = pd->context;
  mr->base.pd = pd;
  mr->base.addr = addr;
  mr->base.length = len;
  mr->base.lkey = mr->base.rkey = key;
  mr->access = access | IBV_ACCESS_LOCAL_WRITE;
  gMrs[key] = mr;
  return &mr->base;
}

int emuDeregMr(ibv_mr* m) {
  std::lock_guard<std::mutex> lk(gMu);
  gMrs.erase(m->lkey);
  delete reinterpret_cast<EmuMr*>(m);
  return 0;
}

ibv_comp_channel* emuCreateCompChannel(ibv_context* c) {
  std::lock_guard<std::mutex> lk(gMu);
  static uint32_t nextId = 1;
  auto* ch = new EmuChannel;
  std::memset(&ch->base, 0, sizeof(ch->base));
  ch->id = nextId++;
  ch->base.context = c;
  ch->base.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = channelAddress(getpid(), ch->id);
  std::memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof(a.sun_path) - 2));
  if (ch->base.fd < 0 || bind(ch->base.fd, reinterpret_cast<sockaddr*>(&a),
                              static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) != 0) {
    if (ch->base.fd >= 0) close(ch->base.fd);
    delete ch;
    return nullptr;
  }
  return &ch->base;
}

int emuDestroyCompChannel(ibv_comp_channel* c) {
  close(c->fd);
  delete reinterpret_cast<EmuChannel*>(c);
  return 0;
}

// Arms every queue pair of the completion queue: the next thing put in for any of them signals the channel.
int emuReqNotifyCq(ibv_cq* c, int) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* cq = reinterpret_cast<EmuCq*>(c);
  if (!cq->channel) return EINVAL;
  for (EmuQp* qp : cq->qps) {
    qp->self->chanPid.store(getpid());
    qp->self->chanId.store(cq->channel->id);
    qp->self->chanCq.store(reinterpret_cast<uint64_t>(cq));
    qp->self->armed.store(1);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the caller polls next: nothing slips between
  return 0;
}

int emuGetCqEvent(ibv_comp_channel* ch, ibv_cq** cq, void** cqContext) {
  uint64_t v = 0;
  if (recv(ch->fd, &v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) return -1;  // errno from recv
  *cq = reinterpret_cast<ibv_cq*>(v);
  *cqContext = (*cq)->cq_context;
  return 0;
}

void emuAckCqEvents(ibv_cq*, unsigned int) {}

ibv_cq* emuCreateCq(ibv_context* c, int cqe, void* cqContext, ibv_comp_channel* ch, int) {
  auto* cq = new EmuCq;
  std::memset(&cq->base, 0, sizeof(cq->base));
  cq->channel = reinterpret_cast<EmuChannel*>(ch);
  cq->base.channel = ch;
  cq->base.context = c;
  cq->base.cq_context = cqContext;
  cq->base.cqe = cqe;
  return &cq->base;
}

int emuDestroyCq(ibv_cq* c) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* cq = reinterpret_cast<EmuCq*>(c);
  if (!cq->qps.empty()) return EBUSY;
  delete cq;
  return 0;
}

ibv_qp* emuCreateQp(ibv_pd* pd, ibv_qp_init_attr* a) {
  std::lock_guard<std::mutex> lk(gMu);
  if (a->qp_type != IBV_QPT_RC || !a->send_cq || !a->recv_cq) {
    errno = EINVAL;
    return nullptr;
  }
  static uint32_t counter = 0;
  auto* qp = new EmuQp;
  std::memset(&qp->base, 0, sizeof(qp->base));
  for (int tries = 0; tries < 1 << 16 && !qp->self; tries++) {
    const uint32_t qpn = ((static_cast<uint32_t>(getpid()) * 64u) + counter++) & 0xffffffu;
    if (qpn == 0) continue;
    qp->name = segName(qpn);
    qp->self = mapSeg(qp->name, true);
    if (qp->self) qp->base.qp_num = qpn;
  }
  if (!qp->self) {
    delete qp;
    errno = ENOMEM;
    return nullptr;
  }
  qp->self->ownerPid.store(getpid());
  qp->self->state.store(IBV_QPS_RESET);
  qp->self->magic.store(kSegMagic);
  qp->base.context = pd->context;
  qp->base.pd = pd;
  qp->base.send_cq = a->send_cq;
  qp->base.recv_cq = a->recv_cq;
  qp->base.qp_type = IBV_QPT_RC;
  qp->base.state = IBV_QPS_RESET;
  qp->base.qp_context = a->qp_context;
  qp->scq = reinterpret_cast<EmuCq*>(a->send_cq);
  qp->rcq = reinterpret_cast<EmuCq*>(a->recv_cq);
  qp->scq->qps.push_back(qp);
  if (qp->rcq != qp->scq) qp->rcq->qps.push_back(qp);
  return &qp->base;
}

int emuModifyQp(ibv_qp* q, ibv_qp_attr* a, int mask) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* qp = reinterpret_cast<EmuQp*>(q);
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  const ibv_qp_state from = qp->base.state, to = a->qp_state;
  const bool ok = (from == IBV_QPS_RESET && to == IBV_QPS_INIT) || (from == IBV_QPS_INIT && to == IBV_QPS_RTR) ||
                  (from == IBV_QPS_RTR && to == IBV_QPS_RTS) || to == IBV_QPS_ERR || to == IBV_QPS_RESET;
  if (!ok) return EINVAL;
  if (to == IBV_QPS_INIT && (mask & IBV_QP_PORT)) qp->port = a->port_num;
  if (to == IBV_QPS_INIT && gExpectPkey >= 0 && (!(mask & IBV_QP_PKEY_INDEX) || a->pkey_index != gExpectPkey))
    return EINVAL;
  if (to == IBV_QPS_RTR) {
    if (!(mask & IBV_QP_DEST_QPN) || !(mask & IBV_QP_AV)) return EINVAL;
    // A service level above 15 is refused as hardware does; the expected address vector, where the test names one.
    if (a->ah_attr.sl > 15 || (gExpectSl >= 0 && a->ah_attr.sl != gExpectSl)) return EINVAL;
    if (gExpectTc >= 0 && a->ah_attr.is_global && a->ah_attr.grh.traffic_class != gExpectTc) return EINVAL;
    qp->remote = mapSeg(segName(a->dest_qp_num), false);
    if (qp->remote && qp->remote->magic.load() == kSegMagic) qp->remote->peerAttached.store(1);
  }
  if (to == IBV_QPS_RTS) {
    if (mask & IBV_QP_TIMEOUT) qp->timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT) qp->retryCnt = a->retry_cnt;
  }
  if (to == IBV_QPS_ERR) {
    toError(qp, IBV_WC_WR_FLUSH_ERR);
    return 0;
  }
  qp->base.state = to;
  qp->self->state.store(to);
  return 0;
}

int emuDestroyQp(ibv_qp* q) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* qp = reinterpret_cast<EmuQp*>(q);
  for (EmuCq* cq : {qp->scq, qp->rcq}) {
    auto& v = cq->qps;
    for (size_t i = 0; i < v.size(); i++) {
      if (v[i] == qp) {
        v.erase(v.begin() + static_cast<long>(i));
        break;
      }
    }
  }
  qp->self->destroyed.store(1);
  if (!qp->unlinked) shm_unlink(qp->name.c_str());
  munmap(qp->self, sizeof(QpShared));
  if (qp->remote) munmap(qp->remote, sizeof(QpShared));
  delete qp;
  return 0;
}

// The fault plan acts on RDMA writes that carry data: the transfer is under way.
bool applyFault(EmuQp* qp, SendWr* w) {
  if (gFault.kind == Fault::None || w->len == 0 ||
      (w->opcode != IBV_WR_RDMA_WRITE && w->opcode != IBV_WR_RDMA_WRITE_WITH_IMM))
    return false;
  if (++gWrites != gFault.at) return false;
  switch (gFault.kind) {
    case Fault::Drop:
      w->dropped = true;
      w->fullyPushed = true;
      break;
    case Fault::Rkey:
      w->rkey ^= 0x80000000u;
      break;
    case Fault::Port:
      injectPortDown(qp);
      break;
    case Fault::Kill:
      kill(getpid(), SIGKILL);
      break;
    default:
      break;
  }
  return true;
}

int emuPostSend(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* qp = reinterpret_cast<EmuQp*>(q);
  for (; wr; wr = wr->next) {
    if (qp->base.state != IBV_QPS_RTS && qp->base.state != IBV_QPS_ERR) {
      *bad = wr;
      return EINVAL;
    }
    if (wr->num_sge > 1) {
      *bad = wr;
      return EINVAL;
    }
    SendWr w;
    w.wrId = wr->wr_id;
    w.opcode = wr->opcode;
    w.signaled = wr->send_flags & IBV_SEND_SIGNALED;
    w.imm = wr->imm_data;
    w.raddr = wr->wr.rdma.remote_addr;
    w.rkey = wr->wr.rdma.rkey;
    w.msgSeq = qp->nextMsgSeq++;
    bool localErr = false;
    if (wr->num_sge == 1) {
      const ibv_sge& s = wr->sg_list[0];
      w.len = s.length;
      if (wr->send_flags & IBV_SEND_INLINE) {
        if (s.length > 256) {
          *bad = wr;
          return EINVAL;
        }
        w.inlineData.assign(reinterpret_cast<const char*>(s.addr), reinterpret_cast<const char*>(s.addr) + s.length);
      } else {
        w.addr = s.addr;
        EmuMr* mr = findMr(s.lkey);
        localErr = s.length > 0 && (!mr || !mrCovers(mr, s.addr, s.length, 0));
      }
    }
    if (qp->base.state == IBV_QPS_ERR) {
      pushWc(qp->scq, qp, w.wrId, IBV_WC_WR_FLUSH_ERR, sendWcOpcode(w.opcode), 0, 0, false);
      continue;
    }
    if (localErr) {
      qp->sq.push_back(w);
      toError(qp, IBV_WC_LOC_PROT_ERR);
      continue;
    }
    qp->sq.push_back(w);
    applyFault(qp, &qp->sq.back());
  }
  pushSends(qp);
  return 0;
}

int emuPostRecv(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* qp = reinterpret_cast<EmuQp*>(q);
  for (; wr; wr = wr->next) {
    if (qp->base.state == IBV_QPS_RESET || wr->num_sge > 1) {
      *bad = wr;
      return EINVAL;
    }
    RecvWr r;
    r.wrId = wr->wr_id;
    if (wr->num_sge == 1) {
      r.hasSge = true;
      r.addr = wr->sg_list[0].addr;
      r.len = wr->sg_list[0].length;
      r.lkey = wr->sg_list[0].lkey;
    }
    if (qp->base.state == IBV_QPS_ERR) {
      pushWc(qp->rcq, qp, r.wrId, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, false);
      continue;
    }
    qp->rq.push_back(r);
  }
  return 0;
}

int emuPollCq(ibv_cq* c, int n, ibv_wc* wc) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* cq = reinterpret_cast<EmuCq*>(c);
  progressCq(cq);
  int got = 0;
  while (got < n && !cq->wcs.empty()) {
    wc[got++] = cq->wcs.front();
    cq->wcs.pop_front();
  }
  return got;
}

int emuGetAsyncEvent(ibv_context* c, ibv_async_event* ev) {
  std::lock_guard<std::mutex> lk(gMu);
  auto* ctx = reinterpret_cast<EmuCtx*>(c);
  if (ctx->events.empty()) {
    uint64_t v;
    ssize_t r = read(ctx->base.async_fd, &v, sizeof(v));  // drain: the descriptor is readable while events wait
    (void)r;
    errno = EAGAIN;
    return -1;
  }
  *ev = ctx->events.front();
  ctx->events.pop_front();
  return 0;
}

void emuAckAsyncEvent(ibv_async_event*) {}

const char* emuWcStatusStr(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return "success";
    case IBV_WC_LOC_LEN_ERR:
      return "local length error";
    case IBV_WC_LOC_PROT_ERR:
      return "local protection error";
    case IBV_WC_WR_FLUSH_ERR:
      return "Work Request Flushed Error";
    case IBV_WC_REM_ACCESS_ERR:
      return "remote access error";
    case IBV_WC_REM_INV_REQ_ERR:
      return "remote invalid request error";
    case IBV_WC_RETRY_EXC_ERR:
      return "transport retry counter exceeded";
    default:
      return "other error";
  }
}

const char* emuEventTypeStr(ibv_event_type t) { return t == IBV_EVENT_PORT_ERR ? "port error" : "async event"; }

void configure() {
  const char* devs = getenv("BRAID_VERBS_EMU_DEVICES");
  std::string spec = devs && *devs ? devs : "emu_0:ib";
  size_t start = 0;
  while (start < spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() : comma + 1;
    auto* d = new EmuDevice;
    std::memset(&d->base, 0, sizeof(d->base));
    const size_t c1 = item.find(':');
    const std::string name = item.substr(0, c1);
    const std::string rest = c1 == std::string::npos ? "" : item.substr(c1 + 1);
    d->roce = rest.compare(0, 4, "roce") == 0;
    d->down = rest.find(":down") != std::string::npos;
    snprintf(d->base.name, sizeof(d->base.name), "%s", name.c_str());
    snprintf(d->base.dev_name, sizeof(d->base.dev_name), "uverbs%zu", gDevices.size());
    d->base.node_type = IBV_NODE_CA;
    d->base.transport_type = IBV_TRANSPORT_IB;
    gDevices.push_back(d);
  }
  if (const char* av = getenv("BRAID_VERBS_EMU_EXPECT_AV")) {
    if (sscanf(av, "%d:%d:%d", &gExpectSl, &gExpectTc, &gExpectPkey) < 2) gExpectSl = gExpectTc = gExpectPkey = -1;
  }
  const char* f = getenv("BRAID_VERBS_EMU_FAULT");
  if (f && *f) {
    std::string s = f;
    const size_t colon = s.find(':');
    const std::string kind = s.substr(0, colon);
    gFault.at = colon == std::string::npos ? 1 : atol(s.c_str() + colon + 1);
    gFault.kind = kind == "drop"   ? Fault::Drop
                  : kind == "rkey" ? Fault::Rkey
                  : kind == "port" ? Fault::Port
                  : kind == "kill" ? Fault::Kill
                                   : Fault::None;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int braidVerbsProviderFill(VerbsApi* api, size_t apiBytes) {
  if (apiBytes != sizeof(VerbsApi)) return -1;
  static std::once_flag once;
  std::call_once(once, configure);
  VerbsApi& a = *api;
  a.getDeviceList = emuGetDeviceList;
  a.freeDeviceList = emuFreeDeviceList;
  a.getDeviceName = emuGetDeviceName;
  a.openDevice = emuOpenDevice;
  a.closeDevice = emuCloseDevice;
  a.queryDevice = emuQueryDevice;
  a.queryPort = emuQueryPort;
  a.queryGid = emuQueryGid;
  a.queryGidType = emuQueryGidType;
  a.allocPd = emuAllocPd;
  a.deallocPd = emuDeallocPd;
  a.regMr = emuRegMr;
  a.regDmabufMr = nullptr;
  a.deregMr = emuDeregMr;
  a.createCompChannel = emuCreateCompChannel;
  a.destroyCompChannel = emuDestroyCompChannel;
  a.createCq = emuCreateCq;
  a.destroyCq = emuDestroyCq;
  a.reqNotifyCq = emuReqNotifyCq;
  a.getCqEvent = emuGetCqEvent;
  a.ackCqEvents = emuAckCqEvents;
  a.createQp = emuCreateQp;
  a.modifyQp = emuModifyQp;
  a.destroyQp = emuDestroyQp;
  a.postSend = emuPostSend;
  a.postRecv = emuPostRecv;
  a.pollCq = emuPollCq;
  a.getAsyncEvent = emuGetAsyncEvent;
  a.ackAsyncEvent = emuAckAsyncEvent;
  a.wcStatusStr = emuWcStatusStr;
  a.eventTypeStr = emuEventTypeStr;
  return 0;
}

}  // namespace braid_emu
