// GPU test harness: the collective cases (every collective x datatype x op x in/out of place), written per
// rank so one body serves one process driving 2 GPUs (ncclCommInitAll + groups) and one process per GPU.
// Inputs are small integers so every datatype (fp8 included) represents them; the reference folds the
// exact result rounded once to the type (numeric_types.h conversions), so results must match bit for bit. With
// more than two ranks a floating reduction rounds at each of its steps in an order the algorithm picks; an
// element that differs from the reference passes only where some order of the ranks' contributions gives it
// (someOrderGives).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <type_traits>

#include "algo/numeric_types.h"
#include "nccl.h"

namespace gpu_test {

// Sets or clears environment variables for a scope (transport selection is read at init and at lazy p2p connects)
// and restores each one's earlier value after it, so a test run under an outer setting (NCCL_MAX_CTAS=24 for a
// whole binary) keeps that setting in the tests after one that changed it.
struct EnvScope {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const char* n, const char* v) {
    remember(n);
    setenv(n, v, 1);
  }
  void unset(const char* n) {
    remember(n);
    unsetenv(n);
  }
  ~EnvScope() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }

 private:
  void remember(const char* n) {
    const char* v = getenv(n);
    saved.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
  }
};

using namespace braid;

#define GT_CUDA(call)                                                                             \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));       \
      return false;                                                                               \
    }                                                                                             \
  } while (0)
#define GT_NCCL(call)                                                                             \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess) {                                                                      \
      fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_),   \
              ncclGetLastError(nullptr));                                                         \
      return false;                                                                               \
    }                                                                                             \
  } while (0)

// The GPUs a child process sees, counted there so the caller stays free of CUDA and may fork ranks that each
// initialise their own (a CUDA context does not survive fork).
inline int gpuCountForked() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)!write(fds[1], &n, sizeof(n));
    _exit(0);
  }
  close(fds[1]);
  int n = 0;
  if (read(fds[0], &n, sizeof(n)) != sizeof(n)) n = 0;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return n;
}

// The GPUs this process sees (0 where the CUDA runtime has none; its error is cleared).
inline int gpuCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Skips the test (with the reason) where fewer than k GPUs exist.
#define NEED_GPUS(k)                                                                               \
  do {                                                                                             \
    int n_ = gpuCount();                                                                           \
    if (n_ < (k)) GTEST_SKIP() << "needs " << (k) << " GPUs, cudaGetDeviceCount reports " << n_;   \
  } while (0)

// One process driving 2 GPUs: ranks 0 and 1 of one ncclCommInitAll, a non-blocking stream each.
struct Pair {
  ncclComm_t comm[2] = {nullptr, nullptr};
  cudaStream_t stream[2] = {nullptr, nullptr};
  bool init() {
    int devs[2] = {0, 1};
    GT_NCCL(ncclCommInitAll(comm, 2, devs));
    for (int r = 0; r < 2; ++r) {
      GT_CUDA(cudaSetDevice(r));
      GT_CUDA(cudaStreamCreateWithFlags(&stream[r], cudaStreamNonBlocking));
    }
    return true;
  }
  void destroy() {
    for (int r = 0; r < 2; ++r) {
      cudaSetDevice(r);
      if (stream[r]) cudaStreamDestroy(stream[r]);
      if (comm[r]) ncclCommDestroy(comm[r]);
      comm[r] = nullptr;
      stream[r] = nullptr;
    }
  }
};

// Waits for both streams with a deadline: a hung case is reported by name and the comms are aborted
// (which stops the kernels), instead of the whole test hanging. BRAID_TEST_VERBOSE=1 prints each case.
inline bool finishPair(Pair& p, const std::string& what, bool* hung) {
  const double limit = std::getenv("BRAID_CASE_TIMEOUT") ? std::atof(std::getenv("BRAID_CASE_TIMEOUT")) : 20.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r) {
    GT_CUDA(cudaSetDevice(r));
    cudaError_t e;
    while ((e = cudaStreamQuery(p.stream[r])) == cudaErrorNotReady) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit) {
        ADD_FAILURE() << what << ": rank " << r << " still running after " << limit << " s; aborting";
        // What each rank's kernels reported before the abort: an error on one rank (its kernel stopped)
        // often explains the other's wait.
        for (int k = 0; k < 2; ++k) {
          ncclResult_t async = ncclSuccess;
          ncclCommGetAsyncError(p.comm[k], &async);
          printf("  rank %d: async state %s; last error: %s\n", k, ncclGetErrorString(async),
                 ncclGetLastError(p.comm[k]));
        }
        *hung = true;
        for (int k = 0; k < 2; ++k) ncclCommAbort(p.comm[k]);
        p.comm[0] = p.comm[1] = nullptr;
        return false;
      }
    }
    GT_CUDA(e);
  }
  return true;
}


inline size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}
inline const char* typeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "int8"; case ncclUint8: return "uint8"; case ncclInt32: return "int32";
    case ncclUint32: return "uint32"; case ncclInt64: return "int64"; case ncclUint64: return "uint64";
    case ncclFloat16: return "half"; case ncclFloat32: return "float"; case ncclFloat64: return "double";
    case ncclBfloat16: return "bf16"; case ncclFloat8e4m3: return "fp8e4m3"; case ncclFloat8e5m2: return "fp8e5m2";
    default: return "?";
  }
}
inline const char* opName(ncclRedOp_t o) {
  switch (o) { case ncclSum: return "sum"; case ncclProd: return "prod"; case ncclMax: return "max";
    case ncclMin: return "min"; case ncclAvg: return "avg"; default: return "?"; }
}
enum Coll { kAllReduce, kReduce, kReduceScatter, kAllGather, kBroadcast, kSendRecv, kAllToAll, kGather, kScatter };
inline const char* collStr(Coll c) {
  static const char* n[] = {"AllReduce", "Reduce", "ReduceScatter", "AllGather", "Broadcast", "SendRecv",
                            "AllToAll", "Gather", "Scatter"};
  return n[c];
}

// Input element i of rank r: small integers (exact in fp8 e5m2 too after a 2-rank sum/prod).
inline int inputValue(int r, size_t i) { return static_cast<int>((i * 7 + r * 3) % 4) + 1; }

template <typename T> T fromInt(int v) { return static_cast<T>(v); }
template <> inline Half fromInt<Half>(int v) { return Half(static_cast<float>(v)); }
template <> inline BFloat16 fromInt<BFloat16>(int v) { return BFloat16(static_cast<float>(v)); }
template <> inline Fp8E4M3 fromInt<Fp8E4M3>(int v) { return Fp8E4M3(static_cast<float>(v)); }
template <> inline Fp8E5M2 fromInt<Fp8E5M2>(int v) { return Fp8E5M2(static_cast<float>(v)); }

template <typename T>
void fillTyped(void* dst, int r, size_t n) {
  T* p = static_cast<T*>(dst);
  for (size_t i = 0; i < n; ++i) p[i] = fromInt<T>(inputValue(r, i));
}

// Reference: the exact result of the op over the ranks' small-integer inputs (computed in double, where it
// is exact), rounded once to T. With 2 ranks the device also rounds once (one operation), so they agree.
inline double combine(ncclRedOp_t op, double a, double b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
  }
}
template <typename T>
void refTyped(ncclRedOp_t op, void* out, size_t n, int nranks, size_t off, bool isFloat) {
  T* o = static_cast<T*>(out);
  for (size_t i = 0; i < n; ++i) {
    const double scale = (op == ncclAvg && isFloat) ? 1.0 / nranks : 1.0;
    double acc = inputValue(0, off + i) * scale;
    for (int r = 1; r < nranks; ++r) acc = combine(op, acc, inputValue(r, off + i) * scale);
    if (op == ncclAvg && !isFloat) acc = static_cast<double>(static_cast<long long>(acc) / nranks);
    o[i] = fromInt<T>(0);
    if constexpr (IsLowPrecision<T>::value) {
      o[i] = T(static_cast<float>(acc));
    } else {
      o[i] = static_cast<T>(acc);
    }
  }
}

#define GT_DISPATCH(t, F, ...)                              \
  switch (t) {                                              \
    case ncclInt8: F<int8_t>(__VA_ARGS__); break;           \
    case ncclUint8: F<uint8_t>(__VA_ARGS__); break;         \
    case ncclInt32: F<int32_t>(__VA_ARGS__); break;         \
    case ncclUint32: F<uint32_t>(__VA_ARGS__); break;       \
    case ncclInt64: F<int64_t>(__VA_ARGS__); break;         \
    case ncclUint64: F<uint64_t>(__VA_ARGS__); break;       \
    case ncclFloat16: F<Half>(__VA_ARGS__); break;          \
    case ncclFloat32: F<float>(__VA_ARGS__); break;         \
    case ncclFloat64: F<double>(__VA_ARGS__); break;        \
    case ncclBfloat16: F<BFloat16>(__VA_ARGS__); break;     \
    case ncclFloat8e4m3: F<Fp8E4M3>(__VA_ARGS__); break;    \
    case ncclFloat8e5m2: F<Fp8E5M2>(__VA_ARGS__); break;    \
    default: break;                                         \
  }

inline bool isFloatType(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || t == ncclFloat8e4m3 ||
         t == ncclFloat8e5m2;
}
template <typename T> void fillT(void* d, int r, size_t n) { fillTyped<T>(d, r, n); }
inline void fillInput(ncclDataType_t t, void* dst, int r, size_t n) { GT_DISPATCH(t, fillT, dst, r, n); }
template <typename T> void refT(ncclRedOp_t op, void* out, size_t n, int nranks, size_t off, bool isF) {
  refTyped<T>(op, out, n, nranks, off, isF);
}
inline void reference(ncclDataType_t t, ncclRedOp_t op, void* out, size_t n, int nranks, size_t off) {
  GT_DISPATCH(t, refT, op, out, n, nranks, off, isFloatType(t));
}

// With n > 2 ranks a reduction is n - 1 binary steps, each rounded to the datatype as the device's functors do
// (reduce_ops.h: low-precision floats through float), in an order the algorithm picks (a ring's, a one-shot's).
// Where a step's result is inexact (fp8 e5m2's 2+3+4 = 9 -> 8, x * (1/3) for ncclAvg) the result need not be the
// exact one rounded once, so check() accepts any value that some order of the contributions gives; every order
// (every binary tree over the ranks' values) of up to 5 ranks is tried, only for elements that differ.
template <typename T>
T toType(double v) {
  if constexpr (IsLowPrecision<T>::value) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}
template <typename T>
double toDouble(T v) {
  if constexpr (IsLowPrecision<T>::value) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}
// One step in double, rounded to T: for float, as a float operation (double rounding is innocuous for + and *);
// for half, bf16 and fp8, as the device's float operation rounded back to T.
template <typename T>
T roundedStep(ncclRedOp_t op, T a, T b) {
  return toType<T>(static_cast<double>(static_cast<float>(combine(op, toDouble(a), toDouble(b)))));
}
template <>
inline double roundedStep<double>(ncclRedOp_t op, double a, double b) {
  return combine(op, a, b);
}
// ncclAvg's pre-multiplier 1/n as the API stores it (algo/scalar.cc: through float for half and bf16).
template <typename T>
T avgScalar(int nranks) {
  const double v = 1.0 / nranks;
  if constexpr (std::is_same<T, Fp8E4M3>::value) {
    return Fp8E4M3::fromBits(doubleToFp8Bits(v, true));
  } else if constexpr (std::is_same<T, Fp8E5M2>::value) {
    return Fp8E5M2::fromBits(doubleToFp8Bits(v, false));
  } else {
    return toType<T>(v);
  }
}
// Whether combining vals[0..n) pairwise in some order ends in the bits at `got`.
template <typename T>
bool someOrderEndsIn(ncclRedOp_t op, const T* vals, int n, const void* got) {
  if (n == 1) return memcmp(&vals[0], got, sizeof(T)) == 0;
  T next[5];
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      int k = 0;
      for (int m = 0; m < n; ++m)
        if (m != i && m != j) next[k++] = vals[m];
      next[k++] = roundedStep(op, vals[i], vals[j]);
      if (someOrderEndsIn(op, next, k, got)) return true;
    }
  return false;
}
template <typename T>
void someOrderT(ncclRedOp_t op, int nranks, size_t g, const void* got, bool* yes) {
  T vals[5];
  for (int r = 0; r < nranks; ++r) {
    vals[r] = fromInt<T>(inputValue(r, g));
    if (op == ncclAvg) vals[r] = roundedStep(ncclProd, vals[r], avgScalar<T>(nranks));  // the pre-multiplication
  }
  *yes = someOrderEndsIn(op == ncclAvg ? ncclSum : op, vals, nranks, got);
}

struct Case {
  Coll coll;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  size_t count;  // NCCL's count: per rank for AllGather/ReduceScatter/AllToAll/Gather/Scatter
  bool inPlace;
  int root;
  // Out-of-place only: the user pointers sit this many elements past a 256-byte aligned allocation (1 and 3:
  // neither 16-byte aligned nor aligned alike, so the kernels' scalar and head/tail paths run).
  size_t sendShift = 0, recvShift = 0;
  std::string name() const {
    char b[200];
    int k = snprintf(b, sizeof(b), "%s %s %s count %zu %s root %d", collStr(coll), typeName(dtype), opName(op), count,
                     inPlace ? "in-place" : "out-of-place", root);
    if (sendShift || recvShift) snprintf(b + k, sizeof(b) - k, " shifted %zu/%zu", sendShift, recvShift);
    return b;
  }
};

// One rank's buffers for one case.
struct RankBufs {
  void* send = nullptr;
  void* recv = nullptr;
  size_t sendBytes = 0, recvBytes = 0;
  size_t recvAlloc = 0;
  const void* sendArg = nullptr;
  void* recvArg = nullptr;
};

inline void sizes(const Case& c, int nranks, size_t* inElems, size_t* outElems) {
  const size_t n = c.count;
  switch (c.coll) {
    case kAllReduce: case kReduce: case kBroadcast: case kSendRecv: *inElems = n; *outElems = n; break;
    case kReduceScatter: *inElems = n * nranks; *outElems = n; break;
    case kAllGather: *inElems = n; *outElems = n * nranks; break;
    case kAllToAll: *inElems = n * nranks; *outElems = n * nranks; break;
    case kGather: *inElems = n; *outElems = n * nranks; break;
    case kScatter: *inElems = n * nranks; *outElems = n; break;
  }
}

// Allocates, fills the input (host pattern: rank r's element i is inputValue(r, global index)), poisons the
// output. The current device must be the rank's.
inline bool prepare(const Case& c, int rank, int nranks, RankBufs* b) {
  size_t inE, outE;
  sizes(c, nranks, &inE, &outE);
  const size_t es = typeSize(c.dtype);
  b->sendBytes = inE * es;
  b->recvBytes = outE * es;
  const size_t allocRecv = std::max<size_t>(std::max(b->recvBytes, b->sendBytes), 1) + 64;
  const size_t allocSend = std::max<size_t>(b->sendBytes, 1) + 64;
  b->recvAlloc = allocRecv;
  GT_CUDA(cudaMalloc(&b->recv, allocRecv));
  GT_CUDA(cudaMemset(b->recv, 0xA5, allocRecv));
  std::vector<char> host(std::max<size_t>(b->sendBytes, 1));
  // The pattern's element index is global where ranks' inputs are blocks of one whole (ReduceScatter and
  // AllToAll inputs are indexed as one array; AllGather/Gather inputs sit at rank * count in the output).
  fillInput(c.dtype, host.data(), rank, inE);
  if (c.inPlace && c.coll != kSendRecv && c.coll != kAllToAll && c.coll != kGather && c.coll != kScatter) {
    char* r = static_cast<char*>(b->recv);
    if (c.coll == kAllGather) {
      // Input block sits at rank * count in the output; its pattern uses indices rank*count.. for rank.
      std::vector<char> blk(std::max<size_t>(c.count * es, 1));
      std::vector<char> full(std::max<size_t>(c.count * nranks * es, 1));
      fillInput(c.dtype, full.data(), rank, c.count * nranks);
      memcpy(blk.data(), full.data() + rank * c.count * es, c.count * es);
      GT_CUDA(cudaMemcpy(r + rank * c.count * es, blk.data(), c.count * es, cudaMemcpyHostToDevice));
      b->sendArg = r + rank * c.count * es;
    } else {
      GT_CUDA(cudaMemcpy(r, host.data(), b->sendBytes, cudaMemcpyHostToDevice));
      b->sendArg = (c.coll == kReduceScatter) ? static_cast<const void*>(r) : r;
    }
    b->recvArg = c.coll == kReduceScatter ? r + rank * c.count * es : r;
    GT_CUDA(cudaDeviceSynchronize());  // see below
    return true;
  }
  GT_CUDA(cudaMalloc(&b->send, allocSend));
  char* sendAt = static_cast<char*>(b->send) + c.sendShift * es;
  if (c.coll == kAllGather || c.coll == kGather) {
    std::vector<char> full(std::max<size_t>(c.count * nranks * es, 1));
    fillInput(c.dtype, full.data(), rank, c.count * nranks);
    GT_CUDA(cudaMemcpy(sendAt, full.data() + rank * c.count * es, c.count * es, cudaMemcpyHostToDevice));
  } else {
    GT_CUDA(cudaMemcpy(sendAt, host.data(), b->sendBytes, cudaMemcpyHostToDevice));
  }
  b->sendArg = sendAt;
  b->recvArg = static_cast<char*>(b->recv) + c.recvShift * es;
  // The copies and memsets above run on the legacy stream, which the tests' non-blocking streams do not
  // wait for.
  GT_CUDA(cudaDeviceSynchronize());
  return true;
}

inline bool enqueue(const Case& c, int rank, int nranks, ncclComm_t comm, cudaStream_t s, const RankBufs& b) {
  switch (c.coll) {
    case kAllReduce: GT_NCCL(ncclAllReduce(b.sendArg, b.recvArg, c.count, c.dtype, c.op, comm, s)); break;
    case kReduce: GT_NCCL(ncclReduce(b.sendArg, b.recvArg, c.count, c.dtype, c.op, c.root, comm, s)); break;
    case kReduceScatter: GT_NCCL(ncclReduceScatter(b.sendArg, b.recvArg, c.count, c.dtype, c.op, comm, s)); break;
    case kAllGather: GT_NCCL(ncclAllGather(b.sendArg, b.recvArg, c.count, c.dtype, comm, s)); break;
    case kBroadcast: GT_NCCL(ncclBroadcast(b.sendArg, b.recvArg, c.count, c.dtype, c.root, comm, s)); break;
    case kSendRecv: {
      // Ring shift: send to rank+1, receive from rank-1.
      GT_NCCL(ncclGroupStart());
      GT_NCCL(ncclSend(b.sendArg, c.count, c.dtype, (rank + 1) % nranks, comm, s));
      GT_NCCL(ncclRecv(b.recvArg, c.count, c.dtype, (rank - 1 + nranks) % nranks, comm, s));
      GT_NCCL(ncclGroupEnd());
      break;
    }
    case kAllToAll: GT_NCCL(ncclAlltoAll(b.sendArg, b.recvArg, c.count, c.dtype, comm, s)); break;
    case kGather: GT_NCCL(ncclGather(b.sendArg, b.recvArg, c.count, c.dtype, c.root, comm, s)); break;
    case kScatter: GT_NCCL(ncclScatter(b.sendArg, b.recvArg, c.count, c.dtype, c.root, comm, s)); break;
  }
  return true;
}

// Expected output of `rank` (nullptr-sized when the rank's output is not defined, e.g. Reduce non-root).
inline bool expected(const Case& c, int rank, int nranks, std::vector<char>* out) {
  const size_t es = typeSize(c.dtype), n = c.count;
  size_t inE, outE;
  sizes(c, nranks, &inE, &outE);
  out->assign(outE * es, 0);
  std::vector<char> tmp;
  auto input = [&](int r, size_t elems) {
    tmp.assign(std::max<size_t>(elems * es, 1), 0);
    fillInput(c.dtype, tmp.data(), r, elems);
    return tmp.data();
  };
  switch (c.coll) {
    case kAllReduce: reference(c.dtype, c.op, out->data(), n, nranks, 0); return true;
    case kReduce:
      if (rank != c.root) return false;
      reference(c.dtype, c.op, out->data(), n, nranks, 0);
      return true;
    case kReduceScatter: reference(c.dtype, c.op, out->data(), n, nranks, rank * n); return true;
    case kAllGather:
    case kGather:
      if (c.coll == kGather && rank != c.root) return false;
      for (int r = 0; r < nranks; ++r) memcpy(out->data() + r * n * es, input(r, n * nranks) + r * n * es, n * es);
      return true;
    case kBroadcast: memcpy(out->data(), input(c.root, n), n * es); return true;
    case kSendRecv: memcpy(out->data(), input((rank - 1 + nranks) % nranks, n), n * es); return true;
    case kAllToAll:
      for (int r = 0; r < nranks; ++r) memcpy(out->data() + r * n * es, input(r, n * nranks) + rank * n * es, n * es);
      return true;
    case kScatter: memcpy(out->data(), input(c.root, n * nranks) + rank * n * es, n * es); return true;
  }
  return false;
}

// Whether output element i of `rank` (bits at `got`) is what some order of an n-way floating reduction gives
// (n of 3 to 5; integer reductions are exact in any order, two ranks take one step).
inline bool someOrderGives(const Case& c, int rank, int nranks, size_t i, const void* got) {
  if (nranks <= 2 || nranks > 5 || !isFloatType(c.dtype)) return false;
  size_t g;  // the element's index in the ranks' inputs
  switch (c.coll) {
    case kAllReduce: case kReduce: g = i; break;
    case kReduceScatter: g = rank * c.count + i; break;
    default: return false;
  }
  bool yes = false;
  GT_DISPATCH(c.dtype, someOrderT, c.op, nranks, g, got, &yes);
  return yes;
}

inline bool check(const Case& c, int rank, int nranks, RankBufs* b) {
  std::vector<char> want;
  bool ok = true;
  if (expected(c, rank, nranks, &want)) {
    std::vector<char> got(want.size());
    const char* src = static_cast<const char*>(c.inPlace ? (c.coll == kReduceScatter ? b->recvArg : b->recv) : b->recvArg);
    if (!got.empty()) GT_CUDA(cudaMemcpy(got.data(), src, got.size(), cudaMemcpyDeviceToHost));
    const size_t es = typeSize(c.dtype);
    for (size_t i = 0; i < want.size(); i += es) {
      if (memcmp(&got[i], &want[i], es) != 0 && !someOrderGives(c, rank, nranks, i / es, &got[i])) {
        unsigned long long g = 0, w = 0;
        memcpy(&g, &got[i], es);
        memcpy(&w, &want[i], es);
        fprintf(stderr, "rank %d: %s: element %zu is 0x%llx, expected 0x%llx\n", rank, c.name().c_str(), i / es, g, w);
        ok = false;
        break;
      }
    }
  }
  if (!c.inPlace && b->recvAlloc > 0) {
    // Nothing outside [recvArg, recvArg + recvBytes) may change (out-of-place: the rest stays poisoned).
    std::vector<unsigned char> all(b->recvAlloc);
    GT_CUDA(cudaMemcpy(all.data(), b->recv, all.size(), cudaMemcpyDeviceToHost));
    const size_t lo = static_cast<const char*>(b->recvArg) - static_cast<const char*>(b->recv), hi = lo + b->recvBytes;
    for (size_t i = 0; i < all.size(); ++i) {
      if ((i < lo || i >= hi) && all[i] != 0xA5) {
        fprintf(stderr, "rank %d: %s: byte %zu of the receive allocation (outside the output at %zu..%zu) is 0x%02x\n",
                rank, c.name().c_str(), i, lo, hi, all[i]);
        ok = false;
        break;
      }
    }
  }
  cudaFree(b->send);
  cudaFree(b->recv);
  *b = RankBufs{};
  return ok;
}

// The case list: every collective x datatype x op x in/out of place at a few counts.
inline std::vector<Case> allCases(int nranks, bool quick) {
  std::vector<Case> v;
  const ncclDataType_t types[] = {ncclFloat32, ncclFloat16, ncclBfloat16, ncclInt32, ncclInt8, ncclUint8,
                                  ncclFloat8e4m3, ncclFloat8e5m2, ncclFloat64, ncclInt64, ncclUint32};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  std::vector<size_t> counts = quick ? std::vector<size_t>{0, 1031} : std::vector<size_t>{0, 1, 1031, 262147};
  for (size_t n : counts)
    for (ncclDataType_t t : types) {
      for (Coll c : {kAllReduce, kReduce, kReduceScatter})
        for (ncclRedOp_t o : ops)
          for (bool ip : {false, true}) v.push_back(Case{c, t, o, n, ip, nranks - 1});
      for (Coll c : {kAllGather, kBroadcast})
        for (bool ip : {false, true}) v.push_back(Case{c, t, ncclSum, n, ip, nranks - 1});
      for (Coll c : {kSendRecv, kAllToAll, kGather, kScatter}) v.push_back(Case{c, t, ncclSum, n, false, 0});
    }
  // Large, multi-step, every channel busy.
  for (Coll c : {kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kSendRecv, kAllToAll, kGather, kScatter})
    v.push_back(Case{c, ncclFloat32, ncclSum, (size_t(1) << 22) + 5, false, 0});
  v.push_back(Case{kAllReduce, ncclFloat16, ncclSum, (size_t(1) << 22) + 3, true, 0});
  // Mid all-reduce sums (64 KiB to 1 MiB: on 3 to 8 peer-reachable ranks, the two-shot over every peer), counts
  // that leave parts, LL words and channel shares uneven.
  for (bool ip : {false, true}) {
    for (size_t n : {size_t(16387), size_t(49157), size_t(131075), size_t(262139)})
      v.push_back(Case{kAllReduce, ncclFloat32, ncclSum, n, ip, 0});
    v.push_back(Case{kAllReduce, ncclFloat16, ncclSum, 100003, ip, 0});
    v.push_back(Case{kAllReduce, ncclBfloat16, ncclSum, 262147, ip, 0});
  }
  Case mid{kAllReduce, ncclFloat32, ncclSum, 49157, false, 0};
  mid.sendShift = 1;
  mid.recvShift = 3;
  v.push_back(mid);
  // Unaligned user pointers (send 1 element, receive 3 elements past an aligned allocation), every collective;
  // float also shifted alike (1/1: the vector path after a scalar head).
  const size_t shiftedCount = quick ? 1031 : 262147;
  for (ncclDataType_t t : {ncclFloat32, ncclFloat16, ncclInt8, ncclFloat64})
    for (Coll c : {kAllReduce, kReduce, kReduceScatter, kAllGather, kBroadcast, kSendRecv, kAllToAll, kGather, kScatter}) {
      Case k{c, t, ncclSum, shiftedCount, false, nranks - 1};
      k.sendShift = 1;
      k.recvShift = 3;
      v.push_back(k);
      if (t == ncclFloat32) {
        k.recvShift = 1;
        v.push_back(k);
      }
    }
  return v;
}

}  // namespace gpu_test
