// p2p_plan: the CTA and launch cut of a GPU communicator's point-to-point batch (see p2p_plan.h).
#include "collectives/p2p_plan.h"

#include <algorithm>
#include <cstdio>

#include "collectives/ring_split.h"

namespace braid {
namespace {

// Local copies: a CTA copies ~46 GB/s (one SM), so up to kCopyCtas CTAs of at least kCopyCtaBytes each, every
// CTA a 64-byte aligned share of every copy (measured on 2xH200: a 4 MiB share on one CTA took 90 us).
constexpr int kCopyCtas = 32;
constexpr size_t kCopyCtaBytes = size_t(256) << 10;

// Share `part` of `parts` of a transfer: contiguous, 64-byte aligned starts.
P2pPlanBlock shareOf(const P2pXfer& x, int part, int parts) {
  const size_t per = parts <= 1 ? x.bytes : roundUp(divUp(x.bytes, static_cast<size_t>(parts)), 64);
  const size_t off = std::min(per * static_cast<size_t>(part), x.bytes);
  P2pPlanBlock b{};
  b.buf = x.buf + off;
  b.src = x.src ? x.src + off : nullptr;
  b.bytes = std::min(per, x.bytes - off);
  return b;
}

bool fail(std::string* why, const char* fmt, size_t a, int b) {
  if (why) {
    char msg[256];
    std::snprintf(msg, sizeof(msg), fmt, a, b);
    *why = msg;
  }
  return false;
}

}  // namespace

bool planP2p(const P2pPlanInput& in, std::vector<P2pPlanLaunch>* out, std::string* why) {
  out->clear();
  // Channel groups: group c holds every CTA of channel c; group 0 also the other peers' connections.
  std::vector<std::vector<P2pPlanCta>> groups(1);
  for (size_t ci = 0; ci < in.conns.size(); ++ci) {
    const P2pPlanConn& conn = in.conns[ci];
    if (conn.xs.empty()) continue;
    auto llAt = [&](int ch) { return static_cast<size_t>(ch) < conn.ll.size() && conn.ll[ch] != 0; };
    if (!conn.ring) {
      P2pPlanCta cta;
      for (const P2pXfer& x : conn.xs) {
        P2pPlanBlock b = shareOf(x, 0, 1);
        b.conn = static_cast<int>(ci);
        b.channel = 0;
        b.isSend = conn.isSend;
        b.ll = llAt(0) && b.bytes > 0 && b.bytes <= in.llThreshold;
        cta.blocks.push_back(b);
      }
      groups[0].push_back(std::move(cta));
      continue;
    }
    std::vector<int> nch(conn.xs.size());
    int maxNch = 1;
    for (size_t t = 0; t < conn.xs.size(); ++t) {
      nch[t] = channelsForBytes(conn.xs[t].bytes, in.nChannels);
      maxNch = std::max(maxNch, nch[t]);
    }
    if (static_cast<int>(groups.size()) < maxNch) groups.resize(maxNch);
    for (int c = 0; c < maxNch; ++c) {
      P2pPlanCta cta;
      for (size_t t = 0; t < conn.xs.size(); ++t) {
        if (nch[t] <= c) continue;
        P2pPlanBlock b = shareOf(conn.xs[t], c, nch[t]);
        b.conn = static_cast<int>(ci);
        b.channel = c;
        b.isSend = conn.isSend;
        b.ll = llAt(c) && b.bytes > 0 && b.bytes <= in.llThreshold;
        cta.blocks.push_back(b);
      }
      groups[c].push_back(std::move(cta));
    }
  }

  // Whole groups, in channel order, into as few launches as fit.
  for (size_t g = 0; g < groups.size(); ++g) {
    int ctas = static_cast<int>(groups[g].size()), blocks = 0;
    for (const P2pPlanCta& c : groups[g]) blocks += static_cast<int>(c.blocks.size());
    if (ctas == 0) continue;
    if (ctas > in.maxCtas || blocks > in.maxBlocks)
      return fail(why, "%zu transfers share one channel, more than one launch takes (%d)", static_cast<size_t>(blocks),
                  in.maxBlocks);
    if (out->empty() || static_cast<int>(out->back().ctas.size()) + ctas > in.maxCtas ||
        out->back().blocks + blocks > in.maxBlocks)
      out->emplace_back();
    P2pPlanLaunch& l = out->back();
    for (P2pPlanCta& c : groups[g]) l.ctas.push_back(std::move(c));
    l.blocks += blocks;
  }

  // Local copies: CTAs of the first launch where it has room, else a launch of their own ahead of the rest
  // (copies never wait, so they may run in any launch).
  std::vector<const P2pXfer*> copies;
  size_t maxCopy = 0;
  for (const P2pXfer& x : in.copies) {
    if (x.bytes == 0 || x.buf == x.src) continue;
    copies.push_back(&x);
    maxCopy = std::max(maxCopy, x.bytes);
  }
  if (copies.empty()) return true;
  const int nCopies = static_cast<int>(copies.size());
  if (nCopies > in.maxBlocks)
    return fail(why, "%zu local copies, more than one launch takes (%d)", copies.size(), in.maxBlocks);
  const int want = static_cast<int>(std::min<size_t>(kCopyCtas, divUp(maxCopy, kCopyCtaBytes)));
  auto roomIn = [&](const P2pPlanLaunch& l) {
    return std::min(in.maxCtas - static_cast<int>(l.ctas.size()), (in.maxBlocks - l.blocks) / nCopies);
  };
  if (out->empty() || roomIn(out->front()) < 1) out->insert(out->begin(), P2pPlanLaunch());
  P2pPlanLaunch& first = out->front();
  const int k = std::min(want, roomIn(first));
  std::vector<P2pPlanCta> copyCtas(k);
  for (int c = 0; c < k; ++c) {
    copyCtas[c].copy = true;
    for (const P2pXfer* x : copies) {
      P2pPlanBlock b = shareOf(*x, c, k);
      b.conn = -1;
      b.channel = 0;
      b.isSend = false;
      b.ll = false;
      copyCtas[c].blocks.push_back(b);
    }
  }
  first.ctas.insert(first.ctas.begin(), std::make_move_iterator(copyCtas.begin()), std::make_move_iterator(copyCtas.end()));
  first.blocks += k * nCopies;
  return true;
}

}  // namespace braid
