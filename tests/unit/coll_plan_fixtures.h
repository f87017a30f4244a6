// What the GPU planner's tests (coll_plan_test, tuner_plugin_test) start from: the facts init agrees for two ranks
// over NVLink, and a float all-reduce.
#pragma once

#include <cstddef>

#include "runtime/gpu/coll_plan.h"

namespace braid_test {

// Two ranks over NVLink with 64 channels and the default FIFOs (4 MiB in 8 steps), as init agrees them.
inline braid::CollPlanFacts nvlinkPair() {
  braid::CollPlanFacts f;
  f.rank = 0;
  f.nranks = 2;
  f.nChannels = 64;
  f.transport = braid::TransportClass::P2pNvlink;
  f.llPath = true;
  f.ll128Path = true;
  f.ringStepBytes = 512 << 10;
  f.ringSteps = 8;
  return f;
}

inline braid::OpDesc allReduce(size_t count, const void* in, void* out) {
  braid::OpDesc op;
  op.coll = braid::CollType::AllReduce;
  op.dtype = ncclFloat32;
  op.op.kind = braid::RedKind::Sum;
  op.count = count;
  op.sendbuff = in;
  op.recvbuff = out;
  return op;
}

// Where the build has both low-latency kernels for the op (CollPlanner::plan's lowLatency).
constexpr uint32_t kAllProtos =
    (1u << static_cast<int>(braid::Proto::LL)) | (1u << static_cast<int>(braid::Proto::LL128));

}  // namespace braid_test
