// p2p_plan: how a GPU communicator's batch of point-to-point transfers (send/recv, and the transfers of
// all-to-all, gather and scatter) is cut into the CTAs of one kernel launch. A pure function of the transfer
// lists, kept apart from the CUDA executor so its contract is unit-tested on any machine: both sides of a
// connection cut every transfer alike whatever else either side grouped with it. A transfer runs over
// p2pTransferChannels channels (its own size, channelBytes, at most its connection's channels: the ring's for the
// neighbour, those whose ring has it as neighbour where there are several rings, the peer's p2pPeerChannels
// connections for others, and a collective's cap), share c on channel c,
// and each share's protocol (LL or SIMPLE) and SIMPLE FIFO steps (p2pSimpleStepBytes) follow from the share's
// size alone.
// A batch is always one launch: a rank's launches run one after another on its stream, so a batch split
// into several launches can wait on work its peer posts only in a later group (a deadlock, shown by the
// progress model in tests/unit/p2p_plan_test.cc). Blocks past the kernel parameters' room go to device memory
// (p2p_table.h), so the number of transfers is bounded only by kMaxP2pTableBlocks; a batch needing more CTAs
// than a launch has (one per connection direction and channel, or per ring channel where its send and receive
// are paired under a CTA bound, plus the copy CTAs) is refused.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algo/numeric_types.h"  // BRAID_HD

namespace braid {

// The FIFO step of a SIMPLE p2p share. Both sides derive it from the block's bytes and the connection's step
// (the same on both), so they cut the transfer alike: in `pieces` steps of whole 4 KiB, none below
// kP2pMinPieceBytes nor above the connection's step, so the receiver copies one piece out while the next
// crosses the link. Each step costs ~1.5 us of handshake, which pieces of 128 KiB and up pay back (measured on
// 2xH200: docs/TUNING.md, "Pieces"); a share under two pieces keeps one step.
constexpr size_t kP2pMinPieceBytes = size_t(128) << 10;
BRAID_HD inline size_t p2pSimpleStepBytes(size_t connStep, size_t bytes, uint32_t pieces) {
  if (pieces <= 1 || bytes < 2 * kP2pMinPieceBytes) return connStep;
  size_t piece = ((bytes + pieces - 1) / pieces + 4095) & ~size_t{4095};
  if (piece < kP2pMinPieceBytes) piece = kP2pMinPieceBytes;
  return piece < connStep ? piece : connStep;
}

// How many ring channels a p2p transfer of `bytes` takes, from the unit u = channelBytes (64 KiB). Up to 2u,
// shares of u/8 on at most kP2pNarrowChannels channels; up to 16u, shares of u/2 on kP2pNarrowChannels to
// kP2pKneeChannels channels; above, one channel per u up to kP2pKneeChannels, then shares of 2u up to
// kP2pKneeChannels, then shares of 4u (at least kP2pWideShareBytes), at most nChannels; inside that rule the
// channel count holds at each widening until the larger shares catch up. Between the rules it drops: 16u on
// 32 channels, 16u + 1 on 17. The fine cut makes many blocks (a 64 KiB transfer 8, 1 MiB 32): a group past
// kMaxP2pBlocks of them runs from a table in device memory, at the cost of its fill launches.
// Both sides derive it from the transfer's size and rank 0's channelBytes, so they cut alike. Why: small shares
// run LL on several CTA pairs at once, mid sizes gain from more, smaller SIMPLE shares, and past 32 channels only
// shares of 256 KiB pay: 64 channels of 64-128 KiB shares ran fast in some processes and ~50% slower in others,
// 32 of larger shares steadily (measured on 2xH200 and 2xH100: docs/TUNING.md, "The cut").
constexpr int kP2pNarrowChannels = 8;
constexpr int kP2pKneeChannels = 32;
constexpr size_t kP2pWideShareBytes = size_t(256) << 10;
inline int p2pChannelsForBytes(size_t bytes, int nChannels, size_t channelBytes) {
  const size_t unit = channelBytes < 1 ? 1 : channelBytes;
  auto over = [&](size_t per) { return (bytes + per - 1) / per; };
  size_t want;
  if (bytes <= 2 * unit) {
    want = std::min<size_t>(kP2pNarrowChannels, over(std::max<size_t>(1, unit / 8)));
  } else if (bytes <= 16 * unit) {
    want = std::min<size_t>(kP2pKneeChannels, std::max<size_t>(kP2pNarrowChannels, over(std::max<size_t>(1, unit / 2))));
  } else {
    want = over(unit);
    if (want > static_cast<size_t>(kP2pKneeChannels)) want = over(2 * unit);  // 17-32 channels here
    if (want > static_cast<size_t>(kP2pKneeChannels))
      want = std::max<size_t>(kP2pKneeChannels, over(std::max(4 * unit, kP2pWideShareBytes)));
  }
  const size_t cap = nChannels < 1 ? 1 : static_cast<size_t>(nChannels);
  return static_cast<int>(std::min(std::max<size_t>(want, 1), cap));
}

// A CTA bound (p2pMaxCtas: config.maxCTAs or CTAPolicy, NCCL_MAX_CTAS, NCCL_MAX_NCHANNELS, NCCL_MAX_P2P_NCHANNELS;
// agreed at init) bounds p2p launches' ring channels. One SM stores ~40 GB/s over NVLink whatever its threads, so
// under a small bound the CTAs that send set the rate. There (kP2pPairMaxCtas or fewer) a ring channel's send and
// receive blocks share one CTA, on two warp groups (P2pPlanInput::pairRing), and the ring is cut over the whole
// bound: both directions then send from every CTA, and a one-way transfer (gather, scatter, a lone send) from the
// bound's worth of SMs. Transfers whose shares on the whole bound would run LL (small ones) are cut over half of it
// instead (llChannels): LL blocks run on whole CTAs, a send and a receive CTA per channel (so a group mixing those
// with large transfers takes up to llChannels CTAs past the bound; LL on the warp groups measured slower). Every
// rank must be able to pair (TuningFacts::p2pPair: NCCL_NTHREADS a multiple of 64 from 128), else every rank keeps
// half the bound.
// Under larger bounds, half the bound's SMs already fill the link and sharing an SM between the directions only slows
// each: every transfer is cut over half the bound, a CTA per direction, except a gather's or a scatter's
// (P2pXfer::oneWay: both ends know the pair runs one way), cut over the whole bound (oneWayChannels) at any size. Ring
// channels then pair only as far as a group mixing those with transfers the other way needs to keep within the bound
// (P2pPlanInput::pairWithin). Pairing wins up to a bound of 20 and half the bound from 22; with balanced transfers
// (p2pBalanced) the whole cut wins for gathers and scatters at every bound from 17 (measured on 2xH200 and 2xH100:
// docs/TUNING.md, "The CTA budget under a bound").
// The cut depends only on agreed values (the bound, the LL threshold, the transfer's size and whether it is a gather's
// or scatter's; never on whether this rank pairs, has copies or other transfers), so both sides still cut alike. Local
// copies (all-to-all's own share, a gather/scatter root's) may take up to half the bound more, for as long as they
// copy: on fewer CTAs a large all-to-all is copy-bound. Each connection to another peer adds one CTA per direction.
constexpr int kP2pPairMaxCtas = 20;
// A local copy (all-to-all's own share, a gather/scatter root's, a send to self) runs on up to maxCopyCtas CTAs of at
// least this many bytes each: a CTA copies ~46 GB/s, one SM's worth (measured on 2xH200: a 4 MiB share on one CTA
// took 90 us), so small copies take few CTAs.
constexpr size_t kP2pCopyCtaBytes = size_t(256) << 10;
// The CTAs a local copy of `bytes` takes (planP2p, before the launch's room; the tuner's estimate alike).
inline int p2pCopyCtas(size_t bytes, int maxCopyCtas) {
  return static_cast<int>(
      std::min<size_t>(std::max(1, maxCopyCtas), (bytes + kP2pCopyCtaBytes - 1) / kP2pCopyCtaBytes));
}
// Whether CTAs of nThreads threads can pair: two warp groups of a worker warp and a poster each, of equal whole
// warps (the kernel splits at blockDim.x / 2).
inline bool p2pCanPair(int nThreads) { return nThreads >= 128 && nThreads % 64 == 0; }
struct P2pCtaBudget {
  int nChannels = 1;              // ring channels to cut over
  int llChannels = 0;             // ... for a transfer whose shares on nChannels would run LL (0: nChannels)
  int oneWayChannels = 0;         // ... for a gather's or scatter's transfer (P2pXfer::oneWay; 0: nChannels)
  int maxCopyCtas = 1;            // CTAs for local copies
  bool pair = false;              // a ring channel's send and receive share a CTA
  int pairWithin = 0;             // else: pair only as many channels as keep the ring's CTAs within this (0: none)
};
// canPair: every rank's CTAs can (TuningFacts::p2pPair, agreed); where one cannot, every rank keeps half the
// bound, a CTA per direction, so the bound holds.
inline P2pCtaBudget p2pCtaBudget(int nChannels, int copyCtas, int maxCtas, bool canPair) {
  if (maxCtas <= 0) return {nChannels, nChannels, nChannels, copyCtas, false, 0};
  const int half = std::max(1, std::min(nChannels, maxCtas / 2));
  const int whole = std::max(1, std::min(nChannels, maxCtas));
  const int copies = std::max(1, std::min(copyCtas, maxCtas / 2));
  if (!canPair) return {half, half, half, copies, false, 0};
  if (maxCtas > kP2pPairMaxCtas) return {half, half, whole, copies, false, maxCtas};
  return {whole, half, whole, copies, true, 0};
}

// The bytes of each of a transfer's first `parts` - 1 shares (the last takes the rest): contiguous shares
// with 64-byte aligned starts. planP2p cuts by it, and the tuner's p2p estimate decides LL by it.
BRAID_HD inline size_t p2pShareBytes(size_t bytes, int parts) {
  if (parts <= 1) return bytes;
  return ((bytes + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts) + 63) & ~size_t{63};
}

// The channels a ring transfer is cut over (p2pCtaBudget): oneWayChannels for a gather's or scatter's, else
// nChannels (planP2p and the cost model alike).
inline int p2pCutChannels(bool oneWay, int nChannels, int oneWayChannels) {
  return oneWay && oneWayChannels > 0 ? oneWayChannels : nChannels;
}

// The channels of a ring transfer of `bytes` (p2pCtaBudget): p2pChannelsForBytes over nChannels, or over
// llChannels where its shares on nChannels would be small enough for LL (llThreshold).
inline int p2pRingChannels(size_t bytes, int nChannels, int llChannels, size_t channelBytes, size_t llThreshold) {
  const int k = p2pChannelsForBytes(bytes, nChannels, channelBytes);
  if (llChannels <= 0 || llChannels >= nChannels || p2pShareBytes(bytes, k) > llThreshold) return k;
  return p2pChannelsForBytes(bytes, llChannels, channelBytes);
}

// Peer channels. With more than two ranks a rank's transfers to several peers run side by side (all-to-all,
// a gather's or scatter's root, send/recv groups such as a pipeline's or an expert layer's), each peer on its
// own connections. One SM moves ~35-40 GB/s and a GPU's NVLink ~450 GB/s each way, so each peer needs several
// CTAs, and the sum over the peers must still fit the GPU's SMs: kP2pPeerCtaTarget CTAs a direction shared by
// the n - 1 peers, from kP2pMinPeerChannels to kP2pMaxPeerChannels each (n = 3: 16, 4: 10, 8: 4, 16 and up:
// 2). Every peer that is not a ring neighbour gets that many connections of each direction (fewer over SHM and
// NET: transport.h, p2pChannelsOn), and a collective's transfers at n > 2 (all-to-all, gather, scatter) are cut
// over at most that many channels on the ring neighbour's connections too (P2pXfer::maxChannels), so every
// peer moves at the same pace and all finish together. Under a CTA bound (maxCtas > 0) the peers share it, one
// channel each at least (so past maxCtas / 2 peers a collective passes the bound). Whatever the count asked for
// (forced values too), a collective to every peer both ways, plus a copy CTA, fits one launch of kP2pLaunchCtas
// (P2pPlanInput::maxCtas): otherwise a rank that needs more CTAs than its peers (a gather's root) would refuse a
// launch its peers make and wait on. A pure function of agreed values (nranks, the agreed channels and bound,
// rank 0's BRAID_P2P_PEER_CHANNELS), so both sides of every connection cut alike.
constexpr int kP2pPeerCtaTarget = 32;
constexpr int kP2pMinPeerChannels = 2;
constexpr int kP2pMaxPeerChannels = 16;
constexpr int kP2pLaunchCtas = 192;  // the CTAs of one p2p launch (dev_work.h's kMaxP2pCtas)
inline int p2pPeerChannels(int nranks, int nChannels, int maxCtas, int forced) {
  const int others = nranks > 2 ? nranks - 1 : 1;
  int p = forced > 0 ? forced
                     : std::max(kP2pMinPeerChannels, std::min(kP2pMaxPeerChannels, kP2pPeerCtaTarget / others));
  if (maxCtas > 0) p = std::min(p, std::max(1, maxCtas / (2 * others)));
  p = std::min(p, (kP2pLaunchCtas - 1) / (2 * others));
  return std::max(1, std::min(p, nChannels));
}

// The channels a transfer is cut over: p2pRingChannels over `over` (the launch's cut, p2pCutChannels), at most
// `cap` (its connection's channels and its own P2pXfer::maxChannels; 0: none). planP2p and the cost model alike.
inline int p2pTransferChannels(size_t bytes, int over, int cap, int llChannels, size_t channelBytes,
                               size_t llThreshold) {
  if (cap > 0 && cap < over) over = cap;
  return p2pRingChannels(bytes, over, llChannels, channelBytes, llThreshold);
}

// Balanced transfers. A transfer's CTAs move data at rates that differ by up to ~20% from one CTA to the next,
// and differently from one launch to the next (a CTA timeline on 2xH200: docs/TUNING.md, "Balanced transfers"), so
// with a fixed share each the fast ones idle while the slow ones finish, and on few CTAs the link idles with them. A
// balanced transfer has no fixed shares: its sending CTAs claim FIFO-step chunks of the whole transfer from one
// counter (P2pBlock::src), each step's sizes[] word tells the receiving CTA which chunk it carries, and each
// sending CTA closes with an empty step (dev_work.h: kDevStepBalMark). Both sides decide it from agreed values
// alike: the transfer (on the ring's or a peer's connections) is cut over `parts` >= 2 channels whose connections
// are all GPU P2P (the host proxies of SHM and NET read sizes[] as byte counts), its shares are
// at least minShare bytes (BRAID_P2P_BALANCE_BYTES, rank 0's; 0: never) and run SIMPLE. The receiver takes chunks in
// any order, so how the sender deals them out is its own choice: its launch's first kP2pMaxBalanced balanced sends
// claim (DeviceState::p2pClaims holds that many counter pairs, each zeroed again by the last CTA that used it), and
// any past those deal chunk c + k * parts to the CTA of channel c, as fixed as shares but in the same format (a cap
// that depended on how many balanced transfers a launch holds would tell the two sides apart when they group
// differently).
constexpr int kP2pMaxBalanced = 64;
// A balanced transfer's chunk: the step its share would have had (p2pSimpleStepBytes), and at most
// kP2pBalancedChunkBytes where the launch pairs its ring channels (P2pCtaBudget::pair) or the transfer is cut over
// at least kP2pBalancedCapMinParts channels (so 8 steps put 2 MiB in flight a connection where 512 KiB steps, the
// 4 MiB default FIFO, put 4). Both sides derive it from agreed values (the connection's step, the transfer's size
// and channels, the budget) alike. On 2xH100, 256 KiB chunks beat 512 KiB ones where paired and from 16 channels
// up, and lost on 11-12; 128 KiB chunks lost everywhere measured (docs/TUNING.md, "Balanced transfers").
constexpr size_t kP2pBalancedChunkBytes = size_t(256) << 10;
constexpr int kP2pBalancedCapMinParts = 16;
// The launch's P2pLaunchArgs::balCapParts: balanced transfers over at least this many channels take capped chunks.
inline uint32_t p2pBalancedCapParts(bool pairedBudget) {
  return pairedBudget ? 0u : static_cast<uint32_t>(kP2pBalancedCapMinParts);
}
BRAID_HD inline size_t p2pBalancedChunkBytes(size_t connStep, size_t shareBytes, uint32_t pieces, int parts,
                                             uint32_t capParts) {
  const size_t step = p2pSimpleStepBytes(connStep, shareBytes, pieces);
  const bool capped = static_cast<uint32_t>(parts) >= capParts;
  return capped && step > kP2pBalancedChunkBytes ? kP2pBalancedChunkBytes : step;
}
// Below 2 TiB: chunks are at least 4 KiB, so their indices fit sizes[]' 29 bits (dev_work.h: kDevBalIndexMask).
inline bool p2pBalanced(size_t bytes, int parts, size_t minShare) {
  return parts >= 2 && minShare > 0 && p2pShareBytes(bytes, parts) >= minShare && bytes < (size_t(1) << 41);
}

struct P2pXfer {
  char* buf;
  size_t bytes;
  const char* src = nullptr;  // local copies: the source
  bool oneWay = false;        // a gather's or scatter's: its peer's end is one too (oneWayChannels)
  int maxChannels = 0;        // at most so many channels (0: no cap): a collective's transfer at n > 2, both ends
                              // know it (p2pPeerChannels)
};

// The transfers of one connection direction, in posting order.
struct P2pPlanConn {
  bool ring = false;         // the ring neighbour: the ring's connections; otherwise the peer's p2p connections
  bool isSend = false;
  int channels = 1;  // a p2p peer's connections (ring: the launch's nChannels, or ringChannels' count)
  // Ring connections where the communicator runs several rings: the ring channels whose ring has this peer as
  // neighbour (ring_order.h: ringChannelsWith, the same list on both ends), share v running on ringChannels[v];
  // a transfer is then cut over at most that many. Empty: every ring channel, share v on channel v.
  std::vector<int> ringChannels;
  std::vector<uint8_t> ll;   // per channel (share index): whether the connection has LL slots
  std::vector<uint8_t> bal;  // per channel (share index): whether the connection is GPU P2P (balanced, p2pBalanced)
  std::vector<P2pXfer> xs;
};
// The ring channel share v of a ring connection's transfers runs on (P2pPlanBlock::channel is v).
inline int p2pRingChannelOf(const P2pPlanConn& conn, int v) {
  return conn.ringChannels.empty() ? v : conn.ringChannels[static_cast<size_t>(v)];
}

struct P2pPlanInput {
  std::vector<P2pPlanConn> conns;
  std::vector<P2pXfer> copies;  // local copies (a rank's own share, sends to itself)
  int nChannels = 1;            // the ring's channels
  int llChannels = 0;           // ... for transfers whose shares on nChannels would run LL (0: nChannels)
  int oneWayChannels = 0;       // ... for P2pXfer::oneWay transfers (0: nChannels)
  bool pairRing = false;        // a ring channel's send and receive blocks share one CTA where none is LL
  int pairWithin = 0;           // else: so many of those channels as bring the ring's CTAs within this (0: none)
  size_t llThreshold = 0;       // shares of at most this many bytes run LL where the connection has LL slots
  size_t balanceMinShare = 0;   // ring transfers with shares of at least this many bytes run balanced (0: none)
  size_t channelBytes = 65536;  // BRAID_P2P_CHANNEL_BYTES: the unit of p2pChannelsForBytes
  int maxCtas = 192;            // CTAs of the launch
  int maxBlocks = 192;          // blocks (CTAs x their transfers) of the launch (the executor: kMaxP2pTableBlocks)
  int maxCopyCtas = 32;         // local copies: at most this many CTAs (BRAID_P2P_COPY_CTAS; a local choice,
                                // the peer never sees how a rank copies its own share)
};

// A CTA budget's cut on a plan's input (the executor's, and the tests').
inline void applyBudget(const P2pCtaBudget& b, P2pPlanInput* in) {
  in->nChannels = b.nChannels;
  in->llChannels = b.llChannels;
  in->oneWayChannels = b.oneWayChannels;
  in->pairRing = b.pair;
  in->pairWithin = b.pairWithin;
  in->maxCopyCtas = b.maxCopyCtas;
}

struct P2pPlanBlock {
  int conn;      // index into P2pPlanInput::conns; -1: a local copy
  int channel;   // the share's channel: the peer's p2p connection, or for the ring p2pRingChannelOf it (0 for copies)
  char* buf;
  const char* src;
  size_t bytes;
  bool isSend;
  bool ll;
  int balParts = 0;  // > 0: a balanced transfer over so many channels (buf, bytes: the whole transfer)
  int balSlot = -1;  // ... a send's claim pair (0 .. kP2pMaxBalanced - 1, in the launch's order); -1: none
};

// One CTA runs blocks[first] .. blocks[first + count - 1] of its launch, in order; a paired CTA (split > 0)
// runs the first `split` (the ring send connection's, on the lower half of its threads) and the rest (the
// ring receive connection's, on the upper half) at once.
struct P2pPlanCta {
  bool copy = false;
  int first = 0;
  int count = 0;
  int split = 0;
};

// A CTA's blocks, for range-for.
struct P2pPlanBlockRange {
  const P2pPlanBlock* b;
  const P2pPlanBlock* e;
  const P2pPlanBlock* begin() const { return b; }
  const P2pPlanBlock* end() const { return e; }
  const P2pPlanBlock& front() const { return *b; }
  size_t size() const { return static_cast<size_t>(e - b); }
  bool empty() const { return b == e; }
};

// Flat, so a launch reused across calls plans without allocating: an 8-byte send/recv planned into fresh
// nested vectors cost ~0.8 us of host time, 2/3 of it malloc and free (callgrind), on every small call.
struct P2pPlanLaunch {
  std::vector<P2pPlanCta> ctas;    // copy CTAs first (they never wait), then channel by channel
  std::vector<P2pPlanBlock> all;   // every CTA's blocks, CTA after CTA
  int blocks = 0;                  // all.size()
  std::vector<int> nch;            // planP2p's scratch: each transfer's channels, connection after connection
  std::vector<int> connMaxNch;     // planP2p's scratch: each connection's most channels
  std::vector<int> connFirstXfer;  // planP2p's scratch: each connection's first transfer in nch
  std::vector<uint8_t> paired;     // planP2p's scratch: channels whose ring send and receive share a CTA
  std::vector<int> bal;            // planP2p's scratch: each transfer's claim slot, -1 (balanced, none), -2 (not)
  P2pPlanBlockRange blocksOf(const P2pPlanCta& c) const {
    return {all.data() + c.first, all.data() + c.first + c.count};
  }
};

// Cuts `in` into one launch; false (with *why) when it exceeds maxCtas or maxBlocks. `out` is overwritten
// (its vectors keep their capacity).
bool planP2p(const P2pPlanInput& in, P2pPlanLaunch* out, std::string* why);

}  // namespace braid
