// The measurement loop of the perf tools (nccl-tests' TimeTest/BenchTime): warm-up, back-to-back timed
// operations on shifting buffer windows, the exact check, and the per-row aggregation over all ranks.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "perf_data.h"
#include "perf_runtime.h"
#include "perf_types.h"

namespace braid {
namespace perf {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Measure {
  ncclDataType_t type = ncclFloat32;
  OpKind op = OpKind::Sum;
  bool hasOp = false;
  int root = -1;
  size_t es = 4;
  CollCounts counts;
  size_t totalBytes = 0;  // larger of send and receive data, bytes
};

ncclRedOp_t builtinOp(OpKind o) {
  switch (o) {
    case OpKind::Sum:
      return ncclSum;
    case OpKind::Prod:
      return ncclProd;
    case OpKind::Max:
      return ncclMax;
    case OpKind::Min:
      return ncclMin;
    case OpKind::Avg:
      return ncclAvg;
    default:
      return ncclSum;
  }
}

class Runner {
 public:
  Runner(Process* p, int thread) : p_(*p), a_(p->args), thread_(thread) {
    for (int i = thread * a_.nGpus; i < (thread + 1) * a_.nGpus; ++i) mine_.push_back(&p->locals[i]);
    main_ = p->proc == 0 && thread == 0;
  }

  void run(ThreadResult* out);

 private:
  Process& p_;
  const PerfArgs& a_;
  int thread_;
  bool main_ = false;
  std::vector<LocalRank*> mine_;
  uint64_t rep_ = 0;
  ThreadResult* out_ = nullptr;

  void check(LocalRank* l, ncclResult_t r, const char* what) { checkNccl(p_, l->rank, r, l->comm, what); }
  void check(LocalRank* l, cudaError_t e, const char* what) { checkCuda(p_, l->rank, e, what); }

  // All-gathers `bytes` (<= kExchangeBytes) from each rank; `mine` holds one record per local rank of this
  // thread, back to back. Returns nranks records.
  std::vector<unsigned char> exchange(const void* mine, size_t bytes);
  std::vector<double> exchangeDoubles(const std::vector<double>& perLocal, size_t k);
  void barrier() { exchangeDoubles(std::vector<double>(mine_.size(), 0.0), 1); }

  Measure measure(size_t size, ncclDataType_t type, OpKind op, int root) const;
  void runColl(LocalRank* l, const Measure& m, bool inPlace, size_t shift);
  void startColl(const Measure& m, bool inPlace, int iter);
  void completeColl();
  DataSpec spec(const Measure& m, bool inPlace, uint64_t seed) const;
  void initData(const Measure& m, bool inPlace, uint64_t seed);
  std::vector<double> checkData(const Measure& m, bool inPlace, uint64_t seed);
  Placement bench(const Measure& m, bool inPlace);
  void timeTest(ncclDataType_t type, OpKind op, int root);
};

std::vector<unsigned char> Runner::exchange(const void* mine, size_t bytes) {
  const auto* src = static_cast<const unsigned char*>(mine);
  if (mine_.size() > 1) check(mine_[0], ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < mine_.size(); ++i) {
    LocalRank* l = mine_[i];
    if (p_.hostBuffers) {
      std::memcpy(l->xchgSend, src + i * bytes, bytes);
    } else {
      check(l, cudaSetDevice(l->device), "cudaSetDevice");
      check(l, cudaMemcpyAsync(l->xchgSend, src + i * bytes, bytes, cudaMemcpyHostToDevice, l->stream),
            "cudaMemcpyAsync");
    }
    check(l, ncclAllGather(l->xchgSend, l->xchgRecv, bytes, ncclUint8, l->comm, l->stream), "ncclAllGather(exchange)");
  }
  if (mine_.size() > 1) check(mine_[0], ncclGroupEnd(), "ncclGroupEnd");
  std::vector<unsigned char> all(bytes * static_cast<size_t>(p_.nranks));
  if (p_.hostBuffers) {
    std::memcpy(all.data(), mine_[0]->xchgRecv, all.size());
  } else {
    completeColl();
    LocalRank* l = mine_[0];
    check(l, cudaSetDevice(l->device), "cudaSetDevice");
    check(l, cudaMemcpyAsync(all.data(), l->xchgRecv, all.size(), cudaMemcpyDeviceToHost, l->stream),
          "cudaMemcpyAsync");
    check(l, cudaStreamSynchronize(l->stream), "cudaStreamSynchronize");
  }
  noteProgress(p_);
  return all;
}

std::vector<double> Runner::exchangeDoubles(const std::vector<double>& perLocal, size_t k) {
  std::vector<unsigned char> raw = exchange(perLocal.data(), k * sizeof(double));
  std::vector<double> all(k * static_cast<size_t>(p_.nranks));
  std::memcpy(all.data(), raw.data(), raw.size());
  return all;
}

Measure Runner::measure(size_t size, ncclDataType_t type, OpKind op, int root) const {
  Measure m;
  m.type = type;
  m.op = op;
  m.hasOp = collInfo(p_.coll).hasOp;
  m.root = root;
  m.es = typeSize(type);
  m.counts = collCounts(p_.coll, size / m.es, m.es, p_.nranks);
  m.totalBytes = collBytes(m.counts, m.es);
  return m;
}

// BRAID_PERF_A2A_P2P=1: all-to-all as grouped send/recv (see runColl).
static bool a2aAsSendRecv() {
  static const bool on = [] {
    const char* v = std::getenv("BRAID_PERF_A2A_P2P");
    return v && std::atoi(v) != 0;
  }();
  return on;
}

void Runner::runColl(LocalRank* l, const Measure& m, bool inPlace, size_t shift) {
  const size_t pc = m.counts.paramCount;
  char* sendBase = inPlace ? l->recv : l->send;
  char* send = sendBase + shift + (inPlace ? static_cast<size_t>(l->rank) * m.counts.sendInplaceOffset * m.es : 0);
  char* recv = l->recv + shift + (inPlace ? static_cast<size_t>(l->rank) * m.counts.recvInplaceOffset * m.es : 0);
  ncclRedOp_t op = ncclSum;
  bool customOp = false;
  if (m.hasOp) {
    if (m.op == OpKind::MulSum) {
      unsigned char scalar[8] = {0};
      encodeInt(m.type, mulsumScalar(l->rank), scalar);
      check(l, ncclRedOpCreatePreMulSum(&op, scalar, m.type, ncclScalarHostImmediate, l->comm),
            "ncclRedOpCreatePreMulSum");
      customOp = true;
    } else {
      op = builtinOp(m.op);
    }
  }
  ncclComm_t c = l->comm;
  cudaStream_t s = l->stream;
  ncclResult_t r = ncclSuccess;
  const char* what = collInfo(p_.coll).name;
  switch (p_.coll) {
    case Coll::AllReduce:
      r = ncclAllReduce(send, recv, pc, m.type, op, c, s);
      break;
    case Coll::AllGather:
      r = ncclAllGather(send, recv, pc, m.type, c, s);
      break;
    case Coll::ReduceScatter:
      r = ncclReduceScatter(send, recv, pc, m.type, op, c, s);
      break;
    case Coll::Broadcast:
      r = ncclBroadcast(send, recv, pc, m.type, m.root, c, s);
      break;
    case Coll::Reduce:
      r = ncclReduce(send, recv, pc, m.type, op, m.root, c, s);
      break;
    case Coll::AlltoAll:
      if (a2aAsSendRecv() && !inPlace) {
        // As nccl-tests builds it: one grouped send and receive per peer. Compares a library's native
        // all-to-all with its own p2p path (out of place only: in place the sends would read overwritten data).
        const int n = p_.nranks;
        const size_t peerBytes = pc * m.es;
        check(l, ncclGroupStart(), "ncclGroupStart");
        for (int q = 0; q < n; ++q) {
          check(l, ncclSend(send + q * peerBytes, pc, m.type, q, c, s), "ncclSend");
          check(l, ncclRecv(recv + q * peerBytes, pc, m.type, q, c, s), "ncclRecv");
        }
        r = ncclGroupEnd();
        what = "ncclGroupEnd(all-to-all as send/recv)";
      } else {
        r = ncclAlltoAll(send, recv, pc, m.type, c, s);
      }
      break;
    case Coll::Gather:
      r = ncclGather(send, recv, pc, m.type, m.root, c, s);
      break;
    case Coll::Scatter:
      r = ncclScatter(send, recv, pc, m.type, m.root, c, s);
      break;
    case Coll::SendRecv: {
      const int n = p_.nranks;
      check(l, ncclGroupStart(), "ncclGroupStart");
      check(l, ncclSend(send, pc, m.type, (l->rank + 1) % n, c, s), "ncclSend");
      check(l, ncclRecv(recv, pc, m.type, (l->rank - 1 + n) % n, c, s), "ncclRecv");
      r = ncclGroupEnd();
      what = "ncclGroupEnd(send/recv)";
      break;
    }
  }
  check(l, r, what);
  if (customOp) check(l, ncclRedOpDestroy(op, c), "ncclRedOpDestroy");
}

void Runner::startColl(const Measure& m, bool inPlace, int iter) {
  // Move the buffer window every iteration (as nccl-tests), so back-to-back operations do not reuse caches.
  const size_t total = m.totalBytes;
  const size_t steps = total ? std::max<size_t>(mine_[0]->bufBytes / total, 1) : 1;
  const size_t shift = total * (static_cast<size_t>(iter) % steps);
  if (mine_.size() > 1) check(mine_[0], ncclGroupStart(), "ncclGroupStart");
  for (LocalRank* l : mine_) runColl(l, m, inPlace, shift);
  if (mine_.size() > 1) check(mine_[0], ncclGroupEnd(), "ncclGroupEnd");
  if (a_.blocking) {
    completeColl();
    barrier();
  }
  if (p_.hostBuffers) noteProgress(p_);
}

void Runner::completeColl() {
  if (p_.hostBuffers) return;  // host communicators finish every operation before returning
  std::vector<bool> done(mine_.size(), false);
  size_t remaining = mine_.size();
  while (remaining) {
    bool idle = true;
    for (size_t i = 0; i < mine_.size(); ++i) {
      if (done[i]) continue;
      LocalRank* l = mine_[i];
      cudaError_t e = cudaStreamQuery(l->stream);
      if (e == cudaSuccess) {
        done[i] = true;
        --remaining;
        idle = false;
        continue;
      }
      if (e != cudaErrorNotReady) check(l, e, "cudaStreamQuery");
      ncclResult_t async = ncclSuccess;
      check(l, ncclCommGetAsyncError(l->comm, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess) check(l, async, "asynchronous communicator error");
    }
    if (idle) sched_yield();
  }
  noteProgress(p_);
}

DataSpec Runner::spec(const Measure& m, bool inPlace, uint64_t seed) const {
  DataSpec s;
  s.coll = p_.coll;
  s.type = m.type;
  s.op = m.op;
  s.nranks = p_.nranks;
  s.root = m.root;
  s.seed = seed;
  s.counts = m.counts;
  s.inPlace = inPlace;
  return s;
}

void Runner::initData(const Measure& m, bool inPlace, uint64_t seed) {
  const DataSpec s = spec(m, inPlace, seed);
  const size_t regionBytes = std::max(m.counts.sendCount, m.counts.recvCount) * m.es;
  const size_t inputBytes = m.counts.sendCount * m.es;
  for (LocalRank* l : mine_) {
    const size_t inputOffset = inPlace ? static_cast<size_t>(l->rank) * m.counts.sendInplaceOffset * m.es : 0;
    char* input = (inPlace ? l->recv : l->send) + inputOffset;
    if (p_.hostBuffers) {
      std::memset(l->recv, kSentinelByte, regionBytes);
      fillInput(s, l->rank, input, m.counts.sendCount);
    } else {
      check(l, cudaSetDevice(l->device), "cudaSetDevice");
      check(l, cudaMemsetAsync(l->recv, kSentinelByte, regionBytes, l->stream), "cudaMemsetAsync");
      l->stage.resize(std::max<size_t>(inputBytes, 1));
      fillInput(s, l->rank, l->stage.data(), m.counts.sendCount);
      check(l, cudaMemcpyAsync(input, l->stage.data(), inputBytes, cudaMemcpyHostToDevice, l->stream),
            "cudaMemcpyAsync");
      check(l, cudaStreamSynchronize(l->stream), "cudaStreamSynchronize");
    }
  }
  noteProgress(p_);  // -T: filling large buffers is work, not a stall
}

// Wrong elements per local rank.
std::vector<double> Runner::checkData(const Measure& m, bool inPlace, uint64_t seed) {
  const DataSpec s = spec(m, inPlace, seed);
  const size_t outBytes = m.counts.recvCount * m.es;
  std::vector<double> wrong;
  char what[256];
  std::snprintf(what, sizeof(what), "%s: %s %zu B %s %s root %d", p_.tool.c_str(),
                inPlace ? "in-place" : "out-of-place", m.totalBytes, typeName(m.type),
                m.hasOp ? opKindName(m.op) : "none", m.root);
  for (LocalRank* l : mine_) {
    char* out = l->recv + (inPlace ? static_cast<size_t>(l->rank) * m.counts.recvInplaceOffset * m.es : 0);
    void* host = out;
    if (!p_.hostBuffers) {
      check(l, cudaSetDevice(l->device), "cudaSetDevice");
      l->stage.resize(std::max<size_t>(outBytes, 1));
      check(l, cudaMemcpyAsync(l->stage.data(), out, outBytes, cudaMemcpyDeviceToHost, l->stream), "cudaMemcpyAsync");
      check(l, cudaStreamSynchronize(l->stream), "cudaStreamSynchronize");
      host = l->stage.data();
    }
    if (p_.corrupt && m.counts.recvCount > 0 && l->rank == corruptRank(p_.coll, p_.nranks, m.root)) {
      corruptElement(s, host);  // BRAID_PERF_CORRUPT=1: prove the check catches a bad element
    }
    wrong.push_back(static_cast<double>(checkOutput(s, l->rank, host, what)));
    noteProgress(p_);
  }
  return wrong;
}

Placement Runner::bench(const Measure& m, bool inPlace) {
  const bool checked = a_.check > 0 && (!inPlace || collInfo(p_.coll).checkInPlace);
  if (a_.check) initData(m, inPlace, 99);
  startColl(m, inPlace, 0);
  completeColl();
  barrier();

  const int ops = a_.iters * a_.aggIters;
  const bool graph = a_.graphLaunches > 0 && !p_.hostBuffers;
  std::vector<cudaGraph_t> graphs(mine_.size());
  std::vector<cudaGraphExec_t> execs(mine_.size());
  if (graph) {
    for (LocalRank* l : mine_)
      check(l, cudaStreamBeginCapture(l->stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  }
  Clock::time_point t0 = Clock::now();
  for (int iter = 0; iter < a_.iters; ++iter) {
    if (a_.aggIters > 1) check(mine_[0], ncclGroupStart(), "ncclGroupStart");
    for (int agg = 0; agg < a_.aggIters; ++agg) startColl(m, inPlace, iter * a_.aggIters + agg);
    if (a_.aggIters > 1) check(mine_[0], ncclGroupEnd(), "ncclGroupEnd");
  }
  if (graph) {
    // End every capture before instantiating: instantiation is refused while this thread still captures.
    for (size_t i = 0; i < mine_.size(); ++i)
      check(mine_[i], cudaStreamEndCapture(mine_[i]->stream, &graphs[i]), "cudaStreamEndCapture");
    for (size_t i = 0; i < mine_.size(); ++i)
      check(mine_[i], cudaGraphInstantiate(&execs[i], graphs[i], 0), "cudaGraphInstantiate");
    barrier();
    t0 = Clock::now();
    for (int g = 0; g < a_.graphLaunches; ++g)
      for (size_t i = 0; i < mine_.size(); ++i)
        check(mine_[i], cudaGraphLaunch(execs[i], mine_[i]->stream), "cudaGraphLaunch");
  }
  double cpuSec = secondsSince(t0) / ops;
  completeColl();
  double sec = secondsSince(t0) / ops;
  if (graph) {
    sec /= a_.graphLaunches;
    cpuSec /= a_.graphLaunches;
    for (size_t i = 0; i < mine_.size(); ++i) {
      cudaGraphExecDestroy(execs[i]);
      cudaGraphDestroy(graphs[i]);
    }
  }

  int64_t wrongTotal = 0;
  ++rep_;
  if (checked) {
    for (int c = 0; c < a_.check; ++c) {
      const uint64_t seed = rep_ * 1000003ull + static_cast<uint64_t>(c);
      initData(m, inPlace, seed);
      startColl(m, inPlace, 0);
      completeColl();
      // Every rank needs the total, to stop checking (a collective decision) and for its exit status.
      std::vector<double> all = exchangeDoubles(checkData(m, inPlace, seed), 1);
      int64_t ranksWrong = 0;
      for (double w : all) {
        wrongTotal += static_cast<int64_t>(w);
        ranksWrong += w > 0 ? 1 : 0;
      }
      if (wrongTotal) {
        out_->outOfBounds += ranksWrong;
        break;
      }
    }
  }

  std::vector<double> mineTimes;
  for (size_t i = 0; i < mine_.size(); ++i) {
    mineTimes.push_back(sec);
    mineTimes.push_back(cpuSec);
  }
  std::vector<double> times = exchangeDoubles(mineTimes, 2);
  const int n = p_.nranks;
  auto pick = [&](int which) {
    double v = times[which];
    if (a_.average == 0) return v;  // rank 0
    double acc = a_.average == 1 ? 0 : v;
    for (int r = 0; r < n; ++r) {
      double x = times[2 * r + which];
      if (a_.average == 1) acc += x;
      if (a_.average == 2) acc = std::min(acc, x);
      if (a_.average == 3) acc = std::max(acc, x);
    }
    return a_.average == 1 ? acc / n : acc;
  };
  double useSec = a_.reportCputime ? pick(1) : pick(0);
  double baseSec = pick(0);
  Placement pl;
  pl.timeUs = useSec * 1e6;
  collBandwidth(p_.coll, m.counts.paramCount, m.es, baseSec, n, &pl.algBw, &pl.busBw);
  pl.wrong = checked ? wrongTotal : -1;
  out_->busBwSum += pl.busBw;
  out_->busBwCount += 1;
  return pl;
}

void Runner::timeTest(ncclDataType_t type, OpKind op, int root) {
  const bool hasOp = collInfo(p_.coll).hasOp;
  barrier();
  // Warm-up at the largest and the smallest size.
  for (size_t size : {a_.maxBytes, a_.minBytes}) {
    Measure w = measure(size, type, op, root);
    for (int i = 0; i < a_.warmupIters; ++i) startColl(w, false, i);
    completeColl();
  }
  const std::vector<size_t> sizes = sweepSizes(a_);
  long repeat = a_.runCycles;
  do {
    for (size_t size : sizes) {
      Measure m = measure(size, type, op, root);
      ResultRow row;
      row.size = m.totalBytes;
      row.count = m.counts.paramCount;
      row.type = typeName(type);
      row.redop = hasOp ? opKindName(op) : "none";
      row.root = root;
      row.outOfPlace = bench(m, false);
      row.inPlace = bench(m, true);
      if (main_) {
        std::printf("%s\n", formatRow(row).c_str());
        std::fflush(stdout);
        out_->rows.push_back(row);
      }
    }
  } while (--repeat != 0);
}

void Runner::run(ThreadResult* out) {
  out_ = out;
  if (a_.parallelInit) initComms(&p_, thread_);
  registerBuffers(&p_, thread_);

  // Device lines of every rank, printed by rank 0 in rank order.
  std::vector<unsigned char> lines(kExchangeBytes * mine_.size(), 0);
  for (size_t i = 0; i < mine_.size(); ++i)
    std::snprintf(reinterpret_cast<char*>(&lines[i * kExchangeBytes]), kExchangeBytes, "%s",
                  mine_[i]->deviceLine.c_str());
  std::vector<unsigned char> all = exchange(lines.data(), kExchangeBytes);
  if (main_) {
    std::printf("# Using devices\n");
    for (int r = 0; r < p_.nranks; ++r) {
      std::string line(reinterpret_cast<const char*>(&all[r * kExchangeBytes]));
      std::printf("%s\n", line.c_str());
      p_.info.devices.push_back(line);
    }
    std::printf("#\n%s", tableHeader(a_.reportCputime != 0).c_str());
    std::fflush(stdout);
  }

  const CollInfo& ci = collInfo(p_.coll);
  std::vector<OpKind> ops = ci.hasOp ? a_.ops : std::vector<OpKind>{OpKind::Sum};
  std::vector<int> roots;
  if (!ci.hasRoot) {
    roots.push_back(-1);
  } else if (a_.root < 0) {
    for (int r = 0; r < p_.nranks; ++r) roots.push_back(r);
  } else {
    roots.push_back(a_.root);
  }
  for (ncclDataType_t t : a_.types)
    for (OpKind o : ops)
      for (int root : roots) timeTest(t, o, root);

  deregisterBuffers(&p_, thread_);
  if (main_) {
    const double avgBw = out->busBwCount ? out->busBwSum / out->busBwCount : 0.0;
    std::printf("%s", tableFooter(out->outOfBounds, avgBw, p_.minBw).c_str());
    if (!a_.jsonPath.empty()) {
      std::string error;
      if (writeJson(a_.jsonPath, p_.info, a_, out->rows, out->outOfBounds, avgBw, &error)) {
        std::printf("# Results written to %s\n", a_.jsonPath.c_str());
      } else {
        std::fprintf(stderr, "%s: -J: %s\n", p_.tool.c_str(), error.c_str());
      }
    }
    std::fflush(stdout);
  }
  // No rank leaves (perhaps with a failure status, on which launchers kill the job) before rank 0 has
  // printed everything.
  barrier();
}

}  // namespace

void runThread(Process* p, int thread, ThreadResult* out) {
  Runner runner(p, thread);
  runner.run(out);
}

}  // namespace perf
}  // namespace braid
