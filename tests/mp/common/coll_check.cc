// Multi-process test harness: one collective case on one rank. See coll_check.h.
#include "mp/common/coll_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "mp/common/dtypes.h"
#include "mp/common/harness.h"

namespace mp {

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "AllReduce";
    case Coll::kBroadcast:
      return "Broadcast";
    case Coll::kBcast:
      return "Bcast";
    case Coll::kReduce:
      return "Reduce";
    case Coll::kAllGather:
      return "AllGather";
    case Coll::kReduceScatter:
      return "ReduceScatter";
    case Coll::kAlltoAll:
      return "AlltoAll";
    case Coll::kGather:
      return "Gather";
    case Coll::kScatter:
      return "Scatter";
    case Coll::kSendRecvRing:
      return "SendRecvRing";
    case Coll::kSendRecvAllPairs:
      return "SendRecvAllPairs";
    case Coll::kSendRecvPairs:
      return "SendRecvPairs";
  }
  return "?";
}

bool collHasOp(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }
bool collHasRoot(Coll c) {
  return c == Coll::kBroadcast || c == Coll::kBcast || c == Coll::kReduce || c == Coll::kGather || c == Coll::kScatter;
}
bool collHasInPlace(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kBroadcast || c == Coll::kReduce || c == Coll::kAllGather ||
         c == Coll::kReduceScatter;
}

const char* opKindName(int k) {
  if (k == kOpPreMulImm) return "premulsum(host-immediate)";
  if (k == kOpPreMulDev) return "premulsum(device-scalar)";
  return opName(k);
}

std::string caseName(const Case& c, int nranks) {
  std::ostringstream os;
  os << collName(c.coll) << " dt=" << typeName(c.dt);
  if (collHasOp(c.coll)) os << " op=" << opKindName(c.opKind);
  os << " count=" << c.count;
  if (collHasRoot(c.coll)) os << " root=" << c.root;
  if (c.inPlace) os << " in-place";
  if (c.misalign) os << " misalign=" << c.misalign;
  os << " nranks=" << nranks;
  return os.str();
}

void GuardedBuf::alloc(size_t bytes, size_t misalignBytes) {
  bytes_ = bytes;
  mis_ = misalignBytes;
  mem_.assign(2 * kGuard + mis_ + bytes, (char)kGuardByte);
}

std::string GuardedBuf::checkGuards() const {
  if (mem_.empty()) return "";  // not allocated (single-buffer cases)
  const unsigned char* m = (const unsigned char*)mem_.data();
  for (size_t i = 0; i < kGuard + mis_; i++) {
    if (m[i] != kGuardByte) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "guard byte %zu bytes BEFORE the buffer overwritten (0x%02x)", kGuard + mis_ - i,
                    m[i]);
      return buf;
    }
  }
  for (size_t i = kGuard + mis_ + bytes_; i < mem_.size(); i++) {
    if (m[i] != kGuardByte) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "guard byte %zu bytes AFTER the buffer end overwritten (0x%02x)",
                    i - (kGuard + mis_ + bytes_), m[i]);
      return buf;
    }
  }
  return "";
}

namespace {

int g_budget = 1 << 30;
int g_suppressed = 0;

// Consumes one unit of the report budget; false when spent (the failure is only counted).
bool mayReport() {
  if (g_budget > 0) {
    g_budget--;
    return true;
  }
  g_suppressed++;
  return false;
}

// Test inputs chosen so that every reduction result is exact in the type (sums of small integers, products
// of powers of two, max/min of any finite value), except Avg of floats (bounded by a tolerance), and so
// that no input or result equals the poison pattern.
uint64_t genValue(ncclDataType_t dt, int opKind, uint64_t seed, int r, size_t j, uint64_t poison) {
  uint64_t h = hashOf(seed, (uint64_t)dt * 16 + (uint64_t)(opKind + 1), (uint64_t)r, (uint64_t)j);
  size_t s = typeSize(dt);
  auto range = [&](int64_t lo, int64_t hi) { return lo + (int64_t)(h % (uint64_t)(hi - lo + 1)); };
  if (!isFloatType(dt)) {
    bool sgn = isSignedInt(dt);
    switch (opKind) {
      case ncclSum:
      case ncclMax:
      case ncclMin:
      case -1:
        if (s == 1 && (opKind == ncclSum)) return truncBits(dt, (uint64_t)(sgn ? range(-20, 20) : range(0, 25)));
        h = truncBits(dt, h);
        return h == poison ? h ^ 1 : h;
      case ncclProd:
        if (s == 1) {
          static const int64_t kS[4] = {-2, -1, 1, 2};
          return truncBits(dt, (uint64_t)(sgn ? kS[h % 4] : (int64_t)(1 + h % 2)));
        }
        return truncBits(dt, h | 1);
      case ncclAvg:
        if (s == 1) return truncBits(dt, (uint64_t)(sgn ? range(-20, 20) : range(0, 25)));
        if (s == 4) return truncBits(dt, (uint64_t)(sgn ? range(-1000000, 1000000) : range(0, 2000000)));
        return (uint64_t)(sgn ? range(-1000000000000000ll, 1000000000000000ll) : range(0, 2000000000000000ll));
      default:  // PreMulSum, scalar 3
        if (s == 1) return truncBits(dt, (uint64_t)(sgn ? range(-8, 8) : range(0, 8)));
        return truncBits(dt, h);
    }
  }
  switch (opKind) {
    case -1:
    case ncclMax:
    case ncclMin:
      for (;;) {  // any finite value (no -0 for max/min: its order against +0 is not defined)
        uint64_t b = truncBits(dt, h);
        double v = decodeFloat(dt, b);
        bool negZero = (v == 0 && std::signbit(v));
        if (std::isfinite(v) && b != poison && !(opKind != -1 && negZero)) return b;
        h = mix64(h);
      }
    case ncclProd: {
      static const double kP[6] = {-2, -1, -0.5, 0.5, 1, 2};
      return encodeFloat(dt, kP[h % 6]);
    }
    default: {  // Sum, Avg, PreMulSum (scalar 2): small integers whose partial sums stay exact
      switch (dt) {
        case ncclFloat8e4m3:
          return encodeFloat(dt, (double)range(-3, 3));
        case ncclFloat8e5m2:
          return encodeFloat(dt, (double)range(-1, 1));
        case ncclFloat32:
        case ncclFloat64:
          return encodeFloat(dt, (double)range(-400, 400) / 4);
        default:
          return encodeFloat(dt, (double)range(-8, 8));
      }
    }
  }
}

uint64_t scalarBits(ncclDataType_t dt, bool good) {
  if (isFloatType(dt)) return encodeFloat(dt, good ? 2.0 : 5.0);
  return truncBits(dt, good ? 3 : 5);
}

}  // namespace

CaseRun::CaseRun(const Case& c, int rank, int nranks) : c_(c), rank_(rank), n_(nranks), es_(typeSize(c.dt)) {}

uint64_t CaseRun::poison() const {
  if (isFloatType(c_.dt)) return truncBits(c_.dt, ~0ull);  // NaN in every float format
  if (es_ == 1) return 0x80;
  return truncBits(c_.dt, 0xA5A5A5A5A5A5A5A5ull);
}

void CaseRun::fillPoison(char* p, size_t elems) const {
  uint64_t v = poison();
  for (size_t i = 0; i < elems; i++) storeElem(p, c_.dt, i, v);
}

uint64_t CaseRun::input(int r, size_t j) const {
  return genValue(c_.dt, collHasOp(c_.coll) ? c_.opKind : -1, c_.seed, r, j, poison());
}

size_t CaseRun::pairCount(int from, int to) const {
  return c_.count == 0 ? 0 : c_.count + (size_t)((from * 3 + to * 5) % 7);
}

size_t CaseRun::pairOffset(int from, int to) const {
  size_t off = 0;
  for (int q = 0; q < to; q++) off += pairCount(from, q);
  return off;
}

CaseRun::Exp CaseRun::reduceAt(size_t j) const {
  Exp e;
  ncclDataType_t dt = c_.dt;
  int k = c_.opKind;
  if (!isFloatType(dt)) {
    bool sgn = isSignedInt(dt);
    uint64_t acc = 0;
    if (k == ncclSum || k == kOpPreMulImm || k == kOpPreMulDev) {
      uint64_t m = (k == ncclSum) ? 1 : scalarBits(dt, true);
      for (int r = 0; r < n_; r++) acc += input(r, j) * m;
    } else if (k == ncclProd) {
      acc = 1;
      for (int r = 0; r < n_; r++) acc *= input(r, j);
    } else if (k == ncclMax || k == ncclMin) {
      acc = input(0, j);
      for (int r = 1; r < n_; r++) {
        uint64_t v = input(r, j);
        bool greater = sgn ? intAsSigned(dt, v) > intAsSigned(dt, acc) : truncBits(dt, v) > truncBits(dt, acc);
        if (greater == (k == ncclMax) && v != acc) acc = v;
      }
    } else {  // Avg: integer sum (no overflow by choice of inputs), then division truncating toward zero
      if (sgn) {
        int64_t s = 0;
        for (int r = 0; r < n_; r++) s += intAsSigned(dt, input(r, j));
        acc = (uint64_t)(s / n_);
      } else {
        uint64_t s = 0;
        for (int r = 0; r < n_; r++) s += truncBits(dt, input(r, j));
        acc = s / (uint64_t)n_;
      }
    }
    e.kind = Exp::kBits;
    e.bits = truncBits(dt, acc);
    return e;
  }
  e.kind = Exp::kFloat;
  double acc = 0, absSum = 0;
  if (k == ncclProd) acc = 1;
  for (int r = 0; r < n_; r++) {
    double v = decodeFloat(dt, input(r, j));
    switch (k) {
      case ncclSum:
        acc += v;
        break;
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = r == 0 ? v : std::max(acc, v);
        break;
      case ncclMin:
        acc = r == 0 ? v : std::min(acc, v);
        break;
      case ncclAvg:
        acc += v / n_;
        absSum += std::fabs(v) / n_;
        break;
      default:
        acc += 2.0 * v;
        break;  // PreMulSum, scalar 2
    }
  }
  e.val = acc;
  e.tol = (k == ncclAvg) ? 2 * unitRoundoff(dt) * (n_ + 2) * absSum + minSubnormal(dt) : 0;
  return e;
}

CaseRun::Exp CaseRun::expectAt(size_t i) const {
  Exp e;
  e.kind = Exp::kBits;
  const size_t c = c_.count;
  const int r = rank_, n = n_;
  switch (c_.coll) {
    case Coll::kAllReduce:
      return reduceAt(i);
    case Coll::kReduce:
      if (r == c_.root) return reduceAt(i);
      e.bits = c_.inPlace ? input(r, i) : poison();
      return e;
    case Coll::kBroadcast:
    case Coll::kBcast:
      e.bits = input(c_.root, i);
      return e;
    case Coll::kAllGather:
      e.bits = input((int)(i / c), i % c);
      return e;
    case Coll::kReduceScatter:
      return reduceAt((size_t)r * c + i);
    case Coll::kAlltoAll:
      e.bits = input((int)(i / c), (size_t)r * c + i % c);
      return e;
    case Coll::kGather:
      e.bits = (r == c_.root) ? input((int)(i / c), i % c) : poison();
      return e;
    case Coll::kScatter:
      e.bits = input(c_.root, (size_t)r * c + i);
      return e;
    case Coll::kSendRecvRing:
      e.bits = input((r - 1 + n) % n, i);
      return e;
    case Coll::kSendRecvPairs: {
      int partner = (r ^ 1) < n ? (r ^ 1) : r;
      e.bits = input(partner, i);
      return e;
    }
    case Coll::kSendRecvAllPairs: {
      size_t off = 0;
      for (int p = 0; p < n; p++) {
        size_t cnt = pairCount(p, r);
        if (i < off + cnt) {
          e.bits = input(p, pairOffset(p, r) + (i - off));
          return e;
        }
        off += cnt;
      }
      e.kind = Exp::kAny;
      return e;
    }
  }
  e.kind = Exp::kAny;
  return e;
}

void CaseRun::prepare() {
  const size_t c = c_.count;
  const int n = n_, r = rank_;
  size_t mis = (size_t)c_.misalign * es_;
  switch (c_.coll) {
    case Coll::kAllGather:
    case Coll::kGather:
      sendElems_ = c;
      recvElems_ = (size_t)n * c;
      break;
    case Coll::kReduceScatter:
    case Coll::kScatter:
      sendElems_ = (size_t)n * c;
      recvElems_ = c;
      break;
    case Coll::kAlltoAll:
      sendElems_ = recvElems_ = (size_t)n * c;
      break;
    case Coll::kSendRecvAllPairs:
      sendElems_ = recvElems_ = 0;
      for (int q = 0; q < n; q++) {
        sendElems_ += pairCount(r, q);
        recvElems_ += pairCount(q, r);
      }
      break;
    default:
      sendElems_ = recvElems_ = c;
      break;
  }
  bool single = c_.inPlace || c_.coll == Coll::kBcast;
  if (single) {
    switch (c_.coll) {
      case Coll::kAllGather:
        a_.alloc((size_t)n * c * es_, mis);
        recv_ = a_.data();
        send_ = recv_ + (size_t)r * c * es_;
        fillPoison(recv_, (size_t)n * c);
        for (size_t j = 0; j < c; j++) storeElem(send_, c_.dt, j, input(r, j));
        break;
      case Coll::kReduceScatter:
        a_.alloc((size_t)n * c * es_, mis);
        send_ = a_.data();
        recv_ = send_ + (size_t)r * c * es_;
        for (size_t j = 0; j < (size_t)n * c; j++) storeElem(send_, c_.dt, j, input(r, j));
        break;
      case Coll::kBroadcast:
      case Coll::kBcast:
        a_.alloc(c * es_, mis);
        send_ = recv_ = a_.data();
        if (r == c_.root) {
          for (size_t j = 0; j < c; j++) storeElem(send_, c_.dt, j, input(r, j));
        } else {
          fillPoison(recv_, c);
        }
        break;
      default:  // AllReduce, Reduce
        a_.alloc(c * es_, mis);
        send_ = recv_ = a_.data();
        for (size_t j = 0; j < c; j++) storeElem(send_, c_.dt, j, input(r, j));
        break;
    }
    return;
  }
  twoBufs_ = true;
  a_.alloc(sendElems_ * es_, mis);
  b_.alloc(recvElems_ * es_, mis);
  send_ = a_.data();
  recv_ = b_.data();
  for (size_t j = 0; j < sendElems_; j++) storeElem(send_, c_.dt, j, input(r, j));
  fillPoison(recv_, recvElems_);
  sendCopy_.assign(send_, send_ + sendElems_ * es_);
}

ncclResult_t CaseRun::issue(ncclComm_t comm, bool inGroup) {
  const std::string name = caseName(c_, n_);
  ncclRedOp_t op = (ncclRedOp_t)c_.opKind;
  if (collHasOp(c_.coll) && (c_.opKind == kOpPreMulImm || c_.opKind == kOpPreMulDev)) {
    bool imm = c_.opKind == kOpPreMulImm;
    // Host-immediate: the value at creation counts; "device": the value when the op runs counts.
    scalarVar_ = scalarBits(c_.dt, imm);
    ncclResult_t res =
        ncclRedOpCreatePreMulSum(&op_, &scalarVar_, c_.dt, imm ? ncclScalarHostImmediate : ncclScalarDevice, comm);
    if (res != ncclSuccess) {
      ADD_FAILURE() << name << ": ncclRedOpCreatePreMulSum -> " << ncclGetErrorString(res) << ": " << lastError(comm);
      return res;
    }
    if ((int)op_ < (int)ncclNumOps) {
      ADD_FAILURE() << name << ": ncclRedOpCreatePreMulSum returned op " << (int)op_ << " (< ncclNumOps)";
    }
    createdOp_ = true;
    op = op_;
    scalarVar_ = scalarBits(c_.dt, !imm);
  }
  const size_t c = c_.count;
  const ncclDataType_t dt = c_.dt;
  const int r = rank_, n = n_;
  ncclResult_t res = ncclSuccess;
  const char* what = "";
  auto call = [&](const char* w, ncclResult_t x) {
    if (res == ncclSuccess && x != ncclSuccess) {
      res = x;
      what = w;
    }
  };
  switch (c_.coll) {
    case Coll::kAllReduce:
      call("ncclAllReduce", ncclAllReduce(send_, recv_, c, dt, op, comm, nullptr));
      break;
    case Coll::kBroadcast:
      call("ncclBroadcast", ncclBroadcast(send_, recv_, c, dt, c_.root, comm, nullptr));
      break;
    case Coll::kBcast:
      call("ncclBcast", ncclBcast(recv_, c, dt, c_.root, comm, nullptr));
      break;
    case Coll::kReduce:
      call("ncclReduce", ncclReduce(send_, recv_, c, dt, op, c_.root, comm, nullptr));
      break;
    case Coll::kAllGather:
      call("ncclAllGather", ncclAllGather(send_, recv_, c, dt, comm, nullptr));
      break;
    case Coll::kReduceScatter:
      call("ncclReduceScatter", ncclReduceScatter(send_, recv_, c, dt, op, comm, nullptr));
      break;
    case Coll::kAlltoAll:
      call("ncclAlltoAll", ncclAlltoAll(send_, recv_, c, dt, comm, nullptr));
      break;
    case Coll::kGather:
      call("ncclGather", ncclGather(send_, recv_, c, dt, c_.root, comm, nullptr));
      break;
    case Coll::kScatter:
      call("ncclScatter", ncclScatter(send_, recv_, c, dt, c_.root, comm, nullptr));
      break;
    case Coll::kSendRecvRing:
      if (!inGroup) call("ncclGroupStart", ncclGroupStart());
      call("ncclSend", ncclSend(send_, c, dt, (r + 1) % n, comm, nullptr));
      call("ncclRecv", ncclRecv(recv_, c, dt, (r - 1 + n) % n, comm, nullptr));
      if (!inGroup) call("ncclGroupEnd", ncclGroupEnd());
      break;
    case Coll::kSendRecvAllPairs:
      if (!inGroup) call("ncclGroupStart", ncclGroupStart());
      {
        size_t roff = 0;
        for (int q = 0; q < n; q++) {
          // Interleave sends and receives in a rank-dependent order: the group must not care.
          int p = (r + q) % n;
          call("ncclSend", ncclSend(send_ + pairOffset(r, p) * es_, pairCount(r, p), dt, p, comm, nullptr));
        }
        for (int p = 0; p < n; p++) {
          call("ncclRecv", ncclRecv(recv_ + roff * es_, pairCount(p, r), dt, p, comm, nullptr));
          roff += pairCount(p, r);
        }
      }
      if (!inGroup) call("ncclGroupEnd", ncclGroupEnd());
      break;
    case Coll::kSendRecvPairs: {
      int partner = r ^ 1;
      if (partner >= n) {
        call("ncclGroupStart", ncclGroupStart());
        call("ncclSend", ncclSend(send_, c, dt, r, comm, nullptr));
        call("ncclRecv", ncclRecv(recv_, c, dt, r, comm, nullptr));
        call("ncclGroupEnd", ncclGroupEnd());
      } else if ((r & 1) == 0) {
        call("ncclSend", ncclSend(send_, c, dt, partner, comm, nullptr));
        call("ncclRecv", ncclRecv(recv_, c, dt, partner, comm, nullptr));
      } else {
        call("ncclRecv", ncclRecv(recv_, c, dt, partner, comm, nullptr));
        call("ncclSend", ncclSend(send_, c, dt, partner, comm, nullptr));
      }
      break;
    }
  }
  if (res != ncclSuccess) {
    ADD_FAILURE() << name << " on rank " << r << ": " << what << " -> " << ncclGetErrorString(res) << ": "
                  << lastError(comm);
  }
  return res;
}

bool CaseRun::check(int maxReports) {
  const std::string name = caseName(c_, n_);
  bool ok = true;
  size_t bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < recvElems_; i++) {
    Exp e = expectAt(i);
    if (e.kind == Exp::kAny) continue;
    uint64_t got = loadElem(recv_, c_.dt, i);
    bool match;
    if (e.kind == Exp::kBits) {
      match = truncBits(c_.dt, got) == truncBits(c_.dt, e.bits);
    } else {
      double g = decodeFloat(c_.dt, got);
      match = !std::isnan(g) && std::fabs(g - e.val) <= e.tol;
    }
    if (!match) {
      if ((int)bad < maxReports) {
        os << "\n  element " << i << ": got " << formatElem(c_.dt, got) << ", expected ";
        if (e.kind == Exp::kBits) {
          os << formatElem(c_.dt, e.bits);
          if (e.bits == poison()) os << " (untouched poison)";
        } else {
          os << e.val;
          if (e.tol > 0) os << " +- " << e.tol;
        }
        if (truncBits(c_.dt, got) == poison()) os << " [output left at the poison value: never written]";
      }
      bad++;
    }
  }
  if (bad) {
    ok = false;
    if (mayReport())
      ADD_FAILURE() << name << " on rank " << rank_ << ": " << bad << " of " << recvElems_ << " output elements wrong"
                    << os.str();
  }
  if (!sendCopy_.empty() && std::memcmp(sendCopy_.data(), send_, sendCopy_.size()) != 0) {
    size_t first = 0;
    while (first < sendCopy_.size() && sendCopy_[first] == send_[first]) first++;
    ok = false;
    if (mayReport())
      ADD_FAILURE() << name << " on rank " << rank_ << ": the send buffer was modified (first changed byte " << first
                    << " of " << sendCopy_.size() << ")";
  }
  for (GuardedBuf* g : {&a_, &b_}) {
    std::string s = g->checkGuards();
    if (!s.empty()) {
      ok = false;
      if (mayReport())
        ADD_FAILURE() << name << " on rank " << rank_ << ": " << (g == &a_ ? "send/in-place" : "recv")
                      << " buffer: " << s;
    }
  }
  return ok;
}

void CaseRun::simulate() {
  for (size_t i = 0; i < recvElems_; i++) {
    Exp e = expectAt(i);
    if (e.kind == Exp::kBits) storeElem(recv_, c_.dt, i, e.bits);
    if (e.kind == Exp::kFloat) storeElem(recv_, c_.dt, i, encodeFloat(c_.dt, e.val));
  }
}

bool CaseRun::corrupt(Corruption m) {
  switch (m) {
    case Corruption::kOneElement:
    case Corruption::kUnwritten:
      for (size_t k = 0; k < recvElems_; k++) {
        size_t i = (recvElems_ / 2 + k) % recvElems_;
        Exp e = expectAt(i);
        if (e.kind == Exp::kAny || (e.kind == Exp::kBits && e.bits == poison())) continue;
        if (e.kind == Exp::kFloat && e.tol > 0) continue;  // a tolerance could absorb the damage
        uint64_t cur = loadElem(recv_, c_.dt, i);
        storeElem(recv_, c_.dt, i, m == Corruption::kUnwritten ? poison() : (cur ^ 1));
        return true;
      }
      return false;
    case Corruption::kGuardBefore: {
      GuardedBuf& g = twoBufs_ ? b_ : a_;
      g.data()[-1] ^= 0x7f;
      return true;
    }
    case Corruption::kGuardAfter: {
      GuardedBuf& g = twoBufs_ ? b_ : a_;
      g.data()[g.bytes()] ^= 0x7f;
      return true;
    }
    case Corruption::kSendBuffer:
      if (sendCopy_.empty()) return false;
      send_[sendCopy_.size() - 1] ^= 0x10;
      return true;
  }
  return false;
}

void CaseRun::release(ncclComm_t comm) {
  if (!createdOp_) return;
  createdOp_ = false;
  ncclResult_t res = ncclRedOpDestroy(op_, comm);
  if (res != ncclSuccess) {
    ADD_FAILURE() << caseName(c_, n_) << ": ncclRedOpDestroy(" << (int)op_ << ") -> " << ncclGetErrorString(res) << ": "
                  << lastError(comm);
  }
}

void setReportBudget(int cases) { g_budget = cases; }
int suppressedFailures() { return g_suppressed; }
void reportSuppressed() {
  if (g_suppressed) ADD_FAILURE() << g_suppressed << " more failing cases not listed (report budget spent)";
}

bool runCase(ncclComm_t comm, int rank, int nranks, const Case& c) {
  CaseRun run(c, rank, nranks);
  setStatus("%s", caseName(c, nranks).c_str());
  run.prepare();
  ncclResult_t res = run.issue(comm, false);
  if (res != ncclSuccess) return false;
  run.check();
  run.release(comm);
  return true;
}

}  // namespace mp
