// HostTreePrims<T, Fn>: the CPU primitives of the tree all-reduce schedule (algo/tree_schedules.h) for host
// communicators, one object per (op, channel, tree), bound to that tree's connections: send to and receive from
// the parent, and from and to up to two children. Steps, waits, tags and errors are HostPrims' (host_prims.h).
// Children's partial results are reduced in child order into the step's destination (the parent's FIFO slot, or
// the root's output), so the root's bits depend only on the tree, and every rank receives them.
#pragma once

#include "runtime/host/host_prims.h"

namespace braid {

template <typename T, typename Fn>
class HostTreePrims : public HostPrims<T, Fn> {
  using Base = HostPrims<T, Fn>;

 public:
  // up*: the parent's connections (null at the root); down*[i]: child i's (null where there is none).
  HostTreePrims(ConnInfo* upSend, ConnInfo* upRecv, ConnInfo* const downSend[2], ConnInfo* const downRecv[2],
                const void* input, void* output, const Fn& fn, const WaitContext* wait,
                const std::atomic<bool>* cancel, uint32_t tag)
      : Base(nullptr, nullptr, input, output, fn, wait, cancel, tag), upSend_(upSend), upRecv_(upRecv) {
    for (int i = 0; i < 2; ++i) {
      if (downSend[i] == nullptr || downRecv[i] == nullptr) continue;
      downSend_[nDown_] = downSend[i];
      downRecv_[nDown_] = downRecv[i];
      ++nDown_;
    }
    this->linkName_ = "tree";
  }

  void sendUp(size_t inOff, size_t n) {
    T* s = this->waitSendSlot(upSend_, kCreditUp);
    if (!s) return;
    if (Fn::kHasPre) {
      mapLoop<T, Fn, true, false>(this->fn_, this->in_ + inOff, s, n);
    } else {
      copyBytes(s, this->in_ + inOff, n * sizeof(T));
    }
    this->postSend(upSend_, n);
  }

  void recvReduceSendUp(size_t inOff, size_t n) {
    const T* r[2] = {nullptr, nullptr};
    if (!recvChildren(n, r)) return;
    T* s = this->waitSendSlot(upSend_, kCreditUp);
    if (!s) return;
    reduceChildren<false>(r, this->in_ + inOff, s, n);
    this->postSend(upSend_, n);
    for (int i = 0; i < nDown_; ++i) this->postRecv(downRecv_[i]);
  }

  void recvReduceCopy(size_t inOff, size_t outOff, size_t n) {
    const T* r[2] = {nullptr, nullptr};
    if (!recvChildren(n, r)) return;
    reduceChildren<Fn::kHasPost>(r, this->in_ + inOff, this->out_ + outOff, n);
    for (int i = 0; i < nDown_; ++i) this->postRecv(downRecv_[i]);
  }

  void sendDown(size_t outOff, size_t n) { copyToChildren(this->out_ + outOff, n); }

  void recvCopySendDown(size_t outOff, size_t n) {
    const T* r = this->waitRecvSlot(upRecv_, n, kDataDown);
    if (!r) return;
    copyBytes(this->out_ + outOff, r, n * sizeof(T));
    copyToChildren(r, n);
    if (this->res_ != ncclSuccess) return;
    this->postRecv(upRecv_);
  }

  void recvDown(size_t outOff, size_t n) {
    const T* r = this->waitRecvSlot(upRecv_, n, kDataDown);
    if (!r) return;
    copyBytes(this->out_ + outOff, r, n * sizeof(T));
    this->postRecv(upRecv_);
  }

 private:
  static constexpr const char* kCreditUp = "tree FIFO credit from the parent";
  static constexpr const char* kDataDown = "tree data from the parent";

  bool recvChildren(size_t n, const T* r[2]) {
    for (int i = 0; i < nDown_; ++i) {
      r[i] = this->waitRecvSlot(downRecv_[i], n, "tree data from a child");
      if (!r[i]) return false;
    }
    return true;
  }

  // dst = [post](child1 (+) (child0 (+) pre(own))); the post-op on the last pass only.
  template <bool Post>
  void reduceChildren(const T* const r[2], const T* own, T* dst, size_t n) {
    const Fn& fn = this->fn_;
    if (nDown_ == 1) {
      reduceLoop<T, Fn, Fn::kHasPre, Post, false>(fn, r[0], own, dst, nullptr, n);
    } else {
      reduceLoop<T, Fn, Fn::kHasPre, false, false>(fn, r[0], own, dst, nullptr, n);
      reduceLoop<T, Fn, false, Post, false>(fn, r[1], dst, dst, nullptr, n);
    }
  }

  void copyToChildren(const T* src, size_t n) {
    for (int i = 0; i < nDown_; ++i) {
      T* s = this->waitSendSlot(downSend_[i], "tree FIFO credit from a child");
      if (!s) return;
      copyBytes(s, src, n * sizeof(T));
      this->postSend(downSend_[i], n);
    }
  }

  ConnInfo* upSend_;
  ConnInfo* upRecv_;
  ConnInfo* downSend_[2] = {nullptr, nullptr};
  ConnInfo* downRecv_[2] = {nullptr, nullptr};
  int nDown_ = 0;
};

}  // namespace braid
