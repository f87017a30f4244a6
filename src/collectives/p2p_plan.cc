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
  *out = P2pPlanLaunch();
  // Channel by channel (channel c's send and receive side by side; the other peers' connections with
  // channel 0): when fewer CTAs fit on the GPU than the launch has, the resident ones then hold both ends of
  // their channels and finish, and any 2 resident CTAs make progress. Connection by connection (every send
  // channel, then every receive one) deadlocks once fewer than ~65 of 128 are resident, every resident CTA
  // a send waiting for room (a GPU of 64 SMs or fewer, or one shared with other kernels; NCCL avoids it by
  // running both directions of a channel in one CTA). The progress model in p2p_plan_test checks this.
  std::vector<std::vector<P2pPlanCta>> groups(1);
  for (size_t ci = 0; ci < in.conns.size(); ++ci) {
    const P2pPlanConn& conn = in.conns[ci];
    if (conn.xs.empty()) continue;
    auto llAt = [&](int ch) { return static_cast<size_t>(ch) < conn.ll.size() && conn.ll[ch] != 0; };
    auto block = [&](const P2pXfer& x, int part, int parts, int ch) {
      P2pPlanBlock b = shareOf(x, part, parts);
      b.conn = static_cast<int>(ci);
      b.channel = ch;
      b.isSend = conn.isSend;
      b.ll = llAt(ch) && b.bytes > 0 && b.bytes <= in.llThreshold;
      return b;
    };
    std::vector<int> nch(conn.xs.size(), 1);
    int maxNch = 1;
    for (size_t t = 0; conn.ring && t < conn.xs.size(); ++t) {
      nch[t] = p2pChannelsForBytes(conn.xs[t].bytes, in.nChannels, in.channelBytes);
      maxNch = std::max(maxNch, nch[t]);
    }
    if (static_cast<int>(groups.size()) < maxNch) groups.resize(maxNch);
    for (int c = 0; c < maxNch; ++c) {
      P2pPlanCta cta;
      for (size_t t = 0; t < conn.xs.size(); ++t)
        if (nch[t] > c) cta.blocks.push_back(block(conn.xs[t], c, nch[t], c));
      groups[c].push_back(std::move(cta));
    }
  }
  for (auto& g : groups) {
    for (P2pPlanCta& c : g) {
      out->blocks += static_cast<int>(c.blocks.size());
      out->ctas.push_back(std::move(c));
    }
  }
  if (static_cast<int>(out->ctas.size()) > in.maxCtas) return fail(why, "CTAs", static_cast<int>(out->ctas.size()), in.maxCtas);
  if (out->blocks > in.maxBlocks) return fail(why, "blocks (channels x transfers)", out->blocks, in.maxBlocks);

  // Local copies: CTAs ahead of the transfers, as many as the launch has room for.
  std::vector<const P2pXfer*> copies;
  size_t maxCopy = 0;
  for (const P2pXfer& x : in.copies) {
    if (x.bytes == 0 || x.buf == x.src) continue;
    copies.push_back(&x);
    maxCopy = std::max(maxCopy, x.bytes);
  }
  if (copies.empty()) return true;
  const int nCopies = static_cast<int>(copies.size());
  const int want = static_cast<int>(std::min<size_t>(std::max(1, in.maxCopyCtas), divUp(maxCopy, kCopyCtaBytes)));
  const int room = std::min(in.maxCtas - static_cast<int>(out->ctas.size()), (in.maxBlocks - out->blocks) / nCopies);
  const int k = std::min(want, room);
  if (in.maxCtas - static_cast<int>(out->ctas.size()) < 1)
    return fail(why, "CTAs with its local copies", static_cast<int>(out->ctas.size()) + 1, in.maxCtas);
  if (k < 1) return fail(why, "blocks with its local copies", out->blocks + nCopies, in.maxBlocks);
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
  out->ctas.insert(out->ctas.begin(), std::make_move_iterator(copyCtas.begin()), std::make_move_iterator(copyCtas.end()));
  out->blocks += k * nCopies;
  return true;
}

}  // namespace braid
