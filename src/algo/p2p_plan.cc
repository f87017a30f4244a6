// p2p_plan: the CTA and launch cut of a GPU communicator's point-to-point batch (see p2p_plan.h).
#include "algo/p2p_plan.h"

#include <algorithm>
#include <cstdio>

#include "algo/ring_split.h"

namespace braid {
namespace {

// Local copies: a CTA copies ~46 GB/s (one SM), so up to P2pPlanInput::maxCopyCtas CTAs of at least
// kP2pCopyCtaBytes each (p2p_plan.h), every CTA a 64-byte aligned share of every copy.

// Share `part` of `parts` of a transfer: contiguous, 64-byte aligned starts.
P2pPlanBlock shareOf(const P2pXfer& x, int part, int parts) {
  const size_t per = p2pShareBytes(x.bytes, parts);
  const size_t off = std::min(per * static_cast<size_t>(part), x.bytes);
  P2pPlanBlock b{};
  b.buf = x.buf + off;
  b.src = x.src ? x.src + off : nullptr;
  b.bytes = std::min(per, x.bytes - off);
  return b;
}

// Whether a share of `bytes` on connection `conn`'s channel c runs LL: small enough, and LL slots there.
bool shareRunsLl(const P2pPlanConn& conn, int c, size_t bytes, size_t llThreshold) {
  const bool llConn = static_cast<size_t>(c) < conn.ll.size() && conn.ll[c] != 0;
  return llConn && bytes > 0 && bytes <= llThreshold;
}

bool fail(std::string* why, const char* what, int have, int limit) {
  if (why) {
    char msg[256];
    std::snprintf(msg, sizeof(msg), "it needs %d %s, more than one launch takes (%d)", have, what, limit);
    *why = msg;
  }
  return false;
}

}  // namespace

bool planP2p(const P2pPlanInput& in, P2pPlanLaunch* out, std::string* why) {
  out->ctas.clear();
  out->all.clear();
  out->blocks = 0;
  // Channel by channel (channel c's send and receive side by side; the other peers' connections with
  // channel 0): when fewer CTAs fit on the GPU than the launch has, the resident ones then hold both ends of
  // their channels and finish, and any 2 resident CTAs make progress. Connection by connection (every send
  // channel, then every receive one) deadlocks once fewer than ~65 of 128 are resident, every resident CTA
  // a send waiting for room (a GPU of 64 SMs or fewer, or one shared with other kernels; NCCL avoids it by
  // running both directions of a channel in one CTA). The progress model in p2p_plan_test checks this.
  // Each transfer's channel count, and each connection's largest, once (a group of many transfers would
  // otherwise recompute them for every channel).
  std::vector<int>& nch = out->nch;
  std::vector<int>& connMax = out->connMaxNch;
  std::vector<int>& connT0 = out->connFirstXfer;
  nch.clear();
  connMax.assign(in.conns.size(), 0);
  connT0.assign(in.conns.size(), 0);
  int nCtas = 0, nBlocks = 0, maxNch = 0;
  // The ring connections, where one per direction: a ring channel's send and receive may share a CTA. With several
  // rings several peers may be ring neighbours each way (-2): no pairing then.
  int ringSend = -1, ringRecv = -1;
  for (size_t ci = 0; ci < in.conns.size(); ++ci) {
    const P2pPlanConn& conn = in.conns[ci];
    connT0[ci] = static_cast<int>(nch.size());
    if (conn.xs.empty()) continue;
    int m = 1;
    const int connCap = conn.ring ? static_cast<int>(conn.ringChannels.size()) : std::max(1, conn.channels);
    for (const P2pXfer& x : conn.xs) {
      const int over = p2pCutChannels(x.oneWay, in.nChannels, in.oneWayChannels);
      int cap = connCap;
      if (x.maxChannels > 0) cap = cap > 0 ? std::min(cap, x.maxChannels) : x.maxChannels;
      const int k = p2pTransferChannels(x.bytes, over, cap, in.llChannels, in.channelBytes, in.llThreshold);
      nch.push_back(k);
      m = std::max(m, k);
      nBlocks += k;
    }
    connMax[ci] = m;
    nCtas += m;
    maxNch = std::max(maxNch, m);
    if (conn.ring) {
      int& r = conn.isSend ? ringSend : ringRecv;
      r = r == -1 ? static_cast<int>(ci) : -2;
    }
  }
  // Pairs share a CTA on one ring channel's two directions: only where both run on the same ring channels.
  if (ringSend >= 0 && ringRecv >= 0 && in.conns[ringSend].ringChannels != in.conns[ringRecv].ringChannels)
    ringSend = ringRecv = -2;
  // Balanced transfers (p2pBalanced): a claim slot for each of the launch's first kP2pMaxBalanced balanced sends,
  // -1 for the rest and for receives (a local choice: the receiver takes chunks in any order), -2 for transfers not
  // balanced.
  std::vector<int>& bal = out->bal;
  bal.assign(nch.size(), -2);
  if (in.balanceMinShare > 0) {
    int slot = 0;
    for (size_t ci = 0; ci < in.conns.size(); ++ci) {
      const P2pPlanConn& conn = in.conns[ci];
      for (size_t t = 0; t < conn.xs.size(); ++t) {
        const int parts = nch[connT0[ci] + t];
        if (!p2pBalanced(conn.xs[t].bytes, parts, in.balanceMinShare)) continue;
        bool ok = static_cast<int>(conn.bal.size()) >= parts;
        for (int c = 0; ok && c < parts; ++c)
          ok = conn.bal[c] != 0 && !shareRunsLl(conn, c, shareOf(conn.xs[t], c, parts).bytes, in.llThreshold);
        if (ok) bal[connT0[ci] + t] = conn.isSend && slot < kP2pMaxBalanced ? slot++ : -1;
      }
    }
  }
  // Paired channels: both ring connections have blocks there and none of them runs LL (the LL primitives
  // take the whole CTA); each saves a CTA. With pairWithin instead of pairRing, only the lowest channels that
  // bring the ring's CTAs within it (a gather's whole-bound cut beside transfers the other way).
  std::vector<uint8_t>& paired = out->paired;
  paired.assign(static_cast<size_t>(maxNch), 0);
  int excess = 0;  // with pairWithin: the ring's CTAs past it
  if (!in.pairRing && in.pairWithin > 0 && ringSend >= 0 && ringRecv >= 0)
    excess = connMax[ringSend] + connMax[ringRecv] - in.pairWithin;
  if ((in.pairRing || excess > 0) && ringSend >= 0 && ringRecv >= 0) {
    auto simpleOn = [&](int ci, int c) {
      const P2pPlanConn& conn = in.conns[ci];
      for (size_t t = 0; t < conn.xs.size(); ++t) {
        const int parts = nch[connT0[ci] + t];
        if (parts > c && shareRunsLl(conn, c, shareOf(conn.xs[t], c, parts).bytes, in.llThreshold)) return false;
      }
      return true;
    };
    for (int c = 0; c < std::min(connMax[ringSend], connMax[ringRecv]) && (in.pairRing || excess > 0); ++c)
      if (simpleOn(ringSend, c) && simpleOn(ringRecv, c)) paired[c] = 1, --nCtas, --excess;
  }
  if (nCtas > in.maxCtas) return fail(why, "CTAs", nCtas, in.maxCtas);
  if (nBlocks > in.maxBlocks) return fail(why, "blocks (channels x transfers)", nBlocks, in.maxBlocks);

  // Local copies: CTAs ahead of the transfers, as many as the launch has room for.
  int nCopies = 0;
  size_t maxCopy = 0;
  auto copied = [](const P2pXfer& x) { return x.bytes != 0 && x.buf != x.src; };
  for (const P2pXfer& x : in.copies)
    if (copied(x)) ++nCopies, maxCopy = std::max(maxCopy, x.bytes);
  if (nCopies > 0) {
    const int want = p2pCopyCtas(maxCopy, in.maxCopyCtas);
    const int room = std::min(in.maxCtas - nCtas, (in.maxBlocks - nBlocks) / nCopies);
    const int k = std::min(want, room);
    if (in.maxCtas - nCtas < 1) return fail(why, "CTAs with its local copies", nCtas + 1, in.maxCtas);
    if (k < 1) return fail(why, "blocks with its local copies", nBlocks + nCopies, in.maxBlocks);
    for (int c = 0; c < k; ++c) {
      out->ctas.push_back(P2pPlanCta{true, static_cast<int>(out->all.size()), nCopies, 0});
      for (const P2pXfer& x : in.copies) {
        if (!copied(x)) continue;
        P2pPlanBlock b = shareOf(x, c, k);
        b.conn = -1;
        b.channel = 0;
        b.isSend = false;
        b.ll = false;
        out->all.push_back(b);
      }
    }
  }

  // Connection ci's blocks on channel c, appended to `cta`.
  auto addBlocks = [&](size_t ci, int c, P2pPlanCta* cta) {
    const P2pPlanConn& conn = in.conns[ci];
    for (size_t t = 0; t < conn.xs.size(); ++t) {
      const int parts = nch[connT0[ci] + t];
      if (parts <= c) continue;
      const int slot = bal[connT0[ci] + t];
      P2pPlanBlock b = slot >= -1 ? shareOf(conn.xs[t], 0, 1) : shareOf(conn.xs[t], c, parts);
      b.conn = static_cast<int>(ci);
      b.channel = c;
      b.isSend = conn.isSend;
      b.ll = slot < -1 && shareRunsLl(conn, c, b.bytes, in.llThreshold);
      if (slot >= -1) b.balParts = parts, b.balSlot = slot;
      out->all.push_back(b);
      ++cta->count;
    }
  };
  for (int c = 0; c < maxNch; ++c) {
    for (size_t ci = 0; ci < in.conns.size(); ++ci) {
      const P2pPlanConn& conn = in.conns[ci];
      if (conn.xs.empty() || connMax[ci] <= c) continue;
      if (paired[c] && static_cast<int>(ci) == ringRecv) continue;  // in the ring send's CTA
      P2pPlanCta cta{false, static_cast<int>(out->all.size()), 0, 0};
      addBlocks(ci, c, &cta);
      if (paired[c] && static_cast<int>(ci) == ringSend) {
        cta.split = cta.count;
        addBlocks(static_cast<size_t>(ringRecv), c, &cta);
      }
      out->ctas.push_back(cta);
    }
  }
  out->blocks = static_cast<int>(out->all.size());
  return true;
}

}  // namespace braid
