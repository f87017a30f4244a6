// Multi-process test harness: one collective "case" on one rank — buffers with guard regions, inputs that
// make the expected result exact (or bounded) in every datatype, the NCCL call(s), and an element-by-element
// check against a reference computed on the host (integers exactly with wrap-around, floats in double).
//
// A case is split into prepare / issue / check / release so several cases can be issued inside one
// ncclGroupStart/End (mixed-group tests) and checked after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace mp {

enum class Coll {
  kAllReduce,
  kBroadcast,
  kBcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSendRecvRing,      // send to rank+1, receive from rank-1 (own group unless issued inside one)
  kSendRecvAllPairs,  // every rank sends a different count to every rank, itself included (needs a group)
  kSendRecvPairs,     // ranks 2k and 2k+1 exchange, outside any group (send/recv order by parity)
};
const char* collName(Coll c);
bool collHasOp(Coll c);
bool collHasRoot(Coll c);
bool collHasInPlace(Coll c);

// Op kinds: ncclSum..ncclAvg (0..4), then PreMulSum with a host-immediate scalar, then with a
// "device" scalar (a host pointer for host comms, read when the op runs).
constexpr int kOpPreMulImm = 5;
constexpr int kOpPreMulDev = 6;
constexpr int kNumOpKinds = 7;
const char* opKindName(int opKind);

struct Case {
  Coll coll = Coll::kAllReduce;
  ncclDataType_t dt = ncclFloat32;
  int opKind = ncclSum;  // ignored by data-movement collectives
  size_t count = 0;      // the count argument of the call (per-rank/per-peer count where NCCL says so)
  int root = 0;
  bool inPlace = false;
  int misalign = 0;  // buffers start this many elements past a 16-byte boundary
  uint64_t seed = 1;
};
std::string caseName(const Case& c, int nranks);

// One buffer with guard bytes on both sides.
class GuardedBuf {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kGuardByte = 0x5A;
  void alloc(size_t bytes, size_t misalignBytes);
  char* data() { return mem_.data() + kGuard + mis_; }
  size_t bytes() const { return bytes_; }
  // Describes the first corrupted guard byte, or "" if intact.
  std::string checkGuards() const;

 private:
  std::vector<char> mem_;
  size_t bytes_ = 0, mis_ = 0;
};

class CaseRun {
 public:
  CaseRun(const Case& c, int rank, int nranks);
  // Allocates buffers, fills inputs, poisons outputs.
  void prepare();
  // Issues the NCCL call(s). inGroup: the caller has opened a group (send/recv patterns then open none).
  // Returns the first non-success result (the message is recorded as a gtest failure too).
  ncclResult_t issue(ncclComm_t comm, bool inGroup);
  // Checks outputs, untouched regions, unchanged inputs and guards; adds gtest failures (at most maxReports
  // element mismatches listed). Returns true if all is well.
  bool check(int maxReports = 4);
  // Destroys the PreMulSum op if one was made.
  void release(ncclComm_t comm);

  const Case& spec() const { return c_; }

  // Harness self-test: simulate() writes the reference result into the outputs, as a correct library
  // would, so check() must pass; corrupt() then damages the buffers in a way check() must catch. corrupt()
  // returns false where the damage does not apply to this case (e.g. no output elements).
  enum class Corruption { kOneElement, kUnwritten, kGuardBefore, kGuardAfter, kSendBuffer };
  void simulate();
  bool corrupt(Corruption m);

  struct Exp {
    enum Kind { kBits, kFloat, kAny } kind = kAny;
    uint64_t bits = 0;
    double val = 0, tol = 0;
  };

 private:
  uint64_t input(int r, size_t j) const;  // element j of rank r's send layout
  Exp reduceAt(size_t j) const;           // reduction over ranks of element j
  Exp expectAt(size_t i) const;           // expected recv element i on this rank
  uint64_t poison() const;
  void fillPoison(char* p, size_t elems) const;
  size_t pairCount(int from, int to) const;  // all-pairs send/recv counts
  size_t pairOffset(int from, int to) const;

  Case c_;
  int rank_, n_;
  size_t es_;
  size_t sendElems_ = 0, recvElems_ = 0;
  GuardedBuf a_, b_;  // a_: send (or the single in-place buffer), b_: recv
  bool twoBufs_ = false;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  std::vector<char> sendCopy_;  // inputs as filled (out-of-place), to check they are unchanged
  bool createdOp_ = false;
  ncclRedOp_t op_ = ncclSum;
  uint64_t scalarVar_ = 0;  // the PreMulSum scalar, in the datatype's bits
};

// Limits detailed gtest failures per process (a broken collective would otherwise report hundreds of
// cases): once the budget is spent, failing cases are only counted.
void setReportBudget(int cases);
int suppressedFailures();
// Reports a summary failure if cases were suppressed.
void reportSuppressed();

// Runs one case standalone (prepare, issue outside any group, check, release). Returns false if an NCCL
// call failed (the comm may then be unusable and the caller should stop).
bool runCase(ncclComm_t comm, int rank, int nranks, const Case& c);

}  // namespace mp
