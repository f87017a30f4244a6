// matmul_demo: the distributed multiply (see matmul_run.h). Buffers come in two views: *C (comm memory, where
// NCCL reads and writes) and *X (compute memory, where the GEMM runs). They are the same buffers except in
// gpu-staged mode, where the comm side is host memory and copies move the data across.
#include "matmul_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace matmul {

ncclDataType_t ncclTypeOf(ElemType t) {
  switch (t) {
    case ElemType::kFloat:
      return ncclFloat;
    case ElemType::kHalf:
      return ncclHalf;
    case ElemType::kBf16:
      return ncclBfloat16;
  }
  return ncclFloat;
}

void ncclCheck(ncclResult_t res, ncclComm_t comm, const char* what) {
  if (res == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  throw std::runtime_error(std::string(what) + " failed: " + ncclGetErrorString(res) + " (" +
                           std::to_string(static_cast<int>(res)) + ")" + (last && *last ? ": " : "") +
                           (last ? last : ""));
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class Runner {
 public:
  Runner(const RunSetup& s, RootData* root)
      : s_(s),
        root_(root),
        sz_(typeSize(s.opt.type)),
        dt_(ncclTypeOf(s.opt.type)),
        cm_(s.commMem),
        xm_(s.computeMem),
        staged_(s.commMem != s.computeMem),
        isRoot_(s.rank == s.opt.root) {
    if (isRoot_ && !root_) throw std::logic_error("the root needs its matrices");
    barrierBuf_ = Buffer(cm_, sizeof(float));
    cm_->zero(barrierBuf_.get(), sizeof(float));
    cm_->sync();
  }

  RunReport run() {
    RunReport rep;
    if (s_.opt.mode == Mode::kRows) {
      setupRows(&rep);
    } else {
      setupInner(&rep);
    }
    const int total = s_.opt.warmup + s_.opt.iters;
    std::vector<double> sums;
    double totalSum = 0, stagingSum = 0;
    for (int it = 0; it < total; ++it) {
      const bool timed = it >= s_.opt.warmup;
      std::vector<double> t;
      staging_ = 0;
      // The warm-up already filled every receive buffer: before the last iteration they are cleared, so the
      // check of C after it sees that iteration's communication, not an earlier one's.
      if (it == total - 1 && total > 1) clearReceived();
      barrier();
      auto start = Clock::now();
      if (s_.opt.mode == Mode::kRows) {
        iterateRows(&t);
      } else {
        iterateInner(&t);
      }
      double wall = since(start);
      if (!timed) continue;
      if (sums.empty()) sums.assign(t.size(), 0.0);
      for (size_t i = 0; i < t.size(); ++i) sums[i] += t[i];
      totalSum += wall;
      stagingSum += staging_;
    }
    finish(&rep);

    // Per-phase maximum over ranks (and the fastest multiply, as -max(-t)), reduced to the root.
    const double iters = s_.opt.iters;
    std::vector<double> vals;
    for (double v : sums) vals.push_back(v / iters);
    vals.push_back(stagingSum / iters);
    vals.push_back(-sums[multiplyIndex_] / iters);
    reduceMaxToRoot(&vals);
    if (isRoot_) {
      for (size_t i = 0; i < rep.phases.size(); ++i) rep.phases[i].sec = vals[i];
      rep.stagingSec = vals[sums.size()];
      rep.multiplyMinSec = -vals[sums.size() + 1];
      rep.totalSec = totalSum / iters;
    }
    return rep;
  }

 private:
  // ---- helpers ---------------------------------------------------------------------------------------------

  cudaStream_t stream() { return static_cast<cudaStream_t>(cm_->stream()); }

  // Zeroes what this rank only receives: C on the root in rows mode (its own block is recomputed), the A/B
  // blocks or panels on the other ranks. Random inputs make a zero block wrong against the reference.
  void clearReceived() {
    const size_t m = s_.opt.m, n = s_.opt.n, k = s_.opt.k;
    if (s_.opt.mode == Mode::kRows) {
      if (isRoot_) {
        cm_->zero(cC_, m * n * sz_);
      } else {
        cm_->zero(aBlkC_, mine_.count * k * sz_);
        cm_->zero(bC_, k * n * sz_);
      }
    } else if (!isRoot_) {
      cm_->zero(aBlkC_, m * mine_.count * sz_);
      cm_->zero(bBlkC_, mine_.count * n * sz_);
    }
    cm_->sync();
  }

  void check(ncclResult_t res, const char* what) { ncclCheck(res, s_.comm, what); }

  void barrier() {
    check(ncclAllReduce(barrierBuf_.get(), barrierBuf_.get(), 1, ncclFloat, ncclSum, s_.comm, stream()),
          "ncclAllReduce (barrier)");
    cm_->sync();
  }

  // A phase: barrier, run `body` (which issues NCCL calls or the GEMM), wait for it, record its time.
  template <typename F>
  void phase(std::vector<double>* t, F body) {
    barrier();
    auto start = Clock::now();
    body();
    cm_->sync();
    xm_->sync();
    t->push_back(since(start));
  }

  void stageIn(void* x, const void* c, size_t bytes) {
    if (!staged_ || !bytes) return;
    auto start = Clock::now();
    xm_->upload(x, c, bytes);
    staging_ += since(start);
  }
  void stageOut(void* c, const void* x, size_t bytes) {
    if (!staged_ || !bytes) return;
    auto start = Clock::now();
    xm_->download(c, x, bytes);
    staging_ += since(start);
  }

  // The compute-side view of a comm buffer: the same memory, or (staged) a device buffer of the same size.
  char* computeView(char* commPtr, size_t bytes, Buffer* holder) {
    if (!staged_) return commPtr;
    *holder = Buffer(xm_, bytes);
    return holder->bytes();
  }

  void maybeCorrupt(char* x, size_t elems) {
    if (s_.corruptRank != s_.rank) return;
    if (elems == 0) {
      if (!corruptNoted_)
        std::fprintf(stderr,
                     "matmul_demo: rank %d: BRAID_MATMUL_CORRUPT: this rank's result is empty, nothing "
                     "to corrupt\n",
                     s_.rank);
      corruptNoted_ = true;
      return;
    }
    const size_t idx = elems / 2;
    float v = 0;
    uint16_t bits = 0;
    if (s_.opt.type == ElemType::kFloat) {
      xm_->download(&v, x + idx * sz_, sizeof(v));
      v += 1000.0f;
      xm_->upload(x + idx * sz_, &v, sizeof(v));
    } else {
      xm_->download(&bits, x + idx * sz_, sizeof(bits));
      const bool half = s_.opt.type == ElemType::kHalf;
      v = (half ? halfBitsToFloat(bits) : bf16BitsToFloat(bits)) + 1000.0f;
      bits = half ? floatToHalfBits(v) : floatToBf16Bits(v);
      xm_->upload(x + idx * sz_, &bits, sizeof(bits));
    }
    if (!corruptNoted_)
      std::fprintf(stderr,
                   "matmul_demo: rank %d: BRAID_MATMUL_CORRUPT: adding 1000 to element %zu of the local "
                   "result\n",
                   s_.rank, idx);
    corruptNoted_ = true;
  }

  void reduceMaxToRoot(std::vector<double>* vals) {
    const size_t bytes = vals->size() * sizeof(double);
    Buffer buf(cm_, bytes);
    cm_->upload(buf.get(), vals->data(), bytes);
    check(ncclReduce(buf.get(), buf.get(), vals->size(), ncclFloat64, ncclMax, s_.opt.root, s_.comm, stream()),
          "ncclReduce (timings)");
    cm_->sync();
    cm_->download(vals->data(), buf.get(), bytes);
  }

  // Root: its host matrix in comm memory (the host vector itself when comm memory is host memory).
  char* rootMatrix(std::vector<char>& host, Buffer* holder, double* setupSec) {
    if (!cm_->onDevice()) return host.data();
    auto start = Clock::now();
    *holder = Buffer(cm_, host.size());
    cm_->upload(holder->get(), host.data(), host.size());
    *setupSec += since(start);
    return holder->bytes();
  }

  void addPhase(RunReport* rep, const char* name, double bytes, double busFactor = 0, bool multiply = false) {
    PhaseTime p;
    p.name = name;
    p.bytes = bytes;
    p.busFactor = busFactor;
    p.multiply = multiply;
    if (multiply) multiplyIndex_ = rep->phases.size();
    rep->phases.push_back(p);
  }

  // ---- rows mode ---------------------------------------------------------------------------------------------

  void setupRows(RunReport* rep) {
    const size_t m = s_.opt.m, n = s_.opt.n, k = s_.opt.k;
    for (int q = 0; q < s_.nranks; ++q) rep->split.push_back(splitRange(m, s_.nranks, q).count);
    mine_ = splitRange(m, s_.nranks, s_.rank);
    const size_t others = m - rep->split[s_.opt.root];
    addPhase(rep, "scatter A", static_cast<double>(others * k * sz_));
    addPhase(rep, "broadcast B", s_.nranks > 1 ? static_cast<double>(k * n * sz_) : 0.0);
    addPhase(rep, "multiply", 0, 0, true);
    addPhase(rep, "gather C", static_cast<double>(others * n * sz_));

    if (isRoot_) {
      aC_ = rootMatrix(root_->a, &aHold_, &rep->setupSec);
      bC_ = rootMatrix(root_->b, &bHold_, &rep->setupSec);
      root_->c.assign(m * n * sz_, 0);
      if (cm_->onDevice()) {
        cHold_ = Buffer(cm_, m * n * sz_);
        cC_ = cHold_.bytes();
      } else {
        cC_ = root_->c.data();
      }
      aBlkC_ = aC_ + mine_.begin * k * sz_;
      cBlkC_ = cC_ + mine_.begin * n * sz_;
    } else {
      aBlkHold_ = Buffer(cm_, mine_.count * k * sz_);
      bHold_ = Buffer(cm_, k * n * sz_);
      cBlkHold_ = Buffer(cm_, mine_.count * n * sz_);
      aBlkC_ = aBlkHold_.bytes();
      bC_ = bHold_.bytes();
      cBlkC_ = cBlkHold_.bytes();
    }
    aBlkX_ = computeView(aBlkC_, mine_.count * k * sz_, &aBlkXHold_);
    bX_ = computeView(bC_, k * n * sz_, &bXHold_);
    cBlkX_ = computeView(cBlkC_, mine_.count * n * sz_, &cBlkXHold_);
  }

  void iterateRows(std::vector<double>* t) {
    const size_t n = s_.opt.n, k = s_.opt.k;
    const int root = s_.opt.root;
    phase(t, [&] {  // scatter uneven row blocks of A: the root sends each rank its block, nothing padded
      check(ncclGroupStart(), "ncclGroupStart");
      if (isRoot_) {
        for (int q = 0; q < s_.nranks; ++q) {
          Range r = splitRange(s_.opt.m, s_.nranks, q);
          if (q == root || r.count == 0) continue;
          check(ncclSend(aC_ + r.begin * k * sz_, r.count * k, dt_, q, s_.comm, stream()), "ncclSend (A block)");
        }
      } else if (mine_.count) {
        check(ncclRecv(aBlkC_, mine_.count * k, dt_, root, s_.comm, stream()), "ncclRecv (A block)");
      }
      check(ncclGroupEnd(), "ncclGroupEnd (scatter)");
    });
    stageIn(aBlkX_, aBlkC_, mine_.count * k * sz_);
    phase(t, [&] { check(ncclBroadcast(bC_, bC_, k * n, dt_, root, s_.comm, stream()), "ncclBroadcast (B)"); });
    stageIn(bX_, bC_, k * n * sz_);
    phase(t, [&] {
      xm_->gemm(s_.opt.type, aBlkX_, k, bX_, n, cBlkX_, n, mine_.count, n, k);
      maybeCorrupt(cBlkX_, mine_.count * n);
    });
    stageOut(cBlkC_, cBlkX_, mine_.count * n * sz_);
    phase(t, [&] {  // gather the row blocks of C into place on the root
      check(ncclGroupStart(), "ncclGroupStart");
      if (isRoot_) {
        for (int q = 0; q < s_.nranks; ++q) {
          Range r = splitRange(s_.opt.m, s_.nranks, q);
          if (q == root || r.count == 0) continue;
          check(ncclRecv(cC_ + r.begin * n * sz_, r.count * n, dt_, q, s_.comm, stream()), "ncclRecv (C block)");
        }
      } else if (mine_.count) {
        check(ncclSend(cBlkC_, mine_.count * n, dt_, root, s_.comm, stream()), "ncclSend (C block)");
      }
      check(ncclGroupEnd(), "ncclGroupEnd (gather)");
    });
  }

  // ---- inner mode --------------------------------------------------------------------------------------------

  void setupInner(RunReport* rep) {
    const size_t m = s_.opt.m, n = s_.opt.n, k = s_.opt.k;
    for (int q = 0; q < s_.nranks; ++q) rep->split.push_back(splitRange(k, s_.nranks, q).count);
    mine_ = splitRange(k, s_.nranks, s_.rank);
    const size_t others = k - rep->split[s_.opt.root];
    const double p = s_.nranks;
    addPhase(rep, "scatter A,B panels", static_cast<double>(others * (m + n) * sz_));
    addPhase(rep, "multiply (partial C)", 0, 0, true);
    addPhase(rep, "all-reduce C", static_cast<double>(m * n * sz_), s_.nranks > 1 ? 2.0 * (p - 1) / p : 0.0);

    if (isRoot_) {
      // The root lays A out as column panels, one contiguous M x k_q panel per rank, so that each panel
      // goes out as one message. This is the root's own copy of A; its matrices are never padded.
      auto start = Clock::now();
      aPacked_.resize(m * k * sz_);
      for (int q = 0; q < s_.nranks; ++q) {
        Range r = splitRange(k, s_.nranks, q);
        for (size_t i = 0; i < m; ++i)
          std::memcpy(&aPacked_[(m * r.begin + i * r.count) * sz_], &root_->a[(i * k + r.begin) * sz_], r.count * sz_);
      }
      rep->setupSec += since(start);
      aC_ = rootMatrix(aPacked_, &aHold_, &rep->setupSec);
      bC_ = rootMatrix(root_->b, &bHold_, &rep->setupSec);
      root_->c.assign(m * n * sz_, 0);
      if (cm_->onDevice()) {
        cHold_ = Buffer(cm_, m * n * sz_);
        cC_ = cHold_.bytes();
      } else {
        cC_ = root_->c.data();
      }
      aBlkC_ = aC_ + m * mine_.begin * sz_;
      bBlkC_ = bC_ + mine_.begin * n * sz_;
      cBlkC_ = cC_;
    } else {
      aBlkHold_ = Buffer(cm_, m * mine_.count * sz_);
      bBlkHold_ = Buffer(cm_, mine_.count * n * sz_);
      cBlkHold_ = Buffer(cm_, m * n * sz_);
      aBlkC_ = aBlkHold_.bytes();
      bBlkC_ = bBlkHold_.bytes();
      cBlkC_ = cBlkHold_.bytes();
    }
    aBlkX_ = computeView(aBlkC_, m * mine_.count * sz_, &aBlkXHold_);
    bBlkX_ = computeView(bBlkC_, mine_.count * n * sz_, &bXHold_);
    cBlkX_ = computeView(cBlkC_, m * n * sz_, &cBlkXHold_);
  }

  void iterateInner(std::vector<double>* t) {
    const size_t m = s_.opt.m, n = s_.opt.n, k = s_.opt.k;
    const int root = s_.opt.root;
    phase(t, [&] {  // each rank gets its K slice: an M x k_q panel of A and a k_q x N panel of B
      check(ncclGroupStart(), "ncclGroupStart");
      if (isRoot_) {
        for (int q = 0; q < s_.nranks; ++q) {
          Range r = splitRange(k, s_.nranks, q);
          if (q == root || r.count == 0) continue;
          check(ncclSend(aC_ + m * r.begin * sz_, m * r.count, dt_, q, s_.comm, stream()), "ncclSend (A panel)");
          check(ncclSend(bC_ + r.begin * n * sz_, r.count * n, dt_, q, s_.comm, stream()), "ncclSend (B panel)");
        }
      } else if (mine_.count) {
        check(ncclRecv(aBlkC_, m * mine_.count, dt_, root, s_.comm, stream()), "ncclRecv (A panel)");
        check(ncclRecv(bBlkC_, mine_.count * n, dt_, root, s_.comm, stream()), "ncclRecv (B panel)");
      }
      check(ncclGroupEnd(), "ncclGroupEnd (scatter)");
    });
    stageIn(aBlkX_, aBlkC_, m * mine_.count * sz_);
    stageIn(bBlkX_, bBlkC_, mine_.count * n * sz_);
    phase(t, [&] {
      xm_->gemm(s_.opt.type, aBlkX_, mine_.count, bBlkX_, n, cBlkX_, n, m, n, mine_.count);
      maybeCorrupt(cBlkX_, m * n);
    });
    stageOut(cBlkC_, cBlkX_, m * n * sz_);
    phase(t,
          [&] { check(ncclAllReduce(cBlkC_, cBlkC_, m * n, dt_, ncclSum, s_.comm, stream()), "ncclAllReduce (C)"); });
  }

  // Root: bring C back to the host.
  void finish(RunReport* rep) {
    if (!isRoot_ || !cm_->onDevice()) return;
    auto start = Clock::now();
    cm_->download(root_->c.data(), cC_, root_->c.size());
    rep->downloadSec = since(start);
  }

  const RunSetup& s_;
  RootData* root_;
  const size_t sz_;
  const ncclDataType_t dt_;
  Compute* cm_;
  Compute* xm_;
  const bool staged_;
  const bool isRoot_;
  Buffer barrierBuf_;
  Range mine_;
  size_t multiplyIndex_ = 0;
  double staging_ = 0;
  bool corruptNoted_ = false;
  std::vector<char> aPacked_;
  // Comm-side pointers (root: into its full matrices) and the buffers that own them.
  char *aC_ = nullptr, *bC_ = nullptr, *cC_ = nullptr;
  char *aBlkC_ = nullptr, *bBlkC_ = nullptr, *cBlkC_ = nullptr;
  Buffer aHold_, bHold_, cHold_, aBlkHold_, bBlkHold_, cBlkHold_;
  // Compute-side views.
  char *aBlkX_ = nullptr, *bX_ = nullptr, *bBlkX_ = nullptr, *cBlkX_ = nullptr;
  Buffer aBlkXHold_, bXHold_, cBlkXHold_;
};

}  // namespace

RunReport runDistributed(const RunSetup& s, RootData* root) {
  Runner r(s, root);
  return r.run();
}

}  // namespace matmul
