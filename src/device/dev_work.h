// The plain structs shared by the device executor (host C++) and the kernels: a connection's device-side
// state (DevConn, in device memory, so FIFO step counters persist across launches and CUDA graph replays
// need no host), and the by-value kernel arguments (one collective, or a list of p2p transfers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "algo/numeric_types.h"  // BRAID_HDI

namespace braid {

constexpr int kMaxDevChannels = 64;  // NCCL_MAX_NCHANNELS may raise the default up to this
constexpr int kMaxP2pCtas = 192;     // CTAs of one p2p launch (more than the SMs of an H200 already)
constexpr int kMaxP2pBlocks = 640;   // blocks (CTAs x their transfers) of one p2p launch
constexpr int kDevThreads = 512;     // default threads per CTA (NCCL_NTHREADS overrides, up to the max)
constexpr int kDevMaxThreads = 512;  // most threads per CTA
constexpr int kDevPostWarp = 32;     // the CTA's last warp publishes FIFO steps (prims_simple.h); the rest move data
// __launch_bounds__: 16 warps get 128 registers each (no spills). 512 + a post warp (17 warps) got only 96
// (one scheduler holds 5 warps) and every reducing kernel spilled.
constexpr int kDevLaunchMax = kDevMaxThreads;

enum DevConnFlags : uint32_t {
  kDevConnHostFifo = 1u,  // the FIFO lives in (registered) host memory: fence at system scope, slow path
  kDevConnNetLl = 2u,     // a NET staging FIFO with LL slots: LL senders also publish tail for the proxy
};

// One side of one connection, as the kernel sees it. Pointers are device-accessible (peer device memory,
// or host memory mapped with cudaHostRegister).
struct DevConn {
  char* buff;
  uint64_t* head;
  uint64_t* tail;
  int32_t* sizes;
  uint32_t* errorFlag;  // may be null (P2P); non-zero: the host transport broke
  uint64_t step;        // next step this side produces/consumes; persists across launches
  uint32_t stepBytes;
  uint32_t nSteps;
  int32_t peer;
  uint32_t flags;
  char* llBuff;          // LL slots (nSteps x llSlotBytes) or null
  uint32_t llSlotBytes;
  uint32_t ll128SlotBytes;
  uint64_t llLastClean;  // step of the last LL cleaning on this side (ll_protocol.h); persists like step
  uint64_t timeoutNs;    // BRAID_TIMEOUT: one wait on this connection longer than this fails (0: none)
  char* ll128Buff;       // LL128 slots (nSteps x ll128SlotBytes; NVLink P2P only) or null
  // Send side, the waiting thread's cache of the last head it read (devWaitSend; thread 0, or in the one-shot over
  // peers the peer's own thread): credits up to headSeen + nSteps need no new read. Over SHM and NET head lives in host
  // memory, a PCIe round trip per read; over P2P a system-scope acquire, ~0.75 us on H200. Zero at upload; kept across
  // launches like step (head only grows, so an old value only costs a read, never a credit the receiver did not give).
  uint64_t headSeen;
};
static_assert(std::is_trivially_copyable<DevConn>::value, "DevConn is copied as bytes");

// Device-visible words in mapped pinned host memory: an abort flag the host sets (ncclCommAbort), the rank
// + 1 of a peer process the host's peer watch saw die (a kernel spinning on that peer stops itself with
// kDevPeerGone; kernels waiting on live peers go on), and an error word the kernels set (first error wins).
enum DevError : uint32_t {
  kDevOk = 0,
  kDevAborted = 1,
  kDevSizeMismatch = 2,
  kDevConnBroken = 3,
  kDevPeerGone = 4,
  kDevTimeout = 5,  // one wait on a peer outlasted BRAID_TIMEOUT (a stuck peer, or different counts/plans)
};
// An LL sender also stores its step's byte count | kDevLlStepMark in the FIFO's sizes[], so a SIMPLE
// receiver of that step (the ranks' counts differ across the p2p LL threshold) reports a size mismatch
// instead of reading a stale slot. An LL receiver that sees a SIMPLE step published at or past the one it
// waits for reports kDevSizeMismatch with want == kDevLlStepMark.
constexpr uint32_t kDevLlStepMark = 0x80000000u;
// A SIMPLE p2p transfer marks its last step (sizes[] word | kDevStepLastMark, conn_info.h's kStepLastOfMessage,
// which the NET proxies carry), and the receiver expects the mark on exactly its own last step: a send longer
// or shorter than its receive is reported even when the shorter side's steps are a prefix of the longer's.
constexpr uint32_t kDevStepLastMark = 1u << 30;
// A balanced p2p transfer's steps (P2pBlock::ll < 0, p2p_plan.h's p2pBalanced) carry no byte count: sizes[] holds
// kDevStepBalMark | the chunk's index (0 .. kDevBalIndexMask), or, on each sending CTA's closing step (no data),
// kDevStepBalMark | kDevStepLastMark | devBalFold(the sender's bytes, its chunk), which the receiver compares with its
// own. A receiver of the other kind (counts that differ across the balance threshold) then sees a word it does not
// expect and reports kDevSizeMismatch, as with differing step sizes. The fold mixes every bit of the size and of the
// chunk (a splitmix64 finalizer), so two differing pairs share it with odds of ~2^-29 whatever their difference (a
// plain XOR of 29-bit pieces let e.g. 4 GiB and 6 GiB + 4 collide); the receiver does not count the chunks it got,
// so a collision with chunk indices all in range would go unreported. The chunk is in it because each side derives
// its own (p2pBalancedChunkBytes, from agreed values): a sender with the larger chunk sends indices that are all in
// the receiver's range, so without it the receiver would place every chunk at the wrong offset and say nothing.
constexpr uint32_t kDevStepBalMark = 1u << 29;
constexpr uint32_t kDevBalIndexMask = kDevStepBalMark - 1;
BRAID_HDI inline uint32_t devBalFold(size_t bytes, size_t chunk) {
  uint64_t z = static_cast<uint64_t>(bytes) ^ (static_cast<uint64_t>(chunk) * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  // Below the mask, never at it: a receiving CTA's stop word (prims_simple.h: recvChunk's kStop) is the close marks
  // with every index bit set, so a fold equal to the mask made a genuine close read as a stop, and the receiver's
  // poster skipped its head post: the connection's next transfer hung or failed (found in review; e.g. 5472764716
  // bytes in 256 KiB chunks).
  return static_cast<uint32_t>(z % kDevBalIndexMask);
}
// The first 16 bytes are read by the kernels in one load (prims_simple.h: devReadHostWords).
struct alignas(16) DevStatus {
  uint32_t abort;
  uint32_t deadPeer;  // rank + 1 of a dead peer, 0: none
  uint32_t error;
  int32_t errorPeer;
  uint32_t errorBytes;   // what arrived (size mismatch)
  uint32_t expectBytes;  // what was expected
};

// The protocol a collective kernel is compiled for (its template argument).
enum DevProto : int { kDevProtoSimple = 0, kDevProtoLL = 1, kDevProtoLL128 = 2 };

// Collective codes understood by the kernels (same order as CollType's ring collectives), then the
// algorithm variants: the one-shot all-reduce of a 2-rank ring (ring_schedules.h).
enum DevColl : int32_t {
  kDevAllReduce = 0,
  kDevBroadcast = 1,
  kDevReduce = 2,
  kDevAllGather = 3,
  kDevReduceScatter = 4,
  kDevAllReduceOneShot = 5,
  // The same schedule with each channel's two directions in CTAs of their own: CTA c sends channel c's share,
  // CTA nChannels + c receives and reduces it, so the link and the reduction overlap (2 x nChannels CTAs;
  // SIMPLE only, and only where a channel's share fits its FIFO, so no sending CTA waits on a receiving one;
  // in place, CollLaunchArgs::splitGuard orders each chunk's read before its overwrite).
  kDevAllReduceOneShotSplit = 6,
  // The one-shot all-reduce of 3 to kDevMaxOneShotPeers + 1 ranks, on LL (one_shot_peers.cuh): every rank writes
  // its input into every peer's LL slots and reduces all n inputs in rank order (CollLaunchArgs::peerConns).
  kDevAllReduceOneShotPeers = 7,
  // The two-shot all-reduce of the same ranks, on LL over the same connections (one_shot_peers.cuh): part p of
  // every rank's input goes to rank p, which reduces it and writes the result to every peer.
  kDevAllReduceTwoShotPeers = 8,
  // The double binary tree all-reduce (algo/tree_schedules.h) on SIMPLE or LL, across nodes: CTA 2c + t runs tree
  // t's half of channel c's range over CollLaunchArgs::treeConns (2 x nChannels CTAs).
  kDevAllReduceTree = 9
};
// Connections of one tree of one channel: parent send/receive, then each child's (prims_tree.h's layout).
constexpr int kDevTreeConns = 6;
// The most peers the one-shot of kDevAllReduceOneShotPeers reaches (a GPU node of 8).
constexpr int kDevMaxOneShotPeers = 7;

#if defined(__CUDACC__)
// First thing in every collective and p2p kernel: wait until the stream's previous kernel has ended and its
// memory is visible. Launches go as programmatic dependents (BRAID_PDL), so a kernel's CTAs may be resident
// before then; this keeps everything they do after it (a no-op on a plain launch, and below sm_90).
__device__ __forceinline__ void devAwaitPreviousKernel() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Lets the stream's next kernel launch now (it still waits for this one in devAwaitPreviousKernel).
__device__ __forceinline__ void devLetNextKernelLaunch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#endif

struct CollLaunchArgs {
  const void* sendbuff;
  void* recvbuff;
  size_t count;      // elements of the kernel's type (bytes for the copy kernel)
  const void* scalarPtr;  // PreMulSum with a device-resident scalar, else null
  uint64_t scalar;   // PreMulSum scalar bits (host-immediate)
  uint64_t divisor;  // SumPostDiv
  int32_t coll;
  int32_t root;
  int32_t rank;
  int32_t nranks;
  // The ring schedules' view (ring_schedules.h) where the communicator runs one ring: this rank's ring position,
  // the root's, and the position -> rank table (device memory, fixed for the communicator's life; null where the
  // ring runs in rank order). With several rings (nRings > 1) each channel reads its own from ringTables.
  int32_t ringPos;
  int32_t rootPos;
  const int32_t* ringOrder;
  int32_t nChannels;
  uint32_t stepCap;  // Simple: bytes per FIFO step at most (0: the connection's step); same on every rank
  DevStatus* status;
  // The split one-shot in place (input and output overlap): per channel, the chunks its sending CTA has read
  // (device memory, zero between launches); the receiving CTA writes chunk k only once it reads > k. Null:
  // no guard (out of place, or not split).
  uint64_t* splitGuard;
  // The communicator's ring connections (device memory, fixed for its life): channel c sends over
  // ringConns[c] and receives over ringConns[ringStride + c]. A base pointer rather than 128 per-channel
  // pointers: ~100 B of parameters instead of 1.1 KiB per launch (graph replays 0.05-0.2 us faster on 2xH200).
  DevConn* ringConns;
  int32_t ringStride;
  // Distinct rings (ring_order.h): channel c runs ring c % nRings. 1: ringPos, rootPos and ringOrder describe it.
  // More: ring k's tables are ringTables[2 k nranks ...]: position -> rank, then rank -> position (device memory,
  // fixed for the communicator's life; ringTablesFor in ring_order.h builds them), so a channel finds its own
  // position and the root's without the host doing anything per launch.
  int32_t nRings;
  const int32_t* ringTables;
  // kDevAllReduceOneShotPeers, kDevAllReduceTwoShotPeers: channel c's connection pair with its j-th peer (rank order, this rank left out) is
  // peerConns[(c * (nranks - 1) + j) * 2] (send) and [... + 1] (receive); device memory, fixed once built.
  DevConn* const* peerConns;
  // kDevAllReduceTree: channel c's tree t connections are treeConns[(2 c + t) * kDevTreeConns ...] (device memory,
  // fixed for the communicator's life); null where the communicator has no trees.
  DevConn* treeConns;
  int32_t pdlTrigger;  // 1: each CTA lets the stream's next kernel launch at once (it waits for this one to end)
  int32_t redKind;     // the op's RedKind: read by the kernels that serve several reductions (func_any_red.h)
};
static_assert(std::is_trivially_copyable<CollLaunchArgs>::value, "CollLaunchArgs is passed by value to kernels");
// Every byte of a kernel's parameters is copied at each launch: the ring fields fill what was padding and add one
// pointer.
static_assert(sizeof(CollLaunchArgs) <= 152, "CollLaunchArgs stays small (a launch copies all of it)");

// One CTA of a p2p launch: sends `bytes` from `buf` over `conn` (or receives into `buf`), as ceil(bytes /
// stepBytes) FIFO steps. Blocks sharing a connection run in one CTA, in order (nSeg consecutive entries).
struct P2pBlock {
  char* buf;
  size_t bytes;
  DevConn* conn;      // nullptr: a local copy of `bytes` from src to buf (no connection, no FIFO)
  const char* src;    // local copies: the source; a balanced send: its two claim words (DeviceState::p2pClaims),
                      // or 2 * channel + 1 where it has none (chunks channel + k * parts, p2p_plan.h)
  int16_t isSend;
  int16_t ll;    // 1: this transfer runs LL (the executor decides from its size, as the peer does); -parts: a
                 // balanced transfer over `parts` channels (buf, bytes: the whole transfer; p2p_plan.h)
  int32_t nSeg;  // first entry of a CTA: how many consecutive entries it runs (a paired CTA: its send group's,
                 // and the receive group's first entry counts that group); 0 on the others
};
template <int MaxBlocks>
struct P2pLaunchArgsOf {
  DevStatus* status;
  int32_t nBlocks;
  uint32_t pieces;              // SIMPLE blocks go in up to this many FIFO steps (p2pSimpleStepBytes)
  uint32_t balCapParts;         // balanced transfers over this many channels or more: capped chunks (p2p_plan.h)
  int16_t ctaFirst[MaxBlocks];  // CTA i runs blocks[ctaFirst[i]] .. up to CTA i + 1's first
  P2pBlock blocks[MaxBlocks];
};
using P2pLaunchArgs = P2pLaunchArgsOf<kMaxP2pBlocks>;
// A launch past kMaxP2pBlocks reads the same lists from device memory (p2p_table.h), so a group of many
// transfers runs as one launch (a batch split into several launches can deadlock, p2p_plan.h).
struct P2pTableArgs {
  DevStatus* status;
  int32_t nBlocks;
  uint32_t pieces;
  uint32_t balCapParts;
  const int32_t* ctaFirst;  // device memory: CTA i runs blocks[ctaFirst[i]] .. up to CTA i + 1's first
  const P2pBlock* blocks;   // device memory
};
static_assert(sizeof(P2pBlock) == 40, "P2pBlock: the table layout (p2p_table.h) and its size estimates");
// The most blocks of one table launch (40 bytes each): a bound on the host's table, not on any device
// resource; past it a group is refused with a message to split it.
constexpr int kMaxP2pTableBlocks = 1 << 20;
// One fill launch of a table (p2p_table.h): `bytes` (a multiple of 16) of `data` go to `dst`.
constexpr int kP2pTableChunkBytes = 30 << 10;
struct P2pTableChunk {
  char* dst;
  uint32_t bytes;
  alignas(16) unsigned char data[kP2pTableChunkBytes];
};
static_assert(sizeof(P2pTableChunk) < 32000, "kernel parameters stay under CUDA's 32 KB limit");
static_assert(sizeof(P2pLaunchArgs) < 32000, "kernel parameters stay under CUDA's 32 KB limit");
// A launch passes the smallest of four parameter blocks that holds its blocks: every byte of a kernel's
// parameters is copied into the launch at each call: on 2xH200 small batches (send/recv 8 B and 2 MB, all-to-all
// 1 MB) ran up to 2-4 us slower on the 8 KB block of 192 blocks than on the 0.7 KB (16 blocks) and 1.4 KB
// (32 blocks) tiers (docs/TUNING.md, "Parameter tiers"). The largest
// (26 KB) serves batches of several large transfers (a pipeline step: 2 x 64 channels x 2 transfers).
constexpr int kTinyP2pBlocks = 16;
constexpr int kSmallP2pBlocks = 32;
constexpr int kMidP2pBlocks = 192;
using P2pLaunchArgsTiny = P2pLaunchArgsOf<kTinyP2pBlocks>;
using P2pLaunchArgsSmall = P2pLaunchArgsOf<kSmallP2pBlocks>;
using P2pLaunchArgsMid = P2pLaunchArgsOf<kMidP2pBlocks>;

}  // namespace braid
