// Point-to-point progress for host communicators. A message of B bytes is max(1, ceil(B / stepBytes))
// FIFO steps (an empty message still takes one step, so every send pairs with exactly one recv); the
// receiver checks each step's size, which catches send/recv count mismatches instead of corrupting data.
#include "runtime/host/host_p2p.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "algo/fifo_slot.h"
#include "core/log.h"
#include "core/result.h"
#include "transport/conn_failure.h"

namespace braid {
namespace {

struct Xfer {
  char* buf = nullptr;
  size_t bytes = 0;
  size_t done = 0;
  uint64_t stepsLeft = 0;
};

struct Queue {
  std::vector<Xfer> xfers;
  size_t head = 0;
  ConnInfo* conn = nullptr;
  bool active() const { return head < xfers.size(); }
};

struct LocalCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

void addXfer(Queue* q, const void* buf, size_t bytes) {
  Xfer x;
  x.buf = static_cast<char*>(const_cast<void*>(buf));
  x.bytes = bytes;
  q->xfers.push_back(x);
}

void localCopy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0 && dst != src) memmove(dst, src, bytes);
}

class P2pBatch {
 public:
  P2pBatch(ConnProvider* conns, const WaitContext* wait, int rank, int nranks)
      : conns_(conns), wait_(wait), rank_(rank), nranks_(nranks), send_(nranks), recv_(nranks) {}

  ncclResult_t build(const std::vector<const OpDesc*>& ops);
  ncclResult_t run();

 private:
  ncclResult_t connect();
  ncclResult_t advanceSend(Queue& q, int peer, bool* progressed);
  ncclResult_t advanceRecv(Queue& q, int peer, bool* progressed);
  ncclResult_t checkBroken();

  ConnProvider* conns_;
  const WaitContext* wait_;
  int rank_;
  int nranks_;
  std::vector<Queue> send_;  // by peer
  std::vector<Queue> recv_;  // by peer
  std::vector<LocalCopy> copies_;
  std::vector<LocalCopy> selfSends_;  // dst unused
  std::vector<LocalCopy> selfRecvs_;  // src unused
};

ncclResult_t P2pBatch::build(const std::vector<const OpDesc*>& ops) {
  for (const OpDesc* op : ops) {
    const size_t size = dtypeSize(op->dtype);
    if (size == 0)
      return recordError(ncclInvalidArgument, "%s: invalid datatype %d", collName(op->coll), static_cast<int>(op->dtype));
    const size_t bytes = op->count * size;
    const char* sbuf = static_cast<const char*>(op->sendbuff);
    char* rbuf = static_cast<char*>(op->recvbuff);
    switch (op->coll) {
      case CollType::Send:
      case CollType::Recv: {
        if (op->peer < 0 || op->peer >= nranks_)
          return recordError(ncclInvalidArgument, "%s: peer %d is out of range [0, %d)", collName(op->coll), op->peer,
                             nranks_);
        const bool isSend = op->coll == CollType::Send;
        if (op->peer == rank_) {
          if (isSend) {
            selfSends_.push_back(LocalCopy{nullptr, sbuf, bytes});
          } else {
            selfRecvs_.push_back(LocalCopy{rbuf, nullptr, bytes});
          }
        } else if (isSend) {
          addXfer(&send_[op->peer], sbuf, bytes);
        } else {
          addXfer(&recv_[op->peer], rbuf, bytes);
        }
        break;
      }
      case CollType::AllToAll:
        for (int p = 0; p < nranks_; ++p) {
          const size_t off = static_cast<size_t>(p) * bytes;
          if (p == rank_) {
            copies_.push_back(LocalCopy{rbuf + off, sbuf + off, bytes});
          } else {
            addXfer(&send_[p], sbuf + off, bytes);
            addXfer(&recv_[p], rbuf + off, bytes);
          }
        }
        break;
      case CollType::Gather:
        if (rank_ == op->root) {
          for (int p = 0; p < nranks_; ++p) {
            const size_t off = static_cast<size_t>(p) * bytes;
            if (p == rank_) {
              copies_.push_back(LocalCopy{rbuf + off, sbuf, bytes});
            } else {
              addXfer(&recv_[p], rbuf + off, bytes);
            }
          }
        } else {
          addXfer(&send_[op->root], sbuf, bytes);
        }
        break;
      case CollType::Scatter:
        if (rank_ == op->root) {
          for (int p = 0; p < nranks_; ++p) {
            const size_t off = static_cast<size_t>(p) * bytes;
            if (p == rank_) {
              copies_.push_back(LocalCopy{rbuf, sbuf + off, bytes});
            } else {
              addXfer(&send_[p], sbuf + off, bytes);
            }
          }
        } else {
          addXfer(&recv_[op->root], rbuf, bytes);
        }
        break;
      default:
        return recordError(ncclInternalError, "%s is not a point-to-point operation", collName(op->coll));
    }
  }
  if (selfSends_.size() != selfRecvs_.size())
    return recordError(ncclInvalidUsage, "rank %d posted %zu sends to itself but %zu receives from itself in one group",
                       rank_, selfSends_.size(), selfRecvs_.size());
  for (size_t i = 0; i < selfSends_.size(); ++i) {
    if (selfSends_[i].bytes != selfRecvs_[i].bytes)
      return recordError(ncclInvalidUsage, "rank %d: send to itself of %zu bytes is matched by a receive of %zu bytes",
                         rank_, selfSends_[i].bytes, selfRecvs_[i].bytes);
    copies_.push_back(LocalCopy{selfRecvs_[i].dst, selfSends_[i].src, selfSends_[i].bytes});
  }
  return ncclSuccess;
}

ncclResult_t P2pBatch::connect() {
  std::vector<int> sendPeers, recvPeers;
  for (int p = 0; p < nranks_; ++p) {
    if (!send_[p].xfers.empty()) sendPeers.push_back(p);
    if (!recv_[p].xfers.empty()) recvPeers.push_back(p);
  }
  if (sendPeers.empty() && recvPeers.empty()) return ncclSuccess;
  BRAID_CHECK(conns_->connectP2p(sendPeers.data(), static_cast<int>(sendPeers.size()), recvPeers.data(),
                                 static_cast<int>(recvPeers.size())));
  auto bind = [&](Queue& q, ConnInfo* c, int peer, const char* dir) -> ncclResult_t {
    if (c == nullptr || c->buff == nullptr || c->nSteps == 0 || c->stepBytes == 0)
      return recordError(ncclInternalError, "rank %d: p2p %s connection with rank %d is not usable after connect",
                         rank_, dir, peer);
    q.conn = c;
    for (Xfer& x : q.xfers) x.stepsLeft = x.bytes == 0 ? 1 : (x.bytes + c->stepBytes - 1) / c->stepBytes;
    return ncclSuccess;
  };
  for (int p : sendPeers) BRAID_CHECK(bind(send_[p], conns_->p2pSend(p), p, "send"));
  for (int p : recvPeers) BRAID_CHECK(bind(recv_[p], conns_->p2pRecv(p), p, "receive"));
  return ncclSuccess;
}

ncclResult_t P2pBatch::advanceSend(Queue& q, int peer, bool* progressed) {
  ConnInfo* c = q.conn;
  while (q.active()) {
    Xfer& x = q.xfers[q.head];
    while (x.stepsLeft > 0 && c->step < loadAcquire(c->head) + c->nSteps) {
      const size_t chunk = std::min<size_t>(c->stepBytes, x.bytes - x.done);
      const size_t slot = fifoSlot(c->step, c->nSteps);
      if (chunk) memcpy(c->buff + slot * static_cast<size_t>(c->stepBytes), x.buf + x.done, chunk);
      c->sizes[slot] = static_cast<int32_t>(chunk) | (x.stepsLeft == 1 ? kStepLastOfMessage : 0);
      ++c->step;
      storeRelease(c->tail, c->step);
      x.done += chunk;
      --x.stepsLeft;
      *progressed = true;
    }
    if (x.stepsLeft > 0) return ncclSuccess;  // FIFO full: come back later
    ++q.head;
  }
  return ncclSuccess;
}

ncclResult_t P2pBatch::advanceRecv(Queue& q, int peer, bool* progressed) {
  ConnInfo* c = q.conn;
  while (q.active()) {
    Xfer& x = q.xfers[q.head];
    while (x.stepsLeft > 0 && loadAcquire(c->tail) > c->step) {
      const size_t expect = std::min<size_t>(c->stepBytes, x.bytes - x.done);
      const size_t slot = fifoSlot(c->step, c->nSteps);
      const int32_t word = c->sizes[slot];
      const int32_t got = stepSizeOf(word);
      const bool senderLast = stepIsLastOf(word);
      if (got < 0 || static_cast<size_t>(got) != expect)
        return recordError(ncclInvalidUsage,
                           "rank %d: message from rank %d does not match the receive of %zu bytes (step of %d bytes "
                           "where %zu were expected): send and recv counts or types differ",
                           rank_, peer, x.bytes, got, expect);
      // Step sizes can agree while the messages do not (both a multiple of the step): the end flag tells.
      if (senderLast != (x.stepsLeft == 1))
        return recordError(ncclInvalidUsage,
                           senderLast ? "rank %d: the message from rank %d ended after %zu bytes, but the receive "
                                        "expects %zu: send and recv counts or types differ"
                                      : "rank %d: the message from rank %d goes on past the %zu bytes received "
                                        "(receive of %zu bytes): send and recv counts or types differ",
                           rank_, peer, x.done + expect, x.bytes);
      if (expect) memcpy(x.buf + x.done, c->buff + slot * static_cast<size_t>(c->stepBytes), expect);
      ++c->step;
      storeRelease(c->head, c->step);
      x.done += expect;
      --x.stepsLeft;
      *progressed = true;
    }
    if (x.stepsLeft > 0) return ncclSuccess;
    ++q.head;
  }
  return ncclSuccess;
}

ncclResult_t P2pBatch::checkBroken() {
  for (int p = 0; p < nranks_; ++p) {
    for (const Queue* q : {&send_[p], &recv_[p]}) {
      if (!q->active() || !q->conn->errorFlag || loadAcquire32(q->conn->errorFlag) == 0) continue;
      // Data the transport delivered before it saw the peer close is still ours to consume.
      if (q == &recv_[p] && loadAcquire(q->conn->tail) > q->conn->step) continue;
      BRAID_CHECK(addConnFailure(checkPeersAlive(wait_), q->conn->errorFlag, p));
      ncclResult_t code = ncclRemoteError;
      const std::string why = connFailure(q->conn->errorFlag, &code);
      return recordError(code, "rank %d: p2p connection with rank %d broke (%s)%s", rank_, p,
                         why.empty() ? "transport reported an error" : why.c_str(), stallReport(wait_).c_str());
    }
  }
  return ncclSuccess;
}

ncclResult_t P2pBatch::run() {
  for (const LocalCopy& c : copies_) localCopy(c.dst, c.src, c.bytes);
  BRAID_CHECK(connect());
  std::string what;
  std::optional<Waiter> waiter;  // exists only while stalled: its timeout measures time without progress
  for (;;) {
    bool progressed = false;
    int stalledPeer = -1;
    for (int p = 0; p < nranks_; ++p) {
      if (send_[p].active()) BRAID_CHECK(advanceSend(send_[p], p, &progressed));
      if (recv_[p].active()) BRAID_CHECK(advanceRecv(recv_[p], p, &progressed));
      if (stalledPeer < 0 && (send_[p].active() || recv_[p].active())) stalledPeer = p;
    }
    if (stalledPeer < 0) return ncclSuccess;
    if (progressed) {
      waiter.reset();
      continue;
    }
    if (!waiter) {
      what = "point-to-point transfers with rank " + std::to_string(stalledPeer);
      waiter.emplace(wait_, stalledPeer, what.c_str());
    }
    BRAID_CHECK(checkBroken());
    BRAID_CHECK(waiter->poll());
  }
}

}  // namespace

ncclResult_t runHostP2p(ConnProvider* conns, const WaitContext* wait, int rank, int nranks,
                        const std::vector<const OpDesc*>& ops) {
  if (ops.empty()) return ncclSuccess;
  P2pBatch batch(conns, wait, rank, nranks);
  BRAID_CHECK(batch.build(ops));
  return batch.run();
}

}  // namespace braid
