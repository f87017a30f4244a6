// Fixtures shared by the p2p plan tests (p2p_plan_test.cc, p2p_plan_progress_test.cc): fake transfer buffers,
// ring connections and a plan input with the executor's limits.
#pragma once

#include <cstdint>
#include <vector>

#include "algo/p2p_plan.h"

namespace braid {
namespace p2p_plan_fixtures {

// Fake buffers: distinct, far-apart base addresses (never dereferenced).
inline char* fakeBuf(size_t i) { return reinterpret_cast<char*>(uintptr_t(1) << 40) + i * (size_t(1) << 32); }

inline P2pPlanConn ringConn(bool isSend, int nChannels, const std::vector<size_t>& sizes, size_t bufBase,
                            bool ll = true) {
  P2pPlanConn c;
  c.ring = true;
  c.isSend = isSend;
  c.ll.assign(nChannels, ll ? 1 : 0);
  for (size_t i = 0; i < sizes.size(); ++i) c.xs.push_back(P2pXfer{fakeBuf(bufBase + i), sizes[i]});
  return c;
}

// The executor's limits (dev_work.h): 192 CTAs, 640 blocks.
inline P2pPlanInput input(int nChannels) {
  P2pPlanInput in;
  in.nChannels = nChannels;
  in.llThreshold = 16384;
  in.maxCtas = 192;
  in.maxBlocks = 640;
  return in;
}

}  // namespace p2p_plan_fixtures
}  // namespace braid
