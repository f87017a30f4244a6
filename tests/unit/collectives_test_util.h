// Test support for the host collectives: an in-memory ConnProvider (FIFOs in plain memory shared by rank
// threads, the same head/tail/sizes contract the transports fill), a runner that starts one thread per
// rank, and datatype helpers that move values between doubles and any NCCL datatype's bytes.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algo/numeric_types.h"
#include "algo/op_desc.h"
#include "core/result.h"
#include "core/wait.h"
#include "runtime/host/host_executor.h"
#include "transport/conn_info.h"

namespace braid {
namespace testing_util {

// One FIFO: the memory both sides of a connection point at.
struct MemFifo {
  std::vector<char> buff;
  alignas(64) uint64_t head = 0;
  alignas(64) uint64_t tail = 0;
  std::vector<int32_t> sizes;
  uint32_t errorFlag = 0;
  MemFifo(uint32_t stepBytes, uint32_t nSteps) : buff(size_t(stepBytes) * nSteps), sizes(nSteps, -1) {}
  ConnInfo side(int peer, uint32_t stepBytes, uint32_t nSteps) {
    ConnInfo c;
    c.buff = buff.data();
    c.head = &head;
    c.tail = &tail;
    c.sizes = sizes.data();
    c.errorFlag = &errorFlag;
    c.stepBytes = stepBytes;
    c.nSteps = nSteps;
    c.peer = peer;
    c.kind = TransportKind::Shm;
    return c;
  }
};

// All connections of a world of `nranks` ranks: ring FIFOs per channel (r -> r+1) and p2p FIFOs per
// ordered pair.
class MemWorld {
 public:
  MemWorld(int nranks, int nChannels, uint32_t stepBytes, uint32_t nSteps)
      : nranks_(nranks), nChannels_(nChannels), stepBytes_(stepBytes), nSteps_(nSteps) {
    for (int c = 0; c < nChannels * nranks; ++c) ring_.emplace_back(new MemFifo(stepBytes, nSteps));
    for (int c = 0; c < nranks * nranks; ++c) p2p_.emplace_back(new MemFifo(stepBytes, nSteps));
  }
  MemFifo* ring(int channel, int from) { return ring_[size_t(channel) * nranks_ + from].get(); }
  MemFifo* p2p(int from, int to) { return p2p_[size_t(from) * nranks_ + to].get(); }
  int nranks() const { return nranks_; }
  int nChannels() const { return nChannels_; }
  // The rings' order (position -> rank; empty: rank order): each rank's ring sends to the rank after it in
  // `order`, and the executors walk it (HostExecutor::setRingOrder). Set before the providers are made.
  void setRingOrder(const std::vector<int>& order) { order_ = order; }
  const std::vector<int>& ringOrder() const { return order_; }
  int ringNext(int rank) const { return neighbour(rank, 1); }
  int ringPrev(int rank) const { return neighbour(rank, nranks_ - 1); }
  uint32_t stepBytes() const { return stepBytes_; }
  uint32_t nSteps() const { return nSteps_; }

 private:
  int neighbour(int rank, int step) const {
    if (order_.empty()) return (rank + step) % nranks_;
    for (int p = 0; p < nranks_; ++p)
      if (order_[size_t(p)] == rank) return order_[size_t((p + step) % nranks_)];
    return -1;
  }
  int nranks_, nChannels_;
  uint32_t stepBytes_, nSteps_;
  std::vector<int> order_;
  std::vector<std::unique_ptr<MemFifo>> ring_;
  std::vector<std::unique_ptr<MemFifo>> p2p_;
};

class MemProvider : public ConnProvider {
 public:
  MemProvider(MemWorld* w, int rank) : w_(w), rank_(rank) {
    const int n = w->nranks();
    for (int c = 0; c < w->nChannels(); ++c) {
      const int next = w->ringNext(rank), prev = w->ringPrev(rank);
      ringSend_.push_back(w->ring(c, rank)->side(next, w->stepBytes(), w->nSteps()));
      ringRecv_.push_back(w->ring(c, prev)->side(prev, w->stepBytes(), w->nSteps()));
    }
    for (int p = 0; p < n; ++p) {
      p2pSend_.push_back(w->p2p(rank, p)->side(p, w->stepBytes(), w->nSteps()));
      p2pRecv_.push_back(w->p2p(p, rank)->side(p, w->stepBytes(), w->nSteps()));
    }
  }
  int ringChannels() const override { return w_->nranks() > 1 ? w_->nChannels() : 0; }
  ConnInfo* ringSend(int c) override { return &ringSend_[c]; }
  ConnInfo* ringRecv(int c) override { return &ringRecv_[c]; }
  ncclResult_t connectP2p(const int* sendPeers, int nSend, const int* recvPeers, int nRecv) override {
    ++connectCalls;
    for (int i = 0; i < nSend; ++i)
      if (sendPeers[i] == rank_) return recordError(ncclInternalError, "connectP2p asked to connect to self");
    for (int i = 0; i < nRecv; ++i)
      if (recvPeers[i] == rank_) return recordError(ncclInternalError, "connectP2p asked to connect to self");
    lastSendPeers.assign(sendPeers, sendPeers + nSend);
    lastRecvPeers.assign(recvPeers, recvPeers + nRecv);
    return ncclSuccess;
  }
  ConnInfo* p2pSend(int peer, int channel = 0) override { return channel == 0 ? &p2pSend_[peer] : nullptr; }
  ConnInfo* p2pRecv(int peer, int channel = 0) override { return channel == 0 ? &p2pRecv_[peer] : nullptr; }

  int connectCalls = 0;
  std::vector<int> lastSendPeers, lastRecvPeers;

 private:
  MemWorld* w_;
  int rank_;
  std::vector<ConnInfo> ringSend_, ringRecv_, p2pSend_, p2pRecv_;
};

// Runs body(rank, executor, provider) on one thread per rank; each rank has its own executor.
inline void runRanks(MemWorld* world, int nChannels, double timeoutSec,
                     const std::function<void(int, HostExecutor&, MemProvider&)>& body) {
  const int n = world->nranks();
  std::vector<std::thread> threads;
  WaitContext wait;
  wait.timeoutSec = timeoutSec;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      MemProvider prov(world, r);
      HostExecutor exec(&prov, &wait, r, n, nChannels);
      if (!world->ringOrder().empty() && exec.setRingOrder(world->ringOrder()) != ncclSuccess)
        ADD_FAILURE() << "rank " << r << ": setRingOrder: " << pendingError();
      body(r, exec, prov);
    });
  }
  for (auto& t : threads) t.join();
}

// ---- values of any datatype, through double ----
inline void encodeValue(ncclDataType_t t, double v, void* dst) {
  switch (t) {
    case ncclInt8: { int8_t x = int8_t(v); memcpy(dst, &x, 1); break; }
    case ncclUint8: { uint8_t x = uint8_t(v); memcpy(dst, &x, 1); break; }
    case ncclInt32: { int32_t x = int32_t(v); memcpy(dst, &x, 4); break; }
    case ncclUint32: { uint32_t x = uint32_t(v); memcpy(dst, &x, 4); break; }
    case ncclInt64: { int64_t x = int64_t(v); memcpy(dst, &x, 8); break; }
    case ncclUint64: { uint64_t x = uint64_t(v); memcpy(dst, &x, 8); break; }
    case ncclFloat16: { uint16_t x = floatToHalfBits(float(v)); memcpy(dst, &x, 2); break; }
    case ncclFloat32: { float x = float(v); memcpy(dst, &x, 4); break; }
    case ncclFloat64: memcpy(dst, &v, 8); break;
    case ncclBfloat16: { uint16_t x = floatToBf16Bits(float(v)); memcpy(dst, &x, 2); break; }
    case ncclFloat8e4m3: { uint8_t x = doubleToFp8Bits(double(float(v)), true); memcpy(dst, &x, 1); break; }
    case ncclFloat8e5m2: { uint8_t x = doubleToFp8Bits(double(float(v)), false); memcpy(dst, &x, 1); break; }
    default: break;
  }
}

inline double decodeValue(ncclDataType_t t, const void* src) {
  switch (t) {
    case ncclInt8: { int8_t x; memcpy(&x, src, 1); return x; }
    case ncclUint8: { uint8_t x; memcpy(&x, src, 1); return x; }
    case ncclInt32: { int32_t x; memcpy(&x, src, 4); return x; }
    case ncclUint32: { uint32_t x; memcpy(&x, src, 4); return x; }
    case ncclInt64: { int64_t x; memcpy(&x, src, 8); return double(x); }
    case ncclUint64: { uint64_t x; memcpy(&x, src, 8); return double(x); }
    case ncclFloat16: { uint16_t x; memcpy(&x, src, 2); return halfBitsToFloat(x); }
    case ncclFloat32: { float x; memcpy(&x, src, 4); return x; }
    case ncclFloat64: { double x; memcpy(&x, src, 8); return x; }
    case ncclBfloat16: { uint16_t x; memcpy(&x, src, 2); return bf16BitsToFloat(x); }
    case ncclFloat8e4m3: { uint8_t x; memcpy(&x, src, 1); return fp8e4m3BitsToFloat(x); }
    case ncclFloat8e5m2: { uint8_t x; memcpy(&x, src, 1); return fp8e5m2BitsToFloat(x); }
    default: return 0;
  }
}

inline bool isSigned(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclInt32 || t == ncclInt64 || dtypeIsFloat(t);
}

// Relative rounding unit of a floating type (0 for integers).
inline double unitRoundoff(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return 1.0 / 2048;
    case ncclBfloat16: return 1.0 / 256;
    case ncclFloat8e4m3: return 1.0 / 16;
    case ncclFloat8e5m2: return 1.0 / 8;
    case ncclFloat32: return 1.0 / 16777216;
    case ncclFloat64: return 1.1102230246251565e-16;
    default: return 0;
  }
}

constexpr ncclDataType_t kAllTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,    ncclUint32,
                                        ncclInt64,   ncclUint64,  ncclFloat16,  ncclFloat32,
                                        ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

}  // namespace testing_util
}  // namespace braid
