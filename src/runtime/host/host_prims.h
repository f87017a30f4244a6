// HostPrims<T, Fn>: the CPU Primitives the ring schedules (ring_schedules.h) run on for host communicators.
// One object per (op, channel), bound to the channel's ring ConnInfo pair and the op's buffers. Every call
// is one FIFO step per connection it uses: wait for a free slot (send) / for data (recv) through a Waiter,
// copy or reduce directly between the user buffers and the FIFO slot, record sizes[slot], publish
// tail/head with release stores. The first error (Waiter failure, broken connection, size mismatch) is
// recorded and kept; every later call is then a no-op, and the executor returns the error at the end.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "algo/fifo_slot.h"
#include "algo/reduce_ops.h"
#include "core/log.h"
#include "core/result.h"
#include "core/wait.h"
#include "runtime/host/host_f16c.h"
#include "transport/conn_failure.h"
#include "transport/conn_info.h"

namespace braid {

// The hot loops are compiled twice on x86-64, for AVX2 and for the baseline, and picked at load time: the
// fp16/fp8 conversions run about 2x faster with 8-lane vectors (measured 2.4 -> 1.0 ns per fp16 element).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BRAID_HOST_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BRAID_HOST_CLONES
#endif

// The hot loops: plain contiguous loops over typed pointers the compiler vectorises. Flags are template
// parameters so each instantiation carries no per-element branches.
template <typename T, typename Fn, bool Pre, bool Post, bool TwoDst>
BRAID_HOST_CLONES void reduceLoop(const Fn& fn, const T* recvd, const T* own, T* dst0, T* dst1, size_t n) {
#if BRAID_HOST_F16C
  if constexpr (std::is_same<Fn, FuncSum<Half>>::value && !Pre && !Post) {
    if (hostHasF16c()) {
      hostSumHalfF16c(reinterpret_cast<const uint16_t*>(recvd), reinterpret_cast<const uint16_t*>(own),
                      reinterpret_cast<uint16_t*>(dst0), TwoDst ? reinterpret_cast<uint16_t*>(dst1) : nullptr, n);
      return;
    }
  }
#endif
  for (size_t i = 0; i < n; ++i) {
    T v = fn(recvd[i], Pre ? fn.pre(own[i]) : own[i]);
    if (Post) v = fn.post(v);
    dst0[i] = v;
    if (TwoDst) dst1[i] = v;
  }
}
template <typename T, typename Fn, bool Pre, bool Post>
BRAID_HOST_CLONES void mapLoop(const Fn& fn, const T* src, T* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T v = src[i];
    if (Pre) v = fn.pre(v);
    if (Post) v = fn.post(v);
    dst[i] = v;
  }
}
// memcpy that tolerates dst == src (in-place forms) and n == 0.
inline void copyBytes(void* dst, const void* src, size_t bytes) {
  if (bytes != 0 && dst != src) memcpy(dst, src, bytes);
}

// Set by the executor when another channel of the same op failed: stop waiting, without a message of our own.
constexpr ncclResult_t kCancelled = static_cast<ncclResult_t>(-1000);

template <typename T, typename Fn>
class HostPrims {
 public:
  // `tag`: the op's hostStepTag, stamped on every step sent and checked on every step received.
  HostPrims(ConnInfo* send, ConnInfo* recv, const void* input, void* output, const Fn& fn, const WaitContext* wait,
            const std::atomic<bool>* cancel, uint32_t tag)
      : send_(send), recv_(recv), in_(static_cast<const T*>(input)), out_(static_cast<T*>(output)), fn_(fn),
        wait_(wait), cancel_(cancel), tag_(tag & kNetFlagTagMask) {}

  ncclResult_t result() const { return res_; }

  void send(size_t inOff, size_t n) {
    T* s = waitSendSlot();
    if (!s) return;
    if (Fn::kHasPre) {
      mapLoop<T, Fn, true, false>(fn_, in_ + inOff, s, n);
    } else {
      copyBytes(s, in_ + inOff, n * sizeof(T));
    }
    postSend(n);
  }

  void recv(size_t outOff, size_t n) {
    const T* r = waitRecvSlot(n);
    if (!r) return;
    copyBytes(out_ + outOff, r, n * sizeof(T));
    postRecv();
  }

  void recvReduceSend(size_t inOff, size_t n) {
    const T* r = waitRecvSlot(n);
    if (!r) return;
    T* s = waitSendSlot();
    if (!s) return;
    reduceLoop<T, Fn, Fn::kHasPre, false, false>(fn_, r, in_ + inOff, s, nullptr, n);
    postSend(n);
    postRecv();
  }

  void recvReduceCopySend(size_t inOff, size_t outOff, size_t n, bool postOp) {
    const T* r = waitRecvSlot(n);
    if (!r) return;
    T* s = waitSendSlot();
    if (!s) return;
    if (Fn::kHasPost && postOp) {
      reduceLoop<T, Fn, Fn::kHasPre, Fn::kHasPost, true>(fn_, r, in_ + inOff, out_ + outOff, s, n);
    } else {
      reduceLoop<T, Fn, Fn::kHasPre, false, true>(fn_, r, in_ + inOff, out_ + outOff, s, n);
    }
    postSend(n);
    postRecv();
  }

  void recvReduceCopy(size_t inOff, size_t outOff, size_t n, bool postOp) {
    const T* r = waitRecvSlot(n);
    if (!r) return;
    if (Fn::kHasPost && postOp) {
      reduceLoop<T, Fn, Fn::kHasPre, Fn::kHasPost, false>(fn_, r, in_ + inOff, out_ + outOff, nullptr, n);
    } else {
      reduceLoop<T, Fn, Fn::kHasPre, false, false>(fn_, r, in_ + inOff, out_ + outOff, nullptr, n);
    }
    postRecv();
  }

  void recvCopySend(size_t outOff, size_t n) {
    const T* r = waitRecvSlot(n);
    if (!r) return;
    T* s = waitSendSlot();
    if (!s) return;
    copyBytes(s, r, n * sizeof(T));
    copyBytes(out_ + outOff, r, n * sizeof(T));
    postSend(n);
    postRecv();
  }

  void copySend(size_t inOff, size_t outOff, size_t n) {
    T* s = waitSendSlot();
    if (!s) return;
    copyBytes(s, in_ + inOff, n * sizeof(T));
    copyBytes(out_ + outOff, in_ + inOff, n * sizeof(T));
    postSend(n);
  }

  void localReduceCopy(size_t inOff, size_t outOff, size_t n) {
    if (res_ != ncclSuccess) return;
    if (Fn::kHasPre || Fn::kHasPost) {
      mapLoop<T, Fn, Fn::kHasPre, Fn::kHasPost>(fn_, in_ + inOff, out_ + outOff, n);
    } else {
      copyBytes(out_ + outOff, in_ + inOff, n * sizeof(T));
    }
  }

 protected:
  // The step primitives, also used by the tree primitives (host_tree_prims.h) on their own connections.
  // Waits until ready() holds. Returns false (with res_ set) when the wait must stop.
  template <typename Ready>
  bool waitUntil(const ConnInfo* c, const char* what, Ready ready) {
    if (ready()) return true;
    Waiter w(wait_, c->peer, what);
    while (!ready()) {
      if (cancel_ && cancel_->load(std::memory_order_relaxed)) {
        res_ = kCancelled;
        return false;
      }
      if (c->errorFlag && loadAcquire32(c->errorFlag) != 0) {
        // The transport may have delivered our data just before it saw the peer close.
        if (ready()) return true;
        // Name the rank that died, if one did, rather than the neighbour that reported it.
        res_ = addConnFailure(checkPeersAlive(wait_), c->errorFlag, c->peer);
        if (res_ == ncclSuccess) {
          ncclResult_t code = ncclRemoteError;
          const std::string why = connFailure(c->errorFlag, &code);
          res_ = recordError(code, "%s connection with rank %d broke (%s; %s)%s", linkName_, c->peer,
                             why.empty() ? "transport reported an error" : why.c_str(), what,
                             stallReport(wait_).c_str());
        }
        BRAID_INFO(kSubColl, "%s connection with rank %d broke while waiting for %s (step %llu head %llu tail %llu)",
                   linkName_, c->peer, what, (unsigned long long)c->step, (unsigned long long)loadAcquire(c->head),
                   (unsigned long long)loadAcquire(c->tail));
        return false;
      }
      ncclResult_t r = w.poll();
      if (r != ncclSuccess) {
        res_ = r;
        return false;
      }
    }
    return true;
  }

  T* waitSendSlot() { return waitSendSlot(send_, "ring FIFO credit from the next rank"); }
  // `what` names the wait in a stall or error report.
  T* waitSendSlot(ConnInfo* c, const char* what) {
    if (res_ != ncclSuccess) return nullptr;
    if (!waitUntil(c, what, [c] { return c->step < loadAcquire(c->head) + c->nSteps; }))
      return nullptr;
    return reinterpret_cast<T*>(c->buff + fifoSlot(c->step, c->nSteps) * static_cast<size_t>(c->stepBytes));
  }

  const T* waitRecvSlot(size_t n) { return waitRecvSlot(recv_, n, "ring data from the previous rank"); }
  const T* waitRecvSlot(ConnInfo* c, size_t n, const char* what) {
    if (res_ != ncclSuccess) return nullptr;
    if (!waitUntil(c, what, [c] { return loadAcquire(c->tail) > c->step; }))
      return nullptr;
    const size_t slot = fifoSlot(c->step, c->nSteps);
    // The tag first: a step of another collective says more than its size would.
    if (c->tags && c->tags[slot] != tag_) {
      res_ = recordError(ncclInvalidUsage,
                         "%s step %llu from rank %d belongs to another collective (tag 0x%04x, this rank's 0x%04x): "
                         "ranks called collectives with different types, roots, counts, datatypes or reductions, "
                         "or in a different order",
                         linkName_, static_cast<unsigned long long>(c->step), c->peer, c->tags[slot], tag_);
      return nullptr;
    }
    const int32_t got = c->sizes[slot];
    if (static_cast<size_t>(got) != n * sizeof(T)) {
      res_ = recordError(ncclInvalidUsage,
                         "%s step %llu from rank %d carried %d bytes where %zu were expected: ranks called "
                         "collectives with different counts, types or order",
                         linkName_, static_cast<unsigned long long>(c->step), c->peer, got, n * sizeof(T));
      return nullptr;
    }
    return reinterpret_cast<const T*>(c->buff + slot * static_cast<size_t>(c->stepBytes));
  }

  void postSend(size_t n) { postSend(send_, n); }
  void postSend(ConnInfo* c, size_t n) {
    c->sizes[fifoSlot(c->step, c->nSteps)] = static_cast<int32_t>(n * sizeof(T));
    if (c->tags) c->tags[fifoSlot(c->step, c->nSteps)] = tag_;
    ++c->step;
    storeRelease(c->tail, c->step);
  }
  void postRecv() { postRecv(recv_); }
  void postRecv(ConnInfo* c) {
    ++c->step;
    storeRelease(c->head, c->step);
  }

  ConnInfo* send_;
  ConnInfo* recv_;
  const T* in_;
  T* out_;
  Fn fn_;
  const WaitContext* wait_;
  const std::atomic<bool>* cancel_;
  uint32_t tag_;
  ncclResult_t res_ = ncclSuccess;
  const char* linkName_ = "ring";  // in error messages
};

}  // namespace braid
