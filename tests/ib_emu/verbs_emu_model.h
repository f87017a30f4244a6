// The emulated verbs provider's model (verbs_emu_model.cc): devices, memory regions, queue pairs whose traffic
// crosses processes through shared-memory rings, and completion queues. verbs_emu.cc is the table over it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "transport/net/ib/verbs_api.h"

namespace braid_emu {

constexpr uint32_t kSegMagic = 0x454d5551;  // "EMUQ"
constexpr size_t kRingBytes = size_t{1} << 20;
constexpr uint32_t kMaxChunk = 64u << 10;
constexpr uint32_t kEntryLast = 1;

struct RingEntry {
  uint32_t opcode;  // ibv_wr_opcode
  uint32_t imm;
  uint64_t raddr;
  uint32_t rkey;
  uint32_t len;       // bytes in this chunk (follow the entry, padded to 8)
  uint32_t totalLen;  // bytes of the whole message
  uint32_t flags;     // kEntryLast
  uint64_t msgSeq;    // the sender's message number on this queue pair
};

struct QpShared {
  std::atomic<uint32_t> magic;
  std::atomic<int32_t> ownerPid;
  std::atomic<uint32_t> state;  // ibv_qp_state of the owner
  std::atomic<uint32_t> destroyed;
  std::atomic<uint32_t> peerAttached;
  std::atomic<uint64_t> inHead;  // inbound ring: consumed by the owner
  std::atomic<uint64_t> inTail;  // produced by the peer
  std::atomic<uint64_t> acked;   // the owner's messages the peer has consumed
  std::atomic<uint32_t> nakStatus;
  std::atomic<uint64_t> nakSeq;
  // Completion notification: the owner arms it (ibv_req_notify_cq on its completion queue); whichever side next puts
  // something in for this queue pair (ring entries, acknowledgements) disarms it and signals the owner's channel.
  std::atomic<uint32_t> armed;
  std::atomic<int32_t> chanPid;
  std::atomic<uint32_t> chanId;
  std::atomic<uint64_t> chanCq;  // the owner's EmuCq, handed back by its ibv_get_cq_event
  alignas(64) char ring[kRingBytes];
};

struct EmuDevice;
struct EmuCq;

struct EmuCtx {
  ibv_context base;  // first: the table's callers hold &base
  EmuDevice* dev = nullptr;
  std::deque<ibv_async_event> events;
};

struct EmuDevice {
  ibv_device base;
  bool roce = false;
  bool down = false;
  EmuCtx* ctx = nullptr;  // the open context (one per device is all the backend needs)
};

struct EmuMr {
  ibv_mr base;
  int access = 0;
};

struct SendWr {
  uint64_t wrId = 0;
  ibv_wr_opcode opcode = IBV_WR_SEND;
  bool signaled = false;
  std::vector<char> inlineData;
  uint64_t addr = 0;  // local data (not inline)
  uint32_t len = 0;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint32_t pushed = 0;  // bytes pushed so far
  bool fullyPushed = false;
  bool dropped = false;
  uint64_t msgSeq = 0;
};

struct RecvWr {
  uint64_t wrId = 0;
  uint64_t addr = 0;
  uint32_t len = 0;
  uint32_t lkey = 0;
  bool hasSge = false;
};

struct EmuQp {
  ibv_qp base;
  EmuCq* scq = nullptr;
  EmuCq* rcq = nullptr;
  QpShared* self = nullptr;
  QpShared* remote = nullptr;
  std::string name;
  bool unlinked = false;
  uint8_t port = 1;
  uint8_t timeout = 14;
  uint8_t retryCnt = 7;
  std::deque<SendWr> sq;
  std::deque<RecvWr> rq;
  uint64_t nextMsgSeq = 0;
  double stallSince = 0;  // when the head message started waiting on a peer that cannot answer
};

struct EmuChannel {
  ibv_comp_channel base;  // base.fd: a datagram socket bound to channelAddress(getpid(), id)
  uint32_t id = 0;
};

struct EmuCq {
  ibv_cq base;
  std::deque<ibv_wc> wcs;
  std::vector<EmuQp*> qps;
  EmuChannel* channel = nullptr;
};

struct Fault {
  enum Kind { None, Drop, Rkey, Port, Kill } kind = None;
  long at = 0;
};

// Process-wide state, under gMu (every entry point takes it: the proxy may poll from several threads).
extern std::mutex gMu;
extern std::vector<EmuDevice*> gDevices;
extern std::map<uint32_t, EmuMr*> gMrs;  // by key (lkey == rkey)
extern Fault gFault;

std::string segName(uint32_t qpn);
// Maps (or creates, exclusively) a queue pair's segment; null when it cannot.
QpShared* mapSeg(const std::string& name, bool create);
void pushWc(EmuCq* cq, EmuQp* qp, uint64_t wrId, ibv_wc_status st, ibv_wc_opcode op, uint32_t bytes, uint32_t imm,
            bool withImm);
ibv_wc_opcode sendWcOpcode(ibv_wr_opcode op);
// The queue pair enters the error state: the head send completes with headStatus, everything else flushes.
void toError(EmuQp* qp, ibv_wc_status headStatus);
EmuMr* findMr(uint32_t key);
bool mrCovers(const EmuMr* mr, uint64_t addr, uint64_t len, int access);
// Port 1 of the queue pair's device goes down: IBV_EVENT_PORT_ERR, and no traffic leaves or enters it.
void injectPortDown(EmuQp* qp);
// Sender side: pushes what fits into the peer's ring.
void pushSends(EmuQp* qp);
// The abstract-namespace name of a completion channel's socket.
std::string channelAddress(int pid, uint32_t id);
// Signals the channel armed in `seg`, if any (once per arming).
void notifyOwner(QpShared* seg);
// Everything a poll of `cq` moves: rings consumed, sends pushed, acknowledgements and timeouts turned into
// completions.
void progressCq(EmuCq* cq);

}  // namespace braid_emu
