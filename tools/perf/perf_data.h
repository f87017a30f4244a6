// Input data and exact expected results for the perf tools' -c check.
//
// Every input element is a small non-negative integer chosen per (type, op, nranks) so that every partial
// result of the reduction is exactly representable in the type: then the result does not depend on the
// order in which ranks are combined, and the check compares bytes exactly, for every type down to fp8.
//   sum/avg:  values 0..M/n per rank (M = largest exact integer of the type), or, when n > M, a 1 on a
//             sparse, rotating subset of at most M ranks per element;
//   prod:     1 or 2, with at most K twos per element (2^K exact);
//   max/min:  values 0..min(M, 2^20);
//   mulsum:   like sum with the per-rank scalar 1 or 2 (rank parity) folded into the bound;
//   copies:   values 0..min(M, 2^20), a different sequence per rank.
// The one exception is avg on float types: NCCL computes it as a pre-multiplication by 1/n, which rounds,
// so those results are compared with a tolerance of (n+2) half-ulps of the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "perf_args.h"
#include "perf_coll.h"

namespace braid {
namespace perf {

struct DataSpec {
  Coll coll = Coll::AllReduce;
  ncclDataType_t type = ncclFloat32;
  OpKind op = OpKind::Sum;
  int nranks = 1;
  int root = 0;
  uint64_t seed = 0;
  CollCounts counts;
  bool inPlace = false;
};

// How input values are drawn (see the file comment).
struct ValueRule {
  enum Kind { kDense, kSparseOnes, kProdTwos } kind = kDense;
  int64_t maxValue = 0;  // kDense: values 0..maxValue
  int64_t stride = 1;    // sparse kinds: rank q is eligible at element j when (j + q) % stride == 0
};

ValueRule valueRule(Coll coll, ncclDataType_t type, OpKind op, int nranks);

// Rank q's input element j (an integer, exact in the type).
int64_t inputValue(const DataSpec& spec, const ValueRule& rule, int q, size_t j);

// The PreMulSum scalar rank q uses for -o mulsum.
inline int64_t mulsumScalar(int q) { return 1 + (q & 1); }

// The byte every receive buffer is filled with before an operation; elements a collective must leave alone
// (a non-root's buffer in reduce and gather) are expected to still hold it.
constexpr unsigned char kSentinelByte = 0xA5;

// Fills `count` elements of rank `rank`'s input, starting at element index `first`, into `dst` (host memory).
void fillInput(const DataSpec& spec, int rank, void* dst, size_t count, size_t first = 0);

// Compares rank `rank`'s checked receive region (counts.recvCount elements, host memory) with the exact
// expected values. Returns the number of wrong elements; the first few go to stderr as `what: ...` lines.
int64_t checkOutput(const DataSpec& spec, int rank, const void* got, const std::string& what);

// The data threads' CPUs for a rank bound to at most 2 CPUs: local rank r of n gets the r-th of n contiguous
// equal parts of `allowed` (at least one CPU; ranks past the CPUs wrap around). Empty when nothing is known.
std::vector<int> dataCpuSlice(const std::vector<int>& allowed, int localRank, int localSize);

// The rank whose output BRAID_PERF_CORRUPT=1 damages: one that has a checked result (the root for reduce
// and gather, otherwise the last rank), so the table on rank 0 only shows it if errors are aggregated.
int corruptRank(Coll coll, int nranks, int root);

// Damages element recvCount/2 of a host copy of the output so that any exact or tolerant check fails.
void corruptElement(const DataSpec& spec, void* hostOutput);

}  // namespace perf
}  // namespace braid
