// ConnInfo: the plain struct every transport's setup ends in (docs/DESIGN.md §2). Executors (host threads, device
// kernels) read only this; they never know which transport is behind it.
//
// A connection is a FIFO of nSteps slots of stepBytes each, living where the receiver reads it. The sender
// writes slot (step % nSteps), stores the byte count in sizes[slot], then publishes tail = step + 1
// (release). The receiver waits until tail > step (acquire), consumes, then publishes head = step + 1
// (release) to hand the slot back. The sender may write step s only when s < head + nSteps.
// For the socket transport the sender's buff/head/tail are a local staging FIFO that a proxy thread
// drains into the socket; the receiver's are filled by the proxy on the other side.
#pragma once

#include <cstdint>
#include <type_traits>

#include "nccl.h"

namespace braid {

enum class TransportKind : uint32_t { None = 0, P2p = 1, Shm = 2, Net = 3 };

// Flag in sizes[slot]: the step is the last of its message. Host point-to-point senders set it, and the
// receiver requires it on exactly its own last step, so a send longer or shorter than its receive is an error
// instead of leaving (or taking) steps of another message. The NET proxy carries it in the frame header.
// (Steps are below 1 GiB, kHostFifoMaxStepBytes, so bit 30 is free; device LL senders use bit 31, dev_work.h.)
constexpr int32_t kStepLastOfMessage = 1 << 30;
// A sizes[] word's byte count (negative words, which are never valid sizes, are returned as they are) and
// its end-of-message flag.
inline int32_t stepSizeOf(int32_t word) { return word < 0 ? word : (word & ~kStepLastOfMessage); }
inline bool stepIsLastOf(int32_t word) { return word >= 0 && (word & kStepLastOfMessage) != 0; }
// The NET proxy's frame flags for a step: kStepLastOfMessage, kNetFlagLl, and the step's tag (ConnInfo::tags)
// in the low 16 bits.
constexpr uint32_t kNetFlagTagMask = 0xffffu;

// LL steps (algo/ll_protocol.h: 16-byte lines of two 4-byte data + 4-byte flag pairs). A GPU LL sender
// stores its step's data bytes | kStepLlMark in sizes[] (so a SIMPLE receiver of that step reports the
// mismatch; dev_work.h's kDevLlStepMark is the same bit). Over NET it also publishes tail after the step's
// lines, and the sending proxy ships the step's lines from llBuff as a frame flagged kNetFlagLl; the receiving
// proxy copies them into its llBuff slot (8-byte aligned stores: each data/flag pair lands whole, and the GPU
// polls the flags) before it publishes tail.
constexpr uint32_t kStepLlMark = 0x80000000u;
constexpr uint32_t kNetFlagLl = 1u << 29;
inline bool stepIsLl(int32_t word) { return (static_cast<uint32_t>(word) & kStepLlMark) != 0; }
// Bytes on the wire of an LL step of `dataBytes` (8 data bytes per 16-byte line).
inline uint32_t llWireBytes(uint32_t dataBytes) { return (dataBytes + 7u) / 8u * 16u; }

struct ConnInfo {
  char* buff = nullptr;      // nSteps * stepBytes bytes
  uint64_t* head = nullptr;  // written by the receiver side (credits), read by the sender side
  uint64_t* tail = nullptr;  // written by the sender side, read by the receiver side
  int32_t* sizes = nullptr;  // nSteps entries: bytes in each slot (| kStepLastOfMessage), written before tail
  // nSteps entries beside sizes[] (host FIFOs only; null elsewhere): the 16-bit tag of the ring collective that
  // wrote the step (its type, root, count, type and reduction hashed, hostStepTag), written before tail. A
  // receiver running another collective, or the same one with another root, sees a different tag.
  uint32_t* tags = nullptr;
  // Set non-zero by a proxy/transport thread when the connection broke; waiters check it.
  uint32_t* errorFlag = nullptr;
  uint32_t stepBytes = 0;
  uint32_t nSteps = 0;
  int32_t peer = -1;
  TransportKind kind = TransportKind::None;
  uint64_t step = 0;  // executor-local: next step this side will produce/consume
  // LL protocol buffer (ll_protocol.h): nSteps slots of llSlotBytes, in the receiver's memory, zeroed at
  // creation; null where the transport has none (then only SIMPLE runs on the connection).
  char* llBuff = nullptr;
  uint32_t llSlotBytes = 0;
  // LL128 buffer (ll128_protocol.h), nSteps slots of ll128SlotBytes in the receiver's memory; only on P2P
  // connections over NVLink (the one path whose 128-byte stores arrive whole), else null.
  uint32_t ll128SlotBytes = 0;
  char* ll128Buff = nullptr;
};
static_assert(std::is_trivially_copyable<ConnInfo>::value, "ConnInfo must stay a plain struct");

// The LL slots a GPU kernel may use on this connection: P2P's, SHM segments' and NET staging FIFOs' (those
// of GPU communicators); null when it has none. The one test of "this connection runs LL" for uploads, the
// agreed LL path and p2p transfers.
inline char* llSlotsOf(const ConnInfo* c) { return c && c->kind != TransportKind::None ? c->llBuff : nullptr; }

// Host-side atomic helpers (the device executor will have its own with the same semantics).
inline uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
inline uint32_t loadAcquire32(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

// What executors need from a communicator's connections. ConnectionManager (transport.h) implements it;
// executor tests implement it in memory.
class ConnProvider {
 public:
  virtual ~ConnProvider() = default;
  virtual int ringChannels() const = 0;
  virtual ConnInfo* ringSend(int channel) = 0;
  virtual ConnInfo* ringRecv(int channel) = 0;
  // Connects what is missing; the peers named must call it in the same batch (A's send to B pairs with
  // B's recv from A). Returns with every listed connection usable.
  virtual ncclResult_t connectP2p(const int* sendPeers, int nSend, const int* recvPeers, int nRecv) = 0;
  // A peer's point-to-point connections: channels [0, p2pChannels(peer)), all connected by connectP2p.
  virtual ConnInfo* p2pSend(int peer, int channel = 0) = 0;
  virtual ConnInfo* p2pRecv(int peer, int channel = 0) = 0;
  virtual int p2pChannels(int /*peer*/) { return 1; }
  // The tree all-reduce's connections with `peer` (tree t's parent or child) on channel c, and how many channels
  // the trees have: none unless the provider connected trees.
  virtual ConnInfo* treeSend(int /*tree*/, int /*channel*/, int /*peer*/) { return nullptr; }
  virtual ConnInfo* treeRecv(int /*tree*/, int /*channel*/, int /*peer*/) { return nullptr; }
  virtual int treeChannels() const { return 0; }
  // Called by a host executor when an operation ends: steps it published but no thread has moved yet must not
  // wait for the next operation (socket connections; nothing to do for memory).
  virtual void flush() {}
};

}  // namespace braid
