// p2p_plan: the CTA and launch cut of a GPU communicator's point-to-point batch (see p2p_plan.h).
#include "collectives/p2p_plan.h"

#include <algorithm>
#include <cstdio>

#include "collectives/ring_split.h"

namespace braid {
namespace {

// Local copies: a CTA copies ~46 GB/s (one SM), so up to P2pPlanInput::maxCopyCtas CTAs of at least
// kCopyCtaBytes each, every CTA a 64-byte aligned share of every copy (measured on 2xH200: a 4 MiB share on one
// CTA took 90 us).
constexpr size_t kCopyCtaBytes = size_t(256) << 10;

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
  nch.clear();
  connMax.assign(in.conns.size(), 0);
  int nCtas = 0, nBlocks = 0, maxNch = 0;
  for (size_t ci = 0; ci < in.conns.size(); ++ci) {
    const P2pPlanConn& conn = in.conns[ci];
    if (conn.xs.empty()) continue;
    int m = 1;
    for (const P2pXfer& x : conn.xs) {
      const int k = conn.ring ? p2pChannelsForBytes(x.bytes, in.nChannels, in.channelBytes) : 1;
      nch.push_back(k);
      m = std::max(m, k);
      nBlocks += k;
    }
    connMax[ci] = m;
    nCtas += m;
    maxNch = std::max(maxNch, m);
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
    const int want = static_cast<int>(std::min<size_t>(std::max(1, in.maxCopyCtas), divUp(maxCopy, kCopyCtaBytes)));
    const int room = std::min(in.maxCtas - nCtas, (in.maxBlocks - nBlocks) / nCopies);
    const int k = std::min(want, room);
    if (in.maxCtas - nCtas < 1) return fail(why, "CTAs with its local copies", nCtas + 1, in.maxCtas);
    if (k < 1) return fail(why, "blocks with its local copies", nBlocks + nCopies, in.maxBlocks);
    for (int c = 0; c < k; ++c) {
      out->ctas.push_back(P2pPlanCta{true, static_cast<int>(out->all.size()), nCopies});
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

  for (int c = 0; c < maxNch; ++c) {
    size_t t0 = 0;  // the connection's first transfer in nch
    for (size_t ci = 0; ci < in.conns.size(); t0 += in.conns[ci].xs.size(), ++ci) {
      const P2pPlanConn& conn = in.conns[ci];
      if (conn.xs.empty() || connMax[ci] <= c) continue;
      const bool ll = static_cast<size_t>(c) < conn.ll.size() && conn.ll[c] != 0;
      P2pPlanCta cta{false, static_cast<int>(out->all.size()), 0};
      for (size_t t = 0; t < conn.xs.size(); ++t) {
        const int parts = nch[t0 + t];
        if (parts <= c) continue;
        P2pPlanBlock b = shareOf(conn.xs[t], c, parts);
        b.conn = static_cast<int>(ci);
        b.channel = c;
        b.isSend = conn.isSend;
        b.ll = ll && b.bytes > 0 && b.bytes <= in.llThreshold;
        out->all.push_back(b);
        ++cta.count;
      }
      out->ctas.push_back(cta);
    }
  }
  out->blocks = static_cast<int>(out->all.size());
  return true;
}

}  // namespace braid
