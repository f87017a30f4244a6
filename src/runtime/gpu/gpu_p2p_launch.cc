// GpuExecutor::launchP2p (gpu_executor.h): a batch's point-to-point part (send/recv, all-to-all, gather, scatter)
// planned into one launch with a CTA per (connection, direction) and local copies, and the device state of each
// p2p connection it uses (p2pConn), uploaded on first use.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algo/p2p_plan.h"
#include "core/log.h"
#include "core/param.h"
#include "core/result.h"
#include "device/dev_kernels.h"
#include "runtime/comm.h"
#include "runtime/gpu/gpu_executor.h"
#include "runtime/gpu/p2p_table.h"
#include "runtime/ring_order.h"
#include "transport/transport.h"
#include "tuner/launch_attrs.h"
#include "tuner/tuner.h"

namespace braid {

ncclResult_t GpuExecutor::p2pConn(int peer, int channel, bool send, DevConn** out) {
  auto& map = send ? st_->p2pSend : st_->p2pRecv;
  auto it = map.find({peer, channel});
  if (it != map.end()) {
    *out = it->second;
    return ncclSuccess;
  }
  ConnInfo* info = send ? comm_->conns->p2pSend(peer, channel) : comm_->conns->p2pRecv(peer, channel);
  if (!info) return recordError(ncclInternalError, "rank %d: p2p connection %s rank %d (channel %d) is missing",
                                st_->rank, send ? "to" : "from", peer, channel);
  DevConn* d = nullptr;
  BRAID_CUDA_CHECK(cudaMalloc(&d, sizeof(DevConn)), "rank %d: cudaMalloc of a p2p connection state", st_->rank);
  // Cached only once uploaded: a failed upload must not leave a state that was never filled.
  const ncclResult_t r = st_->upload(*info, send, d);
  if (r != ncclSuccess) {
    cudaFree(d);
    return r;
  }
  map[{peer, channel}] = d;
  *out = d;
  return ncclSuccess;
}

ncclResult_t GpuExecutor::launchP2p(const std::vector<const OpDesc*>& ops, cudaStream_t s) {
  const int n = st_->nranks, me = st_->rank;
  P2pScratch& w = p2p_;
  w.sends.resize(n);
  w.recvs.resize(n);
  for (int p = 0; p < n; ++p) w.sends[p].clear(), w.recvs[p].clear();
  w.selfSends.clear();
  w.selfRecvs.clear();
  std::vector<P2pXfer>& copies = w.in.copies;  // (buf: destination, src)
  copies.clear();
  for (const OpDesc* op : ops) {
    const size_t bytes = op->count * dtypeSize(op->dtype);
    const char* sb = static_cast<const char*>(op->sendbuff);
    char* rb = static_cast<char*>(op->recvbuff);
    const bool oneWay = isOneWayColl(op->coll);
    // A collective's transfers at n > 2 share the peers' channels alike (p2pPeerChannels); both ends know.
    const int cap = n > 2 && op->coll != CollType::Send && op->coll != CollType::Recv ? st_->p2pPeerChannels : 0;
    auto snd = [&](int p, const char* b) {
      (p == me ? w.selfSends : w.sends[p]).push_back(P2pXfer{const_cast<char*>(b), bytes, nullptr, oneWay, cap});
    };
    auto rcv = [&](int p, char* b) {
      (p == me ? w.selfRecvs : w.recvs[p]).push_back(P2pXfer{b, bytes, nullptr, oneWay, cap});
    };
    switch (op->coll) {
      case CollType::Send: snd(op->peer, sb); break;
      case CollType::Recv: rcv(op->peer, rb); break;
      case CollType::AllToAll:
        for (int p = 0; p < n; ++p) {
          const size_t off = static_cast<size_t>(p) * bytes;
          if (p == me) {
            copies.push_back(P2pXfer{rb + off, bytes, sb + off});
          } else {
            snd(p, sb + off);
            rcv(p, rb + off);
          }
        }
        break;
      case CollType::Gather:
        if (me == op->root) {
          for (int p = 0; p < n; ++p) {
            if (p == me) copies.push_back(P2pXfer{rb + static_cast<size_t>(p) * bytes, bytes, sb});
            else rcv(p, rb + static_cast<size_t>(p) * bytes);
          }
        } else {
          snd(op->root, sb);
        }
        break;
      case CollType::Scatter:
        if (me == op->root) {
          for (int p = 0; p < n; ++p) {
            if (p == me) copies.push_back(P2pXfer{rb, bytes, sb + static_cast<size_t>(p) * bytes});
            else snd(p, sb + static_cast<size_t>(p) * bytes);
          }
        } else {
          rcv(op->root, rb);
        }
        break;
      default:
        return recordError(ncclInternalError, "%s is not a point-to-point operation", collName(op->coll));
    }
  }
  if (w.selfSends.size() != w.selfRecvs.size())
    return recordError(ncclInvalidUsage, "rank %d posted %zu sends to itself but %zu receives from itself in one group",
                       me, w.selfSends.size(), w.selfRecvs.size());
  for (size_t i = 0; i < w.selfSends.size(); ++i) {
    if (w.selfSends[i].bytes != w.selfRecvs[i].bytes)
      return recordError(ncclInvalidUsage, "rank %d: send to itself of %zu bytes is matched by a receive of %zu bytes",
                         me, w.selfSends[i].bytes, w.selfRecvs[i].bytes);
    copies.push_back(P2pXfer{w.selfRecvs[i].buf, w.selfRecvs[i].bytes, w.selfSends[i].buf});
  }
  copies.erase(std::remove_if(copies.begin(), copies.end(),
                              [](const P2pXfer& c) { return c.bytes == 0 || c.buf == c.src; }),
               copies.end());

  // Ring neighbours go over the ring connections, on the channels whose ring has them as neighbour (all of them
  // with one ring: DeviceState::ringChannelsOf); other peers over their own p2p connections (p2pPeerChannels of
  // them over P2P: ConnectionManager::setP2pChannels).
  auto ringChannels = [&](int dir, int p) -> const std::vector<int>* {
    const std::vector<std::vector<int>>& of = st_->ringChannelsOf[dir];
    return static_cast<size_t>(p) < of.size() && !of[static_cast<size_t>(p)].empty() ? &of[static_cast<size_t>(p)]
                                                                                     : nullptr;
  };
  w.sendPeers.clear();
  w.recvPeers.clear();
  for (int p = 0; p < n; ++p) {
    if (!w.sends[p].empty() && !ringChannels(0, p)) w.sendPeers.push_back(p);
    if (!w.recvs[p].empty() && !ringChannels(1, p)) w.recvPeers.push_back(p);
  }
  if ((!w.sendPeers.empty() || !w.recvPeers.empty()))
    BRAID_CHECK(comm_->conns->connectP2p(w.sendPeers.data(), static_cast<int>(w.sendPeers.size()),
                                         w.recvPeers.data(), static_cast<int>(w.recvPeers.size())));
  // The cut into the CTAs of one launch (p2p_plan.h). Small transfers run LL where the connection has LL slots
  // (P2P, SHM; NET only when NCCL_PROTO forces LL): one slot-sized step with no fence instead of SIMPLE's FIFO
  // handshake (NCCL_P2P_LL_THRESHOLD, as in NCCL).
  // LL over NET only when NCCL_PROTO forces LL: over sockets it measured no faster than SIMPLE for small
  // shares, the socket round trip setting the time (docs/TUNING.md, "Small transfers").
  auto llOn = [&](const ConnInfo* ci) {
    return llSlotsOf(ci) != nullptr && (ci->kind != TransportKind::Net || st_->p2pLlOnNet);
  };
  auto gpuP2p = [](const ConnInfo* ci) { return ci != nullptr && ci->kind == TransportKind::P2p; };
  P2pPlanInput& in = w.in;
  // The cut and paired CTAs (p2p_plan.h) as the budget says: every rank's threads can pair (agreed at init).
  applyBudget(p2pCtaBudget(st_->nChannels, st_->p2pCopyCtas, p2pMaxCtas(st_->tuning), st_->p2pPair), &in);
  in.llThreshold = st_->p2pLlThreshold;
  in.balanceMinShare = st_->p2pBalanceBytes;
  in.channelBytes = st_->p2pChannelBytes;
  in.maxCtas = kMaxP2pCtas;
  static_assert(kMaxP2pCtas == kP2pLaunchCtas, "p2pPeerChannels sizes collectives to the launch");
  in.maxBlocks = kMaxP2pTableBlocks;
  w.connPeer.clear();
  size_t nConns = 0, nTransfers = copies.size();
  for (int p = 0; p < n; ++p) {
    for (int dir = 0; dir < 2; ++dir) {
      const bool isSend = dir == 0;
      const std::vector<P2pXfer>& xs = isSend ? w.sends[p] : w.recvs[p];
      if (xs.empty()) continue;
      nTransfers += xs.size();
      if (nConns == in.conns.size()) in.conns.emplace_back();
      P2pPlanConn& c = in.conns[nConns++];
      c.isSend = isSend;
      const std::vector<int>* ringChans = ringChannels(dir, p);
      c.ring = ringChans != nullptr;
      c.ringChannels.clear();
      if (c.ring) {
        // Filled on the first ring transfer only: a 1-rank comm has no connections at all (comm_->conns null).
        if (!w.ringLlKnown) {
          for (int ch = 0; ch < st_->nChannels; ++ch) {
            w.ringLl[0].push_back(llOn(comm_->conns->ringSend(ch)));
            w.ringLl[1].push_back(llOn(comm_->conns->ringRecv(ch)));
            w.ringBal[0].push_back(gpuP2p(comm_->conns->ringSend(ch)));
            w.ringBal[1].push_back(gpuP2p(comm_->conns->ringRecv(ch)));
          }
          w.ringLlKnown = true;
        }
        c.channels = st_->nChannels;
        c.ll = w.ringLl[dir];
        c.bal = w.ringBal[dir];
        if (static_cast<int>(ringChans->size()) != st_->nChannels) {
          // Several rings: only the channels whose ring has p as neighbour, share v on channel (*ringChans)[v].
          c.ringChannels = *ringChans;
          c.channels = static_cast<int>(ringChans->size());
          c.ll.clear();
          c.bal.clear();
          for (int ch : *ringChans) {
            c.ll.push_back(w.ringLl[dir][static_cast<size_t>(ch)]);
            c.bal.push_back(w.ringBal[dir][static_cast<size_t>(ch)]);
          }
        }
      } else {
        c.channels = std::max(1, comm_->conns->p2pChannels(p));
        c.ll.clear();
        c.bal.clear();
        for (int ch = 0; ch < c.channels; ++ch) {
          const ConnInfo* ci = isSend ? comm_->conns->p2pSend(p, ch) : comm_->conns->p2pRecv(p, ch);
          c.ll.push_back(llOn(ci));
          c.bal.push_back(gpuP2p(ci));
        }
      }
      c.xs = xs;
      w.connPeer.push_back(p);
    }
  }
  in.conns.resize(nConns);
  if (in.conns.empty()) {
    // Nothing crosses a connection: the copy engine does the local copies.
    for (auto& c : copies)
      BRAID_CUDA_CHECK(cudaMemcpyAsync(c.buf, c.src, c.bytes, cudaMemcpyDeviceToDevice, s),
                       "rank %d: local copy of %zu bytes", me, c.bytes);
    return ncclSuccess;
  }
  P2pPlanLaunch& l = w.plan;
  std::string why;
  if (!planP2p(in, &l, &why))
    return recordError(ncclInvalidUsage, "rank %d: one group holds %zu point-to-point transfers (sends, receives and "
                       "local copies): %s; split the group", me, nTransfers, why.c_str());
  // Every connection first, so a failure leaves nothing launched.
  std::vector<DevConn*>& p2pConns = w.conns;
  p2pConns.clear();
  w.connFirst.assign(in.conns.size(), 0);
  for (size_t ci = 0; ci < in.conns.size(); ++ci) {
    w.connFirst[ci] = static_cast<int>(p2pConns.size());
    if (in.conns[ci].ring) continue;
    for (int ch = 0; ch < in.conns[ci].channels; ++ch) {
      p2pConns.push_back(nullptr);
      BRAID_CHECK(p2pConn(w.connPeer[ci], ch, in.conns[ci].isSend, &p2pConns.back()));
    }
  }
  // The lists as the kernel reads them: CTA i runs blocks[ctaFirst[i]] .. + blocks[ctaFirst[i]].nSeg; a
  // paired CTA's receive group starts right after, its first block's nSeg counting it (the kernel finds the
  // CTA's end at the next CTA's first block).
  auto fill = [&](auto* ctaFirst, P2pBlock* blocks) {
    int nb = 0, nc = 0;
    for (const P2pPlanCta& cta : l.ctas) {
      ctaFirst[nc++] = static_cast<std::remove_pointer_t<decltype(ctaFirst)>>(nb);
      const int first = nb;
      for (const P2pPlanBlock& pb : l.blocksOf(cta)) {
        P2pBlock& b = blocks[nb++];
        b.buf = pb.buf;
        b.bytes = pb.bytes;
        b.src = pb.src;
        b.isSend = pb.isSend;
        b.ll = pb.balParts > 0 ? static_cast<int16_t>(-pb.balParts) : static_cast<int16_t>(pb.ll);
        // A balanced send's claim pair, or (no slot; odd, so never a pair's address) its channel for a fixed deal.
        if (pb.balParts > 0 && pb.isSend)
          b.src = pb.balSlot >= 0 ? reinterpret_cast<const char*>(st_->p2pClaims + 2 * pb.balSlot)
                                  : reinterpret_cast<const char*>((static_cast<uintptr_t>(pb.channel) << 1) | 1u);
        b.nSeg = 0;
        if (pb.conn >= 0 && in.conns[pb.conn].ring) {
          const int ch = p2pRingChannelOf(in.conns[pb.conn], pb.channel);
          b.conn = pb.isSend ? st_->ringSend(ch) : st_->ringRecv(ch);
        } else {
          b.conn = pb.conn < 0 ? nullptr : p2pConns[w.connFirst[pb.conn] + pb.channel];
        }
      }
      if (cta.split > 0) {
        blocks[first].nSeg = cta.split;
        blocks[first + cta.split].nSeg = cta.count - cta.split;
      } else {
        blocks[first].nSeg = nb - first;
      }
    }
  };
  const int nCta = static_cast<int>(l.ctas.size());
  if (l.blocks > kMaxP2pBlocks) {
    // Past the largest parameter block: the lists go to device memory (p2p_table.h), still one launch.
    const size_t firstBytes = (sizeof(int32_t) * nCta + 15) & ~size_t{15};
    const size_t total = (firstBytes + sizeof(P2pBlock) * l.blocks + 15) & ~size_t{15};
    w.table.assign(total, 0);
    fill(reinterpret_cast<int32_t*>(w.table.data()), reinterpret_cast<P2pBlock*>(w.table.data() + firstBytes));
    const void* dev = nullptr;
    BRAID_CHECK(table_->put(w.table.data(), total, s, &dev));
    P2pTableArgs t;
    t.status = st_->statusDev;
    t.nBlocks = l.blocks;
    t.pieces = st_->p2pPieces;
    t.balCapParts = p2pBalancedCapParts(w.in.pairRing);
    t.ctaFirst = static_cast<const int32_t*>(dev);
    t.blocks = reinterpret_cast<const P2pBlock*>(static_cast<const char*>(dev) + firstBytes);
    void* targs[1] = {&t};
    BRAID_CUDA_CHECK(launchKernel(devP2pKernel(kMaxP2pTableBlocks), nCta, targs, s),
                     "rank %d: launching the p2p kernel (%d CTAs, %d blocks in device memory)", me, nCta, l.blocks);
    return ncclSuccess;
  }
  // Filled up to nCta / nBlocks only: the kernel reads no further, and zeroing the 26 KB block would cost
  // every small launch ~1 us.
  P2pLaunchArgs a;
  a.status = st_->statusDev;
  a.nBlocks = l.blocks;
  a.pieces = st_->p2pPieces;
  a.balCapParts = p2pBalancedCapParts(w.in.pairRing);
  fill(a.ctaFirst, a.blocks);
  // The smallest parameter block that holds the launch (dev_work.h; each a prefix of the same fields).
  P2pLaunchArgsTiny tiny;
  P2pLaunchArgsSmall small;
  P2pLaunchArgsMid mid;
  void* args[1] = {&a};
  int tier = kMaxP2pBlocks;
  auto shrink = [&](auto& to, int maxBlocks) {
    to = std::remove_reference_t<decltype(to)>{};
    to.status = a.status;
    to.nBlocks = a.nBlocks;
    to.pieces = a.pieces;
    to.balCapParts = a.balCapParts;
    std::memcpy(to.ctaFirst, a.ctaFirst, sizeof(a.ctaFirst[0]) * nCta);
    std::memcpy(to.blocks, a.blocks, sizeof(a.blocks[0]) * a.nBlocks);
    args[0] = &to;
    tier = maxBlocks;
  };
  if (a.nBlocks <= kTinyP2pBlocks) shrink(tiny, kTinyP2pBlocks);
  else if (a.nBlocks <= kSmallP2pBlocks) shrink(small, kSmallP2pBlocks);
  else if (a.nBlocks <= kMidP2pBlocks) shrink(mid, kMidP2pBlocks);
  BRAID_CUDA_CHECK(launchKernel(devP2pKernel(tier), nCta, args, s),
                   "rank %d: launching the p2p kernel (%d CTAs, %d blocks)", me, nCta, a.nBlocks);
  return ncclSuccess;
}

}  // namespace braid
