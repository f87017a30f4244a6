// The case lists and the lockstep loop of the multi-rank collective tests. See coll_cases.h.
#include "mp/common/coll_cases.h"

#include <gtest/gtest.h>

#include <set>

#include "mp/common/dtypes.h"

namespace mp {
namespace {

// A. Full datatype x op matrix at moderate counts.
void appendTypeMatrix(int n, std::vector<Case>* out, uint64_t* seedp) {
  std::vector<Case>& cases = *out;
  uint64_t& seed = *seedp;
  const int last = n - 1;
  for (int dt = 0; dt < kNumTypes; dt++) {
    for (int op = 0; op < kNumOpKinds; op++) {
      Case c;
      c.dt = (ncclDataType_t)dt;
      c.opKind = op;
      c.seed = seed++;
      c.coll = Coll::kAllReduce;
      c.count = 1001;
      cases.push_back(c);
      c.coll = Coll::kReduce;
      c.root = ((dt + op) % 2) ? last : 0;
      cases.push_back(c);
      c.coll = Coll::kReduceScatter;
      c.count = 257;
      c.root = 0;
      cases.push_back(c);
    }
    Case m;
    m.dt = (ncclDataType_t)dt;
    m.seed = seed++;
    struct {
      Coll coll;
      size_t count;
      int root;
    } moves[] = {{Coll::kBroadcast, 1001, dt % 2 ? 0 : last},
                 {Coll::kBcast, 1001, dt % 2 ? last : 0},
                 {Coll::kAllGather, 257, 0},
                 {Coll::kAlltoAll, 129, 0},
                 {Coll::kGather, 129, dt % 2 ? last : 0},
                 {Coll::kScatter, 129, dt % 2 ? 0 : last},
                 {Coll::kSendRecvRing, 1001, 0},
                 {Coll::kSendRecvAllPairs, 65, 0},
                 {Coll::kSendRecvPairs, 333, 0}};
    for (auto& mv : moves) {
      m.coll = mv.coll;
      m.count = mv.count;
      m.root = mv.root;
      cases.push_back(m);
    }
  }
}

// B. Counts 0, 1, 7, nranks-1, 1001 for every collective form (out-of-place, in-place, both roots) x every
// datatype x every op, with buffer misalignment rotating across cases.
void appendCountMatrix(int n, std::vector<Case>* out, uint64_t* seedp) {
  std::vector<Case>& cases = *out;
  uint64_t& seed = *seedp;
  const int last = n - 1;
  std::set<size_t> counts = {0, 1, 7, (size_t)(n - 1), 1001};
  struct Form {
    Coll coll;
    bool inPlace;
    int root;
  };
  std::vector<Form> forms;
  for (Coll cl : {Coll::kAllReduce, Coll::kBroadcast, Coll::kBcast, Coll::kReduce, Coll::kAllGather,
                  Coll::kReduceScatter, Coll::kAlltoAll, Coll::kGather, Coll::kScatter, Coll::kSendRecvRing,
                  Coll::kSendRecvAllPairs, Coll::kSendRecvPairs}) {
    std::vector<int> roots = {0};
    if (collHasRoot(cl) && last != 0) roots.push_back(last);
    for (int root : roots) {
      forms.push_back({cl, false, root});
      if (collHasInPlace(cl)) forms.push_back({cl, true, root});
    }
  }
  int idx = 0;
  for (size_t count : counts) {
    for (auto& f : forms) {
      for (int dt = 0; dt < kNumTypes; dt++) {
        int nops = collHasOp(f.coll) ? kNumOpKinds : 1;
        for (int op = 0; op < nops; op++) {
          Case c;
          c.coll = f.coll;
          c.inPlace = f.inPlace;
          c.root = f.root;
          c.count = count;
          c.dt = (ncclDataType_t)dt;
          c.opKind = op;
          c.misalign = (idx % 3 == 1) ? 1 : 0;
          c.seed = seed++;
          cases.push_back(c);
          idx++;
        }
      }
    }
  }
}

// C. Large messages: many FIFO steps (the jobs set NCCL_BUFFSIZE small) and several channels.
void appendLarge(int n, std::vector<Case>* out, uint64_t* seedp) {
  std::vector<Case>& cases = *out;
  uint64_t& seed = *seedp;
  const int last = n - 1;
  const size_t big = 300000;
  auto large = [&](Coll cl, ncclDataType_t dt, int op, size_t count, int root, bool inPlace) {
    Case c;
    c.coll = cl;
    c.dt = dt;
    c.opKind = op;
    c.count = count;
    c.root = root;
    c.inPlace = inPlace;
    c.seed = seed++;
    cases.push_back(c);
  };
  large(Coll::kAllReduce, ncclFloat32, ncclSum, big, 0, false);
  large(Coll::kAllReduce, ncclBfloat16, ncclAvg, big + 3, 0, true);
  large(Coll::kAllReduce, ncclInt64, ncclProd, big / 2 + 1, 0, false);
  large(Coll::kReduce, ncclFloat16, ncclMax, big, last, false);
  large(Coll::kReduceScatter, ncclInt32, ncclSum, big / n + 1, 0, false);
  large(Coll::kReduceScatter, ncclFloat8e4m3, kOpPreMulImm, big / n, 0, true);
  large(Coll::kAllGather, ncclUint8, -1, big / n + 1, 0, false);
  large(Coll::kAllGather, ncclFloat32, -1, big / n, 0, true);
  large(Coll::kBroadcast, ncclFloat64, -1, big / 2, last, false);
  large(Coll::kAlltoAll, ncclInt32, -1, big / n / 2 + 1, 0, false);
  large(Coll::kGather, ncclUint32, -1, big / n / 2, last, false);
  large(Coll::kScatter, ncclInt8, -1, big / n + 5, 0, false);
  large(Coll::kSendRecvRing, ncclFloat32, -1, big, 0, false);
}

}  // namespace

std::vector<Case> buildCases(int n) {
  std::vector<Case> cases;
  uint64_t seed = 1000;
  appendTypeMatrix(n, &cases, &seed);
  appendCountMatrix(n, &cases, &seed);
  appendLarge(n, &cases, &seed);
  return cases;
}

std::vector<Case> buildShortCases(int n) {
  std::vector<Case> cases;
  uint64_t seed = 1000;
  appendTypeMatrix(n, &cases, &seed);
  appendLarge(n, &cases, &seed);
  return cases;
}

bool runCases(ncclComm_t comm, const RankCtx& ctx, const std::vector<Case>& cases) {
  for (size_t i = 0; i < cases.size(); i++) {
    if (!runCase(comm, ctx.rank, ctx.nranks, cases[i])) {
      ADD_FAILURE() << "stopping after case " << i << " of " << cases.size() << " (an NCCL call failed)";
      ncclCommAbort(comm);
      reportSuppressed();
      return false;
    }
  }
  return true;
}

}  // namespace mp
