// DevPrims<T, Fn>: the SIMPLE-protocol device Primitives the shared ring schedules (ring_schedules.h) run
// on. One object per CTA (= channel), bound to the channel's ring connections and the op's buffers. Each
// call is one FIFO step per connection it touches: thread 0 waits for credits (send: step < head + nSteps)
// and data (recv: tail > step, acquire at system scope), a barrier hands the slots to all threads, all
// threads run reduceCopy between user buffers and slots, a barrier, then thread 0 records sizes[slot],
// fences at system scope and publishes tail (send) / head (recv). Every spin checks the host-mapped abort
// flag (and a host transport's error flag); once stopped, every later call is a no-op.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/dev_work.h"
#include "device/op128.h"
#include "device/reduce_copy.h"

#ifdef __CUDACC__

namespace braid {

struct PrimsShared {
  DevConn send;
  DevConn recv;
  int stop;  // set by thread 0; read by all after a barrier
};

// Marks the launch failed (first error wins) so the host reports it at the next call.
__device__ __forceinline__ void devSetError(DevStatus* st, uint32_t code, int peer, uint32_t got, uint32_t want) {
  if (atomicCAS(reinterpret_cast<unsigned int*>(&st->error), 0u, code) == 0u) {
    st->errorPeer = peer;
    st->errorBytes = got;
    st->expectBytes = want;
    __threadfence_system();
  }
}

// Thread 0 only: spins until ready(), checking abort every few hundred polls. False when stopped.
template <typename Ready>
__device__ __forceinline__ bool devSpin(DevStatus* st, const DevConn& c, Ready ready) {
  int spins = 0;
  while (!ready()) {
    if (++spins == 256) {
      spins = 0;
      if (ldVolatile32(&st->abort)) {
        devSetError(st, kDevAborted, c.peer, 0, 0);
        return false;
      }
      if (c.errorFlag && ldVolatile32(c.errorFlag)) {
        if (ready()) return true;
        devSetError(st, kDevConnBroken, c.peer, 0, 0);
        return false;
      }
    }
  }
  return true;
}

// Thread 0: wait for a free send slot / a filled recv slot of `bytes`.
__device__ __forceinline__ bool devWaitSend(DevStatus* st, DevConn& c) {
  return devSpin(st, c, [&] { return c.step < ldAcquireSys(c.head) + c.nSteps; });
}
__device__ __forceinline__ bool devWaitRecv(DevStatus* st, DevConn& c, uint32_t bytes) {
  if (!devSpin(st, c, [&] { return ldAcquireSys(c.tail) > c.step; })) return false;
  const int32_t got = *reinterpret_cast<volatile int32_t*>(c.sizes + c.step % c.nSteps);
  if (static_cast<uint32_t>(got) != bytes) {
    devSetError(st, kDevSizeMismatch, c.peer, static_cast<uint32_t>(got), bytes);
    return false;
  }
  return true;
}
__device__ __forceinline__ void devPostSend(DevConn& c, uint32_t bytes) {
  stVolatile32(c.sizes + c.step % c.nSteps, static_cast<int32_t>(bytes));
  ++c.step;
  fenceSys();
  stRelaxedSys(c.tail, c.step);
}
__device__ __forceinline__ void devPostRecv(DevConn& c) {
  ++c.step;
  fenceSys();
  stRelaxedSys(c.head, c.step);
}
__device__ __forceinline__ char* devSlot(const DevConn& c) {
  return c.buff + (c.step % c.nSteps) * static_cast<size_t>(c.stepBytes);
}

template <typename T, typename Fn>
class DevPrims {
 public:
  __device__ DevPrims(PrimsShared* sh, const T* in, T* out, const Fn& fn, DevStatus* st)
      : sh_(sh), in_(in), out_(out), fn_(fn), st_(st), tid_(threadIdx.x), nthreads_(blockDim.x) {}

  __device__ void send(size_t inOff, size_t n) {
    if (!wait(true, false, 0)) return;
    T* s = reinterpret_cast<T*>(devSlot(sh_->send));
    rc<RcMode<1, 1, Fn::kHasPre, false, false>>(in_ + inOff, nullptr, s, nullptr, n);
    post(true, false, n);
  }
  __device__ void recv(size_t outOff, size_t n) {
    if (!wait(false, true, n)) return;
    const T* r = reinterpret_cast<const T*>(devSlot(sh_->recv));
    rc<RcMode<1, 1, false, false, false>>(r, nullptr, out_ + outOff, nullptr, n);
    post(false, true, n);
  }
  __device__ void recvReduceSend(size_t inOff, size_t n) {
    if (!wait(true, true, n)) return;
    rc<RcMode<2, 1, false, Fn::kHasPre, false>>(recvSlot(), in_ + inOff, sendSlot(), nullptr, n);
    post(true, true, n);
  }
  __device__ void recvReduceCopySend(size_t inOff, size_t outOff, size_t n, bool postOp) {
    if (!wait(true, true, n)) return;
    if (Fn::kHasPost && postOp) {
      rc<RcMode<2, 2, false, Fn::kHasPre, Fn::kHasPost>>(recvSlot(), in_ + inOff, out_ + outOff, sendSlot(), n);
    } else {
      rc<RcMode<2, 2, false, Fn::kHasPre, false>>(recvSlot(), in_ + inOff, out_ + outOff, sendSlot(), n);
    }
    post(true, true, n);
  }
  __device__ void recvReduceCopy(size_t inOff, size_t outOff, size_t n, bool postOp) {
    if (!wait(false, true, n)) return;
    if (Fn::kHasPost && postOp) {
      rc<RcMode<2, 1, false, Fn::kHasPre, Fn::kHasPost>>(recvSlot(), in_ + inOff, out_ + outOff, nullptr, n);
    } else {
      rc<RcMode<2, 1, false, Fn::kHasPre, false>>(recvSlot(), in_ + inOff, out_ + outOff, nullptr, n);
    }
    post(false, true, n);
  }
  __device__ void recvCopySend(size_t outOff, size_t n) {
    if (!wait(true, true, n)) return;
    rc<RcMode<1, 2, false, false, false>>(recvSlot(), nullptr, out_ + outOff, sendSlot(), n);
    post(true, true, n);
  }
  __device__ void copySend(size_t inOff, size_t outOff, size_t n) {
    if (!wait(true, false, 0)) return;
    if (in_ + inOff == out_ + outOff) {
      rc<RcMode<1, 1, false, false, false>>(in_ + inOff, nullptr, sendSlot(), nullptr, n);
    } else {
      rc<RcMode<1, 2, false, false, false>>(in_ + inOff, nullptr, out_ + outOff, sendSlot(), n);
    }
    post(true, false, n);
  }
  __device__ void localReduceCopy(size_t inOff, size_t outOff, size_t n) {
    if (sh_->stop) return;
    if (Fn::kHasPre || Fn::kHasPost) {
      rc<RcMode<1, 1, Fn::kHasPre, false, Fn::kHasPost>>(in_ + inOff, nullptr, out_ + outOff, nullptr, n);
    } else if (in_ + inOff != out_ + outOff) {
      rc<RcMode<1, 1, false, false, false>>(in_ + inOff, nullptr, out_ + outOff, nullptr, n);
    }
    __syncthreads();  // a later step may read what this one wrote on other threads
  }

 private:
  template <typename M>
  __device__ __forceinline__ void rc(const T* s0, const T* s1, T* d0, T* d1, size_t n) {
    reduceCopy<T, Fn, M>(fn_, tid_, nthreads_, s0, s1, d0, d1, n);
  }
  __device__ __forceinline__ T* sendSlot() { return reinterpret_cast<T*>(devSlot(sh_->send)); }
  __device__ __forceinline__ const T* recvSlot() { return reinterpret_cast<const T*>(devSlot(sh_->recv)); }

  __device__ __forceinline__ bool wait(bool needSend, bool needRecv, size_t n) {
    if (tid_ == 0 && !sh_->stop) {
      bool ok = true;
      if (needRecv) ok = devWaitRecv(st_, sh_->recv, static_cast<uint32_t>(n * sizeof(T)));
      if (ok && needSend) ok = devWaitSend(st_, sh_->send);
      if (!ok) sh_->stop = 1;
    }
    __syncthreads();
    return !sh_->stop;
  }
  __device__ __forceinline__ void post(bool sent, bool recvd, size_t n) {
    __syncthreads();
    if (tid_ == 0) {
      if (sent) devPostSend(sh_->send, static_cast<uint32_t>(n * sizeof(T)));
      if (recvd) devPostRecv(sh_->recv);
    }
  }

  PrimsShared* sh_;
  const T* in_;
  T* out_;
  Fn fn_;
  DevStatus* st_;
  int tid_;
  int nthreads_;
};

}  // namespace braid

#endif  // __CUDACC__
