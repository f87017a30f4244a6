// p2p_plan: how a GPU communicator's batch of point-to-point transfers (send/recv, and the transfers of
// all-to-all, gather and scatter) is cut into the CTAs of one kernel launch. A pure function of the transfer
// lists, kept apart from the CUDA executor so its contract is unit-tested on any machine: both sides of a
// connection cut every transfer alike whatever else either side grouped with it. A transfer on the ring
// neighbour's connections runs over p2pChannelsForBytes(its own size, channelBytes) channels, share c on
// channel c, and each share's protocol (LL or SIMPLE) and SIMPLE FIFO steps (p2pSimpleStepBytes) follow from the
// share's size alone.
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
// crosses the link. Each step costs ~1.5 us of handshake (2xH200, docs/gpu/2026-11-22zb: 32 KB send/recv
// 10.7 / 11.6 / 14.1 us at 1 / 2 / 4 pieces), which pieces of 128 KiB and up pay back (16-64 MB send/recv,
// shares of 256 KiB-1 MiB: 4-9% faster at 4 pieces); a share under two pieces keeps one step.
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
// 32 channels, 16u + 1 on 17. The fine cut makes more blocks (a 64 KiB transfer 8, was 1; 1 MiB 32, was 8): a
// group past kMaxP2pBlocks of them runs from a table in device memory, at the cost of its fill launches.
// Both sides derive it from the transfer's size and rank 0's channelBytes, so they cut alike. Why:
// - up to 2u (2xH200, docs/gpu/2026-11-25f, two rounds): 8 KiB shares run LL on several CTA pairs: send/recv
//   32 KB 6.6 us against 9.3 on one 32 KiB share, 64 KB 6.7 against 10.2, all-to-all alike;
// - up to 16u (same call): 32 KiB shares: send/recv 256 KB-1 MB 9.7-11.4 us against 10.3-13.6 on u shares;
// - 16u-32u (2xH100, docs/gpu/2026-12-02c, d, three rounds each): one channel per u (17-32 of 64 KiB) instead
//   of shares of 2u (9-16 of 128 KiB): send/recv 1.25 / 1.5 / 1.75 / 2 MB 12.95 / 13.67 / 14.46 / 15.40 us
//   against 14.86 / 15.43 / 16.08 / 16.77, all-to-all 2.5-4 MB (1.25-2 MiB a peer) 7-9% faster, gather and
//   scatter within noise. (On 2xH200, docs/gpu/2026-11-23b, c, f, before programmatic launches, 64 KiB
//   shares had spread over 12-21 us where 128 KiB ones ran 14.4 and 17.4.)
// - above (2xH200, docs/gpu/2026-11-23b, c, f): 64 channels of 64-128 KiB shares (send/recv 4 MB, all-to-all
//   8-16 MB) ran 21-24 us in some processes and 33-36 in others, 32 channels of 128-256 KiB 23-24 every time;
//   from 16 MB on, 64 channels of 256 KiB beat 32 (send/recv 64 MB 200 against 212 us).
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
// agreed at init) bounds p2p launches' ring channels. NCCL's numbers below are NCCL on its 32 p2p CTAs: its p2p kernels
// heed NCCL_MAX_P2P_NCHANNELS only (docs/gpu/2026-12-10c), so they compare Braid on the bound with NCCL unbound. One SM
// stores ~40 GB/s over NVLink whatever its threads (docs/gpu/2026-12-04d, tools/link_probe.cu), so under a small bound
// the CTAs that send set the rate. There (kP2pPairMaxCtas or fewer) a ring channel's send and receive blocks share one
// CTA, on two warp groups (P2pPlanInput::pairRing), and the ring is cut over the whole bound: both directions then send
// from every CTA, and a one-way transfer (gather, scatter, a lone send) from the bound's worth of SMs. Transfers whose
// shares on the whole bound would run LL (small ones) are cut over half of it instead (llChannels): LL blocks run on
// whole CTAs, a send and a receive CTA per channel (so a group mixing those with large transfers takes up to llChannels
// CTAs past the bound; tools/var_llgroups.patch put LL on the warp groups too and lost 1.5 us at 32 KB,
// docs/gpu/2026-12-05a). Every rank must be able to pair (TuningFacts::p2pPair: NCCL_NTHREADS a multiple of 64 from
// 128), else every rank keeps half the bound. 2xH200, docs/gpu/2026-12-04e, 256 MB, NCCL / half / paired, us: send/recv
// under 8 1619.8 / 1752.5 / 1597.9, under 16 885.9 / 910.8 / 871.3, under 24 884.5 / 846.7 / 957.7 (paired loses);
// gather under 8 748.0 / 841.1 / 649.9; scatter under 16 538.0 / 438.3 / 370.6. (Before the half cut, 7/16: send/recv
// under 8 2274, gather 1157, docs/gpu/2026-12-04a.)
// Pairing runs up to a bound of 20 (2xH100, docs/gpu/2026-12-08b-f, balanced transfers, us at 128 / 512 MB, NCCL /
// half / paired): send/recv under 17 ~472 / ~1512, 522-526 / 2016-2025 (0.75x), 443-480 / 1661-1717; under 20 ~472 /
// ~1512, 435-442 / 1657-1664, 411-490 / 1511-1595; all-to-all under 17 ~270 / ~970, 274 / 1038-1041, 240-241 /
// 858-884; under 20 ~270 / ~970, 241-243 / 881-887, 223-225 / 800-813. The price, under 20: paired send/recv of 8-64 MB
// runs up to 7% behind half (64 MB 251.1 against 234.9, NCCL 258.2), and 128 MB alone lands 8% behind in some
// layouts (-b 128M: 472-476 against 435-438, NCCL ~472); under 17 paired wins at every size from 8 MB. Under 22 and 24
// half wins (send/recv 512 MB 1544-1554 and 1498-1501 against paired 1580-1586 and 1577), and 12 ring channels paired
// only as far as a bound of 17 or 20 needs (tools/var_link12.patch) lost to both: the SMs in play, not the sending
// CTAs, set the rate there.
// Under larger bounds, half the bound's SMs already fill the link and sharing an SM between the directions only slows
// each: every transfer is cut over half the bound, a CTA per direction, except a gather's or a scatter's
// (P2pXfer::oneWay: both ends know the pair runs one way), cut over the whole bound (oneWayChannels) at any size. Ring
// channels then pair only as far as a group mixing those with transfers the other way needs to keep within the bound
// (P2pPlanInput::pairWithin). Before balanced transfers (p2pBalanced) the whole cut lost under 24 and below at large
// sizes, its slowest CTAs setting the time (so it took 25 CTAs, or 8 MiB at most below that; tools/gpu_next101-105.sh
// and their docs/gpu folders hold that data); with them it wins at every bound from 17 measured. 2xH200,
// docs/gpu/2026-12-07d, one round, gather / scatter, NCCL / half (balanced) / whole (balanced), us, 128 / 256 / 512 MB:
// under 20, 228.7 / 216.7 / 195.3, 384.2 / 412.3 / 375.3, 748.2 / 805.6 / 733.3 and 204.4 / 216.3 / 191.4, 389.7 /
// 414.8 / 373.2, 752.6 / 814.4 / 731.8; under 24, 221.5 / 199.8 / 223.5, 383.3 / 379.4 / 375.1, 743.9 / 739.9 / 736.0
// and 203.4 / 202.6 / 193.7, 387.4 / 381.6 / 375.8, 759.4 / 741.7 / 733.8. Two more rounds under 24 at 32-256 MB
// (docs/gpu/2026-12-07e): the whole cut ahead or level but for gathers of 32 MB (65.27 and 61.00 against half's 61.44
// and 63.48, NCCL 59.5) and one 128 MB gather (209.0 against 198.8). Under 17, 128-512 MB, gathers and scatters at
// 1.01-1.05x NCCL. Under 28 and 32 the whole cut already won before (docs/gpu/2026-12-05c, 2026-12-06d, e).
// The cut depends only on agreed values (the bound, the LL threshold, the transfer's size and whether it is a gather's
// or scatter's; never on whether this rank pairs, has copies or other transfers), so both sides still cut alike. Local
// copies (all-to-all's own share, a gather/scatter root's) may take up to half the bound more, for as long as they
// copy: with an eighth, a 2-rank all-to-all of 64 MB under a bound of 24 took 247 us, copy-bound, against NCCL's 139
// (docs/gpu/2026-11-27g). Each connection to another peer adds one CTA per direction.
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

// Balanced transfers. A ring transfer's CTAs move data at rates that differ by up to ~20% from one CTA to the next,
// and differently from one launch to the next (2xH200, docs/gpu/2026-12-07b, tools/var_p2p_timeline.patch: a 512 MB
// gather on 12 CTAs, 21.3 MiB each, 30-36.5 GB/s per sending CTA, the last ending 130-140 us after the first; on 32
// CTAs 11-16 GB/s, 230 us apart), so with a fixed share each the fast ones idle while the slow ones finish, and on
// few CTAs the link idles with them. A balanced transfer has no fixed shares: its sending CTAs claim FIFO-step
// chunks of the whole transfer from one counter (P2pBlock::src), each step's sizes[] word tells the receiving CTA
// which chunk it carries, and each sending CTA closes with an empty step (dev_work.h: kDevStepBalMark). Both sides
// decide it from agreed values alike: the transfer is on the ring's connections, cut over `parts` >= 2 channels
// whose connections are all GPU P2P (the host proxies of SHM and NET read sizes[] as byte counts), its shares are
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
// and channels, the budget) alike. Measured on 2xH100, us, 512 KiB chunks / 256 KiB / NCCL:
// - paired (docs/gpu/2026-12-09a, two rounds): send/recv under NCCL_MAX_CTAS=20 128 MB 483-486 / 410-440 / 468-469,
//   512 MB 1585-1587 / 1558 / 1512-1515, 32 MB 128-142 / 124-125; under 17 32 MB 136 / 125, 128 MB 465-470 /
//   453-455, 512 MB level (1662-1664 / 1667-1672); all-to-all 1-6% faster;
// - 64 channels unbounded (same call): send/recv 128 MB 395 / 385-387, 512 MB 1484-1485 / 1474-1475;
// - unpaired, by the transfer's channels (docs/gpu/2026-12-09c, three rounds; …d, two, tools/var_capparts.patch):
//   send/recv 512 MB on 11 (under 22) 1542-1544 / 1648-1650 / 1516, 128 MB 412-415 / 428-429; on 12 (under 24)
//   512 MB 1496-1501 / 1528-1537 / 1506-1513, 128 MB level; on 16 (under 32) 128 MB 394-398 / 385-386, 512 MB
//   1482 / 1471-1473; on 24 (under 48) 390-397 / 386-388, 1480-1482 / 1472-1473; gather (its whole bound) on 24
//   (under 24) 128 MB 220-224 / 196-197 / 228, 512 MB 738-741 / 733; on 32 and 64 level or up to 4% faster. So
//   the cap starts at 16 channels (13-15, bounds 26-30, unmeasured).
// 128 KiB chunks ran 512 MB send/recv 22% slower under 17 (2028), as did a 1 MiB FIFO (docs/gpu/2026-12-08h); 16
// FIFO steps of 256 KiB (tools/var_steps16.patch, every P2P connection) gained less and left collectives level.
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
};

// The transfers of one connection direction, in posting order.
struct P2pPlanConn {
  bool ring = false;        // the ring neighbour: split over channels; otherwise one p2p connection
  bool isSend = false;
  std::vector<uint8_t> ll;  // per channel (ring) or [0]: whether the connection has LL slots
  std::vector<uint8_t> bal;  // per channel (ring): whether the connection is GPU P2P (balanced transfers, p2pBalanced)
  std::vector<P2pXfer> xs;
};

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
  int channel;   // the ring channel (0 for p2p connections and copies)
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
